#!/usr/bin/env python3
"""fa4jit benchmarks side by side with cuDNN, FlashAttention-2 and FlexAttention (issue 7).

    python3 bench/run.py --quick --out $OUT     # on the GPU machine (< 8 min)
    python3 bench/run.py --out $OUT             # full run (< 10 min)
    python3 bench/run.py --dry-run              # anywhere: cases, FLOPs, report and plot writers
                                                # on fake timings (no GPU, torch optional)
    python3 bench/run.py --replot bench/results/<stem>.json   # tables and plots from a JSON

Writes <date>-<gpu>.json (everything measured), .md (tables), .log and -plots.tar (one PNG per
group) into --out (default bench/results). See bench/README.md for the method.
"""

import argparse
import datetime
import glob
import hashlib
import io
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CARRY = os.path.join(ROOT, "build-bench-carry")

TOL_FWD = 1e-2     # relative L2 error of the output against the reference (bf16)
TOL_GRAD = 2e-2    # of each gradient (dq, dk, dv, aux)


# ------------------------------------------------------------------------------- environment
def bootstrap():
    """Make `python3 bench/run.py` work alone on the device: the carried library and its libffi,
    CUDA's lib64 on the loader path (needs a re-exec: the loader reads it at start), python/."""
    want = []
    if os.path.isdir(CARRY):
        want.append(CARRY)
    if os.path.isdir("/usr/local/cuda/lib64"):
        want.append("/usr/local/cuda/lib64")
    cur = os.environ.get("LD_LIBRARY_PATH", "")
    missing = [d for d in want if d not in cur.split(":")]
    # compute cache off for the whole run: a program NVRTC 13 serves from the driver's compute
    # cache comes without ptxas' resource report (registers, spills), which every case records
    cache_env = "CUDA_CACHE_DISABLE" not in os.environ
    if (missing or cache_env) and not os.environ.get("FA4JIT_BENCH_REEXEC"):
        env = dict(os.environ)
        env.setdefault("CUDA_CACHE_DISABLE", "1")
        # Flex's first-call times stand beside fa4jit's cold compiles: cold for Inductor and
        # Triton too, whatever an earlier run on this machine left in their caches
        for var in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"):
            if var not in env:
                env[var] = tempfile.mkdtemp(prefix=var.split("_")[0].lower() + "-")
        env["LD_LIBRARY_PATH"] = ":".join(missing + ([cur] if cur else []))
        env["FA4JIT_BENCH_REEXEC"] = "1"
        os.execve(sys.executable, [sys.executable] + sys.argv, env)
    if "FA4JIT_LIBRARY" not in os.environ:
        lib = os.path.join(CARRY, "libfa4jit.so")
        if os.path.exists(lib):
            os.environ["FA4JIT_LIBRARY"] = lib
    py = os.path.join(ROOT, "python")
    if py not in sys.path:
        sys.path.insert(0, py)


class Tee:
    def __init__(self, stream):
        self.stream, self.buf = stream, io.StringIO()

    def write(self, s):
        self.stream.write(s)
        self.stream.flush()
        self.buf.write(s)

    def flush(self):
        self.stream.flush()


def log(*a):
    print(*a, flush=True)


def nvidia_smi():
    fields = ["name", "driver_version", "clocks.sm", "clocks.max.sm", "clocks.mem",
              "clocks.max.mem", "temperature.gpu", "power.draw", "power.limit", "pstate",
              "clocks_event_reasons.active"]
    for fs in (fields, fields[:-1]):
        try:
            r = subprocess.run(["nvidia-smi", "--query-gpu=" + ",".join(fs),
                                "--format=csv,noheader"], capture_output=True, text=True,
                               timeout=20)
        except (OSError, subprocess.TimeoutExpired) as e:
            return {"error": str(e)}
        if r.returncode == 0:
            vals = [v.strip() for v in r.stdout.strip().splitlines()[0].split(",")]
            return dict(zip(fs, vals))
    return {"error": (r.stderr or r.stdout).strip()[:300]}


def git_commit():
    """The build being measured: build-bench-carry/COMMIT when the carry recipe wrote it (the
    library there was built from that commit; the device's copy of the tree may carry stale git
    metadata), else git of this tree, else FA4JIT_BENCH_COMMIT."""
    try:
        with open(os.path.join(CARRY, "COMMIT")) as f:
            c = f.read().strip()
        if c:
            return c + " (build-bench-carry/COMMIT)"
    except OSError:
        pass
    try:
        r = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True,
                           text=True, timeout=10)
        if r.returncode == 0:
            d = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--", "src", "python",
                                "bench", "mods"], capture_output=True, text=True, timeout=10)
            return r.stdout.strip() + ("+dirty" if d.stdout.strip() else "")
    except (OSError, subprocess.TimeoutExpired):
        pass
    return os.environ.get("FA4JIT_BENCH_COMMIT", "unknown (no .git on this machine)")


def collect_env(torch):
    import ctypes
    import fa4jit
    env = {"host": platform.node(), "python": platform.python_version(),
           "cache_env": {k: os.environ.get(k) for k in ("CUDA_CACHE_DISABLE", "CUDA_CACHE_PATH",
                                                       "TORCHINDUCTOR_CACHE_DIR",
                                                       "TRITON_CACHE_DIR", "FA4JIT_CACHE_DIR")},
           "torch": torch.__version__, "torch_cuda": torch.version.cuda,
           "cudnn": torch.backends.cudnn.version(), "git_commit": git_commit()}
    try:
        import triton
        env["triton"] = triton.__version__
    except Exception as e:  # noqa: BLE001
        env["triton"] = f"unavailable ({e})"
    p = torch.cuda.get_device_properties(0)
    env["gpu"] = torch.cuda.get_device_name(0)
    env["sm_count"] = p.multi_processor_count
    env["capability"] = f"{p.major}.{p.minor}"
    env["gpu_memory_gib"] = round(p.total_memory / 2 ** 30, 1)
    lib = fa4jit._lib.load()
    env["fa4jit_version"] = fa4jit.library_version()
    env["fa4jit_library"] = fa4jit.library_path()
    env["fa4jit_kernel_fingerprint"] = lib.fa4_kernel_fingerprint().decode()
    mj, mn = ctypes.c_int(), ctypes.c_int()
    if lib.fa4_nvrtc_version(ctypes.byref(mj), ctypes.byref(mn)) == 0:
        env["nvrtc"] = f"{mj.value}.{mn.value}"
    with open(os.path.realpath(fa4jit.library_path()), "rb") as f:
        env["fa4jit_library_sha256"] = hashlib.sha256(f.read()).hexdigest()[:16]
    env["fa4jit_arch"] = fa4jit.context(0).arch
    return env


