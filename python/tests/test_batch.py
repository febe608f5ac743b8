"""`downbeat.render_many` with the process backend: every job's file right and whole, in the
jobs' order, the same bits as a render in this process, a job whose plugin crashes failing
alone with the plugin, the phase and the signal named (also when the worker dies of a signal
no handler sees), and a plugin's prints on stdout corrupting no reply."""

import hashlib
import os
import queue
import signal
import struct
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import downbeat
import downbeat.batch
from support import EXAMPLES, cli, read_wav

HELLO = EXAMPLES / "hello.toml"

# mda Piano (Debian's mda-lv2, which scripts/deps.sh installs) prints a line on stdout
# ("what is this shit? ...") from `run`, the audio thread, for every sample its left output
# is out of range: a chord of 32 notes at full velocity does that thousands of times a second.
PIANO = """
sample_rate = 48000
block_size = 256
edges = ["piano -> out"]
[nodes.piano]
type = "lv2"
uri = "http://drobilla.net/plugins/mda/Piano"
[nodes.out]
type = "output"
"""
PIANO_PRINTS = b"what is this shit?"


def chord_midi(path, keys, beats=4):
    """A MIDI file (format 0, 480 ticks a beat) holding `keys` at velocity 127 for `beats`."""
    ticks = beats * 480
    assert ticks < 1 << 14, "a two-byte delta"
    hold = bytes([0x80 | (ticks >> 7), ticks & 0x7F])
    track = b"".join(bytes([0, 0x90, k, 127]) for k in keys)
    track += b"".join((hold if i == 0 else b"\0") + bytes([0x80, k, 0]) for i, k in enumerate(keys))
    track += bytes([0, 0xFF, 0x2F, 0])
    Path(path).write_bytes(b"MThd" + struct.pack(">IHHH", 6, 0, 1, 480)
                          + b"MTrk" + struct.pack(">I", len(track)) + track)
    return path


class Workers:
    """Every worker `render_many` starts (`downbeat.batch._Worker` replaced by a subclass that
    keeps them), and a watchdog that kills them all after `limit` seconds, so that a batch
    that hangs (a parent reading a corrupt reply's length waits for bytes that never come)
    fails the test instead of hanging it."""

    def __init__(self, monkeypatch, limit=60.0, worker=downbeat.batch._Worker):
        self.started = []
        self.timed_out = False
        keep = self.started

        class Kept(worker):
            def __init__(self):
                super().__init__()
                keep.append(self)

        monkeypatch.setattr(downbeat.batch, "_Worker", Kept)
        self._timer = threading.Timer(limit, self._kill)
        self._timer.daemon = True
        self._timer.start()

    def _kill(self):
        self.timed_out = True
        for w in self.started:
            if w.proc.poll() is None:
                w.proc.kill()

    def stop(self):
        self._timer.cancel()
        assert not self.timed_out, "the batch hung: its workers were killed by the watchdog"

    def stderr(self) -> bytes:
        return b"".join(b"".join(w.stderr) for w in self.started)


def crash_project():
    """A sine through the test plugin that crashes in its third `process` call."""
    plugin = os.environ.get("DOWNBEAT_TEST_CLAP")
    assert plugin and Path(plugin).is_file(), (
        "DOWNBEAT_TEST_CLAP must name the CLAP test plugins (python/ci.sh builds them)")
    return f"""
sample_rate = 48000
block_size = 256
edges = ["tone -> crash -> out"]
[nodes.tone]
type = "sine"
[nodes.crash]
type = "clap"
path = "{plugin}"
id = "org.downbeat.test.crash.process"
after = 2
[nodes.out]
type = "output"
"""


def sha_of(audio):
    return hashlib.sha256(np.ascontiguousarray(audio.T, dtype="<f4").tobytes()).hexdigest()


