/*
 * mod.h - the mod language front end as the rest of fa4jit sees it (MODS.md is the language).
 *
 * One call parses and checks a source holding a score_mod and/or a mask_mod (plus helpers) into an
 * fa4__mod; from it come the aux parameter list, the canonical-token hash for the cache key, the
 * CUDA text spliced into the kernel skeletons (forward, derivative for the backward), and a CPU
 * evaluator used by references and `fa4jit check --eval`.
 *
 * The emitted CUDA (fa4__mod_emit_cuda) is the header "fa4_mod.cuh" of every kernel program and
 * defines exactly this interface, whatever the mod holds (identity / always-true when absent):
 *
 *   #define FA4_HAS_SCORE_MOD 0|1
 *   #define FA4_HAS_MASK_MOD 0|1
 *   #define FA4_NUM_AUX n
 *   #define FA4_HAS_TRAINABLE_AUX 0|1
 *   #define FA4_MASK_MOD_GATHERS 0|1   mask_mod reads an aux tensor at an index that depends on
 *                                      q_idx or kv_idx (document's doc_id[q_idx])
 *   struct fa4_aux { ... };   natural C layout, one member group per aux parameter in declaration
 *                              order: tensor `const T *name` -> `const T *name; long long name_len;`
 *                              and, if trainable, `float *name_grad;` right after; scalar `float`,
 *                              `int`, `bool` -> that member. T maps bf16/half to unsigned short,
 *                              bool to unsigned char, int64 to long long. An empty list emits one
 *                              `int fa4_unused_;` member so the struct is never empty.
 *   __device__ __forceinline__ float fa4_score_mod(float score, int b, int h, int q_idx, int kv_idx,
 *                                                  const fa4_aux &aux);
 *   __device__ __forceinline__ bool fa4_mask_mod(int b, int h, int q_idx, int kv_idx,
 *                                                const fa4_aux &aux);
 *   // value of score_mod and d score_mod / d score in *dscore:
 *   __device__ __forceinline__ float fa4_score_mod_fwd_deriv(float score, int b, int h, int q_idx,
 *                                       int kv_idx, const fa4_aux &aux, float *dscore);
 *   // for every trainable aux read aux[i] inside score_mod: atomicAdd(&grad[i], g * d mod/d aux[i])
 *   __device__ __forceinline__ void fa4_score_mod_aux_grad(float score, int b, int h, int q_idx,
 *                                       int kv_idx, const fa4_aux &aux, float g);
 *
 *   // deterministic variant (added): the same terms, not added. For trainable read site k
 *   // (0 <= k < FA4_NUM_AUX_GRAD_SITES): where[k] = &grad[i] and what[k] = g * d mod/d aux[i],
 *   // or where[k] = nullptr when the site did not run. Arrays of max(1, FA4_NUM_AUX_GRAD_SITES).
 *   #define FA4_NUM_AUX_GRAD_SITES n
 *   __device__ __forceinline__ void fa4_score_mod_aux_grad_terms(float score, int b, int h,
 *                                       int q_idx, int kv_idx, const fa4_aux &aux, float g,
 *                                       float **where, float *what);
 *   // (added) only where FA4_NUM_AUX_GRAD_SITES > 0: the kernels' run-combining accumulation of
 *   // the same terms. fwd_deriv_sites is fwd_deriv plus, from the same pass, the index at[k]
 *   // that trainable site k read (-1: not read); acc lives in the kernel's registers; a term for
 *   // another index than the site's current run first adds that run (atomicAdd); flush (every
 *   // lane of the warp, converged) adds what is left, one atomic per warp where all lanes hold
 *   // one index, and resets acc.
 *   __device__ __forceinline__ float fa4_score_mod_fwd_deriv_sites(float score, int b, int h,
 *                                       int q_idx, int kv_idx, const fa4_aux &aux, float *dscore,
 *                                       int *at);
 *   struct fa4_aux_grad_acc { ... };
 *   __device__ __forceinline__ void fa4_aux_grad_begin(fa4_aux_grad_acc &acc);
 *   __device__ __forceinline__ void fa4_score_mod_aux_grad_acc(float score, int b, int h,
 *                                       int q_idx, int kv_idx, const fa4_aux &aux, float g,
 *                                       const int *at, fa4_aux_grad_acc &acc);
 *   __device__ __forceinline__ void fa4_aux_grad_flush(const fa4_aux &aux, fa4_aux_grad_acc &acc);
 *   // (added) where a finished run goes: the header's own fa4_aux_grad_commit(k, grad, i, v) is
 *   // atomicAdd(grad + i, v); a program that defines FA4_AUX_GRAD_SINK to 1 declares its own
 *   // before the header (the sm90 backward: its shared-memory window, else global)
 *   __device__ __forceinline__ void fa4_aux_grad_commit(int k, float *grad, int i, float v);
 *   // (added) the indices trainable site k can read over a box of positions (b; heads, queries
 *   // and keys as intervals), cut to the tensor: [lo, hi] (interval evaluation as the tile form's,
 *   // emit_tile.c; the whole tensor where it cannot say); and site k's gradient tensor
 *   __device__ __forceinline__ void fa4_aux_grad_site_range(int k, int b, int h_lo, int h_hi,
 *                                       int q_lo, int q_hi, int kv_lo, int kv_hi, const fa4_aux &aux,
 *                                       long long &lo, long long &hi);
 *   __device__ __forceinline__ float *fa4_aux_grad_site_grad(int k, const fa4_aux &aux);
 *   // (added) with FA4_CHECKED_DEFERRED: call once at the end of a kernel; traps if a read of
 *   // this thread was out of range (a no-op otherwise)
 *   __device__ __forceinline__ void fa4_mod_checked_finish();
 *
 * Aux reads are clamped to [0, len-1] (or trap when FA4_CHECKED is defined to 1 by the program).
 * Knobs the program may define to 1 before the header (both default to 0):
 *   FA4_CHECKED_DEFERRED  with FA4_CHECKED, an out-of-range read clamps and sets a flag instead of
 *                         trapping on the spot; fa4_mod_checked_finish() traps on the flag (keeps
 *                         the trap out of hot loops, where it makes ptxas spill)
 *   FA4_FAST_MATH         tanhf -> tanh.approx.f32, expf -> __expf, float a / b -> __fdividef
 *                         (in forward and derivative code; the CPU evaluator stays exact)
 * The text uses no headers and compiles under NVRTC for sm_80 and sm_90a without warnings.
 *
 * The host computes the same fa4_aux layout with libffi (src/jit/aux.c) from fa4__mod_aux().
 */
