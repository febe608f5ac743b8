#!/usr/bin/env python3
"""Writes the seed corpus of every fuzz target into fuzz/seeds/TARGET/ from the project's own
files (example projects, the malformed projects of crates/cli/tests/bad, the packets and
files the tests send) and a few made here; sox and ffmpeg make the audio seeds (a few hundred
milliseconds, mono or stereo, at low rates, so that each stays small).

    python3 fuzz/seeds/make.py

midi_file's seeds are not made here: they are crates/engine/tests/midi_corpus (every
malformed file the MIDI tests use, and valid ones) written out once, plus the example .mid
files, which this script copies.
"""

import os
import re
import shutil
import struct
import subprocess
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
SEEDS = os.path.join(ROOT, "fuzz", "seeds")


def out(target, name, data):
    d = os.path.join(SEEDS, target)
    os.makedirs(d, exist_ok=True)
    mode = "w" if isinstance(data, str) else "wb"
    with open(os.path.join(d, name), mode) as f:
        f.write(data)


def read(path, binary=False):
    with open(os.path.join(ROOT, path), "rb" if binary else "r") as f:
        return f.read()


# --- Projects -------------------------------------------------------------------------------

# One project per node type, every parameter set (to a value other than its default where
# that makes sense), so the fuzzer starts from every constructor's parameters.
NODE_PROJECTS = {
    "sine-gain": """edges = ["s -> g -> out"]
[nodes.s]
type = "sine"
freq = 330.0
amp = 0.4
phase = 0.25
channels = 1
[nodes.g]
type = "gain"
gain = 0.5
channels = 1
[nodes.out]
type = "output"
channels = 1
""",
    "noise-biquad-mix": """sample_rate = 44100
block_size = 64
edges = ["n -> bq -> m -> out"]
[nodes.n]
type = "noise"
amp = 0.2
seed = 7
[nodes.bq]
type = "biquad"
mode = "bandpass"
freq = 1500.0
q = 4.0
[nodes.m]
type = "mix"
gain_db = -6.0
pan = -0.5
[nodes.out]
type = "output"
""",
    "karplus-compressor": """sample_rate = 32000
block_size = 128
edges = ["k -> c -> out"]
[nodes.k]
type = "karplus"
notes = [60, 64, 67.5]
interval = 0.05
length = 0.04
offset = 0.01
decay = 0.99
amp = 0.7
[nodes.c]
type = "spectral_compressor"
fft_size = 512
overlap = 2
threshold_db = -30.0
ratio = 8.0
attack_ms = 1.0
release_ms = 50.0
makeup_db = 3.0
[nodes.out]
type = "output"
""",
    "synth": """block_size = 32
edges = ["v -> out"]
[nodes.v]
type = "synth"
voices = 4
wave = "square"
attack = 0.0
decay = 0.1
sustain = 0.5
release = 0.2
cutoff = 800.0
resonance = 3.0
key_track = 1.0
vel_track = 2.0
amp = 0.3
bend_range = 12.0
midi_channel = 1
[nodes.out]
type = "output"
""",
    "input-echoes": """sample_rate = 8000
block_size = 16
edges = ["mic -> e -> out"]
[nodes.mic]
type = "input"
channels = 1
[nodes.e]
type = "echoes"
delay = 0.01
feedback = 0.9
threshold = 0.01
max_taps = 4
mix = 1.0
channels = 1
[nodes.out]
type = "output"
channels = 1
""",
    "player": """sample_rate = 22050
edges = ["p -> out"]
[nodes.p]
type = "player"
path = "stereo.wav"
start = 0.01
loop = true
loop_start = 0.02
loop_end = 0.04
gain = 0.5
speed = 1.5
autoplay = true
cues = [0.0, 0.03]
channels = 2
playing = 1.0
seek = 0.0
read_ahead = 0.05
[nodes.out]
type = "output"
""",
    "sampler": """edges = ["kit -> out"]
[nodes.kit]
type = "sampler"
samples = { 36 = "mono.wav", D2 = "stereo.wav", "F#2" = "mono.wav" }
mode = "gate"
release = 0.01
voices = 3
gain = 0.5
[nodes.out]
type = "output"
""",
    "sampler-one": """edges = ["s -> out"]
[nodes.s]
type = "sampler"
sample = "mono.wav"
root = 69.0
[nodes.out]
type = "output"
""",
    "automation-cc": """edges = ["v -> g -> out"]
[nodes.v]
type = "synth"
[nodes.g]
type = "gain"
[nodes.out]
type = "output"
[[automation]]
node = "g"
param = "gain"
points = [[0.001, 0.5], [0.002, 0.25, "linear"], [0.003, 2, "exp"], [0.0210, 1.0]]
[midi.cc]
74 = "v.cutoff"
7 = "g.gain"
""",
}


