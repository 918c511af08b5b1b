#!/usr/bin/env python3
"""fa4_ab.py - fa4jit alone (no peers) on some of bench/run.py's cases, for A/B runs of kernel
variants: each variant (a kernel source directory, FA4JIT_KERNEL_DIR; "default" = the library's
embedded kernels) in its own process, rounds interleaved, CUDA events, median of --reps.

    python3 bench/sm90/fa4_ab.py --cases mods:ALiBi,mods:head_scale --variants default,DIR \
        [--rounds 2] [--reps 30] [--bwd]

A variant may carry kernel options after '+' (fa4jit.flex_attention's kernel_options, e.g.
`default+sw_exp2_percent=25`, `DIR+rescale_threshold=-1`): they are added to every case's. After
'@', environment settings for its process, ':'-separated (`default@FA4JIT_SM90_BWD_PERSIST=1`);
'@' comes last (`DIR+OPT=V@NAME=V`). A case
of run.py with extra fast_math (the soft-cap fast-math row) runs with kernel option fast_math, as
run.py's row does (forward only).

    python3 bench/sm90/fa4_ab.py --report RAW STEM TITLE
        (STEM.json, STEM.md and STEM.png from the AB lines in RAW, and SUMMARY lines
        `SUMMARY variant=V case=C fwd_tflops=X` where only a summary was kept)

Prints one line per (round, variant, case): `AB round=R variant=V case=ID fwd_ms=.. fwd_tflops=..
[fb_ms=.. fb_tflops=..]`, and a summary of medians over rounds. Uses bench/run.py's bootstrap
(the carried library in build-bench-carry/, CUDA's lib64). Not a substitute for run.py's table:
no peers, no correctness check beyond a finite output.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# bench/ (run.py, cases.py, backends.py): this file's parent in the tree, or ./bench from the
# repository root where a copy runs from elsewhere (.devcarry/ on the GPU machine)
BENCH = next((d for d in (os.path.dirname(HERE), os.path.join(os.getcwd(), "bench"))
              if os.path.exists(os.path.join(d, "run.py"))), os.path.dirname(HERE))


def child(args):
    sys.path.insert(0, BENCH)
    import run as benchrun
    benchrun.bootstrap()
    import torch
    import backends
    import cases as cs
    from timing import Timer
    want = args.cases.split(",")
    kopts = {}
    for kv in filter(None, (args.kopts or "").split("+")):
        key, _, val = kv.partition("=")
        kopts[key] = val
    allc = {c.id: c for c in cs.build_cases(False, optional=True)}
    timer = Timer(torch)
    timer.calibrate()
    out = []
    for cid in want:
        c = allc[cid]
        inp = backends.Inputs(c, 2)
        r = backends.Fa4Runner(c, inp, "sm90")
        if c.extra.get("fast_math"):
            r.kopts["fast_math"] = True
        r.kopts.update(kopts)
        o = r.fwd(0)
        torch.cuda.synchronize()
        if not torch.isfinite(o.float()).all():
            raise SystemExit(f"{cid}: output not finite")
        f = timer.measure(r.fwd, 2, 3, args.reps)["median_ms"]
        rec = {"case": cid, "fwd_ms": f, "fwd_tflops": c.flops_fwd / (f * 1e-3) / 1e12}
        if args.bwd and c.bwd:
            fb = timer.measure(r.fwdbwd, 2, 2, max(3, args.reps // 2))["median_ms"]
            rec.update(fb_ms=fb, fb_tflops=c.flops_fwdbwd / (fb * 1e-3) / 1e12)
        out.append(rec)
        del r, inp
        torch.cuda.empty_cache()
    print("ABJSON " + json.dumps(out), flush=True)


def report(raw, stem, title):
    """JSON, markdown and a bar plot (bench/pngplot.py) of a run's forward TFLOP/s per case and
    variant: the median of its rounds (AB lines), or the SUMMARY line's median where given; with
    the forward+backward's median beside it where the run measured it (--bwd)."""
    import re
    sys.path.insert(0, BENCH)
    import pngplot
    rounds, summ, fb, order_c, order_v = {}, {}, {}, [], []
    for line in open(raw):
        m = re.match(r"(AB round=\d+|SUMMARY) variant=(\S+) case=(\S+) .*?fwd_tflops=([0-9.]+)", line)
        if not m:
            continue
        kind, v, c, t = m.group(1), os.path.basename(m.group(2).rstrip("/")), m.group(3), float(m.group(4))
        order_c += [c] if c not in order_c else []
        order_v += [v] if v not in order_v else []
        if kind == "SUMMARY":
            summ[(c, v)] = t
        else:
            rounds.setdefault((c, v), []).append(t)
            m = re.search(r"fb_tflops=([0-9.]+)", line)
            if m:
                fb.setdefault((c, v), []).append(float(m.group(1)))
    runs = {}
    for c in order_c:
        for v in order_v:
            if (c, v) in summ or (c, v) in rounds:
                runs.setdefault(c, {})[v] = {"rounds": rounds.get((c, v), []),
                                             "median": summ.get((c, v), statistics.median(rounds.get((c, v), [0])))}
                if (c, v) in fb:
                    runs[c][v].update(fb_rounds=fb[(c, v)], fb_median=statistics.median(fb[(c, v)]))
    cell = lambda r: "%.1f" % r["median"] + (" / %.1f" % r["fb_median"] if "fb_median" in r else "")
    what = "Forward" + (" / forward+backward" if fb else "")
    md = [f"# {title}", "", f"{what} TFLOP/s (median over rounds); source {os.path.basename(raw)}.", "",
          "| case | " + " | ".join(order_v) + " |", "|---|" + "---|" * len(order_v)]
    for c in order_c:
        md.append(f"| {c} | " + " | ".join(
            cell(runs[c][v]) if v in runs[c] else "-" for v in order_v) + " |")
    png = stem + ".png"
    md += ["", f"![forward TFLOP/s]({os.path.basename(png)})", ""]
    with open(stem + ".md", "w") as f:
        f.write("\n".join(md))
    with open(stem + ".json", "w") as f:
        json.dump({"title": title, "source": os.path.basename(raw), "unit": what.lower() + " TFLOP/s",
                   "variants": order_v, "cases": runs}, f, indent=1)
    palette = ["#4c72b0", "#dd8452", "#55a868", "#c44e52"]
    series = [(v, palette[i % len(palette)], [runs[c].get(v, {"median": 0})["median"] for c in order_c],
               ["%.0f" % runs[c].get(v, {"median": 0})["median"] for c in order_c]) for i, v in enumerate(order_v)]
    pngplot.grouped_bars(png, [(None, title, "forward TFLOP/s", [c.split(":")[-1][:16] for c in order_c],
                                series, False, None)])
    print("\n".join(md))
    return 0


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--report":
        return report(*sys.argv[2:5])
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", required=True)
    ap.add_argument("--variants", default="default")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--bwd", action="store_true")
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--kopts", default="")  # the child's: a variant's '+'-separated kernel options
    args = ap.parse_args()
    if args.child:
        return child(args)
    res = {}
    for rnd in range(1, args.rounds + 1):
        for v in args.variants.split(","):
            v_k, _, venv = v.partition("@")
            kdir, _, kopts = v_k.partition("+")
            env = dict(os.environ)
            env.pop("FA4JIT_KERNEL_DIR", None)
            if kdir != "default":
                env["FA4JIT_KERNEL_DIR"] = os.path.abspath(kdir)
            for kv in filter(None, venv.split(":")):
                key, _, val = kv.partition("=")
                env[key] = val
            tag = os.path.basename(kdir.rstrip('/')) + ("-" + venv.replace(":", "-").replace("=", "") if venv else "")
            env["FA4JIT_CACHE_DIR"] = f"/tmp/fa4ab-cache-{tag}"
            cmd = [sys.executable, os.path.abspath(__file__), "--child", "--cases", args.cases,
                   "--reps", str(args.reps), "--kopts", kopts] + (["--bwd"] if args.bwd else [])
            p = subprocess.run(cmd, env=env, capture_output=True, text=True)
            line = [l for l in p.stdout.splitlines() if l.startswith("ABJSON ")]
            if p.returncode or not line:
                print(f"AB round={rnd} variant={v} FAILED rc={p.returncode}\n{p.stderr[-1500:]}")
                continue
            for rec in json.loads(line[0][7:]):
                extra = (f" fb_ms={rec['fb_ms']:.4f} fb_tflops={rec['fb_tflops']:.1f}"
                         if "fb_ms" in rec else "")
                print(f"AB round={rnd} variant={v} case={rec['case']} fwd_ms={rec['fwd_ms']:.4f} "
                      f"fwd_tflops={rec['fwd_tflops']:.1f}{extra}", flush=True)
                res.setdefault((rec["case"], v), []).append(rec)
    print("summary (median over rounds, TFLOP/s fwd / fwd+bwd):")
    for (cid, v), recs in sorted(res.items()):
        f = statistics.median(r["fwd_tflops"] for r in recs)
        fb = [r["fb_tflops"] for r in recs if "fb_tflops" in r]
        print(f"  {cid:28s} {v:24s} {f:7.1f}" + (f" / {statistics.median(fb):7.1f}" if fb else ""))


if __name__ == "__main__":
    sys.exit(main())