#ifndef FA4_JIT_MOD_H
#define FA4_JIT_MOD_H

#include <stddef.h>
#include <stdint.h>

#include "fa4jit.h"

/* Limits (each exceeded gives FA4_ERR_MOD_LIMIT with a clear message). */
#define FA4__MOD_MAX_SOURCE (64 * 1024)
#define FA4__MOD_MAX_DEPTH 64
#define FA4__MOD_MAX_AUX 16
#define FA4__MOD_MAX_NAME 63
/* Reads of trainable aux tensors in score_mod (the backward differentiates once per read site);
 * more gives FA4_ERR_AUX from fa4__mod_set_trainable. */
#define FA4__MOD_MAX_GRAD_SITES 64

/* One diagnostic: where, what, and the compiler-style rendering with the source line and caret:
 *   score_mod:2:21: error: unknown identifier 'slope'; did you mean 'slopes'?
 *       return score + slope[h] * (float)(kv_idx - q_idx);
 *                      ^~~~~                                                                */
typedef struct fa4__diag {
    fa4_status status; /* FA4_ERR_MOD_SYNTAX, FA4_ERR_MOD_CHECK, FA4_ERR_MOD_LIMIT, FA4_ERR_OUT_OF_MEMORY */
    int line, col;     /* 1-based, in the user's source; 0 when not applicable */
    char message[512]; /* "unknown identifier 'slope'; did you mean 'slopes'?" */
    char rendered[2048];
} fa4__diag;

typedef struct fa4__aux_decl {
    char name[FA4__MOD_MAX_NAME + 1];
    int is_tensor;     /* 1: const T *name; 0: scalar */
    fa4_dtype dtype;   /* tensor element type; scalars: FA4_DTYPE_FP32 / INT32 / BOOL */
    int used_by_score; /* declared by score_mod */
    int used_by_mask;  /* declared by mask_mod */
    int trainable;     /* set by fa4__mod_set_trainable */
} fa4__aux_decl;

