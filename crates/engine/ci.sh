#!/usr/bin/env bash
# The load report in a real browser: render a report, screenshot it with headless Chromium,
# and check that the plots are there and drawn.
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! command -v chromium >/dev/null; then
    echo "installing chromium (Debian package) for the report screenshot test"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi

out=target/report-check
rm -rf "$out" && mkdir -p "$out"
cargo run -q -p downbeat -- run examples/projects/fanin84.toml --device offline --seconds 3 \
    --threads 2 --report "$out/report.html" --json >"$out/summary.json"

profile=$(mktemp -d)
chrome=(chromium --headless=new --no-sandbox --disable-gpu --disable-background-networking
    --disable-component-update --disable-sync --no-first-run --user-data-dir="$profile")
"${chrome[@]}" --dump-dom "file://$PWD/$out/report.html" >"$out/dom.html" 2>/dev/null
for id in load-time load-histogram node-times; do
    grep -q "id=\"$id\"" "$out/dom.html" || { echo "report: plot $id missing in the rendered DOM"; exit 1; }
done
"${chrome[@]}" --window-size=1000,1600 --screenshot="$out/report.png" "file://$PWD/$out/report.html" 2>/dev/null
read -r width height share < <(python3 scripts/png_stats.py "$out/report.png")
echo "report screenshot: ${width}x${height}, $(python3 -c "print(round($share*100,1))")% of pixels drawn"
python3 -c "import sys; sys.exit(0 if $share > 0.03 else 1)" || { echo "report screenshot looks blank"; exit 1; }
rm -rf "$profile"
echo "screenshot: 1 passed, 0 failed"
