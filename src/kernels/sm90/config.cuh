/*
 * config.cuh - tile geometry of the sm90 forward, in one place with the checks that keep it legal.
 * Warpgroup 0 produces (one thread issues TMA); kConsumers warpgroups consume 64 query rows each:
 * 2 (kM = 128, 232 registers each, intra-warpgroup overlap), the default; or three (kM = 192,
 * 160 registers each: ptxas allocates the consumers' code within setmaxnreg's 160, the kernel's
 * report says the launch bound's 128). Three without the overlap measured slower (399.4 TFLOP/s
 * against 435.5 for two, D 64 B 8 H 16 S 4096 bf16, H200, 2026-11-29); with it (mainloop.cuh's
 * stash) they fit at D 64 for plain attention, the index masks and ALiBi, opt-in through
 * FA4_SM90_FWD64_CONSUMERS=3 below (notes/issue8-fwd-overlap.md, session 8). A kernel with three
 * runs 128-row tiles with its third consumer idle when a block mask's q_block is not a multiple
 * of 192 (fa4_sm90_rows). The grid is persistent (a CTA walks tiles blockIdx.x, +gridDim.x, ...).
 * K and V tiles of kN keys stream through a kStages ring. Shared-memory tiles
 * are stored as 64-column panels of 128-byte rows in TMA's 128-byte swizzle, which is also the
 * layout the wgmma descriptors describe; head dims that are not multiples of 64 are padded up to
 * the next panel (TMA fills the missing columns with zeros).
 * The host launcher (src/jit/path_sm90.c) mirrors these numbers; keep both in step.
 */
#ifndef FA4_SM90_CONFIG_CUH
#define FA4_SM90_CONFIG_CUH

#ifndef FA4_HEAD_DIM
#error "FA4_HEAD_DIM must be defined by the pipeline"
#endif
#ifndef FA4_HEAD_DIM_V
#define FA4_HEAD_DIM_V FA4_HEAD_DIM
#endif
#ifndef FA4_RESCALE_THRESHOLD
#define FA4_RESCALE_THRESHOLD 0.0f
#endif
#ifndef FA4_SW_EXP2_PERCENT
#define FA4_SW_EXP2_PERCENT 0
#endif

/* Two knobs of the forward's tile boundary (notes/issue8-fwd-overlap.md, sessions 8 and 9); the
 * host sets them from FA4JIT_SM90_FWD_STG128 and FA4JIT_SM90_FWD_NEXT_EARLY (path_sm90.c, A/B
 * switches):
 *   FA4_SM90_FWD_STG128: the register epilogue writes O in 16-byte stores (epilogue.cuh; 2: 8-byte;
 *     0: 4-byte). Default 1: H200 bf16 B4 H16 S4096 fwd, same call (2026-12-02 21:05 UTC, 3 rounds):
 *     causal (bm) D128 551.5-552.7 -> 561.6-571.1 TFLOP/s, GQA 32:4 causal 555.0-559.3 ->
 *     578.3-583.2, causal D64 +1.6%, plain S8192 +0.8%, plain D64 (three consumers) within noise;
 *   FA4_SM90_FWD_NEXT_EARLY: the consumers read the next tile's hand-off, sequence bounds and
 *     block-mask counts under the current tile's last P V (fwd.cu), with a block mask or varlen
 *     only (a runtime test; dense tiles have no list to read), two consumers only. Default 0: +2%
 *     on causal alone, nothing on top of STG128 (same call). */
#ifndef FA4_SM90_FWD_STG128
#define FA4_SM90_FWD_STG128 1
#endif
#ifndef FA4_SM90_FWD_NEXT_EARLY
#define FA4_SM90_FWD_NEXT_EARLY 0
#endif

constexpr int kD = FA4_HEAD_DIM;
constexpr int kDv = FA4_HEAD_DIM_V;
constexpr int kDp = (kD + 63) / 64 * 64;   /* padded to whole panels */
constexpr int kDvp = (kDv + 63) / 64 * 64;
/* padded Dv 256: O takes 128 of a consumer's registers, and the forward's first build keeps only
 * the score_mod forms that fit beside it (softmax.cuh: no FA4_SM90_FWD_TILE_RUN, no 34-position
 * relative form). A macro, for #if. */
#define FA4_SM90_WIDE_O (FA4_HEAD_DIM_V > 192)
/* FA4_SM90_FWD64_CONSUMERS=3 (the host's FA4JIT_SM90_FWD64_CONSUMERS=3, an A/B switch): three
 * consumers with the intra-warpgroup overlap (mainloop.cuh's stash) for the forward at padded
 * D = Dv = 64, unchecked builds. Not under the spill fallbacks (path_sm90.c: their first level,
 * -DFA4_SM90_RESCALE_LATE=0, is then the default two-consumer build at D 64). */
