/*
 * mainloop.cuh - the consumer warpgroups' main loop of the sm90 forward: for each key tile,
 * S = Q K^T (SS-wgmma), scores and online softmax on the fragment, O += P V (RS-wgmma, P from
 * registers). Two schedules:
 *   FA4_SM90_OVERLAP 0: each step waits for its own wgmma (the plain reference schedule; ping-pong
 *     then only orders the S issues).
 *   FA4_SM90_OVERLAP 1 (default): S(j) and P(j-1) V(j-1) are issued back to back and the softmax of
 *     S(j) runs while P V is still on the tensor cores; with FA4_SM90_PINGPONG 1 (default) the
 *     consumer warpgroups also take turns issuing their wgmma (named barriers 1 .. 3, round robin), so
 *     one's softmax hides under the others' matrix work.
 * K and V stages are released separately (empty barriers per K and per V stage): K(j) as soon as
 * S(j) is done, V(j-1) after P(j-1) V(j-1); Q after the tile's last S, so the producer loads the
 * next tile's Q during this tile's last P V and epilogue.
 * Accumulators and the P fragment are pinned (fa4_reg_fence / fa4_reg_fence_u) between issue and
 * wait so the compiler neither moves nor reuses them while a wgmma is in flight.
 */
#ifndef FA4_SM90_MAINLOOP_CUH
#define FA4_SM90_MAINLOOP_CUH

/* Overlap keeps S(j), P(j-1) and O live together: at Dv 256 (kN 64) that is 32 + 16 + 128
 * registers, which fits the consumers' 232 for most mods (H200, B4 H16 S4096 D256 bf16 fwd, with
 * the late rescale below: plain 673 -> 715, causal 569 -> 624 TFLOP/s). Where a build spills the
 * host compiles it again without the late rescale, then without the overlap (path_sm90.c's spill
 * fallback levels; at D 256 t5_bias takes the first); a gathering early mask at Dv 256 (document,
 * longformer: 36-48 bytes of spills with it) does not overlap to begin with.
 * Checked builds of mods with aux do not overlap (without aux there is nothing to check): with
 * the trap inside the loop ptxas saved the in-flight registers to the stack; fwd.cu now defers
 * the trap to the end of the kernel (FA4_CHECKED_DEFERRED), which is clean without overlap for
 * most mods but still spilled with it (rel_bias D 128: 618 / 432 bytes and wgmma serialized,
 * C7512). Three consumers (160 registers) overlap with the stash below: without it S(j + 1),
 * P(j) and O (128 registers at D 64) and the loop state spilled 94 / 152 bytes (plain) to 146 /
 * 228 (prefix_lm). */
#ifndef FA4_SM90_OVERLAP
#if defined(FA4_CHECKED) && FA4_CHECKED && FA4_NUM_AUX > 0
#define FA4_SM90_OVERLAP 0
#elif FA4_HEAD_DIM_V > 192 && defined(FA4_MASK_MOD_GATHERS) && FA4_MASK_MOD_GATHERS && FA4_HEAD_DIM % 64 == 0
#define FA4_SM90_OVERLAP 0 /* the early mask (below) */
#else
#define FA4_SM90_OVERLAP 1 /* three consumers too: FA4_SM90_STASH below */
#endif
#endif
/* The early mask (issue 8): the mask of a key tile computed while its S is on the tensor cores
 * (softmax.cuh), so that mask_mod's aux reads overlap the MMA instead of following the wait. Only
 * for masks that gather (FA4_MASK_MOD_GATHERS, emitted by the mod compiler: document's
 * doc_id[q_idx] == doc_id[kv_idx]; H200 B8 H16 S4096 D128: 187 -> 250 TFLOP/s); masks computed
 * from the indices alone lost 1.5-3.5% with it (window, prefix-LM, causal). Not at head dims that
 * are not whole panels: document spilled 6 bytes at D 96. Checked builds keep mask_mod inline,
 * where only positions inside the sequence are evaluated. */
