/*
 * launch.c - the launch entry points. Everything a caller can get wrong is checked here, once, for
 * every kernel path: shapes, strides, dtypes, head dims, Hq % Hkv, alignment, varlen and block-mask
 * arguments, aux values. The result is an fa4__problem that the path's launcher trusts. Nothing
 * runs unless every check passed, and each failure says which argument and why.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void fa4_fwd_args_init(fa4_fwd_args *a)
{
    if (!a)
        return;
    memset(a, 0, sizeof *a);
    a->struct_size = sizeof *a;
}

void fa4_bwd_args_init(fa4_bwd_args *a)
{
    if (!a)
        return;
    memset(a, 0, sizeof *a);
    a->struct_size = sizeof *a;
}

static int has_program(const fa4_kernel *k, const char *name)
{
    for (int i = 0; i < k->num_programs; i++)
        if (!strcmp(k->programs[i].name, name))
            return 1;
    return 0;
}

/* Vector loads move 16 bytes: pointers and the strides of rows must keep that alignment. */
#define VEC_BYTES 16

/* Check one attention tensor [B, H, S, D] and fill its view. */
static fa4_status check_tensor(fa4_ctx *ctx, const char *name, const fa4_tensor *t, fa4_dtype dtype,
                               int64_t b, int64_t h, int64_t s, int64_t d, int varlen,
                               fa4__tview *view)
{
    if (!t->data)
        return fa4__set_error(ctx, FA4_ERR_INVALID_ARGUMENT, "%s.data is NULL", name);
    if (t->dtype != (int32_t)dtype)
        return fa4__set_error(ctx, FA4_ERR_DTYPE, "%s.dtype is %s but the kernel was compiled for %s",
                              name, fa4_dtype_name((fa4_dtype)t->dtype), fa4_dtype_name(dtype));
    if (t->ndim != 4)
        return fa4__set_error(ctx, FA4_ERR_SHAPE, "%s.ndim is %d; attention tensors are 4-D "
                              "[batch, heads, seqlen, head_dim]", name, t->ndim);
    const int64_t want[4] = {b, h, s, d};
    static const char *const dims[4] = {"batch", "heads", "seqlen", "head_dim"};
    for (int i = 0; i < 4; i++) {
        if (want[i] >= 0 && t->shape[i] != want[i])
            return fa4__set_error(ctx, FA4_ERR_SHAPE, "%s.shape[%d] (%s) is %lld, expected %lld%s",
                                  name, i, dims[i], (long long)t->shape[i], (long long)want[i],
                                  i == 0 && varlen ? " (a variable-length batch is packed: "
                                                     "shape[0] must be 1)" : "");
        if (t->shape[i] <= 0)
            return fa4__set_error(ctx, FA4_ERR_SHAPE, "%s.shape[%d] (%s) is %lld; must be >= 1",
                                  name, i, dims[i], (long long)t->shape[i]);
    }
    if (t->shape[2] > INT32_MAX / 2)
        return fa4__set_error(ctx, FA4_ERR_SHAPE, "%s.shape[2] is %lld: sequences longer than "
                              "2^30 tokens are not supported", name, (long long)t->shape[2]);
    if (t->strides[3] != 1)
        return fa4__set_error(ctx, FA4_ERR_STRIDE, "%s.strides[3] is %lld; the head_dim axis must "
                              "be contiguous (stride 1)", name, (long long)t->strides[3]);
    size_t es = fa4_dtype_size(dtype);
    for (int i = 0; i < 3; i++) {
        if (t->strides[i] < 0)
            return fa4__set_error(ctx, FA4_ERR_STRIDE, "%s.strides[%d] is negative (%lld)", name, i,
                                  (long long)t->strides[i]);
        if ((t->strides[i] * (int64_t)es) % VEC_BYTES != 0 && t->shape[i] > 1)
            return fa4__set_error(ctx, FA4_ERR_ALIGNMENT,
                                  "%s.strides[%d] is %lld elements: strides must be multiples of %d "
                                  "elements (16 bytes)", name, i, (long long)t->strides[i],
                                  (int)(VEC_BYTES / es));
    }
    if ((uintptr_t)t->data % VEC_BYTES != 0)
        return fa4__set_error(ctx, FA4_ERR_ALIGNMENT, "%s.data (%p) is not 16-byte aligned", name,
                              t->data);
    view->data = t->data;
    view->sb = varlen ? 0 : t->strides[0];
    view->sh = t->strides[1];
    view->ss = t->strides[2];
    return FA4_OK;
}

