/*
 * softmax.cuh - the softmax stage of the sm90 forward, on a consumer warp's 16 x kN slice of the S
 * accumulator (the wgmma layout equals mma.sync's: chunk c holds rows g, g+8 and columns 8c+2t,
 * 8c+2t+1 of each thread, g = lane/4, t = lane%4).
 *
 * Units: scores are kept as x = score_mod(scale * q.k) when there is a score_mod, else as the raw
 * q.k, and k2 (LOG2E, or |scale| * LOG2E: a negative scale negates q.k, mainloop.cuh) turns them into log2 units, so a mod-free kernel never
 * multiplies by the scale separately. Row maxima m are kept in log2 units.
 *
 * Knobs (JIT defines): FA4_RESCALE_THRESHOLD > 0 keeps the old row max (and skips the O rescale)
 * unless some row of the warp grows by more than the threshold (a warp-uniform vote; P may then
 * reach 2^threshold, harmless in fp32 and 16-bit). FA4_SW_EXP2_PERCENT computes that share of the
 * exponentials (whole column chunks) on the FMA pipe: Cody-Waite split into integer and fraction,
 * a degree-3 polynomial for 2^f on [0, 1) (coefficients from the seeds, seeds/002 §3), the integer
 * added into the exponent bits.
 */
#ifndef FA4_SM90_SOFTMAX_CUH
#define FA4_SM90_SOFTMAX_CUH

/* FA4_SM90_AFFINE 0 keeps score_mod's own form where it has an affine one (for A/B runs) */
#ifndef FA4_SM90_AFFINE
#define FA4_SM90_AFFINE 1
#endif
/* FA4_SM90_AFFINE_FOLD 1: the affine form asked once per work item, in one FMA a score. Over the
 * warp's 16 rows and all the sequence's keys the mod is ds * s + c + dq (q - q_lo) + dk (kv - k_lo)
 * (one box: every tile's box lies inside it, so the form holds there with the same ds, dq, dk);
 * of the bias, the part dk (8 ni + e) that differs between a lane's columns is the same in every
 * key tile, so it is made once (fa4_sm90_affw, 32 registers), and the rest is one number per row
 * and tile (roff), which the softmax adds to the row max and folds into its exponent's FMA.
 * 0: the mod as written. (The first form, asked per tile with two FMAs a score, measured 1-2%
 * slower than the mod as written on the H200: ALiBi fwd 559-567 against 571-572 TFLOP/s, B4
 * H16 S4096 D128 bf16, 2026-12-03; the per-tile ask costs about what the FMAs save.) */
#ifndef FA4_SM90_AFFINE_FOLD
#define FA4_SM90_AFFINE_FOLD 1
#endif
/* FA4_SM90_AFFINE_KFOLD (config.cuh, default 1): the folded form's ks in the softmax (fa4_sm90_affw) */
/* FA4_SM90_REL (default in config.cuh, with the table's bytes): where score_mod is score +
 * g(kv_idx - q_idx) (FA4_SCORE_MOD_REL, emit_rel.c), 2: g read from a table filled once per key
 * tile (fa4_sm90_rel_fill); 1: g evaluated at 34 of a fragment's 64 positions (fa4_sm90_scores);
 * 0: the mod at every position (for A/B runs). The affine and tile forms come first where they
 * apply. Neither 1 nor 2 with three consumer warpgroups (their 160 registers: alibi's D 64 build
 * then no longer fit and fell back to two, ctest sm90_fwd64_consumers3). */
#ifndef FA4_SCORE_MOD_REL
#define FA4_SCORE_MOD_REL 0
#endif
#if FA4_HAS_SCORE_MOD && FA4_SCORE_MOD_AFFINE && FA4_SM90_AFFINE && FA4_SM90_AFFINE_FOLD && FA4_SM90_CONSUMERS != 3
/* (not with three consumer warpgroups: their 160 registers have no room for the 32) */
#define FA4_SM90_AFFW 1
#else
#define FA4_SM90_AFFW 0
#endif

/* FA4_SM90_TILE_FOLD 1 (session 24; default since session 25): where the tile form is score +
 * c0 (FA4_SCORE_MOD_TILE_ADD: rel_bias away from the diagonal), a tile that takes it keeps its
 * scores as q.k and hands c0 and the scale to the softmax (roff, kmul, as the folded affine form
 * does), instead of an FMA a score: nvdisasm shows the 64 FFMAs of such a tile gone. 0: the FMA.
 * H100 2026-12-06 (B8 H16 S4096 D128 bf16 fwd TFLOP/s, two rounds, same call): trainable rel.
 * bias 562.8 -> 580.2 (+3.1%), plain 684.0 / 683.5; the suite's relbias cases 26 / 26
 * (bench/results/2026-12-06-h100-s25-tilefold.md). */
#ifndef FA4_SM90_TILE_FOLD
#define FA4_SM90_TILE_FOLD 1
#endif
#if FA4_SM90_TILE_FOLD && !FA4_SM90_AFFW && FA4_HAS_SCORE_MOD && FA4_SM90_FWD_TILE && defined(FA4_SCORE_MOD_TILE_ADD) && \
    FA4_SCORE_MOD_TILE_ADD && FA4_SM90_CONSUMERS != 3
#define FA4_SM90_TFOLD 1
#else
#define FA4_SM90_TFOLD 0
#endif
/* FA4_SM90_RELT_FOLD 1 (session 25, opt-in; H100 2026-12-06, B8 H16 S4096 D128 bf16, with the two
 * knobs below, two rounds: trainable T5's forward 545.0 -> 539.0 TFLOP/s, so it stays off; suite's t5
 * cases pass with it): where the relative form's table serves (FA4_SM90_RELT:
 * t5_bias), a key tile whose table entries are all one value c0 (g constant over the tile's kv - q
 * offsets: t5's saturated buckets away from the diagonal) hands c0 and the scale to the softmax as
 * the folded tile form does, instead of a table read and an add a score. The check rides on the
 * fill: each thread compares its entries with entry 0 after the fill's barrier, and a second
 * barrier of the warpgroup ands the answers (bar.red.and). 0: the table at every tile. */
#ifndef FA4_SM90_RELT_FOLD
#define FA4_SM90_RELT_FOLD 0
#endif
/* FA4_SM90_RELT_REUSE 1 (session 27; opt-in: H100 2026-12-07, trainable T5 fwd alone 539.7 -> 513.0
 * TFLOP/s, -5%; beside RELT_BOUNDS, which leaves the table to 3 of 32 key tiles, 575.4 -> 579.0,
 * within the rounds' spread): where the relative form's table serves (t5_bias), the fill
 * of key tile n0 + kN after that of n0 copies the 63 entries the two tables share (the offsets
 * kv - q of the last table's keys past kN - 63) instead of evaluating them again, so each of the
 * warpgroup's 128 threads evaluates g once per tile instead of twice for the threads below 63
 * (whom the fill's barrier waited for: t5_bias's g is about 80 instructions with a logf and a
 * global read). Two registers carried across the loop (the last table's n0, one entry). 0: every
 * entry evaluated at every tile. Not with FA4_SM90_RELT_FOLD (its check reads the evaluated
 * entries). */
