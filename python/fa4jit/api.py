"""The public PyTorch API: flex_attention, create_block_mask, compile, cache control.

flex_attention has torch.nn.attention.flex_attention.flex_attention's signature and semantics:
q [B, Hq, Sq, D], k/v [B, Hkv, Skv, D/Dv]; score_mod(score, b, h, q_idx, kv_idx) sees the scaled
score; the mask is block_mask.mask_mod; the LSE is fp32, natural log; autograd gives dq, dk, dv and
the gradients of trainable captured tensors, through the output and the LSE. Work runs on the current CUDA stream.

Kernels are compiled on first use per (device, mod source, dtype, head dims, trainable aux,
options) and kept in a process-wide table; the library's own memory and disk caches sit behind it.
"""

import ctypes
import math
import threading

from . import _ctypes as C
from ._core import CacheConfig, Context, Kernel
from ._mods import ModSourceMask, Prepared, prepare, translations
from .errors import InvalidArgumentError, UnsupportedError

_lock = threading.RLock()
_cache_config = CacheConfig()
_contexts = {}
_kernels = {}

# Our keys in kernel_options; torch's own keys (BLOCK_M, num_warps, ...) tune Triton and are ignored.
KERNEL_OPTIONS = {
    "path": "kernel path: 'auto', 'sm80' or 'sm90'",
    "deterministic": "bitwise reproducible dq, dk, dv and gradients of trainable aux tensors",
    "sw_exp2_percent": "software exp2 on this percentage of elements (Hopper path)",
    "rescale_threshold": "conditional rescaling threshold in log2 units (negative: always)",
    "checked": "out-of-range aux reads trap instead of clamping",
    "fast_math": "approximate tanh, exp and division in the mods (about 1e-3 relative error)",
}


# ------------------------------------------------------------------------------ cache and contexts
def configure_cache(dir=None, path=None, mode=None, max_size=None, hmac_key_file=None,
                    require_hmac=None):
    """Cache settings for the contexts fa4jit creates from now on (None: the FA4JIT_CACHE_*
    environment, then the defaults). Drops the contexts and kernels made so far; kernels already
    handed out stay usable."""
    global _cache_config
    cfg = CacheConfig(dir=dir, path=path, mode=mode, max_size=max_size,
                      hmac_key_file=hmac_key_file, require_hmac=require_hmac)
    if mode not in (None, "off", "ro", "rw", "default"):
        raise ValueError(f"cache mode {mode!r}: expected 'off', 'ro', 'rw' or None")
    with _lock:
        _cache_config = cfg
        _contexts.clear()
        _kernels.clear()


def cache_config() -> CacheConfig:
    """The settings configure_cache() last set (None fields: environment or default)."""
    return _cache_config


def clear_kernels():
    """Forget the compiled kernels and translations held by this process (not the disk cache)."""
    with _lock:
        _kernels.clear()
    translations.clear()


def context(device=None) -> Context:
    """The shared Context of a CUDA device (an int, a torch.device, None = current), or of no
    device ("none": compile only)."""
    key = _device_key(device)
    with _lock:
        ctx = _contexts.get(key)
        if ctx is None:
            ctx = Context(device=key if key != "current" else None, cache=_cache_config)
            _contexts[key] = ctx
        return ctx


def _device_key(device):
    if device is None:
        return "current"
    if device == "none":
        return "none"
    if isinstance(device, int):
        return device
    index = getattr(device, "index", None)
    if getattr(device, "type", None) == "cuda":
        if index is None:
            import torch
            index = torch.cuda.current_device()
        return index
    if isinstance(device, str):
        import torch
        return _device_key(torch.device(device))
    raise ValueError(f"device {device!r}: expected a CUDA device")


def _options(kernel_options):
    """Split kernel_options into ours (validated) and the rest (ignored)."""
    out = {}
    for key, value in (kernel_options or {}).items():
        if key not in KERNEL_OPTIONS:
            continue
        if key == "path":
            if value not in ("auto", "sm80", "sm90"):
                raise ValueError(f"kernel_options['path'] = {value!r}: expected auto, sm80, sm90")
            out[key] = value
        elif key in ("deterministic", "checked", "fast_math"):
            out[key] = "1" if value else "0"
        elif key == "sw_exp2_percent":
            out[key] = str(int(value))
        else:
            out[key] = repr(float(value))
    return out


