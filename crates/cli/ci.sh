#!/usr/bin/env bash
# Real parts for the engine and the `downbeat` binary (package downbeat-cli): the JACK device
# against a running `jackd -d dummy`, the system device (cpal through ALSA's PulseAudio
# plugin) against PulseAudio servers with null sinks, every feature built together, and the
# load report rendered and screenshotted in headless Chromium. Installs what it needs when missing.
set -euo pipefail
cd "$(dirname "$0")/../.."

# The packages (jackd2, PulseAudio, ALSA, lilv, mda-lv2, chromium) come from scripts/deps.sh.
bash scripts/deps.sh

echo "--- JACK device (each test starts its own jackd -d dummy -r 48000 -p 256)"
export JACK_NO_AUDIO_RESERVATION=1
# A jackd that was killed hard leaves its registration in /dev/shm, and JACK refuses new
# servers once a few are registered: clear the leftovers when no server is running.
if ! pgrep -x jackd >/dev/null && ! pgrep -x jackdbus >/dev/null; then
    rm -rf /dev/shm/jack-* /dev/shm/jack_* 2>/dev/null || true
fi
# Every test here runs in one build with every feature on (the devices, LV2, CLAP), so that
# the suite builds the engine and the CLI once more, not once per device; clippy covers the
# default build (./test) and the all-features one (below).
cargo test -p downbeat-cli --all-features --test jack -- --test-threads=1
# The song following JACK's transport (`--transport jack`, `jack-master`), moved by
# jack_transport and read by a probe client of the test's own.
cargo test -p downbeat-cli --all-features --test jack_transport -- --test-threads=1
# MIDI from another JACK client through 50 hot swaps (the engine's one inbox).
cargo test -p downbeat --all-features --test jack_midi

echo "--- system device (each test starts its own PulseAudio server with null sinks)"
# Tests keep their servers' runtime directories here; if a test binary dies before its
# servers do, the pid files they leave say which processes to stop.
export DOWNBEAT_PULSE_DIR="$PWD/target/pulse-tests"
stop_pulse() {
    for pid in "$DOWNBEAT_PULSE_DIR"/*/pid; do
        if [ -f "$pid" ] && kill "$(cat "$pid")" 2>/dev/null; then
            echo "stopped a PulseAudio server a test left running (pid $(cat "$pid"))"
        fi
    done
    rm -rf "$DOWNBEAT_PULSE_DIR"
}
trap stop_pulse EXIT
stop_pulse
mkdir -p "$DOWNBEAT_PULSE_DIR"
# The tests whose code depends on the devices' features, with every feature on: the engine's
# own (the devices' unit tests, `open`) and the system device's against PulseAudio. Every other
# test ran in `cargo test --workspace` already; the LV2 builds of the tests over every example
# project run in crates/plugin/ci.sh.
cargo test -p downbeat --all-features --lib --test open -- --test-threads=1
cargo test -p downbeat-cli --all-features --test system -- --test-threads=1

echo "--- every feature of the workspace together (every device in one build)"
cargo clippy -q --workspace --all-features --all-targets -- -D warnings
cargo build -q -p downbeat-cli --all-features
# Without a server the JACK device says it cannot reach one (exit 1); a build without it
# would say it has no JACK support (exit 2).
set +e
jack_out=$(JACK_DEFAULT_SERVER=none cargo run -q -p downbeat-cli --all-features -- run \
    examples/projects/hello.toml --device jack --seconds 0.1 2>&1)
jack_code=$?
set -e
if [ "$jack_code" != 1 ] || ! grep -q "cannot connect to a JACK server" <<<"$jack_out"; then
    echo "the --all-features build has no JACK device (exit $jack_code): $jack_out"
    exit 1
fi
cargo run -q -p downbeat-cli --all-features -- devices >/dev/null

echo "--- load report in headless Chromium"
out=target/report-check
rm -rf "$out" && mkdir -p "$out"
cargo run -q -p downbeat-cli -- run examples/projects/fanin84.toml --device offline --seconds 3 \
    --threads 2 --report "$out/report.html" --json >"$out/summary.json"

profile=$(mktemp -d)
chrome=(chromium --headless=new --no-sandbox --disable-gpu --disable-background-networking
    --disable-component-update --disable-sync --no-first-run --user-data-dir="$profile")
# The plots as Chromium lays them out (points, bars, bounding boxes) against the run's summary.
python3 crates/engine/report_geometry.py "$out/report.html" "$out/summary.json" "${chrome[@]}"
"${chrome[@]}" --window-size=1000,1600 --screenshot="$out/report.png" "file://$PWD/$out/report.html" 2>/dev/null
read -r width height share < <(python3 scripts/png_stats.py "$out/report.png")
echo "report screenshot: ${width}x${height}, $(python3 -c "print(round($share*100,1))")% of pixels drawn"
python3 -c "import sys; sys.exit(0 if $share > 0.03 else 1)" || { echo "report screenshot looks blank"; exit 1; }
rm -rf "$profile"
echo "report: 2 passed (geometry, screenshot), 0 failed"
