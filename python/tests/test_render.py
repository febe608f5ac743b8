"""`downbeat.render` against `downbeat run --device offline --out`: the same bits, for every
example project that renders without an input, and the same bits for the same job whatever ran
before it."""

import warnings

import numpy as np
import pytest

import downbeat
from support import EXAMPLES, cli, read_wav

# Every example but overdrive-lv2.toml, which reads an input (test_chain.py plays it).
CASES = [
    ("hello.toml", None),
    ("echoes.toml", None),
    ("fanin84.toml", None),
    ("player.toml", None),
    ("drums.toml", "drums.mid"),
    ("four_bars.toml", "four_bars.mid"),
    ("synth.toml", "tune.mid"),
]


def same_bits(a, b):
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


def test_every_example_is_covered():
    inputs = {"overdrive-lv2.toml"}
    assert {p.name for p in EXAMPLES.glob("*.toml")} == {c[0] for c in CASES} | inputs


@pytest.mark.parametrize("name,midi", CASES)
def test_a_render_equals_the_clis_offline_render_bit_for_bit(tmp_path, name, midi):
    project = EXAMPLES / name
    args = ["run", project, "--device", "offline", "--seconds", "3", "--out", tmp_path / "cli.wav"]
    kwargs = {"seconds": 3}
    if midi:
        args += ["--midi", EXAMPLES / midi]
        kwargs["midi"] = EXAMPLES / midi
    cli(*args)
    expected, rate = read_wav(tmp_path / "cli.wav")
    got = downbeat.render(project, **kwargs)
    assert got.dtype == np.float32 and got.flags.c_contiguous
    assert rate == downbeat.Project.load(project).sample_rate
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert np.abs(got).max() > 0.01, "silence proves nothing"
    assert same_bits(got, expected), f"max difference {np.abs(got - expected).max()}"


def test_the_default_length_is_the_clis():
    project = EXAMPLES / "hello.toml"
    rate = downbeat.Project.load(project).sample_rate
    assert downbeat.render(project).shape[1] == 10 * rate
    midi = downbeat.render(EXAMPLES / "synth.toml", midi=EXAMPLES / "tune.mid")
    # The file's last event plus the longest release: longer than the notes alone.
    assert midi.shape[1] > rate


def test_a_project_tempo_overriding_the_files_warns_as_the_cli_does(tmp_path):
    midi = EXAMPLES / "tune.mid"
    project = tmp_path / "synth.toml"
    project.write_text((EXAMPLES / "synth.toml").read_text() + "\n[tempo]\nbpm = 100\n")
    with pytest.warns(RuntimeWarning) as caught:
        downbeat.render(project, seconds=0.1, midi=midi, threads=1)
    ours = [str(w.message) for w in caught]
    cli_stderr = cli("run", project, "--device", "offline", "--seconds", "0.1", "--midi", midi).stderr
    theirs = [line.split("`: ", 1)[1] for line in cli_stderr.splitlines() if "[tempo]" in line]
    assert theirs, cli_stderr
    assert ours == [f"{midi}: {theirs[0]}"], (ours, theirs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        downbeat.render(EXAMPLES / "synth.toml", seconds=0.1, midi=midi, threads=1)


def test_params_set_a_value_as_the_file_would(tmp_path):
    project = EXAMPLES / "hello.toml"
    text = project.read_text()
    assert text.count("freq = 110.0") == 1
    edited = tmp_path / "edited.toml"
    edited.write_text(text.replace("freq = 110.0", "freq = 220.0"))
    by_params = downbeat.render(project, seconds=1, params={"tone.freq": 220.0})
    by_file = downbeat.render(edited, seconds=1)
    plain = downbeat.render(project, seconds=1)
    assert same_bits(by_params, by_file)
    assert not same_bits(by_params, plain)


def test_the_same_job_gives_the_same_bits_after_any_other_and_in_any_thread_count():
    hello, synth = EXAMPLES / "hello.toml", EXAMPLES / "synth.toml"
    midi = EXAMPLES / "tune.mid"
    first = downbeat.render(synth, seconds=2, midi=midi, threads=1)
    downbeat.render(hello, seconds=1)
    downbeat.render(synth, seconds=1)
    again = downbeat.render(synth, seconds=2, midi=midi, threads=2)
    assert same_bits(first, again)


def test_project_text_and_project_objects_render_alike():
    project = EXAMPLES / "hello.toml"
    text = project.read_text()
    assert same_bits(
        downbeat.render(text, seconds=0.5), downbeat.render(downbeat.Project.parse(text), seconds=0.5)
    )


def test_the_type_stub_names_what_the_native_module_has():
    import ast
    from pathlib import Path

    from downbeat import _native

    stub = Path(_native.__file__).with_name("_native.pyi")
    assert stub.is_file(), f"{stub} is not installed beside the module"
    tree = ast.parse(stub.read_text())
    stubbed = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    native = {n for n in dir(_native) if not n.startswith("__")}
    assert stubbed == native, (sorted(stubbed - native), sorted(native - stubbed))
    assert Path(_native.__file__).with_name("py.typed").is_file()
