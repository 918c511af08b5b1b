#!/usr/bin/env python3
"""optin_knobs.py FA4JIT - the sm90 kernel knobs that are not at their measured best for every mod,
switched away from their defaults in a copy of the kernel sources (FA4JIT_KERNEL_DIR), deviceless,
bf16, so that the A/B switch stays buildable. The passes (PASSES below):
 1. together: FA4_SM90_FWD_TILE_RUN 8 -> 0 (softmax.cuh: rel_bias's tile test once per run of key
    tiles; default since session 26), FA4_SM90_RELT_FOLD 0 -> 1 (t5_bias's one-value tables folded
    into the softmax; opt-in), FA4_SM90_BWD_SPLIT_ADD 2 -> 0 (bwd_consumer.cuh: the split score stage
    for tile-add mods; default since session 26) and FA4_SM90_BWD_TILE_SAT 2 -> 0 (the backward's
    tile test per run of steps again instead of two boxes per warp and head; default since session
    30): rel_bias and t5_bias, forward at D 64 and 128, backward main at D 128 fixed and trainable;
 2. FA4_SM90_RELT_REUSE 0 -> 1 (t5_bias's table refilled from the last one's shared entries; opt-in,
    off where RELT_FOLD or RELT_GARR is on) with FA4_SM90_RELT_GARR 1 -> 0: t5_bias's forward at D
    64, 128 and 256 (the passes below on t5_bias's forward use the same builds);
 3. FA4_SM90_RELT_BOUNDS 1 -> 0 (no table where the key tile lies in a region of one g, found per
    call by fa4_sm90_rel_bounds; default since session 28);
 4. FA4_SM90_RELT_BFOLD 0 -> 1 (those tiles folded into the softmax; opt-in);
 5. FA4_SM90_RELT_GARR 1 -> 2 (the other tiles' tables copied by each warp for its own rows, without
    the warpgroup barrier: the default in sessions 30-33, racecheck's hazards; 1, the copy behind
    the barrier, is the default since session 34);
 6. FA4_SM90_RELT_GARR 1 -> 0 (no array: the tables evaluated);
 7. FA4_SM90_RB_UNIFORM 1 -> 0 (the bounds' answers not broadcast from lane 0; default since 29);
 8. FA4_SM90_DESC_HI_OPAQUE 0 -> 1 (ptx90.cuh: the wgmma descriptors' high word opaque to ptxas;
    opt-in): the first pass's builds;
 9. FA4_SM90_BWD_TILE_SAT 2 -> 1 (the boxes only where the test calls a helper: t5_bias): rel_bias's
    backward main at D 128, fixed and trainable;
10. FA4_SM90_RELT_ALL 1 -> 0 (config.cuh: rel_bias's forward per warp and tile in its tile form
    instead of t5_bias's table path; default up to D 128 since session 31, at D 256 since session
    32): rel_bias's forward at D 64, 128 and 256;
11. FA4_SM90_BWD_GDEFER 1 -> 0 (bwd_consumer.cuh: a trainable tile-add read's gradient committed
    at every tile step instead of held per lane across them; default since session 31): rel_bias's
    and t5_bias's trainable backward main at D 128;
12. FA4_SM90_PRESCALE_ON 1 -> 0 (config.cuh: soft-cap's score stages divide by the cap per score
    instead of multiplying q.k by scale / cap once; default since session 32, not in the forward
    at D 256): softcap's forward and backward main at D 128;
13. FA4_SM90_BWD_REL_SCR 1 -> 0 (bwd_consumer.cuh: a trainable relative table's band terms
    committed one by one instead of through the warp's scratch; default since session 33; it also
    turns REL_SHFL's default off): rel_bias's and t5_bias's trainable backward main at D 128;
14. FA4_SM90_BWD_REL_SHFL 0 -> 1 (g shared by shuffles from 4 evaluations a step; default only
    where g is costly and the table trainable, t5_bias): rel_bias's backward main at D 128,
    trainable;
15. FA4_SM90_BWD_STG128 1 -> 0 (bwd_common.cuh: dK and dV in 4-byte stores instead of 16-byte ones
    after a quad transpose; default since session 34): rel_bias's backward main at D 128;
16. FA4_SM90_BWD_STEPS_EARLY 0 -> 1 (bwd_steps80.cuh: the default mode's 80-query step table built
    while bwd_pre runs; opt-in, measured slower in session 35): causal's 80-query backward program
    at D 128;
17. FA4_SM90_BWD_EPI_FIRST 0 -> 1 (bwd_main.cu: dK / dV out before the last dQ wait in default-mode
    calls; opt-in, measured slower in session 35): the same build;
18. FA4_SM90_BWD256_STG128 1 -> 0 (bwd_common.cuh: the D 256 backward's dK / dV in 4-byte stores
    instead of 16-byte ones; default since session 36): causal's backward main at D 256.
Fails unless every build has 168 registers and no spill, serialized wgmma or spill fallback (a
backward main may keep a stack frame within path_sm90.c's frame tolerance, 192 bytes, as the
library does), in cubins that differ from the default build's (the knobs reach the code).
Exit 0: all as expected; 1: not; 2: usage or the command failed; 77: no NVRTC."""
import os
import re
import shutil
import sys
import tempfile

