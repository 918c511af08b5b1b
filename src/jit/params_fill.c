/*
 * params_fill.c - host arguments become device params in one place: every kernel path turns the
 * validated fa4__problem into the fa4_params struct its kernels read (common/params.h), here.
 */
#include <string.h>

#include "params_fill.h"

static void view(fa4_view *v, const fa4__tview *t)
{
    v->data = t->data;
    v->sb = t->sb;
    v->sh = t->sh;
    v->ss = t->ss;
}

void fa4__params_fill(fa4_params *pr, const fa4__problem *p)
{
    memset(pr, 0, sizeof(*pr));
    view(&pr->q, &p->q);
    view(&pr->k, &p->k);
    view(&pr->v, &p->v);
    view(&pr->o, &p->o);
    view(&pr->lse, &p->lse);
    if (p->is_bwd) {
        view(&pr->dout, &p->dout);
        view(&pr->dq, &p->dq);
        view(&pr->dk, &p->dk);
        view(&pr->dv, &p->dv);
        view(&pr->dlse, &p->dlse);
    }
    pr->batch = p->batch;
    pr->hq = p->hq;
    pr->hkv = p->hkv;
    pr->group = p->hq / p->hkv;
    pr->seqlen_q = (int)p->seqlen_q;
    pr->seqlen_k = (int)p->seqlen_k;
    pr->head_dim = p->head_dim;
    pr->head_dim_v = p->head_dim_v;
    pr->scale = p->scale;
    pr->cu_seqlens_q = p->cu_seqlens_q;
    pr->cu_seqlens_k = p->cu_seqlens_k;
    pr->q_offset = p->q_offset;
    pr->kv_offset = p->kv_offset;
    if (p->has_block_mask) {
        const fa4_block_mask *bm = &p->bm;
        pr->has_block_mask = 1;
        pr->bm_batch = bm->batch;
        pr->bm_heads = bm->heads;
        pr->bm_q_block = bm->q_block;
        pr->bm_kv_block = bm->kv_block;
        pr->bm_nq = bm->num_q_blocks;
        pr->bm_nkv = bm->num_kv_blocks;
        pr->kv_num = bm->kv_num_blocks;
        pr->kv_idx = bm->kv_indices;
        pr->full_kv_num = bm->full_kv_num_blocks;
        pr->full_kv_idx = bm->full_kv_indices;
        pr->q_num = bm->q_num_blocks;
        pr->q_idx = bm->q_indices;
        pr->full_q_num = bm->full_q_num_blocks;
        pr->full_q_idx = bm->full_q_indices;
    }
    pr->deterministic = p->deterministic != 0;
}
