/*
 * softmax.cuh - the softmax stage of the forward: scale, score_mod (which sees the scaled score),
 * masking, and the online softmax over a warp's 16 x kFwdN score fragment. Each thread holds two
 * rows (g and g+8); row statistics are reduced across the 4 threads of a quad. A row whose every
 * score so far is -inf keeps max -inf and uses 0 as its reference, so exp2 gives 0, never NaN.
 */
#ifndef FA4_SM80_SOFTMAX_CUH
#define FA4_SM80_SOFTMAX_CUH

/* s: raw q.k fragment of rows row0 (+8), columns col0 + 8 ni + 2t (+1). Replaced by the final
 * (modded, masked) scores in natural-log units. */
template <int NT>
__device__ __forceinline__ void fa4_scores(float (&s)[NT][4], const fa4_params &p, const fa4_aux &aux,
                                           int b, int h, int row0, int col0, int len_q, int len_k,
                                           bool full)
{
#pragma unroll
    for (int ni = 0; ni < NT; ++ni) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int qi = row0 + (e >= 2 ? 8 : 0);
            const int ki = col0 + ni * 8 + (e & 1);
            float x = s[ni][e] * p.scale;
            const bool ok = fa4_allowed(p, aux, b, h, qi, ki, len_q, len_k, full);
#if FA4_HAS_SCORE_MOD
            if (ok)
                x = fa4_score_mod(x, b, h, (int)(qi + p.q_offset), (int)(ki + p.kv_offset), aux);
#endif
            s[ni][e] = ok ? x : -FA4_INF;
        }
    }
}

/* Online softmax update: s becomes P (unnormalised), corr the factor to rescale O by. */
template <int NT>
__device__ __forceinline__ void fa4_online_softmax(float (&s)[NT][4], float (&m)[2], float (&l)[2],
                                                   float (&corr)[2])
{
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        float mx = -FA4_INF;
#pragma unroll
        for (int ni = 0; ni < NT; ++ni)
            mx = fmaxf(mx, fmaxf(s[ni][2 * r], s[ni][2 * r + 1]));
        mx = fa4_quad_max(mx);
        const float m_new = fmaxf(m[r], mx);
        const float ref = m_new == -FA4_INF ? 0.f : m_new * FA4_LOG2E;
        corr[r] = fa4_exp2(m[r] * FA4_LOG2E - ref);
        m[r] = m_new;
        float sum = 0.f;
#pragma unroll
        for (int ni = 0; ni < NT; ++ni) {
#pragma unroll
            for (int e = 2 * r; e < 2 * r + 2; ++e) {
                s[ni][e] = fa4_exp2(fmaf(s[ni][e], FA4_LOG2E, -ref));
                sum += s[ni][e];
            }
        }
        l[r] = l[r] * corr[r] + sum;
    }
}

#endif /* FA4_SM80_SOFTMAX_CUH */