def _kernel_for(device, source, dtype, head_dim, head_dim_v, trainable, opts, backward,
                block_mask_only=False, gqa=False):
    """The compiled kernel for this variant, from the process table or compiled now (gqa: the
    call has more query heads than kv heads, so a backward also gets the Hopper GQA program)."""
    if block_mask_only:
        flags = C.FA4_COMPILE_BLOCK_MASK
    else:
        flags = C.FA4_COMPILE_FWD | (C.FA4_COMPILE_BWD if backward else 0)
    if opts.get("checked") == "1":
        flags |= C.FA4_COMPILE_CHECKED
    if opts.get("fast_math") == "1":
        flags |= C.FA4_COMPILE_FAST_MATH
    if opts.get("deterministic") == "1" and backward and trainable:
        flags |= C.FA4_COMPILE_DETERMINISTIC  # the fixed-point aux-gradient programs
    if gqa and backward and not block_mask_only:
        flags |= C.FA4_COMPILE_GQA
    dev = _device_key(device)
    dname = str(dtype).replace("torch.", "")
    key = (dev, source, dname, int(head_dim), int(head_dim_v), tuple(trainable), flags,
           opts.get("path", "auto"), opts.get("sw_exp2_percent"), opts.get("rescale_threshold"))
    with _lock:
        k = _kernels.get(key)
        if k is not None:
            return k
        ctx = context(dev)
    k = ctx.compile(source=source, dtype=dname, head_dim=head_dim, head_dim_v=head_dim_v,
                    flags=flags, path=opts.get("path", "auto"), trainable=trainable,
                    sw_exp2_percent=int(opts.get("sw_exp2_percent", 0)),
                    rescale_threshold=float(opts.get("rescale_threshold", 0.0)),
                    source_name="mod")
    with _lock:
        return _kernels.setdefault(key, k)


# ----------------------------------------------------------------------------------- compile()
def compile(score_mod=None, mask_mod=None, dtype="bf16", head_dim=128, head_dim_v=None,
            arch=None, device=None, aux=None, backward=True, block_mask=True, path="auto",
            kernel_options=None, gqa=False) -> Kernel:
    """Compile (or find in the caches) the kernels of a variant ahead of time; returns the Kernel
    (.info: key, arch, cache result, compile times, programs; .aux: the aux parameters).

    With arch (e.g. "sm_90a") and no device, compiles without a GPU (deviceless, for filling a
    cache); otherwise for the device (default: the current CUDA device). gqa=True with the backward
    also compiles the Hopper backward's program for grouped-query attention (more query heads than
    kv heads), which flex_attention's own compiles add by themselves for such calls."""
    p = prepare(score_mod, mask_mod, aux)
    opts = _options(kernel_options)
    flags = C.FA4_COMPILE_FWD
    if backward:
        flags |= C.FA4_COMPILE_BWD
    if block_mask and p.has_mask:
        flags |= C.FA4_COMPILE_BLOCK_MASK
    if opts.get("checked") == "1":
        flags |= C.FA4_COMPILE_CHECKED
    if opts.get("fast_math") == "1":
        flags |= C.FA4_COMPILE_FAST_MATH
    if opts.get("deterministic") == "1" and backward and p.trainable:
        flags |= C.FA4_COMPILE_DETERMINISTIC
    if gqa and backward:
        flags |= C.FA4_COMPILE_GQA
    ctx = context("none" if arch is not None and device is None else device)
    k = ctx.compile(source=p.source, dtype=dtype, head_dim=head_dim, head_dim_v=head_dim_v or 0,
                    arch=arch, flags=flags, path=path, trainable=p.trainable,
                    sw_exp2_percent=int(opts.get("sw_exp2_percent", 0)),
                    rescale_threshold=float(opts.get("rescale_threshold", 0.0)),
                    source_name=p.source_name)
    k.prepared = p
    return k


def check(score_mod=None, mask_mod=None, dtype="bf16", head_dim=128, head_dim_v=None,
          arch="sm_90a", aux=None):
    """Raise what compiling would raise (mod errors with line and column), without compiling."""
    p = prepare(score_mod, mask_mod, aux)
    context("none").check(source=p.source, dtype=dtype, head_dim=head_dim,
                          head_dim_v=head_dim_v or 0, arch=arch, trainable=p.trainable,
                          source_name=p.source_name)
    return p


