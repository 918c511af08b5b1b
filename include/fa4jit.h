/*
 * fa4jit.h - the whole public C API of fa4jit, a JIT runtime for custom attention variants.
 *
 * A user writes a score_mod and/or a mask_mod in the mod language (see MODS.md in the project);
 * fa4jit checks it, splices it into a FlashAttention-style kernel skeleton, compiles it with NVRTC,
 * caches the cubin by content hash, and launches forward and backward passes through the CUDA
 * Driver API on the caller's stream.
 *
 * Conventions (read these once):
 *  - Every fallible call returns fa4_status; FA4_OK is 0. Detail (a message, the user's line and
 *    column, the NVRTC log) is kept on the fa4_ctx and read with fa4_ctx_errmsg() and friends.
 *  - The library never prints, exits or aborts. Misuse (NULL handles, a wrong struct_size, a handle
 *    already destroyed) returns a status.
 *  - Every struct given to the library starts with `size_t struct_size`, set by the caller to
 *    sizeof(the struct) as compiled; structs only grow at the end, so old callers keep working.
 *  - Handles: fa4_ctx (device, cache, last error) and fa4_kernel (one compiled variant; immutable,
 *    launches from many threads are safe). Destroying NULL is a no-op.
 *  - No varargs and no struct returns, so the API is usable through ctypes.
 *  - Tensors are device pointers with shape and strides counted in elements.
 */
#ifndef FA4JIT_H
#define FA4JIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define FA4_API __declspec(dllexport)
#else
#define FA4_API __attribute__((visibility("default")))
#endif

#define FA4_VERSION_MAJOR 0
#define FA4_VERSION_MINOR 1
#define FA4_VERSION_PATCH 0
#define FA4_VERSION_STRING "0.1.0"
/* One number that compares: major * 10000 + minor * 100 + patch. */
#define FA4_VERSION_NUMBER (FA4_VERSION_MAJOR * 10000 + FA4_VERSION_MINOR * 100 + FA4_VERSION_PATCH)

/* ------------------------------------------------------------------------------------------------
 * Status codes. One table yields the enum, the names and the messages:
 * X(enum name, number, short message).
 */
#define FA4_STATUS_MAP(X)                                                                          \
    X(FA4_OK, 0, "success")                                                                        \
    X(FA4_ERR_INVALID_ARGUMENT, 1, "invalid argument")                                             \
    X(FA4_ERR_NULL_HANDLE, 2, "NULL or destroyed handle")                                          \
    X(FA4_ERR_STRUCT_SIZE, 3, "struct_size is not one this library knows")                         \
    X(FA4_ERR_OUT_OF_MEMORY, 4, "out of host memory")                                              \
    X(FA4_ERR_MOD_SYNTAX, 5, "syntax error in mod source")                                         \
    X(FA4_ERR_MOD_CHECK, 6, "mod source failed checking")                                          \
    X(FA4_ERR_MOD_LIMIT, 7, "mod source exceeds a limit")                                          \
    X(FA4_ERR_UNSUPPORTED, 8, "configuration not supported")                                       \
    X(FA4_ERR_NVRTC, 9, "NVRTC rejected generated code (a bug in fa4jit)")                         \
    X(FA4_ERR_NVRTC_UNAVAILABLE, 10, "NVRTC could not be used")                                    \
    X(FA4_ERR_NO_DRIVER, 11, "CUDA driver not available")                                          \
    X(FA4_ERR_NO_DEVICE, 12, "no CUDA device")                                                     \
    X(FA4_ERR_CUDA, 13, "CUDA driver call failed")                                                 \
    X(FA4_ERR_MODULE_LOAD, 14, "CUDA driver rejected the compiled module")                         \
    X(FA4_ERR_LAUNCH, 15, "kernel launch failed")                                                  \
    X(FA4_ERR_SHAPE, 16, "tensor shapes do not agree")                                             \
    X(FA4_ERR_STRIDE, 17, "tensor strides not supported")                                          \
    X(FA4_ERR_DTYPE, 18, "wrong dtype")                                                            \
    X(FA4_ERR_ALIGNMENT, 19, "misaligned pointer or stride")                                       \
    X(FA4_ERR_AUX, 20, "aux arguments do not match the mod's declaration")                         \
    X(FA4_ERR_WORKSPACE, 21, "workspace missing or too small")                                     \
    X(FA4_ERR_IO, 22, "file input/output error")                                                   \
    X(FA4_ERR_CACHE, 23, "kernel cache error")                                                     \
    X(FA4_ERR_ARCH, 24, "GPU architecture not supported or not recognised")                        \
    X(FA4_ERR_WRONG_KERNEL, 25, "kernel was not compiled for this operation")                      \
    X(FA4_ERR_INTERNAL, 26, "internal error (a bug in fa4jit)")

