"""`bench/python`: the Python package against pedalboard and DawDreamer, and its batch backends.

    bash bench/python/run.sh [--runs N] [--seconds S] [--json]

Cases (rows in the suite's JSON, as every suite of docs/BENCHMARKS.md):

* ``effects``: four of Debian's zam-plugins (ZamCompX2, ZamGateX2, ZaMultiCompX2, ZaMaximX2) in a
  row over S seconds (default 60) of stereo noise-and-sweep at 48 kHz, one thread, every
  engine loading the VST3 builds Debian ships (Downbeat also its CLAP builds of the same
  source, a row of its own), at block sizes 512 and 8192 each. Unit: seconds of wall time
  per call, lower is better. Each rival's output is compared with Downbeat's VST3 output at
  the same block size, aligned by the lag that fits best (pedalboard removes the plugins'
  latency, the others do not), and the largest difference is stated.
* ``per_call``: 512-frame blocks through a gain, one `process` call at a time, the state going
  on between calls (Downbeat's `reset=False`, pedalboard's `reset=False`). DawDreamer renders a
  whole graph per call and has no such call, so it has no row. Unit: microseconds per call.
* ``two_threads``: two renders of examples/projects/fanin84.toml (3 s each, one graph thread
  each), one after the other on one Python thread, then at once on two Python threads (the GIL
  released while they compute). Unit: seconds; the ratio is the speed-up of the two threads.
* ``batch``: 200 renders of examples/projects/synth.toml (30 s of it), each with its own cutoff: in a loop
  (`downbeat.render`, one thread), `render_many(backend="process")` with two workers, and
  `render_many(backend="ray")` on a two-node Ray cluster started on this host (one CPU per
  node). Unit: seconds; each backend's start-up cost (a one-job batch less one render) too.

Every engine runs in this process, pinned to the same CPU, in alternating order across runs;
the batch backends use both CPUs (that is their point) and run after the single-thread cases.
"""

import argparse
import json
import os

# numpy's OpenBLAS threads spin beside every engine in this process (none uses BLAS): one.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

import downbeat

ROOT = Path(__file__).resolve().parents[2]
RATE = 48000
PLUGINS = ["ZamCompX2", "ZamGateX2", "ZaMultiCompX2", "ZaMaximX2"]
VST3 = [f"/usr/lib/vst3/{p}.vst3" for p in PLUGINS]
CLAP = [f"/usr/lib/clap/{p}.clap" for p in PLUGINS]


def signal(seconds):
    rng = np.random.default_rng(1)
    t = np.arange(int(seconds * RATE)) / RATE
    sweep = 0.5 * np.sin(2 * np.pi * (50 + 400 * t / seconds) * t)
    return np.stack([sweep + 0.05 * rng.standard_normal(t.size) for _ in range(2)]).astype(np.float32)


def machine():
    model = "unknown cpu"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cpus, {model}"


# --- effects -----------------------------------------------------------------------------

def downbeat_effects(paths, block):
    chain = downbeat.Chain([downbeat.plugin(p) for p in paths], block_size=block, threads=1)
    return lambda audio: chain(audio, RATE)


def pedalboard_effects(block):
    import pedalboard

    board = pedalboard.Pedalboard([pedalboard.load_plugin(p) for p in VST3])
    return lambda audio: board.process(audio, RATE, buffer_size=block, reset=True)


def dawdreamer_effects(block):
    import dawdreamer as daw

    engine = daw.RenderEngine(RATE, block)
    procs = [engine.make_plugin_processor(f"p{i}", p) for i, p in enumerate(VST3)]

    def run(audio):
        playback = engine.make_playback_processor("in", audio)
        graph = [(playback, [])]
        last = "in"
        for i, proc in enumerate(procs):
            graph.append((proc, [last]))
            last = f"p{i}"
        engine.load_graph(graph)
        engine.render(audio.shape[1] / RATE)
        return engine.get_audio()

    return run