from cli_resources import check_programs, compile_sm90, cli_check_args

# (file under sm90/, knob, default, switched)
KNOBS = [("softmax.cuh", "FA4_SM90_FWD_TILE_RUN", "8", "0"), ("softmax.cuh", "FA4_SM90_RELT_FOLD", "0", "1"),
         ("bwd_consumer.cuh", "FA4_SM90_BWD_SPLIT_ADD", "2", "0"),
         ("bwd_consumer.cuh", "FA4_SM90_BWD_TILE_SAT", "2", "0")]
BWD_FRAME_TOLERANCE = 192  # path_sm90.c's bwd_main90 frame_tolerance
# (head dim, programs compiled, the program files compared with the default build's, options)
BUILDS = [(64, "fwd", ["fwd"], ()), (128, "fwd,bwd", ["fwd", "bwd_main90"], ()),
          (128, "bwd", ["bwd_main90"], ("--trainable", "bias"))]
MODS = ["rel_bias", "t5_bias"]
# the passes: (knobs switched together, builds, mods)
T5_FWD = [(64, "fwd", ["fwd"], ()), (128, "fwd", ["fwd"], ()), (256, "fwd", ["fwd"], ())]
BWD128 = [(128, "bwd", ["bwd_main90"], ()), (128, "bwd", ["bwd_main90"], ("--trainable", "bias"))]
BWD80 = [(128, "bwd", ["bwd_main90m80"], ())]
PASSES = [(KNOBS, BUILDS, MODS),
          ([("softmax.cuh", "FA4_SM90_RELT_REUSE", "0", "1"),
            ("softmax.cuh", "FA4_SM90_RELT_GARR", "1", "0")], T5_FWD, ["t5_bias"]),
          ([("softmax.cuh", "FA4_SM90_RELT_BOUNDS", "1", "0")], T5_FWD, ["t5_bias"]),
          ([("softmax.cuh", "FA4_SM90_RELT_BFOLD", "0", "1")], T5_FWD, ["t5_bias"]),
          ([("softmax.cuh", "FA4_SM90_RELT_GARR", "1", "2")], T5_FWD, ["t5_bias"]),
          ([("softmax.cuh", "FA4_SM90_RELT_GARR", "1", "0")], T5_FWD, ["t5_bias"]),
          ([("softmax.cuh", "FA4_SM90_RB_UNIFORM", "1", "0")], T5_FWD, ["t5_bias"]),
          ([("ptx90.cuh", "FA4_SM90_DESC_HI_OPAQUE", "0", "1")], BUILDS, MODS),
          ([("bwd_consumer.cuh", "FA4_SM90_BWD_TILE_SAT", "2", "1")], BWD128, ["rel_bias"]),
          ([("config.cuh", "FA4_SM90_RELT_ALL", "1", "0")], T5_FWD, ["rel_bias"]),
          ([("bwd_consumer.cuh", "FA4_SM90_BWD_GDEFER", "1", "0")], BWD128[1:], MODS),
          ([("config.cuh", "FA4_SM90_PRESCALE_ON", "1", "0")], BUILDS[1:2], ["softcap"]),
          ([("bwd_consumer.cuh", "FA4_SM90_BWD_REL_SCR", "1", "0")], BWD128[1:], MODS),
          ([("bwd_consumer.cuh", "FA4_SM90_BWD_REL_SHFL", "0", "1")], BWD128[1:], ["rel_bias"]),
          ([("bwd_common.cuh", "FA4_SM90_BWD_STG128", "1", "0")], BWD128[:1], ["rel_bias"]),
          ([("bwd_steps80.cuh", "FA4_SM90_BWD_STEPS_EARLY", "0", "1")], BWD80, ["causal"]),
          ([("bwd_main.cu", "FA4_SM90_BWD_EPI_FIRST", "0", "1")], BWD80, ["causal"]),
          ([("bwd_common.cuh", "FA4_SM90_BWD256_STG128", "1", "0")], [(256, "bwd", ["bwd_main90"], ())], ["causal"])]


def kernels_dir():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return os.path.join(root, "src", "kernels")