typedef enum fa4_status {
#define FA4__STATUS_ENUM(name, num, msg) name = num,
    FA4_STATUS_MAP(FA4__STATUS_ENUM)
#undef FA4__STATUS_ENUM
    FA4_STATUS_COUNT_
} fa4_status;

/* "FA4_ERR_SHAPE"; "FA4_UNKNOWN_STATUS" for values outside the table. Never NULL. */
FA4_API const char *fa4_status_name(fa4_status s);
/* "tensor shapes do not agree"; never NULL. */
FA4_API const char *fa4_status_message(fa4_status s);

/* ------------------------------------------------------------------------------------------------
 * Versions. Compare fa4_version_number() with FA4_VERSION_NUMBER to catch a header/library mismatch.
 */
FA4_API int fa4_version_number(void);
FA4_API const char *fa4_version_string(void);
/* Hex fingerprint of the kernel sources embedded in this build (part of every cache key). */
FA4_API const char *fa4_kernel_fingerprint(void);
/* NVRTC version this library compiles with, e.g. 13 and 0. Returns FA4_ERR_NVRTC_UNAVAILABLE. */
FA4_API fa4_status fa4_nvrtc_version(int *major, int *minor);

/* ------------------------------------------------------------------------------------------------
 * Element types of attention tensors (Q, K, V, O, dO, dQ, dK, dV) and of aux tensors.
 */
typedef enum fa4_dtype {
    FA4_DTYPE_INVALID = 0,
    FA4_DTYPE_BF16 = 1,
    FA4_DTYPE_FP16 = 2,
    FA4_DTYPE_FP32 = 3,
    FA4_DTYPE_INT8 = 4,
    FA4_DTYPE_UINT8 = 5,
    FA4_DTYPE_INT16 = 6,
    FA4_DTYPE_INT32 = 7,
    FA4_DTYPE_INT64 = 8,
    FA4_DTYPE_BOOL = 9 /* one byte, 0 or 1 */
} fa4_dtype;

/* "bf16", "fp16", "float", ...; "invalid" for unknown values. */
FA4_API const char *fa4_dtype_name(fa4_dtype t);
/* Bytes per element; 0 for unknown values. */
FA4_API size_t fa4_dtype_size(fa4_dtype t);

/* ------------------------------------------------------------------------------------------------
 * Context: one CUDA device (or none, for compiling only), a kernel cache and the last error.
 * A ctx may be used from several threads; its last-error fields then describe the most recent
 * failing call of any thread, so read them from the thread that failed before calling again.
 */
typedef struct fa4_ctx fa4_ctx;

typedef enum fa4_cache_mode {
    FA4_CACHE_MODE_DEFAULT = 0, /* FA4JIT_CACHE_MODE, else read-write */
    FA4_CACHE_MODE_OFF = 1,     /* no file-system calls at all; in-process table only */
    FA4_CACHE_MODE_RO = 2,      /* read the disk tiers, never write */
    FA4_CACHE_MODE_RW = 3
} fa4_cache_mode;

