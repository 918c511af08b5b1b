#!/usr/bin/env python3
"""fwd_mask_roll.py FA4JIT - the forward built with FA4JIT_SM90_FWD_MASK_ROLL=4 (softmax.cuh's
FA4_SM90_MASK_ROLL: a mask_mod evaluated in a loop unrolled 4 times, opt-in), deviceless, for the
shipped mask mods at D 128 bf16: fails unless each builds with 168 registers and no spill, stack
frame or serialized wgmma, and into a smaller forward cubin than the default build's (the knob's
point: less code, a shorter cold compile). Guards the knob against rotting
(its definition once went missing while its uses stayed).
Exit 0: all as expected; 1: not; 2: usage or the command failed; 77: no NVRTC."""
import json
import os
import subprocess
import sys
import tempfile

MODS = ["causal", "document", "longformer", "dilated_window", "block_diagonal", "prefix_lm"]


def compile_all(fa4jit, mods, env, out):
    cmd = [fa4jit, "compile", "--arch", "sm_90a", "--path", "sm90", "--no-cache", "--json", "--quiet",
           "--kernels", "fwd", "--out", out] + mods
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0 and not r.stdout.strip().startswith("["):
        print("command failed:", " ".join(cmd), "\n", r.stdout, r.stderr)
        return None, (77 if "NVRTC" in r.stderr and "unavailable" in r.stderr else 2)
    return json.loads(r.stdout), 0


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    mods = [os.path.join(root, "mods", m + ".mod") for m in MODS]
    base = dict(os.environ, CUDA_CACHE_DISABLE="1")
    base.pop("FA4JIT_SM90_FWD_MASK_ROLL", None)
    bad = 0
    with tempfile.TemporaryDirectory() as d0, tempfile.TemporaryDirectory() as d1:
        ref, rc = compile_all(sys.argv[1], mods, base, d0)
        if ref is None:
            return rc
        rolled, rc = compile_all(sys.argv[1], mods, dict(base, FA4JIT_SM90_FWD_MASK_ROLL="4"), d1)
        if rolled is None:
            return rc
        for m in rolled:
            name = os.path.basename(m.get("mod", "?"))
            if not m.get("ok"):
                print(f"FAIL {name}: {m.get('error', 'compile failed')}")
                bad += 1
                continue
            for p in m["programs"]:
                ok = (p["registers"] == 168 and p["spill_stores"] == 0 and p["spill_loads"] == 0 and
                      p["stack_frame"] == 0 and p["wgmma_serialized"] == 0)
                print(f"{'ok  ' if ok else 'FAIL'} {name} {p['name']}: {p['registers']} registers, "
                      f"spills {p['spill_stores']}/{p['spill_loads']}, stack {p['stack_frame']}, "
                      f"serialized {p['wgmma_serialized']}")
                bad += not ok
        # the rolled cubins are smaller than the default ones, mod by mod
        for m in MODS:
            f0 = [f for f in os.listdir(d0) if f.startswith(m + ".fwd")]
            f1 = [f for f in os.listdir(d1) if f.startswith(m + ".fwd")]
            if len(f0) != 1 or len(f1) != 1:
                print(f"FAIL {m}: expected one forward cubin in each build, found {f0} and {f1}")
                bad += 1
                continue
            s0 = os.path.getsize(os.path.join(d0, f0[0]))
            s1 = os.path.getsize(os.path.join(d1, f1[0]))
            ok = s1 < s0
            print(f"{'ok  ' if ok else 'FAIL'} {m}: forward cubin {s0} -> {s1} bytes")
            bad += not ok
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