static fa4_status check_lse(fa4_ctx *ctx, const char *name, const fa4_tensor *t, int64_t b,
                            int64_t h, int64_t s, int varlen, fa4__tview *view)
{
    if (t->dtype != FA4_DTYPE_FP32)
        return fa4__set_error(ctx, FA4_ERR_DTYPE, "%s.dtype is %s; the LSE is float (fp32)", name,
                              fa4_dtype_name((fa4_dtype)t->dtype));
    if (t->ndim != 3)
        return fa4__set_error(ctx, FA4_ERR_SHAPE, "%s.ndim is %d; the LSE is 3-D [batch, heads, "
                              "seqlen]", name, t->ndim);
    const int64_t want[3] = {varlen ? 1 : b, h, s};
    for (int i = 0; i < 3; i++)
        if (t->shape[i] != want[i])
            return fa4__set_error(ctx, FA4_ERR_SHAPE, "%s.shape[%d] is %lld, expected %lld", name, i,
                                  (long long)t->shape[i], (long long)want[i]);
    for (int i = 0; i < 3; i++)
        if (t->strides[i] < 0)
            return fa4__set_error(ctx, FA4_ERR_STRIDE, "%s.strides[%d] is negative", name, i);
    if ((uintptr_t)t->data % 4 != 0)
        return fa4__set_error(ctx, FA4_ERR_ALIGNMENT, "%s.data is not 4-byte aligned", name);
    view->data = t->data;
    view->sb = varlen ? 0 : t->strides[0];
    view->sh = t->strides[1];
    view->ss = t->strides[2];
    return FA4_OK;
}

static fa4_status check_block_mask(fa4_ctx *ctx, const fa4_block_mask *bm, int64_t batch,
                                   int64_t hq, int64_t sq, int64_t skv, int is_bwd,
                                   fa4__problem *p)
{
    if (bm->struct_size != sizeof *bm)
        return fa4__set_error(ctx, FA4_ERR_STRUCT_SIZE, "block_mask.struct_size is %zu; this "
                              "library knows %zu", bm->struct_size, sizeof *bm);
    if (bm->q_block <= 0 || bm->kv_block <= 0 || bm->q_block % 16 || bm->kv_block % 16)
        return fa4__set_error(ctx, FA4_ERR_INVALID_ARGUMENT, "block_mask block sizes %d x %d: "
                              "must be positive multiples of 16", bm->q_block, bm->kv_block);
    if (bm->batch != 1 && bm->batch != batch)
        return fa4__set_error(ctx, FA4_ERR_SHAPE, "block_mask.batch is %d; expected 1 or %lld",
                              bm->batch, (long long)batch);
    if (bm->heads != 1 && bm->heads != hq)
        return fa4__set_error(ctx, FA4_ERR_SHAPE, "block_mask.heads is %d; expected 1 or %lld "
                              "(query heads)", bm->heads, (long long)hq);
    int64_t nq = (sq + bm->q_block - 1) / bm->q_block, nk = (skv + bm->kv_block - 1) / bm->kv_block;
    if (bm->num_q_blocks < nq || bm->num_kv_blocks < nk)
        return fa4__set_error(ctx, FA4_ERR_SHAPE, "block_mask covers %d x %d blocks but the "
                              "sequences need %lld x %lld", bm->num_q_blocks, bm->num_kv_blocks,
                              (long long)nq, (long long)nk);
    if (!bm->kv_num_blocks || !bm->kv_indices)
        return fa4__set_error(ctx, FA4_ERR_INVALID_ARGUMENT,
                              "block_mask.kv_num_blocks and kv_indices are required");
    if (!bm->full_kv_num_blocks != !bm->full_kv_indices)
        return fa4__set_error(ctx, FA4_ERR_INVALID_ARGUMENT, "block_mask: full_kv_num_blocks and "
                              "full_kv_indices must be given together");
    if (is_bwd) {
        if (!bm->q_num_blocks || !bm->q_indices)
            return fa4__set_error(ctx, FA4_ERR_INVALID_ARGUMENT, "block_mask: the backward needs "
                                  "the transposed lists q_num_blocks and q_indices");
        if (!bm->full_q_num_blocks != !bm->full_q_indices ||
            !bm->full_q_num_blocks != !bm->full_kv_num_blocks)
            return fa4__set_error(ctx, FA4_ERR_INVALID_ARGUMENT, "block_mask: full_q_num_blocks "
                                  "and full_q_indices must be given exactly when the full kv "
                                  "lists are");
    }
    p->has_block_mask = 1;
    p->bm = *bm;
    return FA4_OK;
}