#ifndef FA4_SM90_CONSUMERS
#if defined(FA4_SM90_FWD_PROGRAM) && defined(FA4_SM90_FWD64_CONSUMERS) && FA4_SM90_FWD64_CONSUMERS == 3 && \
    FA4_HEAD_DIM <= 64 && FA4_HEAD_DIM_V <= 64 && !FA4_CHECKED && !defined(FA4_SM90_OVERLAP) &&          \
    !defined(FA4_SM90_RESCALE_LATE)
#define FA4_SM90_CONSUMERS 3
#else
#define FA4_SM90_CONSUMERS 2
#endif
#endif
/* Three need a host that launches with the kernel's own thread bound and says so with
 * FA4_SM90_FWD_THREADS_FROM_KERNEL: a 384-thread launch of a 512-thread kernel would hang. */
#if FA4_SM90_CONSUMERS == 3 && !(defined(FA4_SM90_FWD_THREADS_FROM_KERNEL) && FA4_SM90_FWD_THREADS_FROM_KERNEL)
#error "FA4_SM90_CONSUMERS=3 needs a launcher that reads the thread count from the kernel"
#endif
constexpr int kConsumers = FA4_SM90_CONSUMERS;
constexpr int kM = 64 * kConsumers;        /* query rows per CTA (at most; see fa4_sm90_rows) */
constexpr int kQBox = kConsumers == 3 ? 64 : 128; /* rows of the host's Q tensor-map box */
constexpr int kN = (kDp <= 128 && kDvp <= 128) ? 128 : 64; /* keys per step */
/* Three K/V stages where they fit in the 227 KB an sm_90 block may have, else two. */
constexpr int kSmem3 = 1024 + kM * kDp * 2 + 3 * kN * (kDp + kDvp) * 2 + 256;
#ifndef FA4_SM90_STAGES
constexpr int kStages = kSmem3 <= 227 * 1024 ? 3 : 2;
#else
constexpr int kStages = FA4_SM90_STAGES;
#endif
constexpr int kThreads = 128 * (1 + kConsumers);
constexpr float kRescaleThreshold = FA4_RESCALE_THRESHOLD; /* log2 units; <= 0: off */
/* The producer walks the tile schedule (schedule.cuh: the static walk or the dynamic counter's
 * order), which spilled 16-24 bytes at 24 registers; at 32 the two consumers keep 232 (the split
 * must fit the 168 x 384 registers the launch allocates, below). The same kernels at 24 / 240
 * (spilling) measured within noise of 32 / 232 on the H200 except document's static schedule
 * (+3%) and soft-cap's (+1.5%), notes/issue8-schedule.md. */
constexpr int kProducerRegs = 32, kConsumerRegs = kConsumers == 3 ? 160 : 232;

constexpr int kPanelBytes = 128;           /* one swizzled row of a panel */
constexpr int kQBytes = kM * kDp * 2;
constexpr int kKBytes = kN * kDp * 2;
constexpr int kVBytes = kN * kDvp * 2;
constexpr int kSmemTiles = kQBytes + kStages * (kKBytes + kVBytes);
/* three consumers: 64 bytes per consumer warp after the 256 of the barriers (mainloop.cuh's stash;
 * macros, not constants: a new namespace-scope constant changes every cubin's symbol table) */
#define FA4_SM90_STASH_WARP_BYTES 64
#define FA4_SM90_STASH_BYTES (FA4_SM90_CONSUMERS == 3 ? 4 * 3 * FA4_SM90_STASH_WARP_BYTES : 0)
/* FA4_SM90_REL (softmax.cuh's relative form of score_mod = score + g(kv_idx - q_idx)): 2 (default)
 * g once per key tile and offset, in a table of kN + 63 floats per consumer warpgroup after the
 * barriers and stash (768 bytes each; softmax.cuh's fa4_sm90_rel_fill); 1: g at 34 of a
 * fragment's 64 positions; 0: the mod at every position. Not with three consumer warpgroups, nor
 * where the affine form comes first (alibi: the table would be filled for nothing), nor by default
 * where the tile form exists (rel_bias: filled for every tile, the table measured 5-7% slower than
 * the 34 positions, the suite's rel. bias fwd 519-534 against 560 TFLOP/s, H200 2026-12-03; the
 * tile form takes most of its tiles). FA4_SM90_RELT_TILE 1: the table there too, filled only where
 * the warpgroup's 64 rows and the tile's keys do not take the tile form, which the score stage then
 * asks over the same box; measured slower (H100 2026-12-06, B4 H16 S4096 D128 bf16 fwd TFLOP/s,
 * default / RELT_TILE 1 / REL 1: T5 526.4, 517.4 / 250.0, 249.7 / 329.0, 326.5; trainable rel.
 * bias 558.8, 552.5 / 500.1, 499.5 / 560.7, 551.6): t5_bias's tile test, a helper call per warp
 * and tile, costs more than the table saves. The host (path_sm90.c's fwd_smem_c)
 * reserves the 1536 bytes for every two-consumer forward: at D 128 the three-stage ring then
 * leaves 256 of the 227 KB. */
