"""The attention implementations compared: fa4jit (per kernel path), torch SDPA with the cuDNN and
FlashAttention-2 backends, and torch FlexAttention compiled with torch.compile.

Every runner exposes fwd(i) (no autograd) and fwdbwd(i) (forward, then the gradients of q, k, v
and of trainable aux tensors for the output gradient dout), both on buffer set i. They return what
the correctness guard compares: the output, and for fwdbwd the list of gradients.
"""

import ctypes
import math
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _twins():
    sys.path.insert(0, os.path.join(ROOT, "mods"))
    try:
        import twins  # noqa: F401  (mods/twins.py, the mod-language engineer's PyTorch twins)
        return twins
    finally:
        sys.path.pop(0)


class Unsupported(Exception):
    """This implementation cannot run this case (reported as n/a, not as an error)."""


# --------------------------------------------------------------------------------------- inputs
class Inputs:
    """Buffer sets and the per-case mod data shared by all runners."""

    def __init__(self, case, nsets, device="cuda", seed=0, tensors=True):
        self.case = case
        self.nsets = nsets
        self.device = device
        g = torch.Generator(device=device).manual_seed(seed)
        if not tensors:  # aux values only (dry run: FLOP cross-checks on the CPU)
            self.aux = self._aux(g)
            return
        dt = torch.bfloat16
        c = case
        self.sets = []
        for _ in range(nsets):
            if c.varlen:
                T = sum(c.varlen)
                shp_q, shp_kv = (T, c.Hq, c.D), (T, c.Hkv, c.D)
            else:
                shp_q, shp_kv = (c.B, c.Hq, c.S, c.D), (c.B, c.Hkv, c.S, c.D)
            q = torch.randn(shp_q, generator=g, device=device, dtype=dt)
            k = torch.randn(shp_kv, generator=g, device=device, dtype=dt)
            v = torch.randn(shp_kv, generator=g, device=device, dtype=dt)
            do = torch.randn(shp_q, generator=g, device=device, dtype=dt)
            self.sets.append((q, k, v, do))
        self.grad_sets = [tuple(t.detach().clone().requires_grad_(True) for t in s[:3]) + (s[3],)
                          for s in self.sets]
        self.aux = self._aux(g)
        self.trainable = [self.aux[n] for n in c.trainable]
        if c.varlen:
            cu = [0]
            for n in c.varlen:
                cu.append(cu[-1] + n)
            self.cu_seqlens = torch.tensor(cu, dtype=torch.int32, device=device)
            self.max_seqlen = max(c.varlen)
            ids = torch.repeat_interleave(torch.arange(len(c.varlen), device=device,
                                                       dtype=torch.int32),
                                          torch.tensor(c.varlen, device=device))
            self.varlen_doc_id = ids

    def _aux(self, g):
        c, dev = self.case, self.device
        aux = {}
        for name in (c.score_mod, c.mask_mod):
            if name == "alibi":
                aux["slopes"] = torch.tensor([2.0 ** (-8.0 * (h + 1) / c.Hq) for h in range(c.Hq)],
                                             dtype=torch.float32, device=dev)
            elif name in ("softcap", "softcap_causal"):
                aux["cap"] = float(c.extra["cap"])
            elif name in ("causal_sliding_window", "sliding_window"):
                aux["window"] = int(c.extra["window"])
            elif name == "document":
                ids = []
                for i, n in enumerate(c.extra["doc_lengths"]):
                    ids += [i] * n
                aux["doc_id"] = torch.tensor(ids, dtype=torch.int32, device=dev)
            elif name == "prefix_lm":
                aux["prefix_len"] = torch.tensor(c.extra["prefix_len"], dtype=torch.int32,
                                                 device=dev)
            elif name == "head_scale":
                t = (0.1 * torch.randn(c.Hq, generator=g, device=dev)).to(torch.float16)
                aux["log_temp"] = t.requires_grad_("log_temp" in c.trainable)
            elif name == "rel_bias":
                m = int(c.extra["max_dist"])
                t = 0.1 * torch.randn(c.Hq * (2 * m + 1), generator=g, device=dev,
                                      dtype=torch.float32)
                aux["bias"] = t.requires_grad_("bias" in c.trainable)
                aux["max_dist"] = m
            elif name == "t5_bias":
                nb = int(c.extra["num_buckets"])
                t = 0.1 * torch.randn(c.Hq * nb, generator=g, device=dev, dtype=torch.float32)
                aux["bias"] = t.requires_grad_("bias" in c.trainable)
                aux["num_buckets"] = nb
                aux["max_distance"] = int(c.extra["max_distance"])
        return aux

    def score_aux(self):
        return {k: v for k, v in self.aux.items() if k in _SCORE_AUX.get(self.case.score_mod, ())}

    def mask_aux(self):
        return {k: v for k, v in self.aux.items() if k in _MASK_AUX.get(self.case.mask_mod, ())}