typedef struct fa4_ctx_options {
    size_t struct_size;
    /* CUDA device ordinal. FA4_DEVICE_NONE: no driver is touched; only compiling for an explicit
     * arch works (deviceless AOT). FA4_DEVICE_CURRENT: the device current on the calling thread,
     * else device 0. */
    int32_t device;
    /* Cache configuration; NULL or 0 take the environment (FA4JIT_CACHE_DIR, FA4JIT_CACHE_PATH,
     * FA4JIT_CACHE_MODE, FA4JIT_CACHE_MAX_SIZE, FA4JIT_CACHE_HMAC_KEY_FILE,
     * FA4JIT_CACHE_REQUIRE_HMAC), then the defaults. */
    const char *cache_dir;        /* the writable tier; default $XDG_CACHE_HOME/fa4jit */
    const char *cache_path;       /* tier list, e.g. "ro:/opt/app/kernels:rw:~/.cache/fa4jit" */
    int32_t cache_mode;           /* fa4_cache_mode */
    int64_t cache_max_size;       /* bytes; 0 = environment or default (2 GiB) */
    const char *hmac_key_file;    /* team key for signed shared tiers; NULL = none */
    int32_t require_hmac;         /* 1: unsigned or badly signed entries are misses */
} fa4_ctx_options;

#define FA4_DEVICE_NONE (-1)
#define FA4_DEVICE_CURRENT (-2)

/* Fill opts with defaults (device FA4_DEVICE_CURRENT, everything else from the environment). */
FA4_API void fa4_ctx_options_init(fa4_ctx_options *opts);
/* Create a context. opts may be NULL (defaults). On failure *out is NULL and the status says why;
 * fa4_ctx_create_errmsg() (no ctx needed) has the detail of the last failed create on this thread. */
FA4_API fa4_status fa4_ctx_create(const fa4_ctx_options *opts, fa4_ctx **out);
FA4_API const char *fa4_ctx_create_errmsg(void);
/* Destroy a context and every kernel still attached to it. NULL is a no-op. */
FA4_API void fa4_ctx_destroy(fa4_ctx *ctx);

/* Detail of the last failing call on this ctx: a human message (never NULL; "" after success),
 * the status, and for errors in mod source the 1-based line and column (0 when not applicable). */
FA4_API const char *fa4_ctx_errmsg(const fa4_ctx *ctx);
FA4_API fa4_status fa4_ctx_errcode(const fa4_ctx *ctx);
FA4_API int fa4_ctx_error_line(const fa4_ctx *ctx);
FA4_API int fa4_ctx_error_column(const fa4_ctx *ctx);
/* The complete compiler log of the last compile (NVRTC's, mapped to the user's lines); "" if none. */
FA4_API const char *fa4_ctx_compile_log(const fa4_ctx *ctx);
/* Architecture of the ctx's device as "sm_90a", "sm_80", ...; "" for a deviceless ctx. */
FA4_API const char *fa4_ctx_arch(const fa4_ctx *ctx);

/* ------------------------------------------------------------------------------------------------
 * Kernel spec: what to compile.
 */
typedef enum fa4_compile_flags {
    FA4_COMPILE_FWD = 1u << 0,          /* forward kernel (O, LSE) */
    FA4_COMPILE_BWD = 1u << 1,          /* backward kernels (pre, main, post) */
    FA4_COMPILE_BLOCK_MASK = 1u << 2,   /* the mask_mod -> block mask kernel */
    FA4_COMPILE_CHECKED = 1u << 3,      /* out-of-range aux reads trap instead of clamping */
    FA4_COMPILE_FAST_MATH = 1u << 4,    /* mods use approximate tanh, exp and division (faster
                                           soft-capping; about 1e-3 relative error per op) */
    FA4_COMPILE_DETERMINISTIC = 1u << 5,/* with trainable aux and FA4_COMPILE_BWD: also the
                                           deterministic backward's programs whose aux gradients
                                           are fixed-point sums (bitwise reproducible); a
                                           deterministic launch with trainable aux needs them */
    FA4_COMPILE_GQA = 1u << 6,          /* with FA4_COMPILE_BWD: also the Hopper backward's program for
                                           grouped-query attention (more query heads than kv heads;
                                           padded head dims 128, no score_mod): one query head a CTA
                                           with dK/dV added in fp32, and the deterministic mode's
                                           heads-inner walk. Without it such a backward walks the
                                           group's heads in one CTA: correct, slower (H100, GQA 32:4
                                           causal B8 S4096: 7.5 against 6.3 ms). It costs a cold
                                           compile about 1 s of NVRTC CPU time; where it changes no
                                           program (other specs, the sm80 path) it is dropped */
    FA4_COMPILE_ALL = (1u << 0) | (1u << 1) | (1u << 2)
} fa4_compile_flags;

