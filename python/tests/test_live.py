"""`downbeat.start` on the virtual device (real time, plays nowhere): parameters set and ramped,
notes played, levels and values watched while it runs, the run recorded, and bad input refused."""

import time

import numpy as np
import pytest

import downbeat
from support import EXAMPLES, read_wav

HELLO, SYNTH = EXAMPLES / "hello.toml", EXAMPLES / "synth.toml"


def watch_until(live, check, seconds=5.0):
    """The first watch that `check` accepts, within `seconds`; the last one otherwise."""
    deadline = time.monotonic() + seconds
    seen = live.watch()
    while not check(seen) and time.monotonic() < deadline:
        seen = live.watch()
    return seen


def test_set_and_ramp_reach_the_running_graph_and_the_watcher_sees_them(tmp_path):
    with downbeat.start(HELLO, "virtual", out=tmp_path / "live.wav") as live:
        assert (live.device, live.sample_rate) == ("virtual", 48000)
        first = watch_until(live, lambda w: w["frame"] > 0)
        assert first["values"]["tone.freq"] == pytest.approx(110.0)
        assert first["levels"]["tone"][0] > -40.0, first["levels"]
        live.set("tone.freq", 440.0)
        seen = watch_until(live, lambda w: w["values"]["tone.freq"] == pytest.approx(440.0))
        assert seen["values"]["tone.freq"] == pytest.approx(440.0)
        live.ramp("tone.amp", 0.0, 0.1)
        quiet = watch_until(live, lambda w: w["levels"]["tone"][0] < -100.0)
        assert quiet["values"]["tone.amp"] == 0.0
        assert quiet["levels"]["tone"][0] < -100.0, quiet["levels"]
        report = live.stop()
    assert report["frames"] > 0 and report["xruns"] == 0
    audio, rate = read_wav(tmp_path / "live.wav")
    assert rate == 48000 and audio.shape[1] == report["frames"]
    assert np.abs(audio).max() > 0.01


def test_notes_reach_the_instruments():
    live = downbeat.start(SYNTH, "virtual", params={"pluck.amp": 0.0})
    try:
        silent = watch_until(live, lambda w: w["frame"] > 4800)
        assert silent["levels"]["keys"][0] < -100.0, silent["levels"]
        live.note_on(60, 0.9)
        playing = watch_until(live, lambda w: w["levels"]["keys"][0] > -30.0)
        assert playing["levels"]["keys"][0] > -30.0, playing["levels"]
        live.note_off(60)
        released = watch_until(live, lambda w: w["levels"]["keys"][0] < -100.0)
        assert released["levels"]["keys"][0] < -100.0, released["levels"]
    finally:
        live.stop()


def test_bad_input_is_refused_and_a_stopped_run_says_so(monkeypatch):
    with pytest.raises(downbeat.ParameterError, match='device "speakers"'):
        downbeat.start(HELLO, "speakers")
    with pytest.raises(downbeat.ParameterError, match="render offline"):
        downbeat.start(HELLO, "offline")
    monkeypatch.setenv("JACK_DEFAULT_SERVER", "downbeat-no-such-server")
    monkeypatch.setenv("JACK_NO_START_SERVER", "1")
    with pytest.raises(downbeat.DeviceError, match="JACK"):
        downbeat.start(HELLO, "jack")
    live = downbeat.start(HELLO, "virtual")
    with pytest.raises(downbeat.ParameterError, match="tone"):
        live.set("tone.pich", 1.0)
    with pytest.raises(downbeat.ParameterError, match="not \"node.param\""):
        live.set("freq", 1.0)
    live.stop()
    with pytest.raises(downbeat.RenderError, match="stopped"):
        live.set("tone.freq", 220.0)
    with pytest.raises(downbeat.RenderError, match="stopped already"):
        live.stop()
