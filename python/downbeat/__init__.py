"""Downbeat from Python: render projects and process numpy arrays through nodes and plugins.

Render a project file into a ``float32`` array shaped ``(channels, frames)``, the samples
``downbeat run PROJECT --device offline --out FILE`` writes::

    import downbeat
    audio = downbeat.render("examples/projects/hello.toml", seconds=2)

Process an array through a chain of nodes and CLAP, VST3 or LV2 plugins::

    chain = downbeat.Chain([
        downbeat.plugin("/usr/lib/clap/ZamComp.clap", threshold=-20),
        downbeat.node("biquad", mode="lowpass", freq=800),
    ])
    wet = chain(audio, 48000)

Every call that computes audio releases the GIL while it runs. Errors are
:class:`DownbeatError` subclasses whose message says what and where.
"""

from ._native import (
    AudioFormatError,
    Chain,
    DeviceError,
    DownbeatError,
    Live,
    Mix,
    MidiFileError,
    ParameterError,
    PluginError,
    Project,
    ProjectError,
    RenderError,
    Stage,
    node,
    node_types,
    plugin,
    render,
    start,
)
from .batch import BackendError, Job, JobResult, render_many, write_wav

__all__ = [
    "AudioFormatError",
    "BackendError",
    "Job",
    "JobResult",
    "render_many",
    "write_wav",
    "Chain",
    "DeviceError",
    "DownbeatError",
    "Live",
    "Mix",
    "MidiFileError",
    "ParameterError",
    "PluginError",
    "Project",
    "ProjectError",
    "RenderError",
    "Stage",
    "node",
    "node_types",
    "plugin",
    "render",
    "start",
]
