"""The C API's handles as Python objects, with no dependency on PyTorch.

Context owns an fa4_ctx (a device, or none for compiling only, plus a cache configuration); Kernel
owns an fa4_kernel compiled on a context. Every failing call raises the Fa4Error subclass of its
status family with the detail the library recorded on the ctx (message, line, column, compile log).
A lock per context makes "call, then read the ctx's last error" one step, so the error read is the
one of the call that failed even when several Python threads share the context.
"""

import ctypes
import threading
from dataclasses import dataclass, field
from typing import List, Optional, Sequence

from . import _ctypes as C
from . import _lib
from .errors import error_class

DTYPE_BY_NAME = {
    "bf16": C.FA4_DTYPE_BF16,
    "bfloat16": C.FA4_DTYPE_BF16,
    "fp16": C.FA4_DTYPE_FP16,
    "float16": C.FA4_DTYPE_FP16,
    "half": C.FA4_DTYPE_FP16,
    "fp32": C.FA4_DTYPE_FP32,
    "float": C.FA4_DTYPE_FP32,
    "float32": C.FA4_DTYPE_FP32,
    "int8": C.FA4_DTYPE_INT8,
    "uint8": C.FA4_DTYPE_UINT8,
    "int16": C.FA4_DTYPE_INT16,
    "int32": C.FA4_DTYPE_INT32,
    "int64": C.FA4_DTYPE_INT64,
    "bool": C.FA4_DTYPE_BOOL,
}

PATH_BY_NAME = {"auto": C.FA4_PATH_AUTO, "sm80": C.FA4_PATH_SM80, "sm90": C.FA4_PATH_SM90}
PATH_NAMES = {v: k for k, v in PATH_BY_NAME.items()}
CACHE_RESULT_NAMES = {C.FA4_CACHE_MISS: "miss", C.FA4_CACHE_HIT_MEMORY: "memory",
                      C.FA4_CACHE_HIT_DISK: "disk"}
CACHE_MODE_BY_NAME = {None: C.FA4_CACHE_MODE_DEFAULT, "default": C.FA4_CACHE_MODE_DEFAULT,
                      "off": C.FA4_CACHE_MODE_OFF, "ro": C.FA4_CACHE_MODE_RO,
                      "rw": C.FA4_CACHE_MODE_RW}


def dtype_code(dtype):
    """An fa4_dtype number from a number, a name ("bf16") or a torch dtype."""
    if isinstance(dtype, int):
        return dtype
    if isinstance(dtype, str):
        name = dtype
    else:  # torch.dtype prints as "torch.bfloat16"
        name = str(dtype).replace("torch.", "")
    try:
        return DTYPE_BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown dtype {dtype!r}; expected one of {sorted(DTYPE_BY_NAME)}")


def dtype_name(code):
    return _lib.load().fa4_dtype_name(int(code)).decode()


def _b(s):
    return None if s is None else str(s).encode()


def _s(b):
    return "" if b is None else b.decode(errors="replace")


@dataclass
class ProgramInfo:
    name: str
    registers: int
    spill_stores: int
    spill_loads: int
    stack_frame: int
    shared_static: int
    shared_dynamic: int
    wgmma_serialized: int
    compile_ms: float
    cubin_size: int


@dataclass
class AuxInfo:
    name: str
    is_tensor: bool
    dtype: str
    trainable: bool


@dataclass
class KernelInfo:
    key: str
    arch: str
    path: str
    dtype: str
    head_dim: int
    head_dim_v: int
    flags: int
    has_score_mod: bool
    has_mask_mod: bool
    num_aux: int
    launchable: bool
    cache_result: str
    cache_tier: int
    compile_ms: float
    lookup_ms: float
    programs: List[ProgramInfo] = field(default_factory=list)


@dataclass(frozen=True)
class CacheConfig:
    """Cache settings for new contexts; None takes the environment (FA4JIT_CACHE_*) or defaults."""
    dir: Optional[str] = None
    path: Optional[str] = None
    mode: Optional[str] = None          # "off", "ro", "rw" or None
    max_size: Optional[int] = None      # bytes
    hmac_key_file: Optional[str] = None
    require_hmac: Optional[bool] = None


