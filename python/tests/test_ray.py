"""`downbeat.render_many(backend="ray")` on a real Ray cluster of two nodes on this host (a
head and a second node started with `ray start` over 127.0.0.1, one CPU each): 40 jobs hashed
equal to renders in this process, and a Ray worker killed with SIGKILL mid-batch costing
nothing: every job completes once, no file is torn or written twice."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import downbeat
from support import EXAMPLES

SYNTH, TUNE = EXAMPLES / "synth.toml", EXAMPLES / "tune.mid"
RAY = Path(sys.executable).parent / "ray"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ray_cli(*args):
    done = subprocess.run([str(RAY), *args], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, f"ray {' '.join(args)}: {done.stdout}\n{done.stderr}"


@pytest.fixture(scope="module")
def cluster():
    assert RAY.is_file(), f"{RAY} is missing: install the package with its `ray` extra"
    port = free_port()
    # Ray's sockets live under its temp folder, and a socket's path may not be longer than
    # 107 bytes: pytest's folders under the suite's TMPDIR are too deep.
    temp = tempfile.mkdtemp(prefix="dbray-", dir="/tmp")
    common = ["--num-cpus=1", "--node-ip-address=127.0.0.1", "--disable-usage-stats"]
    ray_cli("start", "--head", f"--port={port}", f"--temp-dir={temp}",
            "--include-dashboard=false", *common)
    try:
        ray_cli("start", f"--address=127.0.0.1:{port}", *common)
        os.environ["RAY_ADDRESS"] = f"127.0.0.1:{port}"
        yield port
    finally:
        import ray

        if ray.is_initialized():
            ray.shutdown()
        os.environ.pop("RAY_ADDRESS", None)
        subprocess.run([str(RAY), "stop", "--force"], capture_output=True, timeout=120)
        shutil.rmtree(temp, ignore_errors=True)


def jobs_for(folder, n=40):
    return [downbeat.Job(SYNTH, seconds=1.0, midi=TUNE, params={"keys.cutoff": 400.0 + 50 * i},
                         out=folder / f"{i:02}.wav")
            for i in range(n)]


def expected_sha(i):
    audio = downbeat.render(SYNTH, seconds=1.0, midi=TUNE, params={"keys.cutoff": 400.0 + 50 * i})
    return downbeat.batch.hashlib.sha256(
        np.ascontiguousarray(audio.T, dtype="<f4").tobytes()).hexdigest()


def test_forty_jobs_on_two_nodes_equal_serial_renders(cluster, tmp_path):
    import ray

    results = downbeat.render_many(jobs_for(tmp_path), backend="ray")
    assert ray.is_initialized()
    alive = [n for n in ray.nodes() if n["Alive"]]
    assert len(alive) == 2 and ray.cluster_resources()["CPU"] == 2
    assert all(r.ok for r in results), [r.error for r in results if not r.ok]
    assert [r.out.name for r in results] == [f"{i:02}.wav" for i in range(40)]
    for i, r in enumerate(results):
        assert r.sha256 == expected_sha(i), f"job {i}"
    assert len({r.sha256 for r in results}) == 40, "the parameters made no difference"


def test_a_ray_worker_killed_mid_batch_costs_nothing(cluster, tmp_path):
    killed = []

    def kill_one():
        # Once a few files are written, SIGKILL one of the actors' processes.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(list(tmp_path.glob("*.wav"))) < 5:
            time.sleep(0.01)
        pids = subprocess.run(["pgrep", "-f", "ray::Renderer"], capture_output=True,
                              text=True).stdout.split()
        if pids:
            os.kill(int(pids[0]), signal.SIGKILL)
            killed.append(int(pids[0]))

    killer = threading.Thread(target=kill_one)
    killer.start()
    results = downbeat.render_many(jobs_for(tmp_path), backend="ray")
    killer.join()
    assert killed, "no Ray worker was found to kill"
    assert len(list(tmp_path.glob("*.wav"))) == 40
    assert not [p for p in tmp_path.iterdir() if not p.name.endswith(".wav")], "a torn file"
    assert all(r.ok for r in results), [r.error for r in results if not r.ok]
    for i, r in enumerate(results):
        assert r.sha256 == expected_sha(i), f"job {i}"


def test_without_ray_the_backend_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    monkeypatch.delitem(sys.modules, "downbeat._ray", raising=False)
    monkeypatch.delattr(downbeat, "_ray", raising=False)
    with pytest.raises(downbeat.BackendError, match=r"pip install 'downbeat\[ray\]'"):
        downbeat.render_many([downbeat.Job(SYNTH)], backend="ray")
