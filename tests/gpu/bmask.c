/*
 * bmask.c - block masks for the sm80 GPU suite: random ones built on the host (absent, partial and
 * full blocks, with the transposed lists), and ones made on the GPU by fa4_block_mask_create,
 * checked list by list against the CPU evaluator's mask over every block.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suite.h"

/* ------------------------------------------------------------------------- block masks */

static void bm_alloc(bmask *m, int bmb, int bmh, int nq, int nkv)
{
    const size_t rows = (size_t)bmb * bmh;
    const size_t sz[8] = {rows * nq, rows * nq * nkv, rows * nq, rows * nq * nkv,
                          rows * nkv, rows * nkv * nq, rows * nkv, rows * nkv * nq};
    for (int i = 0; i < 8; i++)
        CK(g_cu->memAlloc(&m->arr[i], sz[i] * 4 + 4));
    m->bm.struct_size = sizeof m->bm;
    m->bm.batch = bmb;
    m->bm.heads = bmh;
    m->bm.num_q_blocks = nq;
    m->bm.num_kv_blocks = nkv;
    m->bm.kv_num_blocks = (const int32_t *)(uintptr_t)m->arr[0];
    m->bm.kv_indices = (const int32_t *)(uintptr_t)m->arr[1];
    m->bm.full_kv_num_blocks = (const int32_t *)(uintptr_t)m->arr[2];
    m->bm.full_kv_indices = (const int32_t *)(uintptr_t)m->arr[3];
    m->bm.q_num_blocks = (const int32_t *)(uintptr_t)m->arr[4];
    m->bm.q_indices = (const int32_t *)(uintptr_t)m->arr[5];
    m->bm.full_q_num_blocks = (const int32_t *)(uintptr_t)m->arr[6];
    m->bm.full_q_indices = (const int32_t *)(uintptr_t)m->arr[7];
}

/* Lists from a status array (partial and full, ascending), both directions. */
static void bm_lists(const unsigned char *st, int rows, int nq, int nkv, int32_t *h[8])
{
    for (int r = 0; r < rows; r++)
        for (int qb = 0; qb < nq; qb++) {
            int np = 0, nf = 0;
            for (int kb = 0; kb < nkv; kb++) {
                const unsigned char s = st[((size_t)r * nq + qb) * nkv + kb];
                if (s == 1)
                    h[1][((size_t)r * nq + qb) * nkv + np++] = kb;
                else if (s == 2)
                    h[3][((size_t)r * nq + qb) * nkv + nf++] = kb;
            }
            h[0][(size_t)r * nq + qb] = np;
            h[2][(size_t)r * nq + qb] = nf;
        }
    for (int r = 0; r < rows; r++)
        for (int kb = 0; kb < nkv; kb++) {
            int np = 0, nf = 0;
            for (int qb = 0; qb < nq; qb++) {
                const unsigned char s = st[((size_t)r * nq + qb) * nkv + kb];
                if (s == 1)
                    h[5][((size_t)r * nkv + kb) * nq + np++] = qb;
                else if (s == 2)
                    h[7][((size_t)r * nkv + kb) * nq + nf++] = qb;
            }
            h[4][(size_t)r * nkv + kb] = np;
            h[6][(size_t)r * nkv + kb] = nf;
        }
}

static size_t bm_size(int i, int rows, int nq, int nkv)
{
    const size_t r = (size_t)rows;
    const size_t sz[8] = {r * nq, r * nq * nkv, r * nq, r * nq * nkv, r * nkv, r * nkv * nq, r * nkv, r * nkv * nq};
    return sz[i];
}

void bm_random(bmask *m, const tcase *c, rng *r)
{
    const int bmb = c->batch, bmh = c->bm_heads1 ? 1 : c->hq;
    const int nq = (c->sq + c->q_block - 1) / c->q_block, nkv = (c->skv + c->kv_block - 1) / c->kv_block;
    const int rows = bmb * bmh;
    memset(m, 0, sizeof *m);
    bm_alloc(m, bmb, bmh, nq, nkv);
    m->bm.q_block = c->q_block;
    m->bm.kv_block = c->kv_block;
    m->status = malloc((size_t)rows * nq * nkv);
    for (size_t i = 0; i < (size_t)rows * nq * nkv; i++) {
        const double u = rng_unif(r);
        m->status[i] = u < 0.25 ? 0 : (u < 0.7 ? 1 : 2);
    }
    int32_t *h[8];
    for (int i = 0; i < 8; i++)
        h[i] = calloc(bm_size(i, rows, nq, nkv) + 1, 4);
    bm_lists(m->status, rows, nq, nkv, h);
    for (int i = 0; i < 8; i++) {
        CK(g_cu->memcpyHtoD(m->arr[i], h[i], bm_size(i, rows, nq, nkv) * 4));
        free(h[i]);
    }
    m->ok = 1;
}

