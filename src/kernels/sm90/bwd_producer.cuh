/*
 * bwd_producer.cuh - the producer thread of the sm90 backward mains (bwd_main.cu at head dims up
 * to 128, bwd256.cuh at 256): K and V of the CTA's kBN keys once, then per step of its walk Q, dO
 * (kBM rows, 128-byte swizzle) and lse2, dpsum (1-d boxes) into the kBStages ring. Included by
 * each main after its own geometry (kBN, kBM, kBStages, the byte counts) and fa4_bwd_smem, which
 * differ between the two; the code is theirs alike.
 */
#ifndef FA4_SM90_BWD_PRODUCER_CUH
#define FA4_SM90_BWD_PRODUCER_CUH
/* 1 in the GQA program (bwd_main80s.cu; bwd_config.cuh says what it changes) */
#ifndef FA4_SM90_BWD_GQA_PROG
#define FA4_SM90_BWD_GQA_PROG 0
#endif

/* kTurnSlot: with a deterministic walk table, leave each step's walk-table word (turn | full << 31)
 * by its stage for the dQ issuers (made visible by the stage's arrival). Nothing more per step:
 * any arithmetic there spilled the producer's 24 registers (D 128 rel_bias). kRotOff (bwd_main.cu's
 * kBDqRotOff; 0: none): with rotated deterministic dense walks (bwd_schedule.cuh), the step's turn
 * there instead, from the constants at bar_kv() + kRotOff (at the dQ write it spilled alibi's
 * consumers, D 128). */
/* One step of a walk into stage s of the ring (phase ph; it: the steps issued before it, counted
 * on across the CTA's items in the persistent main): the wait for the stage's release, then Q, dO
 * (rows qrow0 + m0 of head h) and lse2, dpsum (workspace row h ws_rows + wrow0 + m0). */
template <bool kTurnSlot, unsigned kRotOff>
__device__ __forceinline__ void fa4_bwd_produce_step(const fa4_params &p, const fa4_bwd_smem &sm, const fa4_tmap *tm_q,
                                                     const fa4_tmap *tm_do, const fa4_tmap *tm_lse2,
                                                     const fa4_tmap *tm_dpsum, int s, unsigned ph, int it, int h,
                                                     int m0, int tw, int qrow0, int wrow0, int qb)
{
    if (it >= kBStages)
        fa4_mbar_wait(sm.bar_empty(s), ph ^ 1u);
    const unsigned bar = sm.bar_full(s);
    if (kTurnSlot && fa4_bwd_walk_table(p))
        asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(sm.dq_turn(s)), "r"(tw) : "memory");
    else if (kTurnSlot && kRotOff && fa4_bwd_rotated(p))
        asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(sm.dq_turn(s)),
                     "r"(fa4_bwd_rot_turn(sm.bar_kv() + kRotOff, m0))
                     : "memory");
    const int wrow = h * (int)p.ws_rows + wrow0 + m0;
    fa4_mbar_expect_tx(bar, kBQBytes + kBDoBytes + 2 * kBM * 4); /* the row boxes, not their padding */
    fa4_tma_load_1d(sm.rows(s), tm_lse2, bar, wrow);
    fa4_tma_load_1d(sm.rows(s) + kBRowBytes / 2, tm_dpsum, bar, wrow);
#pragma unroll
    for (int c = 0; c < kDp / 64; ++c)
        fa4_tma_load_4d(sm.q(s) + c * kBM * kPanelBytes, tm_q, bar, c * 64, qrow0 + m0, h, qb);
#pragma unroll
    for (int c = 0; c < kDvp / 64; ++c)
        fa4_tma_load_4d(sm.dout(s) + c * kBM * kPanelBytes, tm_do, bar, c * 64, qrow0 + m0, h, qb);
}

/* K and V of key tile n0 of kv head hkv (batch kb) into their buffers, announced on bar_kv. */
__device__ __forceinline__ void fa4_bwd_produce_kv(const fa4_bwd_smem &sm, const fa4_tmap *tm_k, const fa4_tmap *tm_v,
                                                   int krow, int hkv, int kb)
{
    fa4_mbar_expect_tx(sm.bar_kv(), kBKBytes + kBVBytes);
#pragma unroll
    for (int c = 0; c < kDp / 64; ++c)
        fa4_tma_load_4d(sm.k() + c * kBN * kPanelBytes, tm_k, sm.bar_kv(), c * 64, krow, hkv, kb);
#pragma unroll
    for (int c = 0; c < kDvp / 64; ++c)
        fa4_tma_load_4d(sm.v() + c * kBN * kPanelBytes, tm_v, sm.bar_kv(), c * 64, krow, hkv, kb);
}

template <bool kTurnSlot, unsigned kRotOff = 0>
__device__ __forceinline__ void fa4_bwd_produce(const fa4_params &p, const fa4_bwd_smem &sm, const fa4_tmap *tm_q,
                                                const fa4_tmap *tm_k, const fa4_tmap *tm_v, const fa4_tmap *tm_do,
                                                const fa4_tmap *tm_lse2, const fa4_tmap *tm_dpsum, int b, int hk,
                                                int n_tile, int n0, const fa4_seq &seq)
{
    const int kb = p.cu_seqlens_k ? 0 : b, qb = p.cu_seqlens_q ? 0 : b;
    {
        fa4_tma_prefetch(tm_q);
        fa4_tma_prefetch(tm_k);
        fa4_tma_prefetch(tm_v);
        fa4_tma_prefetch(tm_do);
        fa4_tma_prefetch(tm_lse2);
        fa4_tma_prefetch(tm_dpsum);
        const int hkv = FA4_SM90_BWD_GQA_PROG && p.kv_split ? hk / p.kv_split : hk; /* split: hk is the query head */
        fa4_bwd_produce_kv(sm, tm_k, tm_v, (int)seq.row_k + n0, hkv, kb);
    }
    /* PDL: K and V (inputs, older than bwd_pre) are on their way while bwd_pre (or the rank
     * kernel) finishes; lse2 and dpsum are bwd_pre's and the walk table the rank kernel's */
    fa4_pdl_wait();
    const int qrow0 = (int)seq.row_q, wrow0 = (int)seq.ws_row;
    int s = 0, it = 0;
    unsigned ph = 0; /* stage and phase counted on (no division by kBStages) */
    fa4_bwd_walk(p, b, hk, n_tile, seq.len_q, [&](int h, int m0, int tw) {
        fa4_bwd_produce_step<kTurnSlot, kRotOff>(p, sm, tm_q, tm_do, tm_lse2, tm_dpsum, s, ph, it, h, m0, tw, qrow0,
                                                 wrow0, qb);
        ++it;
        if (++s == kBStages) {
            s = 0;
            ph ^= 1u;
        }
    });
}

#endif /* FA4_SM90_BWD_PRODUCER_CUH */