def projects():
    for target in ("project_parse", "project_build"):
        for name, text in NODE_PROJECTS.items():
            out(target, name + ".toml", text)
        lib = read("fuzz/src/lib.rs")
        out(target, "instruments.toml", re.search(r'r#"(.*?)"#', lib, re.S).group(1))
        for f in sorted(os.listdir(os.path.join(ROOT, "examples/projects"))):
            if not f.endswith(".toml") or f == "fanin84.toml":
                continue
            text = read("examples/projects/" + f)
            # The build target's player and sampler find these two files in memory.
            text = text.replace('"player.wav"', '"stereo.wav"')
            text = re.sub(r'"\.\./samples/[a-z-]+\.wav"', '"mono.wav"', text)
            out(target, "example-" + f, text)
    # Large (84 nodes): the parser's seed only.
    out("project_parse", "example-fanin84.toml", read("examples/projects/fanin84.toml"))
    for f in sorted(os.listdir(os.path.join(ROOT, "crates/cli/tests/bad"))):
        out("project_parse", "bad-" + f, read("crates/cli/tests/bad/" + f))
        out("project_build", "bad-" + f, read("crates/cli/tests/bad/" + f))


# --- OSC ------------------------------------------------------------------------------------

def osc_string(s):
    b = s.encode() + b"\0"
    return b + b"\0" * (-len(b) % 4)


def osc_message(addr, tags="", *args):
    body = b""
    for t, a in zip(tags, args):
        body += {
            "f": lambda v: struct.pack(">f", v),
            "d": lambda v: struct.pack(">d", v),
            "i": lambda v: struct.pack(">i", v),
            "h": lambda v: struct.pack(">q", v),
            "s": osc_string,
            "b": lambda v: struct.pack(">i", len(v)) + v + b"\0" * (-len(v) % 4),
        }[t](a)
    return osc_string(addr) + osc_string("," + tags) + body


def osc_bundle(seconds, fraction, *elements):
    body = b"#bundle\0" + struct.pack(">II", seconds, fraction)
    for e in elements:
        body += struct.pack(">i", len(e)) + e
    return body


def osc():
    # NTP seconds of 2030: a timetag in the future of any run.
    later = 2_208_988_800 + 1_900_000_000
    seeds = {
        "set": osc_message("/node/g/gain", "f", 0.5),
        "step": osc_message("/node/g/gain/step", "f", 0.75),
        "ramp": osc_message("/node/g/gain/ramp", "if", 0, 0.2),
        "exp": osc_message("/node/lp/freq/exp", "dh", 200.0, 1),
        "note-on": osc_message("/node/keys/note_on", "ff", 60.0, 0.75),
        "note-off": osc_message("/node/keys/note_off", "i", 60),
        "all-notes-off": osc_message("/node/pluck/all_notes_off"),
        "pan": osc_message("/node/mix/pan", "f", -1.0),
        "bundle-now": osc_bundle(0, 1, osc_message("/node/g/gain", "f", 0.5),
                                 osc_message("/node/keys/note_on", "if", 64, 0.625)),
        "bundle-later": osc_bundle(later, 0x8000_0000, osc_message("/node/osc/freq/step", "f", 440.0)),
        "bundle-past": osc_bundle(1, 0, osc_message("/node/hiss/amp", "f", 0.0)),
        "bundle-nested": osc_bundle(0, 1, osc_bundle(0, 1, osc_message("/node/g/gain", "f", 1.0))),
        # What crates/cli/tests/osc.rs sends to be refused.
        "bad-garbage": b"\x00\x01garbage that is not OSC",
        "bad-unknown-node": osc_message("/node/nosuch/gain", "f", 0.5),
        "bad-string": osc_message("/node/g/gain", "s", "loud"),
        "bad-two-values": osc_message("/node/g/gain", "ff", 0.5, 0.25),
        "bad-out-of-range": osc_message("/node/g/gain", "f", 99.0),
        "bad-address": osc_message("/mixer/volume", "f", 0.5),
        "bad-bundle-bool": osc_bundle(0, 1, osc_message("/node/g/gain", "f", 0.5),
                                      osc_message("/node/g/gain", "T")),
        "bad-blob": osc_message("/node/g/gain", "b", b"\x01\x02\x03"),
        "bad-note": osc_message("/node/keys/note_on", "ff", 128.0, 0.75),
        "bad-not-live": osc_message("/node/comp/fft_size", "i", 512),
        # Musical time: the transport, and addresses timed by a beat.
        "transport-play": osc_message("/transport/play"),
        "transport-stop": osc_message("/transport/stop"),
        "transport-locate": osc_message("/transport/locate", "f", 8.0),
        "transport-loop": osc_message("/transport/loop", "ii", 0, 16),
        "transport-unloop": osc_message("/transport/unloop"),
        "transport-tempo": osc_message("/transport/tempo", "fd", 140.0, 4.0),
        "beat-step": osc_message("/beat/16.5/node/g/gain/step", "f", 0.0),
        "next-bar-note": osc_message("/next_bar/node/keys/note_on", "if", 60, 0.75),
        "next-beat-stop": osc_message("/next_beat/transport/stop"),
        "bad-loop": osc_message("/transport/loop", "ff", 8.0, 4.0),
        "bad-tempo": osc_message("/transport/tempo", "f", 0.0),
        "bad-beat": osc_message("/beat/soon/node/g/gain", "f", 1.0),
    }
    for name, data in seeds.items():
        out("osc_packet", name + ".osc", data)


