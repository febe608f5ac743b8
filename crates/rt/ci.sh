#!/usr/bin/env bash
# The guard's own suite again, optimised and with RUST_BACKTRACE=1. Inlining
# at opt-level 3 changes what runs inside the armed scope, and with
# RUST_BACKTRACE set every scope captures the backtrace of its first
# allocation and free: that capture must neither be counted nor deadlock,
# a panicking scope included (the panic hook holds std's backtrace lock).
set -euo pipefail
cd "$(dirname "$0")/../.."
RUST_BACKTRACE=1 cargo test --release -p downbeat-rt --tests

# RealtimeSanitizer on top of the guard (feature `rtsan`), linked against
# Debian's LLVM runtime. Its own target dir, so the build above stays cached.
rtsan_lib=/usr/lib/llvm-22/lib/clang/22/lib/linux/libclang_rt.rtsan-x86_64.a
[ -e "$rtsan_lib" ] || { echo "rt: $rtsan_lib is missing (scripts/deps.sh installs libclang-rt-22-dev)" >&2; exit 1; }
echo "--- guard with RealtimeSanitizer (--features rtsan)"
export RTSAN_ENABLE=1 RTSAN_LIB_PATH="$rtsan_lib"
rtsan_target="${CARGO_TARGET_DIR:-target}/rtsan"
cargo clippy -q -p downbeat-rt --features rtsan --all-targets --target-dir "$rtsan_target" -- -D warnings
cargo test -p downbeat-rt --features rtsan --test rtsan --target-dir "$rtsan_target"
