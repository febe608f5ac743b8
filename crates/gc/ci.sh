#!/usr/bin/env bash
# Extra checks for downbeat-gc, run after the workspace tests: the loom model of the
# block/snapshot handshake (in a target dir of its own so it does not invalidate the main
# cache). The gc and alloc benchmarks' smoke runs are bench/ci.sh's, with every other suite's.
set -euo pipefail
cd "$(dirname "$0")/../.."

step() { printf '\n--> gc: %s\n' "$*"; }

step "loom"
RUSTFLAGS="--cfg loom" cargo test -p downbeat-gc --test loom --release \
    --target-dir target/loom

step "ok"
