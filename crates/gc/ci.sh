#!/usr/bin/env bash
# Extra checks for downbeat-gc, run after the workspace tests: the loom model of the
# block/snapshot handshake (in a target dir of its own so it does not invalidate the main
# cache) and a smoke run of the gc benchmark.
set -euo pipefail
cd "$(dirname "$0")/../.."

step() { printf '\n--> gc: %s\n' "$*"; }

step "loom"
RUSTFLAGS="--cfg loom" cargo test -p downbeat-gc --test loom --release \
    --target-dir target/loom

step "benchmark smoke runs (numbers meaningless)"
cargo run --release -p downbeat-bench -- gc --quick --seconds 1 --json > /dev/null
cargo run --release -p downbeat-bench -- alloc --quick --json > /dev/null

step "ok"