# ---------------------------------------------------------------------------- flex_attention
def _torch():
    import torch
    return torch


def _aux_lists(p: Prepared):
    from ._wire import encode_aux_spec
    tensors, scalars, entries = [], [], []
    for a in p.aux:
        if a.is_tensor:
            tensors.append(a.value)
        else:
            scalars.append(float(a.value))
        entries.append((a.name, a.is_tensor, a.trainable, a.scalar_type))
    return tensors, scalars, encode_aux_spec(entries)


def _block_mask_args(block_mask, Sq, Skv):
    """(tensors, meta) for the op from a torch BlockMask (or (None-free) empty lists)."""
    if block_mask is None:
        return [], [0]
    seq = tuple(getattr(block_mask, "seq_lengths", (Sq, Skv)))
    if seq != (Sq, Skv):
        raise ValueError(f"block_mask was created for sequence lengths {seq}, but the query and "
                         f"key have {Sq} and {Skv} tokens; create it for these lengths")
    kv_num, kv_idx = block_mask.kv_num_blocks, block_mask.kv_indices
    q_num, q_idx = block_mask.q_num_blocks, block_mask.q_indices
    if q_num is None or q_idx is None:
        raise InvalidArgumentError("block_mask has no q_num_blocks/q_indices (the transposed "
                                   "lists the backward needs); build it with create_block_mask "
                                   "or BlockMask.from_kv_blocks")
    if kv_idx.dim() != 4:
        raise InvalidArgumentError(f"block_mask.kv_indices has {kv_idx.dim()} dimensions; "
                                   "expected [B, H, num_q_blocks, num_kv_blocks]")
    full = block_mask.full_kv_num_blocks is not None
    ts = [kv_num, kv_idx, q_num, q_idx]
    if full:
        ts += [block_mask.full_kv_num_blocks, block_mask.full_kv_indices,
               block_mask.full_q_num_blocks, block_mask.full_q_indices]
    torch = _torch()
    ts = [t.to(torch.int32) if t.dtype != torch.int32 else t for t in ts]
    bs = block_mask.BLOCK_SIZE
    q_block, kv_block = (bs, bs) if isinstance(bs, int) else (int(bs[0]), int(bs[1]))
    B, H, nq, nk = kv_idx.shape
    meta = [1, int(B), int(H), q_block, kv_block, int(nq), int(nk), int(full)]
    return ts, meta


def _mask_mod_of(block_mask):
    if block_mask is None:
        return None
    return getattr(block_mask, "mask_mod", None)


def _dynamo_disable(fn):
    """Run fn outside torch.compile's tracing (a graph break): translating a Python mod traces it
    with torch.fx and walks closures, which dynamo cannot follow. The custom op after it stays in
    the compiled graph."""
    if _torch_or_none() is None:
        return fn
    import torch
    disable = getattr(getattr(torch, "compiler", None), "disable", None)
    return disable(fn) if disable is not None else fn


def _torch_or_none():
    try:
        import torch
        return torch
    except ImportError:
        return None


def flex_attention(query, key, value, score_mod=None, block_mask=None, scale=None,
                   enable_gqa=False, return_lse=False, kernel_options=None, *, return_aux=None,
                   aux=None):
    """torch.nn.attention.flex_attention.flex_attention on fa4jit's kernels.

    score_mod and block_mask.mask_mod may be Python functions (translated), mod source text or
    shipped mod names; `aux` gives values of aux parameters declared in mod source text.
    Returns out, (out, lse) with return_lse, or (out, AuxOutput) with return_aux (lse only;
    max_scores is not computed). A loss may use the LSE too (z-loss, merging partial
    attention results): its gradient reaches q, k, v and trainable captured tensors."""
    check_return_aux(return_lse, return_aux)
    call = _prepare_call(query, key, value, score_mod, block_mask, scale, enable_gqa,
                         kernel_options, aux)
    out, lse = _launch(query, key, value, call)
    return shape_result(out, lse, return_lse, return_aux)


def check_return_aux(return_lse, return_aux):
    if return_aux is None:
        return
    if return_lse:
        raise ValueError("give return_lse or return_aux, not both")
    if getattr(return_aux, "max_scores", False):
        raise UnsupportedError("return_aux asks for max_scores, which fa4jit does not compute")