typedef enum fa4_path {
    FA4_PATH_AUTO = 0, /* the fastest path the arch has */
    FA4_PATH_SM80 = 1, /* portable: mma.sync + cp.async, any GPU from Ampere on */
    FA4_PATH_SM90 = 2  /* Hopper: TMA + wgmma + warp specialisation (sm_90a) */
} fa4_path;

typedef struct fa4_kernel_spec {
    size_t struct_size;
    const char *source;      /* mod source: a score_mod, a mask_mod, or both; NULL = plain attention */
    size_t source_len;       /* 0 = strlen(source) */
    const char *source_name; /* shown in messages; NULL = "mod" */
    int32_t dtype;           /* FA4_DTYPE_BF16 or FA4_DTYPE_FP16 */
    int32_t head_dim;        /* D of Q and K: 64, 96, 128, 192, 256 */
    int32_t head_dim_v;      /* D of V and O; 0 = head_dim */
    const char *arch;        /* "sm_90a", "sm_80", ...; NULL = the ctx's device */
    uint32_t flags;          /* fa4_compile_flags; 0 = FA4_COMPILE_ALL */
    int32_t path;            /* fa4_path */
    /* Aux tensors whose gradient the backward accumulates (by name), e.g. a learnable bias table. */
    const char *const *trainable_aux;
    int32_t num_trainable_aux;
    /* Knobs (0 = default). Software exp2 on this percentage of elements (Hopper path);
     * conditional rescaling threshold in log2 units (negative = always rescale). */
    int32_t sw_exp2_percent;
    float rescale_threshold;
} fa4_kernel_spec;

/* Fill spec with defaults: bf16, head_dim 128, all kernels, arch from the device. */
FA4_API void fa4_kernel_spec_init(fa4_kernel_spec *spec);

/* Answer "would this spec compile?" without compiling: parses and checks the mod, checks dtype,
 * head dims, arch and flags. FA4_OK or the status fa4_jit_compile would return, with detail on ctx. */
FA4_API fa4_status fa4_spec_check(fa4_ctx *ctx, const fa4_kernel_spec *spec);

/* ------------------------------------------------------------------------------------------------
 * Compiling. fa4_jit_compile looks the spec up in the in-process table, then in the disk cache
 * tiers, and compiles with NVRTC on a miss (forward and backward programs in parallel threads).
 * On a deviceless ctx (or for an arch other than the device's) the cubins go to the cache and the
 * kernel can be inspected but not launched.
 */
typedef struct fa4_kernel fa4_kernel;

FA4_API fa4_status fa4_jit_compile(fa4_ctx *ctx, const fa4_kernel_spec *spec, fa4_kernel **out);
/* Release a kernel. NULL is a no-op. Kernels still alive when their ctx is destroyed die with it. */
FA4_API void fa4_kernel_destroy(fa4_kernel *kernel);

typedef enum fa4_cache_result {
    FA4_CACHE_MISS = 0,       /* compiled now */
    FA4_CACHE_HIT_MEMORY = 1, /* from this process's table */
    FA4_CACHE_HIT_DISK = 2    /* from a disk tier (cache_tier says which) */
} fa4_cache_result;

#define FA4_MAX_PROGRAMS 8

/* One NVRTC program of a kernel (forward, bwd_pre, bwd_main, bwd_post, block_mask).
 * The resource figures come from ptxas' report. On a machine with a CUDA driver, NVRTC may serve a
 * program from the driver's compute cache without running ptxas (set CUDA_CACHE_DISABLE=1 to stop
 * it); then registers and stack_frame are read from the loaded function where the kernel is
 * launchable, and whatever is still unknown (always the spills) is -1. */