#ifndef FA4_SM90_MASK_EARLY
#if defined(FA4_CHECKED) && FA4_CHECKED
#define FA4_SM90_MASK_EARLY 0
#elif defined(FA4_MASK_MOD_GATHERS) && FA4_MASK_MOD_GATHERS && FA4_HEAD_DIM % 64 == 0
#define FA4_SM90_MASK_EARLY 1
#else
#define FA4_SM90_MASK_EARLY 0
#endif
#endif
/* Three consumers with the overlap hold S(j + 1), P(j) and O (128 of their 160 registers at
 * D 64) through the issues; the tile's outer state waits in shared memory meanwhile (a stash of
 * 16 words per warp after the barriers, config.cuh's FA4_SM90_STASH_BYTES). */
#define FA4_SM90_STASH (FA4_SM90_CONSUMERS == 3 && FA4_SM90_OVERLAP)
/* FA4_SM90_STASH_UNIFORM (session 23; with the stash): the Q panel's address and the ring count
 * read back from the stash are broadcast from lane 0, so that ptxas keeps the stage, Q and K/V
 * descriptors in uniform registers (plain D 64, three consumers: the loop 685 -> 663 instructions,
 * R2UR 32 -> 1): +5.4% / +6.1% plain D 64 forward, B8 H8 / H16 (H100 2026-12-06,
 * bench/results/2026-12-06-h100-s24-pending.txt). 0: the build before. */
#ifndef FA4_SM90_STASH_UNIFORM
#define FA4_SM90_STASH_UNIFORM (FA4_SM90_STASH && FA4_SM90_DESC_ADD)
#endif
__device__ __forceinline__ void fa4_sm90_stash_put(unsigned a, int nt, int nq, int it, int hb, int m_tile,
                                                   unsigned q_base)
{
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n"
                 "st.shared.v2.b32 [%0+16], {%5, %6};\n" ::"r"(a), "r"(nt), "r"(nq), "r"(it), "r"(hb), "r"(m_tile),
                 "r"(q_base)
                 : "memory");
}
__device__ __forceinline__ void fa4_sm90_stash_get(unsigned a, int &nt, int &nq, int &it, int &hb, int &m_tile)
{
    asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%5];\n"
                 "ld.shared.b32 %4, [%5+16];\n"
                 : "=r"(nt), "=r"(nq), "=r"(it), "=r"(hb), "=r"(m_tile) : "r"(a) : "memory");
}
#ifndef FA4_SM90_JOINT_WAIT
#define FA4_SM90_JOINT_WAIT 0
#endif
#ifndef FA4_SM90_PINGPONG
#define FA4_SM90_PINGPONG 1
#endif
/* FA4_SM90_RESCALE_LATE 1 (overlap only): O's rescale by tile j's correction runs after the issue
 * of S(j+1) and before that of P(j) V(j) (as FA3 places it), so that its Dv / 2 multiplies per
 * thread run beside S(j+1) on the tensor cores instead of ahead of its issue; corr is 1 where no
 * rescale is needed, and tile 0's scales zeros. Default at Dv 256 only: there it took the
 * overlapped forward from 672 to 715 TFLOP/s (plain) and 604 to 624 (causal), H200 B4 H16 S4096
 * bf16 (2026-12-02, notes/issue8-fwd-overlap.md); at D 128 it measured within noise (session 6),
 * and at Dv 192 it has not been measured, so those builds stay as they were. */
#ifndef FA4_SM90_RESCALE_LATE
/* path_sm90.c's spill fallback level 2 without a mask_mod (level 1 dropped the descriptor adds
 * there already; with one, level 2 is level 1's descriptors and the split: softcap_causal's D 256
 * forward is clean so and spilled 12 bytes with the late rescale off too) */
#if defined(FA4_SM90_FWD_FALLBACK) && FA4_SM90_FWD_FALLBACK >= 2 && !FA4_HAS_MASK_MOD
#define FA4_SM90_RESCALE_LATE 0
#else
#define FA4_SM90_RESCALE_LATE (FA4_HEAD_DIM_V > 192)
#endif
#endif
/* The overlapped loop's shape: 1 compiles the softmax (and the mods inlined in it) once, with S(0)
 * waited for before the loop; 0 peels key tile 0 (softmax twice). H200 2026-12-01 (B4 H16 S4096
 * D128 bf16 fwd, same call, two rounds): the peeled loop is faster on masks, causal 547.6 -> 557.8,
 * D 64 416.9 -> 421.8, window 402.9 -> 407.0, plain equal; the single copy halves the SASS of a
 * score_mod kernel (t5_bias 10832 -> 6392) and its cold compile (t5_bias 2.40 -> 1.46 s, the 1.5 s
 * target), and with a gathering mask_mod document equal (317.2 / 315.3). So: one copy where a
 * score_mod or a gathering mask_mod is inlined, the peeled loop otherwise. */