/* Everything forward and backward share: q, k, v, o, lse, scale, varlen, offsets, mask, aux. */
typedef struct common_args {
    const fa4_tensor *q, *k, *v, *o, *lse;
    float scale;
    const fa4_aux_value *aux;
    int32_t num_aux;
    const fa4_block_mask *bm;
    const int32_t *cu_q, *cu_k;
    int32_t num_seqs, max_q, max_k;
    int64_t q_offset, kv_offset;
    void *stream;
} common_args;

static fa4_status check_common(fa4_kernel *k, const common_args *a, int is_bwd, fa4__problem *p,
                               uint8_t *aux_block)
{
    fa4_ctx *ctx = k->ctx;
    fa4_status st;
    fa4_dtype dt = (fa4_dtype)k->spec.dtype;
    const int D = k->spec.head_dim, Dv = k->spec.head_dim_v;
    int varlen = a->cu_q || a->cu_k;

    memset(p, 0, sizeof *p);
    p->is_bwd = is_bwd;
    p->dtype = dt;
    p->head_dim = D;
    p->head_dim_v = Dv;
    if (varlen) {
        if (!a->cu_q || !a->cu_k)
            return fa4__set_error(ctx, FA4_ERR_INVALID_ARGUMENT, "variable-length batch: give both "
                                  "cu_seqlens_q and cu_seqlens_k");
        if (a->num_seqs < 1 || a->max_q < 1 || a->max_k < 1)
            return fa4__set_error(ctx, FA4_ERR_INVALID_ARGUMENT, "variable-length batch: num_seqs "
                                  "(%d), max_seqlen_q (%d) and max_seqlen_k (%d) must be >= 1",
                                  a->num_seqs, a->max_q, a->max_k);
        if ((uintptr_t)a->cu_q % 4 || (uintptr_t)a->cu_k % 4)
            return fa4__set_error(ctx, FA4_ERR_ALIGNMENT, "cu_seqlens arrays must be 4-byte aligned");
    }
    int64_t B = varlen ? 1 : a->q->shape[0];
    int64_t Hq = a->q->shape[1], Hkv = a->k->shape[1];
    int64_t Sq = a->q->shape[2], Skv = a->k->shape[2];
    if ((st = check_tensor(ctx, "q", a->q, dt, B, -1, -1, D, varlen, &p->q)) != FA4_OK)
        return st;
    if ((st = check_tensor(ctx, "k", a->k, dt, B, -1, -1, D, varlen, &p->k)) != FA4_OK)
        return st;
    if ((st = check_tensor(ctx, "v", a->v, dt, B, Hkv, Skv, Dv, varlen, &p->v)) != FA4_OK)
        return st;
    if ((st = check_tensor(ctx, "o", a->o, dt, B, Hq, Sq, Dv, varlen, &p->o)) != FA4_OK)
        return st;
    if (Hq % Hkv != 0)
        return fa4__set_error(ctx, FA4_ERR_SHAPE, "q has %lld heads and k/v %lld: the query heads "
                              "must be a multiple of the key/value heads (GQA/MQA)",
                              (long long)Hq, (long long)Hkv);
    if (Hq > 65535 || B > 65535)
        return fa4__set_error(ctx, FA4_ERR_SHAPE, "batch (%lld) and heads (%lld) must be <= 65535",
                              (long long)B, (long long)Hq);
    if (a->lse->data || is_bwd) {
        if (!a->lse->data)
            return fa4__set_error(ctx, FA4_ERR_INVALID_ARGUMENT, "lse.data is NULL: the backward "
                                  "needs the forward's LSE");
        if ((st = check_lse(ctx, "lse", a->lse, B, Hq, Sq, varlen, &p->lse)) != FA4_OK)
            return st;
    }
    float scale = a->scale == 0.0f ? 1.0f / sqrtf((float)D) : a->scale;
    if (!isfinite(scale))
        return fa4__set_error(ctx, FA4_ERR_INVALID_ARGUMENT, "scale is not finite");
    if (a->q_offset < 0 || a->kv_offset < 0 || a->q_offset + Sq > INT32_MAX ||
        a->kv_offset + Skv > INT32_MAX)
        return fa4__set_error(ctx, FA4_ERR_INVALID_ARGUMENT, "q_offset (%lld) and kv_offset (%lld) "
                              "must be >= 0 and keep indices within int32",
                              (long long)a->q_offset, (long long)a->kv_offset);
    p->batch = varlen ? a->num_seqs : (int)B;
    p->hq = (int)Hq;
    p->hkv = (int)Hkv;
    p->seqlen_q = varlen ? a->max_q : Sq;
    p->seqlen_k = varlen ? a->max_k : Skv;
    p->total_q = Sq;
    p->total_k = Skv;
    if (varlen && (a->max_q > Sq || a->max_k > Skv))
        return fa4__set_error(ctx, FA4_ERR_SHAPE, "max_seqlen_q/k (%d/%d) exceed the packed token "
                              "counts (%lld/%lld)", a->max_q, a->max_k, (long long)Sq,
                              (long long)Skv);
    p->scale = scale;
    p->cu_seqlens_q = a->cu_q;
    p->cu_seqlens_k = a->cu_k;
    p->q_offset = a->q_offset;
    p->kv_offset = a->kv_offset;
    p->stream = (CUstream)a->stream;
    if (a->bm) {
        if (varlen)
            return fa4__set_error(ctx, FA4_ERR_UNSUPPORTED, "block masks with variable-length "
                                  "batches are not supported; use a document mask_mod instead");
        if ((st = check_block_mask(ctx, a->bm, B, Hq, Sq, Skv, is_bwd, p)) != FA4_OK)
            return st;
    }
    if ((st = fa4__aux_fill(ctx, k, a->aux, a->num_aux, is_bwd, aux_block, FA4__AUX_BLOCK_MAX)) !=
        FA4_OK)
        return st;
    p->aux_block = aux_block;
    p->aux_size = k->aux_size;
    return FA4_OK;
}

