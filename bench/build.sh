#!/usr/bin/env bash
# The release build the benchmark suites run (bench/ci.sh) and crates/ring/ci.sh's
# instruction-count driver uses: both binaries in one cargo call, so that the crates they
# share are compiled once, with one set of features. The engines suite runs the downbeat
# binary itself, with JACK for its real-time case; the graph suite's plugin case (fanin84
# with LV2, CLAP and VST3 compressors) needs `lv2`. scripts/deps.sh installs what it links.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q --release -p downbeat-cli -p downbeat-bench \
    --features downbeat-cli/jack,downbeat-bench/lv2
