#!/usr/bin/env bash
# Smoke runs of every benchmark suite: the harness works end to end and prints valid JSON.
# The numbers of a --quick run mean nothing; tests never judge speed.
set -euo pipefail
cd "$(dirname "$0")/.."
for suite in graph clock notify alloc gc; do
    echo "--- downbeat-bench $suite --quick"
    cargo run -q --release -p downbeat-bench -- "$suite" --quick --json >"target/bench-$suite.json"
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['results'], 'no results'; print(len(d['results']), 'rows')" "target/bench-$suite.json"
done
echo "smoke: 5 passed, 0 failed"