def gpu_slug(name):
    s = name.lower().replace("nvidia", "").strip()
    return "".join(ch if ch.isalnum() else "-" for ch in s).strip("-") or "gpu"


# ------------------------------------------------------------------------------------- results
class Results:
    def __init__(self, out_dir, stem, data):
        self.out_dir, self.stem, self.data = out_dir, stem, data
        os.makedirs(out_dir, exist_ok=True)

    def path(self, ext):
        return os.path.join(self.out_dir, self.stem + ext)

    def save(self, plots=False):
        try:
            self._save(plots)
        except Exception:  # noqa: BLE001  (a report bug must not end the run)
            print("error writing the reports:\n" + traceback.format_exc(limit=4), flush=True)

    def _save(self, plots):
        import report
        with open(self.path(".json"), "w") as f:
            json.dump(self.data, f, indent=1, default=str)
        with open(self.path(".md"), "w") as f:
            f.write(report.markdown(self.data, self.stem))
        if plots:
            report.plots_tar(self.data, self.path("-plots.tar"), self.stem)


def status(kind, **kw):
    d = {"status": kind}
    d.update(kw)
    return d


# ------------------------------------------------------------------------------- fa4jit pieces
def fa4_spec_for(case_or_mod, D=128):
    """(score_mod, mask_mod) names for fa4jit of a case."""
    c = case_or_mod
    mask = "causal" if c.causal else c.mask_mod
    return c.score_mod, (None if c.varlen else mask)


def precompile_jobs(cases, paths, torch):
    """Kernel specs the run will need, compiled ahead in worker threads (each thread its own
    fa4jit Context, so compiles run in parallel; the library's disk cache then serves the run)."""
    from fa4jit import _ctypes as C
    from fa4jit._mods import prepare
    import backends
    jobs = {}
    for c in cases:
        score, mask = fa4_spec_for(c)
        aux = {}
        if c.trainable:
            for n in c.trainable:
                aux[n] = torch.zeros(1, device="cuda", requires_grad=True)
        p = prepare(score, mask, aux)
        for path in paths:
            for bw in ((False, True) if c.bwd else (False,)):
                if c.varlen:
                    bw = True
                flags = C.FA4_COMPILE_FWD | (C.FA4_COMPILE_BWD if bw else 0)
                if c.extra.get("fast_math"):
                    flags |= 1 << 4  # FA4_COMPILE_FAST_MATH
                key = (p.source, c.D, path, flags, p.trainable)
                jobs[key] = dict(source=p.source, dtype="bf16", head_dim=c.D, head_dim_v=c.D,
                                 flags=flags, path=path, trainable=p.trainable, source_name="mod")
        if mask:
            pm = prepare(None, mask, None, keep_trivial_mask=True)
            key = (pm.source, 128, "auto", C.FA4_COMPILE_BLOCK_MASK, ())
            jobs[key] = dict(source=pm.source, dtype="bf16", head_dim=128, head_dim_v=128,
                             flags=C.FA4_COMPILE_BLOCK_MASK, path="auto", trainable=(),
                             source_name="mod")
    del backends
    return list(jobs.values())


def start_precompile(jobs, cache_dir):
    import concurrent.futures as cf
    import threading
    import fa4jit
    local = threading.local()

    def work(job):
        ctx = getattr(local, "ctx", None)
        if ctx is None:
            ctx = fa4jit.Context(device=0, cache=fa4jit.CacheConfig(dir=cache_dir, mode="rw"))
            local.ctx = ctx
        t0 = time.perf_counter()
        try:
            k = ctx.compile(**job)
            i = k.info
            return {"ok": True, "path": i.path, "cache": i.cache_result,
                    "wall_s": time.perf_counter() - t0}
        except Exception as e:  # noqa: BLE001
            return {"ok": False, "error": f"{type(e).__name__}: {str(e)[:400]}",
                    "job": {k: v for k, v in job.items() if k != "source"}}

    pool = cf.ThreadPoolExecutor(max_workers=max(1, min(12, (os.cpu_count() or 2) - 2)))
    futs = [pool.submit(work, j) for j in jobs]
    return pool, futs


TRAINABLE = {"rel_bias": ["bias"], "t5_bias": ["bias"], "head_scale": ["log_temp"]}


def cold_env(root):
    """Environment for a process whose compiles must be cold: NVRTC 13 serves programs compiled
    before (by any process) from the CUDA driver's compute cache unless it is disabled; a fresh
    CUDA_CACHE_PATH and FA4JIT_CACHE_DIR as well, in case a driver ignores the switch."""
    env = dict(os.environ)
    env["CUDA_CACHE_DISABLE"] = "1"
    env["CUDA_CACHE_PATH"] = tempfile.mkdtemp(prefix="cuda-cache-", dir=root)
    env["FA4JIT_CACHE_DIR"] = tempfile.mkdtemp(prefix="fa4jit-cache-", dir=root)
    return env


def jit_probe(spec, root, timeout):
    """Run bench/jitprobe.py in a fresh process with a cold environment; its JSON record."""
    spec = dict(spec, root=root, t_spawn=time.time())
    r = subprocess.run([sys.executable, os.path.join(HERE, "jitprobe.py"), json.dumps(spec)],
                       capture_output=True, text=True, timeout=timeout, env=cold_env(root))
    for line in r.stdout.splitlines():
        if line.startswith("JITPROBE "):
            return json.loads(line[len("JITPROBE "):])
    raise RuntimeError(f"jitprobe failed (rc {r.returncode}): {(r.stderr or r.stdout)[-600:]}")


def _jit_summary(row):
    def progs(rec):
        return {p["name"]: p for p in (rec or {}).get("programs", [])}
    s = {}
    for k in ("cold_fwd", "cold_bwd", "cold_fwdbwd", "memory_hit", "disk_hit_ctx",
              "disk_hit_process"):
        rec = row.get(k)
        if rec and "wall_ms" in rec:
            s[k + "_ms"] = rec["wall_ms"]
            s[k + "_result"] = rec["cache_result"]
        elif rec and rec.get("error"):
            s.setdefault("errors", {})[k] = rec["error"][:400]
    pb = progs(row.get("cold_fwdbwd"))
    s["slowest_program"] = max(pb, key=lambda n: pb[n]["compile_ms"]) if pb else None
    s["programs_fwdbwd"] = {n: {"compile_ms": p["compile_ms"], "registers": p["registers"],
                                "spill_bytes": p["spill_bytes"]} for n, p in pb.items()}
    # old field names, kept for the report and merges with earlier JSON
    if "cold_fwd_ms" in s and "cold_fwdbwd_ms" in s:
        s["cold_bwd_programs_ms"] = max([p["compile_ms"] for n, p in pb.items() if "bwd" in n]
                                        or [0])
        s["disk_hit_ms"] = s.get("disk_hit_process_ms", s.get("disk_hit_ctx_ms"))
        s["disk_hit_result"] = s.get("disk_hit_process_result", s.get("disk_hit_ctx_result"))
    return s


