"""Run the emitted fa4_mod.cuh of every shipped mod on a GPU and compare with its PyTorch twin.

The headers come from `FA4_MOD_DUMP_DIR=DIR build/test_mod_nvrtc` (one `<mod>.cuh` per shipped mod,
with the twin's trainable aux tensors marked trainable, and `<mod>.checked.cuh`). For each mod this
script wraps the header in a kernel that calls fa4_score_mod, fa4_score_mod_fwd_deriv, fa4_mask_mod
and fa4_score_mod_aux_grad at random (b, h, q_idx, kv_idx, score), compiles it with NVRTC through
CuPy, lays out struct fa4_aux by hand (natural C layout, as mod.h describes it), and checks:

  value and d/dscore   against the twin evaluated in float64 with torch.autograd
  mask                 against the twin's mask, exactly
  aux gradients        (atomicAdd of g * d mod / d aux[i] over all points) against autograd's

and, in a child process, that an out-of-range aux read traps in the checked header while the
release header clamps it. Needs torch and cupy (both on the H200 image). Exit status 0 = all good.

    python3 tests/mod/gpu/run_emitted.py DIR
"""

import os
import struct
import subprocess
import sys

import cupy
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "mods"))
import twins  # noqa: E402

KERNEL = r"""
extern "C" __global__ void fa4_mod_gpu_check(const float *scores, const int *coords,
                                             const unsigned char *aux_bytes, float *out, float g,
                                             int n)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n)
        return;
    const fa4_aux aux = *reinterpret_cast<const fa4_aux *>(aux_bytes);
    const float s = scores[t];
    const int b = coords[4 * t], h = coords[4 * t + 1], q = coords[4 * t + 2], kv = coords[4 * t + 3];
    float d = 0.0f;
    out[4 * t] = fa4_score_mod(s, b, h, q, kv, aux);
    out[4 * t + 1] = fa4_score_mod_fwd_deriv(s, b, h, q, kv, aux, &d);
    out[4 * t + 2] = d;
    out[4 * t + 3] = fa4_mask_mod(b, h, q, kv, aux) ? 1.0f : 0.0f;
    fa4_score_mod_aux_grad(s, b, h, q, kv, aux, g);
}
"""

B, H, S, N = 2, 4, 64, 8192


def pack_aux(aux, grads):
    """struct fa4_aux bytes: tensors -> pointer, long long len[, float *grad]; scalars as declared."""
    buf = bytearray()

    def put(fmt, val, align):
        while len(buf) % align:
            buf.append(0)
        buf.extend(struct.pack("<" + fmt, val))

    max_align = 4
    if not aux:
        put("i", 0, 4)
    for key, v in aux.items():
        if isinstance(v, torch.Tensor):
            put("Q", v.data_ptr(), 8)
            put("q", v.numel(), 8)
            if key in grads:
                put("Q", grads[key].data_ptr(), 8)
            max_align = 8
        elif isinstance(v, bool):
            put("B", int(v), 1)
        elif isinstance(v, int):
            put("i", v, 4)
        else:
            put("f", float(v), 4)
    while len(buf) % max_align:
        buf.append(0)
    import numpy as np
    return cupy.asarray(np.frombuffer(bytes(buf), dtype=np.uint8))