def shape_result(out, lse, return_lse, return_aux):
    if return_aux is not None:
        from torch.nn.attention.flex_attention import AuxOutput
        return out, AuxOutput(lse=lse if getattr(return_aux, "lse", False) else None)
    return (out, lse) if return_lse else out


# the smallest normal float32
_FLT_MIN = 1.1754943508222875e-38


def _kernel_scale(scale, head_dim):
    """The softmax scale as the C library takes it. None is 1/sqrt(D), as in PyTorch. The library
    reads 0 as that default too, so PyTorch's literal 0 (every score 0: uniform weights) goes as
    FLT_MIN: q.k times it is far below float32's resolution next to 1, so the weights come out
    uniform as well, and the gradients of q and k are of the order of 1e-38 instead of 0."""
    if scale is None:
        return 1.0 / math.sqrt(head_dim)
    s = float(scale)
    return _FLT_MIN if s == 0.0 else s


@_dynamo_disable
def _prepare_call(query, key, value, score_mod, block_mask, scale, enable_gqa, kernel_options,
                  aux):
    """Checks and mod preparation; returns the op's non-q/k/v arguments as a tuple."""
    torch = _torch()
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a tensor")
        if t.dim() != 4:
            raise ValueError(f"{name} has {t.dim()} dimensions; expected [B, H, S, D]")
        if t.device.type != "cuda":
            raise UnsupportedError(f"{name} is on {t.device}; fa4jit runs on CUDA devices")
    if not (query.dtype == key.dtype == value.dtype):
        raise ValueError(f"query, key and value must share a dtype; got {query.dtype}, "
                         f"{key.dtype}, {value.dtype}")
    if query.dtype not in (torch.bfloat16, torch.float16):
        raise UnsupportedError(f"dtype {query.dtype}: fa4jit computes in bf16 or fp16")
    if not (query.device == key.device == value.device):
        raise ValueError("query, key and value must be on one device")
    B, Hq, Sq, D = query.shape
    Bk, Hkv, Skv, Dk = key.shape
    if Bk != B or value.shape[0] != B or value.shape[1] != Hkv or value.shape[2] != Skv:
        raise ValueError(f"shapes do not agree: query {tuple(query.shape)}, key "
                         f"{tuple(key.shape)}, value {tuple(value.shape)}")
    if Dk != D:
        raise ValueError(f"query and key head dims differ ({D} and {Dk})")
    if Hq != Hkv:
        if not enable_gqa:
            raise ValueError(f"query has {Hq} heads and key/value {Hkv}: pass enable_gqa=True "
                             "for grouped-query attention")
        if Hq % Hkv:
            raise ValueError(f"query heads ({Hq}) must be a multiple of key/value heads ({Hkv})")
    from ._wire import encode_numbers, encode_options
    prepared = prepare(score_mod, _mask_mod_of(block_mask), aux)
    bm_tensors, bm_meta = _block_mask_args(block_mask, Sq, Skv)
    scale = _kernel_scale(scale, D)
    aux_tensors, aux_scalars, aux_spec = _aux_lists(prepared)
    any_trainable = any(a.trainable for a in prepared.aux)
    return (aux_tensors, encode_numbers(aux_scalars), bm_tensors, encode_numbers(bm_meta),
            prepared.source or "", aux_spec, scale, encode_options(_options(kernel_options)),
            any_trainable)


def _launch(query, key, value, call):
    import torch
    from ._ops import ops
    (aux_tensors, aux_scalars, bm_tensors, bm_meta, source, aux_spec, scale, options,
     any_trainable) = call
    needs_grad = torch.is_grad_enabled() and (
        query.requires_grad or key.requires_grad or value.requires_grad or any_trainable)
    options = options + (";needs_grad=1" if needs_grad else ";needs_grad=0")
    ops()  # registers fa4jit::flex_fwd / flex_bwd on first use
    return torch.ops.fa4jit.flex_fwd(query, key, value, aux_tensors, aux_scalars, bm_tensors,
                                     bm_meta, source, aux_spec, scale, options)


