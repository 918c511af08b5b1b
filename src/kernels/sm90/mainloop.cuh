/*
 * mainloop.cuh - the consumer warpgroups' main loop of the sm90 forward: for each key tile,
 * S = Q K^T (SS-wgmma), scores and online softmax on the fragment, O += P V (RS-wgmma, P from
 * registers). Two schedules:
 *   FA4_SM90_OVERLAP 0: each step waits for its own wgmma (the plain reference schedule).
 *   FA4_SM90_OVERLAP 1 (default): S(j) and P(j-1) V(j-1) are issued back to back and the softmax of
 *     S(j) runs while P V is still on the tensor cores; with FA4_SM90_PINGPONG 1 (default) the two
 *     consumer warpgroups also take turns issuing their wgmma (named barriers 1 and 2), so one's
 *     softmax hides under the other's matrix work.
 * K and V stages are released separately (empty barriers per K and per V stage): K(j) as soon as
 * S(j) is done, V(j-1) after P(j-1) V(j-1).
 * Accumulators and the P fragment are pinned (fa4_reg_fence / fa4_reg_fence_u) between issue and
 * wait so the compiler neither moves nor reuses them while a wgmma is in flight.
 */
#ifndef FA4_SM90_MAINLOOP_CUH
#define FA4_SM90_MAINLOOP_CUH

#ifndef FA4_SM90_OVERLAP
#define FA4_SM90_OVERLAP 1
#endif
#ifndef FA4_SM90_PINGPONG
#define FA4_SM90_PINGPONG 1
#endif

template <int R> __device__ __forceinline__ void fa4_reg_fence_u(unsigned (&a)[R][4])
{
#pragma unroll
    for (int i = 0; i < R; ++i)
        asm volatile("" : "+r"(a[i][0]), "+r"(a[i][1]), "+r"(a[i][2]), "+r"(a[i][3])::"memory");
}

__device__ __forceinline__ void fa4_named_sync(int id)
{
    asm volatile("bar.sync %0, 256;\n" ::"r"(id) : "memory");
}
__device__ __forceinline__ void fa4_named_arrive(int id)
{
    asm volatile("bar.arrive %0, 256;\n" ::"r"(id) : "memory");
}

struct fa4_sm90_consumer {
    const fa4_params &p;
    const fa4_aux &aux;
    const fa4_sm90_tiles &tiles;
    int b, h, row0, lane, cw;
    int len_q, len_k;
    bool q_inside;
    float k2;
    unsigned q_base, s_k, s_v, s_bar;

    __device__ __forceinline__ unsigned bar_k(int s) const { return s_bar + 8u * (1u + (unsigned)s); }
    __device__ __forceinline__ unsigned bar_v(int s) const { return s_bar + 8u * (1u + kStages + (unsigned)s); }
    __device__ __forceinline__ unsigned bar_ek(int s) const { return s_bar + 8u * (1u + 2u * kStages + (unsigned)s); }
    __device__ __forceinline__ unsigned bar_ev(int s) const { return s_bar + 8u * (1u + 3u * kStages + (unsigned)s); }

    __device__ __forceinline__ void issue_qk(float (&sc)[kN / 8][4], int s) const
    {
#pragma unroll
        for (int kk = 0; kk < kD / 16; ++kk) {
            const unsigned long long da =
                fa4_desc_sw128(q_base + (kk / 4) * kM * kPanelBytes + (kk % 4) * 32, 16, 1024);
            const unsigned long long db =
                fa4_desc_sw128(s_k + s * kKBytes + (kk / 4) * kN * kPanelBytes + (kk % 4) * 32, 16, 1024);
            fa4_wgmma<kN>::ss(sc, da, db, kk > 0);
        }
    }

    __device__ __forceinline__ void issue_pv(float (&o)[kDvp / 8][4], const unsigned (&pa)[kN / 16][4],
                                             int s) const
    {
#pragma unroll
        for (int kk = 0; kk < kN / 16; ++kk) {
            const unsigned long long dv =
                fa4_desc_sw128(s_v + s * kVBytes + kk * 16 * kPanelBytes, kN * kPanelBytes, 1024);
            fa4_wgmma<kDvp>::rs(o, pa[kk], dv, 1);
        }
    }

    /* Scores of tile j and the online softmax; sc becomes P. Returns whether O needs corr. */
    __device__ __forceinline__ bool softmax(float (&sc)[kN / 8][4], int j, float (&m)[2], float (&l)[2],
                                            float (&corr)[2]) const
    {
        bool full;
        const int n0 = tiles.start(j, &full);
        const int lim_k = min(len_k, n0 + tiles.span);
        const bool mask_free = q_inside && n0 + kN <= lim_k && (!FA4_HAS_MASK_MOD || full);
        if (mask_free)
            fa4_sm90_scores<kN / 8, false>(sc, p, aux, b, h, row0, n0 + 2 * (lane & 3), len_q, lim_k, full);
        else
            fa4_sm90_scores<kN / 8, true>(sc, p, aux, b, h, row0, n0 + 2 * (lane & 3), len_q, lim_k, full);
        return fa4_sm90_softmax<kN / 8>(sc, m, l, corr, k2);
    }

