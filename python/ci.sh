#!/usr/bin/env bash
# The Python package (issue 41): `pip install ./python` into a fresh virtual environment, as
# a user would, then its tests under pytest, against the `downbeat` command with every
# feature (the renders it must equal bit for bit) and Debian's zam-plugins and mda-lv2.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

# python3-venv, zam-plugins, mda-lv2, liblilv-dev come from scripts/deps.sh.
bash scripts/deps.sh

# The command the renders are compared with: crates/cli/ci.sh built it already.
cargo build -q -p downbeat-cli --all-features
export DOWNBEAT_BIN=$root/target/debug/downbeat

# The CLAP test plugins (one of them crashes in `process`, for the batch's crash test), built
# where the Rust tests build them.
CARGO_TARGET_DIR=$root/target/clap-test-plugins cargo build -q -p downbeat-clap-test-plugins
export DOWNBEAT_TEST_CLAP=$root/target/clap-test-plugins/downbeat-test-python.clap
cp "$root/target/clap-test-plugins/debug/libdownbeat_clap_test_plugins.so" "$DOWNBEAT_TEST_CLAP"

venv=$(mktemp -d "${TMPDIR:-/tmp}/downbeat-venv.XXXXXX")
trap 'rm -rf "$venv"' EXIT
python3 -m venv "$venv"
# pip fetches maturin (the build backend), numpy and Ray from PyPI. The build shares the
# workspace's target folder, its dev profile (optimised: see Cargo.toml) and the features of
# the `downbeat` command built above, so it compiles PyO3, numpy's bindings and the module,
# not the engine again; a user's `pip install ./python` builds the release profile with
# CLAP and VST3. LV2 needs lilv, which Debian has here.
export CARGO_TARGET_DIR=$root/target
export MATURIN_PEP517_ARGS="--features lv2,jack,system --profile dev"
"$venv/bin/pip" install -q --disable-pip-version-check "./python[test,ray]"

cd python/tests
"$venv/bin/python" -m pytest -q -p no:cacheprovider
