/*
 * bwd_config.cuh - geometry of the sm90 backward main program (bwd_main.cu), in one place with the
 * checks that keep it legal, plus its shared-memory map and mbarriers. The head dims, panel layout
 * and register split come from sm90/config.cuh (the forward's), the rest is the backward's own:
 *   a CTA holds kBN = 128 keys of one (batch, kv head): K and V resident (loaded once by TMA);
 *   3 warpgroups: warpgroup 0 the producer (one warp streams Q, dO, lse2 and dpsum of kBM = 64
 *   query rows per step, 80 in the bwd_main90m80 program, through a kBStages ring; in deterministic
 *   calls lane 0 of warps 1 and 2 are the dQ turn agents, bwd_consumer.cuh), warpgroups 1 and 2 the consumers, 64 keys each
 *   (their dK and dV rows live in their registers for the whole walk);
 *   dS goes through shared memory (double-buffered, [query][key] in the 128-byte swizzle) for dQ.
 * Every shared tile is a set of 64-column panels of 128-byte rows in TMA's 128-byte swizzle, the
 * layout the wgmma descriptors describe. Only padded head dims up to 128 fit the register plan
 * (dK + dV + S + dP per consumer thread); larger heads stay on the sm80 backward.
 * The host launcher (see notes/sm90-bwd.md) must mirror kBN, kBM, kBThreads and kBSmemBytes.
 */
#ifndef FA4_SM90_BWD_CONFIG_CUH
#define FA4_SM90_BWD_CONFIG_CUH

constexpr int kBN = 128;        /* keys per CTA (the stationary block) */
/* FA4_SM90_BWD_BM: query rows per step, 64 (default) or 80 (the bwd_main90m80 program: padded
 * D = Dv = 128 without score_mod, non-deterministic, dense or block-masked (the step table of
 * bwd_steps80.cuh); S^T, dP^T and dQ^T as m64n80 wgmmas, dQ swapped: see bwd_consumer.cuh). */
/* 1: the GQA program (bwd_main80s.cu): with params.h kv_split set (GQA split by query head) the
 * CTA's head is a query head, K and V come from its kv head, and dK, dV are added into
 * dkv_accum; it also holds the heads-inner walk (bwd_schedule.cuh FA4_SM90_BWD80_HEADS_INNER). 0
 * (every other program): neither, their code as before session 19. */
#ifndef FA4_SM90_BWD_GQA_PROG
#define FA4_SM90_BWD_GQA_PROG 0
#endif
#ifndef FA4_SM90_BWD_BM
#define FA4_SM90_BWD_BM 64
#endif
/* The GQA program's split epilogue (bwd_main.cu): 1 stages each warp's dK, then dV rows in the Q / dO
 * ring and adds them with one bulk reduce a row (cp.reduce.async.bulk ... add.f32); 0 adds them
 * from registers, red.global.add.v2.f32 (session 19's form). */
#ifndef FA4_SM90_BWD_SPLIT_BULK
#define FA4_SM90_BWD_SPLIT_BULK FA4_SM90_BWD_GQA_PROG
#endif
/* FA4_SM90_BWD_DQ_FUSED_BUILD 1 (the launcher's option under FA4JIT_SM90_BWD_DQ_FUSED=1; opt-in,
 * measured slower than bwd_post in session 22, notes/sm90-bwd.md): in the 80-query programs,
 * default-mode calls whose launcher sets p.dq_cnt convert dQ in the main kernel (the CTA that
 * completes an 80-row tile's adds converts it; bwd_consumer.cuh dq_fused_end), and bwd_post does
 * not run; bwd_pre and fa4_sm90_bwd_expect80 set the counters. 0 (default): none of it is
 * compiled, and p.dq_cnt must stay NULL. */
#ifndef FA4_SM90_BWD_DQ_FUSED_BUILD
#define FA4_SM90_BWD_DQ_FUSED_BUILD 0
#endif
#define FA4_SM90_BWD_DQ_FUSED (FA4_SM90_BWD_DQ_FUSED_BUILD && FA4_SM90_BWD_BM != 64)
/* a staged row: 128 floats and 32 bytes of padding (the rows' quads then fall on other banks) */
#define kBSplitRowBytes (128 * 4 + 32)
constexpr int kBM = FA4_SM90_BWD_BM; /* query rows per step */
constexpr int kBWgKeys = 64;    /* keys per consumer warpgroup */
constexpr int kBThreads = 384;
#ifndef FA4_SM90_BWD_PRODUCER_REGS
#define FA4_SM90_BWD_PRODUCER_REGS 24
#endif
/* setmaxnreg moves registers inside the CTA's own allocation (168 per thread under
 * __launch_bounds__(384, 1)): producer + 2 consumers must stay within 3 x 168 per lane row, or the
 * consumers' setmaxnreg.inc waits forever. 24 / 240 as the forward. */