#ifndef FA4_SM90_FWD_ONE_SOFTMAX
#if FA4_HAS_SCORE_MOD || (defined(FA4_MASK_MOD_GATHERS) && FA4_MASK_MOD_GATHERS)
#define FA4_SM90_FWD_ONE_SOFTMAX 1
#else
#define FA4_SM90_FWD_ONE_SOFTMAX 0
#endif
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

/* The mbarriers, 8 bytes each: Q full / empty, then per stage K full, V full, K empty, V empty,
 * then the tile hand-off's; at the end of the 256 bytes, the hand-off itself (fa4_sm90_put_tile:
 * written by the producer once Q empty completed, before it arrives on tile()). */
static_assert((3 + 4 * kStages) * 8 <= 240, "mbarriers overlap the tile hand-off");
struct fa4_sm90_bars {
    unsigned base;
    __device__ __forceinline__ unsigned slot() const { return base + 240u; }
    __device__ __forceinline__ unsigned tile() const { return base + 8u * (2u + 4u * kStages); }
    __device__ __forceinline__ unsigned q() const { return base; }
    __device__ __forceinline__ unsigned eq() const { return base + 8u; }
    __device__ __forceinline__ unsigned k(int s) const { return base + 8u * (2u + (unsigned)s); }
    __device__ __forceinline__ unsigned v(int s) const { return base + 8u * (2u + kStages + (unsigned)s); }
    __device__ __forceinline__ unsigned ek(int s) const { return base + 8u * (2u + 2u * kStages + (unsigned)s); }
    __device__ __forceinline__ unsigned ev(int s) const { return base + 8u * (2u + 3u * kStages + (unsigned)s); }
    /* FA4_SM90_ROWSUM_MMA's 16 x 8 block of ones (fwd.cu fills it), after the barriers, stash and table */
    __device__ __forceinline__ unsigned ones() const { return base + 256u + FA4_SM90_STASH_BYTES + FA4_SM90_RELT_BYTES; }
};

/* Turn-taking of the nc working consumer warpgroups around their wgmma issues, round robin
 * (named barriers 1 .. nc, 256 threads each: the waiting warpgroup and the one before it):
 * warpgroup c waits on barrier 1 + c, issues, then lets warpgroup c + 1 (mod nc) go. The last one
 * opens the first turn of warpgroup 0 once; the round then runs on across tiles (every warpgroup
 * issues equally often), and warpgroup 0 takes the last open turn back at the end. */
struct fa4_sm90_pingpong {
    int cw, nc;
    bool started;
    __device__ __forceinline__ void acquire()
    {
        if (!FA4_SM90_PINGPONG)
            return;
        if (!started) {
            started = true;
            if (cw == (kConsumers == 2 ? 1 : nc - 1))
                fa4_named_arrive(1);
        }
        fa4_named_sync(1 + cw);
    }
    __device__ __forceinline__ void release() const
    {
        if (FA4_SM90_PINGPONG)
            fa4_named_arrive(kConsumers == 2 ? 2 - cw : (cw + 1 < nc ? cw + 2 : 1));
    }
    /* the first turn opened before any tile (FA4_SM90_STASH): acquire then tests nothing */
    __device__ __forceinline__ void open()
    {
        started = true;
        if (FA4_SM90_PINGPONG && cw == nc - 1)
            fa4_named_arrive(1);
    }
    __device__ __forceinline__ void finish() const
    {
        if (FA4_SM90_PINGPONG && started && cw == 0)
            fa4_named_sync(1);
    }
};

/* Where a key tile lies and, with the early mask, which of its positions attend: filled between
 * the issue of its S and the wait (fa4_sm90_consumer::early); unused without the early mask. */
struct fa4_sm90_early {
    int n0, lim_k;
    bool full, check;
    unsigned bits[kMaskWords];
    bool rfold; /* FA4_SM90_RFOLD: the tile's relative table is one value, rc0; FA4_SM90_RBOUND: the
                 * tile lies in a region of one g, rc0 (and has no table) */
    float rc0;
    int rn0;      /* FA4_SM90_RREUSE: the key tile whose relative table is in shared memory */
    float rcarry; /* and its entry kN + t (threads t < 63), the next tile's entry t */
};