static fa4_status check_kernel(fa4_kernel *k, const char *program, const char *what)
{
    if (!fa4__kernel_alive(k))
        return FA4_ERR_NULL_HANDLE;
    if (!has_program(k, program))
        return fa4__set_error(k->ctx, FA4_ERR_WRONG_KERNEL, "this kernel was compiled without its "
                              "%s program (spec.flags)", what);
    return FA4_OK;
}

/* Checked after the arguments, so that argument checking works (and is testable) everywhere. */
static fa4_status check_launchable(fa4_kernel *k)
{
    if (!k->info.launchable)
        return fa4__set_error(k->ctx, FA4_ERR_NO_DEVICE, "this kernel was compiled for %s and is "
                              "not loaded on a device (deviceless ctx or another arch)",
                              k->info.arch);
    return FA4_OK;
}

static fa4_status check_fwd(fa4_kernel *k, const fa4_fwd_args *a, fa4__problem *p,
                            uint8_t *aux_block)
{
    if (!a)
        return fa4__set_error(k->ctx, FA4_ERR_INVALID_ARGUMENT, "args is NULL");
    if (a->struct_size != sizeof *a)
        return fa4__set_error(k->ctx, FA4_ERR_STRUCT_SIZE, "fa4_fwd_args.struct_size is %zu; this "
                              "library knows %zu (call fa4_fwd_args_init)", a->struct_size,
                              sizeof *a);
    common_args c = {&a->q, &a->k, &a->v, &a->o, &a->lse, a->scale, a->aux, a->num_aux,
                     a->block_mask, a->cu_seqlens_q, a->cu_seqlens_k, a->num_seqs,
                     a->max_seqlen_q, a->max_seqlen_k, a->q_offset, a->kv_offset, a->stream};
    return check_common(k, &c, 0, p, aux_block);
}

