#!/usr/bin/env bash
# Extra checks for downbeat-graph, run by the top-level ./test after the workspace tests: the
# loom models of the parallel scheduler's ready queue (the multi-task claim: one
# compare-and-swap for a run of slots). Built into the loom target dir the other crates'
# models use, so the main cache stays valid.
set -euo pipefail
cd "$(dirname "$0")/../.."

echo "--> graph: loom (parallel::queue)"
RUSTFLAGS="--cfg loom" cargo test -p downbeat-graph --lib --release \
    --target-dir target/loom -- loom_model