/* On the GPU through fa4_block_mask_create, checked against the CPU evaluator. */
fa4_status bm_gpu(bmask *m, const tcase *c, fa4_kernel *k, const fa4__mod *mod, const aux_set *a)
{
    const int bmb = c->batch, bmh = c->bm_heads1 ? 1 : c->hq;
    int64_t nq64, nkv64;
    memset(m, 0, sizeof *m);
    fa4_status st = fa4_block_mask_sizes(bmb, bmh, c->sq, c->skv, c->q_block, c->kv_block, &nq64, &nkv64);
    if (st != FA4_OK)
        return st;
    const int nq = (int)nq64, nkv = (int)nkv64, rows = bmb * bmh;
    bm_alloc(m, bmb, bmh, nq, nkv);
    m->bm.q_block = c->q_block;
    m->bm.kv_block = c->kv_block;
    st = fa4_block_mask_create(k, bmb, bmh, c->sq, c->skv, a->dev, a->n, &m->bm, NULL);
    if (st != FA4_OK)
        return st;
    CK(g_cu->ctxSynchronize());
    if (c->bm_unchecked) {
        m->ok = 1;
        return FA4_OK;
    }
    m->status = malloc((size_t)rows * nq * nkv);
    for (int b = 0; b < bmb; b++)
        for (int h = 0; h < bmh; h++)
            for (int qb = 0; qb < nq; qb++)
                for (int kb = 0; kb < nkv; kb++) {
                    int any = 0, all = 1;
                    for (int i = qb * c->q_block; i < (qb + 1) * c->q_block && i < c->sq; i++)
                        for (int j = kb * c->kv_block; j < (kb + 1) * c->kv_block && j < c->skv; j++) {
                            int ok = 1;
                            fa4__mod_eval_mask(mod, b, h, i, j, a->host, a->n, &ok, NULL);
                            any |= ok;
                            all &= ok;
                        }
                    m->status[(((size_t)b * bmh + h) * nq + qb) * nkv + kb] = !any ? 0 : (all ? 2 : 1);
                }
    int32_t *h[8], *g = NULL;
    m->ok = 1;
    for (int i = 0; i < 8; i++)
        h[i] = calloc(bm_size(i, rows, nq, nkv) + 1, 4);
    bm_lists(m->status, rows, nq, nkv, h);
    /* compare counts, then the first `count` entries of every list */
    for (int i = 0; i < 8; i += 2) {
        const size_t nrow = bm_size(i, rows, nq, nkv), len = bm_size(i + 1, rows, nq, nkv) / (nrow ? nrow : 1);
        int32_t *gc = malloc(nrow * 4 + 4), *gl = malloc(bm_size(i + 1, rows, nq, nkv) * 4 + 4);
        CK(g_cu->memcpyDtoH(gc, m->arr[i], nrow * 4));
        CK(g_cu->memcpyDtoH(gl, m->arr[i + 1], bm_size(i + 1, rows, nq, nkv) * 4));
        for (size_t rr = 0; rr < nrow; rr++) {
            if (gc[rr] != h[i][rr]) {
                m->ok = 0;
                break;
            }
            if (memcmp(gl + rr * len, h[i + 1] + rr * len, (size_t)gc[rr] * 4)) {
                m->ok = 0;
                break;
            }
        }
        free(gc);
        free(gl);
    }
    free(g);
    for (int i = 0; i < 8; i++)
        free(h[i]);
    return FA4_OK;
}

void bm_free(bmask *m)
{
    for (int i = 0; i < 8; i++)
        if (m->arr[i])
            g_cu->memFree(m->arr[i]);
    free(m->status);
}

