"""Batch renders: :func:`render_many` renders many jobs, each in a worker process (a plugin
that crashes fails its own job, and the batch goes on), and writes every file itself, whole
or not at all."""

import hashlib
import os
import pickle
import signal
import struct
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

import numpy as np

from ._native import DownbeatError

__all__ = ["BackendError", "Job", "JobResult", "render_many", "write_wav"]


class BackendError(DownbeatError):
    """A batch backend that is unknown, not installed, or cannot be reached."""


@dataclass
class Job:
    """One render of a batch: what :func:`downbeat.render` takes, and where the file goes.

    ``project`` is a path or the text of a project (a ``str`` with a line break in it);
    ``params`` is ``{"node.param": value}``; ``out`` is the WAV file to write (relative to
    the caller's working directory), or None for a file named after the samples' hash in
    the cache folder.
    """

    project: Union[str, os.PathLike]
    seconds: Optional[float] = None
    midi: Optional[Union[str, os.PathLike]] = None
    params: Dict[str, Any] = field(default_factory=dict)
    out: Optional[Union[str, os.PathLike]] = None


@dataclass
class JobResult:
    """What became of a job: ``ok``, the file written (``out``), the SHA-256 of its samples
    (the WAV's data chunk: interleaved little-endian float32) and, when it failed, ``error``."""

    ok: bool
    out: Optional[Path] = None
    sha256: Optional[str] = None
    error: Optional[str] = None


_JOB_KEYS = {"project", "seconds", "midi", "params", "out"}


def _job_of(i, job) -> Job:
    if isinstance(job, Job):
        return job
    if isinstance(job, dict):
        unknown = set(job) - _JOB_KEYS
        if unknown or "project" not in job:
            raise DownbeatError(
                f"job {i}: a job dict has `project` and any of seconds, midi, params, out"
                + (f" (unknown: {', '.join(sorted(unknown))})" if unknown else "")
            )
        return Job(**job)
    raise DownbeatError(f"job {i}: expected a downbeat.Job or a dict, got {type(job).__name__}")


def _wire(job: Job, threads: int) -> dict:
    """The job as the worker takes it: absolute paths, plain types."""
    project = os.fspath(job.project)
    if "\n" not in project:
        project = os.path.abspath(project)
    midi = os.path.abspath(os.fspath(job.midi)) if job.midi is not None else None
    return {"project": project, "seconds": job.seconds, "midi": midi,
            "params": dict(job.params), "threads": threads}


# The header `wav_bytes` writes; the samples follow it.
_HEADER_BYTES = 82


def wav_bytes(audio: np.ndarray, sample_rate: int) -> bytes:
    """``(channels, frames)`` float32 as the 32-bit float WAV ``downbeat run --out`` writes
    (its header: RIFF, a JUNK chunk with room for RF64's sizes, ``fmt`` of IEEE float)."""
    channels = audio.shape[0]
    data = np.ascontiguousarray(audio.T, dtype="<f4").tobytes()
    block = 4 * channels
    head = b"RIFF" + struct.pack("<I", len(data) + _HEADER_BYTES - 8) + b"WAVE"
    head += b"JUNK" + struct.pack("<I", 28) + bytes(28)
    head += b"fmt " + struct.pack("<IHHIIHHH", 18, 3, channels, sample_rate,
                                  sample_rate * block, block, 32, 0)
    head += b"data" + struct.pack("<I", len(data))
    assert len(head) == _HEADER_BYTES
    return head + data


def write_wav(path, audio: np.ndarray, sample_rate: int) -> str:
    """Writes ``audio`` to ``path`` whole or not at all (beside it first, then renamed);
    returns the SHA-256 of its samples."""
    body = wav_bytes(audio, sample_rate)
    _write_whole(Path(path), body)
    return _samples_sha256(body)


def _samples_sha256(body: bytes) -> str:
    """The SHA-256 of the samples of a WAV file `wav_bytes` made."""
    return hashlib.sha256(memoryview(body)[_HEADER_BYTES:]).hexdigest()


def _write_whole(path: Path, body: bytes) -> None:
    """Writes `body` to `path` whole or not at all: beside it first, then renamed."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.part")
    with open(tmp, "wb") as f:
        f.write(body)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _cache_dir(cache_dir) -> Path:
    if cache_dir is not None:
        return Path(cache_dir)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "downbeat" / "renders"


def _store(job: Job, rate: int, audio: np.ndarray, cache: Path) -> JobResult:
    """Writes a finished job's file: its ``out``, else the cache named after its hash."""
    body = wav_bytes(audio, rate)
    digest = _samples_sha256(body)
    if job.out is not None:
        out = Path(os.path.abspath(os.fspath(job.out)))
        if not out.parent.is_dir():
            return JobResult(False, error=f"out: the folder {out.parent} does not exist")
        _write_whole(out, body)
        return JobResult(True, out=out, sha256=digest)
    cache.mkdir(parents=True, exist_ok=True)
    out = cache / f"{digest}.wav"
    if not out.exists():
        _write_whole(out, body)
    return JobResult(True, out=out, sha256=digest)


