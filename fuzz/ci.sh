#!/usr/bin/env bash
# Builds every fuzz target and runs each for a fixed number of inputs from its seeds, with a
# fixed libFuzzer seed: a crash, a panic, an input slower than 1 s, a leak or more than 2 GB
# of memory fails the script, and the input is left in fuzz/artifacts/TARGET/. Long runs:
# `downbeat-bench fuzz` (see fuzz/README.md). Needs nightly Rust and cargo-fuzz
# (scripts/deps.sh installs both); without them it fails rather than skips.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo-fuzz >/dev/null; then
    echo "fuzz/ci.sh: cargo-fuzz is missing (cargo install --locked cargo-fuzz)" >&2
    exit 1
fi
if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "fuzz/ci.sh: nightly Rust is missing (rustup toolchain install nightly)" >&2
    exit 1
fi

cd fuzz
# Debug assertions on (-a): an arithmetic overflow is a finding, not a silent wrap. The same
# flags for build and run, so that `run` does not build again.
flags=(-a)
cargo +nightly fuzz build "${flags[@]}"

# Inputs per target: about 15 s each on one core of this machine under the sanitizer (from
# 50 audio files to 30000 WAV headers a second), 30 s at most. The corpus grows in a folder
# of this run's own, so every run starts from the committed seeds alone.
declare -A runs=(
    [project_parse]=15000
    [project_build]=20000
    [midi_file]=30000
    [osc_packet]=30000
    [audio_file]=800
    [wav_input]=300000
    [wasm_events]=6000
)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
targets=$(cargo +nightly fuzz list)
failed=()
for target in $targets; do
    n=${runs[$target]:-}
    if [ -z "$n" ]; then
        echo "fuzz/ci.sh: target $target has no run count here" >&2
        exit 1
    fi
    echo "--- fuzz $target: $n inputs"
    mkdir -p "$work/$target"
    if ! cargo +nightly fuzz run "${flags[@]}" "$target" "$work/$target" "seeds/$target" -- \
        -runs="$n" -seed=1 -rss_limit_mb=2048 -timeout=1 -max_total_time=30 \
        -print_final_stats=1 2>"$work/$target.log"; then
        tail -n 60 "$work/$target.log" >&2
        failed+=("$target")
    else
        grep -E '^(#[0-9]+.*DONE|stat::number_of_executed_units|stat::peak_rss_mb)' "$work/$target.log" || true
    fi
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: findings in ${failed[*]}; the inputs are in fuzz/artifacts/" >&2
    exit 1
fi
echo "fuzz: $(wc -w <<<"$targets") targets, no finding"