def test_a_batch_with_a_crashing_plugin_fails_that_job_alone(tmp_path):
    freqs = [110.0, 220.0, 330.0, 440.0, 550.0]
    jobs = [downbeat.Job(HELLO, seconds=1, params={"tone.freq": f}, out=tmp_path / f"{i}.wav")
            for i, f in enumerate(freqs)]
    jobs.insert(2, downbeat.Job(crash_project(), seconds=1, out=tmp_path / "crash.wav"))
    results = downbeat.render_many(jobs, backend="process", workers=2)
    assert len(results) == 6
    bad = results.pop(2)
    assert not bad.ok and bad.out is None and bad.sha256 is None
    for said in ("Downbeat test crash in process", "crashed in process", "SIGSEGV", "signal 11"):
        assert said in bad.error, bad.error
    assert not (tmp_path / "crash.wav").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".part")], "a torn file was left"
    for i, (f, r) in enumerate(zip(freqs, results)):
        assert r.ok, r.error
        assert r.out == tmp_path / f"{i}.wav"
        here = downbeat.render(HELLO, seconds=1, params={"tone.freq": f})
        on_disk, rate = read_wav(r.out)
        assert rate == 48000
        assert np.array_equal(on_disk.view(np.uint32), here.view(np.uint32)), f"job {i}"
        assert r.sha256 == sha_of(here)


def test_the_files_are_the_clis_byte_for_byte(tmp_path):
    cli("run", HELLO, "--device", "offline", "--seconds", "0.5", "--out", tmp_path / "cli.wav")
    [r] = downbeat.render_many([downbeat.Job(HELLO, seconds=0.5, out=tmp_path / "py.wav")])
    assert r.ok, r.error
    assert (tmp_path / "py.wav").read_bytes() == (tmp_path / "cli.wav").read_bytes()


