"""`downbeat.render_many` with the process backend: every job's file right and whole, in the
jobs' order, the same bits as a render in this process, and a job whose plugin crashes failing
alone with the plugin, the phase and the signal named."""

import hashlib
import os
from pathlib import Path

import numpy as np
import pytest

import downbeat
from support import EXAMPLES, cli, read_wav

HELLO = EXAMPLES / "hello.toml"


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