#if FA4_SM90_STASH
/* The consumers' view of fa4_sm90_tiles (schedule.cuh) with three consumers: the count in a
 * register, the block-mask walk (words 8 .. 15 of the warp's stash) read back from shared memory
 * by each start(); dense walks need neither. */
struct fa4_sm90_tiles_st {
    const fa4_params &p;
    int count;
    unsigned at;
    __device__ __forceinline__ int span() const
    {
        return p.has_block_mask && p.bm_kv_block < kN ? p.bm_kv_block : kN;
    }
    __device__ __forceinline__ int start(int j, bool *is_full) const
    {
        if (!p.has_block_mask) {
            *is_full = false;
            return j * kN;
        }
        int num_partial, per_block, kv_block;
        unsigned long long partial, full;
        asm volatile("ld.shared.v2.b32 {%0, %1}, [%5];\n"
                     "ld.shared.b32 %2, [%5+8];\n"
                     "ld.shared.v2.b64 {%3, %4}, [%5+16];\n"
                     : "=r"(num_partial), "=r"(per_block), "=r"(kv_block), "=l"(partial), "=l"(full)
                     : "r"(at)
                     : "memory");
        const int li = j / per_block, sub = j - li * per_block;
        const bool f = li >= num_partial;
        *is_full = f;
        return (f ? ((const int *)full)[li - num_partial] : ((const int *)partial)[li]) * kv_block + sub * kN;
    }
};
__device__ __forceinline__ void fa4_sm90_stash_tiles(unsigned a, const fa4_sm90_tiles &t)
{
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n"
                 "st.shared.v2.b64 [%0+16], {%5, %6};\n" ::"r"(a), "r"(t.num_partial), "r"(t.per_block),
                 "r"(t.kv_block), "r"(0), "l"((unsigned long long)t.partial), "l"((unsigned long long)t.full)
                 : "memory");
}
#define FA4_TILES_SPAN(t) (t).span()
typedef fa4_sm90_tiles_st fa4_sm90_ctiles;
#else
#define FA4_TILES_SPAN(t) (t).span
typedef fa4_sm90_tiles fa4_sm90_ctiles;
#endif

struct fa4_sm90_consumer {
    const fa4_params &p;
    const fa4_aux &aux;
    const fa4_sm90_ctiles &tiles;
    fa4_sm90_bars bars;
    int b, h, row0, lane, cw;
    int len_q, len_k;
    bool q_inside;
    float k2;
    unsigned q_base, s_k, s_v;
#if FA4_SM90_STASH
    unsigned stash; /* this warp's (fwd.cu), with q_base at word 5 */
#endif
#if FA4_SM90_RBOUND
    const int *rel_bounds; /* fa4_sm90_rel_bounds's output, NULL without it (softmax.cuh) */
#define FA4_SM90_RB_ARG rel_bounds
#else
#define FA4_SM90_RB_ARG nullptr
#endif

    __device__ __forceinline__ void issue_qk(float (&sc)[kN / 8][4], int s) const
    {
#if FA4_SM90_STASH
        /* this warpgroup's Q panel read again at each issue: ptxas otherwise keeps the four Q
         * descriptors (8 registers) live through the loop */
        unsigned q_base;
        asm volatile("ld.volatile.shared.u32 %0, [%1];\n" : "=r"(q_base) : "r"(stash + 20u) : "memory");
#if FA4_SM90_STASH_UNIFORM
        q_base = fa4_warp_uniform(q_base);
#endif
#endif
#pragma unroll
        for (int kk = 0; kk < kD / 16; ++kk) {
            const unsigned long long da = FA4_DESC_SW128(q_base, (kk / 4) * kM * kPanelBytes + (kk % 4) * 32, 16, 1024);
            const unsigned long long db =
                FA4_DESC_SW128(s_k + s * kKBytes, (kk / 4) * kN * kPanelBytes + (kk % 4) * 32, 16, 1024);
            fa4_wgmma<kN>::ss(sc, da, db, kk > 0);
        }
    }

