#!/usr/bin/env python3
"""fwd64_consumers3.py FA4JIT - the FA4JIT_SM90_FWD64_CONSUMERS=3 forward (three consumer
warpgroups with the intra-warpgroup overlap, src/kernels/sm90/mainloop.cuh's stash) at D 64,
bf16 and fp16, deviceless: fails unless plain attention and the index mask mods that fit
(causal, sliding_window, causal_sliding_window, prefix_lm) and ALiBi keep the three-consumer
build (the 512-thread launch bound: 128 registers in ptxas's report; a spilling build would have
fallen back to the two-consumer one, 168) with no spill, stack frame or serialized wgmma.
Exit 0: all as expected; 1: not; 2: usage or the command failed; 77: no NVRTC."""
import json
import os
import subprocess
import sys

MODS = ["causal", "sliding_window", "causal_sliding_window", "prefix_lm", "alibi"]


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    mods = [os.path.join(root, "mods", m + ".mod") for m in MODS]
    env = dict(os.environ, CUDA_CACHE_DISABLE="1", FA4JIT_SM90_FWD64_CONSUMERS="3")
    bad = 0
    for dt in ("bf16", "fp16"):
        cmd = [sys.argv[1], "compile", "--arch", "sm_90a", "--path", "sm90", "--no-cache", "--json", "--quiet",
               "--kernels", "fwd", "--head-dim", "64", "--dtype", dt, "--plain"] + mods
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if r.returncode != 0 and not r.stdout.strip().startswith("["):
            print("command failed:", " ".join(cmd), "\n", r.stdout, r.stderr)
            return 77 if "NVRTC" in r.stderr and "unavailable" in r.stderr else 2
        for m in json.loads(r.stdout):
            name = os.path.basename(m.get("mod", "?"))
            if not m.get("ok"):
                print(f"FAIL {dt} {name}: {m.get('error', 'compile failed')}")
                bad += 1
                continue
            for p in m["programs"]:
                ok = (p["registers"] == 128 and p["spill_stores"] == 0 and p["spill_loads"] == 0 and
                      p["stack_frame"] == 0 and p["wgmma_serialized"] == 0)
                print(f"{'ok  ' if ok else 'FAIL'} {dt} {name} {p['name']}: {p['registers']} registers, "
                      f"spills {p['spill_stores']}/{p['spill_loads']}, stack {p['stack_frame']}, "
                      f"serialized {p['wgmma_serialized']}")
                bad += not ok
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
