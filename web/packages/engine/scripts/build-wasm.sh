#!/usr/bin/env bash
# Builds crates/engine-wasm (the Downbeat engine behind the db_* ABI) for wasm32-unknown-unknown
# with simd128, on stable Rust, into target/wasm-engine (so it never invalidates the main cache),
# and copies it to web/packages/engine/dist/downbeat_engine.wasm. Prints its size and gzipped size.
# Installs the wasm32 target with rustup when it is missing.
#
#   build-wasm.sh           the module the package ships, without symbols
#   build-wasm.sh --names   the same code with its name section, for profiles that name the
#                           functions (web/bench/worklet-profile.mjs); about twice the size
set -euo pipefail
cd "$(dirname "$0")/../../../.."

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
    rustup target add wasm32-unknown-unknown
fi

export CARGO_TARGET_DIR=target/wasm-engine
export CARGO_INCREMENTAL=0
# The release profile keeps debug info for native profiling; the browser wants neither it nor
# the symbols (16 MB against 2 MB).
export CARGO_PROFILE_RELEASE_DEBUG=0
case "${1:-}" in
    "") export CARGO_PROFILE_RELEASE_STRIP=true ;;
    --names) export CARGO_PROFILE_RELEASE_STRIP=false ;;
    *) echo "build-wasm.sh: unknown argument $1 (expected nothing or --names)" >&2; exit 2 ;;
esac
export RUSTFLAGS="-C target-feature=+simd128"
unset CARGO_ENCODED_RUSTFLAGS

cargo build -p downbeat-engine-wasm --lib --release --target wasm32-unknown-unknown

out=web/packages/engine/dist/downbeat_engine.wasm
mkdir -p "$(dirname "$out")"
cp "$CARGO_TARGET_DIR/wasm32-unknown-unknown/release/downbeat_engine_wasm.wasm" "$out"
echo "$out: $(wc -c < "$out") bytes, $(gzip -9c "$out" | wc -c) gzipped"