def test_dict_jobs_relative_outs_and_the_cache(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = HELLO.read_text()
    results = downbeat.render_many(
        [{"project": HELLO, "seconds": 0.25, "out": "rel.wav"},
         {"project": text, "seconds": 0.25},
         {"project": str(HELLO), "seconds": 0.25, "params": {"tone.freq": 1000.0}}],
        cache_dir=tmp_path / "cache", workers=1)
    assert all(isinstance(r, downbeat.JobResult) and r.ok for r in results), results
    assert results[0].out == tmp_path / "rel.wav" and results[0].out.is_file()
    # The same samples from the path and from the text: one hash, one cached file.
    assert results[1].sha256 == results[0].sha256
    assert results[1].out == tmp_path / "cache" / f"{results[0].sha256}.wav"
    assert results[2].sha256 != results[0].sha256


def test_bad_jobs_fail_alone_and_bad_arguments_raise(tmp_path):
    results = downbeat.render_many(
        [downbeat.Job(tmp_path / "missing.toml"),
         downbeat.Job(HELLO, seconds=0.1, params={"tone.pich": 1}),
         downbeat.Job(HELLO, seconds=0.1, out=tmp_path / "nowhere" / "x.wav"),
         downbeat.Job(HELLO, seconds=0.1, out=tmp_path / "fine.wav")], workers=2)
    assert [r.ok for r in results] == [False, False, False, True]
    assert "ProjectError" in results[0].error and "missing.toml" in results[0].error
    assert "ParameterError" in results[1].error and "pich" in results[1].error
    assert "does not exist" in results[2].error
    with pytest.raises(downbeat.BackendError, match="give \"process\" or \"ray\""):
        downbeat.render_many([downbeat.Job(HELLO)], backend="dask")
    with pytest.raises(downbeat.DownbeatError, match="unknown: outfile"):
        downbeat.render_many([{"project": HELLO, "outfile": "x.wav"}])


def test_a_plugins_prints_on_stdout_corrupt_no_reply(tmp_path, monkeypatch):
    big = chord_midi(tmp_path / "big.mid", range(36, 68))
    small = chord_midi(tmp_path / "small.mid", range(48, 60), beats=2)
    jobs = [downbeat.Job(PIANO, seconds=1.5, midi=big),
            downbeat.Job(HELLO, seconds=0.5),
            downbeat.Job(PIANO, seconds=1, midi=small),
            downbeat.Job(HELLO, seconds=0.5, params={"tone.freq": 220.0}),
            downbeat.Job(PIANO, seconds=0.5, midi=big)]
    workers = Workers(monkeypatch)
    results = downbeat.render_many(jobs, workers=2, cache_dir=tmp_path / "cache")
    workers.stop()
    # The plugin did print, many times each render (more than a pipe's buffer), and it all
    # went to the workers' stderr.
    assert workers.stderr().count(PIANO_PRINTS) > 2000, workers.stderr()[-2000:]
    for i, (job, r) in enumerate(zip(jobs, results)):
        assert r.ok, f"job {i}: {r.error}"
        here = downbeat.render(job.project, seconds=job.seconds, midi=job.midi, params=job.params)
        assert np.abs(here).max() > 0.01, "silence proves nothing"
        assert r.sha256 == sha_of(here), f"job {i}"
        on_disk, _ = read_wav(r.out)
        assert np.array_equal(on_disk.view(np.uint32), here.view(np.uint32)), f"job {i}"


def threads_in_pipe_write(pid):
    """The worker's threads blocked writing to a full pipe (Linux's /proc/PID/task/*/wchan:
    `pipe_write`, or `anon_pipe_write` on newer kernels)."""
    blocked = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            wchan = Path(f"/proc/{pid}/task/{tid}/wchan").read_text()
        except OSError:
            continue
        if wchan.endswith("pipe_write"):
            blocked.append(tid)
    return blocked


def test_a_worker_killed_inside_a_plugins_process_call_is_blamed_on_the_plugin(tmp_path, monkeypatch):
    """SIGKILL cannot be caught: no crash report is printed, so the parent names the plugin
    and the phase from the worker's last announcement. The worker is held inside mda Piano's
    `run` (its `process`) by its own prints: the parent stops reading the worker's stderr once
    the plugin has printed, the pipe fills, and the plugin's next print blocks."""
    stalled = queue.Queue()

    class Stalling(downbeat.batch._Worker):
        def __init__(self):
            self.gate = threading.Event()
            super().__init__()

        def _drain(self):
            for line in self.proc.stderr:
                self.stderr.append(line)
                if PIANO_PRINTS in line and not self.gate.is_set():
                    stalled.put(self)
                    self.gate.wait(60)

    workers = Workers(monkeypatch, worker=Stalling)
    seen = {}

    def killer():
        try:
            w = stalled.get(timeout=60)
        except queue.Empty:
            return
        deadline = time.monotonic() + 20
        while not (blocked := threads_in_pipe_write(w.proc.pid)) and time.monotonic() < deadline:
            time.sleep(0.01)
        seen["blocked"] = blocked
        w.proc.send_signal(signal.SIGKILL)
        w.gate.set()

    kill = threading.Thread(target=killer, daemon=True)
    kill.start()
    freqs = [110.0, 220.0, 330.0, 440.0]
    jobs = [downbeat.Job(HELLO, seconds=0.5, params={"tone.freq": f}, out=tmp_path / f"{i}.wav")
            for i, f in enumerate(freqs)]
    midi = chord_midi(tmp_path / "chord.mid", range(36, 68))
    jobs.insert(1, downbeat.Job(PIANO, seconds=30, midi=midi, out=tmp_path / "piano.wav"))
    results = downbeat.render_many(jobs, workers=2)
    kill.join(timeout=5)
    workers.stop()
    assert seen.get("blocked"), "the worker was never blocked in the plugin's print"
    bad = results.pop(1)
    assert not bad.ok and bad.out is None and bad.sha256 is None
    for said in ("the plugin `MDA Piano` (http://drobilla.net/plugins/mda/Piano) crashed in process",
                 "SIGKILL (signal 9)", "the worker died of signal 9"):
        assert said in bad.error, bad.error
    assert not (tmp_path / "piano.wav").exists()
    for i, (f, r) in enumerate(zip(freqs, results)):
        assert r.ok, r.error
        here = downbeat.render(HELLO, seconds=0.5, params={"tone.freq": f})
        assert r.sha256 == sha_of(here), f"job {i}"