typedef struct fa4__mod fa4__mod;

/* Parse and check. `name` names the source in messages when it is not a mod function (usually the
 * messages name the function: "score_mod:2:21: ..."). On error returns the status, fills *diag
 * (when not NULL) and sets *out to NULL. src need not be NUL-terminated. */
fa4_status fa4__mod_parse(const char *src, size_t len, const char *name, fa4__mod **out,
                          fa4__diag *diag);
void fa4__mod_free(fa4__mod *m);

int fa4__mod_has_score(const fa4__mod *m);
int fa4__mod_has_mask(const fa4__mod *m);
int fa4__mod_num_aux(const fa4__mod *m);
const fa4__aux_decl *fa4__mod_aux(const fa4__mod *m, int i);

/* Mark aux tensors trainable by name. An unknown name, a scalar, or an aux that score_mod does not
 * read gives FA4_ERR_AUX with a message in *diag. */
fa4_status fa4__mod_set_trainable(fa4__mod *m, const char *const *names, int n, fa4__diag *diag);

/* XXH3-128 of the canonical token stream (whitespace and comments do not change it) plus the
 * trainable set. */
void fa4__mod_hash(const fa4__mod *m, uint8_t out[16]);

/* Emit "fa4_mod.cuh" (see the top of this file). `checked` selects trapping aux reads.
 * Returns a malloc'd NUL-terminated string or NULL on out of memory. #line directives map every
 * line of user code back to `source_name`:line so NVRTC messages point at the user's source. */
char *fa4__mod_emit_cuda(const fa4__mod *m, const char *source_name, int checked);
/* What the sm90 forward's release build makes of score_mod (emit_cuda.c, emit_tile.c): how many
 * position-independent parts it computes once per fragment, how many index-dependent parts can
 * be one value over a tile (0: no tile form), and whether the tile form is score + c (the
 * backward's add form), whether it has the affine form (emit_affine.c) and whether the relative
 * form (score + g(kv_idx - q_idx), emit_rel.c), 2 where g is also costly
 * (FA4_SCORE_MOD_REL_HEAVY: a transcendental or root builtin, or a float division); tile_calls (may
 * be NULL): whether the tile form's test evaluates a helper call over the box (which the sm90
 * forward leaves to its relative-form table); prescaled (may be NULL): whether it has the prescaled forms
 * (FA4_SCORE_MOD_PRESCALE: the score read only as score / D, D the same at every position).
 * Returns 0, or -1 when out of memory. */
int fa4__mod_forward_forms(const fa4__mod *m, int *hoisted, int *tile_parts, int *tile_add, int *affine,
                           int *rel, int *tile_calls, int *prescaled);

/* CPU evaluator. Aux values are fa4_aux_value with HOST pointers in data (same order and types as
 * declared). Floats are evaluated in double, ints with int32 wrap-around semantics. Out-of-range
 * aux reads clamp, as the kernel does. Returns FA4_OK or FA4_ERR_AUX / FA4_ERR_INVALID_ARGUMENT
 * (detail in diag). With no score_mod, score_mod is the identity; with no mask_mod, true. */
fa4_status fa4__mod_eval_score(const fa4__mod *m, double score, int b, int h, int q_idx, int kv_idx,
                               const fa4_aux_value *aux, int num_aux, double *value,
                               double *dvalue_dscore, fa4__diag *diag);
fa4_status fa4__mod_eval_mask(const fa4__mod *m, int b, int h, int q_idx, int kv_idx,
                              const fa4_aux_value *aux, int num_aux, int *allowed,
                              fa4__diag *diag);
/* d score_mod / d aux[aux_index][elem] by forward-mode, for the finite-difference tests and the
 * reference of trainable-aux gradients. */
fa4_status fa4__mod_eval_score_daux(const fa4__mod *m, double score, int b, int h, int q_idx,
                                    int kv_idx, const fa4_aux_value *aux, int num_aux,
                                    int aux_index, int64_t elem, double *deriv, fa4__diag *diag);

#endif /* FA4_JIT_MOD_H */