class Context:
    """An fa4_ctx. device: a CUDA ordinal, None for the current device, or "none" to compile only."""

    def __init__(self, device=None, cache: Optional[CacheConfig] = None):
        lib = _lib.load()
        cache = cache or CacheConfig()
        opts = C.new(C.fa4_ctx_options)
        lib.fa4_ctx_options_init(ctypes.byref(opts))
        if device is None:
            opts.device = C.FA4_DEVICE_CURRENT
        elif device == "none":
            opts.device = C.FA4_DEVICE_NONE
        else:
            opts.device = int(device)
        # Keep the encoded strings alive for the duration of the create call.
        self._keep = [_b(cache.dir), _b(cache.path), _b(cache.hmac_key_file)]
        opts.cache_dir, opts.cache_path, opts.hmac_key_file = self._keep
        if cache.mode not in CACHE_MODE_BY_NAME:
            raise ValueError(f"cache mode {cache.mode!r}: expected 'off', 'ro', 'rw' or None")
        opts.cache_mode = CACHE_MODE_BY_NAME[cache.mode]
        opts.cache_max_size = int(cache.max_size or 0)
        opts.require_hmac = 1 if cache.require_hmac else 0
        handle = C.fa4_ctx_p()
        st = lib.fa4_ctx_create(ctypes.byref(opts), ctypes.byref(handle))
        if st != C.FA4_OK:
            name = _lib.status_name(st)
            msg = _s(lib.fa4_ctx_create_errmsg()) or _lib.status_message(st)
            raise error_class(name)(msg, status=st, status_name=name)
        self._lib = lib
        self._handle = handle
        self._lock = threading.RLock()
        self.device = opts.device
        self.cache = cache

    @property
    def handle(self):
        if self._handle is None:
            raise ValueError("this fa4jit Context was closed")
        return self._handle

    @property
    def arch(self):
        """The device's architecture ("sm_90a"), "" for a deviceless context."""
        return _s(self._lib.fa4_ctx_arch(self.handle))

    def close(self):
        if getattr(self, "_handle", None) is not None:
            self._lib.fa4_ctx_destroy(self._handle)
            self._handle = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def raise_for(self, status, source=None):
        """Raise the error recorded on this ctx for a failing status (call under self._lock)."""
        lib = self._lib
        name = _lib.status_name(status)
        msg = _s(lib.fa4_ctx_errmsg(self.handle)) or _lib.status_message(status)
        raise error_class(name)(
            msg, status=int(status), status_name=name,
            line=lib.fa4_ctx_error_line(self.handle), column=lib.fa4_ctx_error_column(self.handle),
            compile_log=_s(lib.fa4_ctx_compile_log(self.handle)), source=source)

    def call(self, fn, *args, source=None):
        """Call a fallible C function taking this ctx's kernels or handle; raise on failure."""
        with self._lock:
            st = fn(*args)
            if st != C.FA4_OK:
                self.raise_for(st, source=source)

    # ------------------------------------------------------------------------------- compiling
    def _spec(self, source, dtype, head_dim, head_dim_v, arch, flags, path, trainable,
              sw_exp2_percent, rescale_threshold, source_name):
        spec = C.new(C.fa4_kernel_spec)
        self._lib.fa4_kernel_spec_init(ctypes.byref(spec))
        keep = []
        if source is not None:
            src = source.encode()
            keep.append(src)
            spec.source = src
            spec.source_len = len(src)
        if source_name is not None:
            keep.append(_b(source_name))
            spec.source_name = keep[-1]
        spec.dtype = dtype_code(dtype)
        spec.head_dim = int(head_dim)
        spec.head_dim_v = int(head_dim_v or 0)
        if arch is not None:
            keep.append(_b(arch))
            spec.arch = keep[-1]
        spec.flags = int(flags or 0)
        spec.path = PATH_BY_NAME[path] if isinstance(path, str) else int(path or 0)
        names = [n.encode() for n in (trainable or ())]
        arr = (ctypes.c_char_p * max(1, len(names)))(*names)
        keep.append(arr)
        spec.trainable_aux = ctypes.cast(arr, ctypes.POINTER(ctypes.c_char_p)) if names else None
        spec.num_trainable_aux = len(names)
        spec.sw_exp2_percent = int(sw_exp2_percent or 0)
        spec.rescale_threshold = float(rescale_threshold or 0.0)
        return spec, keep

    def check(self, source=None, dtype="bf16", head_dim=128, head_dim_v=0, arch=None, flags=0,
              path=0, trainable: Sequence[str] = (), sw_exp2_percent=0, rescale_threshold=0.0,
              source_name=None):
        """fa4_spec_check: raise what fa4_jit_compile would raise, without compiling."""
        spec, keep = self._spec(source, dtype, head_dim, head_dim_v, arch, flags, path, trainable,
                                sw_exp2_percent, rescale_threshold, source_name)
        self.call(self._lib.fa4_spec_check, self.handle, ctypes.byref(spec), source=source)
        del keep

    def compile(self, source=None, dtype="bf16", head_dim=128, head_dim_v=0, arch=None, flags=0,
                path=0, trainable: Sequence[str] = (), sw_exp2_percent=0, rescale_threshold=0.0,
                source_name=None):
        """fa4_jit_compile; returns a Kernel."""
        spec, keep = self._spec(source, dtype, head_dim, head_dim_v, arch, flags, path, trainable,
                                sw_exp2_percent, rescale_threshold, source_name)
        out = C.fa4_kernel_p()
        self.call(self._lib.fa4_jit_compile, self.handle, ctypes.byref(spec), ctypes.byref(out),
                  source=source)
        del keep
        return Kernel(self, out, source)


