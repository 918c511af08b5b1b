#!/usr/bin/env python3
"""ab_report.py - JSON, a markdown table and a PNG plot from the raw text of an A/B run of
`test_gpu_sm80 --bench-only` with a switch (the `== round R NAME=V` headers and BENCH lines that
bench/sm90/dq_fused_ab.sh and mask_roll_ab.sh write into their summaries).
    python3 bench/sm90/ab_report.py RAW.txt STEM "title" [fwd|bwd]
writes STEM.json, STEM.md and STEM.png beside each other (ratios: time of each setting over the
first setting's, the mean of the rounds)."""
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pngplot  # noqa: E402  (bench/pngplot.py)

PALETTE = ["#4a5ac8", "#c85a3c", "#3c9650", "#a0a03c"]


def parse(text, which):
    cases, cur, settings = {}, None, []
    for line in text.splitlines():
        m = re.match(r"== round (\d+) (\w+)=(\w+)", line)
        if m:
            cur = m.group(3)
            if cur not in settings:
                settings.append(cur)
            continue
        m = re.match(r"BENCH (.+?)\s+B=(\S+) H=(\S+) S=(\d+) D=(\d+): (.*)", line)
        if not m or cur is None:
            continue
        t = re.search(which + r"\s+([\d.]+) ms", m.group(6))
        if not t:
            continue
        c = cases.setdefault(m.group(1).strip(), {"shape": "B=%s H=%s S=%s D=%s" % m.group(2, 3, 4, 5), "ms": {}})
        c["ms"].setdefault(cur, []).append(float(t.group(1)))
    return cases, settings


def main():
    if len(sys.argv) < 4:
        print(__doc__)
        return 2
    raw, stem, title = sys.argv[1:4]
    which = sys.argv[4] if len(sys.argv) > 4 else "bwd"
    with open(raw) as f:
        cases, settings = parse(f.read(), which)
    if len(settings) < 2 or not cases:
        print(f"ab_report: no A/B rounds with BENCH lines in {raw}")
        return 1
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    base = settings[0]
    md = [f"# {title}", "", f"{which} ms of each setting (one value a round, `test_gpu_sm80 --bench-only`, median of "
          f"11 launches); ratio: mean time over the `{base}` setting's. Raw lines: {os.path.basename(raw)}.", "",
          "| case | shape | " + " | ".join(settings) + " | " + " | ".join(f"{s} / {base}" for s in settings[1:]) + " |",
          "|---|---|" + "---|" * (2 * len(settings) - 1)]
    cats, series = [], [[] for _ in settings]
    for name, c in cases.items():
        if not all(s in c["ms"] for s in settings):
            continue
        ratios = [mean(c["ms"][s]) / mean(c["ms"][base]) for s in settings]
        md.append(f"| {name} | {c['shape']} | " + " | ".join(", ".join("%.3f" % x for x in c["ms"][s]) for s in settings)
                  + " | " + " | ".join("%.2f" % r for r in ratios[1:]) + " |")
        c["ratio"] = dict(zip(settings, ratios))
        cats.append(name[:16])
        for i, r in enumerate(ratios):
            series[i].append(r)
    png = stem + ".png"
    md += ["", f"![{which} time relative to {base}]({os.path.basename(png)})", ""]
    with open(stem + ".md", "w") as f:
        f.write("\n".join(md))
    with open(stem + ".json", "w") as f:
        json.dump({"title": title, "which": which, "settings": settings, "source": os.path.basename(raw),
                   "cases": cases}, f, indent=1)
    pngplot.grouped_bars(png, [(None, title, f"{which} time / {base}", cats,
                                [(s, PALETTE[i % len(PALETTE)], series[i], ["%.2f" % v for v in series[i]])
                                 for i, s in enumerate(settings)], False, None)])
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