_PHASE = "downbeat-phase: "


def _blame(lines, code) -> str:
    """The plugin and phase the worker's last announcement points at, worded as the crash
    report is: for a plugin whose crash bypassed the report's handler (one that puts back
    the signal's default action before it raises the signal, say)."""
    said = [line[len(_PHASE):] for line in lines if line.startswith(_PHASE)]
    if not said:
        return "the worker process died"
    last = said[-1]
    signame = signal.Signals(-code).name if code < 0 and -code in _SIGNALS else None
    how = f" with {signame} (signal {-code})" if signame else ""
    if last == "process":
        created = []
        for s in said:
            phase, _, label = s.partition(" ")
            if phase == "create" and label not in created:
                created.append(label)
        if not created:
            return "the worker process died while rendering"
        who = created[0] if len(created) == 1 else "one of " + ", ".join(created)
        return f"the plugin {who} crashed in process{how}"
    phase, _, label = last.partition(" ")
    return f"the plugin {label} crashed in {phase}{how}"


_SIGNALS = {int(s) for s in signal.Signals}


class _Worker:
    """A ``python -m downbeat._worker`` process and the stderr it has printed."""

    def __init__(self):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "downbeat._worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        self.stderr: List[bytes] = []
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self):
        for line in self.proc.stderr:
            self.stderr.append(line)

    def run(self, wire: dict):
        """The worker's reply to ``wire``, or None when it died."""
        body = pickle.dumps(wire, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            self.proc.stdin.write(struct.pack("<Q", len(body)) + body)
            self.proc.stdin.flush()
        except BrokenPipeError:
            return None
        header = self.proc.stdout.read(8)
        if len(header) < 8:
            return None
        (size,) = struct.unpack("<Q", header)
        return pickle.loads(self.proc.stdout.read(size))

    def death(self) -> str:
        """Why the worker died: the crash report it printed, or the plugin and phase its
        announcements point at, and its signal or exit code."""
        code = self.proc.wait()
        self._reader.join(timeout=5)
        lines = b"".join(self.stderr).decode(errors="replace").splitlines()
        marks = [i for i, line in enumerate(lines) if line == "downbeat-worker: job"]
        lines = lines[marks[-1] + 1 :] if marks else lines
        how = f"signal {-code}" if code < 0 else f"exit code {code}"
        reports = [line for line in lines if "crashed in" in line]
        if reports:
            said = reports[-1].removeprefix("error: ")
        else:
            said = _blame(lines, code)
        return f"{said} (the worker died of {how}; the batch went on)"

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        self.proc.wait()
        self._reader.join(timeout=5)


def _run_process(jobs: List[Job], workers: int, threads: int, cache: Path) -> List[JobResult]:
    results: List[Optional[JobResult]] = [None] * len(jobs)
    lock = threading.Lock()
    todo = iter(range(len(jobs)))

    def next_job():
        with lock:
            return next(todo, None)

    def loop():
        worker = _Worker()
        try:
            while (i := next_job()) is not None:
                reply = worker.run(_wire(jobs[i], threads))
                if reply is None:
                    results[i] = JobResult(False, error=worker.death())
                    worker = _Worker()
                elif reply[0] == "ok":
                    _, rate, audio = reply
                    results[i] = _store(jobs[i], rate, audio, cache)
                else:
                    results[i] = JobResult(False, error=f"{reply[1]}: {reply[2]}")
        finally:
            worker.close()

    pool = [threading.Thread(target=loop) for _ in range(max(1, min(workers, len(jobs))))]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return [r if r is not None else JobResult(False, error="not run") for r in results]


def render_many(jobs, backend: str = "process", workers: Optional[int] = None,
                threads: int = 1, cache_dir=None) -> List[JobResult]:
    """Renders every job and writes its WAV file; one :class:`JobResult` per job, in order.

    ``backend="process"`` runs the jobs in ``workers`` processes of this machine (default:
    one per core), each rendering with ``threads`` threads. A job that fails (bad input, a
    plugin that crashes and takes its worker down) fails alone, its ``error`` saying why,
    and the batch goes on; :func:`render_many` itself raises only for bad arguments.
    """
    jobs = [_job_of(i, j) for i, j in enumerate(jobs)]
    if threads < 1:
        raise DownbeatError("threads: at least 1")
    cache = _cache_dir(cache_dir)
    if backend == "process":
        return _run_process(jobs, workers or os.cpu_count() or 1, threads, cache)
    if backend == "ray":
        try:
            from . import _ray
        except ImportError as e:
            raise BackendError(
                f"backend=\"ray\" needs Ray: pip install 'downbeat[ray]' ({e})"
            ) from None
        return _ray.run(jobs, workers, threads, cache)
    raise BackendError(f"backend {backend!r}: give \"process\" or \"ray\"")
