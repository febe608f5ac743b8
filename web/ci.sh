#!/usr/bin/env bash
# The Web twin, run by the top-level ./test: builds @downbeat/ringbuf, runs its Node tests, the
# Rust<->JavaScript interop tests over a shared WebAssembly.Memory, the wasm engine against the
# native CLI in Node, the browser tests in real headless Chromium, @downbeat/engine (the wasm
# engine in an AudioWorklet), and a smoke run of the Node benchmark. Installs what it needs when
# missing (npm packages from the lock file, Debian's chromium, nightly Rust with rust-src).
set -euo pipefail
cd "$(dirname "$0")"

step() { printf '\n--> web: %s\n' "$*"; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# node --test prints "# pass N" / "# fail N"; keep a running total for the summary line.
passed=0
failed=0
run_tests() {
    # The grep only shows progress; node's own exit status is the verdict. `set -e` and
    # `pipefail` would stop the script before the summary, so both are off for this one line
    # and the statuses are copied before any other command can overwrite PIPESTATUS.
    local statuses status
    set +e +o pipefail
    node --test --test-reporter=tap "$@" 2>&1 | tee "$log" | grep -E '^(not ok|# (pass|fail))'
    statuses=("${PIPESTATUS[@]}")
    set -e -o pipefail
    status=${statuses[0]}
    if [ "${statuses[1]}" -ne 0 ]; then
        echo "web: could not write the test log $log"
        exit 1
    fi
    local suite_passed suite_failed
    suite_passed=$(awk '/^# pass/ {n += $3} END {print n + 0}' "$log")
    suite_failed=$(awk '/^# fail/ {n += $3} END {print n + 0}' "$log")
    passed=$((passed + suite_passed))
    failed=$((failed + suite_failed))
    # A suite fails on node's exit status, on any failed test it counted, and on running no
    # test at all (a glob that stopped matching must not pass quietly).
    if [ "$status" -ne 0 ] || [ "$suite_failed" -ne 0 ] || [ "$suite_passed" -eq 0 ]; then
        awk '/^not ok/ {n = 30} n > 0 {print; n--; shown++} shown >= 120 {exit}' "$log"
        echo "web: this suite failed (node exit $status, $suite_passed passed, $suite_failed failed)"
        echo "web: $passed passed, $failed failed"
        exit 1
    fi
}

step "packages"
# Node.js 20 or later, the npm packages from the lock file, Chromium, nightly Rust with rust-src.
bash ../scripts/deps.sh
npm run --silent build
npm run --silent typecheck

step "@downbeat/ringbuf (node:test)"
run_tests packages/ringbuf/test/*.test.mjs

step "interop: downbeat-ring in wasm32 over a shared WebAssembly.Memory"
bash interop/build-wasm.sh
run_tests interop/*.test.mjs

step "engine: the wasm engine against native downbeat, in Node"
# Its build and clippy for wasm32 stay warning-free; target/wasm-engine keeps them off the main
# cache. The CLI is rebuilt so the comparison never runs against a stale binary.
bash packages/engine/scripts/build-wasm.sh
(cd .. && CARGO_INCREMENTAL=0 CARGO_TARGET_DIR=target/wasm-engine \
    RUSTFLAGS="-C target-feature=+simd128" cargo clippy --target wasm32-unknown-unknown \
    -p downbeat-engine-wasm -p downbeat -p downbeat-graph -p downbeat-rt -p downbeat-file \
    -- -D warnings)
(cd .. && CARGO_INCREMENTAL=0 cargo build -q -p downbeat-cli --bin downbeat)
# The native side of native-transport.test.mjs: the same calls through the native Controller.
(cd .. && CARGO_INCREMENTAL=0 cargo build -q -p downbeat-engine-wasm --example native_script)
run_tests packages/engine/test/native-*.test.mjs

step "browser: demo and OfflineAudioContext in headless Chromium"
run_tests test-browser/browser.test.mjs

step "@downbeat/engine: the worklet core (stand-in and real wasm, no GC), then in headless Chromium"
# build-wasm.sh is a no-op when the wasm is up to date (cargo decides).
bash packages/engine/scripts/build-wasm.sh
run_tests packages/engine/test/controller.test.mjs packages/engine/test/core.test.mjs \
    packages/engine/test/nogc.test.mjs packages/engine/test/edit.test.mjs
# npm run render against downbeat run --device offline, a live AudioContext, the worklet's GC.
run_tests test-browser/engine-*.test.mjs
# The demo's engine pages: keys, sliders, the stress page's wasm transport, generated projects.
run_tests test-browser/demo-engine*.test.mjs

step "benchmark smoke run (numbers meaningless)"
node bench/node.mjs --quick --json >/dev/null

step "browser benchmark smoke run: every case, one short probe each (numbers meaningless)"
node bench/browser.mjs --quick --json >/dev/null

echo "web: $passed passed, $failed failed"