constexpr int kBLaunchRegs = 168;
constexpr int kBProducerRegs = FA4_SM90_BWD_PRODUCER_REGS;
constexpr int kBConsumerRegs = (3 * kBLaunchRegs - kBProducerRegs) / 2 / 8 * 8;

constexpr int kBKBytes = kBN * kDp * 2;
constexpr int kBVBytes = kBN * kDvp * 2;
constexpr int kBQBytes = kBM * kDp * 2;
constexpr int kBDoBytes = kBM * kDvp * 2;
constexpr int kBDsBytes = kBM * kBN * 2;      /* one dS buffer: 2 panels of 64 keys */
/* lse2 and dpsum of one step, each at a 128-byte boundary (a tensor TMA's shared-memory destination:
 * 80 rows misaligned dpsum, CUDA_ERROR_MISALIGNED_ADDRESS); dpsum at kBRowBytes / 2 */
constexpr int kBRowBytes = 2 * ((kBM * 4 + 127) / 128 * 128); /* expect_tx counts 2 kBM 4 */
constexpr int kBStageBytes = kBQBytes + kBDoBytes;
/* dQ staging for the bulk reduce-add: kBM x 64 fp32 per dQ warpgroup, as two boxes of 32 columns
 * (128-byte rows, 128-byte swizzle), for either dQ form (kBM 80: dQ^T stored transposed). */
constexpr int kBDqBox = 32;
constexpr int kBDqBoxBytes = kBM * kBDqBox * 4;
constexpr int kBDqBytes = 2 * kBDqBoxBytes; /* per dQ warpgroup */
/* Trainable aux: the window of gradient entries each CTA sums into before any global add
 * (bwd_main.cu's fa4_aux_grad_commit): a header of kBAuxHdrBytes (per trainable read site: the
 * window's first index and its entries) and fp32 entries, split evenly between the read sites.
 * Every build with trainable aux has its bytes (the host's rule, path_sm90.c bwd_smem; used where
 * FA4_NUM_AUX_GRAD_SITES > 0); at D 128 they take the third Q/dO stage.
 * FA4_SM90_BWD_AUX_WINDOW=0 (A/B only): the bytes stay, the window is not used. */
#if FA4_HAS_TRAINABLE_AUX
constexpr int kBAuxWinBytes = 32768;
#else
constexpr int kBAuxWinBytes = 0;
#endif
#ifndef FA4_SM90_BWD_AUX_WINDOW
#define FA4_SM90_BWD_AUX_WINDOW 1
#endif
/* Copies of a site's window where its range fits that many times (at most this many, a power of
 * two): a commit adds into copy (lane % 4 + 4 (warp % 2)) % copies, so lanes of one warp whose
 * terms meet on one entry (a relative-position table's diagonal: lanes (g, t) and (g + 2, t + 1))
 * and the two warps of a scheduler no longer retry each other's shared-memory compare-and-swap
 * (sm_90 has no native float add on shared memory); the flush sums the copies in order. */
#ifndef FA4_SM90_BWD_AUX_COPIES
#define FA4_SM90_BWD_AUX_COPIES 8
#endif
#if FA4_HAS_TRAINABLE_AUX && FA4_NUM_AUX_GRAD_SITES > 0 && FA4_SM90_BWD_AUX_WINDOW
#define FA4_SM90_BWD_AUX_WIN 1
/* the header (16 bytes a site), then the consumer warps' scratch for the diagonal band's terms
 * (FA4_SM90_BWD_REL_SCR, bwd_consumer.cuh): per warp one array of kBAuxScrEntries floats for each
 * row parity j, kBAuxScrJBytes apart (a 64 x 16 step has kBM + 15 offsets) */
constexpr int kBAuxScrEntries = 80;
constexpr int kBAuxScrJBytes = 4 * kBAuxScrEntries;
constexpr int kBAuxScrBytes = 8 * 2 * kBAuxScrJBytes;
constexpr int kBAuxHdrBytes = 1024 + kBAuxScrBytes;
constexpr int kBAuxSiteEntries = ((kBAuxWinBytes - kBAuxHdrBytes) / 4 / FA4_NUM_AUX_GRAD_SITES) & ~3;
static_assert(FA4_NUM_AUX_GRAD_SITES * 16 <= 1024 && kBAuxSiteEntries >= 4, "aux window");
static_assert(FA4_SM90_BWD_AUX_COPIES >= 1 && FA4_SM90_BWD_AUX_COPIES <= 8 &&
                  (FA4_SM90_BWD_AUX_COPIES & (FA4_SM90_BWD_AUX_COPIES - 1)) == 0,
              "aux window copies: 1, 2, 4 or 8");
