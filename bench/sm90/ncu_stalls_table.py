"""ncu_stalls_table.py - the side-by-side table of bench/sm90/ncu_stalls_vs_cudnn.sh: one row per
metric, one column per capture (the capture name that the script put first on each CSV row of
`ncu --csv --metrics`), stall reasons sorted by the largest value in any column; metrics that are
zero or absent everywhere are left out.
    python3 bench/sm90/ncu_stalls_table.py ALL.csv
"""
import csv
import sys


def load(path):
    cols, vals = [], {}
    with open(path, newline="") as f:
        for row in csv.reader(f):
            if len(row) < 4 or row[-3] in ("Metric Name", ""):
                continue
            cap, name, unit, value = row[0], row[-3], row[-2], row[-1]
            try:
                v = float(value.replace(",", ""))
            except ValueError:
                continue
            if cap not in cols:
                cols.append(cap)
            vals.setdefault((name, unit), {})[cap] = v
    return cols, vals


def short(name):
    for p, r in (("smsp__average_warps_issue_stalled_", "stall "), ("sm__inst_executed_pipe_", "pipe inst "),
                 ("sm__pipe_", "pipe cyc "), ("_per_issue_active.ratio", ""),
                 (".avg.pct_of_peak_sustained_active", " %"), ("_cycles_active", "")):
        name = name.replace(p, r)
    return name


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: ncu_stalls_table.py ALL.csv")
    cols, vals = load(sys.argv[1])
    if not cols:
        print("ncu_stalls_table: no metric rows in", sys.argv[1])
        return
    rows = [(k, v) for k, v in vals.items() if any(abs(x) > 0 for x in v.values())]

    def order(item):
        (name, _), v = item
        group = 0 if not name.startswith(("smsp__average_warps_issue_stalled", "sm__inst_executed_pipe", "sm__pipe")) \
            else 1 if "stalled" in name else 2
        return (group, -max(v.values()) if group else 0, name)

    rows.sort(key=order)
    w = max(len(short(n)) for (n, _), _ in rows)
    print(" " * w + "".join(f"{c[:16]:>17}" for c in cols))
    for (name, unit), v in rows:
        if "stalled" in name and max(v.values()) < 0.05:
            continue
        print(f"{short(name):<{w}}" + "".join(f"{v[c]:>17.4g}" if c in v else f"{'-':>17}" for c in cols))


if __name__ == "__main__":
    main()