    static __device__ __forceinline__ void rescale(float (&o)[kDvp / 8][4], const float (&corr)[2])
    {
#pragma unroll
        for (int i = 0; i < kDvp / 8; ++i) {
            o[i][0] *= corr[0];
            o[i][1] *= corr[0];
            o[i][2] *= corr[1];
            o[i][3] *= corr[1];
        }
    }

    static __device__ __forceinline__ void pack(unsigned (&pa)[kN / 16][4], const float (&sc)[kN / 8][4])
    {
#pragma unroll
        for (int kk = 0; kk < kN / 16; ++kk) {
            pa[kk][0] = fa4_pack2(sc[2 * kk][0], sc[2 * kk][1]);
            pa[kk][1] = fa4_pack2(sc[2 * kk][2], sc[2 * kk][3]);
            pa[kk][2] = fa4_pack2(sc[2 * kk + 1][0], sc[2 * kk + 1][1]);
            pa[kk][3] = fa4_pack2(sc[2 * kk + 1][2], sc[2 * kk + 1][3]);
        }
    }

    __device__ __forceinline__ void release(unsigned bar) const
    {
        if (lane == 0)
            fa4_mbar_arrive(bar);
    }

    __device__ __forceinline__ void run(float (&o)[kDvp / 8][4], float (&m)[2], float (&l)[2]) const
    {
        const int n_tiles = tiles.count;
        float sc[kN / 8][4];
        unsigned pa[kN / 16][4];
        float corr[2];
#if !FA4_SM90_OVERLAP
        for (int j = 0; j < n_tiles; ++j) {
            const int s = j % kStages;
            const unsigned ph = (unsigned)(j / kStages) & 1u;
            fa4_mbar_wait(bar_k(s), ph);
            fa4_wgmma_fence();
            issue_qk(sc, s);
            fa4_wgmma_commit();
            fa4_wgmma_wait<0>();
            fa4_reg_fence(sc);
            release(bar_ek(s));
            if (softmax(sc, j, m, l, corr))
                rescale(o, corr);
            pack(pa, sc);
            fa4_mbar_wait(bar_v(s), ph);
            fa4_reg_fence(o);
            fa4_reg_fence_u(pa);
            fa4_wgmma_fence();
            issue_pv(o, pa, s);
            fa4_wgmma_commit();
            fa4_wgmma_wait<0>();
            fa4_reg_fence(o);
            fa4_reg_fence_u(pa);
            release(bar_ev(s));
        }
#else
        if (n_tiles <= 0)
            return;
        const bool pp = FA4_SM90_PINGPONG != 0;
        if (pp && cw == 1)
            fa4_named_arrive(1); /* warpgroup 0 issues first */
        /* tile 0: S(0) and its softmax */
        fa4_mbar_wait(bar_k(0), 0);
        if (pp)
            fa4_named_sync(1 + cw);
        fa4_wgmma_fence();
        issue_qk(sc, 0);
        fa4_wgmma_commit();
        if (pp)
            fa4_named_arrive(2 - cw);
        fa4_wgmma_wait<0>();
        fa4_reg_fence(sc);
        release(bar_ek(0));
        softmax(sc, 0, m, l, corr); /* O is still zero: nothing to rescale */
        pack(pa, sc);
        for (int j = 1; j < n_tiles; ++j) {
            const int s = j % kStages, sp = (j - 1) % kStages;
            fa4_mbar_wait(bar_k(s), (unsigned)(j / kStages) & 1u);
            /* V(j-1) arrived long ago; waiting here keeps branches out from between the two issues
             * (ptxas would otherwise insert a warpgroup fence before the RS-wgmma, C7519) */
            fa4_mbar_wait(bar_v(sp), (unsigned)((j - 1) / kStages) & 1u);
            if (pp)
                fa4_named_sync(1 + cw);
            fa4_reg_fence(o);
            fa4_reg_fence_u(pa);
            fa4_wgmma_fence();
            issue_qk(sc, s);
            fa4_wgmma_commit();
            issue_pv(o, pa, sp);
            fa4_wgmma_commit();
            if (pp)
                fa4_named_arrive(2 - cw);
            fa4_wgmma_wait<1>();
            fa4_reg_fence(sc);
            release(bar_ek(s));
            const bool need = softmax(sc, j, m, l, corr);
            fa4_wgmma_wait<0>();
            fa4_reg_fence(o);
            fa4_reg_fence_u(pa);
            release(bar_ev(sp));
            if (need)
                rescale(o, corr);
            pack(pa, sc);
        }
        const int sl = (n_tiles - 1) % kStages;
        fa4_mbar_wait(bar_v(sl), (unsigned)((n_tiles - 1) / kStages) & 1u);
        fa4_reg_fence(o);
        fa4_reg_fence_u(pa);
        fa4_wgmma_fence();
        issue_pv(o, pa, sl);
        fa4_wgmma_commit();
        fa4_wgmma_wait<0>();
        fa4_reg_fence(o);
        fa4_reg_fence_u(pa);
        release(bar_ev(sl));
        if (pp && cw == 0)
            fa4_named_sync(1); /* balance warpgroup 1's first arrive */
#endif
    }
};

#endif /* FA4_SM90_MAINLOOP_CUH */
