/*
 * path_sm80.c - the portable kernel path (mma.sync + cp.async; Ampere and later, H200 included):
 * which programs it compiles, the shared memory each asks for, and the launches. The launchers
 * receive a validated fa4__problem (the jit layer has already checked shapes, dtypes and aux, and
 * made the ctx's CUDA context current) and turn it into the kernels' fa4_params in one place.
 * Tile geometry mirrors src/kernels/sm80/config.cuh: keep the two in step.
 *
 * Backward launch order on the caller's stream: bwd_pre (dpsum, lse2, dq_accum zeroed)
 * -> bwd_main (dK, dV; dQ into the workspace) -> bwd_post (dQ). Workspace layout, each part
 * 256-byte aligned: dpsum [hq][rows] | lse2 [hq][rows] | dq_accum [slots][hq][rows][d] fp32, where
 * rows = batch * seqlen_q (or the packed total under varlen) and slots = 1, or the number of kv
 * tiles in deterministic mode (each kv tile writes its own dQ partial, summed in order by bwd_post).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "params.h"
#include "params_fill.h"

enum {
    FWD_M = 128, FWD_N = 64, FWD_THREADS = 256,
    BWD_M = 64, BWD_N = 64, BWD_THREADS = 256,
    PRE_THREADS = 128, POST_THREADS = 256, MASK_THREADS = 256,
    PAD = 8
};

static const fa4__program_desc programs[] = {
    {"fwd", "sm80/fwd.cu", FA4_COMPILE_FWD, "fa4_sm80_fwd", {NULL}, NULL, NULL, 0},
    {"bwd_pre", "sm80/bwd_pre.cu", FA4_COMPILE_BWD, "fa4_sm80_bwd_pre", {NULL}, NULL, NULL, 0},
    {"bwd_main", "sm80/bwd_main.cu", FA4_COMPILE_BWD, "fa4_sm80_bwd_main", {NULL}, NULL, NULL, 0},
    /* deterministic mode's main where the mod has trainable aux (launch.c's fixed-point aux gradients) */
    {"bwd_main_fx", "sm80/bwd_main_fx.cu", FA4_COMPILE_BWD, "fa4_sm80_bwd_main", {NULL}, NULL, fa4__aux_fx_wanted, 0},
    {"bwd_post", "sm80/bwd_post.cu", FA4_COMPILE_BWD, "fa4_sm80_bwd_post", {NULL}, NULL, NULL, 0},
    {"block_mask", "sm80/block_mask.cu", FA4_COMPILE_BLOCK_MASK, "fa4_sm80_block_mask_eval", {NULL}, NULL, NULL, 0},
};

static int head_dim_v(const fa4_kernel_spec *spec)
{
    return spec->head_dim_v > 0 ? spec->head_dim_v : spec->head_dim;
}

/* Forward geometry (config.cuh: kFwdMaxTwoBlockDim, kFwdMI, kFwdN): heads up to
 * FWD_TWO_BLOCK_MAX_DIM run 4 warps of 32 query rows and 32 keys per step; others 8 warps of 16
 * rows and 64 keys (32 for Dv 256). Off (0) since it measured slower; `mods` is kept for when the
 * limit depends on whether the kernel has a score_mod or mask_mod again. */
#define FWD_TWO_BLOCK_MAX_DIM 0
static int fwd_two_blocks(int d, int dv, int mods)
{
    (void)mods;
    return d <= FWD_TWO_BLOCK_MAX_DIM && dv <= FWD_TWO_BLOCK_MAX_DIM;
}

static int fwd_n(int d, int dv, int mods)
{
    return dv > 192 || fwd_two_blocks(d, dv, mods) ? 32 : FWD_N;
}

static unsigned fwd_threads(int d, int dv, int mods)
{
    return fwd_two_blocks(d, dv, mods) ? FWD_THREADS / 2 : FWD_THREADS;
}

static int fwd_smem(int d, int dv, int mods)
{
    return (FWD_M * (d + PAD) + fwd_n(d, dv, mods) * (d + PAD) + fwd_n(d, dv, mods) * (dv + PAD)) * 2;
}

static int spec_has_mods(const fa4_kernel_spec *spec)
{
    return spec->source && (spec->source_len > 0 || spec->source[0] != '\0');
}

static int kernel_has_mods(const fa4_kernel *k)
{
    return k->mod && (fa4__mod_has_score(k->mod) || fa4__mod_has_mask(k->mod));
}

