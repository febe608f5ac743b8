"""`downbeat.Chain` on Debian's zam-plugins (CLAP and LV2) and mda's LV2 Overdrive: the same
bits as `downbeat run --device offline --input` of the same chain written as a project,
streaming, parameters by name, state, and bad input refused with a clear error."""

import threading
import time

import numpy as np
import pytest

import downbeat
from support import EXAMPLES, cli, read_wav, make_signal, write_wav

COMP_CLAP = "/usr/lib/clap/ZamCompX2.clap"
MAXIM_CLAP = "/usr/lib/clap/ZaMaximX2.clap"
COMP_VST3 = "/usr/lib/vst3/ZamCompX2.vst3"
COMP_LV2 = "urn:zamaudio:ZamCompX2"
OVERDRIVE = "http://drobilla.net/plugins/mda/Overdrive"
RATE = 48000


def same_bits(a, b):
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


def cli_render(tmp_path, project_text, audio):
    """The CLI's offline render of `project_text` with `audio` as its input."""
    (tmp_path / "chain.toml").write_text(project_text)
    write_wav(tmp_path / "in.wav", audio, RATE)
    cli("run", tmp_path / "chain.toml", "--device", "offline", "--input", tmp_path / "in.wav",
        "--seconds", audio.shape[1] / RATE, "--out", tmp_path / "out.wav")
    out, rate = read_wav(tmp_path / "out.wav")
    assert rate == RATE
    return out


def test_a_chain_of_zam_clap_plugins_matches_the_clis_render(tmp_path):
    audio = make_signal(2, 1.0)
    chain = downbeat.Chain([
        downbeat.plugin(COMP_CLAP, threshold=-24.0, ratio=4.0),
        downbeat.node("biquad", mode="lowpass", freq=2000.0),
    ])
    got = chain(audio, RATE)
    expected = cli_render(tmp_path, f"""
sample_rate = {RATE}
block_size = 256
edges = ["in -> comp -> lp -> out"]
[nodes.in]
type = "input"
channels = 2
[nodes.comp]
type = "clap"
path = "{COMP_CLAP}"
threshold = -24.0
ratio = 4.0
[nodes.lp]
type = "biquad"
mode = "lowpass"
freq = 2000.0
[nodes.out]
type = "output"
""", audio)
    assert got.shape == expected.shape == (2, audio.shape[1])
    assert not same_bits(got, audio) and np.abs(got).max() > 0.01
    assert same_bits(got, expected), f"max difference {np.abs(got - expected).max()}"


def test_a_mix_of_branches_matches_the_clis_render_serial_and_parallel(tmp_path):
    audio = make_signal(2, 1.0, seed=4)
    stages = [
        downbeat.Mix([[downbeat.plugin(COMP_CLAP, name="comp", threshold=-30.0)],
                      downbeat.node("gain", gain=0.5)]),
        downbeat.node("biquad", name="lp", mode="lowpass", freq=3000.0),
    ]
    serial = downbeat.Chain(stages)(audio, RATE)
    parallel = downbeat.Chain(stages, threads=2)(audio, RATE)
    expected = cli_render(tmp_path, f"""
sample_rate = {RATE}
block_size = 256
edges = ["in -> comp -> m", "in -> g -> m", "m -> lp -> out"]
[nodes.in]
type = "input"
channels = 2
[nodes.comp]
type = "clap"
path = "{COMP_CLAP}"
threshold = -30.0
[nodes.g]
type = "gain"
gain = 0.5
[nodes.m]
type = "mix"
[nodes.lp]
type = "biquad"
mode = "lowpass"
freq = 3000.0
[nodes.out]
type = "output"
""", audio)
    alone = downbeat.Chain(stages[1:])(audio, RATE)
    assert not same_bits(serial, alone), "the branches made no difference"
    assert same_bits(serial, expected), f"max difference {np.abs(serial - expected).max()}"
    assert same_bits(parallel, expected)
    assert [s.name for s in downbeat.Chain(stages).stages] == ["comp", "gain", "lp"]
    with pytest.raises(downbeat.ParameterError, match="two branches or more"):
        downbeat.Mix([downbeat.node("gain")])