#ifndef FA4_SM90_REL
#define FA4_SM90_REL 2
#endif
#ifndef FA4_SM90_RELT_TILE
#define FA4_SM90_RELT_TILE 0
#endif
/* FA4_SM90_RELT_ALL 1 (session 30; default since session 31, at every head dim since session 32):
 * every relative-form mod's forward takes the table path as t5_bias's does (softmax.cuh:
 * RELT_BOUNDS finds the offsets where g is one value, RELT_GARR copies the other tiles' tables
 * from the bounds kernel's array), also where a cheap tile form exists (rel_bias, whose forward
 * otherwise asks the tile form per warp and tile and evaluates the mod at every position of the
 * diagonal band's tiles). Since RELT_BOUNDS and RELT_GARR the table is neither filled for every
 * tile nor evaluated per tile, which is what made it slower for rel_bias in 2026-12-03's
 * measurement above. Measured (H100, bf16, fa4_ab.py median of 2, TFLOP/s, 0 -> 1):
 *   2026-12-07 11:28 UTC, B8 H16 S4096 D128, fwd / f+b: rel. bias fixed 604.4 / 537.5 -> 618.4 /
 *   540.0, trainable 601.9 / 467.4 -> 618.8 / 471.4; the suite's relbias and widebias cases 36 / 36
 *   (bench/results/2026-12-07-h100-s31-st2-reltall.md);
 *   2026-12-07 13:35 UTC, B8 H16 S4096 D256, fwd: rel. bias 606.3 -> 699.7 (plain D 256 in the same
 *   rounds 690.7 / 716.0, its spread); relbias and widebias cases 36 / 36
 *   (bench/results/2026-12-07-h100-s32-reltall256.md). D 64 not timed. */
#ifndef FA4_SM90_RELT_ALL
#define FA4_SM90_RELT_ALL 1
#endif
#if defined(FA4_SCORE_MOD_REL) && FA4_SCORE_MOD_REL && FA4_HAS_SCORE_MOD && FA4_SM90_REL == 2 && \
    FA4_SM90_CONSUMERS != 3 && !(defined(FA4_SCORE_MOD_AFFINE) && FA4_SCORE_MOD_AFFINE) &&             \
    (!(defined(FA4_SCORE_MOD_TILE) && FA4_SCORE_MOD_TILE) || FA4_SM90_RELT_TILE || FA4_SM90_RELT_ALL || \
     (defined(FA4_SCORE_MOD_TILE_CALLS) && FA4_SCORE_MOD_TILE_CALLS))
#define FA4_SM90_RELT 1
#else
#define FA4_SM90_RELT 0
#endif
/* FA4_SM90_FWD_TILE: the forward asks the tile form (emit_tile.c) per warp and tile, except where
 * its test evaluates a helper call over the box (FA4_SCORE_MOD_TILE_CALLS: t5_bias's bucket, a
 * few hundred instructions a tile) and the relative form's table serves: there the forward is
 * what it was before such mods had a tile form, which only the backward (64 x 16 per warp and
 * step, bwd_consumer.cuh grads_add) then takes. */
#if defined(FA4_SCORE_MOD_TILE) && FA4_SCORE_MOD_TILE &&                                               \
    !(FA4_SM90_RELT && ((defined(FA4_SCORE_MOD_TILE_CALLS) && FA4_SCORE_MOD_TILE_CALLS) || FA4_SM90_RELT_ALL) && \
      !FA4_SM90_RELT_TILE)
