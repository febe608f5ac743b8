#!/usr/bin/env bash
# Everything Downbeat's tests, suites and benchmark smoke runs need, in one place. `./test` runs
# this before any suite, so that no suite depends on another having installed its packages
# first (issue 42: the CLI's LV2 tests once ran before crates/plugin/ci.sh installed their
# plugins, and passed only on machines where an earlier run had left them behind).
#
# Idempotent and quick when nothing is missing; each `*/ci.sh` calls it too, so a suite run on
# its own also finds what it needs. Installs with apt-get (Debian), rustup and npm; checks the
# versions the harnesses rely on and stops with a message that says what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages, each with the tests that need it.
packages=(
    # OSC tests' client (`oscsend`).
    liblo-tools
    # downbeat-file and the recording tests: files made and decoded by sox and ffmpeg.
    sox libsox-fmt-all ffmpeg
    # The JACK device and its tests (jackd, jack_rec, jack_lsp, jack_metro, jack_midiseq,
    # jack_transport).
    jackd2 libjack-jackd2-dev
    # The system device: cpal through ALSA's PulseAudio plugin, against PulseAudio servers.
    pulseaudio pulseaudio-utils libasound2-dev libasound2-plugins
    # LV2 hosting: lilv, lv2apply/lv2info as the reference host, the C test plugin's headers.
    liblilv-dev lilv-utils lv2-dev pkg-config gcc
    # Real LV2 and CLAP plugins the plugin tests, the audit and the example projects load.
    mda-lv2 x42-plugins dragonfly-reverb-lv2 synthv1-lv2 avldrums.lv2 ardour-lv2-plugins
    zam-plugins lsp-plugins-lv2 guitarix-lv2
    # The load report and the browser tests: headless Chromium.
    chromium
    # The guard's RealtimeSanitizer feature (crates/rt/ci.sh).
    libclang-rt-22-dev
    # bench engines: SuperCollider's two servers; bench clock: cyclictest.
    supercollider-server supercollider-supernova rt-tests
    # The Python virtual environment below.
    python3-venv
)

missing=()
for p in "${packages[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
    [ "$status" = installed ] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "deps: installing ${missing[*]} (Debian packages)"
    if [ "$(id -u)" != 0 ]; then
        echo "deps: not root, cannot install; run as root or: apt-get install ${missing[*]}" >&2
        exit 1
    fi
    apt-get update -qq
    # JACK asks whether to enable real-time priority for the audio group; keep the default.
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        "${missing[@]}" >/dev/null
fi

# Versions the harnesses rely on.
fail() { echo "deps: $*" >&2; exit 1; }
command -v node >/dev/null || fail "Node.js 20 or later is required (web/, bench engines)"
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 20 ] || fail "Node.js 20 or later is required (Playwright), found $(node --version)"
command -v npm >/dev/null || fail "npm is required (web/, bench engines)"
command -v python3 >/dev/null || fail "Python 3 is required (report geometry, bench smoke checks)"
# The modules the harnesses import (scripts/, bench/, crates/engine/*.py), all standard library.
python3 -c 'import json, math, os, random, re, struct, subprocess, sys, wave, zlib' ||
    fail "Python 3's standard modules json, math, os, random, re, struct, subprocess, sys, wave, zlib are required"

# Rust: nightly with Miri and rust-src (ring's Miri run, the wasm engine's build-std), the
# wasm32 target on both toolchains.
command -v rustup >/dev/null || fail "rustup is required (stable and nightly Rust)"
if ! rustup toolchain list | grep -q '^nightly'; then
    rustup toolchain install nightly --profile minimal
fi
installed=$(rustup component list --toolchain nightly --installed)
if ! grep -q '^miri' <<<"$installed" || ! grep -q '^rust-src' <<<"$installed"; then
    rustup component add miri rust-src --toolchain nightly
fi
for tc in stable nightly; do
    if ! rustup target list --toolchain "$tc" --installed | grep -q '^wasm32-unknown-unknown$'; then
        rustup target add wasm32-unknown-unknown --toolchain "$tc"
    fi
done
# cargo-fuzz for the fuzz targets in fuzz/ (run briefly by ./test, at length by `bench fuzz`).
if ! command -v cargo-fuzz >/dev/null; then
    echo "deps: installing cargo-fuzz"
    cargo install --locked cargo-fuzz --quiet
fi

# mdBook for the guide (docs/ci.sh); without the server and file watcher it does not need.
if ! command -v mdbook >/dev/null || [ "$(mdbook --version)" != "mdbook v0.5.4" ]; then
    echo "deps: installing mdbook 0.5.4"
    cargo install --locked mdbook --version 0.5.4 --no-default-features --quiet
fi

# npm packages, from the lock files: the Web twin's, and node-web-audio-api for bench engines.
for dir in web bench/engines; do
    if [ ! -d "$dir/node_modules" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
        (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
    fi
done

# PyPI packages, in a virtual environment of the repository's own (target/pyenv, whatever
# CARGO_TARGET_DIR says): pedalboard, a VST3 host (JUCE's) the VST3 host is compared with
# (crates/cli/tests/vst3_pedalboard.rs), and numpy, which it reads arrays with.
pyenv=target/pyenv
if ! "$pyenv/bin/python" -c 'import pedalboard, numpy' 2>/dev/null; then
    echo "deps: making $pyenv (pedalboard, numpy from PyPI)"
    python3 -m venv "$pyenv" || fail "python3 -m venv failed: Debian's python3-venv is required"
    "$pyenv/bin/pip" install --quiet --disable-pip-version-check pedalboard==0.9.26 numpy==2.4.6
fi
