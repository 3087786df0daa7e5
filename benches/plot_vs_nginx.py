#!/usr/bin/env python3
"""Draws benches/vs_nginx.sh's CSV as an SVG: requests/s of weaver and nginx per read (bars)
and p99 latency of each (dots), side by side. No third-party packages.

    usage: benches/plot_vs_nginx.py RESULTS.csv OUT.svg
"""
import csv
import sys
from html import escape


def main(src, out):
    rows = list(csv.DictReader(open(src)))
    width, row_h, left, right = 980, 34, 250, 40
    top = 70
    height = top + row_h * len(rows) + 60
    max_rps = max(max(float(r["weaver_rps"]), float(r["nginx_rps"])) for r in rows)
    max_p99 = max(max(float(r["weaver_p99_us"]), float(r["nginx_p99_us"])) for r in rows)
    bar_w = (width - left - right) * 0.62
    lat_x0 = left + bar_w + 30
    lat_w = width - right - lat_x0
    svg = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        'font-family="sans-serif" font-size="12">',
        '<rect width="100%" height="100%" fill="white"/>',
        f'<text x="{left}" y="22" font-size="15" font-weight="bold">weaver vs nginx serving the same bytes '
        '(wrk -t2 -c64, loopback, 2 cores)</text>',
        f'<text x="{left}" y="44">requests/s (bars; ratio weaver/nginx at the end)</text>',
        f'<text x="{lat_x0}" y="44">p99 latency (dots, µs)</text>',
        f'<rect x="{left}" y="52" width="12" height="10" fill="#2b6cb0"/><text x="{left + 16}" y="61">weaver</text>',
        f'<rect x="{left + 80}" y="52" width="12" height="10" fill="#a0aec0"/><text x="{left + 96}" y="61">nginx</text>',
    ]
    for i, r in enumerate(rows):
        y = top + i * row_h
        w_rps, n_rps = float(r["weaver_rps"]), float(r["nginx_rps"])
        svg.append(f'<text x="{left - 8}" y="{y + 17}" text-anchor="end">{escape(r["read"])}</text>')
        for j, (value, color) in enumerate([(w_rps, "#2b6cb0"), (n_rps, "#a0aec0")]):
            w = bar_w * value / max_rps
            svg.append(f'<rect x="{left}" y="{y + 3 + j * 13}" width="{w:.1f}" height="12" fill="{color}"/>')
        svg.append(
            f'<text x="{left + bar_w * max(w_rps, n_rps) / max_rps + 4:.1f}" y="{y + 17}">'
            f'{float(r["ratio"]):.2f}×</text>'
        )
        svg.append(f'<line x1="{lat_x0}" x2="{lat_x0 + lat_w}" y1="{y + 15}" y2="{y + 15}" stroke="#e2e8f0"/>')
        for value, color in [(float(r["weaver_p99_us"]), "#2b6cb0"), (float(r["nginx_p99_us"]), "#a0aec0")]:
            x = lat_x0 + lat_w * value / max_p99
            svg.append(f'<circle cx="{x:.1f}" cy="{y + 15}" r="5" fill="{color}" fill-opacity="0.85"/>')
    axis_y = top + row_h * len(rows) + 10
    for frac in (0, 0.5, 1):
        x = left + bar_w * frac
        svg.append(f'<text x="{x:.1f}" y="{axis_y + 14}" text-anchor="middle">{max_rps * frac / 1000:.0f}k</text>')
        x = lat_x0 + lat_w * frac
        svg.append(f'<text x="{x:.1f}" y="{axis_y + 14}" text-anchor="middle">{max_p99 * frac:.0f}</text>')
    svg.append("</svg>")
    open(out, "w").write("\n".join(svg) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