#define FA4_SM90_FWD_TILE 1
#else
#define FA4_SM90_FWD_TILE 0
#endif
#define FA4_SM90_RELT_WG_BYTES 768
#define FA4_SM90_RELT_BYTES (FA4_SM90_RELT ? 2 * FA4_SM90_RELT_WG_BYTES : 0)
/* FA4_SM90_ROWSUM_MMA 1: the softmax's row sums l come from the tensor cores, not from an FADD per
 * score: beside each P V wgmma a m64n8k16 one multiplies the same P fragment by a 16 x 8 block of
 * ones in shared memory (FA4_SM90_ONES_BYTES after the table, filled once per CTA), so every
 * column of that accumulator is the row's sum of the rounded P that O adds up; it is rescaled
 * with O. 0: the FADDs (mainloop.cuh issue_pv, softmax.cuh). The host (path_sm90.c fwd_smem_c)
 * reserves the 256 bytes for every forward; at D 128 the three-stage ring then uses the whole
 * 227 KB. Default: only where the affine form is folded (softmax.cuh FA4_SM90_AFFW: ALiBi, head
 * scale) at padded D and Dv 128, whose extra FMA a score makes the softmax's issue slots the
 * limit (D 64 and 256 not measured with a mod: plain D 256 was slower). H100 2026-12-06
 * (51c169a, FA4JIT_KERNEL_DIR copies, same call, two rounds, B4 H16 S4096 bf16 fwd TFLOP/s, off ->
 * on): ALiBi 593.6, 600.9 -> 615.1, 611.7; plain 678.4, 682.7 -> 673.6, 674.1; causal 577.2, 578.5
 * -> 559.6, 571.5; rel. bias 557.2, 562.6 -> 526.0, 525.4; T5 517.3, 522.3 -> 498.7, 499.3;
 * soft-cap 309.9, 312.2 -> 299.9, 300.2; document 321.3, 319.8 -> 308.2, 310.6; D 64 even; D 256
 * 734.8, 735.7 -> 702.4 (notes/issue8-mod-cost.md, session 20).
 * Session 24: with FA4_SM90_AFFINE_KFOLD (softmax.cuh, default 1) the folded mods have no FMA a
 * score over plain's (head scale) or one with an immediate (ALiBi), and the FADDs win: H100
 * 2026-12-06, B8 H16 S4096 D128 bf16 fwd TFLOP/s, KFOLD on, ROWSUM_MMA 1 / 0: ALiBi 621.9 / 648.5,
 * head scale 645.1 / 669.2, plain 682.7 / 682.8 (bench/results/2026-12-06-h100-s24-kfold.*). So it
 * stays 1 only with KFOLD 0 (the build it was measured on). */
/* FA4_SM90_AFFINE_KFOLD 1 (session 24; softmax.cuh's fa4_sm90_affw, defined here for the row sums'
 * default): ks goes into the softmax's exponent factor (kmul: the row max of ks x is ks times that
 * of x, for ks > 0; the form is not taken where ks <= 0), so a score costs one FMA with an
 * immediate, s + (dk / ks) (8 ni + e), and nothing where dk is 0 (head_scale: ds = exp(log_temp[h]);
 * any ds * score + f(b, h, q_idx)): no 32 registers of dk (8 ni + e), which ptxas rematerialized
 * each tile (32 FMULs). Measured: ALiBi 614.5 -> 630.0, head scale 596.8 -> 650.6 fwd TFLOP/s (same
 * run as above, row sums MMA). 0: fma(s, ks, w) with w in registers. */
#ifndef FA4_SM90_AFFINE_KFOLD
#define FA4_SM90_AFFINE_KFOLD 1
#endif
#ifndef FA4_SM90_ROWSUM_MMA
#if FA4_SM90_AFFINE_KFOLD
#define FA4_SM90_ROWSUM_MMA 0
#elif FA4_HAS_SCORE_MOD && defined(FA4_SCORE_MOD_AFFINE) && FA4_SCORE_MOD_AFFINE && FA4_SM90_CONSUMERS != 3 && \
    !(defined(FA4_SM90_AFFINE) && !FA4_SM90_AFFINE) && !(defined(FA4_SM90_AFFINE_FOLD) && !FA4_SM90_AFFINE_FOLD) && \
    FA4_HEAD_DIM > 64 && FA4_HEAD_DIM <= 128 && FA4_HEAD_DIM_V > 64 && FA4_HEAD_DIM_V <= 128
#define FA4_SM90_ROWSUM_MMA 1
#else
#define FA4_SM90_ROWSUM_MMA 0
#endif
#endif
#define FA4_SM90_ONES_BYTES (FA4_SM90_ROWSUM_MMA ? 256 : 0)
/* alignment slack, tiles, barriers, stash or table, ones */
constexpr int kSmemBytes = 1024 + kSmemTiles + 256 + FA4_SM90_STASH_BYTES + FA4_SM90_RELT_BYTES + FA4_SM90_ONES_BYTES;