#ifndef FA4_SM90_RELT_REUSE
#define FA4_SM90_RELT_REUSE 0
#endif
/* (FA4_SM90_RELT_BOUNDS, described below, defined here: RELT_BFOLD's condition reads it) */
#ifndef FA4_SM90_RELT_BOUNDS
#define FA4_SM90_RELT_BOUNDS 1
#endif
/* FA4_SM90_RELT_BFOLD 1 (session 28, opt-in; session 29 measured it even with the default, 572.4
 * against 573.8 trainable T5 fwd, before RB_UNIFORM and before its own box test was made uniform in
 * session 36; measured again after both, H100 2026-12-08, B8 H16 S4096 D128 bf16, fixed T5 fwd,
 * median of 2 rounds: 610.2 default -> 600.2, plain 687.2 / 688.0, so it stays off although its
 * region loop is 917 instructions against 954; bench/results/2026-12-08-h100-s37-ab-bfold.md):
 * RELT_BOUNDS's region tiles folded into
 * the softmax (kmul, roff) instead of an FFMA a score, bit-equal across the two schedules because
 * both take RELT_FOLD's check as well: the static schedule (no bounds) folds a tile whose table is
 * one value; the dynamic one folds a region tile whose 64 rows and kN keys all lie inside the
 * sequence (then every offset of its box is a real one, so its table would be that one value and
 * the static schedule folds it with the same c) without filling, and fills and checks every other
 * tile as the static schedule does. Scale > 0 only (no region test otherwise: the table path). The
 * cost: RELT_FOLD's check (a second warpgroup barrier) on every filled tile. */
#ifndef FA4_SM90_RELT_BFOLD
#define FA4_SM90_RELT_BFOLD 0
#endif
#if (FA4_SM90_RELT_FOLD || (FA4_SM90_RELT_BFOLD && FA4_SM90_RELT_BOUNDS)) && FA4_SM90_RELT && !FA4_SM90_AFFW && \
    !FA4_SM90_TFOLD && FA4_HAS_SCORE_MOD
#define FA4_SM90_RFOLD 1
#else
#define FA4_SM90_RFOLD 0
#endif
#if FA4_SM90_RELT_REUSE && FA4_SM90_RELT && !FA4_SM90_RFOLD
#define FA4_SM90_RREUSE 1
#else
#define FA4_SM90_RREUSE 0
#endif
/* FA4_SM90_RELT_BOUNDS 1 (session 28, default; H100 2026-12-07, B8 H16 S4096 D128 bf16 fwd TFLOP/s,
 * medians of 5 rounds over two calls: trainable T5 539.7 -> 575.4 (+6.6%), with RELT_REUSE too
 * 579.0, plain 690.3 / 688.8; the suite's t5 cases 19 / 19 either way, with the static / dynamic
 * schedules bit-equal; bench/results/2026-12-07-h100-s28-t5bounds.md): where the relative form's table
 * serves (t5_bias), the offsets kv - q beyond which g is one value are found once per call and
 * (batch, head) by fa4_sm90_rel_bounds (fwd.cu, launched by the host before the forward where
 * there is a workspace): below the first offset whose g differs from g at the smallest offset of
 * the sequence, g is that value (c_lo), and above the last offset whose g differs from g at the
 * largest, c_hi, bit for bit (g reads the positions only as their difference, emit_rel.c). A key
 * tile whose offsets over the warpgroup's 64 rows all lie in one of the two regions takes that
 * value at every score (score * scale + c, the table path's own expression, so the same bits) with
 * no fill, no barrier and no table reads: two compares and one 16-byte L1 read a tile, where the
 * fill evaluates g once or twice per thread (about 80 instructions each) and waits at the
 * warpgroup's barrier. Not folded into the softmax as FA4_SM90_RELT_FOLD's tiles are: the static
 * schedule (no workspace, so no bounds) must give the same bits as the dynamic one (tests/gpu's
 * case.c compares them). T5 at max distance 128 saturates beyond about 91 positions: at S 4096
 * 3 of a row block's 32 key tiles keep the table. 0: the table at every tile. Not with
 * FA4_SM90_RELT_FOLD alone (FA4_SM90_RELT_BFOLD below combines the two). */
#if FA4_SM90_RELT_BOUNDS && FA4_SM90_RELT && !FA4_SM90_AFFW && !FA4_SM90_TFOLD && \
    (!FA4_SM90_RFOLD || FA4_SM90_RELT_BFOLD) && FA4_HAS_SCORE_MOD
#define FA4_SM90_RBOUND 1
#else
#define FA4_SM90_RBOUND 0
#endif
/* RELT_BFOLD: the bounds' region tiles folded (RFOLD's consumption), see above */
#define FA4_SM90_RBFOLD (FA4_SM90_RBOUND && FA4_SM90_RFOLD)
/* FA4_SM90_RELT_GARR 1 (session 28, opt-in): the bounds kernel (then named
 * fa4_sm90_rel_bounds_g, which tells the host) also writes g at every offset a tile's table can
 * hold, [omin - 127, omax + kN - 1] per (batch, head), to the workspace after the bounds (whose
 * records grow to 8 words: word 4 is 1 where that array is valid, word 5 its first offset), and
 * the fill of a tile outside the regions copies its kN + 63 entries from there (coalesced L2
 * reads) instead of evaluating g: the same bits, so the static schedule's tables are the same,
 * and a fill whose cost does not depend on the mod. Not with RELT_FOLD / RELT_BFOLD or
 * RELT_REUSE. FA4_SM90_RELT_GARR 2 (session 29; the default in sessions 30-33): each warp copies
 * the entries its own rows read (kN + 15) and waits for itself only, no warpgroup barrier. H100, B8
 * H16 S4096 D128 bf16, trainable T5 forward TFLOP/s, median of 2 rounds, default (0) / 1 / 2:
 * session 29 573.8 / 577.2 / 578.3; session 30 (with RB_UNIFORM) 605.1 / - / 614.4, plain and
 * ALiBi even (bench/results/2026-12-07-h100-s29-t5knobs.md, -s30-uniform.md); the t5 cases 19 / 19
 * with 2 in both sessions. **1 is the default since session 34**: with 2, two warps whose spans
 * overlap store the same bits into the shared entries while either may already read them, a data
 * race by the memory model however benign on the hardware; compute-sanitizer racecheck reported
 * it (23 and 13 hazards on the suite's first relbias and t5_train cases), and with 1 only the 3
 * of the tile hand-off slot remain, which racecheck reports for any mbarrier-ordered hand-off
 * (notes/racecheck-mbarrier-probe.cu). Its cost, H100 2026-12-07, B8 H16 S4096 D128 bf16, forward
 * TFLOP/s, median of 2 rounds, 2 -> 1: trainable T5 619.7 -> 615.0, fixed T5 618.4 -> 615.2
 * (bench/results/2026-12-07-h100-s34-garr1.md). */
#ifndef FA4_SM90_RELT_GARR
#define FA4_SM90_RELT_GARR 1
#endif
#if FA4_SM90_RELT_GARR && FA4_SM90_RBOUND && !FA4_SM90_RFOLD
#define FA4_SM90_RGARR 1
#undef FA4_SM90_RREUSE
#define FA4_SM90_RREUSE 0
#else
#define FA4_SM90_RGARR 0
#endif
/* words a (batch, head) record of the bounds takes, and the offsets past each end of the
 * sequence's real ones that the g array holds (rows: a warpgroup's 64 past the last tile's first
 * row; keys: one key tile) */
#define FA4_SM90_RB_WORDS (FA4_SM90_RGARR ? 8 : 4)
#define FA4_SM90_RG_LO 127
#define FA4_SM90_RG_HI (kN - 1)
/* FA4_SM90_RB_UNIFORM 1 (session 29, default): the relative form's per-tile answers that
 * come from global or barrier-reduced values (the bounds' region test, the g array's validity,
 * RELT_FOLD's and-reduction), the same in every lane by construction, broadcast from lane 0 by
 * fa4_sm90_rb_same: ptxas cannot tell that such a value is, a branch on it made the loop's control
 * flow divergent in its eyes, and the wgmma descriptors left the uniform registers (t5_bias D 128:
 * 59 -> 133 R2UR with RELT_BOUNDS; 55 with this). 0: no broadcast. H100 2026-12-07, B8 H16 S4096
 * D128 bf16, trainable T5 forward 577.0 (without) -> 605.1 TFLOP/s, ALiBi and plain even
 * (bench/results/2026-12-07-h100-s30-uniform.md). */