# --- The wasm ABI's control records -------------------------------------------------------

NOW = 0xFFFF_FFFF


def record(op, ident=0, lo=NOW, hi=NOW, value=0.0, extra=0.0, channel=0):
    return struct.pack("<BIIIffI", op, ident, lo, hi, value, extra, channel)


def wasm():
    seeds = {
        # Parameter ids follow the table's order; 0 and 1 exist in the fixed project.
        "set-step-ramp": record(1, 0, value=0.5) + record(2, 1, value=0.1)
        + record(3, 0, 100, 0, 2.0, 0.5) + record(0, 256),
        "notes": record(4, NOW, value=60.0, extra=0.75) + record(0, 64)
        + record(5, NOW, 300, 0, value=60.0) + record(4, 0, value=67.0, extra=1.0, channel=15)
        + record(6, NOW, channel=NOW) + record(0, 256),
        "bad": record(7) + record(1, 9999, value=1.0) + record(4, NOW, value=200.0, extra=1.0)
        + record(4, NOW, value=60.0, extra=1.0, channel=16) + record(0, 0) + record(0, 100_000)
        + record(3, 0, value=1.0, extra=float("nan")),
    }
    # A burst larger than the event list between two renders.
    seeds["burst"] = record(2, 0, 10, 0, value=0.25) * 200 + record(0, 256)
    for name, data in seeds.items():
        out("wasm_events", name + ".bin", data)


# --- Audio files ------------------------------------------------------------------------------

