#!/usr/bin/env bash
# The engine's examples that check themselves, run as a reader of the README runs them, on the
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

# The README shows parts of both files: they must be the files' text, so that what a reader
# copies is what CI ran.
python3 - <<'PY'
import re
import sys

blocks = re.findall(r"```rust\n(.*?)```", open("README.md").read(), re.S)
for name, start in [("play", "fn play("), ("edit", "fn run(wav")]:
    shown = [b for b in blocks if b.startswith(start)]
    if len(shown) != 1 or shown[0] not in open(f"crates/engine/examples/{name}.rs").read():
        sys.exit(f"README.md's excerpt of crates/engine/examples/{name}.rs is not the file's text")
print("README excerpts: 2 match their examples")
PY