fa4_status fa4_fwd_workspace_size(fa4_kernel *k, const fa4_fwd_args *a, size_t *bytes)
{
    fa4_status st = check_kernel(k, "fwd", "forward");
    if (st != FA4_OK)
        return st;
    if (!bytes)
        return fa4__set_error(k->ctx, FA4_ERR_INVALID_ARGUMENT, "bytes is NULL");
    fa4__problem p;
    uint8_t aux_block[FA4__AUX_BLOCK_MAX] __attribute__((aligned(16)));
    if ((st = check_fwd(k, a, &p, aux_block)) != FA4_OK)
        return st;
    return fa4__path_for(k->path)->fwd_workspace(k, &p, bytes);
}

fa4_status fa4_launch_fwd(fa4_kernel *k, const fa4_fwd_args *a)
{
    fa4_status st = check_kernel(k, "fwd", "forward");
    if (st != FA4_OK)
        return st;
    fa4__problem p;
    uint8_t aux_block[FA4__AUX_BLOCK_MAX] __attribute__((aligned(16)));
    if ((st = check_fwd(k, a, &p, aux_block)) != FA4_OK)
        return st;
    const fa4__path_ops *ops = fa4__path_for(k->path);
    /* the workspace is optional: NULL keeps the static schedule; one given must be large enough */
    if (a->workspace) {
        size_t need = 0;
        if ((st = ops->fwd_workspace(k, &p, &need)) != FA4_OK)
            return st;
        if (need > 0 && a->workspace_size < need)
            return fa4__set_error(k->ctx, FA4_ERR_WORKSPACE, "the forward's workspace must hold "
                                  "%zu bytes (fa4_fwd_workspace_size); given %zu at %p (or pass "
                                  "NULL for the static schedule)", need, a->workspace_size,
                                  a->workspace);
        if (need > 0 && (uintptr_t)a->workspace % 256 != 0)
            return fa4__set_error(k->ctx, FA4_ERR_ALIGNMENT, "the forward's workspace (%p) must be "
                                  "256-byte aligned", a->workspace);
        if (need > 0) {
            p.workspace = a->workspace;
            p.workspace_size = a->workspace_size;
        }
    }
    if ((st = check_launchable(k)) != FA4_OK || (st = fa4__ctx_push(k->ctx)) != FA4_OK)
        return st;
    st = ops->launch_fwd(k, &p);
    fa4__ctx_pop(k->ctx);
    if (st == FA4_OK)
        fa4__set_error(k->ctx, FA4_OK, NULL);
    return st;
}

static fa4_status check_bwd(fa4_kernel *k, const fa4_bwd_args *a, fa4__problem *p,
                            uint8_t *aux_block)
{
    fa4_status st;
    if (!a)
        return fa4__set_error(k->ctx, FA4_ERR_INVALID_ARGUMENT, "args is NULL");
    if (a->struct_size != sizeof *a)
        return fa4__set_error(k->ctx, FA4_ERR_STRUCT_SIZE, "fa4_bwd_args.struct_size is %zu; this "
                              "library knows %zu (call fa4_bwd_args_init)", a->struct_size,
                              sizeof *a);
    common_args c = {&a->q, &a->k, &a->v, &a->o, &a->lse, a->scale, a->aux, a->num_aux,
                     a->block_mask, a->cu_seqlens_q, a->cu_seqlens_k, a->num_seqs,
                     a->max_seqlen_q, a->max_seqlen_k, a->q_offset, a->kv_offset, a->stream};
    if ((st = check_common(k, &c, 1, p, aux_block)) != FA4_OK)
        return st;
    int varlen = a->cu_seqlens_q != NULL;
    fa4_dtype dt = (fa4_dtype)k->spec.dtype;
    int64_t B = varlen ? 1 : a->q.shape[0];
    const fa4_tensor *q = &a->q, *kk = &a->k, *v = &a->v, *o = &a->o;
    if ((st = check_tensor(k->ctx, "dout", &a->dout, dt, B, o->shape[1], o->shape[2], o->shape[3],
                           varlen, &p->dout)) != FA4_OK)
        return st;
    if ((st = check_tensor(k->ctx, "dq", &a->dq, dt, B, q->shape[1], q->shape[2], q->shape[3],
                           varlen, &p->dq)) != FA4_OK)
        return st;
    if ((st = check_tensor(k->ctx, "dk", &a->dk, dt, B, kk->shape[1], kk->shape[2], kk->shape[3],
                           varlen, &p->dk)) != FA4_OK)
        return st;
    if ((st = check_tensor(k->ctx, "dv", &a->dv, dt, B, v->shape[1], v->shape[2], v->shape[3],
                           varlen, &p->dv)) != FA4_OK)
        return st;
    if (a->dlse.data &&
        (st = check_lse(k->ctx, "dlse", &a->dlse, B, q->shape[1], q->shape[2],
                        varlen, &p->dlse)) != FA4_OK)
        return st;
    p->deterministic = a->deterministic != 0;
    p->workspace = a->workspace;
    p->workspace_size = a->workspace_size;
    return FA4_OK;
}

