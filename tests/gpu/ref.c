/*
 * ref.c - the float64 reference attention of the GPU tests, FlexAttention semantics, with the mods
 * evaluated by the library's CPU evaluator: scores = scale * q.k, score_mod on the scaled score,
 * mask_mod and the block mask (absent blocks masked, full blocks skip mask_mod), softmax with
 * LSE, rows with nothing allowed give O = 0 and LSE = -inf; the backward by the textbook formulas
 * (dS = P (dP - rowsum(P dP) + dlse) times d score_mod / d score, dlse = d loss / d LSE or 0) and the trainable aux gradient.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_util.h"

typedef struct job {
    const ref_problem *p;
    ref_result *out;
    int want_bwd;
    int first, step; /* over (b, hkv) pairs */
    double *daux;    /* private accumulation */
    int failed;
} job;

static int allowed_bm(const ref_problem *p, int b, int h, int i, int j)
{
    if (!p->bm_status)
        return 2 + 1; /* dense: mask_mod decides */
    const int bb = p->bm_batch == 1 ? 0 : b, hh = p->bm_heads == 1 ? 0 : h;
    const int qb = i / p->bm_q_block, kb = j / p->bm_kv_block;
    const unsigned char st =
        p->bm_status[(((size_t)bb * p->bm_heads + hh) * p->bm_nq + qb) * p->bm_nkv + kb];
    return st == 0 ? 0 : (st == 2 ? 2 : 3);
}

static void *worker(void *arg)
{
    job *jb = arg;
    const ref_problem *p = jb->p;
    ref_result *o = jb->out;
    const int group = p->hq / p->hkv, d = p->d, dv = p->dv;
    int maxk = 0;
    for (int b = 0; b < p->batch; b++)
        if (p->klen[b] > maxk)
            maxk = p->klen[b];
    double *s = malloc(sizeof(double) * (maxk + 1)), *ds = malloc(sizeof(double) * (maxk + 1));
    double *dmod = malloc(sizeof(double) * (maxk + 1)), *pr = malloc(sizeof(double) * (maxk + 1));
    double *raw = malloc(sizeof(double) * (maxk + 1));
    unsigned char *ok = malloc(maxk + 1);
    for (int pair = jb->first; pair < p->batch * p->hkv; pair += jb->step) {
        const int b = pair / p->hkv, hk = pair % p->hkv;
        for (int hh = 0; hh < group; hh++) {
            const int h = hk * group + hh;
            for (int i = 0; i < p->qlen[b]; i++) {
                const int64_t qr = p->qbase[b] + i;
                const double *q = p->q + ((size_t)h * p->tq + qr) * d;
                const int qi = (int)(i + p->q_offset);
                double mx = -INFINITY;
                for (int j = 0; j < p->klen[b]; j++) {
                    const int64_t kr = p->kbase[b] + j;
                    const int kj = (int)(j + p->kv_offset);
                    const double *k = p->k + ((size_t)hk * p->tk + kr) * d;
                    double acc = 0;
                    for (int c = 0; c < d; c++)
                        acc += q[c] * k[c];
                    acc *= p->scale;
                    int a = allowed_bm(p, b, h, i, j);
                    if (a == 3) {
                        int allow = 1;
                        if (p->mod && fa4__mod_eval_mask(p->mod, b, h, qi, kj, p->aux, p->num_aux, &allow,
                                               NULL) != FA4_OK)
                            jb->failed = 1;
                        a = allow;
                    }
                    ok[j] = a != 0;
                    double val = acc, dv_ds = 1.0;
                    if (ok[j] && p->mod && fa4__mod_eval_score(p->mod, acc, b, h, qi, kj, p->aux, p->num_aux,
                                                     &val, &dv_ds, NULL) != FA4_OK)
                        jb->failed = 1;
                    s[j] = ok[j] ? val : -INFINITY;
                    raw[j] = acc;
                    dmod[j] = dv_ds;
                    if (s[j] > mx)
                        mx = s[j];
                }
                double sum = 0;
                for (int j = 0; j < p->klen[b]; j++) {
                    pr[j] = ok[j] ? exp(s[j] - mx) : 0.0;
                    sum += pr[j];
                }
                double *orow = o->o + ((size_t)h * p->tq + qr) * dv;
                memset(orow, 0, sizeof(double) * dv);
                o->lse[(size_t)h * p->tq + qr] = sum > 0 ? mx + log(sum) : -INFINITY;
                if (sum <= 0)
                    continue;
                for (int j = 0; j < p->klen[b]; j++) {
                    pr[j] /= sum;
                    if (pr[j] == 0)
                        continue;
                    const double *v = p->v + ((size_t)hk * p->tk + p->kbase[b] + j) * dv;
                    for (int c = 0; c < dv; c++)
                        orow[c] += pr[j] * v[c];
                }
                if (!jb->want_bwd)
                    continue;
                const double *dO = p->dout + ((size_t)h * p->tq + qr) * dv;
                double dsum = 0;
                for (int j = 0; j < p->klen[b]; j++) {
                    const double *v = p->v + ((size_t)hk * p->tk + p->kbase[b] + j) * dv;
                    double dp = 0;
                    for (int c = 0; c < dv; c++)
                        dp += dO[c] * v[c];
                    ds[j] = dp;
                    dsum += pr[j] * dp;
                }
                if (p->o_used) { /* D as the kernels form it (ref_problem.o_used) */
                    const double *orow_used = p->o_used + ((size_t)h * p->tq + qr) * dv;
                    dsum = 0;
                    for (int c = 0; c < dv; c++)
                        dsum += dO[c] * orow_used[c];
                }
                if (p->dlse) /* the LSE's own gradient: d lse / d score_j = P_j */
                    dsum -= p->dlse[(size_t)h * p->tq + qr];
                double *dq = o->dq + ((size_t)h * p->tq + qr) * d;
                for (int j = 0; j < p->klen[b]; j++) {
                    if (pr[j] == 0)
                        continue;
                    const int64_t kr = p->kbase[b] + j;
                    const double g = pr[j] * (ds[j] - dsum); /* d loss / d modded score */
                    if (jb->daux && p->trainable_index) {
                        int64_t e = p->trainable_index(h, qi, (int)(j + p->kv_offset));
                        if (e >= p->trainable_numel) /* the kernel clamps out-of-range reads */
                            e = p->trainable_numel - 1;
                        double der = 0;
                        if (fa4__mod_eval_score_daux(p->mod, raw[j], b, h, qi, (int)(j + p->kv_offset),
                                                     p->aux, p->num_aux, p->trainable_aux, e, &der,
                                                     NULL) == FA4_OK)
                            jb->daux[e] += g * der;
                        else
                            jb->failed = 1;
                    }
                    const double graw = g * dmod[j] * p->scale;
                    const double *k = p->k + ((size_t)hk * p->tk + kr) * d;
                    double *dk = o->dk + ((size_t)hk * p->tk + kr) * d;
                    double *dvv = o->dv + ((size_t)hk * p->tk + kr) * dv;
                    for (int c = 0; c < d; c++) {
                        dq[c] += graw * k[c];
                        dk[c] += graw * q[c];
                    }
                    for (int c = 0; c < dv; c++)
                        dvv[c] += pr[j] * dO[c];
                }
            }
        }
    }
    free(s);
    free(ds);
    free(dmod);
    free(raw);
    free(pr);
    free(ok);
    return NULL;
}