def jit_figures(mods, cache_root, log_fn, deadline):
    """Cold compile figures per mod (bench/jitprobe.py): all mods in one fresh process with the
    compute cache off and a fresh Context and directory per measurement (cold forward, cold
    backward, cold forward+backward in parallel, memory hit, disk hit from a new Context); then one
    more fresh process for the disk hits (a second job on the same machine). The probe is told
    the time left and the mods are in priority order; mods it did not reach are marked."""
    rows, meta = [], {}
    want = [{"mod": m, "trainable": TRAINABLE.get(m, [])} for m in mods]
    root = tempfile.mkdtemp(prefix="jit-", dir=cache_root)
    left = deadline - time.time()
    try:
        # the last ~30 s of the JIT budget are the disk-hit process's (~6 s on the H200) and
        # the last mod's: the probe starts no mod after that
        res = jit_probe({"mods": want, "stop_after_s": max(5.0, left - 30.0)}, root,
                        timeout=max(30.0, left + 30.0))
    except Exception as e:  # noqa: BLE001
        msg = f"{type(e).__name__}: {str(e)[:600]}"
        log_fn(f"  jit: probe ERROR {msg}")
        return [{"mod": m or "plain", "error": msg} for m in mods], {"error": msg}
    meta = {k: v for k, v in res.items() if k != "mods"}
    log_fn(f"  jit probe process: started {meta.get('spawn_to_start_s') or 0:.2f} s after spawn,"
           f" import {meta.get('import_s', 0):.2f} s, first context "
           f"{meta.get('first_context_s', 0):.2f} s, NVRTC start-up compile "
           f"{meta.get('process_first_compile_ms', 0):.0f} ms, CUDA_CACHE_DISABLE="
           f"{meta.get('cuda_cache_disable')}, total {meta.get('total_s', 0):.1f} s")
    by = {r["mod"]: r for r in res["mods"]}
    hits = [{"mod": w["mod"], "trainable": w["trainable"], "dir": by[w["mod"] or "plain"]["dir"]}
            for w in want if (w["mod"] or "plain") in by and by[w["mod"] or "plain"].get("dir")]
    if hits and deadline - time.time() > 8:
        try:
            dh = jit_probe({"disk_hits": hits}, root, timeout=60)
            meta["disk_hit_process"] = {k: v for k, v in dh.items() if k != "mods"}
            for r in dh["mods"]:
                if r["mod"] in by:
                    by[r["mod"]]["disk_hit_process"] = r["disk_hit_process"]
        except Exception as e:  # noqa: BLE001
            meta["disk_hit_process_error"] = f"{type(e).__name__}: {str(e)[:300]}"
    for m in mods:
        name = m or "plain"
        row = by.get(name)
        if row is None:
            rows.append({"mod": name, "error": "not reached (JIT time budget)"})
            continue
        row = dict(row, method="one fresh process, compute cache off, a new Context and cache "
                              "directory per measurement (bench/jitprobe.py)")
        row["summary"] = _jit_summary(row)
        s = row["summary"]
        rows.append(row)

        def ms(k):
            v = s.get(k + "_ms")
            return f"{v:8.1f}" if v is not None else "       -"
        log_fn(f"  jit {name:<22} cold fwd {ms('cold_fwd')} ms  bwd {ms('cold_bwd')} ms  "
               f"fwd+bwd {ms('cold_fwdbwd')} ms (slowest {s.get('slowest_program')})  memory "
               f"{s.get('memory_hit_ms', float('nan')):.3f} ms  disk "
               f"{s.get('disk_hit_ctx_ms', float('nan')):.2f} ms (new ctx) / "
               f"{s.get('disk_hit_process_ms', float('nan')):.2f} ms (new process)")
    return rows, meta


MASK_MODS_ONLY = {"causal", "causal_sliding_window", "sliding_window", "document", "prefix_lm",
                  "dilated_window", "block_diagonal", "longformer", "attention_sink"}


def launch_overhead(torch, timer, log_fn, with_flex=True, n=1000):
    """Host cost per call on a tiny problem (B=1, H=1, S=128, D=128): wall time of n back-to-back
    calls (host-bound), against the device time of one such kernel."""
    import ctypes
    import fa4jit
    from fa4jit import _ctypes as C
    from fa4jit._ops import _tensor
    out = {"shape": "B=1 H=1 S=128 D=128 bf16, forward", "calls": n}
    g = torch.Generator(device="cuda").manual_seed(1)
    q, k, v = (torch.randn(1, 1, 128, 128, device="cuda", dtype=torch.bfloat16, generator=g)
               for _ in range(3))

    def loop(fn):
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        return {"host_us_per_call": (t1 - t0) / n * 1e6, "wall_us_per_call": (t2 - t0) / n * 1e6}

    # fa4jit, Python API
    try:
        with torch.no_grad():
            out["fa4jit_python"] = loop(lambda: fa4jit.flex_attention(q, k, v))
    except Exception as e:  # noqa: BLE001
        out["fa4jit_python"] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
    # fa4jit, C API (one prebuilt fa4_fwd_args, fa4_launch_fwd through ctypes)
    try:
        kern = fa4jit.compile(head_dim=128, backward=False, device=0)
        lib = kern.ctx._lib
        o = torch.empty_like(q)
        lse = torch.empty(1, 1, 128, device="cuda", dtype=torch.float32)
        a = C.new(C.fa4_fwd_args)
        lib.fa4_fwd_args_init(ctypes.byref(a))
        a.q, a.k, a.v, a.o, a.lse = _tensor(q, 4), _tensor(k, 4), _tensor(v, 4), _tensor(o, 4), \
            _tensor(lse, 3)
        a.stream = torch.cuda.current_stream().cuda_stream
        h, ref = kern.handle, ctypes.byref(a)
        launch = lib.fa4_launch_fwd

        def c_call():
            st = launch(h, ref)
            if st:
                raise RuntimeError(f"fa4_launch_fwd returned {st}")
        out["fa4jit_c"] = loop(c_call)
        # device time of one tiny kernel: n launches queued behind a spin, timed by events
        timer._spin(60.0)
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(n):
            launch(h, ref)
        e1.record()
        torch.cuda.synchronize()
        out["fa4jit_gpu_us_per_kernel"] = e0.elapsed_time(e1) * 1e3 / n
    except Exception as e:  # noqa: BLE001
        out["fa4jit_c"] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
    # peers
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        import torch.nn.functional as F

        def sdpa():
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                return F.scaled_dot_product_attention(q, k, v)
        with torch.no_grad():
            out["cudnn_python"] = loop(sdpa)
    except Exception as e:  # noqa: BLE001
        out["cudnn_python"] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
    if with_flex:
        try:
            import backends
            fn = backends.flex_compiled()
            t0 = time.perf_counter()
            with torch.no_grad():
                fn(q, k, v)
            torch.cuda.synchronize()
            out["flex_first_call_s"] = time.perf_counter() - t0
            with torch.no_grad():
                out["flex_python"] = loop(lambda: fn(q, k, v))
        except Exception as e:  # noqa: BLE001
            out["flex_python"] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
    for key in ("fa4jit_python", "fa4jit_c", "cudnn_python", "flex_python"):
        r = out.get(key, {})
        if "wall_us_per_call" in r:
            log_fn(f"  launch {key:<14} host {r['host_us_per_call']:7.2f} us/call   wall "
                   f"{r['wall_us_per_call']:7.2f} us/call")
    if "fa4jit_gpu_us_per_kernel" in out:
        log_fn(f"  launch fa4jit tiny kernel on the GPU {out['fa4jit_gpu_us_per_kernel']:.2f} us")
    return out