    /* O += P V; with FA4_SM90_ROWSUM_MMA also la += P x ones (the row sums, config.cuh) */
    __device__ __forceinline__ void issue_pv(float (&o)[kDvp / 8][4], float (&la)[1][4],
                                             const unsigned (&pa)[kN / 16][4], int s) const
    {
        (void)la;
#pragma unroll
        for (int kk = 0; kk < kN / 16; ++kk) {
            const unsigned long long dv = FA4_DESC_SW128(s_v + s * kVBytes, kk * 16 * kPanelBytes, kN * kPanelBytes, 1024);
            fa4_wgmma<kDvp>::rs(o, pa[kk], dv, 1);
#if FA4_SM90_ROWSUM_MMA
            fa4_wgmma<8>::rs(la, pa[kk], fa4_desc_ones(bars.ones()), 1);
#endif
        }
    }

    /* With the early mask, between the issue of S(j) and its wait: key tile j's first key, key
     * limit, whether it lies in a full block and whether its positions need checking (tiles.start
     * reads the block mask's lists from global memory, once per tile), then the mask's bits.
     * Without it nothing runs here: softmax reads where the tile lies after the wait. */
    /* this warpgroup's table of the relative form (FA4_SM90_RELT), after the barriers */
    __device__ __forceinline__ unsigned relt() const
    {
        return bars.base + 256u + FA4_SM90_STASH_BYTES + (unsigned)cw * FA4_SM90_RELT_WG_BYTES;
    }

    __device__ __forceinline__ void early(fa4_sm90_early &e, int j) const
    {
#if FA4_SM90_RELT && !FA4_SM90_MASK_EARLY
        {
            bool full;
            const int n0 = tiles.start(j, &full);
            e.rfold = fa4_sm90_rel_fill(relt(), cw, p, aux, b, h, row0 - (lane >> 2) - 16 * ((threadIdx.x >> 5) & 3), n0, &e.rc0, e.rn0, e.rcarry, FA4_SM90_RB_ARG, len_q, len_k);
        }
#endif
#if FA4_SM90_MASK_EARLY
        e.n0 = tiles.start(j, &e.full);
        e.lim_k = min(len_k, e.n0 + FA4_TILES_SPAN(tiles));
        e.check = !(q_inside && e.n0 + kN <= e.lim_k && (!FA4_HAS_MASK_MOD || e.full));
        if (e.check)
            fa4_sm90_mask_bits<kN / 8>(e.bits, p, aux, b, h, row0, e.n0 + 2 * (lane & 3), len_q, e.lim_k,
                                       e.full);
#if FA4_SM90_RELT
        e.rfold = fa4_sm90_rel_fill(relt(), cw, p, aux, b, h, row0 - (lane >> 2) - 16 * ((threadIdx.x >> 5) & 3), e.n0, &e.rc0, e.rn0, e.rcarry, FA4_SM90_RB_ARG, len_q, len_k);
#endif
#endif
    }

