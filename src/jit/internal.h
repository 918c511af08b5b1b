/*
 * internal.h - the objects behind the public handles and the seams between the jit layer's parts:
 * the ctx (device, cache, last error), the kernel (loaded programs), the validated attention problem
 * handed to a kernel path's launcher, and error recording.
 */
#ifndef FA4_JIT_INTERNAL_H
#define FA4_JIT_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>

#include "fa4jit.h"
#include "cu.h"
#include "mod/mod.h"

struct fa4__cache;

#define FA4__CTX_MAGIC 0x66613463u    /* "fa4c" */
#define FA4__KERNEL_MAGIC 0x6661346bu /* "fa4k" */
#define FA4__DEAD_MAGIC 0xdeadfa40u

/* ------------------------------------------------------------------------------------------ ctx */
struct fa4_ctx {
    uint32_t magic;
    pthread_mutex_t lock;        /* guards the error fields, the kernel list and the memory table */
    int device;                  /* ordinal, or FA4_DEVICE_NONE */
    const fa4__cu *cu;           /* NULL for a deviceless ctx */
    CUdevice cu_device;
    CUcontext cu_context;        /* the device's primary context (shared with the CUDA runtime) */
    char arch[16];               /* "sm_90a", "" when deviceless */
    int sm_count;
    int max_smem_optin;
    struct fa4__cache *cache;
    struct fa4_kernel *kernels;  /* every live kernel, for the memory table and destroy */
    /* last error */
    fa4_status err;
    int err_line, err_col;
    char errmsg[4096];
    char *compile_log;           /* malloc'd, or NULL */
};