def test_the_lv2_overdrive_example_through_a_chain_matches_the_clis_render(tmp_path):
    audio = make_signal(2, 1.0, seed=3)
    chain = downbeat.Chain([downbeat.plugin(OVERDRIVE, drive=0.7, muffle=0.3, output=0.6)])
    got = chain(audio, RATE)
    expected = cli_render(tmp_path, (EXAMPLES / "overdrive-lv2.toml").read_text(), audio)
    assert same_bits(got, expected), f"max difference {np.abs(got - expected).max()}"


def test_the_clap_and_lv2_builds_of_one_plugin_agree(tmp_path):
    audio = make_signal(2, 0.5, seed=5)
    clap = downbeat.Chain([downbeat.plugin(COMP_CLAP, threshold=-30.0)])(audio, RATE)
    lv2 = downbeat.Chain([downbeat.plugin(COMP_LV2, thr=-30.0)])(audio, RATE)
    assert np.abs(clap - audio).max() > 0.01, "the compressor did nothing"
    assert np.abs(clap - lv2).max() < 1e-4


def test_streaming_blocks_equal_one_call_and_a_reset_starts_afresh():
    audio = np.ascontiguousarray(make_signal(2, 1.0, seed=11)[:, : 256 * 180])
    chain = downbeat.Chain([downbeat.plugin(MAXIM_CLAP), downbeat.node("gain", gain=0.5)])
    whole = chain(audio, RATE)
    parts = [chain.process(audio[:, i : i + 256 * 45].copy(), RATE, reset=(i == 0))
             for i in range(0, audio.shape[1], 256 * 45)]
    assert same_bits(np.concatenate(parts, axis=1), whole)
    again = chain(audio, RATE)
    assert same_bits(again, whole), "a reset call does not start from silence"


def test_parameters_are_listed_and_set_by_name():
    audio = make_signal(2, 0.5, seed=2)
    chain = downbeat.Chain([downbeat.plugin(COMP_CLAP, name="comp", threshold=-10.0),
                            downbeat.node("gain", gain=1.0)])
    params = chain.parameters()
    assert params["comp.threshold"] == pytest.approx(-10.0)
    assert "gain.gain" in params
    before = chain(audio, RATE)
    chain["comp.threshold"] = -40.0
    assert chain["comp.threshold"] == pytest.approx(-40.0)
    after = chain(audio, RATE)
    assert np.abs(after).max() < np.abs(before).max(), "a lower threshold compresses more"
    # Set while streaming: heard from the next call on.
    chain.set("gain.gain", 0.25)
    quieter = chain.process(audio, reset=False)
    assert np.abs(quieter).max() < 0.3 * np.abs(after).max()


def test_a_saved_state_starts_a_new_stage_with_its_values(tmp_path):
    audio = make_signal(2, 0.25)
    chain = downbeat.Chain([downbeat.plugin(COMP_VST3, name="comp", threshold=-33.0)])
    first = chain(audio, RATE)
    saved = chain.save_state(tmp_path / "states")
    assert set(saved) == {"comp"} and saved["comp"].suffix == ".vst3state"
    again = downbeat.Chain([downbeat.plugin(COMP_VST3, name="comp", state=saved["comp"])])
    assert again.parameters()["comp.threshold"] == pytest.approx(-33.0)
    assert same_bits(again(audio, RATE), first)
    plain = downbeat.Chain([downbeat.plugin(COMP_VST3, name="comp")])
    assert plain.parameters()["comp.threshold"] != pytest.approx(-33.0)


def thirty_seconds_through_a_chain():
    audio = make_signal(2, 30.0, seed=1)
    chain = downbeat.Chain([downbeat.plugin(COMP_CLAP), downbeat.plugin(MAXIM_CLAP)])
    return lambda: chain(audio, RATE)


def a_render_of_84_compressors():
    # 84 spectral compressors: about 2 s of work for 3 s of audio.
    return lambda: downbeat.render(EXAMPLES / "fanin84.toml", seconds=3, threads=1)


