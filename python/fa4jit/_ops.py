"""The forward and backward launches as torch.library custom ops, and their autograd.

fa4jit::flex_fwd and fa4jit::flex_bwd take only tensors, numbers and strings (the mod source, a
description of the aux list, options), so torch.compile sees each as one opaque op with a fake
(meta) implementation and flex_fwd's backward registered through torch.library.register_autograd.
The real implementations find the compiled kernel for (device, source, dtype, head dims, trainable
aux, options) in fa4jit.api's kernel table, fill fa4_fwd_args / fa4_bwd_args with data pointers,
shapes and strides in elements, and launch on the current CUDA stream.
"""

import ctypes
import threading
from typing import List, Optional, Tuple

import torch
from torch import Tensor

from . import _ctypes as C
from ._wire import decode_aux_spec, decode_numbers, decode_options, trainable_names
from .errors import InternalError, InvalidArgumentError

_TORCH_DTYPE_CODE = {
    torch.bfloat16: C.FA4_DTYPE_BF16,
    torch.float16: C.FA4_DTYPE_FP16,
    torch.float32: C.FA4_DTYPE_FP32,
    torch.int8: C.FA4_DTYPE_INT8,
    torch.uint8: C.FA4_DTYPE_UINT8,
    torch.int16: C.FA4_DTYPE_INT16,
    torch.int32: C.FA4_DTYPE_INT32,
    torch.int64: C.FA4_DTYPE_INT64,
    torch.bool: C.FA4_DTYPE_BOOL,
}
_DTYPE_BY_NAME = {"bf16": torch.bfloat16, "half": torch.float16, "fp16": torch.float16,
                  "float": torch.float32, "int8": torch.int8, "uint8": torch.uint8,
                  "int16": torch.int16, "int32": torch.int32, "int64": torch.int64,
                  "bool": torch.bool}
# Scalar aux types as fa4_dtype_name() spells them.
_SCALAR_CODE = {"float": C.FA4_DTYPE_FP32, "int32": C.FA4_DTYPE_INT32, "bool": C.FA4_DTYPE_BOOL}


# ------------------------------------------------------------------------------------- structs
def _tensor(t, ndim):
    s = C.fa4_tensor()
    s.data = t.data_ptr()
    s.dtype = _TORCH_DTYPE_CODE[t.dtype]
    s.ndim = ndim
    for i in range(ndim):
        s.shape[i] = t.shape[i]
        s.strides[i] = t.stride(i)
    return s


def _dense_last(t):
    return t if t.stride(-1) == 1 else t.contiguous()


class _AuxPack:
    """fa4_aux_value[] in the kernel's declaration order, plus the device tensors it points at
    (kept alive until the launch has been enqueued; freed memory is stream-ordered)."""

    def __init__(self, kernel, aux_tensors, aux_scalars, aux_spec, device, with_grads):
        entries = decode_aux_spec(aux_spec)
        by_name = {}
        ti = si = 0
        for name, is_tensor, trainable, scalar_type in entries:
            if is_tensor:
                by_name[name] = ("t", aux_tensors[ti], trainable)
                ti += 1
            else:
                by_name[name] = ("s", aux_scalars[si], scalar_type)
                si += 1
        declared = kernel.aux
        missing = [d.name for d in declared if d.name not in by_name]
        extra = [n for n in by_name if n not in {d.name for d in declared}]
        if missing or extra:
            parts = []
            if missing:
                parts.append("the mod declares " + ", ".join(f"'{n}'" for n in missing) +
                             " but no value was given (pass aux={name: value})")
            if extra:
                parts.append("values were given for " + ", ".join(f"'{n}'" for n in extra) +
                             " which the mod does not declare")
            raise InvalidArgumentError("; ".join(parts), status_name="FA4_ERR_AUX")
        self.keep = []
        self.grads = {}  # name -> fp32 grad buffer (trainable tensors, backward only)
        self.array = (C.fa4_aux_value * max(1, len(declared)))()
        for i, d in enumerate(declared):
            kind, value, extra_info = by_name[d.name]
            slot = self.array[i]
            name_b = d.name.encode()
            self.keep.append(name_b)
            slot.name = name_b
            if d.is_tensor:
                if kind != "t":
                    raise InvalidArgumentError(f"aux '{d.name}' is declared as a tensor but a "
                                               "number was given", status_name="FA4_ERR_AUX")
                want = _DTYPE_BY_NAME[d.dtype]
                t = value.detach()
                if t.device != device or t.dtype != want:
                    t = t.to(device=device, dtype=want)
                t = t.contiguous()
                self.keep.append(t)
                slot.dtype = _TORCH_DTYPE_CODE[want]
                slot.data = t.data_ptr()
                slot.numel = t.numel()
                if with_grads and d.trainable:
                    g = torch.zeros(t.numel(), dtype=torch.float32, device=device)
                    self.grads[d.name] = g
                    slot.grad = g.data_ptr()
            else:
                if kind != "s":
                    raise InvalidArgumentError(f"aux '{d.name}' is declared as a {d.dtype} scalar "
                                               "but a tensor was given", status_name="FA4_ERR_AUX")
                code = _SCALAR_CODE.get(d.dtype)
                if code is None:
                    raise InternalError(f"aux '{d.name}': the library reports scalar type "
                                        f"'{d.dtype}', which this binding does not know")
                slot.dtype = code
                if code == C.FA4_DTYPE_FP32:
                    slot.f = float(value)
                else:
                    try:
                        integral = float(value) == int(value)
                    except (OverflowError, ValueError):
                        integral = False
                    if not integral:
                        raise InvalidArgumentError(
                            f"aux '{d.name}' is declared {d.dtype} but was given {value!r}",
                            status_name="FA4_ERR_AUX")
                    slot.i = int(value)
        self.count = len(declared)


