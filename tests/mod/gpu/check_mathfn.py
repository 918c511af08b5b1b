"""Measure the default float math of emitted mods on a GPU against float64: the worst error of
fa4_fdiv, fa4_fdiv_u, fa4_expf, fa4_exp2f, fa4_logf, fa4_log2f and fa4_tanhf over dense sweeps and
random inputs, in ulps of the float result, against the bounds the header documents (src/jit/mod/mathfn.h;
tests/mod/test_mod_mathfn.c checks the same bounds on the CPU with the PTX approximations
emulated at their documented worst case; this is the check on the real instructions).

The functions come from an emitted header: `FA4_MOD_DUMP_DIR=DIR build/test_mod_nvrtc` writes
DIR/softcap.cuh (every header carries the whole math block). Needs cupy and numpy (both on the
H200 image). Exit status 0 = every bound held.

    python3 tests/mod/gpu/check_mathfn.py DIR
"""

import os
import sys

import cupy
import numpy as np

KERNEL = r"""
extern "C" __global__ void fa4_mathfn_check(const float *x, const float *y, float *out, int n)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n)
        return;
    out[7 * t + 0] = fa4_fdiv(x[t], y[t]);
    out[7 * t + 1] = fa4_expf(x[t]);
    out[7 * t + 2] = fa4_exp2f(x[t]);
    out[7 * t + 3] = fa4_logf(y[t]);
    out[7 * t + 4] = fa4_log2f(y[t]);
    out[7 * t + 5] = fa4_tanhf(x[t]);
    out[7 * t + 6] = fa4_fdiv_u(x[t], y[t]);
}
"""

# name, column, bound in ulps, reference, which input
CHECKS = [
    ("fa4_fdiv", 0, 1.0, None, None),
    ("fa4_expf", 1, 3.4, np.exp, "x"),
    ("fa4_exp2f", 2, 2.9, np.exp2, "x"),
    ("fa4_logf", 3, 2.0, np.log, "y"),
    ("fa4_log2f", 4, 2.0, np.log2, "y"),
    ("fa4_tanhf", 5, 6.75, np.tanh, "x"),
    ("fa4_fdiv_u", 6, 2.0, None, None),
]


def ulps(got, want):
    """|got - want| in ulps of the float nearest want (subnormal spacing below 2^-126)."""
    a = np.abs(want)
    e = np.floor(np.log2(np.maximum(a, 2.0 ** -126)))
    return np.abs(got.astype(np.float64) - want) / np.exp2(e - 23)


def inputs(seed):
    rng = np.random.default_rng(seed)
    x = [np.linspace(-87.0, 88.5, 1 << 20, dtype=np.float32),        # exp, tanh range
         np.linspace(-1.5, 1.5, 1 << 20, dtype=np.float32),          # tanh's polynomial split
         (rng.standard_normal(1 << 20) * 30).astype(np.float32)]     # scores over a soft-cap
    y = [np.linspace(0.25, 4.0, 1 << 20, dtype=np.float32),          # log around 1
         (1.0 + np.arange(-(1 << 19), 1 << 19) * 2.0 ** -23).astype(np.float32),
         np.exp2(rng.uniform(-120, 120, 1 << 20)).astype(np.float32)]
    return np.concatenate(x), np.concatenate(y)


INF, NAN = float("inf"), float("nan")
# (x, y) and what each column must be exactly (None: not checked); C99 Annex F's special values
SPECIALS = [
    ((1.0, 0.0), (INF, None, None, -INF, -INF, None, INF)),
    ((0.0, 0.0), (NAN, 1.0, 1.0, -INF, -INF, 0.0, NAN)),
    ((5.0, INF), (0.0, None, None, INF, INF, None, 0.0)),
    ((-INF, -1.0), (INF, 0.0, 0.0, NAN, NAN, -1.0, INF)),
    ((INF, NAN), (NAN, INF, INF, NAN, NAN, 1.0, NAN)),
    ((NAN, 2.0), (NAN, NAN, NAN, None, 1.0, NAN, NAN)),
]


def run(fn, x, y):
    n = len(x)
    out = cupy.zeros(7 * n, dtype=cupy.float32)
    fn(((n + 255) // 256,), (256,), (cupy.asarray(x), cupy.asarray(y), out, cupy.int32(n)))
    return cupy.asnumpy(out).reshape(n, 7)


def main():
    dump = sys.argv[1]
    header = open(os.path.join(dump, "softcap.cuh")).read()
    mod = cupy.RawModule(code=header + KERNEL, options=("-std=c++17",))
    fn = mod.get_function("fa4_mathfn_check")
    ok = True
    sx = np.array([p[0][0] for p in SPECIALS], dtype=np.float32)
    sy = np.array([p[0][1] for p in SPECIALS], dtype=np.float32)
    sout = run(fn, sx, sy)
    for (inp, want), got in zip(SPECIALS, sout):
        for col, w in enumerate(want):
            if w is not None and not (np.isnan(w) and np.isnan(got[col])) and got[col] != w:
                print(f"{CHECKS[col][0]}{inp}: {got[col]!r}, want {w!r}: FAILED")
                ok = False
    x, y = inputs(1)
    out = run(fn, x, y)
    xd, yd = x.astype(np.float64), y.astype(np.float64)
    for name, col, bound, ref, arg in CHECKS:
        if ref is None:
            want = xd / yd
            keep = (np.abs(xd) >= 2.0 ** -102) & (np.abs(want) >= 2.0 ** -126) & \
                   (np.abs(want) < 3.4e38)
        else:
            src = xd if arg == "x" else yd
            want = ref(src)
            keep = np.isfinite(want) & (np.abs(want) >= 2.0 ** -126) & (np.abs(want) < 3.4e38)
        err = ulps(out[keep, col], want[keep])
        worst = float(err.max())
        at = int(np.argmax(err))
        good = worst <= bound
        ok &= good
        print(f"{name:10s} {int(keep.sum()):8d} inputs, worst {worst:.3f} ulp "
              f"(input {(x if arg != 'y' else y)[keep][at]!r}), bound {bound}: "
              f"{'ok' if good else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
