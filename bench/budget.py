"""Time plan of a benchmark run, from what earlier device runs measured (no GPU needed).

    python3 bench/budget.py [--quick] [--ref bench/results/2026-11-29-h200-quick.json ...]

run.py uses case_estimates() to skip a case that cannot finish in the time left (and goes on with
cheaper ones), and records each case's estimate beside its measured wall time so that the next
plan can be calibrated. The model, per case: for each backend that runs, its first calls (Flex's
torch.compile, cuDNN's plan for a new shape) plus (warm-up + 1 + repetitions) x (kernel time +
GPU spin) for the forward and for forward+backward, kernel times from the TFLOP/s measured for that
case in the reference run (or for the nearest case measured); plus the extras of this version (the
deterministic backward rows, the kernel trace, the eager slice reference). The quick run of
2026-11-29 fits this model to within 0.15 s per case (bench/README.md). Constants that no run has
measured yet are marked GUESS.
"""

import argparse
import glob
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# seconds, from bench/results/2026-11-29-h200-quick.log and -part2.log unless marked
START_S = 12.3          # process start to the first stage: torch import, environment, calibration
LAUNCH_S = 9.1          # launch-overhead stage (includes Flex's compile of the tiny shape)
PROBE_PROCESS_S = 5.7   # a fresh jitprobe process beyond its compiles: (75.5 - 6.9) s / 12 in part2
REPORT_S = 6.0          # GUESS: final JSON, markdown, plots (matplotlib) and the tar
FLEX_FIRST_FWD_S = 1.5  # Flex first forward call on a new shape or mod (1.2-2.1 measured)
FLEX_FIRST_FB_S = 4.3   # Flex first forward+backward call (3.7-4.8 measured)
FLEX_BWD_FAIL_S = 4.4   # Flex's failing rel_bias backward compile (quick run residual)
CUDNN_NEW_CONFIG_S = 1.9  # cuDNN's first fwd + fwd+bwd per (head dim, causal): 0.6 + 1.4 at
                          # S=4096; a new S or GQA with a known (D, causal) costs ~0.15 s
TRACE_FIRST_S = 3.0     # GUESS: torch.profiler / CUPTI start-up, once per process
TRACE_EACH_S = 0.15     # GUESS: one traced call and the profiler's bookkeeping
EAGER_SLICE_S = 2.0     # GUESS: fp32 materialised reference on one batch entry, plus fa4jit's runs
DET_SLOWDOWN = 1.3      # GUESS: deterministic backward time / default (the bench measures it)
# cold NVRTC times of the sm90 forward program (ms, fresh process, part2/quick probes)
COLD_FWD_MS = {None: 880, "plain": 880, "causal": 1400, "alibi": 2100, "softcap": 2830,
               "document": 1760, "rel_bias": 2100}
COLD_FWD_DEFAULT_MS = 2000
BWD90_OVER_FWD = 1.15   # sm90 backward main / forward NVRTC time (deviceless, this tree, rel_bias)
SM80_BWD_MS = 160 + 750 + 150  # bwd_pre + bwd_main + bwd_post (quick probes)
CPU_THREADS = 15        # of the H200 host's 16 cores, for the parallel precompile

# TFLOP/s when a case has no measurement (fwd, fwd+bwd); the sm90 backward is the sm80 one here
DEFAULT_TFLOPS = {"cudnn": (600, 500), "fa2": (330, 280), "flex": (380, 370),
                  "fa4jit-sm90": (500, 160), "fa4jit-sm80": (180, 135)}


def load_refs(paths=None):
    """{case id: {backend: result}} from reference runs (later files win)."""
    if paths is None:
        paths = sorted(glob.glob(os.path.join(HERE, "results", "*-h200*.json")))
    by = {}
    for p in paths:
        try:
            with open(p) as f:
                d = json.load(f)
        except (OSError, ValueError):
            continue
        if d.get("dry_run"):
            continue
        for c in d.get("cases", []):
            for b, r in c.get("results", {}).items():
                if r.get("status") == "ok":
                    by.setdefault(c["id"], {})[b] = r
    return by


