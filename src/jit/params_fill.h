/*
 * params_fill.h - the validated problem (internal.h) as the kernels' params (common/params.h).
 */
#ifndef FA4_JIT_PARAMS_FILL_H
#define FA4_JIT_PARAMS_FILL_H

#include "internal.h"
#include "params.h"

/* Fill every field of pr that the problem decides (views, sizes, varlen, offsets, block-mask
 * lists, determinism); path-specific fields (tiles, workspace pointers) are left zero. */
void fa4__params_fill(fa4_params *pr, const fa4__problem *p);

/* The backward workspace of path_sm80.c (dpsum | lse2 | dq_accum, 256-byte aligned parts; each
 * sequence's rows start at a multiple of 4; one dq_accum slot per 64 keys in deterministic mode),
 * shared with the sm90 backward, which runs sm80's bwd_pre and bwd_post around its own main. */
typedef struct fa4__bwd_ws {
    size_t dpsum, lse2, dq, total; /* byte offsets and size */
    int64_t rows;                  /* ws_rows */
    int slots;                     /* dq_accum slots */
} fa4__bwd_ws;
void fa4__sm80_bwd_layout(const fa4__problem *p, fa4__bwd_ws *w);
/* Point pr at the workspace (dq_slots = w->slots). */
void fa4__sm80_bwd_workspace_params(fa4_params *pr, const fa4__problem *p, const fa4__bwd_ws *w);
/* Launch bwd_pre: dpsum, lse2, and the rows of pr->dq_slots slots of dq_accum zeroed (and the dQ
 * turn counters where pr->dq_sem is set). pdl: a programmatic dependent launch (sm90). */
fa4_status fa4__sm80_bwd_pre(fa4_kernel *k, fa4_params *pr, const fa4__problem *p, int pdl);
/* bwd_post: dQ scaled and converted (the ordered sum of pr->dq_slots slots). */
fa4_status fa4__sm80_bwd_post(fa4_kernel *k, fa4_params *pr, const fa4__problem *p, int pdl);

#endif /* FA4_JIT_PARAMS_FILL_H */