#ifndef FA4_SM90_RB_UNIFORM
#define FA4_SM90_RB_UNIFORM 1
#endif
__device__ __forceinline__ unsigned fa4_sm90_rb_same(unsigned x) { return FA4_SM90_RB_UNIFORM ? fa4_warp_uniform(x) : x; }
#if FA4_SM90_RGARR
/* (batch, head) hb's array of g (after the records, rounded up to 256 bytes; *stride floats each,
 * path_sm90.c's fwd_garr_stride), for the bounds kernel that writes it and the fill that reads it */
__device__ __forceinline__ float *fa4_sm90_garr(const int *rb, const fa4_params &p, long long hb, long long *stride)
{
    *stride = (long long)p.seqlen_q + p.seqlen_k + FA4_SM90_RG_LO + FA4_SM90_RG_HI;
    return (float *)(rb + ((FA4_SM90_RB_WORDS * (long long)p.batch * p.hq + 63) & ~63LL)) + hb * *stride;
}
#endif
/* a fragment's values in the softmax are kmul s + roff[row] (fa4_sm90_affw) */
#define FA4_SM90_ROWFOLD (FA4_SM90_AFFW || FA4_SM90_TFOLD || FA4_SM90_RFOLD)
/* FA4_SM90_FWD_TILE_RUN K (session 25; default 8 since session 26: H100 2026-12-06, B8 H16 S4096
 * D128 bf16, two rounds, trainable rel. bias forward 577.9 -> 605.0 TFLOP/s, plain 686.2 / 686.1;
 * 0: off): the folded tile form's test per warp (no relative
 * table: rel_bias) asked over the box of the next K key tiles where it can, so that the tiles of
 * such a run take the form without asking again (fa4_sm90_trun_test): one test per run instead
 * of one a tile away from the diagonal. */
#ifndef FA4_SM90_FWD_TILE_RUN
#define FA4_SM90_FWD_TILE_RUN 8
#endif
/* (not at padded Dv 256, FA4_SM90_WIDE_O: the run's registers and the relative form's (below)
 * made rel_bias's D 256 forward spill 60 bytes at level 0 and 52 at levels 1 and 2, so it ran
 * the non-overlapped level 3; without both its level 0 is clean, NVRTC 13, bf16) */
#if FA4_SM90_TFOLD && !FA4_SM90_RELT && FA4_SM90_FWD_TILE_RUN > 0 && !FA4_SM90_WIDE_O
#define FA4_SM90_TRUN 1
#else
#define FA4_SM90_TRUN 0
#endif

template <int NT>
struct fa4_sm90_affw {
#if FA4_SM90_AFFW
    bool ok;        /* the form holds over the work item's rows of this warp and every key */
    float ks, c, dq, dk; /* ds * scale; c at (the warp's first row, key 0) */
    float kmul;     /* the factor on a fragment's values in the softmax: ks where ok (KFOLD), else 1 */
#if FA4_SM90_AFFINE_KFOLD
    float dkk;      /* dk / ks: a score's value is s + dkk (8 ni + e), times ks in the softmax */
#else
    float w[NT][2]; /* dk * (8 ni + e) */
#endif
    float roff[2];  /* this tile's rest per row (natural units); 0 where the form was not taken */
#elif FA4_SM90_TFOLD || FA4_SM90_RFOLD
    float kmul;    /* p.scale where this tile took the tile-add form (its scores stay q.k), else 1 */
    float roff[2]; /* that form's c0 there (natural units), else 0 */
#if FA4_SM90_TRUN
    /* the run (FA4_SM90_TRUN, over the work item): key tiles [rlo, rhi] (n0 in the sequence) over
     * which the form holds for the warp's 16 rows, with c0 = rc0; rtry: a miss asks a run first
     * (cleared by a run that failed, set again once a tile has failed and a later one held: past
     * the diagonal band); rearm: a tile failed */
    int rlo, rhi;
    float rc0;
    bool rtry, rearm;
#endif
#else
    int unused;
#endif
};

/* Once per work item: the affine form over the warp's rows and keys [0, len_k) */
template <int NT>
__device__ __forceinline__ void fa4_sm90_affw_init(fa4_sm90_affw<NT> &aw, const fa4_params &p, const fa4_aux &aux,
                                                   int b, int h, int row0, int len_k)
{
#if FA4_SM90_AFFW
    const long long q_lo = (long long)row0 - ((threadIdx.x & 31) >> 2) + p.q_offset, k_lo = p.kv_offset;
    const long long k_hi = k_lo + (len_k > 0 ? len_k - 1 : 0);
    fa4_score_aff af;
    aw.ok = q_lo >= -2147483647LL - 1 && q_lo + 15 <= 2147483647LL && k_lo >= -2147483647LL - 1 &&
            k_hi <= 2147483647LL && len_k < (1 << 24) &&
            fa4_score_mod_affine(b, h, (int)q_lo, (int)(q_lo + 15), (int)k_lo, (int)k_hi, aux, af);
    aw.ks = af.ds * p.scale;
    aw.c = af.c;
    aw.dq = af.dq;
    aw.dk = af.dk;
#if FA4_SM90_AFFINE_KFOLD
    /* ks > 0 (the row max of ks x is ks times that of x) and dk / ks a float; else the mod as written */
    aw.dkk = aw.dk / aw.ks;
    aw.ok = aw.ok && aw.ks > 0.f && fabsf(aw.dkk) <= 3.0e38f;
    aw.kmul = aw.ok ? aw.ks : 1.f;
#else
    aw.kmul = 1.f;
#pragma unroll
    for (int ni = 0; ni < NT; ++ni) {
        aw.w[ni][0] = af.dk * (float)(8 * ni);
        aw.w[ni][1] = af.dk * (float)(8 * ni + 1);
    }
#endif
    aw.roff[0] = aw.roff[1] = 0.f;
#elif FA4_SM90_TFOLD || FA4_SM90_RFOLD
    (void)p, (void)aux, (void)b, (void)h, (void)row0, (void)len_k;
    aw.kmul = 1.f;
    aw.roff[0] = aw.roff[1] = 0.f;
#if FA4_SM90_TRUN
    aw.rlo = 1;
    aw.rhi = 0; /* empty */
    aw.rc0 = 0.f;
    aw.rtry = true;
    aw.rearm = false;
#endif
#else
    (void)aw, (void)p, (void)aux, (void)b, (void)h, (void)row0, (void)len_k;
#endif
}

#if FA4_HAS_SCORE_MOD && FA4_SM90_FWD_TILE
/* Whether score_mod's index-dependent parts are one value over rows [q_lo, q_hi] and keys [k_lo,
 * k_hi] (with the offsets), and those parts in t (emit_tile.c) */
__device__ __forceinline__ bool fa4_sm90_tile_box(int b, int h, long long q_lo, long long q_hi, long long k_lo,
                                                  long long k_hi, const fa4_aux &aux, fa4_score_tile &t)
{
    return q_lo >= -2147483647LL - 1 && q_hi <= 2147483647LL && k_lo >= -2147483647LL - 1 && k_hi <= 2147483647LL &&
           fa4_score_mod_tile(b, h, (int)q_lo, (int)q_hi, (int)k_lo, (int)k_hi, aux, t);
}
#endif