def _block_mask_struct(block_mask, bm_meta):
    if not bm_meta or not bm_meta[0]:
        return None, []
    _, batch, heads, q_block, kv_block, nq, nk, has_full = bm_meta
    ts = [t if t.is_contiguous() else t.contiguous() for t in block_mask]
    bm = C.new(C.fa4_block_mask)
    bm.batch, bm.heads, bm.q_block, bm.kv_block = batch, heads, q_block, kv_block
    bm.num_q_blocks, bm.num_kv_blocks = nq, nk
    bm.kv_num_blocks, bm.kv_indices = ts[0].data_ptr(), ts[1].data_ptr()
    bm.q_num_blocks, bm.q_indices = ts[2].data_ptr(), ts[3].data_ptr()
    if has_full:
        bm.full_kv_num_blocks, bm.full_kv_indices = ts[4].data_ptr(), ts[5].data_ptr()
        bm.full_q_num_blocks, bm.full_q_indices = ts[6].data_ptr(), ts[7].data_ptr()
    return bm, ts


_last = threading.local()


def last_kernel():
    """The Kernel of the latest forward or backward launch made by this thread (None before)."""
    return getattr(_last, "kernel", None)


def _kernel(q, k, v, source, aux_spec, options, backward):
    from .api import _kernel_for
    opts = decode_options(options)
    kern = _kernel_for(q.device, source or None, q.dtype, q.shape[-1], v.shape[-1],
                       trainable_names(aux_spec), opts, backward or opts.get("needs_grad") == "1",
                       gqa=q.shape[1] != k.shape[1])
    _last.kernel = kern
    return kern


def _stream(device):
    return ctypes.c_void_p(torch.cuda.current_stream(device).cuda_stream)


# ---------------------------------------------------------------------------------- the launches
def _set_varlen(a, varlen):
    """Variable-length batch fields of fa4_fwd_args / fa4_bwd_args from (cu_q, cu_k, meta)."""
    cu_q, cu_k, meta = varlen
    num_seqs, max_q, max_k = decode_numbers(meta, int)
    a.cu_seqlens_q, a.cu_seqlens_k = cu_q.data_ptr(), cu_k.data_ptr()
    a.num_seqs, a.max_seqlen_q, a.max_seqlen_k = num_seqs, max_q, max_k


