"""`downbeat.start` on the virtual device (real time, plays nowhere): parameters set and ramped,
notes played, levels and values watched while it runs, the run recorded, and bad input refused;
and on the system device, through a PulseAudio server with a null sink."""

import os
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


@pytest.fixture
def pulse(tmp_path, monkeypatch):
    """A PulseAudio server of the test's own whose default sink is a null sink (the sound
    card a CI machine lacks), found by this process through its runtime folder."""
    import shutil
    import subprocess

    assert shutil.which("pulseaudio"), "pulseaudio is missing (scripts/deps.sh installs it)"
    run = tmp_path / "pulse"
    run.mkdir()
    env = dict(os.environ, PULSE_RUNTIME_PATH=str(run), HOME=str(run))
    server = subprocess.Popen(
        ["pulseaudio", "-n", "--daemonize=no", "--exit-idle-time=-1", "--disallow-exit",
         "-L", "module-native-protocol-unix",
         "-L", "module-null-sink sink_name=out format=float32le rate=48000 channels=2"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 15
        while subprocess.run(["pactl", "info"], env=env, capture_output=True).returncode != 0:
            assert time.monotonic() < deadline, "pulseaudio did not start"
            time.sleep(0.1)
        subprocess.run(["pactl", "set-default-sink", "out"], env=env, check=True)
        monkeypatch.setenv("PULSE_RUNTIME_PATH", str(run))
        monkeypatch.setenv("HOME", str(run))
        yield
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_the_system_device_plays_in_real_time_through_pulseaudio(pulse):
    with downbeat.start(HELLO, "system") as live:
        assert live.device == "system"
        # PulseAudio takes a while to start the stream (about 2 s here): pacing is measured
        # once a tenth of a second has played.
        first = watch_until(live, lambda w: w["frame"] > 4800, seconds=15.0)
        assert first["frame"] > 4800, "the sound card never started"
        t0 = time.monotonic()
        time.sleep(1.5)
        later = watch_until(live, lambda w: w["frame"] > first["frame"])
        elapsed = time.monotonic() - t0
        played = (later["frame"] - first["frame"]) / live.sample_rate
        # Paced by the sound card: about as many frames as seconds went by (a free-running
        # render would be hundreds of times faster; a stalled one, no faster than a stall).
        assert 0.4 * elapsed < played < 1.6 * elapsed + 0.2, (played, elapsed)
        assert later["levels"]["tone"][0] > -40.0, later["levels"]
        live.set("tone.freq", 330.0)
        seen = watch_until(live, lambda w: w["values"]["tone.freq"] == pytest.approx(330.0))
        assert seen["values"]["tone.freq"] == pytest.approx(330.0)
        report = live.stop()
    # It ran for more than the second slept above.
    assert report["frames"] >= 48000, report
