#!/usr/bin/env bash
# Builds crates/ring-wasm for a *shared* WebAssembly.Memory and copies it to
# web/interop/build/downbeat_ring.wasm.
#
# Shared memory needs the atomics feature in every object, the standard library included, so this
# uses nightly's -Z build-std (stable's prebuilt wasm32 core is compiled without atomics). It
# builds into target/wasm-shared so it never invalidates the main cache.
#
# The module imports its memory ("env"."memory", shared, 1 MiB stack at the bottom) with a maximum
# of MAX_PAGES 64 KiB pages; JavaScript must create it as
#   new WebAssembly.Memory({ initial: MAX_PAGES, maximum: MAX_PAGES, shared: true })
# (or any initial size between the module's minimum and MAX_PAGES).
set -euo pipefail
cd "$(dirname "$0")/../.."

MAX_PAGES=256 # 16 MiB

if ! rustup toolchain list | grep -q '^nightly'; then
    rustup toolchain install nightly --profile minimal
fi
if ! rustup component list --toolchain nightly --installed | grep -q '^rust-src'; then
    rustup component add rust-src --toolchain nightly
fi

export CARGO_TARGET_DIR=target/wasm-shared
export CARGO_PROFILE_RELEASE_DEBUG=0
export CARGO_PROFILE_RELEASE_PANIC=abort
export RUSTFLAGS="-C target-feature=+atomics,+bulk-memory,+mutable-globals \
-C link-arg=--shared-memory -C link-arg=--import-memory \
-C link-arg=--max-memory=$((MAX_PAGES * 65536))"
# RUSTFLAGS apply to the standard library too when build-std is on, which is the point.
unset CARGO_ENCODED_RUSTFLAGS

cargo +nightly build -p downbeat-ring-wasm --lib --release \
    --target wasm32-unknown-unknown \
    -Z build-std=core,alloc,panic_abort

mkdir -p web/interop/build
cp "$CARGO_TARGET_DIR/wasm32-unknown-unknown/release/downbeat_ring_wasm.wasm" \
    web/interop/build/downbeat_ring.wasm
echo "web/interop/build/downbeat_ring.wasm ($(wc -c < web/interop/build/downbeat_ring.wasm) bytes)"
