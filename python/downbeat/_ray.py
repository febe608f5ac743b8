"""The Ray backend of :func:`downbeat.render_many`: long-lived actors, one per CPU of the
cluster (or ``workers``), each rendering in a worker process of its own as the process backend
does, the samples coming back through Ray's object store so that no node needs a shared disk.

An actor that is lost mid-job (its process killed, its node gone) is restarted by Ray and the
job retried; the caller writes every file once, after the job's result has arrived, so a
retried job leaves neither a duplicate nor a torn file.
"""

import os

import ray

from .batch import JobResult, _store, _wire, _Worker

# Ray retries a job this many times when its actor is lost; a plugin that crashes does not
# lose the actor (it crashes the actor's worker process), so it is not retried.
RETRIES = 3


@ray.remote(num_cpus=1, max_restarts=-1, max_task_retries=RETRIES)
class Renderer:
    """Renders jobs in a worker process it keeps between them."""

    def __init__(self):
        self.worker = None

    def pid(self):
        return os.getpid()

    def render(self, i, wire):
        if self.worker is None:
            self.worker = _Worker()
        reply = self.worker.run(wire)
        if reply is None:
            error = self.worker.death()
            self.worker = None
            return i, ("died", error)
        return i, reply


def run(jobs, workers, threads, cache):
    if not ray.is_initialized():
        # Where `ray.init()` connects: $RAY_ADDRESS, else a cluster of this machine.
        ray.init(ignore_reinit_error=True, log_to_driver=False)
    count = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
    actors = [Renderer.remote() for _ in range(max(1, min(count, len(jobs))))]
    results = [None] * len(jobs)
    todo = iter(range(len(jobs)))
    running = {}

    def submit(actor):
        i = next(todo, None)
        if i is not None:
            running[actor.render.remote(i, _wire(jobs[i], threads))] = (i, actor)

    for actor in actors:
        submit(actor)
    while running:
        [ref], _ = ray.wait(list(running), num_returns=1)
        i, actor = running.pop(ref)
        try:
            _, reply = ray.get(ref)
        except ray.exceptions.RayError as e:
            results[i] = JobResult(False, error=f"lost on Ray after {RETRIES} retries: {e}")
        else:
            if reply[0] == "ok":
                _, rate, audio = reply
                results[i] = _store(jobs[i], rate, audio, cache)
            elif reply[0] == "died":
                results[i] = JobResult(False, error=reply[1])
            else:
                results[i] = JobResult(False, error=f"{reply[1]}: {reply[2]}")
        submit(actor)
    for actor in actors:
        ray.kill(actor)
    return [r if r is not None else JobResult(False, error="not run") for r in results]
