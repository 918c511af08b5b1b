#!/usr/bin/env python3
"""issue8-schedule-model.py - the model behind notes/issue8-schedule.md: how evenly the sm90
forward's persistent grid (132 CTAs on the H200) splits the work of the bench shapes (B, H, S 4096,
128x128 block masks) under candidate tile schedules, and how many KV heads are in flight.

A query tile costs OV (Q load and epilogue, in key-tile units) + full blocks + PC x partial blocks
(a partial block runs mask_mod: causal-like masks ~1.2, document's gathering mask ~2.7, from
notes/issue8-document.md). Static schedules: a CTA's time is the sum of its tiles; 'dyn' is a
greedy list schedule (the next tile of the order goes to the CTA that frees first), what a global
tile counter would give. Prints max/mean and min/mean CTA time and the mean / max number of
distinct (batch, KV head) pairs among the running tiles over time. Pure Python, a few seconds.
"""
import heapq

G, QB = 132, 128  # CTAs, rows (and keys) per block
OV = 0.5


def blocks(allowed, nm):
    """Per query block m: (full, partial) key blocks of a mask given as allowed(q, k)."""
    out = []
    for m in range(nm):
        full = part = 0
        for n in range(nm):
            cnt = sum(allowed(q, k) for q in range(m * QB, m * QB + QB, 8) for k in range(n * QB, n * QB + QB, 8))
            full += cnt == (QB // 8) ** 2
            part += 0 < cnt < (QB // 8) ** 2
        out.append((full, part))
    return out


def causal(nm):
    return [[(m, 1) for m in range(nm)]]


def window(nm, w=1024):
    return [[(min(m, w // QB - 1), 1 if m < w // QB else 2) for m in range(nm)]]


def document(nm, ends=(1182, 3211, 4096)):  # bench/cases.py's documents
    doc = lambda i: next(d for d, e in enumerate(ends) if i < e)
    return [blocks(lambda q, k: k <= q and doc(q) == doc(k), nm)]


def prefix_lm(nm, pre=(1042, 1107, 1915, 1912, 892, 1847, 984, 1876)):  # one mask per batch entry
    return [blocks(lambda q, k, p=p: k < p or k <= q, nm) for p in pre]


def dense(nm):
    return [[(nm, 0)] * nm]


def order_current(i, nm, hq, nh):  # fa4_sm90_tile: heads adjacent, last query tile first
    hb, r = divmod(i, nm)
    return nm - 1 - r, hb % hq, hb // hq


def order_sections(i, nm, hq, nh, hs=8):  # hs heads at a time, their query tiles interleaved
    s, r = divmod(i, nm * hs)
    n = min(hs, nh - s * hs)
    hb = s * hs + r % n
    return nm - 1 - r // n, hb % hq, hb // hq


def deal(T, c, zigzag):  # fa4_sm90_walk: CTA c's tiles, wave by wave
    return [b + (G - 1 - c if zigzag and (b // G) & 1 else c) for b in range(0, T, G)
            if b + (G - 1 - c if zigzag and (b // G) & 1 else c) < T]


def run(shape, sched):
    name, B, H, HK, wfun, pc = shape
    nm = 4096 // QB
    W = wfun(nm)
    T = nm * H * B
    kind, order = sched
    cost = lambda m, b: OV + W[b % len(W)][m][0] + pc * W[b % len(W)][m][1]
    spans, loads = [], [0.0] * G
    if kind == "dyn":
        free = [(0.0, c) for c in range(G)]
        for i in range(T):
            t, c = heapq.heappop(free)
            m, h, b = order(i, nm, H, H * B)
            spans.append((t, t + cost(m, b), (b, h // (H // HK))))
            loads[c] = t + cost(m, b)
            heapq.heappush(free, (loads[c], c))
    else:
        for c in range(G):
            t = 0.0
            for i in deal(T, c, kind == "zz"):
                m, h, b = order(i, nm, H, H * B)
                spans.append((t, t + cost(m, b), (b, h // (H // HK))))
                t += cost(m, b)
            loads[c] = t
    mean, top = sum(loads) / G, max(loads)
    heads = [len({s[2] for s in spans if s[0] <= top * (k + 0.5) / 100 < s[1]}) for k in range(100)]
    return top / mean, min(loads) / mean, sum(heads) / 100, max(heads)


SHAPES = [("plain B4 H16", 4, 16, 16, dense, 0), ("causal B4 H16", 4, 16, 16, causal, 1.2),
          ("GQA 32:4 causal B2", 2, 32, 4, causal, 1.2), ("window 1024 B4", 4, 16, 16, window, 1.2),
          ("document B8 H16", 8, 16, 16, document, 2.7), ("prefix-LM B8 H16", 8, 16, 16, prefix_lm, 1.2)]
SCHEDS = {"round robin (main)": ("rr", order_current), "boustrophedon": ("zz", order_current),
          "counter": ("dyn", order_current), "counter, 8-head sections": ("dyn", order_sections)}

if __name__ == "__main__":
    print("max/mean min/mean, KV heads in flight mean/max")
    print("%-20s" % "" + "".join("%-27s" % k for k in SCHEDS))
    for s in SHAPES:
        print("%-20s" % s[0] + "".join("%5.3f %4.2f  h %4.1f / %-3d    " % run(s, v) for v in SCHEDS.values()))
