"""One JIT measurement in a fresh process (run by run.py's JIT figures; no torch needed).

    python3 bench/jitprobe.py '{"dir": ..., "mod": "alibi" | null, "bwd": true, "trainable": [],
                                "repeat": 2}'

Creates an fa4jit context on device 0 with the given cache directory, then calls
Context.compile `repeat` times for the spec (D=128, bf16, forward or forward+backward, path auto),
keeping each kernel alive, and prints one JSON line: per call the wall time and the kernel info.
A fresh process per measurement keeps in-process tables (kernels, loaded programs) from making a
"cold" compile warm."""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import fa4jit  # noqa: E402
from fa4jit import _ctypes as C  # noqa: E402
from fa4jit._mods import shipped_mod_source  # noqa: E402


def main():
    a = json.loads(sys.argv[1])
    dev = a.get("device", 0)  # "none": deviceless, for testing the probe without a GPU
    ctx = fa4jit.Context(device=dev, cache=fa4jit.CacheConfig(dir=a["dir"], mode="rw"))
    arch = "sm_90a" if dev == "none" else None
    src = shipped_mod_source(a["mod"]) if a.get("mod") else None
    flags = C.FA4_COMPILE_FWD | (C.FA4_COMPILE_BWD if a.get("bwd") else 0)
    keep, out = [], []
    for _ in range(int(a.get("repeat", 1))):
        t0 = time.perf_counter()
        k = ctx.compile(source=src, dtype="bf16", head_dim=128, head_dim_v=128, flags=flags, arch=arch,
                        trainable=tuple(a.get("trainable", ())), source_name="mod")
        wall = (time.perf_counter() - t0) * 1e3
        keep.append(k)
        i = k.info
        out.append({"wall_ms": wall, "compile_ms": i.compile_ms, "lookup_ms": i.lookup_ms,
                    "cache_result": i.cache_result, "launchable": i.launchable, "path": i.path,
                    "programs": [{"name": p.name, "compile_ms": p.compile_ms,
                                  "registers": p.registers,
                                  "spill_bytes": p.spill_stores + p.spill_loads,
                                  "shared_dynamic": p.shared_dynamic, "cubin_size": p.cubin_size}
                                 for p in i.programs]})
    print("JITPROBE " + json.dumps(out))


if __name__ == "__main__":
    main()
