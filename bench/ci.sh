#!/usr/bin/env bash
# Smoke runs of every benchmark suite: the harness works end to end and prints valid JSON.
# The numbers of a --quick run mean nothing; tests never judge speed.
set -euo pipefail
cd "$(dirname "$0")/.."
# ring, alloc and gc have their smoke runs in their crates' ci.sh.
for suite in graph clock notify; do
    echo "--- downbeat-bench $suite --quick"
    cargo run -q --release -p downbeat-bench -- "$suite" --quick --json >"target/bench-$suite.json"
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['results'], 'no results'; print(len(d['results']), 'rows')" "target/bench-$suite.json"
done
echo "smoke: 3 passed, 0 failed"