/* FA4_SM90_PRESCALE (session 32): where score_mod reads its score only as score / D with D the same
 * at every position (the emitted header's FA4_SCORE_MOD_PRESCALE: softcap's cap * tanhf(score /
 * cap)), the generic score stage of the forward and of the backward multiplies the raw q.k by
 * scale / D once (fa4_sm90_pre.k, per fragment or step) and calls the prescaled form, which reads
 * that product where score_mod reads score / D: per score one multiply fewer in the forward, and
 * in the backward the dual form's two divisions by D (value and derivative, each about five
 * instructions and a MUFU reciprocal: the dual form keeps D opaque) become none, the derivative
 * seeded with 1 / D. The argument is rounded once, s * (scale / D), where the plain forms round
 * (s * scale) / D: about an ulp of the argument. FA4_SM90_PRESCALE_ON 0 keeps the plain forms. */
#ifndef FA4_SM90_PRESCALE_ON
#define FA4_SM90_PRESCALE_ON 1
#endif
/* not in the forward at head dims over 192: softcap's D 256 forward then spilled at path_sm90.c's
 * fallback level 1 and compiled level 2 (no late rescale); without the prescale level 1 is clean */
#if FA4_HAS_SCORE_MOD && defined(FA4_SCORE_MOD_PRESCALE) && FA4_SCORE_MOD_PRESCALE && FA4_SM90_PRESCALE_ON && \
    !(defined(FA4_CHECKED) && FA4_CHECKED) && !(defined(FA4_SM90_FWD_PROGRAM) && FA4_HEAD_DIM_V > 192)
#define FA4_SM90_PRESCALE 1
#else
#define FA4_SM90_PRESCALE 0
#endif
/* the forward's score_mod on the scaled score (x = q.k * fa4_sm90_pre.k) */
#if FA4_SM90_PRESCALE
#define FA4_SM90_SCORE_MOD_U fa4_score_mod_u_p
#else
#define FA4_SM90_SCORE_MOD_U fa4_score_mod_u
#endif
/* k: what multiplies the raw q.k before score_mod (the softmax scale, times 1 / D where prescaled);
 * mul: 1 / D (1 where not prescaled), the derivative's seed */
struct fa4_sm90_pre {
    float k, mul;
};
__device__ __forceinline__ fa4_sm90_pre fa4_sm90_prescale(const fa4_params &p, int b, int h, const fa4_aux &aux)
{
    fa4_sm90_pre r;
#if FA4_SM90_PRESCALE
    r.mul = fa4_score_mod_pre_mul(b, h, aux);
    r.k = p.scale * r.mul;
#else
    (void)b, (void)h, (void)aux;
    r.mul = 1.f;
    r.k = p.scale;
#endif
    return r;
}
#if FA4_HAS_SCORE_MOD
/* score_mod (value, and d score_mod / d score in *dmod) at the raw score s (q.k) */
__device__ __forceinline__ float fa4_sm90_mod_deriv(float s, const fa4_sm90_pre &pr, int b, int h, int qi, int ki,
                                                    const fa4_aux &aux, float *dmod)
{
#if FA4_SM90_PRESCALE
    return fa4_score_mod_fwd_deriv_p(s * pr.k, pr.mul, b, h, qi, ki, aux, dmod);
#else
    return fa4_score_mod_fwd_deriv(s * pr.k, b, h, qi, ki, aux, dmod);
#endif
}
#endif

static_assert(kD % 32 == 0 && kDv % 32 == 0, "head dims must be multiples of 32");
static_assert(kDp <= 256 && kDvp <= 256, "head dims above 256 are not supported");
static_assert(kSmemBytes <= 227 * 1024, "shared memory over the sm_90 limit");
static_assert(!FA4_SM90_RELT || (kN + 63) * 4 <= FA4_SM90_RELT_WG_BYTES, "relative-form table");
static_assert(kConsumers == 2 || kConsumers == 3, "2 or 3 consumer warpgroups");
static_assert(kM % kQBox == 0, "Q loads in whole boxes");
/* setmaxnreg moves registers between the warpgroups of a CTA inside what the launch allocated:
 * ptxas's count under the launch bound (65536 / kThreads, rounded down to a multiple of 8) times
 * kThreads, not the whole file; asking for more leaves the consumers' setmaxnreg.inc waiting for
 * ever (an experimental variant with a 32 / 240 split hung on the H200, 2026-12-01; it also changed
 * the tile hand-off, so the split is the likely, not a separately confirmed, cause). */
static_assert(kProducerRegs * 128 + kConsumers * kConsumerRegs * 128 <= (65536 / kThreads) / 8 * 8 * kThreads,
              "setmaxnreg split over the registers the launch allocates");

#endif /* FA4_SM90_CONFIG_CUH */