_SCORE_AUX = {"alibi": ("slopes",), "softcap": ("cap",), "softcap_causal": ("cap",),
              "rel_bias": ("bias", "max_dist"), "head_scale": ("log_temp",),
              "t5_bias": ("bias", "num_buckets", "max_distance")}
_MASK_AUX = {"causal_sliding_window": ("window",), "sliding_window": ("window",),
             "document": ("doc_id",), "prefix_lm": ("prefix_len",), "causal": ()}


def mask_pairs_dense(case, inp):
    """Allowed pairs summed over the batch, by evaluating the mod's PyTorch twin densely on the GPU
    (a cross-check of the closed forms in cases.py). None when there is no mask mod."""
    if case.mask_mod is None or case.varlen:
        return None
    tw = _twins()
    _, mask = tw.build(case.mask_mod, inp.aux)
    S = case.S
    dev = inp.device
    kv = torch.arange(S, device=dev, dtype=torch.int64)[None, :]
    total = 0
    h = torch.tensor(0, device=dev, dtype=torch.int64)
    for b in range(case.B):
        bt = torch.tensor(b, device=dev, dtype=torch.int64)
        for r0 in range(0, S, 1024):
            q = torch.arange(r0, min(S, r0 + 1024), device=dev, dtype=torch.int64)[:, None]
            total += int(mask(bt, h, q, kv).expand(q.shape[0], S).sum().item())
    return total


# -------------------------------------------------------------------------------------- runners
class Runner:
    name = "?"

    def __init__(self, case, inp):
        self.case, self.inp = case, inp

    def fwd(self, i):
        raise NotImplementedError

    def fwdbwd(self, i):
        raise NotImplementedError

    def _grads(self, out, i):
        q, k, v, do = self.inp.grad_sets[i % self.inp.nsets]
        if self.case.varlen and out.dim() == 4:  # [1, H, T, D] view -> packed [T, H, D]
            out = out[0].transpose(0, 1)
        ins = [q, k, v] + list(self.inp.trainable)
        return list(torch.autograd.grad(out, ins, do))


