#!/usr/bin/env bash
# Regenerates the guide's reference pages that are generated from the code. Tests compare
# the committed pages with what the code prints, byte for byte, and fail when they drift:
# run this, then commit the pages it changed.
set -euo pipefail
cd "$(dirname "$0")/.."

# --- Node types: docs/guide/src/reference/nodes.md, from `downbeat nodes --markdown`.
# Built with `--features lv2` so that every node type (the `lv2` one too) is listed;
# crates/cli/tests/reference_nodes.rs checks the committed page against it.
cargo run -q -p downbeat-cli --features lv2 -- nodes --markdown > docs/guide/src/reference/nodes.md

# --- The command line, the OSC addresses and the project keys: docs/guide/src/reference/
# cli.md, osc.md and project.md, from the hidden `downbeat reference cli|osc|project` (the
# argument parser, `downbeat::control::osc::ADDRESSES`, `downbeat::project::KEYS`), default
# build; crates/cli/tests/reference_docs.rs checks the committed pages against it.
cargo run -q -p downbeat-cli -- reference cli > docs/guide/src/reference/cli.md
cargo run -q -p downbeat-cli -- reference osc > docs/guide/src/reference/osc.md
cargo run -q -p downbeat-cli -- reference project > docs/guide/src/reference/project.md