typedef struct fa4_program_info {
    char name[32];
    int32_t registers;       /* per thread, of the main kernel of the program */
    int32_t spill_stores;    /* bytes */
    int32_t spill_loads;     /* bytes */
    int32_t stack_frame;     /* bytes */
    int32_t shared_static;   /* bytes of static shared memory */
    int32_t shared_dynamic;  /* bytes of dynamic shared memory the launch asks for */
    int32_t wgmma_serialized;/* number of "wgmma serialized" (C7520) warnings */
    double compile_ms;       /* 0 on a cache hit */
    size_t cubin_size;
} fa4_program_info;

typedef struct fa4_kernel_info {
    size_t struct_size;
    char key[33];            /* cache key, 32 hex digits */
    char arch[16];           /* "sm_90a" */
    int32_t path;            /* fa4_path actually used */
    int32_t dtype, head_dim, head_dim_v;
    uint32_t flags;
    int32_t has_score_mod, has_mask_mod;
    int32_t num_aux;         /* aux parameters, in order (see fa4_kernel_aux_info) */
    int32_t launchable;      /* 1 when loaded on the ctx's device */
    int32_t cache_result;    /* fa4_cache_result */
    int32_t cache_tier;      /* index in the tier list for a disk hit; -1 otherwise */
    double compile_ms;       /* wall time of the whole compile (parallel programs); 0 on a hit */
    double lookup_ms;        /* wall time of fa4_jit_compile from entry to a usable kernel */
    int32_t num_programs;
    fa4_program_info programs[FA4_MAX_PROGRAMS];
} fa4_kernel_info;

FA4_API fa4_status fa4_kernel_get_info(const fa4_kernel *kernel, fa4_kernel_info *info);

/* One aux parameter as the mod declares it. */
typedef struct fa4_aux_info {
    size_t struct_size;
    char name[64];
    int32_t is_tensor;  /* 1: const T *name; 0: scalar */
    int32_t dtype;      /* element type (tensor) or FA4_DTYPE_FP32 / INT32 / BOOL (scalar) */
    int32_t trainable;  /* 1 when the backward accumulates its gradient */
} fa4_aux_info;

FA4_API fa4_status fa4_kernel_aux_info(const fa4_kernel *kernel, int32_t index, fa4_aux_info *info);

/* Write the cubin of program `index` to a caller buffer: *size in = capacity, out = bytes needed.
 * With buf NULL only the size is returned. */
FA4_API fa4_status fa4_kernel_get_cubin(const fa4_kernel *kernel, int32_t index, void *buf,
                                        size_t *size);
/* The generated CUDA source of program `index` (for --dump-source); valid while the kernel lives.
 * Available on a miss only (a cache hit carries no source): *source is NULL then. */
FA4_API fa4_status fa4_kernel_get_source(const fa4_kernel *kernel, int32_t index,
                                         const char **source);

/* ------------------------------------------------------------------------------------------------
 * Launching.
 */
typedef struct fa4_tensor {
    void *data;          /* device pointer */
    int32_t dtype;       /* fa4_dtype */
    int32_t ndim;        /* 4 for Q/K/V/O and their gradients; 3 for LSE */
    int64_t shape[4];
    int64_t strides[4];  /* in elements */
} fa4_tensor;

/* Value of one aux parameter at launch, in the mod's declaration order (or matched by name). */
typedef struct fa4_aux_value {
    const char *name;    /* NULL: positional; else must equal the declared name */
    int32_t dtype;       /* tensor element type, or the scalar's type (FP32, INT32, BOOL) */
    const void *data;    /* tensor: device pointer (contiguous) */
    int64_t numel;       /* tensor: element count; reads are bounds-checked against it */
    void *grad;          /* trainable tensor, backward only: fp32 device buffer of numel, accumulated into */
    double f;            /* scalar float value */
    int64_t i;           /* scalar int or bool value */
} fa4_aux_value;