#if FA4_SM90_TFOLD || FA4_SM90_RFOLD
/* A tile whose score_mod is score * scale + c0 (the tile-add form, or a one-value relative table),
 * folded: its scores stay q.k and the softmax takes kmul s + roff (scale > 0: the row max's rule) */
template <int NT>
__device__ __forceinline__ void fa4_sm90_fold_c0(fa4_sm90_affw<NT> &aw, float scale, float c0)
{
    aw.kmul = scale;
    aw.roff[0] = aw.roff[1] = c0;
}
#endif

#if FA4_SM90_TRUN
/* Whether key tile n0 (kN8 keys) takes the tile form over the warp's rows [q_lo, q_lo + 15]
 * (offsets included): from the run that holds it, else a run test over the K tiles from n0 (while
 * rtry), else the tile's own test (one inlined copy of the test, a loop of at most two); c0 in
 * aw.rc0. The same for every lane of the warp (one box). */
template <int NT>
__device__ __forceinline__ bool fa4_sm90_trun_test(fa4_sm90_affw<NT> &aw, int b, int h, long long q_lo, int n0,
                                                   long long kv_offset, const fa4_aux &aux)
{
    constexpr int kT = NT * 8, kRun = FA4_SM90_FWD_TILE_RUN * NT * 8;
    if (n0 >= aw.rlo && n0 + kT - 1 <= aw.rhi)
        return true;
    fa4_score_tile t;
    const long long k_lo = n0 + kv_offset;
    bool ok = false;
#pragma unroll 1
    for (int a = aw.rtry ? 0 : 1; a < 2 && !ok; ++a) {
        const int span = a == 0 ? kRun : kT;
        ok = fa4_sm90_tile_box(b, h, q_lo, q_lo + 15, k_lo, k_lo + span - 1, aux, t);
        if (ok) {
            aw.rlo = n0;
            aw.rhi = n0 + span - 1 < n0 ? 2147483647 : n0 + span - 1;
            aw.rc0 = fa4_score_mod_tile_add(t);
            if (a == 1 && aw.rearm) { /* past a band of tiles that failed: runs again */
                aw.rtry = true;
                aw.rearm = false;
            }
        } else if (a == 0)
            aw.rtry = false;
        else
            aw.rearm = true;
    }
    return ok;
}
#endif

#if FA4_SM90_RELT
/* The relative form's table (FA4_SM90_REL 2) of one key tile for one consumer warpgroup: its 64
 * rows and kN keys meet at the offsets kv - q = (n0 - q0 - 63) + i, i in [0, kN + 63), and entry i
 * is g at a real pair of the tile with that offset (q = q0 + max(63 - i, 0), kv = n0 + max(i - 63,
 * 0)), so it is what the mod gives at every position of the tile with that offset, bit for bit
 * (emit_rel.c: g reads the positions only as their int32 difference). Filled by the warpgroup's
 * 128 threads (1.5 evaluations each at kN 128 instead of 34) between the issue of S and its wait
 * (mainloop.cuh's early), then a named barrier of the warpgroup (4 + cw; the ping-pong uses 1 .. 3).
 * The reads of tile j end before the fill of tile j + 1: every warp of the warpgroup passes the
 * ping-pong's barrier before its next S issue, and the fill follows that issue (without the
 * ping-pong, a second barrier before the fill). */
constexpr int kRelEntries = kN + 63;
#define kRelNone (-(1 << 30)) /* fa4_sm90_early's rn0 before any table (a macro: see config.cuh's stash) */
__device__ __forceinline__ float fa4_sm90_rel_get(unsigned a)
{
    float g;
    asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(g) : "r"(a) : "memory");
    return g;
}
#if FA4_SM90_RBOUND
/* FA4_SM90_RELT_BOUNDS: whether the offsets kv - q of rows [q0, q0 + 63] and keys [n0, n0 + kN - 1]
 * (the mod's indices: the offsets added) all lie in one of (b, h)'s regions of one g (rb, written
 * by fa4_sm90_rel_bounds: -(the first offset whose g differs from c_lo), the last offset whose g
 * differs from c_hi, then c_lo and c_hi), and that value in *c0. The same answer in every thread
 * of the warpgroup. */
__device__ __forceinline__ bool fa4_sm90_rel_bound(const int *rb, const fa4_params &p, int b, int h, int q0, int n0,
                                                   float *c0)
{
    int nf, lne, clo, chi;
    asm volatile("ld.global.nc.v4.s32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(nf), "=r"(lne), "=r"(clo), "=r"(chi)
                 : "l"(rb + FA4_SM90_RB_WORDS * ((long long)b * p.hq + h)));
    const long long d = (long long)n0 + p.kv_offset - ((long long)q0 + p.q_offset);
    const bool lo = d + (kN - 1) < -(long long)nf, in = lo || d - 63 > (long long)lne;
    *c0 = __int_as_float(lo ? clo : chi);
    return fa4_sm90_rb_same(in) != 0u;
}

/* A tile of one g (fa4_sm90_rel_bound): score_mod at every score as fa4_sm90_scores's table path
 * forms it (the scaled score plus g, NVRTC contracts the two the same way), with c0 for g */
template <int NT>
__device__ __forceinline__ void fa4_sm90_add_c0(float (&s)[NT][4], float scale, float c0)
{
#pragma unroll
    for (int ni = 0; ni < NT; ++ni)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const float x = s[ni][e] * scale;
            s[ni][e] = x + c0;
        }
}
#endif

/* Returns, with FA4_SM90_RFOLD, whether every entry of the table is one value (then in *c0), and
 * with FA4_SM90_RBOUND whether the tile lies in a region of one g (rb: fa4_sm90_rel_bound; no
 * table filled then), the same answer in every thread of the warpgroup; else false. */
