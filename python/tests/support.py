"""What the tests share: the `downbeat` command they compare with, and 32-bit float WAV files."""

import os
import struct
import subprocess
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "projects"


def downbeat_bin():
    """The `downbeat` command: $DOWNBEAT_BIN (python/ci.sh sets it), else the release build."""
    path = Path(os.environ.get("DOWNBEAT_BIN", REPO / "target" / "release" / "downbeat"))
    assert path.is_file(), f"{path} is missing: build it (python/ci.sh does) or set DOWNBEAT_BIN"
    return path


def cli(*args, check=True):
    """Runs `downbeat ARGS...`; the completed process."""
    done = subprocess.run(
        [str(downbeat_bin()), *map(str, args)], capture_output=True, text=True, timeout=600
    )
    if check:
        assert done.returncode == 0, f"downbeat {' '.join(map(str, args))}: {done.stderr}"
    return done


def read_wav(path):
    """A 32-bit float WAV (RIFF, RF64 or extensible) as `(channels, frames)` float32, and its rate."""
    data = Path(path).read_bytes()
    assert data[:4] in (b"RIFF", b"RF64") and data[8:12] == b"WAVE", f"{path}: not a WAV"
    at, fmt, samples = 12, None, None
    while at + 8 <= len(data):
        kind, size = data[at : at + 4], struct.unpack("<I", data[at + 4 : at + 8])[0]
        body = data[at + 8 : at + 8 + size] if size != 0xFFFFFFFF else data[at + 8 :]
        if kind == b"fmt ":
            fmt = struct.unpack("<HHIIHH", body[:16])
        elif kind == b"data":
            samples = body
            break
        at += 8 + size + (size & 1)
    assert fmt is not None and samples is not None, f"{path}: no fmt or data chunk"
    tag, channels, rate, _, _, bits = fmt
    assert tag in (3, 0xFFFE) and bits == 32, f"{path}: not 32-bit float (tag {tag}, {bits} bits)"
    frames = np.frombuffer(samples[: len(samples) // (4 * channels) * 4 * channels], "<f4")
    return frames.reshape(-1, channels).T.copy(), rate


def write_wav(path, audio, rate):
    """Writes `(channels, frames)` float32 as a 32-bit float WAV."""
    audio = np.asarray(audio, dtype=np.float32)
    channels, frames = audio.shape
    body = audio.T.astype("<f4").tobytes()
    fmt = struct.pack("<HHIIHH", 3, channels, rate, rate * 4 * channels, 4 * channels, 32)
    with open(path, "wb") as f:
        f.write(b"RIFF" + struct.pack("<I", 4 + 8 + len(fmt) + 8 + len(body)) + b"WAVE")
        f.write(b"fmt " + struct.pack("<I", len(fmt)) + fmt)
        f.write(b"data" + struct.pack("<I", len(body)) + body)


def make_signal(channels=2, seconds=1.0, rate=48000, seed=7):
    """Noise under a swept sine, loud enough to make compressors work: float32 (channels, frames)."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * rate)) / rate
    sweep = 0.6 * np.sin(2 * np.pi * (100 + 2000 * t) * t)
    out = np.stack([sweep * (0.8 + 0.2 * c) + 0.05 * rng.standard_normal(t.size) for c in range(channels)])
    return out.astype(np.float32)