/* Record an error on ctx (printf-style message) and return the status; FA4_OK clears. */
fa4_status fa4__set_error(fa4_ctx *ctx, fa4_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
fa4_status fa4__set_error_at(fa4_ctx *ctx, fa4_status st, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Take ownership of a malloc'd compile log. */
void fa4__set_compile_log(fa4_ctx *ctx, char *log);
/* Record a failed CUDA call: "<what>: CUDA_ERROR_x: text". */
fa4_status fa4__cu_error(fa4_ctx *ctx, fa4_status st, CUresult r, const char *what);

/* Handle checks: a live ctx/kernel, or NULL (destroyed handles are found in a registry). */
int fa4__ctx_alive(const fa4_ctx *ctx);
int fa4__kernel_alive(const fa4_kernel *k);
int fa4__sm90_fwd64_consumers(void); /* path_sm90.c: FA4JIT_SM90_FWD64_CONSUMERS: 3, 2, 0 unset */
int fa4__handle_register(const void *p);
void fa4__handle_unregister(const void *p);

/* Push / pop the ctx's CUDA context around driver calls. */
fa4_status fa4__ctx_push(fa4_ctx *ctx);
void fa4__ctx_pop(fa4_ctx *ctx);

/* --------------------------------------------------------------------------------------- kernel */
#define FA4__PROGRAM_FNS 16
typedef struct fa4__program {
    char name[32];               /* "fwd", "bwd_pre", "bwd_main", "bwd_post", "block_mask" */
    char function[64];           /* its main __global__ function (resource queries) */
    uint8_t *cubin;
    size_t cubin_size;
    char *source;                /* generated main source (misses only), for --dump-source */
    CUmodule module;             /* NULL when not loaded (deviceless, or other arch) */
    /* its function symbols (names in cubin), set by fa4__kernel_load; num_fns -1 (not readable)
     * or over FA4__PROGRAM_FNS: fa4__kernel_function reads the cubin instead */
    const char *fns[FA4__PROGRAM_FNS];
    int num_fns;
    fa4_program_info info;
} fa4__program;

struct fa4_kernel {
    uint32_t magic;
    fa4_ctx *ctx;
    struct fa4_kernel *next;     /* in ctx->kernels */
    int refs;                    /* users holding it (memory-table hits share one kernel) */
    fa4__mod *mod;
    fa4_kernel_spec spec;        /* copy; source fields point into owned storage below */
    char *source_copy;
    char key[33];
    char *key_inputs;
    uint8_t raw_key[16];         /* hash of the spec as given: the fast in-process lookup */
    int path;                    /* fa4_path resolved */
    int num_programs;
    fa4__program programs[FA4_MAX_PROGRAMS];
    fa4_kernel_info info;
    /* aux parameter block layout (libffi) */
    size_t aux_size, aux_align;
    size_t aux_offset[3 * FA4__MOD_MAX_AUX];
    int aux_members;
    /* path_sm90.c bwd_det_rotate: 0 not yet asked, 1 the deterministic dense walk ascends by
     * default, 2 it is rotated by default (score_mod with a relative or tile form); set at the
     * first deterministic launch (two threads launching at once compute the same value) */
    _Atomic int bwd_rot_pref;
};

/* Look up a __global__ function of a program; NULL when not loaded or absent. */
CUfunction fa4__kernel_function(fa4_kernel *k, const char *program, const char *function);
/* The generated header "fa4_mod.cuh" of plain attention (no mod source). */
extern const char fa4__plain_mod_header[];

/* Whether the kernel's programs were compiled with a path option (e.g. "-DX=1"): its key inputs
 * (compile.c) name it. */
int fa4__kernel_built_with(const fa4_kernel *k, const char *option);
/* The cache key of a spec (and, if inputs is not NULL, the malloc'd key-inputs text) without
 * compiling: for tests and tools. */
fa4_status fa4__spec_key(fa4_ctx *ctx, const fa4_kernel_spec *spec, char key[33], char **inputs);
/* Release everything a kernel owns (modules unloaded; caller holds the CUDA context). */
void fa4__kernel_free(fa4_kernel *k);

/* kernel.c: a kernel's programs and the cache. Free the cubins and sources (not the modules). */
void fa4__kernel_free_programs(fa4_kernel *k);
/* Put the kernel's programs into the ctx's cache under k->key_inputs (no cache: nothing). */
void fa4__kernel_cache_store(fa4_ctx *ctx, const fa4_kernel_spec *spec, const char *arch, fa4_kernel *k);
/* Fill k->programs from a cache entry; 0 on success, -1 when the entry lacks something (a miss). */
struct fa4__cache_entry;
int fa4__kernel_from_entry(const struct fa4__cache_entry *e, fa4_kernel *k);
/* Load every program on the ctx's device; on failure none stays loaded. */
fa4_status fa4__kernel_load(fa4_ctx *ctx, fa4_kernel *k);

/* Aux block (aux.c): layout from the mod's declarations; launch values checked and written. */
#define FA4__AUX_BLOCK_MAX 1024
fa4_status fa4__aux_layout(fa4_kernel *k);
fa4_status fa4__aux_fill(fa4_ctx *ctx, const fa4_kernel *k, const fa4_aux_value *aux, int num_aux,
                         int is_bwd, uint8_t *block, size_t block_cap);
/* The trainable aux tensors of a backward's filled block, in declaration order: where each one's
 * grad pointer lies in the block (byte offset) and its element count. Returns how many (at most
 * cap are written). */
int fa4__aux_trainable(const fa4_kernel *k, const uint8_t *block, size_t grad_off[], int64_t numel[],
                       int cap);
/* A path's program_desc.wanted for the deterministic mode's backward mains with fixed-point aux
 * gradients (launch.c): where the spec has trainable aux tensors and FA4_COMPILE_DETERMINISTIC. */
int fa4__aux_fx_wanted(const fa4_kernel_spec *spec, const fa4__mod *mod);

/* --------------------------------------------------------------------------------------- launch */
typedef struct fa4__tview {
    void *data;
    int64_t sb, sh, ss;          /* strides in elements of batch, head, sequence; the dim stride is 1 */
} fa4__tview;

/* A validated attention problem, identical for every kernel path. Varlen: batch = num_seqs,
 * seqlen_* = max_seqlen_*, total_* = packed token counts and batch strides are 0. */
typedef struct fa4__problem {
    int is_bwd;
    fa4_dtype dtype;
    int batch, hq, hkv, head_dim, head_dim_v;
    int64_t seqlen_q, seqlen_k;
    int64_t total_q, total_k;
    fa4__tview q, k, v, o, lse;  /* lse: sb, sh, ss in floats; lse.data may be NULL in the forward */
    fa4__tview dout, dq, dk, dv;
    fa4__tview dlse;             /* backward: data NULL = no LSE gradient */
    float scale;
    const int32_t *cu_seqlens_q, *cu_seqlens_k;
    int has_block_mask;
    fa4_block_mask bm;
    int64_t q_offset, kv_offset;
    const void *aux_block;       /* host copy of struct fa4_aux, laid out by libffi */
    size_t aux_size;
    int deterministic;
    int aux_fx;                  /* deterministic with trainable aux: the bwd_main*_fx programs, whose
                                    aux gradients go into launch.c's fixed-point accumulators */
    void *workspace;
    size_t workspace_size;
    CUstream stream;
} fa4__problem;

enum { FA4__MAX_SPILL_FALLBACKS = 3 };

/* One kernel path (sm80, sm90): which programs it compiles and how it launches them. */
typedef struct fa4__program_desc {
    const char *name;            /* "fwd" */
    const char *entry;           /* embedded file that is the program's main source: "sm80/fwd.cu" */
    uint32_t needs;              /* fa4_compile_flags bit that asks for it */
    const char *function;        /* main __global__ function, for the resource report */
    /* NVRTC options to compile once more with, in order, while ptxas reports spills or serialized
     * wgmma (cheaper register schedules); the build with the fewest spill bytes is kept. NULL ends
     * the list */
    const char *spill_fallback[FA4__MAX_SPILL_FALLBACKS];
    /* NULL, or where it returns N > 0 (the first build is likely to spill, and so are the levels
     * before the N-th): spill_fallback[0 .. N - 1] are compiled beside the first build rather than
     * after it spilled (compile.c; the kept build is the same, only the wall time differs) */
    int (*speculate)(const fa4_kernel_spec *spec, const fa4__mod *mod);
    /* NULL: compiled for every spec that asks for `needs`; else only where it returns non-zero (a
     * variant program that applies to some specs only, e.g. sm90's bwd_main90m80) */
    int (*wanted)(const fa4_kernel_spec *spec, const fa4__mod *mod);
    /* stack frame bytes (the entry's, as its cubin records them: where spills live) a build may
     * keep without its spill fallback running: 0 for every program but where a spilling first
     * build measured faster than its clean fallbacks (path_sm90.c's bwd_main90). A serialized
     * wgmma always falls back. */
    int frame_tolerance;
} fa4__program_desc;

typedef struct fa4__path_ops {
    int path;
    const fa4__program_desc *programs;
    int num_programs;
    /* Extra NVRTC options (e.g. "-DFA4_HEAD_DIM=128") for a kernel spec; returns count written. */
    int (*options)(const fa4_kernel_spec *spec, const char *arch, char opts[][64], int max);
    /* Dynamic shared memory a program's main function is launched with (for the report). */
    int (*smem_bytes)(const fa4_kernel_spec *spec, const char *program);
    fa4_status (*launch_fwd)(fa4_kernel *k, const fa4__problem *p);
    /* Bytes of forward workspace (the dynamic tile schedule's); 0: the path uses none. */
    fa4_status (*fwd_workspace)(fa4_kernel *k, const fa4__problem *p, size_t *bytes);
    fa4_status (*bwd_workspace)(fa4_kernel *k, const fa4__problem *p, size_t *bytes);
    fa4_status (*launch_bwd)(fa4_kernel *k, const fa4__problem *p);
    fa4_status (*block_mask)(fa4_kernel *k, int batch, int heads, int64_t sq, int64_t skv,
                             const void *aux_block, size_t aux_size, fa4_block_mask *out,
                             CUstream stream);
} fa4__path_ops;

extern const fa4__path_ops fa4__sm80_ops;
extern const fa4__path_ops fa4__sm90_ops;
const fa4__path_ops *fa4__path_for(int path);
/* The frame_tolerance of a path's program by name; 0 where there is no such program (the resource
 * guards' allowance, from the table compile.c decides on). */
int fa4__frame_tolerance(int path, const char *program);

/* --------------------------------------------------------------------------- embedded sources */
typedef struct fa4__embedded_file {
    const char *name;            /* "sm80/fwd.cu", relative to src/kernels */
    const char *text;
    size_t size;
} fa4__embedded_file;

/* The kernel sources (embedded, or read from FA4JIT_KERNEL_DIR / the source tree in developer
 * builds). Returns the table and its length; NULL with a reason when they cannot be read. */
const fa4__embedded_file *fa4__kernel_sources(int *count, const char **why);
const char *fa4__kernel_sources_fingerprint(void);
/* SHA-256 (32 hex digits) of the mod emitter's sources (src/jit/mod), taken at build time by
 * cmake/embed.cmake: the header it writes is in every program, so it is in every cache key. */
extern const char fa4__emitter_fingerprint[];

/* ------------------------------------------------------------------------------------- helpers */
int fa4__arch_parse(const char *arch, int *major, int *minor, int *suffix_a);

#endif /* FA4_JIT_INTERNAL_H */