# ---------------------------------------------------------------------------- varlen_attention
def varlen_attention(query, key, value, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                     score_mod=None, mask_mod=None, scale=None, enable_gqa=False,
                     return_lse=False, kernel_options=None, *, aux=None):
    """Attention over a packed batch of sequences of different lengths (no padding).

    query [Tq, Hq, D], key [Tk, Hkv, D], value [Tk, Hkv, Dv] hold the sequences back to back;
    cu_seqlens_q / cu_seqlens_k are int32 CUDA tensors of num_seqs + 1 prefix sums (0 first);
    max_seqlen_* the longest sequence. The mods see b = the sequence's index and q_idx / kv_idx
    = positions inside the sequence; mask_mod (no block mask here) runs on every tile.
    Returns out [Tq, Hq, Dv], and lse [Hq, Tq] (fp32, natural log) with return_lse."""
    call = _prepare_varlen(query, key, value, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                           max_seqlen_k, score_mod, mask_mod, scale, enable_gqa, kernel_options,
                           aux)
    import torch
    from ._ops import ops
    (q4, k4, v4, cu_q, cu_k, aux_tensors, aux_scalars, meta, source, aux_spec, scale, options,
     any_trainable) = call
    needs_grad = torch.is_grad_enabled() and (
        query.requires_grad or key.requires_grad or value.requires_grad or any_trainable)
    options = options + (";needs_grad=1" if needs_grad else ";needs_grad=0")
    ops()
    out4, lse4 = torch.ops.fa4jit.varlen_fwd(q4, k4, v4, cu_q, cu_k, aux_tensors, aux_scalars,
                                             meta, source, aux_spec, scale, options)
    out = out4.transpose(1, 2).squeeze(0)
    return (out, lse4.squeeze(0)) if return_lse else out


@_dynamo_disable
def _prepare_varlen(query, key, value, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                    score_mod, mask_mod, scale, enable_gqa, kernel_options, aux):
    torch = _torch()
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, torch.Tensor) or t.dim() != 3:
            raise ValueError(f"{name} must be a packed [tokens, heads, dim] tensor")
        if t.device.type != "cuda":
            raise UnsupportedError(f"{name} is on {t.device}; fa4jit runs on CUDA devices")
    if not (query.dtype == key.dtype == value.dtype) or query.dtype not in (torch.bfloat16,
                                                                           torch.float16):
        raise UnsupportedError(f"dtypes {query.dtype}/{key.dtype}/{value.dtype}: fa4jit "
                               "computes in bf16 or fp16, one dtype for all three")
    Tq, Hq, D = query.shape
    Tk, Hkv, Dk = key.shape
    if value.shape[0] != Tk or value.shape[1] != Hkv or Dk != D:
        raise ValueError(f"shapes do not agree: query {tuple(query.shape)}, key "
                         f"{tuple(key.shape)}, value {tuple(value.shape)}")
    if Hq != Hkv and (not enable_gqa or Hq % Hkv):
        raise ValueError(f"query has {Hq} heads and key/value {Hkv}: pass enable_gqa=True, with "
                         "query heads a multiple of key/value heads")
    for name, cu in (("cu_seqlens_q", cu_seqlens_q), ("cu_seqlens_k", cu_seqlens_k)):
        if not isinstance(cu, torch.Tensor) or cu.dtype != torch.int32 or cu.dim() != 1 \
                or cu.device != query.device:
            raise ValueError(f"{name} must be a 1-D int32 tensor on {query.device}")
    if cu_seqlens_q.numel() != cu_seqlens_k.numel() or cu_seqlens_q.numel() < 2:
        raise ValueError("cu_seqlens_q and cu_seqlens_k must both hold num_seqs + 1 >= 2 entries")
    from ._wire import encode_numbers, encode_options
    prepared = prepare(score_mod, mask_mod, aux)
    aux_tensors, aux_scalars, aux_spec = _aux_lists(prepared)
    scale = _kernel_scale(scale, D)
    meta = encode_numbers([cu_seqlens_q.numel() - 1, int(max_seqlen_q), int(max_seqlen_k)])
    as4 = [t.unsqueeze(0).transpose(1, 2) for t in (query, key, value)]  # [1, H, T, D] views
    return (*as4, cu_seqlens_q.contiguous(), cu_seqlens_k.contiguous(), aux_tensors,
            encode_numbers(aux_scalars), meta, prepared.source or "", aux_spec, scale,
            encode_options(_options(kernel_options)), any(a.trainable for a in prepared.aux))


