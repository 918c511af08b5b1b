"""JIT compile measurements in a fresh process (run by run.py's JIT figures; no torch needed).

    python3 bench/jitprobe.py '{"root": DIR, "mods": [{"mod": "alibi" | null, "trainable": []}],
                                "t_spawn": <parent's time.time()>}'
    python3 bench/jitprobe.py '{"disk_hits": [{"mod": ..., "trainable": [], "dir": DIR}], ...}'

Cold means cold for every cache that could serve a compile: run.py starts this process with
CUDA_CACHE_DISABLE=1 and a fresh CUDA_CACHE_PATH (NVRTC 13 otherwise serves a program compiled
before, by any process, from the driver's compute cache: no ptxas run, a ~50 ms 'compile'), and every
measurement gets its own fa4jit Context (the library's memory table is per Context) on its own fresh
cache directory. Per mod (D=128, bf16, path auto):

  cold_fwd     FA4_COMPILE_FWD on a fresh directory
  cold_bwd     FA4_COMPILE_BWD alone on another (the backward programs, in parallel threads)
  cold_fwdbwd  FWD | BWD on a third (all programs in parallel threads): what a training job waits for
  memory_hit   the same spec again in that Context
  disk_hit_ctx a new Context on the filled third directory, in this process (OS page cache warm)

With "disk_hits", the process only looks up filled directories (a disk hit in a new process, as a
second job on the same machine sees it). "stop_after_s": start no new mod after that many seconds. Before the first measurement the process compiles one
throwaway program (a block-mask kernel) so NVRTC's one-time start-up is not charged to the first mod;
its time is reported as process_first_compile_ms. Prints one line: JITPROBE <json>.
"""
import json
import os
import sys
import tempfile
import time

T0 = time.time()
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import fa4jit  # noqa: E402
from fa4jit import _ctypes as C  # noqa: E402
from fa4jit._mods import shipped_mod_source  # noqa: E402

T_IMPORT = time.time()


def kernel_record(k, wall_ms):
    i = k.info
    return {"wall_ms": wall_ms, "compile_ms": i.compile_ms, "lookup_ms": i.lookup_ms,
            "cache_result": i.cache_result, "launchable": i.launchable, "path": i.path,
            "programs": [{"name": p.name, "compile_ms": p.compile_ms, "registers": p.registers,
                          "spill_bytes": p.spill_stores + p.spill_loads,
                          "shared_dynamic": p.shared_dynamic, "cubin_size": p.cubin_size}
                         for p in i.programs]}


class Probe:
    def __init__(self, device):
        self.device = device  # "none": deviceless (testing the probe without a GPU)
        self.arch = "sm_90a" if device == "none" else None

    def context(self, d):
        return fa4jit.Context(device=self.device, cache=fa4jit.CacheConfig(dir=d, mode="rw"))

    def compile(self, ctx, src, flags, trainable):
        t0 = time.perf_counter()
        k = ctx.compile(source=src, dtype="bf16", head_dim=128, head_dim_v=128, flags=flags,
                        arch=self.arch, trainable=tuple(trainable), source_name="mod")
        return k, (time.perf_counter() - t0) * 1e3

    def measure(self, src, flags, trainable, d, repeat=1, keep=None):
        """Compile `repeat` times in one new Context on directory d."""
        ctx = self.context(d)
        out = []
        kernels = []
        for _ in range(repeat):
            try:
                k, ms = self.compile(ctx, src, flags, trainable)
            except Exception as e:  # noqa: BLE001
                out.append({"error": f"{type(e).__name__}: {str(e)[:400]}"})
                break
            kernels.append(k)
            out.append(kernel_record(k, ms))
        if keep is not None:
            keep.append((ctx, kernels))
        else:
            for k in kernels:
                k.destroy()
            ctx.close()
        return out


def main():
    a = json.loads(sys.argv[1])
    p = Probe(a.get("device", 0))
    root = a.get("root") or tempfile.mkdtemp(prefix="fa4jit-jitprobe-")
    res = {"pid": os.getpid(), "cuda_cache_disable": os.environ.get("CUDA_CACHE_DISABLE"),
           "cuda_cache_path": os.environ.get("CUDA_CACHE_PATH"),
           "spawn_to_start_s": (T0 - a["t_spawn"]) if a.get("t_spawn") else None,
           "import_s": T_IMPORT - T0, "mods": []}
    t = time.time()
    ctx0 = p.context(tempfile.mkdtemp(prefix="warmup-", dir=root))
    res["first_context_s"] = time.time() - t
    if a.get("disk_hits"):
        for m in a["disk_hits"]:
            src = shipped_mod_source(m["mod"]) if m.get("mod") else None
            r = p.measure(src, C.FA4_COMPILE_FWD | C.FA4_COMPILE_BWD, m.get("trainable", ()),
                          m["dir"])
            res["mods"].append({"mod": m.get("mod") or "plain", "disk_hit_process": r[0]})
    else:
        # NVRTC's one-time start-up, on a program no measurement uses
        t = time.perf_counter()
        try:
            k = ctx0.compile(source=shipped_mod_source("causal"), dtype="bf16", head_dim=128,
                             head_dim_v=128, flags=C.FA4_COMPILE_BLOCK_MASK, arch=p.arch,
                             source_name="mod")
            k.destroy()
            res["process_first_compile_ms"] = (time.perf_counter() - t) * 1e3
        except Exception as e:  # noqa: BLE001
            res["process_first_compile_error"] = f"{type(e).__name__}: {str(e)[:300]}"
        for m in a["mods"]:
            if a.get("stop_after_s") and time.time() - T0 > a["stop_after_s"]:
                res["stopped"] = f"time budget: {len(a['mods']) - len(res['mods'])} mods not run"
                break
            name, tr = m.get("mod"), m.get("trainable", ())
            src = shipped_mod_source(name) if name else None
            row = {"mod": name or "plain", "t_start_s": time.time() - T0}
            fwd, bwd = C.FA4_COMPILE_FWD, C.FA4_COMPILE_BWD
            row["cold_fwd"] = p.measure(src, fwd, tr, tempfile.mkdtemp(prefix="fwd-", dir=root))[0]
            row["cold_bwd"] = p.measure(src, bwd, tr, tempfile.mkdtemp(prefix="bwd-", dir=root))[0]
            d = tempfile.mkdtemp(prefix="both-", dir=root)
            keep = []
            both = p.measure(src, fwd | bwd, tr, d, repeat=2, keep=keep)
            row["cold_fwdbwd"] = both[0]
            row["memory_hit"] = both[1] if len(both) > 1 else both[0]
            row["disk_hit_ctx"] = p.measure(src, fwd | bwd, tr, d)[0]
            for ctx, ks in keep:
                for k in ks:
                    k.destroy()
                ctx.close()
            row["dir"] = d
            row["t_end_s"] = time.time() - T0
            res["mods"].append(row)
    ctx0.close()
    res["total_s"] = time.time() - T0
    print("JITPROBE " + json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