/* A block-sparse mask in FlexAttention's BlockMask format (device int32 arrays). Partial blocks run
 * the mask_mod; full blocks skip it; absent blocks are never loaded. H may be 1 (broadcast). */
typedef struct fa4_block_mask {
    size_t struct_size;
    int32_t batch, heads;         /* B (or 1) and H (or 1) of the index arrays */
    int32_t q_block, kv_block;    /* block sizes in tokens, e.g. 128 and 128 */
    int32_t num_q_blocks, num_kv_blocks;
    const int32_t *kv_num_blocks;      /* [B, H, num_q_blocks] partial blocks per q block */
    const int32_t *kv_indices;         /* [B, H, num_q_blocks, num_kv_blocks] */
    const int32_t *full_kv_num_blocks; /* may be NULL: no full blocks */
    const int32_t *full_kv_indices;
    /* transposed lists for the backward (KV-stationary): */
    const int32_t *q_num_blocks;       /* [B, H, num_kv_blocks] */
    const int32_t *q_indices;          /* [B, H, num_kv_blocks, num_q_blocks] */
    const int32_t *full_q_num_blocks;
    const int32_t *full_q_indices;
} fa4_block_mask;

typedef struct fa4_fwd_args {
    size_t struct_size;
    fa4_tensor q;        /* [B, Hq, Sq, D]   (strides free: BHSD, BSHD, ...) */
    fa4_tensor k;        /* [B, Hkv, Skv, D] */
    fa4_tensor v;        /* [B, Hkv, Skv, Dv] */
    fa4_tensor o;        /* [B, Hq, Sq, Dv] output */
    fa4_tensor lse;      /* [B, Hq, Sq] fp32, natural log; data NULL = not wanted */
    float scale;         /* 0 = 1/sqrt(D); any other finite value, negative too (for a literal
                            zero, uniform weights, pass FLT_MIN: q.k times it vanishes next to 1) */
    const fa4_aux_value *aux;
    int32_t num_aux;
    const fa4_block_mask *block_mask; /* NULL = dense (mask_mod, if any, on every block) */
    /* Variable-length batch: tensors hold packed tokens with shape[0] == 1 and shape[2] the total;
     * cu_seqlens_* are device int32 arrays of num_seqs + 1 prefix sums. NULL = fixed length. */
    const int32_t *cu_seqlens_q;
    const int32_t *cu_seqlens_k;
    int32_t num_seqs;
    int32_t max_seqlen_q, max_seqlen_k;
    int64_t q_offset, kv_offset; /* added to q_idx / kv_idx the mods see (context parallelism) */
    void *stream;        /* CUstream / cudaStream_t; NULL = legacy default stream */
    /* Optional device workspace for the dynamic tile schedule (fa4_fwd_workspace_size). NULL: the
     * static schedule. Given: at least that many bytes, 256-byte aligned, any contents: the launch
     * itself initialises what it uses, on args->stream, before the kernel runs. So one workspace
     * serves successive launches on one stream (stream order keeps them apart); launches that may
     * run at the same time (other streams, concurrent graph branches) need distinct workspaces. */
    void *workspace;
    size_t workspace_size;
} fa4_fwd_args;

typedef struct fa4_bwd_args {
    size_t struct_size;
    fa4_tensor q, k, v, o, dout;
    fa4_tensor lse;      /* from the forward; required */
    fa4_tensor dlse;     /* optional: d loss / d LSE, laid out as lse ([B, Hq, Sq] fp32; varlen
                            [1, Hq, total_q]), for losses that use the LSE (combining partial
                            attention results, z-loss); data NULL: no LSE term */
    fa4_tensor dq, dk, dv; /* outputs, same shapes as q, k, v */
    float scale;         /* the forward's */
    const fa4_aux_value *aux;
    int32_t num_aux;
    const fa4_block_mask *block_mask;
    const int32_t *cu_seqlens_q;
    const int32_t *cu_seqlens_k;
    int32_t num_seqs;
    int32_t max_seqlen_q, max_seqlen_k;
    int64_t q_offset, kv_offset;
    int32_t deterministic; /* 1: bitwise identical dq, dk, dv and trainable aux gradients on
                              every run. The aux gradients are summed as integers in units of
                              2^-56 (each term rounded there; a term of magnitude 2^40 or more,
                              or not finite, counts as +-inf / NaN), then added into grad; the
                              workspace holds 24 bytes an element of each trainable tensor for
                              it, and the kernel needs FA4_COMPILE_DETERMINISTIC (spec.flags) */
    void *workspace;       /* device memory of fa4_bwd_workspace_size() bytes */
    size_t workspace_size;
    void *stream;
} fa4_bwd_args;