__device__ __forceinline__ bool fa4_sm90_rel_fill(unsigned tab, int cw, const fa4_params &p, const fa4_aux &aux,
                                                  int b, int h, int q0, int n0, float *c0, int &rn0, float &rcarry,
                                                  const int *rb, int len_q, int len_k)
{
    (void)c0, (void)rn0, (void)rcarry, (void)rb, (void)len_q, (void)len_k;
#if FA4_SM90_RBFOLD
    /* folded (RFOLD's consumption): only boxes inside the sequence, and scale > 0, as the check's.
     * The box test is broadcast from lane 0 (RB_UNIFORM's way; q0 is the warpgroup's first row, so
     * the same in every lane): tested per lane, the branch left ptxas's uniform datapath and the
     * region tiles' loop took 48 R2UR against 6 (t5_bias D 128: 953 -> 917 instructions). */
    if (rb && p.scale > 0.f && fa4_sm90_rb_same(q0 + 63 < len_q && n0 + kN <= len_k) &&
        fa4_sm90_rel_bound(rb, p, b, h, q0, n0, c0))
        return true;
#elif FA4_SM90_RBOUND
    if (rb && fa4_sm90_rel_bound(rb, p, b, h, q0, n0, c0)) {
#if FA4_SM90_RREUSE
        rn0 = kRelNone; /* the table in shared memory is not the one before n0's */
#endif
        return true;
    }
#endif
#if FA4_SM90_FWD_TILE
    /* FA4_SM90_RELT_TILE: no table where the tile form holds over the warpgroup's box (the score
     * stage asks the same box; the answer is the same for all 128 threads, barrier included) */
    {
        fa4_score_tile tt;
        if (fa4_sm90_tile_box(b, h, q0 + p.q_offset, q0 + p.q_offset + 63, n0 + p.kv_offset,
                              n0 + p.kv_offset + kN - 1, aux, tt)) {
#if FA4_SM90_RREUSE
            rn0 = kRelNone; /* the table in shared memory is not n0's */
#endif
            return false;
        }
    }
#endif
#if defined(FA4_SM90_PINGPONG) && !FA4_SM90_PINGPONG
    asm volatile("bar.sync %0, 128;\n" ::"r"(4 + cw) : "memory");
#endif
#if FA4_SM90_RGARR
    /* the entries from the bounds kernel's array of g (valid: word 4 is 1; word 5 its first
     * offset; one array of stride seqlen_q + seqlen_k + RG_LO + RG_HI per (batch, head), after the
     * records rounded up to 256 bytes) */
    if (rb) {
        const long long hb = (long long)b * p.hq + h;
        int ok, obase;
        asm volatile("ld.global.nc.v2.s32 {%0, %1}, [%2];\n"
                     : "=r"(ok), "=r"(obase)
                     : "l"(rb + FA4_SM90_RB_WORDS * hb + 4));
        long long stride;
        const float *g = fa4_sm90_garr(rb, p, hb, &stride);
        const long long i0 = (long long)n0 + p.kv_offset - ((long long)q0 + p.q_offset) - 63 - obase;
        if (fa4_sm90_rb_same(ok == 1 && i0 >= 0 && i0 + kRelEntries <= stride)) {
            g += i0;
#if FA4_SM90_RELT_GARR == 2
            /* each warp copies the kN + 15 entries its own reads span (fa4_sm90_scores: 8 ni + 2 t
             * + (e & 1) - 16 w - g - 8 (e >> 1) + 63, so [48 - 16 w, kN + 62 - 16 w]) and syncs
             * only itself: entries two warps share get the same bits from both, and every warp's
             * reads of the last table end before any warp's next fill (the comment above) */
            const int w = (threadIdx.x >> 5) & 3, lo = 48 - 16 * w + (threadIdx.x & 31);
#pragma unroll
            for (int k = 0; k < (kN + 15 + 31) / 32; ++k) {
                const int i = lo + 32 * k;
                if (i <= kN + 62 - 16 * w) {
                    float v;
                    asm volatile("ld.global.nc.f32 %0, [%1];\n" : "=f"(v) : "l"(g + i));
                    asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(tab + 4u * (unsigned)i), "f"(v) : "memory");
                }
            }
            asm volatile("bar.warp.sync -1;\n" ::: "memory");
#else
            const int t = threadIdx.x & 127;
#pragma unroll
            for (int i = t; i < kRelEntries; i += 128) {
                float v;
                asm volatile("ld.global.nc.f32 %0, [%1];\n" : "=f"(v) : "l"(g + i));
                asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(tab + 4u * (unsigned)i), "f"(v) : "memory");
            }
            asm volatile("bar.sync %0, 128;\n" ::"r"(4 + cw) : "memory");
#endif
            return false;
        }
    }
#endif
    /* g's position-independent part made here each tile: hoisted out of the loop (it is the same
     * for every tile) it stayed live through it, and t5_bias's D 256 build spilled 8 / 8 bytes */
    asm volatile("" : "+r"(b), "+r"(h));
    const fa4_score_uniform su = fa4_score_mod_uniform(b, h, aux);
    const int t = threadIdx.x & 127;
#if FA4_SM90_RFOLD
    float gs[(kRelEntries + 127) / 128];
#pragma unroll
    for (int k = 0; k < (kRelEntries + 127) / 128; ++k) {
        const int i = t + 128 * k;
        gs[k] = 0.f;
        if (i < kRelEntries) {
            gs[k] = fa4_score_mod_rel(b, h, (int)(q0 + max(63 - i, 0) + p.q_offset),
                                      (int)(n0 + max(i - 63, 0) + p.kv_offset), aux, su);
            asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(tab + 4u * (unsigned)i), "f"(gs[k]) : "memory");
        }
    }
#else /* (the entry loop as before: the k form above changes t5_bias's default SASS) */
#if FA4_SM90_RREUSE
    if (n0 == rn0 + kN) {
        /* the next key tile of the walk: entries [0, 63) are the last table's [kN, kN + 63), which
         * the threads below 63 took into rcarry after its barrier; each thread evaluates one new
         * entry, 63 + t (q = q0, kv = n0 + t), where the full fill had threads below 63 evaluate
         * two while the barrier waited for them */
        if (t < kRelEntries - kN)
            asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(tab + 4u * (unsigned)t), "f"(rcarry) : "memory");
        const float g = fa4_score_mod_rel(b, h, (int)(q0 + p.q_offset), (int)(n0 + t + p.kv_offset), aux, su);
        asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(tab + 4u * (unsigned)(t + kRelEntries - kN)), "f"(g) : "memory");
    } else
#endif
#pragma unroll
    for (int i = t; i < kRelEntries; i += 128) {
        const float g = fa4_score_mod_rel(b, h, (int)(q0 + max(63 - i, 0) + p.q_offset),
                                          (int)(n0 + max(i - 63, 0) + p.kv_offset), aux, su);
        asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(tab + 4u * (unsigned)i), "f"(g) : "memory");
    }
#endif
    asm volatile("bar.sync %0, 128;\n" ::"r"(4 + cw) : "memory");
#if FA4_SM90_RREUSE
    /* the entries the next key tile's table starts with (read before any thread can write it: the
     * next fill follows every warp's reads of this table, mainloop.cuh) */
    rn0 = n0;
    if (t < kRelEntries - kN)
        rcarry = fa4_sm90_rel_get(tab + 4u * (unsigned)(t + kN));
#endif
#if FA4_SM90_RFOLD
    /* one value over the table: this thread's entries against entry 0 (a NaN is never equal, so
     * such a tile keeps the table), then the warpgroup's and; scale > 0 only (the fold's row max) */
    const float e0 = fa4_sm90_rel_get(tab);
    unsigned same = p.scale > 0.f;
#pragma unroll
    for (int k = 0; k < (kRelEntries + 127) / 128; ++k)
        if (t + 128 * k < kRelEntries)
            same &= (unsigned)(gs[k] == e0);
    unsigned all;
    asm volatile("{\n .reg .pred pi, po;\n setp.ne.u32 pi, %1, 0;\n bar.red.and.pred po, %2, 128, pi;\n"
                 " selp.u32 %0, 1, 0, po;\n}\n"
                 : "=r"(all)
                 : "r"(same), "r"(4 + cw)
                 : "memory");
    *c0 = e0;
    return fa4_sm90_rb_same(all) != 0u;
#else
    return false;
#endif
}
#endif

/* FA4_SM90_MASK_ROLL N (unchecked builds with a mask_mod; not defined by default: slower, H100
 * 2026-12-07, N 4, B8 H16 S4096 D128 bf16 fwd TFLOP/s, two rounds: document 322.2 -> 266.5, sliding
 * window 1024 488.6 -> 435.4, causal 617.2 -> 599.1; its cases pass, 78 / 78;
 * bench/results/2026-12-07-h100-s28-maskroll.md): the mask of a
 * fragment is evaluated as bits (bit 4 * (ni % 8) + e of word ni / 8) in a loop over its positions
 * unrolled N times instead of fully, so mask_mod is inlined N times per call instead of 4 NT = 64:
 * N = 4 takes the sm_90a forward of causal from 3344 SASS instructions to 2712 (plain: 2616),
 * document 5176 -> 3040, dilated_window 9280 -> 4832, block_diagonal 7128 -> 3376, and its cold
 * compile near plain attention's (issue 8). Fewer positions in flight at once on partial tiles:
 * not yet measured on a GPU, hence off. (Its definition went missing in 54412b4 while its uses stayed;
 * restored in session 22, unchanged.) */
