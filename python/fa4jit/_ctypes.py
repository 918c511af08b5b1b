"""ctypes mirrors of the structs, enums and constants of include/fa4jit.h.

The header is the source of truth: every struct here lists the same fields in the same order with
the same C types, so ctypes lays it out as the C compiler does. tests/python/test_ctypes_layout.py
compiles a small C program against the header and compares every size and offset with these
mirrors, and every enum value with these constants, so a drift fails CI instead of corrupting memory.
Structs only grow at the end in the C API; when the header grows, extend the mirror at its end.
"""

import ctypes
from ctypes import (
    POINTER,
    Structure,
    c_char,
    c_char_p,
    c_double,
    c_float,
    c_int32,
    c_int64,
    c_size_t,
    c_uint32,
    c_void_p,
)

# The header version this binding mirrors. The library's fa4_version_number() must agree on the
# major and minor numbers (patch releases keep the ABI).
VERSION_MAJOR = 0
VERSION_MINOR = 1
VERSION_PATCH = 0
VERSION_NUMBER = VERSION_MAJOR * 10000 + VERSION_MINOR * 100 + VERSION_PATCH

# fa4_status: the names in the order of FA4_STATUS_MAP. Messages come from the library
# (fa4_status_message) so that they are never duplicated here.
STATUS_NAMES = (
    "FA4_OK",
    "FA4_ERR_INVALID_ARGUMENT",
    "FA4_ERR_NULL_HANDLE",
    "FA4_ERR_STRUCT_SIZE",
    "FA4_ERR_OUT_OF_MEMORY",
    "FA4_ERR_MOD_SYNTAX",
    "FA4_ERR_MOD_CHECK",
    "FA4_ERR_MOD_LIMIT",
    "FA4_ERR_UNSUPPORTED",
    "FA4_ERR_NVRTC",
    "FA4_ERR_NVRTC_UNAVAILABLE",
    "FA4_ERR_NO_DRIVER",
    "FA4_ERR_NO_DEVICE",
    "FA4_ERR_CUDA",
    "FA4_ERR_MODULE_LOAD",
    "FA4_ERR_LAUNCH",
    "FA4_ERR_SHAPE",
    "FA4_ERR_STRIDE",
    "FA4_ERR_DTYPE",
    "FA4_ERR_ALIGNMENT",
    "FA4_ERR_AUX",
    "FA4_ERR_WORKSPACE",
    "FA4_ERR_IO",
    "FA4_ERR_CACHE",
    "FA4_ERR_ARCH",
    "FA4_ERR_WRONG_KERNEL",
    "FA4_ERR_INTERNAL",
)
STATUS = {name: num for num, name in enumerate(STATUS_NAMES)}
FA4_OK = 0

# fa4_dtype
FA4_DTYPE_INVALID = 0
FA4_DTYPE_BF16 = 1
FA4_DTYPE_FP16 = 2
FA4_DTYPE_FP32 = 3
FA4_DTYPE_INT8 = 4
FA4_DTYPE_UINT8 = 5
FA4_DTYPE_INT16 = 6
FA4_DTYPE_INT32 = 7
FA4_DTYPE_INT64 = 8
FA4_DTYPE_BOOL = 9

# fa4_cache_mode
FA4_CACHE_MODE_DEFAULT = 0
FA4_CACHE_MODE_OFF = 1
FA4_CACHE_MODE_RO = 2
FA4_CACHE_MODE_RW = 3

# device ordinals with a meaning
FA4_DEVICE_NONE = -1
FA4_DEVICE_CURRENT = -2

# fa4_compile_flags
FA4_COMPILE_FWD = 1 << 0
FA4_COMPILE_BWD = 1 << 1
FA4_COMPILE_BLOCK_MASK = 1 << 2
FA4_COMPILE_CHECKED = 1 << 3
FA4_COMPILE_FAST_MATH = 1 << 4
FA4_COMPILE_DETERMINISTIC = 1 << 5
FA4_COMPILE_GQA = 1 << 6
FA4_COMPILE_ALL = FA4_COMPILE_FWD | FA4_COMPILE_BWD | FA4_COMPILE_BLOCK_MASK

# fa4_path
FA4_PATH_AUTO = 0
FA4_PATH_SM80 = 1
FA4_PATH_SM90 = 2

# fa4_cache_result
FA4_CACHE_MISS = 0
FA4_CACHE_HIT_MEMORY = 1
FA4_CACHE_HIT_DISK = 2