FA4_API void fa4_fwd_args_init(fa4_fwd_args *args);
FA4_API void fa4_bwd_args_init(fa4_bwd_args *args);

/* Checks the arguments (shapes, strides, dtypes, head dims, Hq % Hkv, alignment, aux count and
 * types) and launches asynchronously on args->stream. Nothing runs when the status is not FA4_OK. */
FA4_API fa4_status fa4_launch_fwd(fa4_kernel *kernel, const fa4_fwd_args *args);
/* Bytes of device workspace that fa4_launch_fwd can use for these arguments (workspace fields
 * ignored): with it the sm90 forward hands out its tiles from a counter in the workspace (each CTA
 * takes the next tile when it is free, heaviest first within groups of heads) instead of dealing
 * them out in a fixed order (and, in builds with FA4_SM90_RELT_BOUNDS, keeps per batch entry and
 * head the offsets kv - q beyond which a score_mod of the form score + g(kv - q) adds one value);
 * the outputs are bitwise the same either way. 0 where the kernel path
 * has no use for one (sm80): a workspace given there is ignored. */
FA4_API fa4_status fa4_fwd_workspace_size(fa4_kernel *kernel, const fa4_fwd_args *args,
                                          size_t *bytes);
/* Bytes of device workspace fa4_launch_bwd needs for these arguments (workspace fields ignored). */
FA4_API fa4_status fa4_bwd_workspace_size(fa4_kernel *kernel, const fa4_bwd_args *args,
                                          size_t *bytes);
FA4_API fa4_status fa4_launch_bwd(fa4_kernel *kernel, const fa4_bwd_args *args);

/* Evaluate the kernel's mask_mod on the GPU into a block mask without materialising the S x S mask.
 * The caller owns the device buffers given in out (sizes from fa4_block_mask_sizes). */
FA4_API fa4_status fa4_block_mask_sizes(int32_t batch, int32_t heads, int64_t seqlen_q,
                                        int64_t seqlen_kv, int32_t q_block, int32_t kv_block,
                                        int64_t *num_q_blocks, int64_t *num_kv_blocks);
FA4_API fa4_status fa4_block_mask_create(fa4_kernel *kernel, int32_t batch, int32_t heads,
                                         int64_t seqlen_q, int64_t seqlen_kv,
                                         const fa4_aux_value *aux, int32_t num_aux,
                                         fa4_block_mask *out, void *stream);

/* ------------------------------------------------------------------------------------------------
 * The CPU evaluator.
 */
/* Evaluate a mod on the CPU (the evaluator the tests' float64 references use): the score_mod's
 * value and d value / d score at one point (identity and 1 without a score_mod), and whether the
 * mask_mod allows the pair (1 without a mask_mod). Aux values as at launch but with HOST pointers.
 * Any of value, dvalue_dscore, allowed may be NULL. Errors in the source are reported on ctx as
 * fa4_jit_compile reports them. */
FA4_API fa4_status fa4_mod_eval(fa4_ctx *ctx, const char *source, size_t source_len, double score,
                                int32_t b, int32_t h, int32_t q_idx, int32_t kv_idx,
                                const fa4_aux_value *aux, int32_t num_aux, double *value,
                                double *dvalue_dscore, int32_t *allowed);


#ifdef __cplusplus
}
#endif
#endif /* FA4JIT_H */