#if defined(FA4_SM90_MASK_ROLL) && FA4_HAS_MASK_MOD && !FA4_CHECKED
#define FA4_SM90_MASK_ROLLED 1
template <int NT>
__device__ __forceinline__ void fa4_sm90_mask_rolled(unsigned (&bits)[(NT + 7) / 8], const fa4_params &p,
                                                     const fa4_aux &aux, int b, int h, int row0, int col0,
                                                     int len_q, int len_k, bool full)
{
#pragma unroll
    for (int w = 0; w < (NT + 7) / 8; ++w) {
        unsigned m = 0u;
#pragma unroll FA4_SM90_MASK_ROLL
        for (int c = 0; c < 32 && 8 * w + c / 4 < NT; ++c) {
            const int ni = 8 * w + c / 4, e = c & 3;
            const int qi = row0 + (e >= 2 ? 8 : 0);
            const int ki = col0 + ni * 8 + (e & 1);
            const bool ok = !(qi >= len_q || ki >= len_k) &
                            (full | fa4_mask_mod(b, h, (int)(qi + p.q_offset), (int)(ki + p.kv_offset), aux));
            m |= (unsigned)ok << c;
        }
        bits[w] = m;
    }
}
#else
#define FA4_SM90_MASK_ROLLED 0
#endif

/* FA4_SM90_MASK_FULL_SPLIT (session 23, default 1): a checked tile's scores split by `full` at the
 * caller (mainloop.cuh softmax) instead of `full | mask_mod(...)` at every position; 0: the build
 * before. Measured with TILES_ONE_PER_BLOCK: schedule.cuh. */
#ifndef FA4_SM90_MASK_FULL_SPLIT
/* off at the forward's spill fallback level 1 (FA4_SM90_FWD_FALLBACK, path_sm90.c): the split's
 * second copy made causal_sliding_window's D 128 forward spill 36 bytes until its full copy tested
 * the keys only (level 2 keeps the split and drops the descriptor adds instead: softcap_causal's
 * D 256 forward is clean so, not at 1) */
#if defined(FA4_SM90_FWD_FALLBACK) && FA4_SM90_FWD_FALLBACK == 1
#define FA4_SM90_MASK_FULL_SPLIT 0
#else
#define FA4_SM90_MASK_FULL_SPLIT 1
#endif
#endif
/* where the split applies: a mask_mod, unchecked, not the rolled mask (its loop takes `full`
 * itself; split, it was inlined twice), not three consumers (the extra copy's registers pushed
 * sliding_window's D 64 three-consumer forward over its 128 and back to two consumers) */
#define FA4_SM90_MASK_SPLIT_ON                                                                          \
    (FA4_SM90_MASK_FULL_SPLIT && FA4_HAS_MASK_MOD && !FA4_CHECKED && !FA4_SM90_MASK_ROLLED && FA4_SM90_CONSUMERS != 3)
/* The scores of one S fragment: kMod applies score_mod (to the scaled score), kCheck the sequence
 * bounds and mask_mod (-inf where a pair may not attend). Unchecked builds evaluate mask_mod at
 * every position (aux reads are clamped, integer arithmetic is total) and select, without a branch
 * per position: the mod is inlined at 64 positions per call, and those branches made NVVM and ptxas
 * take about twice as long (issue 8). Checked builds call the mods only inside the sequence and
 * score_mod only where allowed, so that a read out of range there is the user's. */
template <int NT, bool kMod, bool kCheck, bool kFull = false>
__device__ __forceinline__ void fa4_sm90_scores(float (&s)[NT][4], const fa4_params &p,
                                                const fa4_aux &aux, int b, int h, int row0, int col0,
                                                int len_q, int len_k, bool full, fa4_sm90_affw<NT> &aw,
                                                unsigned tab)
{
    (void)aw, (void)tab;
#if FA4_SM90_AFFW
    if (kMod)
        aw.roff[0] = aw.roff[1] = 0.f;
#elif FA4_SM90_TFOLD || FA4_SM90_RFOLD
    if (kMod) {
        aw.roff[0] = aw.roff[1] = 0.f;
        aw.kmul = 1.f;
    }
#endif
#if FA4_SM90_MASK_ROLLED
    unsigned bits[(NT + 7) / 8];
    if (kCheck)
        fa4_sm90_mask_rolled<NT>(bits, p, aux, b, h, row0, col0, len_q, len_k, full);
#endif
#if FA4_SM90_AFFW
    /* score_mod affine (alibi: ds 1, slopes[h] on kv - q; fa4_sm90_affw): one FMA a score instead
     * of the mod's scale multiply, kv - q, I2F and FMA (emit_affine.c; notes/issue8-mod-cost.md) */
    if (kMod && !kCheck && aw.ok) {
        const int lane = threadIdx.x & 31;
        const float ct = fmaf(aw.dk, (float)(col0 - 2 * (lane & 3)), aw.c); /* at the tile's key 0 */
        aw.roff[0] = fmaf(aw.dq, (float)(lane >> 2), fmaf(aw.dk, (float)(2 * (lane & 3)), ct));
        aw.roff[1] = fmaf(aw.dq, 8.0f, aw.roff[0]);
#if FA4_SM90_AFFINE_KFOLD
        /* ks multiplies in the softmax (kmul): one FMA a score with an immediate, none where dk is 0
         * (head_scale: warp-uniform) */
        if (aw.dk != 0.f) {
#pragma unroll
            for (int ni = 0; ni < NT; ++ni)
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    if (8 * ni + (e & 1) != 0) /* (s + 0 * dkk is s but for -0) */
                        s[ni][e] = fmaf(aw.dkk, (float)(8 * ni + (e & 1)), s[ni][e]);
        }
#else
#pragma unroll
        for (int ni = 0; ni < NT; ++ni)
#pragma unroll
            for (int e = 0; e < 4; ++e)
                s[ni][e] = fmaf(s[ni][e], aw.ks, aw.w[ni][e & 1]);
#endif
        return;
    }
#endif
#if FA4_HAS_SCORE_MOD && FA4_SM90_FWD_TILE
    /* score_mod's index-dependent parts one value over the warp's 16 rows and this tile's keys
     * (rel_bias away from the diagonal): take them once, apply the rest (emit_tile.c). The test is
     * the same for every lane of the warp. */
    if (kMod && !kCheck) {
        const int lane = threadIdx.x & 31;
#if FA4_SM90_RELT
        /* the warpgroup's 64 rows, as fa4_sm90_rel_fill asks: where it holds there is no table */
        const long long q_lo = (long long)row0 - (lane >> 2) - 16 * ((threadIdx.x >> 5) & 3) + p.q_offset,
                        q_hi = q_lo + 63;
#else
        const long long q_lo = (long long)row0 - (lane >> 2) + p.q_offset, q_hi = q_lo + 15;
#endif
#if FA4_SM90_TRUN
        (void)q_hi;
        if (fa4_sm90_trun_test<NT>(aw, b, h, q_lo, col0 - 2 * (lane & 3), p.kv_offset, aux)) {
            if (p.scale > 0.f) { /* folded (warp-uniform) */
                fa4_sm90_fold_c0(aw, p.scale, aw.rc0);
                return;
            }
#pragma unroll
            for (int ni = 0; ni < NT; ++ni)
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    s[ni][e] = s[ni][e] * p.scale + aw.rc0; /* fa4_score_mod_t of the tile-add form */
            return;
        }
#else
        const long long k_lo = (long long)col0 - 2 * (lane & 3) + p.kv_offset, k_hi = k_lo + NT * 8 - 1;
        fa4_score_tile t;
        if (fa4_sm90_tile_box(b, h, q_lo, q_hi, k_lo, k_hi, aux, t)) {
#if FA4_SM90_TFOLD
            /* score * scale + c0 at every position: the softmax's kmul and roff (warp-uniform).
             * Only for scale > 0: the softmax takes the row max of the raw scores times kmul */
            if (p.scale > 0.f) {
                fa4_sm90_fold_c0(aw, p.scale, fa4_score_mod_tile_add(t));
                return;
            }
#endif
#pragma unroll
            for (int ni = 0; ni < NT; ++ni)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int qi = row0 + (e >= 2 ? 8 : 0);
                    const int ki = col0 + ni * 8 + (e & 1);
                    s[ni][e] = fa4_score_mod_t(s[ni][e] * p.scale, b, h, (int)(qi + p.q_offset),
                                               (int)(ki + p.kv_offset), aux, t);
                }
            return;
        }
#endif
    }