def run_fwd(q, k, v, aux_tensors, aux_scalars, block_mask, bm_meta, source, aux_spec, scale,
            options, varlen=None):
    aux_scalars, bm_meta = decode_numbers(aux_scalars), decode_numbers(bm_meta, int)
    q, k, v = _dense_last(q), _dense_last(k), _dense_last(v)
    kern = _kernel(q, k, v, source, aux_spec, options, backward=False)
    B, Hq, Sq, _ = q.shape
    Dv = v.shape[-1]
    if varlen is None:
        o = torch.empty((B, Hq, Sq, Dv), dtype=q.dtype, device=q.device)
    else:  # packed tokens: [1, T, H, Dv] in memory, so that out[T, H, Dv] is contiguous
        o = torch.empty((B, Sq, Hq, Dv), dtype=q.dtype, device=q.device).transpose(1, 2)
    lse = torch.empty((B, Hq, Sq), dtype=torch.float32, device=q.device)
    pack = _AuxPack(kern, aux_tensors, aux_scalars, aux_spec, q.device, with_grads=False)
    bm, bm_keep = _block_mask_struct(block_mask, bm_meta)
    a = C.new(C.fa4_fwd_args)
    kern.ctx._lib.fa4_fwd_args_init(ctypes.byref(a))
    a.q, a.k, a.v, a.o, a.lse = _tensor(q, 4), _tensor(k, 4), _tensor(v, 4), _tensor(o, 4), \
        _tensor(lse, 3)
    a.scale = scale
    a.aux = ctypes.cast(pack.array, ctypes.POINTER(C.fa4_aux_value))
    a.num_aux = pack.count
    a.block_mask = ctypes.pointer(bm) if bm is not None else None
    if varlen is not None:
        _set_varlen(a, varlen)
    a.stream = _stream(q.device)
    # the dynamic tile schedule's workspace (sm90; 0 bytes on sm80), from the caching allocator:
    # freed after the enqueue, stream-ordered like the backward's, and cleared by the launch itself
    lib = kern.ctx._lib
    size = ctypes.c_size_t(0)
    kern.ctx.call(lib.fa4_fwd_workspace_size, kern.handle, ctypes.byref(a), ctypes.byref(size))
    ws = None
    if size.value > 0:
        ws = torch.empty(size.value, dtype=torch.uint8, device=q.device)
        a.workspace = ws.data_ptr()
        a.workspace_size = size.value
    kern.ctx.call(lib.fa4_launch_fwd, kern.handle, ctypes.byref(a))
    del pack, bm_keep, ws
    return o, lse


def run_bwd(dout, q, k, v, o, lse, aux_tensors, aux_scalars, block_mask, bm_meta, source,
            aux_spec, scale, options, varlen=None, dlse=None):
    aux_scalars, bm_meta = decode_numbers(aux_scalars), decode_numbers(bm_meta, int)
    q, k, v, o, dout = (_dense_last(t) for t in (q, k, v, o, dout))
    kern = _kernel(q, k, v, source, aux_spec, options, backward=True)
    dq = torch.empty_like(q)
    dk = torch.empty_like(k)
    dv = torch.empty_like(v)
    pack = _AuxPack(kern, aux_tensors, aux_scalars, aux_spec, q.device, with_grads=True)
    bm, bm_keep = _block_mask_struct(block_mask, bm_meta)
    lib = kern.ctx._lib
    a = C.new(C.fa4_bwd_args)
    lib.fa4_bwd_args_init(ctypes.byref(a))
    a.q, a.k, a.v, a.o = _tensor(q, 4), _tensor(k, 4), _tensor(v, 4), _tensor(o, 4)
    a.dout, a.lse = _tensor(dout, 4), _tensor(lse, 3)
    if dlse is not None:  # the loss used the LSE too; laid out as lse (fp32, contiguous rows)
        dlse = dlse.to(dtype=torch.float32).contiguous()
        a.dlse = _tensor(dlse, 3)
    a.dq, a.dk, a.dv = _tensor(dq, 4), _tensor(dk, 4), _tensor(dv, 4)
    a.scale = scale
    a.aux = ctypes.cast(pack.array, ctypes.POINTER(C.fa4_aux_value))
    a.num_aux = pack.count
    a.block_mask = ctypes.pointer(bm) if bm is not None else None
    a.deterministic = 1 if decode_options(options).get("deterministic") == "1" else 0
    if varlen is not None:
        _set_varlen(a, varlen)
    a.stream = _stream(q.device)
    size = ctypes.c_size_t(0)
    kern.ctx.call(lib.fa4_bwd_workspace_size, kern.handle, ctypes.byref(a), ctypes.byref(size))
    ws = torch.empty(max(1, size.value), dtype=torch.uint8, device=q.device)
    a.workspace = ws.data_ptr()
    a.workspace_size = size.value
    kern.ctx.call(lib.fa4_launch_bwd, kern.handle, ctypes.byref(a))
    grads = []
    ti = 0
    for name, is_tensor, trainable, _ in decode_aux_spec(aux_spec):
        if not is_tensor:
            continue
        if trainable:
            t = aux_tensors[ti]
            grads.append(pack.grads[name].view(t.shape).to(device=t.device, dtype=t.dtype))
        ti += 1
    del pack, bm_keep, ws, dlse
    return dq, dk, dv, grads


