#!/usr/bin/env python3
"""Checks a `downbeat-bench SUITE --quick --json` report against the rows the suite must
produce: every expected (case, implementation) pair present, nothing unexpected (OPTIONAL
names the few rows a run may lack), every figure a finite number. `bench/ci.sh` runs it on each smoke run.

    python3 bench/smoke.py SUITE REPORT.json     # exit 1 with what is wrong
    python3 bench/smoke.py --suites              # the suites this file knows, one a line

A renamed case or a rival that stopped reporting fails here: update EXPECTED with the code.
"""

import json
import math
import sys


def cases(names, impls):
    """Rows: every case of `names` measured for every implementation of `impls`."""
    return [(c, i) for c in names for i in impls]


def each(*parts):
    """The names made of one choice from each part, joined by nothing: each("a_", ["x", "y"])."""
    out = [""]
    for p in parts:
        choices = [p] if isinstance(p, str) else p
        out = [o + c for o in out for c in choices]
    return out


RIVALS_RING = ["downbeat", "rtrb", "ringbuf", "crossbeam"]
CLOCK = ["downbeat", "downbeat-nort", "sleep-loop", "spin_sleep", "busy-wait", "cyclictest", "go-ticker"]
NOTIFY = ["block-phase", "poll-1kHz", "signal", "mpsc", "waitable-event", "timer-5ms", "timer-25Hz"]
ALLOC = ["downbeat", "glibc", "rlsf", "glibc_tuned"]
GRAPH_ALL = ["serial", "rayon_spawn", "rayon_broadcast", "rayon_spawn_rt", "rayon_broadcast_rt"]
POOLS = ["downbeat", "downbeat_nort", "downbeat_cold"]
GC = ["snapshot", "replicating", "stop-the-world"]
LOADS = ["load_P0", "load_P25", "load_P50", "load_P75", "load_P99", "load_P100", "missed",
         "ideal_P50", "ideal_P99", "work_P50", "idle_P50"]
STATS = ["min", "avg", "p99", "max"]
PAUSE = ["min", "avg", "p99", "max", "missed", "late_starts"]