/* Backward: K, V, P, dS, lse2, dpsum, then 1 or 2 stages of (Q, dO) (config.cuh: kBwdStages). */
static int bwd_smem(int d, int dv)
{
    const int fixed = (BWD_N * (d + PAD) + BWD_N * (dv + PAD) + 2 * BWD_M * (BWD_N + PAD)) * 2 + 2 * BWD_M * 4;
    const int stage = (BWD_M * (d + PAD) + BWD_M * (dv + PAD)) * 2;
    return fixed + (fixed + 2 * stage <= 160 * 1024 ? 2 : 1) * stage;
}

static int sm80_options(const fa4_kernel_spec *spec, const char *arch, char opts[][64], int max)
{
    (void)spec;
    (void)arch;
    if (max < 1)
        return 0;
    snprintf(opts[0], 64, "-DFA4_PATH_SM80=1");
    return 1;
}

static int sm80_smem_bytes(const fa4_kernel_spec *spec, const char *program)
{
    if (strcmp(program, "fwd") == 0)
        return fwd_smem(spec->head_dim, head_dim_v(spec), spec_has_mods(spec));
    if (strcmp(program, "bwd_main") == 0 || strcmp(program, "bwd_main_fx") == 0)
        return bwd_smem(spec->head_dim, head_dim_v(spec));
    return 0;
}

static int64_t cdiv(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

static size_t align256(size_t x)
{
    return (x + 255) & ~(size_t)255;
}


/* launch.c has checked everything common to the paths (shapes, head dims, Hq % Hkv, lengths,
 * 16-byte alignment, block-mask shape and lists, no block mask with varlen); what is left is this
 * path's tile geometry. */
static fa4_status check_problem(fa4_kernel *k, const fa4__problem *p)
{
    if (p->has_block_mask) {
        const fa4_block_mask *bm = &p->bm;
        const int qmul = p->is_bwd ? BWD_M : FWD_M;
        if (bm->q_block % qmul || bm->q_block % FWD_M || bm->kv_block % BWD_N)
            return fa4__set_error(k->ctx, FA4_ERR_UNSUPPORTED,
                                  "sm80: block mask block sizes %dx%d must be multiples of %dx%d",
                                  bm->q_block, bm->kv_block, FWD_M, BWD_N);
    }
    return FA4_OK;
}


static const uint8_t zero_aux[FA4__AUX_BLOCK_MAX];

/* pdl: a programmatic dependent launch (fa4__cu_launch; the sm90 backward's pre and post) */
static fa4_status launch(fa4_kernel *k, const char *program, const char *function, unsigned gx,
                         unsigned gy, unsigned gz, unsigned threads, int smem, void *params,
                         const void *aux, CUstream stream, int pdl)
{
    fa4_ctx *ctx = k->ctx;
    const fa4__cu *cu = ctx->cu;
    CUfunction f = fa4__kernel_function(k, program, function);
    CUresult r;
    void *args[2];
    if (!f)
        return fa4__set_error(ctx, FA4_ERR_WRONG_KERNEL,
                              "sm80: program '%s' is not loaded (compile with the flag that asks "
                              "for it, on this device's arch)", program);
    if (!cu)
        return fa4__set_error(ctx, FA4_ERR_NO_DRIVER, "sm80: no CUDA driver");
    if (gx == 0 || gy == 0 || gz == 0)
        return FA4_OK;
    if (gy > 65535 || gz > 65535)
        return fa4__set_error(ctx, FA4_ERR_SHAPE, "sm80: grid %u x %u x %u too large", gx, gy, gz);
    if (smem > 48 * 1024) {
        if (smem > ctx->max_smem_optin && ctx->max_smem_optin > 0)
            return fa4__set_error(ctx, FA4_ERR_UNSUPPORTED,
                                  "sm80: %s needs %d bytes of shared memory, the device has %d",
                                  program, smem, ctx->max_smem_optin);
        r = cu->funcSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem);
        if (r != CUDA_SUCCESS)
            return fa4__cu_error(ctx, FA4_ERR_LAUNCH, r, "cuFuncSetAttribute(max dynamic smem)");
    }
    args[0] = params;
    args[1] = (void *)(aux ? aux : zero_aux);
    r = fa4__cu_launch(cu, f, gx, gy, gz, threads, (unsigned)smem, stream, args, pdl);
    if (r != CUDA_SUCCESS)
        return fa4__cu_error(ctx, FA4_ERR_LAUNCH, r, program);
    return FA4_OK;
}