int ref_attention(const ref_problem *p, int want_bwd, ref_result *out, int threads)
{
    memset(out, 0, sizeof *out);
    out->o = calloc((size_t)p->hq * p->tq * p->dv, sizeof(double));
    out->lse = calloc((size_t)p->hq * p->tq, sizeof(double));
    for (int64_t i = 0; i < (int64_t)p->hq * p->tq; i++)
        out->lse[i] = -INFINITY;
    if (want_bwd) {
        out->dq = calloc((size_t)p->hq * p->tq * p->d, sizeof(double));
        out->dk = calloc((size_t)p->hkv * p->tk * p->d, sizeof(double));
        out->dv = calloc((size_t)p->hkv * p->tk * p->dv, sizeof(double));
        if (p->trainable_aux >= 0)
            out->daux = calloc((size_t)p->trainable_numel, sizeof(double));
    }
    if (threads < 1)
        threads = 1;
    if (threads > p->batch * p->hkv)
        threads = p->batch * p->hkv;
    job *jobs = calloc((size_t)threads, sizeof(job));
    pthread_t *tid = calloc((size_t)threads, sizeof(pthread_t));
    for (int t = 0; t < threads; t++) {
        jobs[t] = (job){p, out, want_bwd, t, threads, NULL, 0};
        if (out->daux)
            jobs[t].daux = calloc((size_t)p->trainable_numel, sizeof(double));
        pthread_create(&tid[t], NULL, worker, &jobs[t]);
    }
    int failed = 0;
    for (int t = 0; t < threads; t++) {
        pthread_join(tid[t], NULL);
        failed |= jobs[t].failed;
        if (jobs[t].daux) {
            for (int64_t e = 0; e < p->trainable_numel; e++)
                out->daux[e] += jobs[t].daux[e];
            free(jobs[t].daux);
        }
    }
    free(jobs);
    free(tid);
    return failed ? -1 : 0;
}

void ref_result_free(ref_result *r)
{
    free(r->o);
    free(r->lse);
    free(r->dq);
    free(r->dk);
    free(r->dv);
    free(r->daux);
    memset(r, 0, sizeof *r);
}
