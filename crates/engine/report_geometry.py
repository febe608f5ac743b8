#!/usr/bin/env python3
"""Checks what headless Chromium draws of a load report (`downbeat run --report`), against
the run's `--json` summary: the plots' geometry as the browser lays it out, not ids that are
literal in the HTML. crates/engine/ci.sh runs it.

    python3 crates/engine/report_geometry.py REPORT.html SUMMARY.json CHROMIUM-ARGS...

It copies the report with a script that measures every plot after layout (SVGGraphicsElement
getBBox, the polyline's parsed points, the bars drawn) into a <pre id="geometry">, has
Chromium dump the DOM, and checks:
  * load over time: one point per callback (at most 1500), spanning the plot's width, with
    a non-zero height (the load varies), inside the SVG;
  * histogram: 60 bars, as many with height as there are distinct occupied bins (at least 2),
    their heights adding up to a plot (not all zero);
  * time per node: one bar per node, up to 40, each with a width.
Exits 1 naming what is wrong.
"""

import json
import os
import re
import subprocess
import sys

MEASURE = """
<script>
(() => {
  const box = (el) => { const b = el.getBBox(); return [b.x, b.y, b.width, b.height]; };
  const page = (el) => { const r = el.getBoundingClientRect(); return [r.width, r.height]; };
  const out = {};
  const time = document.querySelector('#load-time');
  const line = time && time.querySelector('polyline');
  out.time = time && line ? {
    svg: page(time), points: line.points.numberOfItems, bbox: box(line),
    width: time.width.baseVal.value, height: time.height.baseVal.value,
  } : null;
  const hist = document.querySelector('#load-histogram');
  out.hist = hist ? {
    svg: page(hist),
    bars: [...hist.querySelectorAll('rect')].map((r) => box(r)[3]),
  } : null;
  const nodes = document.querySelector('#node-times');
  out.nodes = nodes ? {
    svg: page(nodes),
    bars: [...nodes.querySelectorAll('rect')].map((r) => box(r)[2]),
  } : null;
  const pre = document.createElement('pre');
  pre.id = 'geometry';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
"""

PAD = 48.0  # crates/engine/src/report.rs: the plots' left margin.


def problems(g, summary):
    found = []
    blocks = summary["blocks"]
    t = g.get("time")
    if not t:
        return ["load over time: no polyline in #load-time"]
    if t["svg"][0] <= 0 or t["svg"][1] <= 0:
        found.append(f"load over time: the SVG is laid out {t['svg']}")
    want = min(blocks, 1500)
    if t["points"] != want:
        found.append(f"load over time: {t['points']} points for {blocks} callbacks, expected {want}")
    x, y, w, h = t["bbox"]
    if w < 0.9 * (t["width"] - 10 - PAD):
        plot = t["width"] - 10 - PAD
        found.append(f"load over time: the line spans {w:.1f} px of a {plot:.0f} px plot")
    if h <= 0:
        found.append("load over time: the line is flat (zero height), the load never varied")
    if x < 0 or y < 0 or x + w > t["width"] or y + h > t["height"]:
        found.append(f"load over time: the line's box {t['bbox']} leaves the SVG")
    hist = g.get("hist")
    if not hist:
        found.append("histogram: no #load-histogram")
    else:
        bars = hist["bars"]
        drawn = [b for b in bars if b > 0]
        if len(bars) != 60:
            found.append(f"histogram: {len(bars)} bars, expected 60")
        if len(drawn) < 2:
            found.append(f"histogram: {len(drawn)} bars with a height, expected several")
        if bars and max(bars) < 50:
            found.append(f"histogram: the tallest bar is {max(bars):.1f} px")
    nodes = g.get("nodes")
    want = min(summary["nodes"], 40)
    if not nodes:
        found.append("time per node: no #node-times")
    elif len(nodes["bars"]) != want or not all(b > 0 for b in nodes["bars"]):
        widths = [round(b, 1) for b in nodes["bars"]]
        found.append(f"time per node: bar widths {widths}, expected {want} bars with a width")
    return found


def main(argv):
    report, summary_path, chrome = argv[1], argv[2], argv[3:]
    with open(report) as f:
        html = f.read()
    with open(summary_path) as f:
        summary = json.load(f)
    check = report.replace(".html", "-geometry.html")
    with open(check, "w") as f:
        f.write(html.replace("</body>", MEASURE + "</body>"))
    dom = subprocess.run(chrome + ["--dump-dom", "file://" + os.path.abspath(check)], capture_output=True,
                         text=True, check=True).stdout
    m = re.search(r'<pre id="geometry">(.*?)</pre>', dom, re.S)
    if not m:
        print("report: the measuring script did not run (no #geometry in the dumped DOM)", file=sys.stderr)
        return 1
    g = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    found = problems(g, summary)
    for p in found:
        print(f"report: {p}", file=sys.stderr)
    if found:
        return 1
    print(f"report geometry: {g['time']['points']} points over time, "
          f"{sum(1 for b in g['hist']['bars'] if b > 0)} histogram bars drawn, "
          f"{len(g['nodes']['bars'])} node bars")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