#else
#define FA4_SM90_BWD_AUX_WIN 0
#endif
constexpr int kBFixed = 1024 + kBKBytes + kBVBytes + 2 * kBDsBytes + (kDp / 64) * kBDqBytes + 512 +
                        kBAuxWinBytes; /* slack, K, V, dS x2, dQ staging, barriers, aux window */
#ifndef FA4_SM90_BWD_STAGES
constexpr int kBStages = kBFixed + 3 * (kBStageBytes + kBRowBytes) <= 227 * 1024 ? 3 : 2;
#else
constexpr int kBStages = FA4_SM90_BWD_STAGES;
#endif
constexpr int kBSmemBytes = kBFixed + kBStages * (kBStageBytes + kBRowBytes);

/* dQ = dS K: with two panels of head dim each consumer warpgroup takes one (N = 64); with one,
 * warpgroup 0 takes it alone. */
constexpr int kBDqN = 64;
constexpr int kBDqWgs = kDp / 64;

static_assert(kDp <= 128 && kDvp <= 128, "the sm90 backward keeps dK, dV in registers: head dims up to 128");
static_assert(kBDqWgs == 1 || kBDqWgs == 2, "dQ is split over at most the two consumer warpgroups");
static_assert(kBSmemBytes <= 227 * 1024, "shared memory over the sm_90 limit");
#if FA4_SM90_BWD_SPLIT_BULK
static_assert(8 * 16 * kBSplitRowBytes <= kBStages * kBStageBytes && kDp <= 128 && kDvp <= 128,
              "the split epilogue's rows in the Q / dO ring");
#endif
static_assert(kBProducerRegs + 2 * kBConsumerRegs <= 3 * kBLaunchRegs && kBLaunchRegs * kBThreads <= 65536,
              "setmaxnreg must stay inside the CTA's registers");
static_assert(kBM % 16 == 0 && kBN == 2 * kBWgKeys, "tile shape");
static_assert(kBM == 64 || (kBM == 80 && kDp == 128 && kDvp == 128), "80-query steps: padded D = Dv = 128 only");

/* the rotated walks' turn constants, from bar_kv() (fa4_bwd_smem::dq_rot; bwd_producer.cuh) */
constexpr unsigned kBDqRotOff = 304;

