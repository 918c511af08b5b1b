#!/usr/bin/env python3
"""ncu_sass_ops.py CSV[.gz] [N] - executed warp instructions and stall samples per opcode from ncu's
source page (`ncu -i REP --page source --csv --print-source sass`, as bench/sm90/s24_call2.sh writes
it): where a kernel's issue slots go, and which opcodes its warps stall on. Top N (default 30)."""
import collections
import csv
import gzip
import re
import sys


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    rows = list(csv.reader((gzip.open if path.endswith(".gz") else open)(path, "rt")))
    hdr = next(r for r in rows if "Instructions Executed" in r)
    ie, src = hdr.index("Instructions Executed"), hdr.index("Source")
    samp = hdr.index("Warp Stall Sampling (All Samples)")
    tot = tsamp = 0
    ops, stalls = collections.Counter(), collections.Counter()
    for r in rows[rows.index(hdr) + 1:]:
        try:
            n, s = int(r[ie]), int(r[samp])
        except (ValueError, IndexError):
            continue
        ins = re.sub(r"^@!?U?P\w+\s+", "", r[src].strip())
        op = (ins.split() or ["?"])[0].split(".")[0]
        tot, tsamp = tot + n, tsamp + s
        ops[op] += n
        stalls[op] += s
    print(f"{path}: {tot} warp instructions executed, {tsamp} stall samples")
    uni = sum(n for o, n in ops.items() if o.startswith("U") or o == "R2UR")
    print(f"uniform datapath (U*, R2UR): {100 * uni / max(tot, 1):.1f}% of instructions")
    for op, n in ops.most_common(top):
        print(f"  {op:10s} {n:12d} {100 * n / tot:5.1f}%   stall samples {100 * stalls[op] / max(tsamp, 1):5.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