# ------------------------------------------------------------------------------------- one case
def case_record(c):
    return {"id": c.id, "group": c.group, "label": c.label, "shape": c.shape_text(), "B": c.B,
            "Hq": c.Hq, "Hkv": c.Hkv, "S": c.S, "D": c.D, "causal": c.causal,
            "score_mod": c.score_mod, "mask_mod": c.mask_mod, "trainable": list(c.trainable),
            "varlen": c.varlen, "notes": c.notes, "pairs": c.pairs,
            "density": c.pairs / (c.B * c.S * c.S) if not c.varlen else c.pairs / (c.S * c.S),
            "flops_fwd": c.flops_fwd, "flops_fwdbwd": c.flops_fwdbwd, "results": {}}


def run_case(c, args, torch, timer, deadline, fa4_paths, precompiled, log_fn, hold=None):
    import backends
    rec = case_record(c)
    if hold is not None:  # the watchdog reports a case in flight with what it has so far
        hold["in_flight"] = rec
    res = rec["results"]
    inp = backends.Inputs(c, args.nsets)
    try:
        dense = backends.mask_pairs_dense(c, inp)
        if dense is not None:
            rec["pairs_dense_check"] = dense
            if dense != c.pairs:
                rec["pairs_warning"] = (f"closed-form pairs {c.pairs} != dense twin count "
                                        f"{dense}; FLOPs use the dense count")
                c.pairs = dense
                c.flops_fwd = 4.0 * c.Hq * c.D * dense
                c.flops_fwdbwd = 3.5 * c.flops_fwd
                rec.update(pairs=dense, flops_fwd=c.flops_fwd, flops_fwdbwd=c.flops_fwdbwd)
    except Exception as e:  # noqa: BLE001
        rec["pairs_dense_check"] = f"error: {type(e).__name__}: {e}"
    ref = {"fwd": None, "grads": None, "fwd_by": None, "grads_by": None}
    wf, rf = (args.warmup, args.reps)
    wb, rb = (max(1, args.warmup - 1), max(3, args.reps // 2))

    def tflops(flops, ms):
        return flops / (ms * 1e-3) / 1e12

    def slice_runner(name):
        """Batch entry 0 of the inputs, its eager float32 reference (computed once per case, in
        ref["eager"]) and fa4jit's runner on that slice."""
        sl = backends.SliceInputs(inp)
        if "eager" not in ref:
            ref["eager"] = backends.eager_reference(c, sl)
            torch.cuda.synchronize()
        return sl, backends.Fa4Runner(backends.slice_case(c), sl, name.split("-", 1)[1])

    def slice_check(name, r):
        """fa4jit's output and gradients on batch entry 0 against eager float32 (materialised
        scores, autograd) on the same slice; sets r's bwd_status to wrong when over the bounds."""
        try:
            sl, fr = slice_runner(name)
            o_ref, g_ref = ref["eager"]
            o, g = fr.fwdbwd(0)
            torch.cuda.synchronize()
            e_o = backends.rel_l2(o, o_ref)
            e_g = [backends.rel_l2(a, b) for a, b in zip(g, g_ref)]
            if len(g) != len(g_ref):
                e_g.append(float("inf"))
            r["slice_check"] = {"ref": "eager float32 (materialised scores, autograd), batch "
                                       "entry 0, all heads", "err_out": e_o, "err_grads": e_g,
                                "grads": ["dq", "dk", "dv"] + list(c.trainable)}
            r["err_grads"] = e_g
            r["ref_grads"] = "eager fp32 slice (b=0)"
            if not (e_o <= TOL_FWD and all(e <= TOL_GRAD for e in e_g)):
                r["bwd_status"] = "wrong"
                r["bwd_reason"] = (f"on batch entry 0 vs eager float32: out {e_o:.3g}, gradients "
                                   f"{[round(e, 4) for e in e_g]} (bounds {TOL_FWD}, {TOL_GRAD})")
            del o, g, fr, sl
        except Exception as e:  # noqa: BLE001
            r["bwd_status"] = "unverified"
            r["bwd_reason"] = f"no peer gradient; eager slice reference failed: " \
                              f"{type(e).__name__}: {str(e)[:300]}"
            log_fn(traceback.format_exc(limit=4))
            check_fatal(r["bwd_reason"])

    def slice_check_fwd(name, r):
        """Where no peer gave an output: fa4jit's forward on batch entry 0 against eager float32
        (materialised scores) on the same slice. Sets r's status (wrong / unverified) and returns
        whether the full-size forward may be timed."""
        try:
            sl, fr = slice_runner(name)
            o = fr.fwd(0)
            torch.cuda.synchronize()
            e_o = backends.rel_l2(o, ref["eager"][0])
            del o, fr, sl
        except Exception as e:  # noqa: BLE001
            r.update(status("unverified", reason=f"no peer output; eager slice reference failed: "
                                                 f"{type(e).__name__}: {str(e)[:300]}"))
            log_fn(traceback.format_exc(limit=4))
            check_fatal(r["reason"])
            return False
        r["err_fwd"] = e_o
        r["ref"] = "eager fp32 slice (b=0)"
        if not (e_o <= TOL_FWD):
            r.update(status("wrong", reason=f"forward rel. L2 error {e_o:.3g} > {TOL_FWD} vs eager "
                                            f"float32 on batch entry 0"))
            return False
        return True

    def deterministic_row(name, r, runner):
        """The same case with the deterministic backward: checked, bitwise repeatability of two
        runs, timed like the default backward."""
        d = {}
        r["deterministic"] = d
        try:
            dr = backends.Fa4Runner(c, inp, name.split("-", 1)[1], deterministic=True)
            _, g1 = dr.fwdbwd(0)
            _, g2 = dr.fwdbwd(0)
            torch.cuda.synchronize()
            d["bitwise_repeatable"] = all(torch.equal(a, b) for a, b in zip(g1, g2))
            if ref["grads"] is not None:
                d["err_grads"] = [backends.rel_l2(a, b) for a, b in zip(g1, ref["grads"])]
            _, n1 = runner.fwdbwd(0)
            _, n2 = runner.fwdbwd(0)
            torch.cuda.synchronize()
            d["default_bitwise_repeatable"] = all(torch.equal(a, b) for a, b in zip(n1, n2))
            del g1, g2, n1, n2
            if not all(e <= TOL_GRAD for e in d.get("err_grads", [float("inf")])):
                d["status"] = "wrong"
                return
            t = timer.measure(lambda i: dr.fwdbwd(i), inp.nsets, wb, rb)
            d["fwdbwd"] = t
            d["fwdbwd_tflops"] = tflops(c.flops_fwdbwd, t["median_ms"])
            d["slowdown"] = t["median_ms"] / r["fwdbwd"]["median_ms"] - 1.0
            d["status"] = "ok"
            if args.trace:
                d["launched"] = launched_kernels(dr, torch, True)
        except Exception as e:  # noqa: BLE001
            d["status"] = "error"
            d["error"] = f"{type(e).__name__}: {str(e)[:400]}"
            log_fn(traceback.format_exc(limit=4))
            check_fatal(d["error"])

    def run_backend(name, is_fa4):
        r = {}
        res[name] = r
        if not is_fa4 and name not in c.peers:
            r.update(status("n/a", reason="cannot express this variant"))
            return
        if name == "flex" and not c.flex:
            r.update(status("skipped", reason=c.extra.get(
                "flex_skip_reason", "quick mode: Flex (a compile per shape) not run here; the "
                                    "SDPA backends are the reference")))
            return
        left = deadline - time.time()
        if name == "flex" and left < 40:
            r.update(status("skipped", reason=f"time budget ({left:.0f} s left)"))
            return
        try:
            runner = backends.make_runner(name, c, inp)
        except backends.Unsupported as e:
            r.update(status("n/a", reason=str(e)))
            return
        except Exception as e:  # noqa: BLE001
            r.update(status("error", stage="setup", error=f"{type(e).__name__}: {str(e)[:500]}"))
            log_fn(traceback.format_exc(limit=3))
            return
        try:
            note = runner.prepare() if hasattr(runner, "prepare") else None
        except Exception as e:  # noqa: BLE001
            r.update(status("error", stage="setup", error=f"{type(e).__name__}: {str(e)[:500]}"))
            check_fatal(r["error"])
            return
        if note:
            r["note"] = note
        if hasattr(runner, "kernel_info"):
            try:
                r["kernel"] = runner.kernel_info()
            except Exception as e:  # noqa: BLE001
                r["kernel"] = {"error": str(e)[:200]}
        # forward: first call (Flex compiles here), correctness, then timing
        try:
            t0 = time.perf_counter()
            out = runner.fwd(0)
            torch.cuda.synchronize()
            r["first_call_fwd_s"] = time.perf_counter() - t0
            if ref["fwd"] is not None:
                r["err_fwd"] = backends.rel_l2(out, ref["fwd"])
                r["ref"] = ref["fwd_by"]
            ok = True
            if is_fa4:
                if ref["fwd"] is None and not c.varlen:
                    # no peer output (Flex skipped by the budget, or none can express the case):
                    # eager float32 on batch entry 0, fa4jit on the same slice
                    ok = slice_check_fwd(name, r)
                elif ref["fwd"] is None:
                    r.update(status("unverified", reason="no reference output (no peer ran)"))
                    ok = False
                elif not (r["err_fwd"] <= TOL_FWD):
                    r.update(status("wrong", reason=f"forward rel. L2 error {r['err_fwd']:.3g} "
                                                    f"> {TOL_FWD} vs {ref['fwd_by']}"))
                    ok = False
            elif ref["fwd"] is None:
                ref["fwd"], ref["fwd_by"] = out, name
            del out
            if ok:
                t = timer.measure(runner.fwd, inp.nsets, wf, rf)
                r["fwd"] = t
                r["fwd_tflops"] = tflops(c.flops_fwd, t["median_ms"])
                r.setdefault("status", "ok")
        except Exception as e:  # noqa: BLE001
            r.update(status("error", stage="forward", error=f"{type(e).__name__}: {str(e)[:500]}"))
            log_fn(traceback.format_exc(limit=4))
            check_fatal(r["error"])
            return
        if not c.bwd:
            r["bwd_status"] = None
            if is_fa4 and args.trace and r.get("status") == "ok":
                r["launched"] = launched_kernels(runner, torch, False)
            return
        if r.get("status") in ("wrong", "unverified"):
            return

        def bwd_once(runner):
            t0 = time.perf_counter()
            out, grads = runner.fwdbwd(0)
            torch.cuda.synchronize()
            r["first_call_fwdbwd_s"] = time.perf_counter() - t0
            if ref["grads"] is not None:
                errs = [backends.rel_l2(a, b) for a, b in zip(grads, ref["grads"])]
                if len(grads) != len(ref["grads"]):
                    errs.append(float("inf"))
                r["err_grads"] = errs
            del out
            good = True
            if is_fa4:
                if ref["grads"] is None and not c.varlen:
                    # no peer gradient: eager float32 on batch entry 0, fa4jit on the same slice
                    slice_check(name, r)
                    if r.get("bwd_status") in ("wrong", "unverified"):
                        good = False
                elif ref["grads"] is None:
                    r["bwd_status"] = "unverified"
                    good = False
                elif not all(e <= TOL_GRAD for e in r["err_grads"]):
                    r["bwd_status"] = "wrong"
                    r["bwd_reason"] = (f"gradient rel. L2 errors {[round(e, 4) for e in r['err_grads']]}"
                                       f" > {TOL_GRAD} vs {ref['grads_by']}")
                    good = False
            elif ref["grads"] is None:
                ref["grads"], ref["grads_by"] = grads, name
            del grads
            if good:
                t = timer.measure(lambda i: runner.fwdbwd(i), inp.nsets, wb, rb)
                r["fwdbwd"] = t
                r["fwdbwd_tflops"] = tflops(c.flops_fwdbwd, t["median_ms"])
                r["bwd_status"] = "ok"
                if is_fa4 and c.extra.get("det"):
                    deterministic_row(name, r, runner)
            if is_fa4 and args.trace:
                r["launched"] = launched_kernels(runner, torch, c.bwd)

        try:
            bwd_once(runner)
        except Exception as e:  # noqa: BLE001
            msg = f"{type(e).__name__}: {str(e)[:500]}"
            log_fn(traceback.format_exc(limit=4))
            retry = name == "flex" and ("out of resource" in msg or "No valid triton" in msg)
            if retry:
                # Flex's default backward tiles can exceed shared memory (seen with a captured
                # buffer that needs a gradient); once more with smaller backward tiles
                r["bwd_retry"] = (f"first attempt failed ({msg[:300]}); retried with "
                                  f"kernel_options {backends.FLEX_SMALL_BWD}")
                try:
                    bwd_once(backends.FlexRunner(c, inp, kernel_options=backends.FLEX_SMALL_BWD))
                    return
                except Exception as e2:  # noqa: BLE001
                    msg = f"{type(e2).__name__}: {str(e2)[:500]} (after retry)"
                    log_fn(traceback.format_exc(limit=4))
            r["bwd_status"] = "error"
            r["bwd_error"] = msg
            check_fatal(msg)

    def check_fatal(msg):
        """A sticky CUDA error (illegal address, launch failure) poisons the context for good."""
        low = msg.lower()
        if any(k in low for k in ("illegal memory access", "illegal address",
                                  "unspecified launch failure", "illegal instruction",
                                  "misaligned address", "device-side assert",
                                  "cuda_error_illegal", "cuda_error_launch_failed")):
            rec["fatal"] = msg

    for name in ("cudnn", "fa2", "flex"):
        if "fatal" not in rec:
            run_backend(name, False)
    for path in fa4_paths:
        if "fatal" in rec:
            break
        name = "fa4jit-" + path
        run_backend(name, True)
        if c.extra.get("fast_math"):
            continue
        if "fatal" not in rec:
            info = _fa4_kernel_info(c, path, torch)
            if info:
                res[name]["kernel"] = info
    del inp, ref
    if "fatal" not in rec:
        torch.cuda.empty_cache()
    return rec


def launched_kernels(runner, torch, bwd):
    """The kernels one call really launched (names and device time, from the CUDA profiler):
    which backward ran (the sm90 path may fall back to the sm80 backward) is read, not assumed.
    Device-side events only (the custom ops' CPU events are named fa4jit:: too)."""
    try:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            if bwd:
                runner.fwdbwd(0)
            else:
                runner.fwd(0)
            torch.cuda.synchronize()
        agg = {}
        for e in prof.events():
            if "CUDA" not in str(getattr(e, "device_type", "")) or "fa4_" not in e.name:
                continue
            a = agg.setdefault(e.name, {"name": e.name, "count": 0, "device_us": 0.0})
            a["count"] += 1
            a["device_us"] += float(e.time_range.elapsed_us())
        out = list(agg.values())  # in the order of their first launch
        return out or [{"error": "the trace shows no fa4 kernel"}]
    except Exception as e:  # noqa: BLE001
        return [{"error": f"{type(e).__name__}: {str(e)[:300]}"}]


def _fa4_kernel_info(c, path, torch):
    """Path and resources of the kernel the case ran (a memory-cache hit of fa4jit.compile with the
    same spec as the run's first call)."""
    try:
        import fa4jit
        score, mask = fa4_spec_for(c)
        aux = {n: torch.zeros(1, device="cuda", requires_grad=True) for n in c.trainable}
        k = fa4jit.compile(score_mod=score, mask_mod=mask, aux=aux, head_dim=c.D,
                           head_dim_v=c.D, backward=c.bwd, block_mask=False, device=0, path=path)
        i = k.info
        return {"path": i.path, "arch": i.arch, "key": i.key, "cache_result": i.cache_result,
                "programs": [{"name": p.name, "registers": p.registers,
                              "spill_bytes": p.spill_stores + p.spill_loads,
                              "shared_dynamic": p.shared_dynamic} for p in i.programs]}
    except Exception as e:  # noqa: BLE001
        return {"error": f"{type(e).__name__}: {str(e)[:300]}"}


def _has_flex(torch):
    try:
        from torch.nn.attention.flex_attention import flex_attention  # noqa: F401
        return True
    except ImportError:
        return False


def start_watchdog(res, tee, t_start, limit_s):
    """Past limit_s, write the reports from what was measured so far and end the process."""
    import threading

    def fire():
        data = res.data
        data["watchdog"] = (f"ended by the watchdog after {limit_s:.0f} s (budget + grace); the "
                            "work in flight did not finish")
        data["elapsed_s"] = time.time() - t_start
        fl = data.pop("in_flight", None)
        if fl is not None:
            fl = dict(fl, results=dict(fl.get("results", {})),
                      error="incomplete: the watchdog ended the run while this case was in "
                            "flight (results so far)")
            data["cases"].append(fl)
        print("\nWATCHDOG: " + data["watchdog"], flush=True)
        try:
            import report
            report.attach_flex_first_calls(data)
            data["log"] = tee.buf.getvalue().splitlines()[-400:]
            res.save(plots=True)
            with open(res.path(".log"), "w") as f:
                f.write(tee.buf.getvalue())
            print(report.summary_text(data), flush=True)
        finally:
            os._exit(3)

    t = threading.Timer(limit_s, fire)
    t.daemon = True
    t.start()
    return t


# ---------------------------------------------------------------------------------------- main
def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="the short set (< 8 min on an H200)")
    ap.add_argument("--out", default=None, help="output folder (default bench/results)")
    ap.add_argument("--dry-run", action="store_true",
                    help="no GPU: cases, FLOPs, report and plot writers on fake timings")
    ap.add_argument("--replot", metavar="JSON", nargs="+",
                    help="rewrite .md and plots from a results JSON; with several, merge them "
                         "(later runs replace a case or the JIT table they also measured) into "
                         "--stem")
    ap.add_argument("--budget-s", type=float, default=None,
                    help="start no case after this many seconds, nor one whose estimate "
                         "(bench/budget.py) does not fit (default: 390 quick, 450 full; with "
                         "--grace-s the watchdog writes the reports and ends a quick run by 445 s "
                         "and a full run by 505 s)")
    ap.add_argument("--paths", default="sm90,sm80",
                    help="fa4jit kernel paths to run, in this order (default sm90,sm80)")
    ap.add_argument("--grace-s", type=float, default=55.0,
                    help="after budget + grace seconds a watchdog writes what was measured "
                         "(JSON, markdown, plots) and ends the process (a hung kernel or compile)")
    ap.add_argument("--only", default=None, help="run only cases whose id contains this text")
    ap.add_argument("--cases", default=None,
                    help="run only these case ids (comma-separated, as in the JSON)")
    ap.add_argument("--jit-mods", default=None,
                    help="mods for the JIT figures, comma-separated ('plain' = no mod)")
    ap.add_argument("--no-jit", action="store_true", help="skip the JIT compile figures")
    ap.add_argument("--jit-budget-s", type=float, default=None,
                    help="seconds for the JIT figures (default 60 quick, 100 full); the probe "
                         "starts no new mod after that")
    ap.add_argument("--no-launch", action="store_true", help="skip the launch-overhead figures")
    ap.add_argument("--no-trace", dest="trace", action="store_false",
                    help="do not record the kernels each fa4jit call launched (torch.profiler)")
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--nsets", type=int, default=3, help="input buffer sets rotated in timing")
    ap.add_argument("--check-env", action="store_true",
                    help="load the library and torch, print versions and exit (a smoke test)")
    ap.add_argument("--stem", default=None, help="file name stem (default <date>-<gpu>)")
    a = ap.parse_args(argv)
    if a.reps is None:
        a.reps = 10 if a.quick else 20
    if a.budget_s is None:
        a.budget_s = 390.0 if a.quick else 450.0
    if a.jit_budget_s is None:
        a.jit_budget_s = 60.0 if a.quick else 100.0
    return a


def main(argv=None):
    args = parse_args(argv)
    sys.path.insert(0, HERE)
    import cases as cs
    import report
    if args.replot:
        runs = []
        for pth in args.replot:
            with open(pth) as f:
                runs.append(json.load(f))
        data = report.merge(runs, [os.path.basename(p) for p in args.replot]) \
            if len(runs) > 1 else runs[0]
        out = args.out or os.path.dirname(os.path.abspath(args.replot[0]))
        os.makedirs(out, exist_ok=True)
        stem = args.stem or os.path.splitext(os.path.basename(args.replot[0]))[0]
        if len(runs) > 1:
            with open(os.path.join(out, stem + ".json"), "w") as f:
                json.dump(data, f, indent=1, default=str)
        with open(os.path.join(out, stem + ".md"), "w") as f:
            f.write(report.markdown(data, stem))
        for p in report.write_plots(data, out, stem):
            print("wrote", p)
        return 0
    if args.dry_run:
        import dryrun
        return dryrun.run(args)

    t_start = time.time()
    deadline = t_start + args.budget_s
    bootstrap()
    if args.check_env:
        import fa4jit
        print("fa4jit library", fa4jit.library_path(), fa4jit.library_version(),
              "fingerprint", fa4jit._lib.load().fa4_kernel_fingerprint().decode(),
              "CUDA_CACHE_DISABLE", os.environ.get("CUDA_CACHE_DISABLE"))
        try:
            import torch
            print("torch", torch.__version__, "cuda", torch.cuda.is_available(),
                  "flex", _has_flex(torch))
        except ImportError as e:
            print("torch not importable:", e)
        return 0
    tee = Tee(sys.stdout)
    sys.stdout = tee
    import torch
    if not torch.cuda.is_available():
        print("error: no CUDA device visible to torch; use --dry-run on a machine without a GPU",
              file=sys.stderr)
        return 2
    import backends
    from timing import Timer
    now = datetime.datetime.now(datetime.timezone.utc)
    env = collect_env(torch)
    env["nvidia_smi_before"] = nvidia_smi()
    stem = args.stem or f"{now:%Y-%m-%d}-{gpu_slug(env['gpu'])}" + ("-quick" if args.quick else "")
    out_dir = args.out or os.path.join(HERE, "results")
    all_cases = cs.build_cases(args.quick, optional=bool(args.cases))
    if args.only:
        all_cases = [c for c in all_cases if args.only in c.id]
    if args.cases:
        want = [x.strip() for x in args.cases.split(",") if x.strip()]
        unknown = [w for w in want if w not in {c.id for c in all_cases}]
        if unknown:
            print(f"error: unknown case ids {unknown}; known: {[c.id for c in all_cases]}",
                  file=sys.stderr)
            return 2
        all_cases = [c for c in all_cases if c.id in want]
    paths = [p.strip() for p in args.paths.split(",") if p.strip()]
    data = {"schema": "fa4jit-bench/1", "date_utc": now.isoformat(timespec="seconds"),
            "mode": "quick" if args.quick else "full", "dry_run": False, "env": env,
            "argv": sys.argv[1:],
            "config": {"tol_fwd": TOL_FWD, "tol_grad": TOL_GRAD, "reps": args.reps,
                       "warmup": args.warmup, "nsets": args.nsets, "budget_s": args.budget_s,
                       "fa4jit_paths": paths, "dtype": "bf16",
                       "flops": "fwd = 4*B*Hq*pairs*D (pairs: S^2 dense, S^2/2 causal, exact "
                                "count for mask mods); fwd+bwd = 3.5 x fwd"},
            "cases": [], "jit": [], "launch": None, "skipped": [], "log": []}
    res = Results(out_dir, stem, data)
    start_watchdog(res, tee, t_start, args.budget_s + args.grace_s)
    log(f"fa4jit bench ({data['mode']}) on {env['gpu']} driver "
        f"{env['nvidia_smi_before'].get('driver_version', '?')}, torch {env['torch']}, triton "
        f"{env.get('triton')}, fa4jit {env['fa4jit_version']} fingerprint "
        f"{env['fa4jit_kernel_fingerprint']}; {len(all_cases)} cases, budget {args.budget_s:.0f} s")
    timer = Timer(torch)
    data["config"]["spin_cycles_per_ms"] = timer.calibrate()
    cache_root = tempfile.mkdtemp(prefix="fa4jit-bench-")
    import fa4jit

    # 1. JIT figures (sequential, on a quiet machine)
    if not args.no_jit:
        mods = cs.JIT_MODS_QUICK if args.quick else cs.JIT_MODS_FULL
        if args.jit_mods:
            mods = [None if m.strip() == "plain" else m.strip()
                    for m in args.jit_mods.split(",") if m.strip()]
        log(f"[{time.time() - t_start:6.1f}s] JIT compile figures for {len(mods)} mods "
            f"(at most {args.jit_budget_s:.0f} s)")
        data["jit"], data["jit_probe"] = jit_figures(
            mods, cache_root, log, min(deadline, time.time() + args.jit_budget_s))
        res.save()
    main_cache = os.path.join(cache_root, "main")
    fa4jit.configure_cache(dir=main_cache, mode="rw")

    # 2. launch overhead
    if not args.no_launch:
        log(f"[{time.time() - t_start:6.1f}s] launch overhead")
        try:
            data["launch"] = launch_overhead(torch, timer, log)
        except Exception as e:  # noqa: BLE001
            data["launch"] = {"error": f"{type(e).__name__}: {e}"}
        res.save()

    # 3. the run's fa4jit kernels compiled ahead in parallel threads (before any timing, so the
    #    compiles do not compete with Flex's first calls for the CPU)
    jobs = precompile_jobs(all_cases, paths, torch)
    log(f"[{time.time() - t_start:6.1f}s] precompiling {len(jobs)} fa4jit kernels in parallel")
    t_pre = time.time()
    pool, futs = start_precompile(jobs, main_cache)
    pre = [f.result() for f in futs]
    pool.shutdown(wait=True)
    data["precompile"] = {"jobs": len(pre), "wall_s": time.time() - t_pre,
                          "failed": [p for p in pre if not p.get("ok")],
                          "paths": sorted({p.get("path") for p in pre if p.get("ok")})}
    log(f"[{time.time() - t_start:6.1f}s] precompiled in {data['precompile']['wall_s']:.1f} s; "
        f"paths {data['precompile']['paths']}, {len(data['precompile']['failed'])} failed")
    for f in data["precompile"]["failed"][:6]:
        log(f"    precompile failed: {f.get('error', '')[:300]} {f.get('job')}")
    res.save()

    # 4. the cases, in priority order; a case whose estimate (bench/budget.py, scaled by how the
    #    cases so far compared with theirs) does not fit in the time left is skipped, and the run
    #    goes on with cheaper ones; one that fits only without Flex runs without Flex
    try:
        import budget
        import dataclasses
        est = budget.case_estimates(all_cases, paths, args.reps, args.warmup, args.trace)
        est_noflex = budget.case_estimates(
            [dataclasses.replace(c, flex=False) for c in all_cases], paths, args.reps,
            args.warmup, args.trace)
    except Exception as e:  # noqa: BLE001
        log(f"  no case estimates ({type(e).__name__}: {e}); only the 20 s rule applies")
        est, est_noflex = {}, {}
    spent_est, spent = 0.0, 0.0
    if est:
        log(f"[{time.time() - t_start:6.1f}s] {len(all_cases)} cases planned at "
            f"{sum(est.values()):.0f} s (bench/budget.py); {deadline - time.time():.0f} s left")
    for c in all_cases:
        left = deadline - time.time()
        scale = min(2.0, max(0.7, spent / spent_est)) if spent_est > 20 else 1.0
        need = est.get(c.id, 0.0) * scale
        if left < 20 or need > left:
            need2 = est_noflex.get(c.id, 0.0) * scale
            if c.flex and "flex" in c.peers and left >= 20 and need2 <= left:
                c.flex = False
                c.extra["flex_skip_reason"] = (f"time budget: {left:.0f} s left, the case with "
                                               f"Flex needs ~{need:.0f} s")
            else:
                data["skipped"].append({"id": c.id, "reason": f"time budget ({left:.0f} s left,"
                                                              f" ~{need:.0f} s needed)"})
                continue
        t_case = time.time()
        log(f"[{time.time() - t_start:6.1f}s] {c.id}  ({c.shape_text()}, "
            f"{c.flops_fwd / 1e12:.2f} TFLOP fwd)")
        try:
            rec = run_case(c, args, torch, timer, deadline, paths, None, log, hold=data)
        except Exception as e:  # noqa: BLE001
            rec = case_record(c)
            rec["error"] = f"{type(e).__name__}: {str(e)[:600]}"
            log(traceback.format_exc(limit=5))
            torch.cuda.empty_cache()
        data.pop("in_flight", None)
        rec["wall_s"] = time.time() - t_case
        if c.id in est:
            rec["est_s"] = est_noflex[c.id] if not c.flex and "flex_skip_reason" in c.extra \
                else est[c.id]
            spent_est += rec["est_s"]
            spent += rec["wall_s"]
        data["cases"].append(rec)
        log("    " + report.case_line(rec) + f"  [{rec['wall_s']:.1f} s, estimate "
            f"{rec.get('est_s', float('nan')):.1f} s]")
        res.save()
        if rec.get("fatal"):
            data["fatal"] = (f"stopped after {c.id}: a sticky CUDA error ({rec['fatal'][:300]}) "
                             "leaves the CUDA context unusable")
            log("FATAL: " + data["fatal"])
            for c2 in all_cases[all_cases.index(c) + 1:]:
                data["skipped"].append({"id": c2.id, "reason": "CUDA context lost"})
            break
    # Flex first-call times next to fa4jit's compile times, for the same mod
    report.attach_flex_first_calls(data)
    data["env"]["nvidia_smi_after"] = nvidia_smi()
    data["elapsed_s"] = time.time() - t_start
    data["log"] = tee.buf.getvalue().splitlines()[-400:]
    res.save(plots=True)
    with open(res.path(".log"), "w") as f:
        f.write(tee.buf.getvalue())
    log(report.summary_text(data))
    log(f"done in {data['elapsed_s']:.0f} s: {res.path('.json')}, .md, .log, -plots.tar")
    return 0


if __name__ == "__main__":
    sys.exit(main())