#endif
#if FA4_SM90_RELT
    /* score_mod = score + g(kv_idx - q_idx) with g from this tile's table (fa4_sm90_rel_fill): the
     * thread's element (ni, e) has offset index 8 ni + 2t + (e & 1) - (16 w + g) - 8 (e >> 1) + 63,
     * so the second row's pair of chunk ni is the first row's of chunk ni - 1: 2 NT + 2 loads. */
    if (kMod && !kCheck) {
        const int lane = threadIdx.x & 31;
        const unsigned a = tab + 4u * (unsigned)(2 * (lane & 3) - (lane >> 2) - 16 * ((threadIdx.x >> 5) & 3) + 63);
        float g2 = fa4_sm90_rel_get(a - 32u), g3 = fa4_sm90_rel_get(a - 28u);
#pragma unroll
        for (int ni = 0; ni < NT; ++ni) {
            const float g0 = fa4_sm90_rel_get(a + 32u * ni), g1 = fa4_sm90_rel_get(a + 32u * ni + 4u);
            float x0 = s[ni][0] * p.scale, x1 = s[ni][1] * p.scale;
            float x2 = s[ni][2] * p.scale, x3 = s[ni][3] * p.scale;
            s[ni][0] = x0 + g0;
            s[ni][1] = x1 + g1;
            s[ni][2] = x2 + g2;
            s[ni][3] = x3 + g3;
            g2 = g0;
            g3 = g1;
        }
        return;
    }
#elif FA4_HAS_SCORE_MOD && FA4_SCORE_MOD_REL && FA4_SM90_REL && FA4_SM90_CONSUMERS != 3 && !FA4_SM90_WIDE_O
    /* score_mod = score + g(kv_idx - q_idx) (emit_rel.c: rel_bias, t5_bias): the second row (q + 8)
     * at key k has the first row's g at key k - 8, i.e. the previous chunk's, so g runs at 34 of the
     * 64 positions. The score is formed as the mod forms it (scaled score + g), bit for bit. */
    if (kMod && !kCheck) {
        const fa4_score_uniform su = fa4_score_mod_uniform(b, h, aux);
        const int qa = (int)(row0 + p.q_offset), qb = (int)(row0 + 8 + p.q_offset);
        float g2 = fa4_score_mod_rel(b, h, qb, (int)(col0 + p.kv_offset), aux, su);
        float g3 = fa4_score_mod_rel(b, h, qb, (int)(col0 + 1 + p.kv_offset), aux, su);
#pragma unroll
        for (int ni = 0; ni < NT; ++ni) {
            const int ki = col0 + ni * 8;
            const float g0 = fa4_score_mod_rel(b, h, qa, (int)(ki + p.kv_offset), aux, su);
            const float g1 = fa4_score_mod_rel(b, h, qa, (int)(ki + 1 + p.kv_offset), aux, su);
            float x0 = s[ni][0] * p.scale, x1 = s[ni][1] * p.scale;
            float x2 = s[ni][2] * p.scale, x3 = s[ni][3] * p.scale;
            s[ni][0] = x0 + g0;
            s[ni][1] = x1 + g1;
            s[ni][2] = x2 + g2;
            s[ni][3] = x3 + g3;
            g2 = g0; /* (q + 8, k + 8) has the offset of (q, k) */
            g3 = g1;
            asm volatile("" : "+f"(s[ni][0]), "+f"(s[ni][1]), "+f"(s[ni][2]), "+f"(s[ni][3]), "+f"(g2), "+f"(g3)::"memory");
        }
        return;
    }
#endif
#if FA4_HAS_SCORE_MOD
    /* score_mod's position-independent part (alibi's slopes[h]), once per fragment: the chunk
     * barrier below would otherwise make the compiler reload it at every 8-column chunk */
    const fa4_score_uniform su = fa4_score_mod_uniform(b, h, aux);
    const fa4_sm90_pre pre = fa4_sm90_prescale(p, b, h, aux); /* config.cuh FA4_SM90_PRESCALE */
#endif
#pragma unroll
    for (int ni = 0; ni < NT; ++ni) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int qi = row0 + (e >= 2 ? 8 : 0);
            const int ki = col0 + ni * 8 + (e & 1);
            float x = s[ni][e];
#if FA4_HAS_SCORE_MOD
            if (kMod)
                x *= pre.k;
#endif
            if (kCheck) {
#if FA4_SM90_MASK_ROLLED
                const bool ok = (bits[ni / 8] >> (4 * (ni % 8) + e)) & 1u;
                (void)qi, (void)ki;
#elif FA4_SM90_MASK_SPLIT_ON
                /* kFull (the caller's uniform branch on a tile inside a full block): the bounds
                 * only; else mask_mod, without the or of the runtime flag `full`, which made
                 * ptxas turn every condition into a 0/1 integer (SEL, LOP3) before the select:
                 * causal's checked tile 516 -> 260 instructions, sliding window's 697 -> 459.
                 * kFull tests the keys only, as a count from the thread's first column: rows past
                 * len_q are never stored (epilogue.cuh) and each row's softmax is its own. With the
                 * row test too, causal_sliding_window's D 128 forward spilled 36 bytes and was
                 * compiled again without the split (FA4_SM90_FWD_FALLBACK 1: 1.8 s, two builds). */
                const bool in = !(qi >= len_q || ki >= len_k);
                const bool ok = kFull ? (ni * 8 + (e & 1)) < len_k - col0 : in & fa4_mask_mod(b, h, (int)(qi + p.q_offset), (int)(ki + p.kv_offset), aux);
#elif FA4_HAS_MASK_MOD && !FA4_CHECKED
                const bool ok = !(qi >= len_q || ki >= len_k) &
                                (full | fa4_mask_mod(b, h, (int)(qi + p.q_offset), (int)(ki + p.kv_offset), aux));
#else
                const bool ok = fa4_allowed(p, aux, b, h, qi, ki, len_q, len_k, full);
#endif
#if FA4_HAS_SCORE_MOD
                if (kMod && ok)
                    x = FA4_SM90_SCORE_MOD_U(x, b, h, (int)(qi + p.q_offset), (int)(ki + p.kv_offset), aux, su);
#endif
                x = ok ? x : -FA4_INF;
            } else {
#if FA4_HAS_SCORE_MOD
                if (kMod)
                    x = FA4_SM90_SCORE_MOD_U(x, b, h, (int)(qi + p.q_offset), (int)(ki + p.kv_offset), aux, su);
#endif
            }
            s[ni][e] = x;
        }
        /* one 8-column chunk at a time: keeps the compiler from hoisting every chunk's index and
         * aux work ahead (that spilled with score_mod + mask_mod at D = 128) */
        asm volatile("" : "+f"(s[ni][0]), "+f"(s[ni][1]), "+f"(s[ni][2]), "+f"(s[ni][3])::"memory");
    }
}