def best_lag_difference(ours, theirs, max_lag=2048, skip=0):
    """The largest difference between two outputs at the lag that fits them best, from frame
    `skip` on."""
    n = min(ours.shape[1], theirs.shape[1])
    a, b = ours[0, :n].astype(np.float64), theirs[0, :n].astype(np.float64)
    window = slice(skip + max_lag, min(n, skip + max_lag + RATE))
    best = None
    for lag in range(-max_lag, max_lag + 1, 1):
        lo, hi = window.start, window.stop
        if lo - lag < 0 or hi - lag > n:
            continue
        d = np.abs(a[lo:hi] - b[lo - lag : hi - lag]).max()
        if best is None or d < best[0]:
            best = (d, lag)
    if best is None:
        return float("nan"), 0
    lag = best[1]
    lo, hi = skip + max(max_lag, lag), n - max(0, -lag)
    full = np.abs(ours[:, lo:hi] - theirs[:, lo - lag : hi - lag]).max()
    return float(full), lag


# --- per call ---------------------------------------------------------------------------

def per_call(impl, calls=5000):
    block = signal(1.0)[:, :512].copy()
    if impl == "downbeat":
        chain = downbeat.Chain([downbeat.node("gain", gain=0.5)], block_size=512)
        chain.process(block, RATE, reset=True)
        call = lambda: chain.process(block, reset=False)  # noqa: E731
    else:
        import pedalboard

        board = pedalboard.Pedalboard([pedalboard.Gain(gain_db=-6.0)])
        board.process(block, RATE, buffer_size=512, reset=True)
        call = lambda: board.process(block, RATE, buffer_size=512, reset=False)  # noqa: E731
    t0 = time.perf_counter()
    for _ in range(calls):
        call()
    return (time.perf_counter() - t0) / calls * 1e6


# --- batch ------------------------------------------------------------------------------

SYNTH, TUNE = ROOT / "examples/projects/synth.toml", ROOT / "examples/projects/tune.mid"


def batch_jobs(folder, n):
    return [downbeat.Job(SYNTH, seconds=30.0, midi=TUNE, params={"keys.cutoff": 300.0 + 20 * i},
                         out=Path(folder) / f"{i:03}.wav") for i in range(n)]


def serial(jobs):
    for j in jobs:
        audio = downbeat.render(j.project, seconds=j.seconds, midi=j.midi, params=j.params, threads=1)
        downbeat.write_wav(j.out, audio, RATE)


def ray_cluster():
    """A head and a second node on 127.0.0.1, one CPU each; returns a stop function."""
    ray = Path(sys.executable).parent / "ray"
    temp = tempfile.mkdtemp(prefix="dbray-", dir="/tmp")
    common = ["--num-cpus=1", "--node-ip-address=127.0.0.1", "--disable-usage-stats"]
    subprocess.run([str(ray), "start", "--head", "--port=6391", f"--temp-dir={temp}",
                    "--include-dashboard=false", *common], check=True, capture_output=True)
    subprocess.run([str(ray), "start", "--address=127.0.0.1:6391", *common], check=True,
                   capture_output=True)
    os.environ["RAY_ADDRESS"] = "127.0.0.1:6391"

    def stop():
        import ray as rayapi

        if rayapi.is_initialized():
            rayapi.shutdown()
        subprocess.run([str(ray), "stop", "--force"], capture_output=True)
        subprocess.run(["rm", "-rf", temp])

    return stop


def timed(f):
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


# --- the suite --------------------------------------------------------------------------