# ------------------------------------------------------------------------- create_block_mask
def create_block_mask(mask_mod, B, H, Q_LEN, KV_LEN, device="cuda", BLOCK_SIZE=128,
                      _compile=False, *, aux=None):
    """torch.nn.attention.flex_attention.create_block_mask, evaluated by fa4jit on the GPU.

    mask_mod: a Python function (translated), mod source text or a shipped mod's name. B or H
    None broadcast (1). Returns torch's BlockMask, whose mask_mod is the function given (or a
    ModSourceMask carrying the source)."""
    torch = _torch()
    from torch.nn.attention.flex_attention import BlockMask
    from ._ops import _AuxPack, _stream
    if mask_mod is None:
        raise ValueError("create_block_mask needs a mask_mod")
    B = 1 if B is None else int(B)
    H = 1 if H is None else int(H)
    q_block, kv_block = (BLOCK_SIZE, BLOCK_SIZE) if isinstance(BLOCK_SIZE, int) else BLOCK_SIZE
    dev = torch.device(device)
    if dev.type == "cuda" and dev.index is None:
        dev = torch.device("cuda", torch.cuda.current_device())
    p = prepare(None, mask_mod, aux, keep_trivial_mask=True)
    if p.source is None:
        raise ValueError("mask_mod translated to nothing")
    kern = _kernel_for(dev, p.source, "bf16", 128, 128, (), {}, False, block_mask_only=True)
    lib = kern.ctx._lib
    nq, nk = ctypes.c_int64(), ctypes.c_int64()
    st = lib.fa4_block_mask_sizes(B, H, int(Q_LEN), int(KV_LEN), int(q_block), int(kv_block),
                                  ctypes.byref(nq), ctypes.byref(nk))
    if st != C.FA4_OK:
        raise InvalidArgumentError(f"block mask of batch {B}, heads {H}, lengths {Q_LEN} x "
                                   f"{KV_LEN}, blocks {q_block} x {kv_block}: sizes must be >= 1 "
                                   "and blocks multiples of 16", status=st,
                                   status_name="FA4_ERR_INVALID_ARGUMENT")
    nq, nk = nq.value, nk.value
    i32 = dict(dtype=torch.int32, device=dev)
    ts = {
        "kv_num_blocks": torch.empty((B, H, nq), **i32),
        "kv_indices": torch.empty((B, H, nq, nk), **i32),
        "full_kv_num_blocks": torch.empty((B, H, nq), **i32),
        "full_kv_indices": torch.empty((B, H, nq, nk), **i32),
        "q_num_blocks": torch.empty((B, H, nk), **i32),
        "q_indices": torch.empty((B, H, nk, nq), **i32),
        "full_q_num_blocks": torch.empty((B, H, nk), **i32),
        "full_q_indices": torch.empty((B, H, nk, nq), **i32),
    }
    out = C.new(C.fa4_block_mask)
    out.batch, out.heads, out.q_block, out.kv_block = B, H, int(q_block), int(kv_block)
    out.num_q_blocks, out.num_kv_blocks = nq, nk
    for name, t in ts.items():
        setattr(out, name, t.data_ptr())
    tensors, scalars, spec = _aux_lists(p)
    pack = _AuxPack(kern, tensors, scalars, spec, dev, with_grads=False)
    kern.ctx.call(lib.fa4_block_mask_create, kern.handle, B, H, int(Q_LEN), int(KV_LEN),
                  ctypes.cast(pack.array, ctypes.POINTER(C.fa4_aux_value)), pack.count,
                  ctypes.byref(out), _stream(dev))
    del pack
    user_mask = mask_mod if callable(mask_mod) else ModSourceMask(p.source, aux)
    return _make_block_mask(BlockMask, ts, (int(Q_LEN), int(KV_LEN)), (int(q_block),
                            int(kv_block)), user_mask)


def _make_block_mask(BlockMask, ts, seq_lengths, block_size, mask_mod):
    import inspect
    params = inspect.signature(BlockMask.__init__).parameters
    kwargs = dict(ts)
    kwargs.update(seq_lengths=seq_lengths, BLOCK_SIZE=block_size, mask_mod=mask_mod)
    if all(name in params for name in kwargs):
        return BlockMask(**{k: v for k, v in kwargs.items()})
    # A torch whose constructor differs: let it derive the transposed lists itself.
    return BlockMask.from_kv_blocks(ts["kv_num_blocks"], ts["kv_indices"],
                                    ts["full_kv_num_blocks"], ts["full_kv_indices"],
                                    BLOCK_SIZE=block_size, mask_mod=mask_mod,
                                    seq_lengths=seq_lengths)
