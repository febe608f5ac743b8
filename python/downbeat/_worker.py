"""A batch worker process: renders the jobs its parent sends on stdin, one at a time, and
sends back each one's samples (or its error) on its own copy of stdout.

Run as ``python -m downbeat._worker`` by :func:`downbeat.render_many`. A plugin that crashes
takes only this process down; the crash report the native module installs prints which
plugin crashed, in which phase and with which signal on stderr first, which the parent reads.
"""

import os
import pickle
import struct
import sys


JOB_MARK = b"downbeat-worker: job\n"


def read_frame(stream):
    """One length-prefixed pickled object, or None at the end of the stream."""
    header = stream.read(8)
    if len(header) < 8:
        return None
    (size,) = struct.unpack("<Q", header)
    return pickle.loads(stream.read(size))


def write_frame(stream, obj):
    body = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(struct.pack("<Q", len(body)) + body)
    stream.flush()


def render_job(job):
    """The job's (sample rate, samples) by :func:`downbeat.render`."""
    import downbeat

    project = job["project"]
    project = downbeat.Project.parse(project) if "\n" in project else downbeat.Project.load(project)
    audio = downbeat.render(
        project, seconds=job["seconds"], midi=job["midi"], params=job["params"], threads=job["threads"]
    )
    return project.sample_rate, audio


def main():
    import downbeat
    from . import _native

    _native._install_crash_report()
    # The replies go on a copy of stdout; what plugins print lands on stderr instead of
    # corrupting them.
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    requests = sys.stdin.buffer
    while True:
        job = read_frame(requests)
        if job is None:
            return
        # Where this job's announcements start, for the parent's reading of a crash.
        os.write(2, JOB_MARK)
        try:
            rate, audio = render_job(job)
            write_frame(replies, ("ok", rate, audio))
        except downbeat.DownbeatError as e:
            write_frame(replies, ("error", type(e).__name__, str(e)))
        except Exception as e:  # noqa: BLE001 - reported to the parent, which raises nothing
            write_frame(replies, ("error", type(e).__name__, f"{type(e).__name__}: {e}"))


if __name__ == "__main__":
    main()