def row(case, impl, unit, values, **extra):
    r = {"case": case, "impl": impl, "unit": unit, "median": statistics.median(values),
         "min": min(values), "max": max(values), "runs": len(values)}
    r.update(extra)
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--batch", type=int, default=200)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--only", choices=["effects", "per_call", "two_threads", "batch"],
                    help="run one case")
    args = ap.parse_args()
    results, ratios = [], {}
    want = lambda case: args.only in (None, case)  # noqa: E731
    all_cpus = os.sched_getaffinity(0)
    pin = {sorted(all_cpus)[-1]}

    if want("effects"):
        # effects, pinned to one CPU
        os.sched_setaffinity(0, pin)
        audio = signal(args.seconds)
        for block in (512, 8192):
            engines = {
                "downbeat_vst3": downbeat_effects(VST3, block),
                "downbeat_clap": downbeat_effects(CLAP, block),
                "pedalboard": pedalboard_effects(block),
                "dawdreamer": dawdreamer_effects(block),
            }
            outputs = {name: run(audio) for name, run in engines.items()}  # warm-up, and the check
            times = {name: [] for name in engines}
            names = list(engines)
            for r in range(args.runs):
                order = names if r % 2 == 0 else names[::-1]
                for name in order:
                    times[name].append(timed(lambda: engines[name](audio)))
            for name in names:
                extra = {"block": block}
                if name != "downbeat_vst3":
                    # From the third block on: ZaMaximX2's CLAP build asks for a restart in its
                    # first block, and its node plays silence until it is back.
                    skip = 2 * block
                    diff, lag = best_lag_difference(outputs["downbeat_vst3"], outputs[name], skip=skip)
                    extra.update(max_difference=diff, lag_frames=lag, compared_from_frame=skip)
                results.append(row(f"effects_{block}", name, "s", times[name], **extra))
            ours = statistics.median(times["downbeat_vst3"])
            for rival in ("pedalboard", "dawdreamer"):
                ratios[f"effects_{block}_vs_{rival}"] = statistics.median(times[rival]) / ours
        os.sched_setaffinity(0, all_cpus)

    if want("per_call"):
        # per call, pinned to the same CPU
        os.sched_setaffinity(0, pin)
        pc = {"downbeat": [], "pedalboard": []}
        for r in range(args.runs):
            for impl in (["downbeat", "pedalboard"] if r % 2 == 0 else ["pedalboard", "downbeat"]):
                pc[impl].append(per_call(impl))
        for impl, v in pc.items():
            results.append(row("per_call_512", impl, "us", v))
        ratios["per_call_512_vs_pedalboard"] = statistics.median(pc["pedalboard"]) / statistics.median(pc["downbeat"])
        os.sched_setaffinity(0, all_cpus)

    if want("two_threads"):
        # two Python threads, every CPU
        fan = ROOT / "examples/projects/fanin84.toml"
        render = lambda: downbeat.render(fan, seconds=3.0, threads=1)  # noqa: E731
        tt = {"one_thread": [], "two_threads": []}
        for r in range(max(1, args.runs // 2)):
            tt["one_thread"].append(timed(lambda: (render(), render())))

            def both():
                ts = [threading.Thread(target=render) for _ in range(2)]
                for t in ts:
                    t.start()
                for t in ts:
                    t.join()

            tt["two_threads"].append(timed(both))
        for impl, v in tt.items():
            results.append(row("two_renders", impl, "s", v))
        ratios["two_renders_two_threads_vs_one"] = statistics.median(tt["one_thread"]) / statistics.median(tt["two_threads"])

    if want("batch"):
        # batch backends, every CPU
        stop = ray_cluster()
        try:
            with tempfile.TemporaryDirectory() as d:
                one = batch_jobs(d, 1)
                t_serial1 = statistics.median(timed(lambda: serial(one)) for _ in range(3))
                b = {"serial": [], "process": [], "ray": []}
                start = {"process": [], "ray": []}
                for r in range(max(1, args.runs // 2)):
                    jobs = batch_jobs(d, args.batch)
                    b["serial"].append(timed(lambda: serial(jobs)))
                    for backend in ("process", "ray"):
                        b[backend].append(timed(lambda: downbeat.render_many(jobs, backend=backend)))
                        start[backend].append(
                            timed(lambda: downbeat.render_many(one, backend=backend)) - t_serial1)
                for name, v in b.items():
                    extra = {}
                    if name != "serial":
                        extra = {"speedup": statistics.median(b["serial"]) / statistics.median(v),
                                 "startup_s": statistics.median(start[name])}
                    results.append(row(f"batch_{args.batch}", name, "s", v, **extra))
        finally:
            stop()

    out = {"suite": "python", "machine": machine(), "python": platform.python_version(),
           "seconds_of_audio": args.seconds, "results": results, "ratios": ratios}
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        for r in results:
            rest = {k: v for k, v in r.items() if k not in ("case", "impl", "unit", "median", "min", "max", "runs")}
            print(f"{r['case']:<14} {r['impl']:<15} median {r['median']:.4g} {r['unit']} "
                  f"(min {r['min']:.4g}, max {r['max']:.4g}, {r['runs']} runs) {rest}")
        for k, v in ratios.items():
            print(f"{k}: {v:.2f}")


if __name__ == "__main__":
    main()