def run_kernel(header, aux, grads, scores, coords):
    mod = cupy.RawModule(code=header + KERNEL, options=("-std=c++17",))
    fn = mod.get_function("fa4_mod_gpu_check")
    aux_bytes = pack_aux(aux, grads)
    out = cupy.zeros(4 * N, dtype=cupy.float32)
    torch.cuda.synchronize()
    fn(((N + 127) // 128,), (128,),
       (cupy.asarray(scores), cupy.asarray(coords), aux_bytes, out, cupy.float32(1.0),
        cupy.int32(N)))
    cupy.cuda.runtime.deviceSynchronize()
    return cupy.asnumpy(out).reshape(N, 4)


def reference(name, aux, scores, coords):
    twin = twins.TWINS[name]
    ref_aux, leaves = {}, {}
    for key, v in aux.items():
        if isinstance(v, torch.Tensor) and v.is_floating_point():
            t = v.detach().cpu().to(torch.float64)
            if key in twin.trainable:
                t.requires_grad_(True)
                leaves[key] = t
            ref_aux[key] = t
        elif isinstance(v, torch.Tensor):
            ref_aux[key] = v.detach().cpu()
        else:
            ref_aux[key] = v
    score_mod, mask_mod = twins.build(name, ref_aux)
    c = torch.from_numpy(coords.reshape(N, 4)).to(torch.int64)
    b, h, q, kv = c[:, 0], c[:, 1], c[:, 2], c[:, 3]
    s = torch.from_numpy(scores).to(torch.float64).requires_grad_(True)
    val = score_mod(s, b, h, q, kv) if score_mod else s * 1.0
    grads = torch.autograd.grad(val.sum(), [s] + list(leaves.values()), allow_unused=True)
    mask = mask_mod(b, h, q, kv) if mask_mod else torch.ones(N, dtype=torch.bool)
    aux_grads = {k: (g if g is not None else torch.zeros_like(leaves[k]))
                 for k, g in zip(leaves.keys(), grads[1:])}
    return val.detach().numpy(), grads[0].numpy(), mask.numpy(), aux_grads


def close(a, b, rtol):
    import numpy as np
    return np.abs(a - b) <= rtol * np.maximum(1.0, np.abs(b))


def check_mod(dump, name, seed):
    import numpy as np
    header = open(os.path.join(dump, name + ".cuh")).read()
    aux = twins.example_aux(name, B, H, S, device="cuda", seed=seed)
    grads = {k: torch.zeros(aux[k].numel(), dtype=torch.float32, device="cuda")
             for k in twins.TWINS[name].trainable}
    rng = np.random.default_rng(seed)
    scores = (rng.standard_normal(N) * 4).astype(np.float32)
    coords = np.stack([rng.integers(0, B, N), rng.integers(0, H, N), rng.integers(0, S, N),
                       rng.integers(0, S, N)], axis=1).astype(np.int32).reshape(-1)
    out = run_kernel(header, aux, grads, scores, coords)
    val, dval, mask, aux_grads = reference(name, aux, scores, coords)
    bad_v = int((~close(out[:, 0], val, 1e-4)).sum())
    bad_w = int((out[:, 0] != out[:, 1]).sum())  # fwd_deriv's value is the forward's value
    bad_d = int((~close(out[:, 2], dval, 1e-4)).sum())
    bad_m = int(((out[:, 3] != 0) != mask).sum())
    bad_g = 0
    for k, g in aux_grads.items():
        got = grads[k].cpu().to(torch.float64).numpy()
        bad_g += int((~close(got, g.numpy(), 1e-3)).sum())
    # float32 on the GPU against float64: a value may cross a discontinuity (an int cast, a
    # bucket boundary) on a handful of points, never more
    ok = bad_v <= N // 200 and bad_d <= N // 200 and bad_m == 0 and bad_g == 0
    print(f"{name:24s} value {bad_v:4d}  fwd==value {bad_w:4d}  d/dscore {bad_d:4d}  "
          f"mask {bad_m:4d}  aux grads {bad_g:4d}  -> {'ok' if ok else 'FAIL'}", flush=True)
    return ok


def trap_child(dump):
    """alibi with 1 slope and heads up to 3: checked traps, release clamps to slopes[0]."""
    import numpy as np
    checked = sys.argv[3] == "checked"
    header = open(os.path.join(dump, "alibi" + (".checked" if checked else "") + ".cuh")).read()
    slopes = torch.tensor([0.5], dtype=torch.float32, device="cuda")
    grads = {"slopes": torch.zeros(1, dtype=torch.float32, device="cuda")}
    scores = np.ones(N, dtype=np.float32)
    coords = np.tile(np.array([0, 3, 10, 2], dtype=np.int32), N)
    try:
        out = run_kernel(header, {"slopes": slopes}, grads, scores, coords)
    except Exception as e:  # the trap surfaces as a launch failure
        print("TRAPPED", type(e).__name__, flush=True)
        return 0
    print("VALUE", float(out[0, 0]), flush=True)
    return 0


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "--trap-child":
        return trap_child(sys.argv[2])
    dump = sys.argv[1]
    ok = True
    for i, name in enumerate(twins.names()):
        ok &= check_mod(dump, name, 100 + i)
    for mode in ("release", "checked"):
        r = subprocess.run([sys.executable, __file__, "--trap-child", dump, mode],
                           capture_output=True, text=True, timeout=300)
        text = r.stdout.strip()
        # release: 1 + slopes[clamped 0] * (2 - 10) = 1 - 4 = -3
        good = text.startswith("TRAPPED") if mode == "checked" else text == "VALUE -3.0"
        print(f"out-of-range aux read, {mode}: {text or r.stderr[-300:]} -> "
              f"{'ok' if good else 'FAIL'}", flush=True)
        ok &= good
    print("ALL OK" if ok else "FAILURES", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