/* Deterministic mode with trainable aux tensors: each tensor's fixed-point accumulator (three
 * 64-bit words an element, the mod header's fa4_aux_grad_global), in the workspace after the
 * path's part. The path runs its bwd_main*_fx programs (built with FA4_AUX_FX), which see the
 * accumulator's address in place of the grad pointer; bwd_post.cu's fa4_aux_fx_post then adds
 * each sum into the gradient. Integer adds make the sums independent of the order of the
 * atomics: bitwise reproducible gradients. FA4JIT_DET_AUX_FIXED=0 (A/B): the default mode's
 * programs and float atomics instead. */
typedef struct aux_fx {
    int n;
    size_t base;                       /* the first accumulator's offset in the workspace */
    size_t off[FA4__MOD_MAX_AUX];      /* each accumulator's, from base */
    size_t grad_off[FA4__MOD_MAX_AUX]; /* where its grad pointer lies in the aux block */
    int64_t numel[FA4__MOD_MAX_AUX];
    size_t total;                      /* base + the accumulators' bytes */
} aux_fx;

static size_t align256(size_t x)
{
    return (x + 255) & ~(size_t)255;
}

static fa4_status aux_fx_layout(fa4_kernel *k, const fa4__problem *p, size_t path_bytes, aux_fx *fx)
{
    memset(fx, 0, sizeof *fx);
    fx->total = path_bytes;
    const char *env = getenv("FA4JIT_DET_AUX_FIXED");
    if (!p->deterministic || (env && !strcmp(env, "0")))
        return FA4_OK;
    fx->n = fa4__aux_trainable(k, p->aux_block, fx->grad_off, fx->numel, FA4__MOD_MAX_AUX);
    if (!fx->n)
        return FA4_OK;
    if (!has_program(k, "bwd_main_fx"))
        return fa4__set_error(k->ctx, FA4_ERR_WRONG_KERNEL,
                              "deterministic backward with trainable aux tensors: this kernel was "
                              "compiled without FA4_COMPILE_DETERMINISTIC (spec.flags), whose "
                              "programs sum the aux gradients bitwise reproducibly");
    fx->base = align256(path_bytes);
    size_t at = 0;
    for (int i = 0; i < fx->n; i++) {
        if ((uint64_t)fx->numel[i] > (SIZE_MAX / 2 - fx->base - at) / 24)
            return fa4__set_error(k->ctx, FA4_ERR_WORKSPACE,
                                  "deterministic backward: trainable aux tensor %d of %lld elements "
                                  "needs more workspace than size_t holds",
                                  i, (long long)fx->numel[i]);
        fx->off[i] = at;
        at += align256((size_t)fx->numel[i] * 24);
    }
    fx->total = fx->base + at;
    return FA4_OK;
}

/* Before the path's launch: zero the accumulators and put their addresses into the aux block in
 * place of the grad pointers (grad[] keeps those). */
static fa4_status aux_fx_begin(fa4_kernel *k, const aux_fx *fx, uint8_t *aux_block, void *ws, CUstream stream,
                               void *grad[])
{
    for (int i = 0; i < fx->n; i++) {
        const CUdeviceptr acc = (CUdeviceptr)(uintptr_t)ws + fx->base + fx->off[i];
        const CUresult r = k->ctx->cu->memsetD8Async(acc, 0, (size_t)fx->numel[i] * 24, stream);
        if (r != CUDA_SUCCESS)
            return fa4__cu_error(k->ctx, FA4_ERR_LAUNCH, r, "deterministic backward: zeroing the aux "
                                 "gradient accumulators");
        const void *a = (const void *)(uintptr_t)acc;
        memcpy(&grad[i], aux_block + fx->grad_off[i], sizeof grad[i]);
        memcpy(aux_block + fx->grad_off[i], &a, sizeof a);
    }
    return FA4_OK;
}