EXPECTED = {
    "ring": cases(["uncontended", "contended"], RIVALS_RING)
    + cases(["bulk", "bulk_480"], RIVALS_RING + ["memcpy (same core)"])
    + cases(["roundtrip", "roundtrip_p99"], RIVALS_RING + ["floor: one atomic"]),
    "clock": cases(each(["16ms ", "1.45ms "], ["idle ", "load200 "], ["p50", "p99", "p99.9", "max"]), CLOCK)
    # cyclictest reports no CPU time of its own.
    + cases(each(["16ms ", "1.45ms "], ["idle ", "load200 "], "cpu"), [c for c in CLOCK if c != "cyclictest"]),
    "notify": cases(["round trip avg", "round trip p50", "round trip min", "round trip max", "trigger p50",
                     "dispatcher cpu", "syscalls per trigger", "trigger back-to-back"], NOTIFY),
    "alloc": cases(each(["", "large_"], ["pair_p50", "pair_p99", "pair_p99.9", "pair_p99.99", "pair_max",
                                         "syscalls", "page_faults", "stalls_over_10us"]), ALLOC)
    + cases(each(["remote_alloc_", "remote_free_"], ["p50", "p99", "p99.9"]), ["downbeat", "glibc"]),
    "graph": cases(each("fanin84_", LOADS + ["audio_syscalls"]), GRAPH_ALL + POOLS)
    + cases(["fanin84_outside_P50"], ["serial"] + POOLS)
    + cases(each("fanin84_", ["wake_P50", "wake_P99", "tail_P50"]), POOLS)
    + cases(each("uneven_", LOADS), ["serial", "rayon_spawn_rt", "rayon_broadcast_rt", "downbeat"])
    + cases(["uneven_outside_P50"], ["serial", "downbeat"])
    + cases(each("uneven_", ["wake_P50", "wake_P99", "tail_P50"]), ["downbeat"])
    + cases(each("overhead_", ["wide", "chain", "random"]),
            ["serial", "rayon_spawn", "rayon_broadcast", "rayon_spawn_pinned", "rayon_broadcast_pinned", "downbeat"])
    + cases(["idle_helper_cpu"], ["serial", "rayon_spawn", "rayon_broadcast", "downbeat"])
    # `graph --case small`: the engines' sines and fanin as graphs, serial against the pool.
    + cases(["small_sines", "small_fanin"], ["serial", "downbeat"])
    # `graph --case plugin` (bench/ci.sh builds with `--features lv2`): fanin84 with x42's
    # LV2 compressor, serial against the pool, whose outputs the suite asserts bit-identical;
    # and zam-plugins' ZaMultiCompX2 as CLAP, VST3 and LV2, on the pool.
    + cases(each("plugin_", LOADS + ["outside_P50"]), ["serial", "downbeat"])
    + cases(each("plugin_", ["wake_P50", "wake_P99", "tail_P50"]), ["downbeat"])
    + cases(each(["plugin_clap_", "plugin_vst3_", "plugin_lv2_"],
                 LOADS + ["outside_P50", "wake_P50", "wake_P99", "tail_P50"]), ["downbeat"]),
    "control": cases(each("absorb_", ["0", "1", "4", "16", "64", "256", "1024", "4096"], "_events", ["", "_vs_none"]),
                     ["downbeat"])
    + cases(["events_at_+10%_load"], ["downbeat"])
    # Each latency twice: in frames and in microseconds.
    + 2 * cases(each(["osc_send_to_frame_", "osc_recv_to_frame_"], ["p50", "p99"]), ["downbeat"]),
    "synth": cases(each("load_", ["1", "8", "16", "32", "64", "128", "256", "512", "1024", "1536", "2048"], "_voices")
                   + ["voices_at_0.5_load", "burst_128_note_ons", "burst_128_note_ons_load"],
                   ["downbeat synth (saw)"]),
    "files": cases(each("decode_", ["wav16", "wav24", "flac", "vorbis", "mp3"]), ["downbeat", "sox", "ffmpeg"])
    + cases(["resample"], ["downbeat", "rubato"]) + cases(["resample_process"], ["downbeat", "sox"])
    # Each resampler's quality on the same sweep, and rubato at a setting as good as ours
    # (issue 43).
    + cases(["resample_quality_db"], ["downbeat", "rubato", "rubato at our quality"])
    + cases(["resample"], ["rubato at our quality"])
    # Streaming against creek; the disk-load case names its stream count (4 in smoke runs).
    + cases(["streams_per_core", "memory_per_stream", "seek_p50", "seek_p99",
             "underrun_frames_4_streams_disk_writes"], ["downbeat", "creek"]),
    "gc": cases(each(["blocking_", "blocking_without_full_", "waited_", "audio_"], STATS)
                + ["collections_timed", "blocks_waited_over_100us", "missed_deadlines", "blocks_started_late",
                   "waits_with_no_gap_before", "blocks", "mark_avg", "mark_max", "sweep_avg", "collections",
                   "objects_freed", "bytes_freed", "atomic_bytes_freed", "heap_used", "allocations_per_minute",
                   "voices_peak", "voices_dropped", "allocations_failed", "cpu_blocking", "cpu_parallel",
                   "cpu_free", "cpu_blocking_waited", "cpu_parallel_waited"]
                + each("pause_frames", ["64_", "256_"], PAUSE)
                + each("largest_heap_frames", ["64", "256"], ["", "_search", "_sustained"]), GC)
    + cases(["free_avg"], ["snapshot", "replicating"])
    + cases(each(["roots_snapshot_", "partial_snapshot_", "full_snapshot_", "full_copy_unpadded_"], ["min", "avg", "max"])
            + ["full_snapshot_count", "late_full_snapshots", "safety_warnings", "alloc_object", "alloc_atomic",
               "full_snapshot_predicted", "full_snapshot_avg_over_predicted", "copy_rate_pM",
               "copy_rate_pM_thesis_units"], ["snapshot"])
    + cases(["stack_overflows", "replicated_words"], ["replicating"])
    + cases(["set_ref", "memory", "memory_over_heap"], GC + ["replicating_block"])
    + cases(["set_ref_barrier_cost"], ["replicating", "replicating_block"])
    + cases(each("machine_", ["missed_", "blocks_", "late_starts_"], ["frames64", "frames256"]), ["no-collector"]),
}
# `edit`: live edits on the virtual device, their audio-thread cost, and the same against Firewheel.
EXPECTED["edit"] = (
    cases(each(["audible_10", "audible_1000"], ["", "_p99"])
          + each("apply_1000_", ["compile", "take_over", "take_over_p99", "edit_block", "plain_block", "cost",
                                 "cost_p99", "cost_share"]),
          ["downbeat"])
    + cases(each(["compile_", "edit_block_", "plain_block_", "apply_"], ["10", "1000"])
            + ["apply_10_p99", "apply_1000_p99"], ["downbeat", "firewheel"]))
# `transport`: the transport's own work per block, and an engine block with and without a busy song.
EXPECTED["transport"] = (cases(["position", "position_share"], ["downbeat"]) + cases(["engine"], ["song", "steady"])
                         + cases(each("clicks_", ["steps", "ramp"], ["", "_at_or_after"]), ["downbeat", "tone.js"]))
# `fuzz`: per cargo-fuzz target, what libFuzzer reports and the findings (0 in a passing run).
FUZZ_TARGETS = ["project_parse", "project_build", "midi_file", "osc_packet", "audio_file", "wav_input",
                "wasm_events"]
