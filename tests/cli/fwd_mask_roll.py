#!/usr/bin/env python3
"""fwd_mask_roll.py FA4JIT - the forward built with FA4JIT_SM90_FWD_MASK_ROLL=4 (softmax.cuh's
FA4_SM90_MASK_ROLL: a mask_mod evaluated in a loop unrolled 4 times, opt-in), deviceless, for the
shipped mask mods at D 128 bf16: fails unless each builds with 168 registers and no spill, stack
frame or serialized wgmma, and into a smaller forward cubin than the default build's (the knob's
point: less code, a shorter cold compile). Guards the knob against rotting
(its definition once went missing while its uses stayed).
Exit 0: all as expected; 1: not; 2: usage or the command failed; 77: no NVRTC."""
import os
import sys
import tempfile

from cli_resources import check_programs, compile_sm90, cli_check_args

MODS = ["causal", "document", "longformer", "dilated_window", "block_diagonal", "prefix_lm"]


def main():
    args = cli_check_args(sys.argv, __doc__, MODS)
    if args is None:
        return 2
    fa4jit, mods, base = args
    base.pop("FA4JIT_SM90_FWD_MASK_ROLL", None)
    bad = 0
    with tempfile.TemporaryDirectory() as d0, tempfile.TemporaryDirectory() as d1:
        ref, rc = compile_sm90(fa4jit, mods, base, d0)
        if ref is None:
            return rc
        rolled, rc = compile_sm90(fa4jit, mods, dict(base, FA4JIT_SM90_FWD_MASK_ROLL="4"), d1)
        if rolled is None:
            return rc
        bad += check_programs(rolled, "roll 4", 168)
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
