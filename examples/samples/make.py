#!/usr/bin/env python3
"""Synthesises the drum kit of examples/projects/drums.toml, and the MIDI file that plays it.

Writes kick.wav, snare.wav, hat.wav and open-hat.wav (mono, 16-bit, 44.1 kHz: the project
runs at 48 kHz, so the sampler resamples them when it loads) next to this script, and
../projects/drums.mid (two bars at 120 bpm on MIDI channel 10, General MIDI drum notes:
36 kick, 38 snare, 42 closed hat, 46 open hat). Everything is computed here, with a fixed
random seed, so the files are the same on every machine: no third-party audio.

    python3 examples/samples/make.py
"""

import math
import os
import struct
import wave

RATE = 44100
HERE = os.path.dirname(os.path.abspath(__file__))


class Noise:
    """A small xorshift generator: the same noise everywhere."""

    def __init__(self, seed):
        self.x = seed

    def next(self):
        x = self.x
        x ^= (x << 13) & 0xFFFFFFFF
        x ^= x >> 17
        x ^= (x << 5) & 0xFFFFFFFF
        self.x = x
        return x / 0xFFFFFFFF * 2.0 - 1.0


def kick(seconds=0.45):
    """A sine swept from 150 Hz down to 45 Hz with a click, decaying."""
    out, phase = [], 0.0
    for i in range(int(seconds * RATE)):
        t = i / RATE
        freq = 45.0 + 105.0 * math.exp(-t / 0.03)
        phase += 2.0 * math.pi * freq / RATE
        click = math.exp(-t / 0.002) * 0.3
        out.append((math.sin(phase) + click) * math.exp(-t / 0.12))
    return out


def snare(seconds=0.3):
    """A 185 Hz body under bright noise."""
    noise, out, prev = Noise(7), [], 0.0
    for i in range(int(seconds * RATE)):
        t = i / RATE
        n = noise.next()
        bright = n - 0.5 * prev  # a gentle high-pass
        prev = n
        body = math.sin(2.0 * math.pi * 185.0 * t) * math.exp(-t / 0.05)
        out.append(0.6 * body + 0.5 * bright * math.exp(-t / 0.07))
    return out


def hat(seconds, decay, seed):
    """Noise through a first difference twice (high-passed), decaying."""
    noise, out, p1, p2 = Noise(seed), [], 0.0, 0.0
    for i in range(int(seconds * RATE)):
        t = i / RATE
        n = noise.next()
        d1 = n - p1
        d2 = d1 - p2
        p1, p2 = n, d1
        out.append(0.25 * d2 * math.exp(-t / decay))
    return out


def fade_out(samples, ms=5.0):
    """A short linear fade at the end, so that no sample stops on a click."""
    k = min(len(samples), int(ms / 1000.0 * RATE))
    for j in range(k):
        samples[len(samples) - k + j] *= (k - j) / k
    return samples


def write_wav(name, samples):
    peak = max(abs(s) for s in samples)
    scale = 0.9 / peak
    frames = b"".join(struct.pack("<h", int(round(s * scale * 32767))) for s in samples)
    with wave.open(os.path.join(HERE, name), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(frames)


def varlen(n):
    out = [n & 0x7F]
    n >>= 7
    while n:
        out.append(0x80 | (n & 0x7F))
        n >>= 7
    return bytes(reversed(out))


def write_midi(path):
    """Format 0, 480 ticks per quarter, 120 bpm, channel 10: two bars of a rock beat."""
    ppq, step = 480, 120  # a 16th note
    hits = []  # (tick, note, velocity)
    for bar in range(2):
        base = bar * 16
        for s in (0, 8, 10):
            hits.append((base + s, 36, 120))
        for s in (4, 12):
            hits.append((base + s, 38, 110))
        for s in range(0, 16, 2):
            if bar == 1 and s == 14:
                hits.append((base + s, 46, 90))
            else:
                hits.append((base + s, 42, 70 if s % 4 else 95))
    events = []  # (tick, order, bytes): note offs sort before note ons at the same tick
    for s, note, vel in hits:
        events.append((s * step, 1, bytes([0x99, note, vel])))
        events.append((s * step + step, 0, bytes([0x89, note, 0])))
    events.sort()
    track = varlen(0) + b"\xff\x51\x03" + (500000).to_bytes(3, "big")  # 120 bpm
    now = 0
    for tick, _, data in events:
        track += varlen(tick - now) + data
        now = tick
    track += varlen(0) + b"\xff\x2f\x00"
    with open(path, "wb") as f:
        f.write(b"MThd" + struct.pack(">IHHH", 6, 0, 1, ppq))
        f.write(b"MTrk" + struct.pack(">I", len(track)) + track)


def main():
    write_wav("kick.wav", fade_out(kick()))
    write_wav("snare.wav", fade_out(snare()))
    write_wav("hat.wav", fade_out(hat(0.08, 0.02, 11)))
    write_wav("open-hat.wav", fade_out(hat(0.4, 0.12, 13)))
    write_midi(os.path.join(HERE, "..", "projects", "drums.mid"))


if __name__ == "__main__":
    main()