/* After it: each accumulator into its gradient (grad[i] += sum) by f (bwd_post's
 * fa4_aux_fx_post), in stream order. */
static fa4_status aux_fx_end(fa4_kernel *k, CUfunction f, const aux_fx *fx, void *ws, CUstream stream,
                             void *const grad[])
{
    for (int i = 0; i < fx->n; i++) {
        CUdeviceptr acc = (CUdeviceptr)(uintptr_t)ws + fx->base + fx->off[i];
        void *g = grad[i];
        long long n = (long long)fx->numel[i];
        void *args[3] = {&acc, &g, &n};
        const int64_t blocks = (n + 255) / 256;
        const CUresult r = k->ctx->cu->launchKernel(f, (unsigned)(blocks < 4096 ? blocks : 4096), 1, 1, 256, 1, 1,
                                                    0, stream, args, NULL);
        if (r != CUDA_SUCCESS)
            return fa4__cu_error(k->ctx, FA4_ERR_LAUNCH, r, "deterministic backward: the aux gradient "
                                 "accumulators (fa4_aux_fx_post)");
    }
    return FA4_OK;
}

fa4_status fa4_bwd_workspace_size(fa4_kernel *k, const fa4_bwd_args *a, size_t *bytes)
{
    fa4_status st = check_kernel(k, "bwd_main", "backward");
    if (st != FA4_OK)
        return st;
    if (!bytes)
        return fa4__set_error(k->ctx, FA4_ERR_INVALID_ARGUMENT, "bytes is NULL");
    fa4__problem p;
    uint8_t aux_block[FA4__AUX_BLOCK_MAX] __attribute__((aligned(16)));
    if ((st = check_bwd(k, a, &p, aux_block)) != FA4_OK)
        return st;
    size_t need = 0;
    aux_fx fx;
    if ((st = fa4__path_for(k->path)->bwd_workspace(k, &p, &need)) != FA4_OK ||
        (st = aux_fx_layout(k, &p, need, &fx)) != FA4_OK)
        return st;
    *bytes = fx.total;
    return FA4_OK;
}

fa4_status fa4_launch_bwd(fa4_kernel *k, const fa4_bwd_args *a)
{
    fa4_status st = check_kernel(k, "bwd_main", "backward");
    if (st != FA4_OK)
        return st;
    fa4__problem p;
    uint8_t aux_block[FA4__AUX_BLOCK_MAX] __attribute__((aligned(16)));
    if ((st = check_bwd(k, a, &p, aux_block)) != FA4_OK)
        return st;
    const fa4__path_ops *ops = fa4__path_for(k->path);
    size_t need = 0;
    aux_fx fx;
    if ((st = ops->bwd_workspace(k, &p, &need)) != FA4_OK || (st = aux_fx_layout(k, &p, need, &fx)) != FA4_OK)
        return st;
    need = fx.total;
    if (need > 0 && (!a->workspace || a->workspace_size < need))
        return fa4__set_error(k->ctx, FA4_ERR_WORKSPACE, "the backward needs %zu bytes of workspace "
                              "(fa4_bwd_workspace_size%s); given %zu at %p", need,
                              fx.n ? ", with the deterministic mode's aux gradient accumulators" : "",
                              a->workspace_size, a->workspace);
    if (need > 0 && (uintptr_t)a->workspace % 256 != 0)
        return fa4__set_error(k->ctx, FA4_ERR_ALIGNMENT, "workspace must be 256-byte aligned");
    if ((st = check_launchable(k)) != FA4_OK || (st = fa4__ctx_push(k->ctx)) != FA4_OK)
        return st;
    void *grad[FA4__MOD_MAX_AUX];
    p.aux_fx = fx.n > 0;
    CUfunction post = fx.n ? fa4__kernel_function(k, "bwd_post", "fa4_aux_fx_post") : NULL;
    if (fx.n && (!post || !fa4__kernel_function(k, "bwd_main_fx", "fa4_sm80_bwd_main")))
        st = fa4__set_error(k->ctx, FA4_ERR_WRONG_KERNEL, "deterministic backward with trainable aux: "
                            "the kernel lacks its fixed-point programs (bwd_main_fx, bwd_post's "
                            "fa4_aux_fx_post)");
    if (st == FA4_OK)
        st = aux_fx_begin(k, &fx, aux_block, a->workspace, p.stream, grad);
    if (st == FA4_OK)
        st = ops->launch_bwd(k, &p);
    if (st == FA4_OK)
        st = aux_fx_end(k, post, &fx, a->workspace, p.stream, grad);
    fa4__ctx_pop(k->ctx);
    if (st == FA4_OK)
        fa4__set_error(k->ctx, FA4_OK, NULL);
    return st;
}

