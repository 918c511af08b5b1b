/*
 * params.h - the argument blocks of the kernel programs, shared by the host launchers (C11) and the
 * kernels (NVRTC, no headers). Host arguments become these structs in one place (the path's launcher);
 * kernels take them by value as their first parameter, followed by the mod's `struct fa4_aux`.
 * Only int, long long, float and pointers appear, so C on x86-64 and NVRTC lay them out alike.
 * Strides are in elements; the last dimension of every tensor has stride 1.
 */
#ifndef FA4_COMMON_PARAMS_H
#define FA4_COMMON_PARAMS_H

/* One tensor as the kernels see it: base pointer and the strides of batch, head, sequence. Under
 * varlen the batch stride is 0 and sequence b starts at row cu_seqlens[b]. */
typedef struct fa4_view {
    void *data;
    long long sb, sh, ss;
} fa4_view;

typedef struct fa4_params {
    fa4_view q, k, v, o, lse;       /* lse: floats, data may be NULL in the forward */
    fa4_view dout, dq, dk, dv;      /* backward only */
    fa4_view dlse;                  /* backward: d loss / d LSE (floats, as lse); data NULL = none */

    /* Backward workspace (fp32): rows are (head, token) pairs, token = row_base(b) + i with
     * row_base = b * seqlen_q (fixed length) or cu_seqlens_q[b] (varlen); ws_rows tokens per head. */
    float *dpsum;                   /* [hq][ws_rows]       rowsum(dO * O) */
    float *lse2;                    /* [hq][ws_rows]       LSE in log2 units, +inf for empty rows */
    float *dq_accum;                /* [slots][hq][ws_rows][d] */
    long long ws_rows;
    int dq_slots;                   /* 1, or the number of kv tiles (deterministic mode) */

    int batch, hq, hkv, group;      /* group = hq / hkv */
    int seqlen_q, seqlen_k;         /* per sequence; the maxima under varlen */
    int head_dim, head_dim_v;
    float scale;                    /* softmax scale applied to q.k before score_mod */
    const int *cu_seqlens_q, *cu_seqlens_k; /* NULL: fixed length */
    long long q_offset, kv_offset;  /* added to the indices the mods see */

    /* Block-sparse mask (FlexAttention BlockMask); has_block_mask 0 = dense. */
    int has_block_mask;
    int bm_batch, bm_heads, bm_q_block, bm_kv_block, bm_nq, bm_nkv;
    const int *kv_num, *kv_idx, *full_kv_num, *full_kv_idx;
    const int *q_num, *q_idx, *full_q_num, *full_q_idx;

    int deterministic;              /* sm90 backward, dense: G > 1 = walks rotated in groups of G key
                                       tiles (bwd_schedule.cuh); 1 = ascending; with a block mask
                                       1 | the FA4_DET_ flags below */
    int tiles_slowest;              /* sm90 backward grid: 1 = key tiles vary slowest (heaviest first);
                                       G >= 2 = G heads interleaved: (head mod G,
                                       key tile, head / G) */
    int *dq_sem;                    /* sm90 deterministic backward (dense): turn counters
                                       [hq][ws_rows / 4][2], zeroed; NULL otherwise */
    /* sm90 backward with GQA split by query head (kv_split = the group, >= 2; 0 otherwise): each
     * CTA walks one query head and adds its dK, dV into dkv_accum (fp32, zeroed: [hkv][dkv_rows]
     * [head_dim] for dK, then [hkv][dkv_rows][head_dim_v] for dV; rows are b * seqlen_k + token,
     * or the packed token under varlen keys), which bwd_post's fa4_bwd_post_dkv converts. */
    float *dkv_accum;
    long long dkv_rows;
    int kv_split;
    int pad_split_;
    /* sm90 80-query backward, default mode (FA4_SM90_BWD_DQ_FUSED, bwd_consumer.cuh): per (query
     * head, 80-row tile, column half) the number of key tiles whose dQ adds are still to come, at
     * [hq][ws_rows / 4][2] as dq_sem (set by bwd_pre when dense, by fa4_sm90_bwd_expect80 with a
     * block mask); the CTA that takes it to 0, at its walk's end, converts the tile's dQ, and
     * bwd_post does not run. NULL otherwise. */
    int *dq_cnt;
    /* sm90 80-query backward, default mode, persistent (FA4_SM90_BWD_PERSIST, bwd_main.cu): the
     * work counter from which CTAs past their first item take the next (zeroed by bwd_pre); NULL:
     * one CTA an item, as the grid says. */
    int *bwd_next;
} fa4_params;

/* fa4_params.deterministic's flags with a block mask (never set for dense calls, where the field
 * is the rotation group, nor at D 256); bit 0 is the mode itself (1).
 * FA4_DET_HEADS_INNER: the sm90 64-query backward walks the GQA group's heads innermost
 * (bwd_schedule.cuh fa4_bwd_heads_inner; only with bm_heads 1). */
#define FA4_DET_HEADS_INNER (1 << 2)
/* FA4_BWD80_DESCENDING: the sm90 80-query main's block-mask steps from the last one down in the
 * default mode too (bwd_steps80.cuh; opt-in, FA4JIT_SM90_BWD80_DESC=1; the deterministic mode's
 * steps always descend). The default mode's kernels read no other bit of the field with a block
 * mask. */
#define FA4_BWD80_DESCENDING (1 << 3)

/* fa4_block_mask_create: evaluates mask_mod over (q block, kv block) tiles. */
typedef struct fa4_block_mask_params {
    int batch, heads;
    long long seqlen_q, seqlen_k;
    int q_block, kv_block, nq, nkv;
    int *kv_num, *kv_idx, *full_kv_num, *full_kv_idx;
    int *q_num, *q_idx, *full_q_num, *full_q_idx;
} fa4_block_mask_params;

/* Both compilers must agree on the layout: a field added on one side only fails here, not at run
 * time with garbage arguments. Update the numbers together with the structs. */
#define FA4_PARAMS_BYTES 576
#define FA4_BLOCK_MASK_PARAMS_BYTES 104
#ifdef __cplusplus
static_assert(sizeof(fa4_params) == FA4_PARAMS_BYTES, "fa4_params layout changed");
static_assert(sizeof(fa4_block_mask_params) == FA4_BLOCK_MASK_PARAMS_BYTES, "layout changed");
#else
_Static_assert(sizeof(fa4_params) == FA4_PARAMS_BYTES, "fa4_params layout changed");
_Static_assert(sizeof(fa4_block_mask_params) == FA4_BLOCK_MASK_PARAMS_BYTES, "layout changed");
#endif

#endif /* FA4_COMMON_PARAMS_H */
