#!/usr/bin/env python3
"""Plots a soak's agent RSS over time (tests/soak/soak.sh's samples.jsonl) as an SVG,
with no plotting library (matplotlib is not a dependency): one polyline per agent
instance, the window boundaries, and the perturbations of events.log.
    plot.py DIR WINDOW_S OUT.svg
"""
import json, os, sys

d, W, out = sys.argv[1], float(sys.argv[2]), sys.argv[3]
t0 = float(open(os.path.join(d, "t0")).read())
pts = {}
for line in open(os.path.join(d, "samples.jsonl")):
    s = json.loads(line)
    if s.get("rss_kb") and s["t"] >= t0:
        pts.setdefault(s["pid"], []).append(((s["t"] - t0) / 60, s["rss_kb"] / 1024))
events = [l.split(" ", 1) for l in open(os.path.join(d, "events.log")) if l.strip()]
xs = [x for p in pts.values() for x, _ in p]
tmax = max(xs) if xs else 1
ymax = max(max(y for _, y in p) for p in pts.values()) * 1.25 if pts else 1
Wd, H, L, B = 900, 360, 60, 40  # size, left and bottom margins
X = lambda m: L + (Wd - L - 20) * m / tmax
Y = lambda mb: H - B - (H - B - 30) * mb / ymax
o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{Wd}" height="{H}" font-family="sans-serif" font-size="11">',
     f'<rect width="{Wd}" height="{H}" fill="white"/>',
     f'<text x="{L}" y="18" font-size="13">ripple-agent RSS over the soak ({len(pts)} agent instance(s); '
     f'grey lines: {W:.0f} s windows; red: perturbations)</text>']
k = 0
while k * W / 60 <= tmax:
    x = X(k * W / 60)
    o.append(f'<line x1="{x:.1f}" y1="30" x2="{x:.1f}" y2="{H - B}" stroke="#ddd"/>')
    k += 1
for kk, what in events:
    x = X((int(kk) + 0.25) * W / 60)
    o.append(f'<line x1="{x:.1f}" y1="30" x2="{x:.1f}" y2="{H - B}" stroke="#e88" stroke-dasharray="3,3"/>')
    o.append(f'<text x="{x + 2:.1f}" y="{40 + (int(kk) % 4) * 11}" fill="#c33" font-size="9">{what.strip()}</text>')
colors = ["#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e"]
for i, (pid, p) in enumerate(sorted(pts.items(), key=lambda kv: kv[1][0][0])):
    step = max(1, len(p) // 2000)
    path = " ".join(f"{X(x):.1f},{Y(y):.1f}" for x, y in p[::step])
    o.append(f'<polyline fill="none" stroke="{colors[i % 4]}" stroke-width="1.5" points="{path}"/>')
    o.append(f'<text x="{X(p[-1][0]) - 120:.1f}" y="{Y(p[-1][1]) - 6:.1f}" fill="{colors[i % 4]}">pid {pid}: '
             f'{p[-1][1]:.1f} MiB</text>')
o.append(f'<line x1="{L}" y1="{H - B}" x2="{Wd - 20}" y2="{H - B}" stroke="black"/>')
o.append(f'<line x1="{L}" y1="30" x2="{L}" y2="{H - B}" stroke="black"/>')
for i in range(6):
    mb = ymax * i / 5
    o.append(f'<text x="{L - 6}" y="{Y(mb) + 4:.1f}" text-anchor="end">{mb:.0f}</text>')
for i in range(7):
    m = tmax * i / 6
    o.append(f'<text x="{X(m):.1f}" y="{H - B + 16}" text-anchor="middle">{m:.0f}</text>')
o.append(f'<text x="{(L + Wd) / 2}" y="{H - 6}" text-anchor="middle">minutes</text>')
o.append(f'<text x="14" y="{H / 2}" transform="rotate(-90 14 {H / 2})" text-anchor="middle">RSS, MiB</text>')
o.append("</svg>")
open(out, "w").write("\n".join(o) + "\n")