class Kernel:
    """An fa4_kernel. Keeps its Context alive; launches go through fa4jit.api."""

    def __init__(self, ctx: Context, handle, source):
        self.ctx = ctx
        self._handle = handle
        self.mod_source = source
        self._info = None
        self._aux = None

    @property
    def handle(self):
        if self._handle is None:
            raise ValueError("this fa4jit Kernel was destroyed")
        return self._handle

    def destroy(self):
        if getattr(self, "_handle", None) is not None and self.ctx._handle is not None:
            self.ctx._lib.fa4_kernel_destroy(self._handle)
        self._handle = None

    def __del__(self):
        try:
            self.destroy()
        except Exception:
            pass

    @property
    def info(self) -> KernelInfo:
        if self._info is None:
            raw = C.new(C.fa4_kernel_info)
            self.ctx.call(self.ctx._lib.fa4_kernel_get_info, self.handle, ctypes.byref(raw))
            progs = []
            for i in range(min(raw.num_programs, C.FA4_MAX_PROGRAMS)):
                p = raw.programs[i]
                progs.append(ProgramInfo(_s(p.name), p.registers, p.spill_stores, p.spill_loads,
                                         p.stack_frame, p.shared_static, p.shared_dynamic,
                                         p.wgmma_serialized, p.compile_ms, p.cubin_size))
            self._info = KernelInfo(
                key=_s(raw.key), arch=_s(raw.arch), path=PATH_NAMES.get(raw.path, str(raw.path)),
                dtype=dtype_name(raw.dtype), head_dim=raw.head_dim, head_dim_v=raw.head_dim_v,
                flags=raw.flags, has_score_mod=bool(raw.has_score_mod),
                has_mask_mod=bool(raw.has_mask_mod), num_aux=raw.num_aux,
                launchable=bool(raw.launchable),
                cache_result=CACHE_RESULT_NAMES.get(raw.cache_result, str(raw.cache_result)),
                cache_tier=raw.cache_tier, compile_ms=raw.compile_ms, lookup_ms=raw.lookup_ms,
                programs=progs)
        return self._info

    @property
    def aux(self) -> List[AuxInfo]:
        """The aux parameters in declaration order (the order launches pass them)."""
        if self._aux is None:
            out = []
            for i in range(self.info.num_aux):
                raw = C.new(C.fa4_aux_info)
                self.ctx.call(self.ctx._lib.fa4_kernel_aux_info, self.handle, i, ctypes.byref(raw))
                out.append(AuxInfo(_s(raw.name), bool(raw.is_tensor), dtype_name(raw.dtype),
                                   bool(raw.trainable)))
            self._aux = out
        return self._aux

    def cubin(self, index) -> bytes:
        size = ctypes.c_size_t(0)
        lib = self.ctx._lib
        self.ctx.call(lib.fa4_kernel_get_cubin, self.handle, int(index), None, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value)
        self.ctx.call(lib.fa4_kernel_get_cubin, self.handle, int(index), buf, ctypes.byref(size))
        return buf.raw[: size.value]

    def generated_source(self, index) -> Optional[str]:
        """The generated CUDA of program `index`; None on a cache hit (no source is kept)."""
        src = ctypes.c_char_p()
        self.ctx.call(self.ctx._lib.fa4_kernel_get_source, self.handle, int(index),
                      ctypes.byref(src))
        return None if src.value is None else src.value.decode()

    def __repr__(self):
        if self._handle is None:
            return "<fa4jit.Kernel destroyed>"
        i = self.info
        return (f"<fa4jit.Kernel {i.key} {i.arch} {i.path} {i.dtype} d={i.head_dim}/{i.head_dim_v} "
                f"aux={i.num_aux} {i.cache_result}>")
