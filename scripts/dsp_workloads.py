#!/usr/bin/env python3
"""Writes the three single-thread DSP workloads of issue 28 into a folder:

  sines.toml   1000 sine nodes summed into the output (1 channel, 48 kHz, 64-frame blocks)
  voices.toml  one saw `synth` of 256 voices through its resonant low-pass with an ADSR,
               played by voices.mid (256 notes held for 20 s: 16 notes on each of 16 channels)
  chain.toml   white noise through 1000 `gain` nodes in series

Usage: scripts/dsp_workloads.py OUT_DIR
Render: downbeat run OUT_DIR/sines.toml --device offline --seconds 20 --out /tmp/x.wav
        (voices: add --midi OUT_DIR/voices.mid)
"""
import os
import struct
import sys

HEAD = "sample_rate = 48000\nblock_size = 64\n"


def sines(n=1000):
    edges = ",\n".join(f'    "s{i:04} -> out"' for i in range(n))
    nodes = "".join(
        f'\n[nodes.s{i:04}]\ntype = "sine"\nchannels = 1\nfreq = {100.0 + 1900.0 * i / n:.4f}\namp = 0.001\n'
        for i in range(n)
    )
    return HEAD + f"edges = [\n{edges},\n]\n" + nodes + '\n[nodes.out]\ntype = "output"\nchannels = 1\n'


def voices(n=256):
    return HEAD + (
        'edges = ["keys -> out"]\n\n[nodes.keys]\ntype = "synth"\nchannels = 1\nwave = "saw"\n'
        f"voices = {n}\nattack = 0.01\ndecay = 0.2\nsustain = 0.7\nrelease = 0.2\n"
        'cutoff = 2000.0\nresonance = 2.0\nkey_track = 0.0\nvel_track = 0.0\namp = 0.01\n'
        '\n[nodes.out]\ntype = "output"\nchannels = 1\n'
    )


def chain(n=1000):
    names = ["src"] + [f"g{i:04}" for i in range(n)] + ["out"]
    edges = ",\n".join(f'    "{a} -> {b}"' for a, b in zip(names, names[1:]))
    nodes = '\n[nodes.src]\ntype = "noise"\nchannels = 1\namp = 0.5\n'
    nodes += "".join(f'\n[nodes.g{i:04}]\ntype = "gain"\nchannels = 1\ngain = 1.0\n' for i in range(n))
    return HEAD + f"edges = [\n{edges},\n]\n" + nodes + '\n[nodes.out]\ntype = "output"\nchannels = 1\n'


def vlq(v):
    out = [v & 0x7F]
    v >>= 7
    while v:
        out.append(0x80 | (v & 0x7F))
        v >>= 7
    return bytes(reversed(out))


def voices_midi(n=256, seconds=20.0):
    # 480 ticks per quarter at the default 120 bpm: 960 ticks per second.
    ev = b""
    notes = [(i % 16, 36 + (i // 16) * 3 + (i % 16) % 3) for i in range(n)]
    for ch, note in notes:
        ev += vlq(0) + bytes([0x90 | ch, note, 100])
    first = True
    for ch, note in notes:
        ev += vlq(int(seconds * 960) if first else 0) + bytes([0x80 | ch, note, 0])
        first = False
    ev += vlq(0) + b"\xff\x2f\x00"
    return b"MThd" + struct.pack(">IHHH", 6, 0, 1, 480) + b"MTrk" + struct.pack(">I", len(ev)) + ev


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, text in [("sines", sines()), ("voices", voices()), ("chain", chain())]:
        with open(os.path.join(out, name + ".toml"), "w") as f:
            f.write(text)
    with open(os.path.join(out, "voices.mid"), "wb") as f:
        f.write(voices_midi())


if __name__ == "__main__":
    main()
