#!/usr/bin/env bash
# Extra checks for downbeat-ring, run by the top-level ./test after the workspace tests:
# loom models, Miri on the whole crate, the wasm32 build, and the instruction-count driver.
# Loom and Miri build into target dirs of their own so they do not invalidate the main cache.
set -euo pipefail
cd "$(dirname "$0")/../.."

step() { printf '\n--> ring: %s\n' "$*"; }

step "toolchains"
# Nightly with Miri and rust-src, the wasm32 target: scripts/deps.sh.
bash scripts/deps.sh

step "loom"
RUSTFLAGS="--cfg loom" cargo test -p downbeat-ring --test loom --release \
    --target-dir target/loom

step "miri"
# Miri ignores optimisation levels and warns about the workspace's; ask for none.
cargo +nightly miri test -p downbeat-ring --target-dir target/miri \
    --config 'profile.dev.opt-level=0' --config 'profile.dev.package."*".opt-level=0'

step "wasm32-unknown-unknown"
cargo build -p downbeat-ring --target wasm32-unknown-unknown

step "instruction-count driver"
# (The ring benchmark's smoke run is bench/ci.sh's, with every other suite's.)
# The instruction-count driver (docs/BENCHMARKS.md, "After: ends in registers"): every case for
# both rings, each checking that every value arrived.
# The benchmarks' own release build, which bench/ci.sh then finds done.
bash bench/build.sh
for lib in downbeat rtrb; do
    for case in uncontended contended roundtrip bulk_480; do
        "${CARGO_TARGET_DIR:-target}/release/ring-count" "$lib" "$case" 10000
    done
done

step "ok"