def _tflops(refs, case, backend):
    r = refs.get(case.id, {}).get(backend)
    f, fb = (r or {}).get("fwd_tflops"), (r or {}).get("fwdbwd_tflops")
    if not f:  # the nearest measured case: the same group's S=4096 / mods' plain, else defaults
        for cid in (f"{case.group}:S=4096", "causal_seqlen:S=4096" if case.causal or
                    case.mask_mod else "plain_seqlen:S=4096"):
            r2 = refs.get(cid, {}).get(backend)
            if r2 and r2.get("fwd_tflops"):
                f, fb = r2.get("fwd_tflops"), r2.get("fwdbwd_tflops") or fb
                break
    d = DEFAULT_TFLOPS.get(backend, (300, 250))
    return f or d[0], fb or d[1]


def backends_of(case, paths):
    out = [p for p in ("cudnn", "fa2", "flex") if p in case.peers and (p != "flex" or case.flex)]
    return out + ["fa4jit-" + p for p in paths]


def case_estimate(case, refs, paths, reps, warmup=3, trace=True, first_trace=False,
                  seen_shapes=None, extras=True):
    """Seconds for one case (see the module doc)."""
    rf, rb = reps, max(3, reps // 2)
    wf, wb = warmup, max(1, warmup - 1)
    t = 0.3  # inputs, the dense pair count, kernel info, empty_cache
    shape = (case.D, case.causal)
    for b in backends_of(case, paths):
        f, fb = _tflops(refs, case, b)
        ms_f = case.flops_fwd / (f * 1e12) * 1e3
        ms_b = case.flops_fwdbwd / (fb * 1e12) * 1e3
        spin_f, spin_b = 1.0, 5.0
        t += (wf + 2 + rf) * (ms_f + spin_f) / 1e3
        if case.bwd:
            t += (wb + 2 + rb) * (ms_b + spin_b) / 1e3
        if b == "flex" and case.extra.get("fast_math"):
            pass  # Flex runs the exact soft-cap again: its compiled graph is reused (0.01 s)
        elif b == "flex":
            t += FLEX_FIRST_FWD_S + (FLEX_FIRST_FB_S if case.bwd else 0)
            if case.trainable:
                t += FLEX_BWD_FAIL_S + FLEX_FIRST_FB_S  # failed default tiles, then the retry
        if b == "cudnn" and (seen_shapes is None or shape not in seen_shapes):
            t += CUDNN_NEW_CONFIG_S
        if b.startswith("fa4jit"):
            if trace:
                t += TRACE_EACH_S
            if case.extra.get("det") and extras:
                t += (wb + 4 + rb) * (ms_b * DET_SLOWDOWN + spin_b) / 1e3 + 4 * ms_b / 1e3
            if case.trainable and extras:
                t += EAGER_SLICE_S
    if seen_shapes is not None:
        seen_shapes.add(shape)
    if first_trace:
        t += TRACE_FIRST_S
    return t


def case_estimates(cases, paths, reps, warmup=3, trace=True, ref_paths=None, extras=True):
    refs = load_refs(ref_paths)
    seen = set()
    out = {}
    for i, c in enumerate(cases):
        out[c.id] = case_estimate(c, refs, paths, reps, warmup, trace, first_trace=trace and i == 0,
                                  seen_shapes=seen, extras=extras)
    return out


def check(ref_json, log=print):
    """The model against a run's own log: each case's predicted seconds (that run's mode, paths,
    repetitions, without this version's extras) beside the wall time between its log lines."""
    import re
    sys.path.insert(0, HERE)
    import cases as cs
    with open(ref_json) as f:
        d = json.load(f)
    lines = d.get("log") or []
    starts = {}
    for ln in lines:
        m = re.match(r"\[\s*([\d.]+)s\] (\S+)  \(", ln)
        if m:
            starts[m.group(2)] = float(m.group(1))
    cl = [c for c in cs.build_cases(d.get("mode") == "quick", optional=True) if c.id in starts]
    cl.sort(key=lambda c: starts[c.id])
    ids = [c.id for c in cl]
    ends = [starts[i] for i in ids[1:]] + [None]
    est = case_estimates(cl, d["config"]["fa4jit_paths"], d["config"]["reps"], trace=False,
                         ref_paths=[ref_json], extras=False)
    diffs = []
    for c, e in zip(cl, ends):
        if e is None:
            continue
        got = e - starts[c.id]
        diffs.append(est[c.id] - got)
        log(f"  {c.id:<34} model {est[c.id]:6.1f} s   measured {got:6.1f} s")
    log(f"  sum: model {sum(est[i] for i in ids[:-1]):.1f} s, measured "
        f"{sum(est[i] for i in ids[:-1]) - sum(diffs):.1f} s over {len(diffs)} cases")


def _mod_fwd_s(m):
    return COLD_FWD_MS.get(m, COLD_FWD_DEFAULT_MS) / 1e3


def jit_estimate(mods):
    """Cold forward, cold backward (the sm90 backward main is the slowest program), both in
    parallel, hits; one probe process for all mods and one for the disk hits."""
    t = 2 * PROBE_PROCESS_S + 0.3
    for m in mods:
        f = _mod_fwd_s(m)
        b = max(f * BWD90_OVER_FWD, SM80_BWD_MS / 1e3)
        t += f + b + 1.1 * max(f, b) + 0.05
    return t


def precompile_jobs(cases, paths):
    """(path, mod key, flags) of the kernels run.py precompiles (its precompile_jobs, no torch)."""
    jobs = set()
    masks = set()
    for c in cases:
        mask = "causal" if c.causal else c.mask_mod
        key = (c.score_mod, None if c.varlen else mask, c.D, bool(c.extra.get("fast_math")))
        for p in paths:
            for bw in ((False, True) if c.bwd and not c.varlen else (c.bwd or bool(c.varlen),)):
                jobs.add((p, key, bw))
        if mask and not c.varlen:
            masks.add(mask)
    return sorted(jobs, key=str), sorted(masks)


def precompile_estimate(cases, paths):
    jobs, masks = precompile_jobs(cases, paths)
    cpu = 0.0
    longest = 0.0
    for p, (score, mask, D, _fm), bw in jobs:
        f = _mod_fwd_s(score or mask)
        j = f
        if bw:
            j += SM80_BWD_MS / 1e3 + (f * BWD90_OVER_FWD if p == "sm90" and D <= 128 else 0)
        cpu += j
        longest = max(longest, f * BWD90_OVER_FWD if bw else f)
    cpu += 0.3 * len(masks)
    return len(jobs) + len(masks), cpu, max(cpu / CPU_THREADS, longest) + 1.0


def plan(quick, paths=("sm90", "sm80"), reps=None, jit_mods=None, budget_s=None, trace=True,
         ref_paths=None, log=print, jit_budget_s=None):
    sys.path.insert(0, HERE)
    import cases as cs
    reps = reps or (10 if quick else 20)
    cl = cs.build_cases(quick)
    mods = jit_mods if jit_mods is not None else (cs.JIT_MODS_QUICK if quick else cs.JIT_MODS_FULL)
    est = case_estimates(cl, list(paths), reps, trace=trace, ref_paths=ref_paths)
    nj, cpu, pre = precompile_estimate(cl, list(paths))
    rows = [("start (torch import, environment, calibration)", START_S)]
    j = jit_estimate(mods)
    cap = jit_budget_s if jit_budget_s is not None else (60.0 if quick else 100.0)
    # the probe starts no mod after cap - 30 s; the last one and the disk-hit process follow
    rows.append((f"JIT figures, {len(mods)} mods (model {j:.0f} s, capped near {cap:.0f} s)",
                 min(j, cap)))
    rows.append(("launch overhead", LAUNCH_S))
    rows.append((f"precompile {nj} kernels ({cpu:.0f} CPU-s over {CPU_THREADS} threads)", pre))
    for c in cl:
        rows.append((c.id, est[c.id]))
    total = 0.0
    log(f"{'quick' if quick else 'full'} mode, paths {','.join(paths)}, {reps} reps, "
        f"{len(cl)} cases")
    for name, s in rows:
        total += s
        flag = "" if budget_s is None or total <= budget_s else "   <-- past the budget"
        log(f"  {name:<62} {s:6.1f} s   at {total:6.1f} s{flag}")
    total += REPORT_S
    log(f"  {'reports (JSON, markdown, plots, tar)':<62} {REPORT_S:6.1f} s   at {total:6.1f} s")
    return total, rows


def main(argv=None):
    ap = argparse.ArgumentParser(description="time plan of a benchmark run")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--ref", nargs="*", default=None, help="reference runs' JSON")
    ap.add_argument("--paths", default="sm90,sm80")
    ap.add_argument("--budget-s", type=float, default=None)
    ap.add_argument("--check", metavar="JSON", help="the model against that run's own log")
    a = ap.parse_args(argv)
    if a.check:
        check(a.check)
        return 0
    total, _ = plan(a.quick, tuple(a.paths.split(",")), budget_s=a.budget_s, ref_paths=a.ref)
    print(f"expected wall time {total:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