static fa4_status sm80_launch_fwd(fa4_kernel *k, const fa4__problem *p)
{
    fa4_params pr;
    fa4_status st = check_problem(k, p);
    if (st != FA4_OK)
        return st;
    fa4__params_fill(&pr, p);
    return launch(k, "fwd", "fa4_sm80_fwd", (unsigned)cdiv(p->seqlen_q, FWD_M), (unsigned)p->hq,
                  (unsigned)p->batch, fwd_threads(p->head_dim, p->head_dim_v, kernel_has_mods(k)),
                  fwd_smem(p->head_dim, p->head_dim_v, kernel_has_mods(k)), &pr, p->aux_block,
                  p->stream, 0);
}

void fa4__sm80_bwd_layout(const fa4__problem *p, fa4__bwd_ws *w)
{
    /* each sequence's rows start at a multiple of 4 (fa4_ws_row in src/kernels/sm80/scheduler.cuh) */
    w->rows = ((p->cu_seqlens_q ? p->total_q : (int64_t)p->batch * p->seqlen_q) + 3 * (int64_t)p->batch + 3) &
              ~(int64_t)3;
    w->slots = p->deterministic ? (int)cdiv(p->seqlen_k, BWD_N) : 1;
    if (w->slots < 1)
        w->slots = 1;
    w->dpsum = 0;
    w->lse2 = align256((size_t)p->hq * (size_t)w->rows * 4);
    w->dq = w->lse2 + align256((size_t)p->hq * (size_t)w->rows * 4);
    w->total = w->dq + align256((size_t)w->slots * (size_t)p->hq * (size_t)w->rows * (size_t)p->head_dim * 4);
}

void fa4__sm80_bwd_workspace_params(fa4_params *pr, const fa4__problem *p, const fa4__bwd_ws *w)
{
    uint8_t *ws = (uint8_t *)p->workspace;
    pr->dpsum = (float *)(ws + w->dpsum);
    pr->lse2 = (float *)(ws + w->lse2);
    pr->dq_accum = (float *)(ws + w->dq);
    pr->ws_rows = w->rows;
    pr->dq_slots = w->slots;
}

fa4_status fa4__sm80_bwd_pre(fa4_kernel *k, fa4_params *pr, const fa4__problem *p, int pdl)
{
    return launch(k, "bwd_pre", "fa4_sm80_bwd_pre", (unsigned)cdiv(p->seqlen_q, BWD_M), (unsigned)p->hq,
                  (unsigned)p->batch, PRE_THREADS, 0, pr, p->aux_block, p->stream, pdl);
}

fa4_status fa4__sm80_bwd_post(fa4_kernel *k, fa4_params *pr, const fa4__problem *p, int pdl)
{
    return launch(k, "bwd_post", "fa4_sm80_bwd_post", (unsigned)cdiv(p->seqlen_q, BWD_M), (unsigned)p->hq,
                  (unsigned)p->batch, POST_THREADS, 0, pr, p->aux_block, p->stream, pdl);
}

/* The sm80 forward's grid has one CTA per tile: no schedule to keep, no workspace. */
static fa4_status sm80_fwd_workspace(fa4_kernel *k, const fa4__problem *p, size_t *bytes)
{
    (void)k;
    (void)p;
    *bytes = 0;
    return FA4_OK;
}

static fa4_status sm80_bwd_workspace(fa4_kernel *k, const fa4__problem *p, size_t *bytes)
{
    fa4__bwd_ws w;
    (void)k;
    fa4__sm80_bwd_layout(p, &w);
    *bytes = w.total;
    return FA4_OK;
}

static fa4_status sm80_launch_bwd(fa4_kernel *k, const fa4__problem *p)
{
    fa4_ctx *ctx = k->ctx;
    fa4_params pr;
    fa4__bwd_ws w;
    uint8_t *ws = (uint8_t *)p->workspace;
    fa4_status st = check_problem(k, p);
    if (st != FA4_OK)
        return st;
    if (!p->lse.data)
        return fa4__set_error(ctx, FA4_ERR_INVALID_ARGUMENT, "sm80: the backward needs the forward's LSE");
    fa4__sm80_bwd_layout(p, &w);
    if (!ws || p->workspace_size < w.total)
        return fa4__set_error(ctx, FA4_ERR_WORKSPACE, "sm80: workspace of %zu bytes needed, %zu given",
                              w.total, ws ? p->workspace_size : 0);
    if ((uintptr_t)ws % 256)
        return fa4__set_error(ctx, FA4_ERR_ALIGNMENT, "sm80: workspace must be 256-byte aligned");
    fa4__params_fill(&pr, p);
    fa4__sm80_bwd_workspace_params(&pr, p, &w);
    st = fa4__sm80_bwd_pre(k, &pr, p, 0);
    if (st != FA4_OK)
        return st;
    st = launch(k, p->aux_fx ? "bwd_main_fx" : "bwd_main", "fa4_sm80_bwd_main", (unsigned)cdiv(p->seqlen_k, BWD_N),
                (unsigned)p->hkv, (unsigned)p->batch, BWD_THREADS, bwd_smem(p->head_dim, p->head_dim_v), &pr,
                p->aux_block, p->stream, 0);
    if (st != FA4_OK)
        return st;
    return fa4__sm80_bwd_post(k, &pr, p, 0);
}