EXPECTED["fuzz"] = cases(each(FUZZ_TARGETS, ["_executions", "_coverage", "_features", "_exec_per_s", "_seconds",
                                             "_findings"]), ["downbeat"])
ENGINES = ["downbeat", "scsynth", "supernova", "node-web-audio-api"]
ENGINES_2T = ["downbeat", "downbeat 2 threads", "scsynth", "supernova 2 threads", "node-web-audio-api"]
# Each case's steady state (start-up out), its whole-process figure and its start-up.
SPLIT = ["", "_whole", "_startup_cpu", "_startup_wall"]
EXPECTED["engines"] = (
    cases(each(["voices", "chain"], SPLIT), ENGINES + ["floor"])
    # `sines` runs on one and on two threads (supernova on both too), `fanin` on both.
    # `floor`: the case computed by one loop with Downbeat's kernel and no engine.
    + cases(each("sines", SPLIT) + ["sines_wall", "sines_wall_whole"],
            ENGINES + ["downbeat 2 threads", "supernova 2 threads", "floor"])
    + cases(each("fanin", SPLIT) + ["fanin_wall", "fanin_wall_whole"], ENGINES_2T + ["floor"])
    + cases(["realtime_voices"], ["downbeat", "scsynth"])
)

# `soak`: each figure a row of impl "downbeat", each bound a row of impl "max" or "min" (the
# figures reported without a bound have none), and the count of failed checks.
SOAK_MAX = ["xruns", "late_blocks", "edit_failures", "osc_lost", "osc_rejected", "midi_refused",
            "events_stale", "events_dropped", "events_late", "rss_growth", "threads_changed", "fds_changed",
            "recording_length_error", "recording_lost_frames", "recording_nonfinite",
            "recording_leading_silence", "recording_longest_gap", "player_underrun_frames", "node_losses"]
SOAK_MIN = ["swaps", "osc_rate", "midi_events", "recording_valid", "recording_rms"]
SOAK_REPORTED = ["deadline_misses", "blocks", "load_p50_early", "load_p50_late", "load_p99", "load_max",
                 "build_ms_max", "events_applied", "rss", "threads", "fds"]
EXPECTED["soak"] = (cases(SOAK_MAX + SOAK_MIN + SOAK_REPORTED + ["failed_checks"], ["downbeat"])
                    + cases(SOAK_MAX, ["max"]) + cases(SOAK_MIN, ["min"]))

# Rows a run may lack: a pool's nodes that never changed worker have nothing to compare.
OPTIONAL = {
    "graph": cases(["fanin84_node_moved_vs_stayed"], POOLS) + cases(["uneven_node_moved_vs_stayed"], ["downbeat"])
    + cases(["plugin_node_moved_vs_stayed", "plugin_clap_node_moved_vs_stayed",
             "plugin_vst3_node_moved_vs_stayed", "plugin_lv2_node_moved_vs_stayed"], ["downbeat"]),
}


def problems(suite, report):
    """What is wrong with `report` for `suite` (empty when nothing is)."""
    found = []
    if report.get("suite") != suite:
        found.append(f"suite is {report.get('suite')!r}, expected {suite!r}")
    rows = report.get("results") or []
    got = sorted((r.get("case"), r.get("impl")) for r in rows)
    want = sorted(EXPECTED[suite])
    missing, extra = list(want), []
    optional = list(OPTIONAL.get(suite, []))
    for row in got:
        if row in missing:
            missing.remove(row)
        elif row in optional:
            optional.remove(row)
        else:
            extra.append(row)
    if missing:
        found.append(f"{len(missing)} expected rows missing, e.g. {missing[:5]}")
    if extra:
        found.append(f"{len(extra)} unexpected rows, e.g. {extra[:5]}")
    for r in rows:
        figures = [r.get(k) for k in ("median", "min", "max")]
        if not all(isinstance(x, (int, float)) and math.isfinite(x) for x in figures) or r.get("runs", 0) < 1:
            found.append(f"row {r.get('case')!r} / {r.get('impl')!r} has no figures: {r}")
    for name, value in (report.get("ratios") or {}).items():
        if not isinstance(value, (int, float)) or not math.isfinite(value):
            found.append(f"ratio {name} is {value!r}")
    return found


def main(argv):
    if argv[1:] == ["--suites"]:
        print("\n".join(EXPECTED))
        return 0
    suite, path = argv[1], argv[2]
    with open(path) as f:
        report = json.load(f)
    found = problems(suite, report)
    for p in found:
        print(f"{suite}: {p}", file=sys.stderr)
    if not found:
        print(f"{suite}: {len(report['results'])} rows as expected")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