FA4_MAX_PROGRAMS = 8

# Every integer constant above that the layout test checks against the header, by C name.
CONSTANTS = {
    "FA4_VERSION_NUMBER": VERSION_NUMBER,
    "FA4_DTYPE_INVALID": FA4_DTYPE_INVALID,
    "FA4_DTYPE_BF16": FA4_DTYPE_BF16,
    "FA4_DTYPE_FP16": FA4_DTYPE_FP16,
    "FA4_DTYPE_FP32": FA4_DTYPE_FP32,
    "FA4_DTYPE_INT8": FA4_DTYPE_INT8,
    "FA4_DTYPE_UINT8": FA4_DTYPE_UINT8,
    "FA4_DTYPE_INT16": FA4_DTYPE_INT16,
    "FA4_DTYPE_INT32": FA4_DTYPE_INT32,
    "FA4_DTYPE_INT64": FA4_DTYPE_INT64,
    "FA4_DTYPE_BOOL": FA4_DTYPE_BOOL,
    "FA4_CACHE_MODE_DEFAULT": FA4_CACHE_MODE_DEFAULT,
    "FA4_CACHE_MODE_OFF": FA4_CACHE_MODE_OFF,
    "FA4_CACHE_MODE_RO": FA4_CACHE_MODE_RO,
    "FA4_CACHE_MODE_RW": FA4_CACHE_MODE_RW,
    "FA4_DEVICE_NONE": FA4_DEVICE_NONE,
    "FA4_DEVICE_CURRENT": FA4_DEVICE_CURRENT,
    "FA4_COMPILE_FWD": FA4_COMPILE_FWD,
    "FA4_COMPILE_BWD": FA4_COMPILE_BWD,
    "FA4_COMPILE_BLOCK_MASK": FA4_COMPILE_BLOCK_MASK,
    "FA4_COMPILE_CHECKED": FA4_COMPILE_CHECKED,
    "FA4_COMPILE_FAST_MATH": FA4_COMPILE_FAST_MATH,
    "FA4_COMPILE_DETERMINISTIC": FA4_COMPILE_DETERMINISTIC,
    "FA4_COMPILE_GQA": FA4_COMPILE_GQA,
    "FA4_COMPILE_ALL": FA4_COMPILE_ALL,
    "FA4_PATH_AUTO": FA4_PATH_AUTO,
    "FA4_PATH_SM80": FA4_PATH_SM80,
    "FA4_PATH_SM90": FA4_PATH_SM90,
    "FA4_CACHE_MISS": FA4_CACHE_MISS,
    "FA4_CACHE_HIT_MEMORY": FA4_CACHE_HIT_MEMORY,
    "FA4_CACHE_HIT_DISK": FA4_CACHE_HIT_DISK,
    "FA4_MAX_PROGRAMS": FA4_MAX_PROGRAMS,
    "FA4_STATUS_COUNT_": len(STATUS_NAMES),
}
CONSTANTS.update(STATUS)


class fa4_ctx_options(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("device", c_int32),
        ("cache_dir", c_char_p),
        ("cache_path", c_char_p),
        ("cache_mode", c_int32),
        ("cache_max_size", c_int64),
        ("hmac_key_file", c_char_p),
        ("require_hmac", c_int32),
    ]


class fa4_kernel_spec(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("source", c_char_p),
        ("source_len", c_size_t),
        ("source_name", c_char_p),
        ("dtype", c_int32),
        ("head_dim", c_int32),
        ("head_dim_v", c_int32),
        ("arch", c_char_p),
        ("flags", c_uint32),
        ("path", c_int32),
        ("trainable_aux", POINTER(c_char_p)),
        ("num_trainable_aux", c_int32),
        ("sw_exp2_percent", c_int32),
        ("rescale_threshold", c_float),
    ]


class fa4_program_info(Structure):
    _fields_ = [
        ("name", c_char * 32),
        ("registers", c_int32),
        ("spill_stores", c_int32),
        ("spill_loads", c_int32),
        ("stack_frame", c_int32),
        ("shared_static", c_int32),
        ("shared_dynamic", c_int32),
        ("wgmma_serialized", c_int32),
        ("compile_ms", c_double),
        ("cubin_size", c_size_t),
    ]