    /* Scores of tile j and the online softmax; sc becomes P. Returns whether O needs corr. */
    __device__ __forceinline__ bool softmax(float (&sc)[kN / 8][4], int j, const fa4_sm90_early &e,
                                            float (&m)[2], float (&l)[2], float (&corr)[2],
                                            fa4_sm90_affw<kN / 8> &aw) const
    {
#if !FA4_HAS_SCORE_MOD
        /* without a score_mod the scores stay q.k and k2 = |scale| LOG2E (fwd.cu): the row max
         * of scale q.k is |scale| times that of -q.k for a negative scale, so those scores are
         * negated here, before any mask writes -inf (a warp-uniform branch, never taken for the
         * default scale) */
        if (p.scale < 0.f) {
#pragma unroll
            for (int ni = 0; ni < kN / 8; ++ni)
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    sc[ni][e] = -sc[ni][e];
        }
#endif
#if FA4_SM90_MASK_EARLY
        const int col0 = e.n0 + 2 * (lane & 3);
#if FA4_SM90_RFOLD
        if (e.rfold) /* the table is one value (scale > 0: the fill's check), folded */
            fa4_sm90_fold_c0(aw, p.scale, e.rc0);
        else
#elif FA4_SM90_RBOUND
        if (e.rfold) /* one g over the tile (the bounds): the table path's expression without the table */
            fa4_sm90_add_c0<kN / 8>(sc, p.scale, e.rc0);
        else
#endif
        fa4_sm90_scores<kN / 8, true, false>(sc, p, aux, b, h, row0, col0, len_q, e.lim_k, e.full, aw, relt());
        if (e.check)
            fa4_sm90_apply_mask<kN / 8>(sc, e.bits);
#else
        bool full;
        const int n0 = tiles.start(j, &full);
        const int lim_k = min(len_k, n0 + FA4_TILES_SPAN(tiles));
        const bool mask_free = q_inside && n0 + kN <= lim_k && (!FA4_HAS_MASK_MOD || full);
        const int col0 = n0 + 2 * (lane & 3);
#if FA4_HAS_SCORE_MOD && !FA4_CHECKED
        /* score_mod on the whole fragment, then the mask where needed: one inlined copy of score_mod
         * per call instead of one in each branch (half the code, and compile time, of a score_mod) */
#if FA4_SM90_RFOLD
        if (e.rfold) /* the table is one value (scale > 0: the fill's check), folded */
            fa4_sm90_fold_c0(aw, p.scale, e.rc0);
        else
#elif FA4_SM90_RBOUND
        if (e.rfold) /* one g over the tile (the bounds): the table path's expression without the table */
            fa4_sm90_add_c0<kN / 8>(sc, p.scale, e.rc0);
        else
#endif
        fa4_sm90_scores<kN / 8, true, false>(sc, p, aux, b, h, row0, col0, len_q, lim_k, full, aw, relt());
        if (!mask_free) {
            if (FA4_SM90_MASK_SPLIT_ON && full)
                fa4_sm90_scores<kN / 8, false, true, true>(sc, p, aux, b, h, row0, col0, len_q, lim_k, full, aw, relt());
            else
                fa4_sm90_scores<kN / 8, false, true>(sc, p, aux, b, h, row0, col0, len_q, lim_k, full, aw, relt());
        }
#else
        if (mask_free)
            fa4_sm90_scores<kN / 8, true, false>(sc, p, aux, b, h, row0, col0, len_q, lim_k, full, aw, relt());
        else if (FA4_SM90_MASK_SPLIT_ON && full)
            fa4_sm90_scores<kN / 8, true, true, true>(sc, p, aux, b, h, row0, col0, len_q, lim_k, full, aw, relt());
        else
            fa4_sm90_scores<kN / 8, true, true>(sc, p, aux, b, h, row0, col0, len_q, lim_k, full, aw, relt());
#endif
#endif
        return fa4_sm90_softmax<kN / 8>(sc, m, l, corr, k2, aw);
    }