fa4_status fa4_block_mask_sizes(int32_t batch, int32_t heads, int64_t seqlen_q, int64_t seqlen_kv,
                                int32_t q_block, int32_t kv_block, int64_t *num_q_blocks,
                                int64_t *num_kv_blocks)
{
    if (batch < 1 || heads < 1 || seqlen_q < 1 || seqlen_kv < 1 || q_block < 16 || kv_block < 16 ||
        q_block % 16 || kv_block % 16 || !num_q_blocks || !num_kv_blocks)
        return FA4_ERR_INVALID_ARGUMENT;
    *num_q_blocks = (seqlen_q + q_block - 1) / q_block;
    *num_kv_blocks = (seqlen_kv + kv_block - 1) / kv_block;
    return FA4_OK;
}

fa4_status fa4_block_mask_create(fa4_kernel *k, int32_t batch, int32_t heads, int64_t seqlen_q,
                                 int64_t seqlen_kv, const fa4_aux_value *aux, int32_t num_aux,
                                 fa4_block_mask *out, void *stream)
{
    fa4_status st = check_kernel(k, "block_mask", "block-mask (needs a mask_mod)");
    if (st != FA4_OK)
        return st;
    if (!out)
        return fa4__set_error(k->ctx, FA4_ERR_INVALID_ARGUMENT, "out is NULL");
    if (out->struct_size != sizeof *out)
        return fa4__set_error(k->ctx, FA4_ERR_STRUCT_SIZE, "fa4_block_mask.struct_size is %zu; "
                              "this library knows %zu", out->struct_size, sizeof *out);
    int64_t nq, nk;
    if (fa4_block_mask_sizes(batch, heads, seqlen_q, seqlen_kv, out->q_block, out->kv_block, &nq,
                             &nk) != FA4_OK)
        return fa4__set_error(k->ctx, FA4_ERR_INVALID_ARGUMENT, "block mask: batch %d, heads %d, "
                              "seqlens %lld x %lld, blocks %d x %d: all must be >= 1 and blocks "
                              "multiples of 16", batch, heads, (long long)seqlen_q,
                              (long long)seqlen_kv, out->q_block, out->kv_block);
    if (out->num_q_blocks != nq || out->num_kv_blocks != nk || out->batch != batch ||
        out->heads != heads)
        return fa4__set_error(k->ctx, FA4_ERR_SHAPE, "out: batch/heads/num_q_blocks/num_kv_blocks "
                              "must be %d/%d/%lld/%lld (fa4_block_mask_sizes)", batch, heads,
                              (long long)nq, (long long)nk);
    if (!out->kv_num_blocks || !out->kv_indices || !out->full_kv_num_blocks ||
        !out->full_kv_indices || !out->q_num_blocks || !out->q_indices || !out->full_q_num_blocks ||
        !out->full_q_indices)
        return fa4__set_error(k->ctx, FA4_ERR_INVALID_ARGUMENT, "out: every list pointer must be "
                              "a device buffer (kv_*, full_kv_*, q_*, full_q_*)");
    uint8_t aux_block[FA4__AUX_BLOCK_MAX] __attribute__((aligned(16)));
    if ((st = fa4__aux_fill(k->ctx, k, aux, num_aux, 0, aux_block, sizeof aux_block)) != FA4_OK)
        return st;
    const fa4__path_ops *ops = fa4__path_for(k->path);
    if ((st = check_launchable(k)) != FA4_OK || (st = fa4__ctx_push(k->ctx)) != FA4_OK)
        return st;
    st = ops->block_mask(k, batch, heads, seqlen_q, seqlen_kv, aux_block, k->aux_size, out,
                         (CUstream)stream);
    fa4__ctx_pop(k->ctx);
    if (st == FA4_OK)
        fa4__set_error(k->ctx, FA4_OK, NULL);
    return st;
}