# --------------------------------------------------------------------------- op registration
def _register():
    lib_ns = "fa4jit"

    @torch.library.custom_op(f"{lib_ns}::flex_fwd", mutates_args=(), device_types="cuda")
    def flex_fwd(q: Tensor, k: Tensor, v: Tensor, aux_tensors: List[Tensor],
                 aux_scalars: str, block_mask: List[Tensor], bm_meta: str,
                 source: str, aux_spec: str, scale: float, options: str) -> Tuple[Tensor, Tensor]:
        return run_fwd(q, k, v, aux_tensors, aux_scalars, block_mask, bm_meta, source, aux_spec,
                       scale, options)

    @flex_fwd.register_fake
    def _(q, k, v, aux_tensors, aux_scalars, block_mask, bm_meta, source, aux_spec, scale,
          options):
        B, Hq, Sq, _ = q.shape
        return (q.new_empty((B, Hq, Sq, v.shape[-1])),
                q.new_empty((B, Hq, Sq), dtype=torch.float32))

    @torch.library.custom_op(f"{lib_ns}::flex_bwd", mutates_args=(), device_types="cuda")
    def flex_bwd(dout: Tensor, q: Tensor, k: Tensor, v: Tensor, o: Tensor, lse: Tensor,
                 aux_tensors: List[Tensor], aux_scalars: str, block_mask: List[Tensor],
                 bm_meta: str, source: str, aux_spec: str, scale: float,
                 options: str, dlse: Optional[Tensor] = None
                 ) -> Tuple[Tensor, Tensor, Tensor, List[Tensor]]:
        return run_bwd(dout, q, k, v, o, lse, aux_tensors, aux_scalars, block_mask, bm_meta,
                       source, aux_spec, scale, options, dlse=dlse)

    @flex_bwd.register_fake
    def _(dout, q, k, v, o, lse, aux_tensors, aux_scalars, block_mask, bm_meta, source, aux_spec,
          scale, options, dlse=None):
        grads = [torch.empty_like(t) for t, tr in zip(aux_tensors, _tensor_trainable(aux_spec))
                 if tr]
        return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v), grads

    def setup_context(ctx, inputs, output):
        (q, k, v, aux_tensors, aux_scalars, block_mask, bm_meta, source, aux_spec, scale,
         options) = inputs
        o, lse = output
        ctx.save_for_backward(q, k, v, o, lse, *aux_tensors, *block_mask)
        ctx.n_aux = len(aux_tensors)
        ctx.n_bm = len(block_mask)
        ctx.meta = (aux_scalars, bm_meta, source, aux_spec, scale, options)
        ctx.set_materialize_grads(False)  # an unused output's gradient stays None, not zeros

    def backward(ctx, grad_o, grad_lse):
        saved = ctx.saved_tensors
        q, k, v, o, lse = saved[:5]
        aux_tensors = list(saved[5:5 + ctx.n_aux])
        block_mask = list(saved[5 + ctx.n_aux:])
        aux_scalars, bm_meta, source, aux_spec, scale, options = ctx.meta
        if grad_o is None:  # a loss of the LSE alone
            grad_o = torch.zeros_like(o)
        dq, dk, dv, aux_grads = torch.ops.fa4jit.flex_bwd(
            grad_o, q, k, v, o, lse, aux_tensors, aux_scalars, block_mask, bm_meta, source,
            aux_spec, scale, options, grad_lse)
        grads = iter(aux_grads)
        per_aux = [next(grads) if tr else None for tr in _tensor_trainable(aux_spec)]
        # One entry per input, lists of tensors as lists (of None where there is no gradient).
        return (dq, dk, dv, per_aux, None, [None] * ctx.n_bm, None, None, None, None, None)

    flex_fwd.register_autograd(backward, setup_context=setup_context)

    # Variable-length batches: q/k/v are packed tokens viewed as [1, H, T, D]; cu_seqlens are
    # device int32 prefix sums; varlen_meta is "num_seqs,max_seqlen_q,max_seqlen_k".
    @torch.library.custom_op(f"{lib_ns}::varlen_fwd", mutates_args=(), device_types="cuda")
    def varlen_fwd(q: Tensor, k: Tensor, v: Tensor, cu_seqlens_q: Tensor, cu_seqlens_k: Tensor,
                   aux_tensors: List[Tensor], aux_scalars: str, varlen_meta: str, source: str,
                   aux_spec: str, scale: float, options: str) -> Tuple[Tensor, Tensor]:
        return run_fwd(q, k, v, aux_tensors, aux_scalars, [], "0", source, aux_spec, scale,
                       options, varlen=(cu_seqlens_q, cu_seqlens_k, varlen_meta))

    @varlen_fwd.register_fake
    def _(q, k, v, cu_seqlens_q, cu_seqlens_k, aux_tensors, aux_scalars, varlen_meta, source,
          aux_spec, scale, options):
        B, Hq, Sq, _ = q.shape
        return (q.new_empty((B, Sq, Hq, v.shape[-1])).transpose(1, 2),
                q.new_empty((B, Hq, Sq), dtype=torch.float32))

    @torch.library.custom_op(f"{lib_ns}::varlen_bwd", mutates_args=(), device_types="cuda")
    def varlen_bwd(dout: Tensor, q: Tensor, k: Tensor, v: Tensor, o: Tensor, lse: Tensor,
                   cu_seqlens_q: Tensor, cu_seqlens_k: Tensor, aux_tensors: List[Tensor],
                   aux_scalars: str, varlen_meta: str, source: str, aux_spec: str, scale: float,
                   options: str, dlse: Optional[Tensor] = None
                   ) -> Tuple[Tensor, Tensor, Tensor, List[Tensor]]:
        return run_bwd(dout, q, k, v, o, lse, aux_tensors, aux_scalars, [], "0", source,
                       aux_spec, scale, options,
                       varlen=(cu_seqlens_q, cu_seqlens_k, varlen_meta), dlse=dlse)

    @varlen_bwd.register_fake
    def _(dout, q, k, v, o, lse, cu_seqlens_q, cu_seqlens_k, aux_tensors, aux_scalars,
          varlen_meta, source, aux_spec, scale, options, dlse=None):
        grads = [torch.empty_like(t) for t, tr in zip(aux_tensors, _tensor_trainable(aux_spec))
                 if tr]
        return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v), grads

    def varlen_setup_context(ctx, inputs, output):
        (q, k, v, cu_q, cu_k, aux_tensors, aux_scalars, varlen_meta, source, aux_spec, scale,
         options) = inputs
        o, lse = output
        ctx.save_for_backward(q, k, v, o, lse, cu_q, cu_k, *aux_tensors)
        ctx.meta = (aux_scalars, varlen_meta, source, aux_spec, scale, options)
        ctx.set_materialize_grads(False)

    def varlen_backward(ctx, grad_o, grad_lse):
        q, k, v, o, lse, cu_q, cu_k, *aux_tensors = ctx.saved_tensors
        if grad_o is None:
            grad_o = torch.zeros_like(o)
        aux_scalars, varlen_meta, source, aux_spec, scale, options = ctx.meta
        dq, dk, dv, aux_grads = torch.ops.fa4jit.varlen_bwd(
            grad_o, q, k, v, o, lse, cu_q, cu_k, list(aux_tensors), aux_scalars, varlen_meta,
            source, aux_spec, scale, options, grad_lse)
        grads = iter(aux_grads)
        per_aux = [next(grads) if tr else None for tr in _tensor_trainable(aux_spec)]
        return (dq, dk, dv, None, None, per_aux, None, None, None, None, None, None)

    varlen_fwd.register_autograd(varlen_backward, setup_context=varlen_setup_context)
    return flex_fwd, flex_bwd


def _tensor_trainable(aux_spec):
    """For each aux tensor, in order: whether it is trainable."""
    return [tr for _n, is_tensor, tr, _s in decode_aux_spec(aux_spec) if is_tensor]


_registered = None


def ops():
    """(flex_fwd, flex_bwd), registered on first use. Needs torch.library.custom_op (torch 2.4+)."""
    global _registered
    if _registered is None:
        if not hasattr(torch.library, "custom_op"):
            from .errors import UnsupportedError
            raise UnsupportedError(f"torch {torch.__version__} has no torch.library.custom_op; "
                                   "fa4jit's attention needs torch 2.4 or newer")
        _registered = _register()
    return _registered