class fa4_kernel_info(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("key", c_char * 33),
        ("arch", c_char * 16),
        ("path", c_int32),
        ("dtype", c_int32),
        ("head_dim", c_int32),
        ("head_dim_v", c_int32),
        ("flags", c_uint32),
        ("has_score_mod", c_int32),
        ("has_mask_mod", c_int32),
        ("num_aux", c_int32),
        ("launchable", c_int32),
        ("cache_result", c_int32),
        ("cache_tier", c_int32),
        ("compile_ms", c_double),
        ("lookup_ms", c_double),
        ("num_programs", c_int32),
        ("programs", fa4_program_info * FA4_MAX_PROGRAMS),
    ]


class fa4_aux_info(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("name", c_char * 64),
        ("is_tensor", c_int32),
        ("dtype", c_int32),
        ("trainable", c_int32),
    ]


class fa4_tensor(Structure):
    _fields_ = [
        ("data", c_void_p),
        ("dtype", c_int32),
        ("ndim", c_int32),
        ("shape", c_int64 * 4),
        ("strides", c_int64 * 4),
    ]


class fa4_aux_value(Structure):
    _fields_ = [
        ("name", c_char_p),
        ("dtype", c_int32),
        ("data", c_void_p),
        ("numel", c_int64),
        ("grad", c_void_p),
        ("f", c_double),
        ("i", c_int64),
    ]


class fa4_block_mask(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("batch", c_int32),
        ("heads", c_int32),
        ("q_block", c_int32),
        ("kv_block", c_int32),
        ("num_q_blocks", c_int32),
        ("num_kv_blocks", c_int32),
        ("kv_num_blocks", c_void_p),
        ("kv_indices", c_void_p),
        ("full_kv_num_blocks", c_void_p),
        ("full_kv_indices", c_void_p),
        ("q_num_blocks", c_void_p),
        ("q_indices", c_void_p),
        ("full_q_num_blocks", c_void_p),
        ("full_q_indices", c_void_p),
    ]


class fa4_fwd_args(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("q", fa4_tensor),
        ("k", fa4_tensor),
        ("v", fa4_tensor),
        ("o", fa4_tensor),
        ("lse", fa4_tensor),
        ("scale", c_float),
        ("aux", POINTER(fa4_aux_value)),
        ("num_aux", c_int32),
        ("block_mask", POINTER(fa4_block_mask)),
        ("cu_seqlens_q", c_void_p),
        ("cu_seqlens_k", c_void_p),
        ("num_seqs", c_int32),
        ("max_seqlen_q", c_int32),
        ("max_seqlen_k", c_int32),
        ("q_offset", c_int64),
        ("kv_offset", c_int64),
        ("stream", c_void_p),
        ("workspace", c_void_p),
        ("workspace_size", c_size_t),
    ]


class fa4_bwd_args(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("q", fa4_tensor),
        ("k", fa4_tensor),
        ("v", fa4_tensor),
        ("o", fa4_tensor),
        ("dout", fa4_tensor),
        ("lse", fa4_tensor),
        ("dlse", fa4_tensor),
        ("dq", fa4_tensor),
        ("dk", fa4_tensor),
        ("dv", fa4_tensor),
        ("scale", c_float),
        ("aux", POINTER(fa4_aux_value)),
        ("num_aux", c_int32),
        ("block_mask", POINTER(fa4_block_mask)),
        ("cu_seqlens_q", c_void_p),
        ("cu_seqlens_k", c_void_p),
        ("num_seqs", c_int32),
        ("max_seqlen_q", c_int32),
        ("max_seqlen_k", c_int32),
        ("q_offset", c_int64),
        ("kv_offset", c_int64),
        ("deterministic", c_int32),
        ("workspace", c_void_p),
        ("workspace_size", c_size_t),
        ("stream", c_void_p),
    ]


# Every mirrored struct by its C name, for the layout test.
STRUCTS = {
    cls.__name__: cls
    for cls in (
        fa4_ctx_options,
        fa4_kernel_spec,
        fa4_program_info,
        fa4_kernel_info,
        fa4_aux_info,
        fa4_tensor,
        fa4_aux_value,
        fa4_block_mask,
        fa4_fwd_args,
        fa4_bwd_args,
    )
}


def new(cls):
    """A zeroed struct with struct_size set, as the C API asks of every struct it is given."""
    s = cls()
    if any(name == "struct_size" for name, _ in cls._fields_):
        s.struct_size = ctypes.sizeof(cls)
    return s


