#!/usr/bin/env bash
# The documentation as a reader meets it: the guide builds with mdBook without a warning, every
# relative link and anchor in the project's Markdown resolves, every command README.md shows
# runs as written, and so does every command of the guide a test machine can run (the others
# are listed in scripts/doc_commands.py with their reason). (The guide's Rust examples run as doctests in `cargo test
# --workspace`: the `downbeat-guide` crate.) mdbook comes from scripts/deps.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/deps.sh

echo "--- mdbook build docs/guide"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! mdbook build docs/guide 2>"$log"; then
    cat "$log" >&2
    exit 1
fi
# mdBook reports a missing file or a bad SUMMARY entry as a warning and still builds.
if grep -E "WARN|ERROR" "$log" >&2; then
    echo "docs/ci.sh: mdbook warned" >&2
    exit 1
fi
echo "guide: built into target/guide"

echo "--- links"
python3 scripts/check_links.py

echo "--- README and guide commands"
python3 scripts/doc_commands.py
