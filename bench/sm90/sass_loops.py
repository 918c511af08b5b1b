#!/usr/bin/env python3
"""sass_loops.py - the loops of a cubin's SASS (nvdisasm), with instruction mix per loop.

    python3 bench/sm90/sass_loops.py CUBIN [--min N] [--ops OP,OP,...]

A loop is a backward branch: the instructions from its target label to the branch. Loops are
listed innermost-first by size (at least --min instructions, default 100), each with its count and
the count of each opcode class in --ops (default: the ones the sm90 softmax and mainloop spend on).
Used to compare builds (mod against plain, a knob on against off) without a GPU.
"""
import os
import re
import subprocess
import sys

NVDISASM = os.environ.get(
    "NVDISASM",
    "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/nvidia/cu13/bin/nvdisasm")
DEFAULT_OPS = "HGMMA,MUFU,FFMA,FMUL,FADD,FMNMX,FSEL,I2F,F2FP,IMAD,IADD3,ISETP,FSETP,SEL,LOP3,R2UR,SHFL,BAR,SYNCS,WARPGROUP"


def parse(cubin):
    text = subprocess.run([NVDISASM, "-c", cubin], check=True, capture_output=True, text=True).stdout
    insns, labels = [], {}
    for line in text.splitlines():
        m = re.match(r"^\.(L_x_\d+):", line.strip())
        if m:
            labels[m.group(1)] = len(insns)
            continue
        m = re.match(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
        if m:
            insns.append(m.group(2).strip())
    return insns, labels


def opcode(ins):
    ins = re.sub(r"^@!?U?P\w+\s+", "", ins)
    return ins.split()[0] if ins else ""


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__)
        return 2
    mn, ops = 100, DEFAULT_OPS.split(",")
    if "--min" in args:
        i = args.index("--min")
        mn = int(args[i + 1])
        del args[i:i + 2]
    if "--ops" in args:
        i = args.index("--ops")
        ops = args[i + 1].split(",")
        del args[i:i + 2]
    insns, labels = parse(args[0])
    loops = []
    for i, ins in enumerate(insns):
        m = re.search(r"\bBRA\b.*`\(\.(L_x_\d+)\)", ins)
        if m and m.group(1) in labels and labels[m.group(1)] <= i:
            lo = labels[m.group(1)]
            if i - lo + 1 >= mn:
                loops.append((lo, i))
    print(f"{args[0]}: {len(insns)} instructions")
    for lo, hi in sorted(set(loops), key=lambda x: x[1] - x[0]):
        body = insns[lo:hi + 1]
        cnt = {}
        for ins in body:
            op = opcode(ins).split(".")[0]
            cnt[op] = cnt.get(op, 0) + 1
        mix = " ".join(f"{o}={cnt[o]}" for o in ops if cnt.get(o))
        print(f"  loop [{lo:5d}, {hi:5d}] {hi - lo + 1:5d} instrs  {mix}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
