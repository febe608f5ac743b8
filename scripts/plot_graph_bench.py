#!/usr/bin/env python3
"""Draws the load percentiles of `downbeat-bench graph --json` as an SVG (no dependencies).

    cargo run --release -p downbeat-bench -- graph --json > docs/graph-bench.json
    python3 scripts/plot_graph_bench.py docs/graph-bench.json docs/graph-bench.svg
"""
import json
import sys

data = json.load(open(sys.argv[1]))
impls = ["serial", "rayon_spawn", "rayon_broadcast", "rayon_spawn_rt", "rayon_broadcast_rt",
         "downbeat", "downbeat_nort", "downbeat_cold"]
impls = [i for i in impls if any(r["impl"] == i for r in data["results"])]
labels = ["P0", "P25", "P50", "P75", "P99", "P100"]
# Medians over runs of each run's percentile; P100 is the worst callback of all runs (max).
val = {(r["impl"], r["case"]): r["max" if r["case"] == "fanin84_load_P100" else "median"]
       for r in data["results"]}
W, H, L, R, T, B = 820, 60 + 40 * len(impls), 250, 20, 30, 40
top = max(1.0, max(val.get((i, "fanin84_load_P99"), 0) for i in impls) * 1.15)
x = lambda v: L + (W - L - R) * min(v, top) / top
out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
       f'<text x="{W/2}" y="18" text-anchor="middle">fanin84 load per callback: box P25–P75, whiskers P0–P99, dot P50, mark worst (clipped at {top:.2f})</text>']
for k in range(6):
    v = top * k / 5
    out.append(f'<line x1="{x(v):.1f}" y1="{T}" x2="{x(v):.1f}" y2="{H-B}" stroke="#ddd"/>')
    out.append(f'<text x="{x(v):.1f}" y="{H-B+16}" text-anchor="middle">{v:.2f}</text>')
out.append(f'<line x1="{x(1.0):.1f}" y1="{T}" x2="{x(1.0):.1f}" y2="{H-B}" stroke="#d62728" stroke-dasharray="4 3"/>')
out.append(f'<text x="{x(1.0)-4:.1f}" y="{T+12}" text-anchor="end" fill="#d62728">deadline</text>')
row = (H - T - B) / len(impls)
for n, impl in enumerate(impls):
    p = {l: val.get((impl, f"fanin84_load_{l}"), 0) for l in labels}
    missed = val.get((impl, "fanin84_missed"), 0)
    cy = T + row * (n + 0.5)
    out.append(f'<text x="{L-8}" y="{cy+4:.1f}" text-anchor="end">{impl} ({missed:g} missed/run)</text>')
    out.append(f'<line x1="{x(p["P0"]):.1f}" y1="{cy:.1f}" x2="{x(p["P99"]):.1f}" y2="{cy:.1f}" stroke="#555"/>')
    out.append(f'<rect x="{x(p["P25"]):.1f}" y="{cy-9:.1f}" width="{max(1, x(p["P75"])-x(p["P25"])):.1f}" height="18" fill="#9ecae1" stroke="#555"/>')
    out.append(f'<circle cx="{x(p["P50"]):.1f}" cy="{cy:.1f}" r="3.5" fill="#08519c"/>')
    out.append(f'<text x="{x(p["P100"]):.1f}" y="{cy+4:.1f}" text-anchor="middle" fill="#e6550d">×</text>')
out.append(f'<text x="{(L+W-R)/2}" y="{H-6}" text-anchor="middle">load (callback time / 11.6 ms budget)</text></svg>')
open(sys.argv[2], "w").write("\n".join(out) + "\n")
