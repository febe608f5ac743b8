#!/usr/bin/env bash
# The engine's examples that check themselves, run as a reader of the guide runs them, on the
# virtual device: `play` with its input closed (the end of its input stops it once the engine
# has played a change of pitch) and `edit` (an echo added and removed while a synth holds a
# note; it compares its recording with a render of the synth alone). Each exits 1 when its
# check fails; `timeout` stops one that hangs.
set -euo pipefail
cd "$(dirname "$0")/../.."

# Built first, then run directly, so that the timeouts time the examples and not cargo waiting
# for the build directory's lock.
cargo build -q -p downbeat --example play --example edit
examples="${CARGO_TARGET_DIR:-target}/debug/examples"
echo "--- example play (stdin closed)"
timeout 60 "$examples/play" </dev/null
echo "--- example edit"
timeout 120 "$examples/edit"
echo "examples: 2 passed (play, edit)"