@pytest.mark.parametrize("make", [thirty_seconds_through_a_chain, a_render_of_84_compressors])
def test_the_gil_is_released_while_audio_is_computed(make):
    job = make()
    took = {}

    def work():
        t0 = time.monotonic()
        job()
        took["seconds"] = time.monotonic() - t0

    thread = threading.Thread(target=work)
    # The first gap starts before the render does.
    ticks = [time.monotonic()]
    thread.start()
    while thread.is_alive():
        ticks.append(time.monotonic())
    # The last gap ends when the render does: held, the GIL would stop this loop until then.
    ticks.append(time.monotonic())
    thread.join()
    gaps = np.diff(ticks)
    assert took["seconds"] > 0.2, f"the render took {took['seconds']} s: too short to tell"
    # Holding the GIL, the render would stop this thread for its whole length.
    assert gaps.max() < took["seconds"] / 4, (gaps.max(), took["seconds"])


@pytest.mark.parametrize("audio,message", [
    (np.zeros((2, 100), np.float64), "dtype float64 is not float32"),
    (np.zeros(100, np.float32), "is not (channels, frames)"),
    (np.zeros((2, 200), np.float32)[:, ::2], "not C-contiguous"),
    (np.zeros((100, 2), np.float32), "100 channels"),
    ([[0.0, 0.0]], "expected a numpy array"),
])
def test_bad_arrays_are_refused_saying_what_to_do(audio, message):
    chain = downbeat.Chain([downbeat.node("gain")])
    with pytest.raises(downbeat.AudioFormatError, match=None) as e:
        chain(audio, RATE)
    assert message in str(e.value)


def test_bad_rates_names_plugins_and_parameters_are_refused():
    audio = np.zeros((2, 256), np.float32)
    chain = downbeat.Chain([downbeat.node("gain")])
    with pytest.raises(downbeat.AudioFormatError, match="sample_rate 0"):
        chain(audio, 0)
    with pytest.raises(downbeat.AudioFormatError, match="needed on the first call"):
        chain(audio)
    with pytest.raises(downbeat.ParameterError, match="no node type `gian`"):
        downbeat.node("gian")
    with pytest.raises(downbeat.ParameterError, match="unknown parameter `gian`"):
        downbeat.Chain([downbeat.node("gain", gian=1.0)])(audio, RATE)
    with pytest.raises(downbeat.ParameterError, match="no stage `comp`"):
        chain.set("comp.threshold", 1.0)
    with pytest.raises(downbeat.PluginError, match="/nowhere/Missing.clap"):
        downbeat.Chain([downbeat.plugin("/nowhere/Missing.clap")])(audio, RATE)
    with pytest.raises(downbeat.PluginError, match="is not a plugin"):
        downbeat.plugin("/usr/lib/ladspa/thing.so")
    with pytest.raises(downbeat.ParameterError, match="no parameter `pich`"):
        downbeat.render(EXAMPLES / "hello.toml", params={"tone.pich": 1.0})
    with pytest.raises(downbeat.ParameterError, match="has no node `tones`"):
        downbeat.render(EXAMPLES / "hello.toml", params={"tones.freq": 1.0})
    chain(audio, RATE)
    with pytest.raises(downbeat.AudioFormatError, match="must keep the sample rate and channels"):
        chain.process(np.zeros((1, 256), np.float32), reset=False)


def test_project_errors_carry_file_and_line(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('sample_rate = 48000\nblock_size = 256\nedges = ["a -> out"]\n'
                   '[nodes.a]\ntype = "sine"\nfreq = "high"\n[nodes.out]\ntype = "output"\n')
    with pytest.raises(downbeat.ProjectError) as e:
        downbeat.render(bad, seconds=1)
    assert (e.value.file, e.value.line) == (str(bad), 6)
    assert "freq" in str(e.value)
    with pytest.raises(downbeat.ProjectError, match="cannot read project file"):
        downbeat.Project.load(tmp_path / "missing.toml")
    with pytest.raises(downbeat.AudioFormatError, match="reads an input"):
        downbeat.render(EXAMPLES / "overdrive-lv2.toml")
    with pytest.raises(downbeat.MidiFileError, match="nothing.mid"):
        downbeat.render(EXAMPLES / "synth.toml", midi=tmp_path / "nothing.mid")
    assert issubclass(downbeat.ProjectError, downbeat.DownbeatError)