def run(*args):
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def audio():
    tmp = tempfile.mkdtemp()
    synth = ["synth", "0.25", "sine", "300-900", "vol", "0.5"]
    made = {}

    def sox(name, rate, channels, *fmt):
        path = os.path.join(tmp, name)
        run("sox", "-D", "-n", "-r", str(rate), "-c", str(channels), *fmt, path, *synth)
        made[name] = path

    sox("pcm16.wav", 8000, 1, "-b", "16", "-e", "signed-integer")
    sox("pcm8.wav", 4000, 1, "-b", "8", "-e", "unsigned-integer")
    sox("pcm24-stereo.wav", 4000, 2, "-b", "24", "-e", "signed-integer")
    sox("pcm32.wav", 4000, 1, "-b", "32", "-e", "signed-integer")
    sox("float.wav", 4000, 1, "-b", "32", "-e", "floating-point")
    sox("double.wav", 2000, 1, "-b", "64", "-e", "floating-point")
    sox("flac16.flac", 8000, 1, "-b", "16")
    sox("flac24-stereo.flac", 4000, 2, "-b", "24")
    src = os.path.join(tmp, "src.wav")
    run("sox", "-D", "-n", "-r", "8000", "-c", "1", "-b", "16", src, *synth)
    for name, codec, q in (("vorbis.ogg", "libvorbis", ["-q:a", "0"]),
                           ("mp3.mp3", "libmp3lame", ["-b:a", "16k"])):
        path = os.path.join(tmp, name)
        run("ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-i", src, "-c:a", codec, *q, path)
        made[name] = path
    for name, path in made.items():
        data = open(path, "rb").read()
        out("audio_file", name, data)
    # What crates/file/tests/errors.rs refuses: garbage, nothing, a FLAC and a WAV cut short
    # (inside the header and inside the audio).
    garbage = bytes(((i * 2_654_435_761) & 0xFFFF_FFFF) >> 13 & 0xFF for i in range(2000))
    out("audio_file", "bad-garbage.bin", garbage)
    out("audio_file", "bad-empty.wav", b"")
    flac = open(made["flac16.flac"], "rb").read()
    out("audio_file", "bad-cut-header.flac", flac[:30])
    out("audio_file", "bad-cut.flac", flac[: len(flac) // 4])
    wav16 = open(made["pcm16.wav"], "rb").read()
    out("audio_file", "bad-cut.wav", wav16[: len(wav16) // 2])
    ogg = open(made["vorbis.ogg"], "rb").read()
    out("audio_file", "bad-cut.ogg", ogg[: len(ogg) // 2])
    shutil.rmtree(tmp)


# --- WAV for --input --------------------------------------------------------------------------

def riff(fmt_chunk, data, magic=b"RIFF", extra=b""):
    body = b"WAVE" + extra + b"fmt " + struct.pack("<I", len(fmt_chunk)) + fmt_chunk
    body += b"data" + struct.pack("<I", len(data)) + data
    return magic + struct.pack("<I", len(body)) + body


def fmt(tag, channels, rate, bits, extensible_tag=None):
    block = channels * bits // 8
    f = struct.pack("<HHIIHH", tag, channels, rate, rate * block, block, bits)
    if extensible_tag is not None:
        guid = struct.pack("<H", extensible_tag) + b"\x00\x00\x00\x00\x10\x00\x80\x00\x00\xaa\x00\x38\x9b\x71"
        f += struct.pack("<HHI", 22, bits, 3 if channels == 2 else 4) + guid
    return f


def wav_input():
    frames = 64
    ramp16 = b"".join(struct.pack("<h", (i * 997) % 20000 - 10000) for i in range(frames * 2))
    seeds = {
        "pcm16-stereo.wav": riff(fmt(1, 2, 48000, 16), ramp16),
        "pcm8.wav": riff(fmt(1, 1, 8000, 8), bytes(range(0, 256, 4))),
        "pcm24.wav": riff(fmt(1, 1, 48000, 24), bytes(range(96)) * 2),
        "pcm32.wav": riff(fmt(1, 1, 48000, 32), bytes(range(128))),
        "float.wav": riff(fmt(3, 1, 48000, 32), b"".join(struct.pack("<f", i / 64) for i in range(frames))),
        "extensible.wav": riff(fmt(0xFFFE, 2, 44100, 16, extensible_tag=1), ramp16),
        "extensible-float.wav": riff(fmt(0xFFFE, 1, 44100, 32, extensible_tag=3),
                                     b"".join(struct.pack("<f", -i / 64) for i in range(frames))),
        "junk-chunk.wav": riff(fmt(1, 1, 48000, 16), ramp16[:64], extra=b"JUNK" + struct.pack("<I", 28) + bytes(28)),
        # A recording past 4 GB is RF64 (crates/engine/src/record/wav.rs): a ds64 chunk in
        # place of the JUNK one, and 0xFFFFFFFF sizes.
        "rf64.wav": b"RF64" + struct.pack("<I", 0xFFFF_FFFF) + b"WAVE" + b"ds64" + struct.pack("<IQQQI", 28, 1000, 128, 64, 0)
        + b"fmt " + struct.pack("<I", 16) + fmt(3, 1, 48000, 32) + b"data" + struct.pack("<I", 0xFFFF_FFFF)
        + b"".join(struct.pack("<f", 0.5) for _ in range(32)),
        "bad-no-channels.wav": riff(fmt(1, 0, 48000, 16), ramp16[:16]),
        "bad-bits-0.wav": riff(struct.pack("<HHIIHH", 1, 1, 48000, 0, 0, 0), ramp16[:16]),
        "bad-float-16.wav": riff(fmt(3, 1, 48000, 16), ramp16[:16]),
        "bad-cut.wav": riff(fmt(1, 2, 48000, 16), ramp16)[:70],
        "bad-header-only.wav": riff(fmt(1, 2, 48000, 16), ramp16)[:20],
        "bad-not-wav.wav": b"not a wav file",
    }
    for name, data in seeds.items():
        out("wav_input", name, data)


def midi():
    for f in ("drums.mid", "tune.mid"):
        out("midi_file", "example-" + f, read("examples/projects/" + f, binary=True))


if __name__ == "__main__":
    projects()
    osc()
    wasm()
    audio()
    wav_input()
    midi()