# (mod path, options, programs) -> the folder with that default build's cubins: passes share them
# (the same mods and builds again and again), so each is compiled once
DEFAULTS = {}


def default_build(fa4jit, mod, base, tmp, opts, kernels):
    """The folder of mod's default build (opts, kernels), compiled on first use; (None, rc) where
    the command failed"""
    key = (mod, opts, kernels)
    if key not in DEFAULTS:
        d0 = os.path.join(tmp, f"def{len(DEFAULTS)}")
        os.makedirs(d0)
        ref, rc = compile_sm90(fa4jit, [mod], base, d0, opts, kernels)
        if ref is None:
            return None, rc
        DEFAULTS[key] = d0
    return DEFAULTS[key], 0


def run_pass(fa4jit, base, tmp, knobs, builds, mods, tag):
    """Returns the problems found (0: as expected), or (None, rc) where a command failed"""
    bad = 0
    kd = os.path.join(tmp, f"kernels{tag}")
    shutil.copytree(kernels_dir(), kd)
    for fname, knob, off, on in knobs:
        path = os.path.join(kd, "sm90", fname)
        with open(path) as f:
            text = f.read()
        pat = rf"^#define {knob} {off}$"
        if len(re.findall(pat, text, flags=re.M)) != 1:
            print(f"FAIL {fname}: no single '#define {knob} {off}' (the default moved? update this test)")
            return bad + 1, 0
        with open(path, "w") as f:
            f.write(re.sub(pat, f"#define {knob} {on}", text, flags=re.M))
    names = " ".join(k[1] for k in knobs)
    for n, (d, kernels, files, more) in enumerate(builds):
        d1 = os.path.join(tmp, f"on{tag}_{n}")
        os.makedirs(d1)
        opts = ("--head-dim", str(d)) + more
        d0 = {}
        for m in mods:
            d0[m.rsplit("/", 1)[-1].removesuffix(".mod")], rc = default_build(fa4jit, m, base, tmp, opts, kernels)
            if rc:
                return None, rc
        on, rc = compile_sm90(fa4jit, mods, dict(base, FA4JIT_KERNEL_DIR=kd), d1, opts, kernels)
        if on is None:
            return None, rc
        label = f"{names} switched, D {d}{' ' + ' '.join(more) if more else ''}"
        # the programs of ours (not the sm80-style ones the backward also builds); a backward main
        # may keep a stack frame within the library's tolerance, as the library does
        mine = []
        for m in on:
            progs = []
            for p in m.get("programs", []):
                if not ("90" in p["name"] or p["name"] == "fwd"):
                    continue
                if p["name"].startswith("bwd_main90") and 0 < p["stack_frame"] <= BWD_FRAME_TOLERANCE:
                    print(f"note {label} {m['mod'].rsplit('/', 1)[-1]} {p['name']}: stack {p['stack_frame']} "
                          f"(spills {p['spill_stores']}/{p['spill_loads']}), within the tolerance")
                    p = dict(p, spill_stores=0, spill_loads=0, stack_frame=0)
                progs.append(p)
            mine.append(dict(m, programs=progs))
        bad += check_programs(mine, label, 168)
        for m in on:
            if m.get("fallbacks"):
                print(f"FAIL {label} {m['mod'].rsplit('/', 1)[-1]}: kept spill fallbacks {m['fallbacks']}")
                bad += 1
        for name in [m.rsplit("/", 1)[-1].removesuffix(".mod") for m in mods]:
            for prog in files:
                a = os.path.join(d0[name], f"{name}.{prog}.sm_90a.cubin")
                b = os.path.join(d1, f"{name}.{prog}.sm_90a.cubin")
                if not (os.path.exists(a) and os.path.exists(b)):
                    print(f"FAIL {label} {name} {prog}: cubin missing ({a}, {b})")
                    bad += 1
                    continue
                with open(a, "rb") as fa, open(b, "rb") as fb:
                    same = fa.read() == fb.read()
                print(f"{'FAIL' if same else 'ok  '} {label} {name} {prog}: the knobs' cubin "
                      f"{'is the default one' if same else 'differs from the default one'}")
                bad += same
    return bad, 0


def main():
    args = cli_check_args(sys.argv, __doc__, MODS + ["softcap", "causal"])
    if args is None:
        return 2
    fa4jit, mods, base = args
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for tag, (knobs, builds, names) in enumerate(PASSES):
            these = [m for m in mods if m.rsplit("/", 1)[-1].removesuffix(".mod") in names]
            got, rc = run_pass(fa4jit, base, tmp, knobs, builds, these, tag)
            if got is None:
                return rc
            bad += got
    print(f"switched knobs: {bad} problem(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
