#!/usr/bin/env bash
# Live control against a client we did not write: `downbeat run --osc` driven by liblo's
# `oscsend` (Debian: liblo-tools), installed when missing. DOWNBEAT_REQUIRE_OSCSEND=1 makes a
# missing `oscsend` fail the tests instead of skipping them, so CI cannot pass without it.
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! command -v oscsend >/dev/null; then
    echo "installing liblo-tools (Debian) for the OSC tests"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq liblo-tools >/dev/null
fi

echo "--- OSC served by downbeat run --osc, sent by oscsend"
DOWNBEAT_REQUIRE_OSCSEND=1 cargo test -p downbeat-cli --test osc