/* Shared-memory map, from the 1024-byte aligned base. */
struct fa4_bwd_smem {
    unsigned base;
    __device__ __forceinline__ unsigned k() const { return base; }
    __device__ __forceinline__ unsigned v() const { return base + kBKBytes; }
    __device__ __forceinline__ unsigned ds(int buf) const { return base + kBKBytes + kBVBytes + buf * kBDsBytes; }
    __device__ __forceinline__ unsigned dqs(int wg) const
    {
        return base + kBKBytes + kBVBytes + 2 * kBDsBytes + wg * kBDqBytes;
    }
    __device__ __forceinline__ unsigned q(int s) const
    {
        return base + kBKBytes + kBVBytes + 2 * kBDsBytes + (kDp / 64) * kBDqBytes + s * kBStageBytes;
    }
    __device__ __forceinline__ unsigned dout(int s) const { return q(s) + kBQBytes; }
    __device__ __forceinline__ unsigned rows(int s) const /* lse2[kBM] then dpsum[kBM] */
    {
        return q(0) + kBStages * kBStageBytes + s * kBRowBytes;
    }
    /* mbarriers, 8 bytes each: K+V full, then per stage full, empty */
    __device__ __forceinline__ unsigned bar_kv() const
    {
        return q(0) + kBStages * (kBStageBytes + kBRowBytes);
    }
    __device__ __forceinline__ unsigned bar_full(int s) const { return bar_kv() + 8u * (1u + (unsigned)s); }
    __device__ __forceinline__ unsigned bar_empty(int s) const
    {
        return bar_kv() + 8u * (1u + kBStages + (unsigned)s);
    }
    /* deterministic dQ: the turn counter a dQ warpgroup's issuer still has to pass on (0: none) */
    __device__ __forceinline__ unsigned dq_pending(int wg) const { return bar_kv() + 256u + 8u * (unsigned)wg; }
    /* deterministic dQ: 1 when the issuer saw this step's turn in the S/dP window (FA4_SM90_BWD_DQ_PEEK) */
    __device__ __forceinline__ unsigned dq_seen(int wg) const { return bar_kv() + 272u + 4u * (unsigned)wg; }
    /* deterministic dQ with a block mask: the walk-table word of the step in stage s, left by the
     * producer, and what a dQ warpgroup's issuer adds to its turn (bwd_consumer.cuh dq_turn) */
    __device__ __forceinline__ unsigned dq_turn(int s) const { return bar_kv() + 280u + 4u * (unsigned)s; }
    __device__ __forceinline__ unsigned dq_turn_add(int wg) const { return bar_kv() + 292u + 4u * (unsigned)wg; }
    /* deterministic dense walks rotated (p.deterministic > 1): the constants of the CTA's turns
     * (bwd_schedule.cuh fa4_bwd_rot_turn; 5 ints) */
    __device__ __forceinline__ unsigned dq_rot() const { return bar_kv() + kBDqRotOff; }
    /* FA4_SM90_BWD_DQ_FUSED (bwd_consumer.cuh dq_fused_end): the number of half tiles to convert */
    __device__ __forceinline__ unsigned dq_fused_n() const { return bar_kv() + 360u; }
    /* FA4_SM90_BWD_PERSIST (bwd_main.cu): "K / V read" (every consumer warp's last step of its item
     * complete; 8 arrivals), and the item whose K / V bar_kv() announces (~0u: none left) */
    __device__ __forceinline__ unsigned bar_kv_empty() const { return bar_kv() + 56u; }
    __device__ __forceinline__ unsigned persist_item() const { return bar_kv() + 368u; }
    /* FA4_SM90_BWD_DQ_LAG (bwd_consumer.cuh): mbarriers of dS buffer buf, "both halves stored"
     * (ds_full) and "every dQ that reads it has completed" (ds_empty) */
    __device__ __forceinline__ unsigned bar_ds_full(int buf) const { return bar_kv() + 64u + 8u * (unsigned)buf; }
    __device__ __forceinline__ unsigned bar_ds_empty(int buf) const { return bar_kv() + 80u + 8u * (unsigned)buf; }
    /* deterministic dQ with FA4_SM90_BWD_TURN_AGENT (bwd_consumer.cuh): per dQ warpgroup, the
     * mbarriers "post" (its issuer handed a step over) and "go" (the agent saw the step's turn), and
     * the post's words {turn counter to pass on (u64), the step's counter (u64), the step's turn}
     * at a 16-byte boundary (one v2.u64 store and load: 24-byte strides raised
     * CUDA_ERROR_MISALIGNED_ADDRESS) */
    __device__ __forceinline__ unsigned bar_turn_post(int wg) const { return bar_kv() + 96u + 8u * (unsigned)wg; }
    __device__ __forceinline__ unsigned bar_turn_go(int wg) const { return bar_kv() + 112u + 8u * (unsigned)wg; }
    __device__ __forceinline__ unsigned turn_post(int wg) const { return bar_kv() + 128u + 32u * (unsigned)wg; }
#if FA4_SM90_BWD_AUX_WIN
    /* trainable read site k: {first index, entries n, copies - 1, window address} in the header,
     * then its fp32 entries (copy c of entry j at c n + j) */
    __device__ __forceinline__ unsigned aux_hdr(int k) const { return bar_kv() + 512u + 16u * (unsigned)k; }
    /* consumer warp w's (0..7) band scratch: its arrays for j = 0, 1, zero between steps */
    __device__ __forceinline__ unsigned aux_scr(int w) const
    {
        return bar_kv() + 512u + 1024u + 2u * (unsigned)kBAuxScrJBytes * (unsigned)w;
    }
    __device__ __forceinline__ unsigned aux_win(int k) const
    {
        return bar_kv() + 512u + (unsigned)kBAuxHdrBytes + 4u * (unsigned)(k * kBAuxSiteEntries);
    }
#endif
};
static_assert(8 * (1 + 2 * 3) <= 56 && 80 + 2 * 8 <= 96 && 112 + 2 * 8 <= 128 && 128 + 2 * 32 <= 256 &&
                  280 + 4 * 3 <= 292 && 292 + 2 * 4 <= 304 &&
                  kBDqRotOff == 304 && 304 + 5 * 4 <= 360 && 360 + 4 <= 368 && 368 + 4 <= 512,
              "barrier space");

/* A stage is full when the producer's expect_tx arrival saw Q, dO, lse2 and dpsum land; it is
 * empty when every consumer warp (8) let go. */
constexpr unsigned kBFullArrivals = 1, kBEmptyArrivals = 8;

#endif /* FA4_SM90_BWD_CONFIG_CUH */
