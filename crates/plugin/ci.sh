#!/usr/bin/env bash
# Plugin hosting against real plugins. The workspace's `cargo test` builds downbeat-plugin
# with its default feature only (`clap`: the CLAP tests build the workspace's own test
# plugins and need nothing installed); this suite adds `lv2` and runs the tests that load the plugins
# Debian packages, so those must be installed: a missing plugin or tool fails the LV2 tests
# when CI=true instead of skipping them.
set -euo pipefail
cd "$(dirname "$0")/../.."

# --- CLAP against real plugins: Debian's zam-plugins (17 DPF-built CLAP plugins, and the
# same effects as LV2). tests/clap_zam.rs runs every one through `downbeat run` (teardown
# included) and compares each CLAP build with its LV2 build; it is built with the `lv2`
# feature, so the `cargo test ... --features lv2` below runs it (with DOWNBEAT_BIN), and it
# fails when the package is missing.
if ! dpkg -s zam-plugins >/dev/null 2>&1; then
    echo "installing zam-plugins (Debian) for the CLAP tests"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq zam-plugins >/dev/null
fi

# --- LV2 (feature `lv2`): lilv to host, lv2apply as the reference host, mda and x42 plugins,
# and dragonfly (whose early reflections the audit must catch misbehaving); the LV2 worker,
# state, presets and transport (issue 29): synthv1 and avldrums (instruments that need the
# worker), Ardour's plugins (a-delay takes the time position, a-comp has presets), and a C
# compiler with the LV2 headers for the test plugin that observes the worker.
lv2_packages=(liblilv-dev lilv-utils mda-lv2 x42-plugins dragonfly-reverb-lv2 pkg-config
    synthv1-lv2 avldrums.lv2 ardour-lv2-plugins gcc lv2-dev)
missing=()
for p in "${lv2_packages[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing ${missing[*]} (Debian packages) for the LV2 tests"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
echo "--- LV2 hosting (--features lv2)"
# The command-line differential test (tests/lv2_cli.rs) runs this executable.
cargo build -q -p downbeat-cli --features lv2
downbeat="$(cd "${CARGO_TARGET_DIR:-target}" && pwd)/debug/downbeat"
CI="${CI:-true}" DOWNBEAT_BIN="$downbeat" cargo test -p downbeat-plugin --features lv2
# An instrument plugin playing a MIDI file read by the engine (in the CLI crate, which has both).
CI="${CI:-true}" cargo test -p downbeat-cli --features lv2 --test lv2_midi_file
# A plugin's control output (a-delay's `delaytime`) read through the engine's watcher (issue 29).
CI="${CI:-true}" cargo test -p downbeat-cli --features lv2 --test lv2_outputs
# Through the binary: synthv1 and avldrums (the worker) play MIDI files; a state saved after
# replayed changes renders bit for bit when loaded (issue 29).
CI="${CI:-true}" cargo test -p downbeat-cli --features lv2 --test lv2_instruments_cli --test lv2_state_cli
cargo clippy -q -p downbeat-plugin --all-features --all-targets -- -D warnings
# The URID table's loom model, in a target dir of its own so it does not invalidate the main cache.
RUSTFLAGS="--cfg loom" cargo test -q -p downbeat-plugin --test loom_urid --release --target-dir target/loom

# The CLI built as above (`--features lv2`, without the devices): linted, and its tests
# that run every example project, examples/projects/overdrive-lv2.toml included.
echo "--- downbeat-cli with --features lv2"
cargo clippy -q -p downbeat-cli --features lv2 --all-targets -- -D warnings
cargo test -p downbeat-cli --features lv2 --test examples_guard --test parallel_projects

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
# (a crash in one stops nothing); the CLI's audit tests with `--features lv2` (an LV2 bundle
# audited through lilv, the crashing test plugins, a run crashing mid-recording).
audit_packages=(zam-plugins synthv1-lv2 avldrums.lv2 sox)
missing=()
for p in "${audit_packages[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing ${missing[*]} (Debian packages) for the audit of real plugins"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
echo "--- downbeat audit DIR"
cargo test -p downbeat-cli --features lv2 --test audit_dir --test audit_crashes --test audit_probe
plugins=$(mktemp -d)
for p in zam-plugins synthv1-lv2 avldrums.lv2; do
    dpkg -L "$p" | grep -E '^/usr/lib/(lv2/[^/]+\.lv2|clap/[^/]+\.clap)$'
done | xargs -I{} ln -s {} "$plugins/"
status=0
json=$("$downbeat" audit "$plugins" --blocks 20 --json) || status=$?
rm -rf "$plugins"
case "$status" in 0 | 2 | 3) ;; *)
    echo "downbeat audit over the zam, synthv1 and avldrums plugins exited $status" >&2
    exit 1 ;;
esac
# 17 CLAP and 17 LV2 zam effects, synthv1, avldrums' four kits.
rows=$(grep -c '"result":' <<<"$json" || true)
if [ "$rows" -ne 39 ]; then
    echo "downbeat audit over the zam, synthv1 and avldrums plugins: $rows rows, expected 39" >&2
    exit 1
fi
echo "audit DIR: 39 rows (exit $status)"