    static __device__ __forceinline__ void rescale(float (&o)[kDvp / 8][4], float (&la)[1][4], const float (&corr)[2])
    {
#if FA4_SM90_ROWSUM_MMA
        la[0][0] *= corr[0]; /* [1] and [3] repeat [0] and [2]: never read */
        la[0][2] *= corr[1];
#else
        (void)la;
#endif
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

#if FA4_SM90_ROWSUM_MMA
#define FA4_LA_FENCE() fa4_reg_fence(la)
#else
#define FA4_LA_FENCE() ((void)0)
#endif
    /* One tile: it0 = ring iterations before it (stage and phase of key tile j follow from it0 + j).
     * between() runs once the last P V is issued, before its wait (fwd.cu's next-tile fetch,
     * FA4_SM90_FWD_NEXT_EARLY); without the overlap after the last wait. */
    template <class Between>
    __device__ __forceinline__ void run(float (&o)[kDvp / 8][4], float (&m)[2], float (&l)[2], int it0,
                                        fa4_sm90_pingpong &pp, const Between &between) const
    {
#if FA4_SM90_STASH_UNIFORM
        /* it0 comes back from the stash (a shared load): broadcast, so that the stages and their
         * descriptors are warp-uniform values */
        it0 = fa4_warp_uniform(it0);
#endif
        const int n_tiles = tiles.count;
        float sc[kN / 8][4];
        unsigned pa[kN / 16][4];
        float corr[2];
        fa4_sm90_early e;
#if FA4_SM90_RREUSE
        e.rn0 = kRelNone;
        e.rcarry = 0.f;
#endif
        fa4_sm90_affw<kN / 8> aw;
        fa4_sm90_affw_init<kN / 8>(aw, p, aux, b, h, row0, len_k);
        /* the row sums' accumulator (FA4_SM90_ROWSUM_MMA): column 2t of rows row0, row0 + 8 */
        float la[1][4] = {{l[0], l[0], l[1], l[1]}};
#define FA4_STAGE(j) ((it0 + (j)) % kStages)
#define FA4_PHASE(j) ((unsigned)((it0 + (j)) / kStages) & 1u)
#if !FA4_SM90_OVERLAP
        for (int j = 0; j < n_tiles; ++j) {
            const int s = FA4_STAGE(j);
            fa4_mbar_wait(bars.k(s), FA4_PHASE(j));
            pp.acquire();
            fa4_wgmma_fence();
            issue_qk(sc, s);
            fa4_wgmma_commit();
            pp.release();
            early(e, j);
            fa4_wgmma_wait<0>();
            fa4_reg_fence(sc);
            release(bars.ek(s));
            if (j == n_tiles - 1)
                release(bars.eq());
            if (softmax(sc, j, e, m, l, corr, aw))
                rescale(o, la, corr);
            pack(pa, sc);
            fa4_mbar_wait(bars.v(s), FA4_PHASE(j));
            fa4_reg_fence(o);
            FA4_LA_FENCE();
            fa4_reg_fence_u(pa);
            fa4_wgmma_fence();
            issue_pv(o, la, pa, s);
            fa4_wgmma_commit();
            fa4_wgmma_wait<0>();
            fa4_reg_fence(o);
            FA4_LA_FENCE();
            fa4_reg_fence_u(pa);
            release(bars.ev(s));
        }
        between();
#elif !FA4_SM90_FWD_ONE_SOFTMAX
        /* key tile 0: S(0) and its softmax, then the loop; softmax is compiled twice */
        fa4_mbar_wait(bars.k(FA4_STAGE(0)), FA4_PHASE(0));
        pp.acquire();
        fa4_wgmma_fence();
        issue_qk(sc, FA4_STAGE(0));
        fa4_wgmma_commit();
        pp.release();
        early(e, 0);
        fa4_wgmma_wait<0>();
        fa4_reg_fence(sc);
        release(bars.ek(FA4_STAGE(0)));
        if (n_tiles == 1)
            release(bars.eq());
        softmax(sc, 0, e, m, l, corr, aw); /* O is still zero: nothing to rescale */
        pack(pa, sc);
        for (int j = 1; j < n_tiles; ++j) {
            const int s = FA4_STAGE(j), sp = FA4_STAGE(j - 1);
            fa4_mbar_wait(bars.k(s), FA4_PHASE(j));
            /* V(j-1) arrived long ago; waiting here keeps branches out from between the two issues
             * (ptxas would otherwise insert a warpgroup fence before the RS-wgmma, C7519) */
            fa4_mbar_wait(bars.v(sp), FA4_PHASE(j - 1));
            pp.acquire();
            fa4_reg_fence(o);
            FA4_LA_FENCE();
            fa4_reg_fence_u(pa);
            fa4_wgmma_fence();
            issue_qk(sc, s);
            fa4_wgmma_commit();
#if FA4_SM90_RESCALE_LATE
            rescale(o, la, corr); /* tile j - 1's */
            fa4_reg_fence(o);
            FA4_LA_FENCE();
            fa4_wgmma_fence();
#endif
            issue_pv(o, la, pa, sp);
            fa4_wgmma_commit();
            pp.release();
            early(e, j);
#if FA4_SM90_JOINT_WAIT
            fa4_wgmma_wait<0>();
            fa4_reg_fence(o);
            FA4_LA_FENCE();
            fa4_reg_fence_u(pa);
#else
            fa4_wgmma_wait<1>();
#endif
            fa4_reg_fence(sc);
            release(bars.ek(s));
            if (j == n_tiles - 1)
                release(bars.eq());
            const bool need = softmax(sc, j, e, m, l, corr, aw);
            fa4_wgmma_wait<0>();
            fa4_reg_fence(o);
            FA4_LA_FENCE();
            fa4_reg_fence_u(pa);
            release(bars.ev(sp));
#if !FA4_SM90_RESCALE_LATE
            if (need)
                rescale(o, la, corr);
#else
            (void)need; /* corr is 1 where no rescale is needed */
#endif
            pack(pa, sc);
        }
#else
        /* key tile 0's S is issued (and waited for) here; the loop's body ends with the issue of
         * S(j + 1) and P(j) V(j), so softmax (and the mods inlined in it) is compiled once, not once
         * for tile 0 and once for the loop (issue 8: half the mods' code and compile time). The
         * early mask runs beside each S on the tensor cores (tile 0's too, so a gathering
         * mask_mod is inlined twice: keeping it once, at the loop's top, cost document 3.8%). */
        fa4_mbar_wait(bars.k(FA4_STAGE(0)), FA4_PHASE(0));
        pp.acquire();
        fa4_wgmma_fence();
        issue_qk(sc, FA4_STAGE(0));
        fa4_wgmma_commit();
        pp.release();
        early(e, 0);
        fa4_wgmma_wait<0>();
        for (int j = 0;;) {
            const int s = FA4_STAGE(j), sp = FA4_STAGE(j - 1);
            fa4_wgmma_wait<1>(); /* S(j); tile 0: nothing in flight */
            fa4_reg_fence(sc);
            release(bars.ek(s));
            if (j == n_tiles - 1)
                release(bars.eq());
            const bool need = softmax(sc, j, e, m, l, corr, aw);
            /* ptxas schedules this wait (WARPGROUP.DEPBAR) near the softmax's start, so the softmax
             * of S(j) runs after P(j-1) V(j-1), not beside it; forcing the overlap (a shared store
             * of l here, which the wait stays behind) measured 3-5% slower on causal, D 64, GQA,
             * rel. bias and prefix-LM (H200 2026-12-01, notes/issue8-fwd-overlap.md). */
            fa4_wgmma_wait<0>();
            fa4_reg_fence(o);
            FA4_LA_FENCE();
            fa4_reg_fence_u(pa);
            if (j > 0)
                release(bars.ev(sp));
#if !FA4_SM90_RESCALE_LATE
            if (j > 0 && need) /* tile 0: O is still zero, nothing to rescale */
                rescale(o, la, corr);
#else
            (void)need; /* corr is 1 where no rescale is needed */
#endif
            pack(pa, sc);
            if (++j == n_tiles)
                break;
            const int sn = FA4_STAGE(j);
            fa4_mbar_wait(bars.k(sn), FA4_PHASE(j));
            /* V(j-1) arrived long ago; waiting here keeps branches out from between the two issues
             * (ptxas would otherwise insert a warpgroup fence before the RS-wgmma, C7519) */
            fa4_mbar_wait(bars.v(s), FA4_PHASE(j - 1));
            pp.acquire();
            fa4_reg_fence(o);
            FA4_LA_FENCE();
            fa4_reg_fence_u(pa);
            fa4_wgmma_fence();
            issue_qk(sc, sn);
            fa4_wgmma_commit();
#if FA4_SM90_RESCALE_LATE
            rescale(o, la, corr); /* tile j - 1's */
            fa4_reg_fence(o);
            FA4_LA_FENCE();
            fa4_wgmma_fence();
#endif
            issue_pv(o, la, pa, s);
            fa4_wgmma_commit();
            pp.release();
            early(e, j);
        }
#endif
#if FA4_SM90_OVERLAP
        const int sl = FA4_STAGE(n_tiles - 1);
        fa4_mbar_wait(bars.v(sl), FA4_PHASE(n_tiles - 1));
#if FA4_SM90_RESCALE_LATE
        rescale(o, la, corr); /* the last tile's */
#endif
        fa4_reg_fence(o);
        FA4_LA_FENCE();
        fa4_reg_fence_u(pa);
        fa4_wgmma_fence();
        issue_pv(o, la, pa, sl);
        fa4_wgmma_commit();
        between();
        fa4_wgmma_wait<0>();
        fa4_reg_fence(o);
        FA4_LA_FENCE();
        fa4_reg_fence_u(pa);
        release(bars.ev(sl));
#endif
#if FA4_SM90_ROWSUM_MMA
        l[0] = la[0][0];
        l[1] = la[0][2];
#endif
#undef FA4_STAGE
#undef FA4_PHASE
#undef FA4_LA_FENCE
    }
};

#endif /* FA4_SM90_MAINLOOP_CUH */
