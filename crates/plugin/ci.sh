#!/usr/bin/env bash
# Plugin hosting against real plugins. The workspace's `cargo test` builds downbeat-plugin
# with its default feature only (`clap`: the CLAP tests build the workspace's own test
# plugins and need nothing installed); this suite adds `lv2` and runs the tests that load the
# plugins of Debian packages. scripts/deps.sh installs them (lilv, lv2apply, mda, x42,
# dragonfly, synthv1, avldrums, Ardour's and zam-plugins, sox, a C compiler and the LV2
# headers for the test plugins); a test that finds one missing fails, naming it.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/deps.sh

# CLAP against real plugins, Debian's zam-plugins (17 DPF-built CLAP plugins, and the same
# effects as LV2): tests/clap_zam.rs runs every one through `downbeat run` (teardown
# included) and compares each CLAP build with its LV2 build; it is built with the `lv2`
# feature, so the `cargo test ... --features lv2` below runs it (with DOWNBEAT_BIN).
# LV2: lilv to host, lv2apply as the reference host, mda and x42 plugins, dragonfly (whose
# early reflections the audit must catch misbehaving); the LV2 worker, state, presets and
# transport (issue 29): synthv1 and avldrums (instruments that need the worker), Ardour's
# plugins (a-delay takes the time position, a-comp has presets), and C test plugins built
# with `cc` against the LV2 headers. Named ports and live edits (issue 37): LSP's sidechain
# compressor ducking a pad through its `sidechain_in` port (tests/lv2_sidechain.rs), an LV2
# and a zam-plugins CLAP plugin kept across 100 editor commits (tests/plugin_edits.rs); both
# run in the `cargo test ... --features lv2` below (tests/clap_ports.rs, the CLAP ports and
# the latency null test, needs no feature: the workspace's `cargo test` runs it).
echo "--- LV2 hosting (--features lv2)"
# The CLI's tests here build it with every feature, as crates/cli/ci.sh (which runs first)
# and python/ci.sh do, so that the three suites share one build of the engine and the CLI.
# The command-line differential test (tests/lv2_cli.rs) and the audits below run this
# executable and its audit probe, copied out of the target directory: a build of the CLI with
# other features (another suite's, or anyone's sharing the directory) would replace them.
cargo build -q -p downbeat-cli --all-features
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
target="$(cd "${CARGO_TARGET_DIR:-target}" && pwd)/debug"
cp "$target/downbeat" "$target/downbeat-audit-probe" "$bin/"
downbeat="$bin/downbeat"
DOWNBEAT_BIN="$downbeat" cargo test -p downbeat-plugin --features lv2
# An instrument plugin playing a MIDI file read by the engine (in the CLI crate, which has both).
cargo test -p downbeat-cli --all-features --test lv2_midi_file
# A plugin's control output (a-delay's `delaytime`) read through the engine's watcher (issue 29).
cargo test -p downbeat-cli --all-features --test lv2_outputs
# Through the binary: synthv1 and avldrums (the worker) play MIDI files; a state saved after
# replayed changes renders bit for bit when loaded (issue 29).
cargo test -p downbeat-cli --all-features --test lv2_instruments_cli --test lv2_state_cli
# With no display: synthv1 (Qt) on the offscreen platform; made to abort, named with its phase.
cargo test -p downbeat-cli --all-features --test headless_plugins
# The URID table's and the CLAP restart hand-over's loom models, in a target dir of its own so it does not invalidate the main cache.
RUSTFLAGS="--cfg loom" cargo test -q -p downbeat-plugin --test loom_urid --test loom_handover --release --target-dir target/loom

# The CLI with LV2 and without the devices linted (crates/cli/ci.sh lints every feature
# together, the workspace's clippy the default ones), and its tests that run every example
# project, examples/projects/overdrive-lv2.toml included.
echo "--- downbeat-cli with LV2"
cargo clippy -q -p downbeat-cli --features lv2 --all-targets -- -D warnings
cargo test -p downbeat-cli --all-features --test examples_guard --test parallel_projects \
    --test examples_denormals --test player_cli --test reference_nodes

# `downbeat audit` over LV2, end to end through the executable and the malloc interposition
# of its probe (`downbeat-audit-probe`, built next to it):
# mda Overdrive is clean (exit 0); dragonfly's early reflections allocates with libc's
# malloc while its parameters move, which only the interposition sees (exit 3, and a
# non-zero `malloc.allocations` in the JSON).
echo "--- downbeat audit on LV2 plugins"
"$downbeat" audit http://drobilla.net/plugins/mda/Overdrive --blocks 50 >/dev/null
status=0
json=$("$downbeat" audit urn:dragonfly:early --blocks 50 --json) || status=$?
if [ "$status" -ne 3 ]; then
    echo "audit of urn:dragonfly:early exited $status, expected 3 (violations)" >&2
    exit 1
fi
if ! grep -Eq '"allocations": [1-9]' <<<"$json"; then
    echo "audit of urn:dragonfly:early: the malloc probe saw no allocation" >&2
    exit 1
fi
echo "audit: Overdrive clean, dragonfly early reflections caught allocating through malloc"

# `downbeat audit DIR` over real plugins (issue 29): every CLAP and LV2 plugin of Debian's
# zam-plugins, synthv1-lv2 and avldrums.lv2 gets a row, each audited in a child of its own
# (a crash in one stops nothing); the CLI's audit tests with LV2 (an LV2 bundle audited
# through lilv, the crashing test plugins, a run crashing mid-recording).
echo "--- downbeat audit DIR"
cargo test -p downbeat-cli --all-features --test audit_dir --test audit_crashes --test audit_probe \
    --test audit_noisy
plugins=$(mktemp -d)
for p in zam-plugins synthv1-lv2 avldrums.lv2; do
    dpkg -L "$p" | grep -E '^/usr/lib/(lv2/[^/]+\.lv2|clap/[^/]+\.clap)$'
done | xargs -I{} ln -s {} "$plugins/"
# Under the conditions docs/AUDIT.md publishes its table for: the default 200 callbacks
# (avldrums' multi-output kits take their one page fault late: with 20 they came out clean in
# 9 audits of 10, with 200 in none), and Qt's offscreen platform (without a display synthv1
# aborts as it is instantiated, instead of crashing in `deactivate`).
status=0
# No display, and no platform of our own: downbeat picks Qt's offscreen one by itself.
env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM \
    "$downbeat" audit "$plugins" --json >"$bin/audit.json" || status=$?
rm -rf "$plugins"
# Every plugin's verdict (clean, violations, or crashed and where), the exit status they
# imply, and the table of docs/AUDIT.md, against crates/plugin/audit-expected.tsv.
python3 scripts/check_audit.py crates/plugin/audit-expected.tsv "$bin/audit.json" \
    --status "$status" --doc docs/AUDIT.md
