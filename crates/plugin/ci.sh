#!/usr/bin/env bash
# Plugin hosting against real plugins. The workspace's `cargo test` builds downbeat-plugin
# with its default feature only (`clap`: the CLAP tests build the workspace's own test
# plugins and need nothing installed); this suite adds `lv2` and runs the tests that load the plugins
# Debian packages, so those must be installed: a missing plugin or tool fails the LV2 tests
# when CI=true instead of skipping them.
set -euo pipefail
cd "$(dirname "$0")/../.."

# --- LV2 (feature `lv2`): lilv to host, lv2apply as the reference host, mda and x42 plugins.
lv2_packages=(liblilv-dev lilv-utils mda-lv2 x42-plugins pkg-config)
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
CI="${CI:-true}" cargo test -p downbeat-plugin --features lv2
cargo clippy -q -p downbeat-plugin --all-features --all-targets -- -D warnings