/* Early mask (FA4_SM90_MASK_EARLY): the sequence bounds and mask_mod of one S fragment as bits,
 * bit 4 * (ni % 8) + e of word ni / 8, evaluated without the scores so that the consumer computes
 * them while S = Q K^T is still on the tensor cores (mainloop.cuh); the score stage then only
 * selects. Evaluated inline after the wait, mask_mod's aux reads (document's doc_id[q_idx] and
 * doc_id[kv_idx]) sat on the critical path of every partial tile (issue 8). */
constexpr int kMaskWords = (kN / 8 + 7) / 8;
template <int NT>
__device__ __forceinline__ void fa4_sm90_mask_bits(unsigned (&bits)[(NT + 7) / 8], const fa4_params &p,
                                                   const fa4_aux &aux, int b, int h, int row0, int col0,
                                                   int len_q, int len_k, bool full)
{
#if FA4_SM90_MASK_ROLLED
    fa4_sm90_mask_rolled<NT>(bits, p, aux, b, h, row0, col0, len_q, len_k, full);
#else
#pragma unroll
    for (int w = 0; w < (NT + 7) / 8; ++w)
        bits[w] = 0u;
#pragma unroll
    for (int ni = 0; ni < NT; ++ni) {
        unsigned m = 0u;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int qi = row0 + (e >= 2 ? 8 : 0);
            const int ki = col0 + ni * 8 + (e & 1);
#if FA4_HAS_MASK_MOD
            const bool ok = !(qi >= len_q || ki >= len_k) &
                            (full | fa4_mask_mod(b, h, (int)(qi + p.q_offset), (int)(ki + p.kv_offset), aux));
#else
            const bool ok = !(qi >= len_q || ki >= len_k);
#endif
            m |= (unsigned)ok << e;
        }
        bits[ni / 8] |= m << (4 * (ni % 8));
    }
#endif
}

/* -inf where the early mask's bit is clear. */
template <int NT>
__device__ __forceinline__ void fa4_sm90_apply_mask(float (&s)[NT][4], const unsigned (&bits)[(NT + 7) / 8])
{
#pragma unroll
    for (int ni = 0; ni < NT; ++ni)
#pragma unroll
        for (int e = 0; e < 4; ++e)
            s[ni][e] = (bits[ni / 8] >> (4 * (ni % 8) + e)) & 1u ? s[ni][e] : -FA4_INF;
}

/* 2^x on the FMA and integer pipes (x <= 0 here: scores minus the row max). floor(x) comes from
 * the magic bias 1.5 * 2^23 added with rounding towards -inf: the sum's ulp is 1, so it holds
 * 1.5 * 2^23 + floor(x) exactly and its low mantissa bits are floor(x) in two's complement, which
 * shifted by 23 lands on the exponent field (the bias's own bits shift out). floorf and an (int)
 * conversion instead would run FRND and F2I on the conversion pipe, whose 16 lanes per SM are the
 * MUFU's rate: no saving at all (the first version measured -25% on plain for that reason). The
 * degree-3 polynomial (seeds/002 §3) is within 9e-5 of 2^f on [0, 1), under a bf16 ulp of P.
 * Even so it is slower on the H200 at every share (2026-12-01, fwd TFLOP/s, 0 / 15 / 30 / 50%:
 * D 64 417 / 407 / 391 / 371, soft-cap 309 / 299 / 284 / 273, plain D 128 658 / 611 / 575 / 547):
 * about ten FMA-pipe instructions replace one MUFU op, and the forward is not MUFU-bound here
 * (notes/issue8-fwd-overlap.md), so it stays off by default. */
__device__ __forceinline__ float fa4_exp2_sw(float x)
{
    const float xc = fmaxf(x, -127.f);
    float j;
    asm("add.rm.f32 %0, %1, 0f4B400000;" : "=f"(j) : "f"(xc));
    const float f = xc - (j - 12582912.f); /* both subtractions exact: f in [0, 1) */
    const float r = fmaf(fmaf(fmaf(0.0771f, f, 0.2276f), f, 0.6951f), f, 1.0f);
    const int bits = __float_as_int(r) + (int)((unsigned)__float_as_int(j) << 23);
    return x < -127.f ? 0.f : __int_as_float(bits); /* -inf (masked) gives 0 exactly */
}

/* Online softmax update: s (scores) becomes P (unnormalised, natural exponent of the scaled
 * score minus the row max); corr is the factor O must be rescaled by. Returns false when no row of
 * the warp changed its reference (corr == 1: the rescale of O may be skipped). */
template <int NT>
__device__ __forceinline__ bool fa4_sm90_softmax(float (&s)[NT][4], float (&m)[2], float (&l)[2],
                                                 float (&corr)[2], float k2, const fa4_sm90_affw<NT> &aw)
{
    (void)aw;
#if FA4_SM90_ROWFOLD
    const float k2s = k2 * aw.kmul; /* the exponent's factor on s (kmul: fa4_sm90_affw) */
#else
    const float k2s = k2;
#endif
    float mnew[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        float mx = -FA4_INF;
#pragma unroll
        for (int ni = 0; ni < NT; ++ni)
            mx = fmaxf(mx, fmaxf(s[ni][2 * r], s[ni][2 * r + 1]));
#if FA4_SM90_ROWFOLD
        /* the scores of row r are kmul s + roff[r] (fa4_sm90_affw; kmul > 0) */
        mx = fmaf(mx, aw.kmul, aw.roff[r]);
#endif
        mx = fa4_quad_max(mx) * k2;
        mnew[r] = fmaxf(m[r], mx);
    }
    bool rescale = true;
    if constexpr (kRescaleThreshold > 0.f) {
        const bool need = mnew[0] > m[0] + kRescaleThreshold || mnew[1] > m[1] + kRescaleThreshold;
        if (!__any_sync(0xffffffffu, need)) {
            mnew[0] = m[0];
            mnew[1] = m[1];
            rescale = false;
        }
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        const float ref = mnew[r] == -FA4_INF ? 0.f : mnew[r];
        corr[r] = rescale ? fa4_exp2(m[r] - ref) : 1.f;
        m[r] = mnew[r];
#if FA4_SM90_ROWFOLD
        const float nref = fmaf(aw.roff[r], k2, -ref);
#else
        const float nref = -ref;
#endif
        float sum = 0.f;
#pragma unroll
        for (int ni = 0; ni < NT; ++ni) {
#pragma unroll
            for (int e = 2 * r; e < 2 * r + 2; ++e) {
                const float x = fmaf(s[ni][e], k2s, nref);
#if FA4_SW_EXP2_PERCENT > 0
                const bool sw = ni < (NT * FA4_SW_EXP2_PERCENT + 50) / 100;
                s[ni][e] = sw ? fa4_exp2_sw(x) : fa4_exp2(x);
#else
                s[ni][e] = fa4_exp2(x);
#endif
#if !FA4_SM90_ROWSUM_MMA
                sum += s[ni][e];
#endif
            }
        }
#if FA4_SM90_ROWSUM_MMA
        (void)sum, (void)l; /* the tensor cores sum P (mainloop.cuh issue_pv) */
#else
        l[r] = l[r] * corr[r] + sum;
#endif
    }
    return rescale;
}

#endif /* FA4_SM90_SOFTMAX_CUH */