static fa4_status sm80_block_mask(fa4_kernel *k, int batch, int heads, int64_t sq, int64_t skv,
                                  const void *aux_block, size_t aux_size, fa4_block_mask *out,
                                  CUstream stream)
{
    fa4_ctx *ctx = k->ctx;
    fa4_block_mask_params bp;
    int64_t nq, nkv, rows;
    fa4_status st;
    CUfunction compact;
    CUresult r;
    void *args[1];
    (void)aux_size;
    if (!out || batch <= 0 || heads <= 0 || sq <= 0 || skv <= 0)
        return fa4__set_error(ctx, FA4_ERR_INVALID_ARGUMENT, "block mask: empty shape or NULL output");
    if (out->q_block <= 0)
        out->q_block = 128;
    if (out->kv_block <= 0)
        out->kv_block = 128;
    nq = cdiv(sq, out->q_block);
    nkv = cdiv(skv, out->kv_block);
    if (!out->kv_num_blocks || !out->kv_indices || !out->full_kv_num_blocks || !out->full_kv_indices ||
        !out->q_num_blocks || !out->q_indices || !out->full_q_num_blocks || !out->full_q_indices)
        return fa4__set_error(ctx, FA4_ERR_INVALID_ARGUMENT,
                              "block mask: all eight index arrays must be given");
    if (nq > 65535 || (int64_t)batch * heads > 65535 || sq > INT32_MAX || skv > INT32_MAX)
        return fa4__set_error(ctx, FA4_ERR_SHAPE, "block mask: too many blocks");
    out->batch = batch;
    out->heads = heads;
    out->num_q_blocks = (int32_t)nq;
    out->num_kv_blocks = (int32_t)nkv;

    memset(&bp, 0, sizeof(bp));
    bp.batch = batch;
    bp.heads = heads;
    bp.seqlen_q = sq;
    bp.seqlen_k = skv;
    bp.q_block = out->q_block;
    bp.kv_block = out->kv_block;
    bp.nq = (int)nq;
    bp.nkv = (int)nkv;
    bp.kv_num = (int *)out->kv_num_blocks;
    bp.kv_idx = (int *)out->kv_indices;
    bp.full_kv_num = (int *)out->full_kv_num_blocks;
    bp.full_kv_idx = (int *)out->full_kv_indices;
    bp.q_num = (int *)out->q_num_blocks;
    bp.q_idx = (int *)out->q_indices;
    bp.full_q_num = (int *)out->full_q_num_blocks;
    bp.full_q_idx = (int *)out->full_q_indices;

    st = launch(k, "block_mask", "fa4_sm80_block_mask_eval", (unsigned)nkv, (unsigned)nq,
                (unsigned)(batch * heads), MASK_THREADS, 0, &bp, aux_block, stream, 0);
    if (st != FA4_OK)
        return st;
    compact = fa4__kernel_function(k, "block_mask", "fa4_sm80_block_mask_compact");
    if (!compact)
        return fa4__set_error(ctx, FA4_ERR_WRONG_KERNEL, "block mask: compact kernel not loaded");
    rows = (int64_t)batch * heads * (nq + nkv);
    args[0] = &bp;
    r = ctx->cu->launchKernel(compact, (unsigned)cdiv(rows, MASK_THREADS), 1, 1, MASK_THREADS, 1, 1,
                              0, stream, args, NULL);
    if (r != CUDA_SUCCESS)
        return fa4__cu_error(ctx, FA4_ERR_LAUNCH, r, "block mask compact");
    return FA4_OK;
}

const fa4__path_ops fa4__sm80_ops = {
    FA4_PATH_SM80,
    programs,
    (int)(sizeof(programs) / sizeof(programs[0])),
    sm80_options,
    sm80_smem_bytes,
    sm80_launch_fwd,
    sm80_fwd_workspace,
    sm80_bwd_workspace,
    sm80_launch_bwd,
    sm80_block_mask,
};