class SdpaRunner(Runner):
    """torch.nn.functional.scaled_dot_product_attention pinned to one backend."""

    def __init__(self, case, inp, backend):
        super().__init__(case, inp)
        from torch.nn.attention import SDPBackend, sdpa_kernel
        self.name = backend
        self.sdpa_kernel = sdpa_kernel
        self.backend = {"cudnn": SDPBackend.CUDNN_ATTENTION,
                        "fa2": SDPBackend.FLASH_ATTENTION}[backend]
        if case.score_mod or case.mask_mod:
            raise Unsupported("SDPA has no score_mod/mask_mod")
        self.gqa_mode = "native"
        self.expand = case.Hq // case.Hkv if case.Hq != case.Hkv else 1

    def _call(self, q, k, v):
        c = self.case
        with self.sdpa_kernel(self.backend):
            if self.expand > 1 and self.gqa_mode == "native":
                return F.scaled_dot_product_attention(q, k, v, is_causal=c.causal, enable_gqa=True)
            if self.expand > 1:  # backend refused enable_gqa: K/V repeated (outside the timing)
                return F.scaled_dot_product_attention(q, k, v, is_causal=c.causal)
            return F.scaled_dot_product_attention(q, k, v, is_causal=c.causal)

    def prepare(self):
        """Pick native GQA if the backend takes it, else K/V repeated per query head."""
        if self.expand > 1:
            q, k, v, _ = self.inp.sets[0]
            try:
                with torch.no_grad():
                    self._call(q, k, v)
            except RuntimeError:
                self.gqa_mode = "repeat"
                self._rep = [tuple(t.repeat_interleave(self.expand, dim=1) for t in s[1:3])
                             for s in self.inp.sets]
                self._rep_g = [tuple(t.detach().repeat_interleave(self.expand, dim=1)
                                     .requires_grad_(True) for t in s[1:3])
                               for s in self.inp.sets]
                return "K/V repeated to Hq heads (backend refused enable_gqa); repeat not timed"
        return None

    def fwd(self, i):
        q, k, v, _ = self.inp.sets[i % self.inp.nsets]
        if self.gqa_mode == "repeat":
            k, v = self._rep[i % self.inp.nsets]
        with torch.no_grad():
            return self._call(q, k, v)

    def fwdbwd(self, i):
        n = i % self.inp.nsets
        q, k, v, do = self.inp.grad_sets[n]
        if self.gqa_mode == "repeat":
            kr, vr = self._rep_g[n]
            out = self._call(q, kr, vr)
            dq, dkr, dvr = torch.autograd.grad(out, [q, kr, vr], do)
            B, H, S, D = dkr.shape
            dk = dkr.view(B, H // self.expand, self.expand, S, D).sum(2)
            dv = dvr.view(B, H // self.expand, self.expand, S, D).sum(2)
            return out, [dq, dk, dv]
        out = self._call(q, k, v)
        return out, self._grads(out, i)


class Fa2VarlenRunner(Runner):
    """FlashAttention-2 varlen through torch's aten op (what SDPA's flash backend calls)."""
    name = "fa2"

    def __init__(self, case, inp):
        super().__init__(case, inp)
        if not hasattr(torch.ops.aten, "_flash_attention_forward"):
            raise Unsupported("torch has no aten._flash_attention_forward")
        self.scale = 1.0 / math.sqrt(case.D)

    def _fwd(self, q, k, v):
        inp = self.inp
        r = torch.ops.aten._flash_attention_forward(
            q, k, v, inp.cu_seqlens, inp.cu_seqlens, inp.max_seqlen, inp.max_seqlen, 0.0, False,
            False, scale=self.scale)
        return r

    def fwd(self, i):
        q, k, v, _ = self.inp.sets[i % self.inp.nsets]
        with torch.no_grad():
            return self._fwd(q, k, v)[0]

    def fwdbwd(self, i):
        q, k, v, do = self.inp.sets[i % self.inp.nsets]
        inp = self.inp
        with torch.no_grad():
            r = self._fwd(q, k, v)
            out, lse, seed, offset = r[0], r[1], r[2], r[3]
            g = torch.ops.aten._flash_attention_backward(
                do, q, k, v, out, lse, inp.cu_seqlens, inp.cu_seqlens, inp.max_seqlen,
                inp.max_seqlen, 0.0, False, seed, offset, scale=self.scale)
        return out, [g[0], g[1], g[2]]


_FLEX = {}


def flex_compiled():
    if "fn" not in _FLEX:
        from torch.nn.attention.flex_attention import flex_attention
        import torch._dynamo as dynamo
        for knob in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit",
                     "accumulated_recompile_limit"):
            if hasattr(dynamo.config, knob):
                setattr(dynamo.config, knob, max(256, getattr(dynamo.config, knob)))
        _FLEX["fn"] = torch.compile(flex_attention, dynamic=False)
    return _FLEX["fn"]


FLEX_SMALL_BWD = {"BLOCK_M1": 32, "BLOCK_N1": 64, "BLOCK_M2": 64, "BLOCK_N2": 32}


class FlexRunner(Runner):
    name = "flex"

    def __init__(self, case, inp, kernel_options=None):
        super().__init__(case, inp)
        self.kopts = kernel_options
        from torch.nn.attention.flex_attention import create_block_mask
        self.fn = flex_compiled()
        tw = _twins()
        c = case
        self.score = None
        mask = None
        if c.score_mod:
            self.score, m2 = tw.build(c.score_mod, inp.aux)
            mask = m2
        if c.mask_mod:
            _, mask = tw.build(c.mask_mod, inp.aux)
        if c.causal:
            def mask(b, h, q_idx, kv_idx):
                return q_idx >= kv_idx
        if c.varlen:
            doc = inp.varlen_doc_id

            def mask(b, h, q_idx, kv_idx):
                return doc[q_idx] == doc[kv_idx]
        self.block_mask = None
        if mask is not None:
            S = c.S
            per_b = c.mask_mod == "prefix_lm"
            self.block_mask = create_block_mask(mask, c.B if per_b else None, None, S, S,
                                                device=inp.device)
        self.gqa = c.Hq != c.Hkv

    def _qkv(self, s):
        q, k, v = s[:3]
        if self.case.varlen:  # packed [T, H, D] -> [1, H, T, D]
            q, k, v = (t.transpose(0, 1).unsqueeze(0) for t in (q, k, v))
        return q, k, v

    def _call(self, q, k, v):
        if self.kopts:
            return self.fn(q, k, v, score_mod=self.score, block_mask=self.block_mask,
                           enable_gqa=self.gqa, kernel_options=self.kopts)
        return self.fn(q, k, v, score_mod=self.score, block_mask=self.block_mask,
                       enable_gqa=self.gqa)

    def fwd(self, i):
        q, k, v = self._qkv(self.inp.sets[i % self.inp.nsets])
        with torch.no_grad():
            out = self._call(q, k, v)
        return out[0].transpose(0, 1) if self.case.varlen else out

    def fwdbwd(self, i):
        s = self.inp.grad_sets[i % self.inp.nsets]
        q, k, v = self._qkv(s)
        out = self._call(q, k, v)
        grads = self._grads(out, i)
        return (out[0].transpose(0, 1) if self.case.varlen else out), grads


class Fa4Runner(Runner):
    """fa4jit through its FlexAttention-compatible API (fa4jit.flex_attention) on one path;
    the variable-length batch through the C API directly (the binding has no cu_seqlens)."""

    def __init__(self, case, inp, path, deterministic=False):
        super().__init__(case, inp)
        import fa4jit
        self.fa4 = fa4jit
        self.path = path
        self.name = "fa4jit-" + path
        self.kopts = {"path": path}
        self.deterministic = deterministic
        if deterministic:
            self.kopts["deterministic"] = True
        c = case
        self.score = c.score_mod
        self.aux = inp.score_aux()
        mask_name = "causal" if c.causal else c.mask_mod
        self.block_mask = None
        if mask_name and not c.varlen:
            per_b = mask_name == "prefix_lm"
            self.block_mask = fa4jit.create_block_mask(mask_name, c.B if per_b else None, None,
                                                       c.S, c.S, aux=inp.mask_aux())
        self.gqa = c.Hq != c.Hkv
        if c.varlen:
            self._varlen_setup()

    def _call(self, q, k, v):
        return self.fa4.flex_attention(q, k, v, score_mod=self.score, block_mask=self.block_mask,
                                       enable_gqa=self.gqa, kernel_options=self.kopts,
                                       aux=self.aux or None)

    def fwd(self, i):
        if self.case.varlen:
            return self._varlen_fwd(i)[0]
        q, k, v, _ = self.inp.sets[i % self.inp.nsets]
        with torch.no_grad():
            return self._call(q, k, v)

    def fwdbwd(self, i):
        if self.case.varlen:
            return self._varlen_fwdbwd(i)
        q, k, v, _ = self.inp.grad_sets[i % self.inp.nsets]
        out = self._call(q, k, v)
        return out, self._grads(out, i)

    # ---- varlen through the C API
    def _varlen_setup(self):
        from fa4jit import _ctypes as C
        self.C = C
        c = self.case
        flags = C.FA4_COMPILE_FWD | C.FA4_COMPILE_BWD
        self.kern = self.fa4.context(torch.cuda.current_device()).compile(
            source=None, dtype="bf16", head_dim=c.D, head_dim_v=c.D, flags=flags, path=self.path,
            source_name="mod")
        self.lib = self.kern.ctx._lib
        self.scale = 1.0 / math.sqrt(c.D)

    def _t(self, t, ndim):
        from fa4jit._ops import _tensor
        return _tensor(t, ndim)

    def _view(self, t):  # packed [T, H, D] -> [1, H, T, D] strided view
        return t.transpose(0, 1).unsqueeze(0)

    def _common(self, a):
        inp = self.inp
        a.scale = self.scale
        a.cu_seqlens_q = inp.cu_seqlens.data_ptr()
        a.cu_seqlens_k = inp.cu_seqlens.data_ptr()
        a.num_seqs = len(self.case.varlen)
        a.max_seqlen_q = a.max_seqlen_k = inp.max_seqlen
        a.stream = torch.cuda.current_stream().cuda_stream

    def _varlen_fwd(self, i):
        C = self.C
        q, k, v, _ = self.inp.sets[i % self.inp.nsets]
        T, H, D = q.shape
        o = torch.empty_like(q)
        lse = torch.empty((1, H, T), dtype=torch.float32, device=q.device)
        a = C.new(C.fa4_fwd_args)
        self.lib.fa4_fwd_args_init(ctypes.byref(a))
        a.q, a.k, a.v = self._t(self._view(q), 4), self._t(self._view(k), 4), \
            self._t(self._view(v), 4)
        a.o, a.lse = self._t(self._view(o), 4), self._t(lse, 3)
        self._common(a)
        self.kern.ctx.call(self.lib.fa4_launch_fwd, self.kern.handle, ctypes.byref(a))
        return o, lse

    def _varlen_fwdbwd(self, i):
        C = self.C
        o, lse = self._varlen_fwd(i)
        q, k, v, do = self.inp.sets[i % self.inp.nsets]
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        a = C.new(C.fa4_bwd_args)
        self.lib.fa4_bwd_args_init(ctypes.byref(a))
        V = self._view
        a.q, a.k, a.v, a.o = (self._t(V(t), 4) for t in (q, k, v, o))
        a.dout, a.lse = self._t(V(do), 4), self._t(lse, 3)
        a.dq, a.dk, a.dv = (self._t(V(t), 4) for t in (dq, dk, dv))
        a.deterministic = 1 if self.deterministic else 0
        self._common(a)
        size = ctypes.c_size_t(0)
        self.kern.ctx.call(self.lib.fa4_bwd_workspace_size, self.kern.handle, ctypes.byref(a),
                           ctypes.byref(size))
        ws = torch.empty(max(1, size.value), dtype=torch.uint8, device=q.device)
        a.workspace = ws.data_ptr()
        a.workspace_size = size.value
        self.kern.ctx.call(self.lib.fa4_launch_bwd, self.kern.handle, ctypes.byref(a))
        return o, [dq, dk, dv]


class Fa4FastMathRunner(Runner):
    """fa4jit forward with FA4_COMPILE_FAST_MATH (the mods' approximate tanh / exp / division),
    through the C API: the Python binding has no option for the flag. Score mods with scalar aux
    only (the soft-cap row); forward only."""

    FAST_MATH = 1 << 4  # FA4_COMPILE_FAST_MATH in fa4jit.h

    def __init__(self, case, inp, path):
        super().__init__(case, inp)
        import fa4jit
        from fa4jit import _ctypes as C
        from fa4jit._mods import prepare
        self.C, self.path, self.name = C, path, "fa4jit-" + path
        aux = inp.score_aux()
        if any(not isinstance(v, (int, float)) for v in aux.values()) or case.mask_mod:
            raise Unsupported("the fast-math row takes a score_mod with scalar aux only")
        p = prepare(case.score_mod, None, aux)
        self.kern = fa4jit.context(torch.cuda.current_device()).compile(
            source=p.source, dtype="bf16", head_dim=case.D, head_dim_v=case.D,
            flags=C.FA4_COMPILE_FWD | self.FAST_MATH, path=path, source_name="mod")
        self.lib = self.kern.ctx._lib
        self.names = [n.encode() for n in aux]
        self.arr = (C.fa4_aux_value * max(1, len(aux)))()
        for slot, name, v in zip(self.arr, self.names, aux.values()):
            slot.name = name
            if isinstance(v, float):
                slot.dtype, slot.f = C.FA4_DTYPE_FP32, v
            else:
                slot.dtype, slot.i = C.FA4_DTYPE_INT32, int(v)
        self.count = len(aux)
        self.scale = 1.0 / math.sqrt(case.D)

    def fwd(self, i):
        from fa4jit._ops import _tensor
        C = self.C
        q, k, v, _ = self.inp.sets[i % self.inp.nsets]
        B, H, S, D = q.shape
        o = torch.empty_like(q)
        lse = torch.empty((B, H, S), dtype=torch.float32, device=q.device)
        a = C.new(C.fa4_fwd_args)
        self.lib.fa4_fwd_args_init(ctypes.byref(a))
        a.q, a.k, a.v, a.o, a.lse = _tensor(q, 4), _tensor(k, 4), _tensor(v, 4), \
            _tensor(o, 4), _tensor(lse, 3)
        a.scale = self.scale
        a.aux = ctypes.cast(self.arr, ctypes.POINTER(C.fa4_aux_value))
        a.num_aux = self.count
        a.stream = torch.cuda.current_stream().cuda_stream
        self.kern.ctx.call(self.lib.fa4_launch_fwd, self.kern.handle, ctypes.byref(a))
        return o

    def fwdbwd(self, i):
        raise Unsupported("forward only")

    def kernel_info(self):
        i = self.kern.info
        return {"path": i.path, "arch": i.arch, "key": i.key, "cache_result": i.cache_result,
                "flags": i.flags,
                "programs": [{"name": p.name, "registers": p.registers,
                              "spill_bytes": p.spill_stores + p.spill_loads,
                              "shared_dynamic": p.shared_dynamic} for p in i.programs]}


def make_runner(name, case, inp):
    if name.startswith("fa4jit-") and case.extra.get("fast_math"):
        return Fa4FastMathRunner(case, inp, name.split("-", 1)[1])
    if name.startswith("fa4jit-"):
        return Fa4Runner(case, inp, name.split("-", 1)[1])
    if name in ("cudnn", "fa2"):
        if case.varlen:
            if name == "fa2":
                return Fa2VarlenRunner(case, inp)
            raise Unsupported("cuDNN varlen is not reachable through torch SDPA")
        return SdpaRunner(case, inp, name)
    if name == "flex":
        return FlexRunner(case, inp)
    raise ValueError(name)


def rel_l2(a, ref):
    """||a - ref|| / ||ref|| in float32; inf for NaN/inf or shape mismatch."""
    if a is None or ref is None or tuple(a.shape) != tuple(ref.shape):
        return float("inf")
    a32, r32 = a.detach().float(), ref.detach().float()
    if not torch.isfinite(a32).all():
        return float("inf")
    den = torch.linalg.vector_norm(r32).item()
    num = torch.linalg.vector_norm(a32 - r32).item()
    return num / den if den > 0 else (0.0 if num == 0 else float("inf"))


# ------------------------------------------------------------------ eager fp32 reference (slice)
class SliceInputs:
    """Batch entry 0 of a case's inputs (one buffer set), with trainable aux tensors as new leaves
    so that gradients of a slice run do not mix with the full run's. Used where no peer gives a
    reference (Flex's backward failed): fa4jit runs on the slice and is compared with an eager
    float32 evaluation of the mod's twin on the same slice."""

    def __init__(self, inp):
        c = inp.case
        self.case = c
        self.nsets = 1
        self.device = inp.device
        q, k, v, do = (t[0:1] for t in inp.sets[0])
        self.sets = [(q, k, v, do)]
        self.grad_sets = [tuple(t.detach().clone().requires_grad_(True) for t in (q, k, v))
                          + (do,)]
        self.aux = {}
        for name, val in inp.aux.items():
            if name == "prefix_len":  # per batch entry
                val = val[0:1]
            if torch.is_tensor(val) and val.requires_grad:
                val = val.detach().clone().requires_grad_(True)
            self.aux[name] = val
        self.trainable = [self.aux[n] for n in c.trainable]

    def score_aux(self):
        return {k: v for k, v in self.aux.items() if k in _SCORE_AUX.get(self.case.score_mod, ())}

    def mask_aux(self):
        return {k: v for k, v in self.aux.items() if k in _MASK_AUX.get(self.case.mask_mod, ())}


def slice_case(case):
    import dataclasses
    return dataclasses.replace(case, B=1, extra=dict(case.extra))


def eager_reference(case, sl):
    """Output and gradients (q, k, v, trainable aux) of batch entry 0 in float32 with
    materialised scores and autograd: the mod's twin applied to the full score matrix."""
    tw = _twins()
    q, k, v, do = sl.sets[0]
    qf, kf, vf = (t.detach().float().requires_grad_(True) for t in (q, k, v))
    aux = {n: (t.detach().float().requires_grad_(True) if torch.is_tensor(t) and t.requires_grad
               else t) for n, t in sl.aux.items()}
    train = [aux[n] for n in case.trainable]
    score = mask = None
    if case.score_mod:
        score, mask = tw.build(case.score_mod, aux)
    if case.mask_mod:
        _, mask = tw.build(case.mask_mod, aux)
    if case.causal:
        def mask(b, h, qi, ki):
            return qi >= ki
    rep = case.Hq // case.Hkv
    kr, vr = kf.repeat_interleave(rep, 1), vf.repeat_interleave(rep, 1)
    s = (qf @ kr.transpose(-1, -2)) * (1.0 / math.sqrt(case.D))
    _, H, S, _ = s.shape
    dev = s.device
    b = torch.zeros(1, 1, 1, 1, dtype=torch.int64, device=dev)
    h = torch.arange(H, device=dev)[None, :, None, None]
    qi = torch.arange(S, device=dev)[None, None, :, None]
    ki = torch.arange(S, device=dev)[None, None, None, :]
    if score is not None:
        s = score(s, b, h, qi, ki)
    if mask is not None:
        s = s.masked_fill(~mask(b, h, qi, ki).expand_as(s), float("-inf"))
    p = torch.softmax(s, -1)
    o = p @ vr
    grads = torch.autograd.grad(o, [qf, kf, vf] + train, do.float())
    return o.detach(), [g.detach() for g in grads]
