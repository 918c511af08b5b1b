#!/usr/bin/env python3
"""fwd64_consumers3.py FA4JIT - the FA4JIT_SM90_FWD64_CONSUMERS=3 forward (three consumer
warpgroups with the intra-warpgroup overlap, src/kernels/sm90/mainloop.cuh's stash) at D 64,
bf16 and fp16, deviceless: fails unless plain attention and the index mask mods that fit
(causal, sliding_window, causal_sliding_window, prefix_lm) and ALiBi keep the three-consumer
build (the 512-thread launch bound: 128 registers in ptxas's report; a spilling build would have
fallen back to the two-consumer one, 168) with no spill, stack frame or serialized wgmma.
Exit 0: all as expected; 1: not; 2: usage or the command failed; 77: no NVRTC."""
import os
import sys

from cli_resources import check_programs, compile_json, mod_paths

MODS = ["causal", "sliding_window", "causal_sliding_window", "prefix_lm", "alibi"]


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    mods = mod_paths(MODS)
    env = dict(os.environ, CUDA_CACHE_DISABLE="1", FA4JIT_SM90_FWD64_CONSUMERS="3")
    bad = 0
    for dt in ("bf16", "fp16"):
        cmd = [sys.argv[1], "compile", "--arch", "sm_90a", "--path", "sm90", "--no-cache", "--json", "--quiet",
               "--kernels", "fwd", "--head-dim", "64", "--dtype", dt, "--plain"] + mods
        results, rc = compile_json(cmd, env)
        if results is None:
            return rc
        bad += check_programs(results, dt, 128)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
