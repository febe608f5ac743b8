#!/usr/bin/env bash
# The Python suite (bench/python/bench.py): a virtual environment in target/bench-pyenv with the
# package built as a user builds it (`pip install ./python`, the release profile, LV2 on),
# Ray, pedalboard and DawDreamer from PyPI; then the suite, its arguments passed on.
#   bash bench/python/run.sh [--runs N] [--seconds S] [--batch N] [--json]
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
venv=$root/target/bench-pyenv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
export CARGO_TARGET_DIR=$root/target
MATURIN_PEP517_ARGS="--features lv2" "$venv/bin/pip" install -q --disable-pip-version-check \
    "./python[ray]" "pedalboard==0.9.26" "dawdreamer==0.9.0"
exec "$venv/bin/python" bench/python/bench.py "$@"