# Opaque handles are plain pointers on this side.
fa4_ctx_p = c_void_p
fa4_kernel_p = c_void_p

# Prototypes: name -> (restype, argtypes). _lib applies them to the loaded library.
PROTOTYPES = {
    "fa4_status_name": (c_char_p, [c_int32]),
    "fa4_status_message": (c_char_p, [c_int32]),
    "fa4_version_number": (ctypes.c_int, []),
    "fa4_version_string": (c_char_p, []),
    "fa4_kernel_fingerprint": (c_char_p, []),
    "fa4_nvrtc_version": (c_int32, [POINTER(ctypes.c_int), POINTER(ctypes.c_int)]),
    "fa4_dtype_name": (c_char_p, [c_int32]),
    "fa4_dtype_size": (c_size_t, [c_int32]),
    "fa4_ctx_options_init": (None, [POINTER(fa4_ctx_options)]),
    "fa4_ctx_create": (c_int32, [POINTER(fa4_ctx_options), POINTER(fa4_ctx_p)]),
    "fa4_ctx_create_errmsg": (c_char_p, []),
    "fa4_ctx_destroy": (None, [fa4_ctx_p]),
    "fa4_ctx_errmsg": (c_char_p, [fa4_ctx_p]),
    "fa4_ctx_errcode": (c_int32, [fa4_ctx_p]),
    "fa4_ctx_error_line": (ctypes.c_int, [fa4_ctx_p]),
    "fa4_ctx_error_column": (ctypes.c_int, [fa4_ctx_p]),
    "fa4_ctx_compile_log": (c_char_p, [fa4_ctx_p]),
    "fa4_ctx_arch": (c_char_p, [fa4_ctx_p]),
    "fa4_kernel_spec_init": (None, [POINTER(fa4_kernel_spec)]),
    "fa4_spec_check": (c_int32, [fa4_ctx_p, POINTER(fa4_kernel_spec)]),
    "fa4_jit_compile": (c_int32, [fa4_ctx_p, POINTER(fa4_kernel_spec), POINTER(fa4_kernel_p)]),
    "fa4_kernel_destroy": (None, [fa4_kernel_p]),
    "fa4_kernel_get_info": (c_int32, [fa4_kernel_p, POINTER(fa4_kernel_info)]),
    "fa4_kernel_aux_info": (c_int32, [fa4_kernel_p, c_int32, POINTER(fa4_aux_info)]),
    "fa4_kernel_get_cubin": (c_int32, [fa4_kernel_p, c_int32, c_void_p, POINTER(c_size_t)]),
    "fa4_kernel_get_source": (c_int32, [fa4_kernel_p, c_int32, POINTER(c_char_p)]),
    "fa4_fwd_args_init": (None, [POINTER(fa4_fwd_args)]),
    "fa4_bwd_args_init": (None, [POINTER(fa4_bwd_args)]),
    "fa4_launch_fwd": (c_int32, [fa4_kernel_p, POINTER(fa4_fwd_args)]),
    "fa4_fwd_workspace_size": (c_int32, [fa4_kernel_p, POINTER(fa4_fwd_args), POINTER(c_size_t)]),
    "fa4_bwd_workspace_size": (c_int32, [fa4_kernel_p, POINTER(fa4_bwd_args), POINTER(c_size_t)]),
    "fa4_launch_bwd": (c_int32, [fa4_kernel_p, POINTER(fa4_bwd_args)]),
    "fa4_block_mask_sizes": (
        c_int32,
        [c_int32, c_int32, c_int64, c_int64, c_int32, c_int32, POINTER(c_int64), POINTER(c_int64)],
    ),
    "fa4_block_mask_create": (
        c_int32,
        [
            fa4_kernel_p,
            c_int32,
            c_int32,
            c_int64,
            c_int64,
            POINTER(fa4_aux_value),
            c_int32,
            POINTER(fa4_block_mask),
            c_void_p,
        ],
    ),
}

# Symbols added after 0.1.0's first cut: bound when the loaded library has them.
OPTIONAL_PROTOTYPES = {
    "fa4_mod_eval": (
        c_int32,
        [fa4_ctx_p, c_char_p, c_size_t, c_double, c_int32, c_int32, c_int32, c_int32,
         POINTER(fa4_aux_value), c_int32, POINTER(c_double), POINTER(c_double), POINTER(c_int32)],
    ),
}
