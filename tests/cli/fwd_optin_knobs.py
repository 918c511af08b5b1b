#!/usr/bin/env python3
"""fwd_optin_knobs.py FA4JIT - session 25's opt-in forward knobs (softmax.cuh), switched on in a copy
of the kernel sources (FA4JIT_KERNEL_DIR), deviceless, bf16: FA4_SM90_FWD_TILE_RUN 8 (rel_bias's
tile test once per run of key tiles) and FA4_SM90_RELT_FOLD 1 (t5_bias's one-value relative tables
folded into the softmax). Fails unless rel_bias's and t5_bias's forwards build at D 64 and 128 with
168 registers and no spill, stack frame or serialized wgmma, with no spill fallback kept, and into a
cubin that differs from the default build's (the knob reaches the code). Guards the knobs against
rotting until a GPU run decides their default.
Exit 0: all as expected; 1: not; 2: usage or the command failed; 77: no NVRTC."""
import os
import re
import shutil
import sys
import tempfile

from cli_resources import check_programs, compile_fwd, fwd_check_args

KNOBS = {"FA4_SM90_FWD_TILE_RUN": ("0", "8"), "FA4_SM90_RELT_FOLD": ("0", "1")}
MODS = ["rel_bias", "t5_bias"]


def kernels_dir():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return os.path.join(root, "src", "kernels")


def main():
    args = fwd_check_args(sys.argv, __doc__, MODS)
    if args is None:
        return 2
    fa4jit, mods, base = args
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        kd = os.path.join(tmp, "kernels")
        shutil.copytree(kernels_dir(), kd)
        sm = os.path.join(kd, "sm90", "softmax.cuh")
        with open(sm) as f:
            text = f.read()
        for knob, (off, on) in KNOBS.items():
            pat = rf"^#define {knob} {off}$"
            if len(re.findall(pat, text, flags=re.M)) != 1:
                print(f"FAIL softmax.cuh: no single '#define {knob} {off}' (the default moved? update this test)")
                return 1
            text = re.sub(pat, f"#define {knob} {on}", text, flags=re.M)
        with open(sm, "w") as f:
            f.write(text)
        for d in (64, 128):
            d0, d1 = os.path.join(tmp, f"def{d}"), os.path.join(tmp, f"on{d}")
            os.makedirs(d0)
            os.makedirs(d1)
            ref, rc = compile_fwd(fa4jit, mods, base, d0, ("--head-dim", str(d)))
            if ref is None:
                return rc
            on, rc = compile_fwd(fa4jit, mods, dict(base, FA4JIT_KERNEL_DIR=kd), d1, ("--head-dim", str(d)))
            if on is None:
                return rc
            bad += check_programs(on, f"knobs on D {d}", 168)
            for m in on:
                if m.get("fallbacks"):
                    print(f"FAIL knobs on D {d} {m['mod'].rsplit('/', 1)[-1]}: kept spill fallbacks {m['fallbacks']}")
                    bad += 1
            for name in MODS:
                a = os.path.join(d0, f"{name}.fwd.sm_90a.cubin")
                b = os.path.join(d1, f"{name}.fwd.sm_90a.cubin")
                if not (os.path.exists(a) and os.path.exists(b)):
                    print(f"FAIL D {d} {name}: cubin missing ({a}, {b})")
                    bad += 1
                    continue
                with open(a, "rb") as fa, open(b, "rb") as fb:
                    same = fa.read() == fb.read()
                print(f"{'FAIL' if same else 'ok  '} D {d} {name}: the knobs' cubin "
                      f"{'is the default one' if same else 'differs from the default one'}")
                bad += same
    print(f"fwd opt-in knobs: {bad} problem(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
