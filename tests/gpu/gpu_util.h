/*
 * gpu_util.h - what the GPU test program shares between its files: the driver table (loaded the
 * way the library loads it, so the test never links libcuda), 16-bit conversions on the host, a
 * seeded random generator, and the case description with its float64 reference.
 */
#ifndef FA4_TESTS_GPU_UTIL_H
#define FA4_TESTS_GPU_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fa4jit.h"
#include "internal.h"

extern const fa4__cu *g_cu;

#define CK(call)                                                                                   \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            const char *n_ = "?";                                                                  \
            g_cu->getErrorName(r_, &n_);                                                           \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, n_);             \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

/* ------------------------------------------------------------------------- 16-bit numbers */
static inline uint16_t f2bf(float f)
{
    union { float f; uint32_t u; } v = {f};
    if ((v.u & 0x7fffffffu) > 0x7f800000u)
        return 0x7fc0;
    uint32_t r = v.u + 0x7fffu + ((v.u >> 16) & 1u);
    return (uint16_t)(r >> 16);
}
static inline float bf2f(uint16_t h)
{
    union { uint32_t u; float f; } v = {(uint32_t)h << 16};
    return v.f;
}
static inline uint16_t f2h(float f)
{
    union { float f; uint32_t u; } v = {f};
    uint32_t sign = (v.u >> 16) & 0x8000u;
    int32_t exp = (int32_t)((v.u >> 23) & 0xff) - 127 + 15;
    uint32_t man = v.u & 0x7fffffu;
    if (((v.u >> 23) & 0xff) == 0xff)
        return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0));
    if (exp >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (exp <= 0) {
        if (exp < -10)
            return (uint16_t)sign;
        man |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - exp);
        uint32_t half = 1u << (shift - 1);
        uint32_t r = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1);
        if (rem > half || (rem == half && (r & 1)))
            r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = ((uint32_t)exp << 10) | (man >> 13);
    uint32_t rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1)))
        r++;
    return (uint16_t)(sign | r);
}
static inline float h2f(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ffu;
    union { uint32_t u; float f; } v;
    if (exp == 0) {
        if (man == 0) {
            v.u = sign;
            return v.f;
        }
        float f = (float)man / 1024.0f / 16384.0f;
        return sign ? -f : f;
    }
    if (exp == 31)
        v.u = sign | 0x7f800000u | (man << 13);
    else
        v.u = sign | ((exp + 112) << 23) | (man << 13);
    return v.f;
}

/* ------------------------------------------------------------------------------- random */
typedef struct rng {
    uint64_t s;
} rng;
static inline uint64_t rng_next(rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static inline double rng_unif(rng *r)
{
    return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}
static inline int rng_int(rng *r, int lo, int hi) /* inclusive */
{
    return lo + (int)(rng_next(r) % (uint64_t)(hi - lo + 1));
}
static inline double rng_normal(rng *r)
{
    double u1 = rng_unif(r), u2 = rng_unif(r);
    if (u1 < 1e-300)
        u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* ------------------------------------------------------------------------- the reference */
/* Everything the float64 reference needs, in logical layouts: q/o/dout [hq][tq][d], k/v
 * [hkv][tk][d], lse [hq][tq]; sequence b is rows qbase[b] .. qbase[b] + qlen[b]. */
typedef struct ref_problem {
    const fa4__mod *mod;
    const fa4_aux_value *aux; /* host pointers */
    int num_aux;
    int batch, hq, hkv, d, dv;
    int64_t tq, tk;
    const int *qbase, *qlen, *kbase, *klen;
    double scale;
    int64_t q_offset, kv_offset;
    /* block mask status [bm_b][bm_h][nq][nkv]: 0 absent, 1 partial, 2 full; NULL = dense */
    const unsigned char *bm_status;
    int bm_batch, bm_heads, bm_q_block, bm_kv_block, bm_nq, bm_nkv;
    const double *q, *k, *v, *dout;
    const double *dlse;       /* [hq][tq] d loss / d LSE, NULL = none */
    /* [hq][tq][dv] the O the backward was given (the kernels' forward output, in the element
     * type), NULL = none. With it the rows' sum D is rowsum(dO * o_used), as every kernel's bwd_pre
     * forms it, instead of the exact sum P dP: a per-row error of D (O's rounding) moves an aux
     * gradient entry by the row's probability mass in it, where the entry's exact value cancels
     * (sum P (dP - D) over a row is 0), so an entry that takes most of its rows' mass got a relative
     * error of the element type's rounding times about sqrt(keys in it) / 16 (session 34) that is
     * the algorithm's, not a kernel's */
    const double *o_used;
    int trainable_aux;        /* index of the trainable aux tensor, -1 none */
    int64_t trainable_numel;
    /* d mod / d aux[elem] is 1 at elem = index_of(q_idx, kv_idx) (the test's relative bias) */
    int64_t (*trainable_index)(int h, int q_idx, int kv_idx);
} ref_problem;

typedef struct ref_result {
    double *o, *lse;          /* forward */
    double *dq, *dk, *dv;     /* backward (NULL when not asked) */
    double *daux;
} ref_result;

/* Compute the reference with `threads` workers (split over (batch, kv head)). */
int ref_attention(const ref_problem *p, int want_bwd, ref_result *out, int threads);
void ref_result_free(ref_result *r);

#endif /* FA4_TESTS_GPU_UTIL_H */
