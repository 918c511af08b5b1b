/*
 * bwd256.cuh - the sm90 backward main program for padded head dims D = Dv = 256 (included by
 * bwd_main.cu in place of its D <= 128 kernel; same kernel name, parameters and workspace). At
 * D 256 the D 128 plan does not fit: dK + dV of 64 keys are 2 x 64 x 256 fp32 per warpgroup (the
 * registers hold half of that) and K + V of 128 keys fill 128 KB of shared memory. So here:
 *   a CTA holds kBN = 64 keys of one (batch, kv head), K and V resident (64 KB);
 *   warpgroup 0 the producer (one thread: Q, dO, lse2, dpsum of kBM = 64 query rows per step into
 *   a 2-stage ring, as bwd_main.cu's);
 *   warpgroups 1 and 2 the consumers. Each owns all 64 keys' dK and dV over its half of the head
 *   dim (64 keys x 128 columns of each, 128 registers), and per step computes S = Q K^T and
 *   dP = dO V^T for its 32 of the 64 keys (not transposed: queries are the wgmma M, 64), P and dS
 *   from them, and stores P^T and dS^T ([key][query], 128-byte swizzle) into shared memory
 *   (double-buffered by step parity). After a barrier of both consumers it issues
 *     dQ[:, its 128 columns] = dS K      SS-wgmma, dS read M-major from the dS^T tile;
 *     dV += P^T dO, dK += dS^T Q         SS-wgmma over its 128 columns;
 *   and adds dQ into the fp32 workspace with vector reductions from registers (no room is left
 *   for a staging tile: 2 x 32 KB at this width), overlapping dV, dK.
 * Deterministic mode (p.dq_sem): each (head, query tile, column half) adds in key-tile order on
 * the turn counters bwd_main.cu's kernel uses (zeroed by bwd_pre), passed on after every thread's
 * reductions; with a block mask the turns come from the walk table of fa4_sm90_bwd_rank
 * (bwd_rank.cuh, counting 64-key tiles here), the producer leaving each step's word next to its
 * stage as bwd_main.cu's does.
 * Trainable aux: the gradient terms P (dP - dpsum) d mod / d aux[i] are summed per run of equal
 * indices in registers (the mod emitter's run accumulators, one pass after S and dP), each run a
 * global atomic: no room for bwd_main.cu's shared-memory window.
 * Not here (the launcher runs the sm80 backward instead): checked builds, padded D 192.
 * Block masks need kv_block a multiple of 64 and q_block a multiple of 64 (a CTA's keys in one
 * kv block). The host mirrors kBN, kBM, kBThreads and kBSmemBytes (path_sm90.c, bwd256_smem).
 */
#ifndef FA4_SM90_BWD256_CUH
#define FA4_SM90_BWD256_CUH

#include "sm90/bwd256_wgmma.cuh"

constexpr int kBN = 64;      /* keys per CTA */
constexpr int kBM = 64;      /* query rows per step */
constexpr int kBWgKeys = 32; /* keys of S / dP per consumer warpgroup */
constexpr int kBWgCols = 128; /* dK / dV / dQ columns per consumer warpgroup */
constexpr int kBThreads = 384;
constexpr int kBLaunchRegs = 168;
constexpr int kBProducerRegs = 24;
constexpr int kBConsumerRegs = 240;
constexpr int kBStages = 2;

constexpr int kBKBytes = kBN * kDp * 2;
constexpr int kBVBytes = kBN * kDvp * 2;
constexpr int kBQBytes = kBM * kDp * 2;
constexpr int kBDoBytes = kBM * kDvp * 2;
constexpr int kBPBytes = kBN * kBM * 2; /* P^T or dS^T of one step: one panel of 64 keys */
constexpr int kBRowBytes = 2 * kBM * 4; /* lse2 and dpsum of one step */
constexpr int kBStageBytes = kBQBytes + kBDoBytes;
constexpr int kBSmemBytes = 1024 + kBKBytes + kBVBytes + kBStages * (kBStageBytes + kBRowBytes) + 4 * kBPBytes + 512;

static_assert(kDp == 256 && kDvp == 256, "bwd256.cuh: padded head dims of 256");
static_assert(kBSmemBytes <= 227 * 1024, "shared memory over the sm_90 limit");
static_assert(kBProducerRegs + 2 * kBConsumerRegs <= 3 * kBLaunchRegs, "setmaxnreg inside the CTA's registers");

/* FA4_B256_REL 1: where score_mod is score + g(kv_idx - q_idx) (FA4_SCORE_MOD_REL, emit_rel.c; with
 * trainable reads through fa4_score_mod_rel_sites, emit_deriv.c), probs() and grads_aux() evaluate
 * g once per offset of a thread's fragment: its element (c, 2 + j) (query row qr + 8, key
 * 8c + 2t + j) has the offset of its element (c - 1, j) (row qr, key 8c - 8 + 2t + j), so 10 of
 * its 16 elements instead of the dual form at all 16 (twice with trainable reads). 0: as before
 * (A/B runs). */
#ifndef FA4_B256_REL
#if FA4_HAS_SCORE_MOD && defined(FA4_SCORE_MOD_REL) && FA4_SCORE_MOD_REL && \
    (!(FA4_HAS_TRAINABLE_AUX && FA4_NUM_AUX_GRAD_SITES > 0) || (defined(FA4_SCORE_MOD_REL_SITES) && FA4_SCORE_MOD_REL_SITES))
#define FA4_B256_REL 1
#else
#define FA4_B256_REL 0
#endif
#endif

/* Trainable read sites: the one-pass score stage with the aux-gradient terms (grads_aux). */
#if FA4_HAS_TRAINABLE_AUX && FA4_NUM_AUX_GRAD_SITES > 0
#define FA4_B256_AUX_GRAD 1
#else
#define FA4_B256_AUX_GRAD 0
#endif

/* 1: tiles inside the sequence (and, with a mask_mod, inside a full block) skip every check;
 * 0 in the spill fallback (FA4_SM90_BWD_FALLBACK, path_sm90.c). */
#ifndef FA4_SM90_BWD_FAST_TILES
#if defined(FA4_SM90_BWD_FALLBACK) && FA4_SM90_BWD_FALLBACK
#define FA4_SM90_BWD_FAST_TILES 0
#else
#define FA4_SM90_BWD_FAST_TILES 1
#endif
#endif

/* How dQ goes into the fp32 workspace (a compile-time A/B knob; the launcher sets it per compile
 * from FA4JIT_SM90_BWD256_DQ=red|tma|tma2, path_sm90.c):
 *   0: vector reductions from registers (red.global.add.v2.f32) while dV / dK run;
 *   1 (default since 2026-12-02: H200 B4 H16 S4096 bf16 bwd, plain 301 -> 368 TFLOP/s, causal
 *      264 -> 333, same call): TMA bulk tensor reduce-adds (the D 128 kernel's tm_dq map, boxes of 64 rows x 32 fp32 in
 *      the 128-byte swizzle) from a staging tile in the step's own Q / dO stage: once a warpgroup's
 *      dV / dK wgmmas are complete, its column half of Q(s) and dO(s) (panels 2 cw, 2 cw + 1 of
 *      each: 4 x 8 KB, only its own dV / dK read them, the S / dP wgmmas of both warpgroups are
 *      complete since the step's barrier) is dead, exactly its 64 x 128 fp32 of dQ. The issuer
 *      (warp 0, lane 0) holds back its release of the stage until the reduce-adds have read it,
 *      which it waits for in the next step, after that step's S / dP issue;
 *   2: as 1, with dQ, dV and dK in three commit groups: dQ's first 64 columns go into the dO
 *      panels (and out) while dK still runs, the other 64 into the Q panels after it. */
/* FA4_SM90_BWD256_DESC_ADD (session 23; default 0: measured 4-7% slower, H100 2026-12-06,
 * bench/results/2026-12-06-h100-s24-pending.txt): this kernel's wgmma
 * descriptors as the D <= 128 backward's under FA4_SM90_DESC_ADD (ptx90.cuh: a stage's descriptor
 * made once, each k step's by fa4_desc_add; cw broadcast from lane 0); 0: fa4_desc_sw128 at every
 * k step, the build before. */
#ifndef FA4_SM90_BWD256_DESC_ADD
#define FA4_SM90_BWD256_DESC_ADD 0
#endif
#define FA4_B256_DESC fa4_desc_sw128_at<FA4_SM90_BWD256_DESC_ADD != 0>

#ifndef FA4_SM90_BWD256_DQ_TMA
#define FA4_SM90_BWD256_DQ_TMA 1
#endif
/* Deterministic dQ (p.dq_sem) under FA4_SM90_BWD256_DQ_TMA 1 or 2: who does the gpu-scope half of
 * each turn. Modes 1 and 2 compile without spills (NVRTC 13, every shipped mod at D 256 bf16 /
 * fp16, ptxas's own report). Measured once, on a build that also held helper det80bm's changes
 * to the shared headers (main 2ab4fb0, reverted after: its default mode was slower): H200,
 * 2026-12-03 08:31 UTC, B4 H16 S4096 D256 bf16, deterministic backward 340.9 TFLOP/s with mode 2
 * and 319.9 with mode 1, against 363.5-379.9 in the default (non-deterministic) mode and 243.8 for
 * mode 0 (session 11); causal (block mask) 262.1 (mode 2) / 210.2 (mode 1). Checked on main a7e2cbe
 * (H200, 2026-12-03 11:12 UTC, one call, two rounds each, B4 H16 S4096 D256 bf16, kernels copied
 * with only this default changed): deterministic plain 242.2 / 240.6 TFLOP/s with mode 0 against
 * 334.7 / 338.6 with mode 2 (+39%), deterministic causal (block mask) 182.1 / 182.1 against 263.6 /
 * 263.9 (+45%); the default (non-deterministic) mode unchanged within noise (plain 378.3 / 370.7
 * against 363.7 / 375.2, causal 340.1 / 338.9 against 339.3 / 339.7); `--no-bench --filter d256`
 * 27 / 27 and `--filter determ` 38 / 38 with mode 2. So 2 is the default; deterministic D 256 is
 * then 9% (plain) and 22% (causal) below the default mode.
 *   1: the turn agent of bwd_main.cu's kernel (fa4_bwd_turn_agent, bwd_common.cuh): per
 *      consumer warpgroup an otherwise idle thread of the producer's warpgroup (warp 1 + cw, lane
 *      0) releases the turn (red.release.gpu) and polls for the step's (ld.acquire.gpu). The issuer,
 *      in the next step's S / dP window (where it already waited for the reduce-adds' reads to
 *      release the stage), waits for them to complete instead, fence.proxy.async.global, and posts
 *      {turn counter to pass on, this step's counter, this step's turn} to the agent (mbarrier
 *      "post"); at the dQ write it waits for the agent's "go", fence.proxy.async.global, then the
 *      reduce-adds. The memory-model argument is bwd_consumer.cuh's (above FA4_SM90_BWD_TURN_AGENT):
 *      the same chain of release / acquire at cta and gpu scope.
 *   2 (default): the agent also issues the reduce-adds: at the dQ write the issuer only leaves {counter,
 *      turn, workspace row} by the step's parity and arrives on "post" (one of two by parity);
 *      the agent polls for the turn, issues the step's boxes from the staging tile, releases the
 *      stage once they have read it (the stage's eighth arrival, in place of the issuer's), waits
 *      for their completion and releases the turn (fa4_b256_dq_agent). Nothing of a turn is left
 *      in the consumer warpgroups. Needs FA4_SM90_BWD256_DQ_TMA 1 (2 runs mode 1).
 *   0: the issuer polls before the reduce-adds and, after the step's last one, waits for their
 *      completion and releases the counter itself, all on its warpgroup's critical path (the
 *      warps wait for it at the next wgmma); the register path (FA4_SM90_BWD256_DQ_TMA 0) always
 *      does this (every thread's reductions, then a fence each). */
#ifndef FA4_SM90_BWD256_TURN_AGENT
#define FA4_SM90_BWD256_TURN_AGENT 2
#endif
#if !FA4_SM90_BWD256_DQ_TMA
#undef FA4_SM90_BWD256_TURN_AGENT
#define FA4_SM90_BWD256_TURN_AGENT 0
#elif FA4_SM90_BWD256_DQ_TMA == 2 && FA4_SM90_BWD256_TURN_AGENT == 2
#undef FA4_SM90_BWD256_TURN_AGENT
#define FA4_SM90_BWD256_TURN_AGENT 1
#endif

#if FA4_SM90_BWD256_DQ_TMA
static_assert(kBStages == 2, "the deferred stage release takes the previous step's stage as s ^ 1");
static_assert(kBM * kPanelBytes == kBM * 32 * 4, "a Q / dO panel holds one dQ box (64 rows x 32 fp32)");
#endif

#include "sm90/bwd_common.cuh"

/* Shared-memory map, from the 1024-byte aligned base (the method names as bwd_config.cuh's, for
 * bwd_schedule.cuh's walk). */
struct fa4_bwd_smem {
    unsigned base;
    __device__ __forceinline__ unsigned k() const { return base; }
    __device__ __forceinline__ unsigned v() const { return base + kBKBytes; }
    __device__ __forceinline__ unsigned q(int s) const { return base + kBKBytes + kBVBytes + s * kBStageBytes; }
    __device__ __forceinline__ unsigned dout(int s) const { return q(s) + kBQBytes; }
    __device__ __forceinline__ unsigned pt(int buf) const { return q(0) + kBStages * kBStageBytes + buf * kBPBytes; }
    __device__ __forceinline__ unsigned dst(int buf) const { return pt(2) + buf * kBPBytes; }
    __device__ __forceinline__ unsigned rows(int s) const /* lse2[kBM] then dpsum[kBM] */
    {
        return pt(4) + s * kBRowBytes;
    }
    __device__ __forceinline__ unsigned bar_kv() const { return rows(0) + kBStages * kBRowBytes; }
    __device__ __forceinline__ unsigned bar_full(int s) const { return bar_kv() + 8u * (1u + (unsigned)s); }
    __device__ __forceinline__ unsigned bar_empty(int s) const
    {
        return bar_kv() + 8u * (1u + kBStages + (unsigned)s);
    }
    /* deterministic with a block mask: the walk-table word of the step in stage s, left by the
     * producer before the stage's expect_tx arrival */
    __device__ __forceinline__ unsigned dq_turn(int s) const { return bar_kv() + 64u + 4u * (unsigned)s; }
    /* deterministic with FA4_SM90_BWD256_TURN_AGENT, at bwd_config.cuh's offsets: per consumer
     * warpgroup the mbarriers "post" and "go", the post's words {counter to pass on (u64), the
     * step's counter (u64), the step's turn} (16-byte aligned), and the counter its issuer still
     * has to pass on (0: none) */
    __device__ __forceinline__ unsigned bar_turn_post(int wg) const { return bar_kv() + 96u + 8u * (unsigned)wg; }
    __device__ __forceinline__ unsigned bar_turn_go(int wg) const { return bar_kv() + 112u + 8u * (unsigned)wg; }
    __device__ __forceinline__ unsigned turn_post(int wg) const { return bar_kv() + 128u + 32u * (unsigned)wg; }
    __device__ __forceinline__ unsigned dq_pending(int wg) const { return bar_kv() + 256u + 8u * (unsigned)wg; }
    /* FA4_SM90_BWD256_TURN_AGENT 2: "post" of warpgroup wg for steps of parity par, and its words
     * {counter (u64, 0: the walk is over), turn, workspace row} */
    __device__ __forceinline__ unsigned bar_add_post(int wg, int par) const
    {
        return bar_kv() + 96u + 8u * (unsigned)(2 * wg + par);
    }
    __device__ __forceinline__ unsigned add_post(int wg, int par) const
    {
        return bar_kv() + 128u + 32u * (unsigned)wg + 16u * (unsigned)par;
    }
    /* the dQ staging box b (of 32 fp32 columns) of warpgroup wg in stage s: boxes 0, 1 in its dO
     * panels, 2, 3 in its Q panels (see FA4_SM90_BWD256_DQ_TMA) */
    __device__ __forceinline__ unsigned dq_box(int s, int wg, int box) const
    {
        return (box < 2 ? dout(s) : q(s)) + (2 * wg + (box & 1)) * kBM * kPanelBytes;
    }
};
static_assert(8 * (1 + 2 * kBStages) <= 64 && 64 + 4 * kBStages <= 96 && 128 + 2 * 32 <= 256 && 256 + 2 * 8 <= 512,
              "barrier space (512 bytes from bar_kv)");
constexpr unsigned kBFullArrivals = 1, kBEmptyArrivals = 8;

/* the producer always leaves the walk-table word by its stage here (no register cost to avoid) */
#define FA4_SM90_BWD_TURN_SLOT 1
#include "sm90/bwd_schedule.cuh"
#include "sm90/bwd_rank.cuh"

__device__ __forceinline__ void fa4_aux_grad_commit(int k, float *grad, int i, float v)
{
    (void)k;
    FA4_AUX_GRAD_GLOBAL(grad, i, v);
}

/* Generic-proxy shared stores (stmatrix) made visible to the async proxy (wgmma reads). */
__device__ __forceinline__ void fa4_b256_fence_async_smem(void)
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

/* One fp32 of a step's lse2 / dpsum rows (after the stage's mbarrier wait: volatile, in order). */
__device__ __forceinline__ float fa4_b256_lds(unsigned addr)
{
    float x;
    asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(x) : "r"(addr) : "memory");
    return x;
}

/* Four 8x8 16-bit matrices stored transposed (lane 8i+j: address of memory row j of matrix i). */
__device__ __forceinline__ void fa4_b256_stsm_x4_t(unsigned addr, unsigned r0, unsigned r1, unsigned r2, unsigned r3)
{
    asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(r0),
                 "r"(r1), "r"(r2), "r"(r3)
                 : "memory");
}

struct fa4_b256_consumer {
    const fa4_params &p;
    const fa4_aux &aux;
    fa4_bwd_smem sm;
    int b, cw, warp, lane;
    int n0, len_q, len_k, n_tile, wrow0;
    int turn_add; /* deterministic with a block mask: n_tile % (kv_block / kBN), the key tile's place
                     in its kv block, added to the walk table's turn */
#if FA4_SM90_BWD256_DQ_TMA
    const fa4_tmap *tm_dq; /* dq_accum as [hq * ws_rows][d] fp32, boxes of kBM x 32 */
#endif

    /* S = Q K^T and dP = dO V^T over this warpgroup's 32 keys (two commit groups). */
    __device__ __forceinline__ void issue_s_dp(float (&sc)[4][4], float (&dp)[4][4], int s) const
    {
        const unsigned krows = cw * kBWgKeys * kPanelBytes;
#pragma unroll
        for (int kk = 0; kk < kD / 16; ++kk) {
            const unsigned long long da =
                FA4_B256_DESC(sm.q(s), (kk / 4) * kBM * kPanelBytes + (kk % 4) * 32, 16, 1024);
            const unsigned long long db =
                FA4_B256_DESC(sm.k() + krows, (kk / 4) * kBN * kPanelBytes + (kk % 4) * 32, 16, 1024);
            fa4_b256_wgmma_ss<32, 0, 0>(sc, da, db, kk > 0);
        }
        fa4_wgmma_commit();
#pragma unroll
        for (int kk = 0; kk < kDv / 16; ++kk) {
            const unsigned long long da =
                FA4_B256_DESC(sm.dout(s), (kk / 4) * kBM * kPanelBytes + (kk % 4) * 32, 16, 1024);
            const unsigned long long db =
                FA4_B256_DESC(sm.v() + krows, (kk / 4) * kBN * kPanelBytes + (kk % 4) * 32, 16, 1024);
            fa4_b256_wgmma_ss<32, 0, 0>(dp, da, db, kk > 0);
        }
        fa4_wgmma_commit();
    }

    /* dQ[:, 128 cw ..] = dS K (one commit group): A = dS, M-major from the dS^T tile. */
    __device__ __forceinline__ void issue_dq(float (&dq)[16][4], int buf) const
    {
#pragma unroll
        for (int kk = 0; kk < kBN / 16; ++kk) {
            const unsigned long long da = FA4_B256_DESC(sm.dst(buf), kk * 16 * kPanelBytes, kBN * kPanelBytes, 1024);
            const unsigned long long db = FA4_B256_DESC(sm.k() + 2 * cw * kBN * kPanelBytes, kk * 16 * kPanelBytes,
                                                        kBN * kPanelBytes, 1024);
            fa4_b256_wgmma_ss<128, 1, 1>(dq, da, db, kk > 0);
        }
        fa4_wgmma_commit();
    }

    /* dV += P^T dO, dK += dS^T Q over this warpgroup's 128 columns (one commit group). */
    __device__ __forceinline__ void issue_dkv(float (&dk)[16][4], float (&dv)[16][4], int s, int buf) const
    {
#pragma unroll
        for (int kk = 0; kk < kBM / 16; ++kk)
            fa4_b256_wgmma_ss<128, 0, 1>(
                dv, FA4_B256_DESC(sm.pt(buf), kk * 32, 16, 1024),
                FA4_B256_DESC(sm.dout(s) + 2 * cw * kBM * kPanelBytes, kk * 16 * kPanelBytes, kBM * kPanelBytes, 1024),
                1);
#pragma unroll
        for (int kk = 0; kk < kBM / 16; ++kk)
            fa4_b256_wgmma_ss<128, 0, 1>(
                dk, FA4_B256_DESC(sm.dst(buf), kk * 32, 16, 1024),
                FA4_B256_DESC(sm.q(s) + 2 * cw * kBM * kPanelBytes, kk * 16 * kPanelBytes, kBM * kPanelBytes, 1024),
                1);
        fa4_wgmma_commit();
    }

#if FA4_SM90_BWD256_DQ_TMA == 2
    /* dV += P^T dO, then dK += dS^T Q, each its own commit group. */
    __device__ __forceinline__ void issue_dv(float (&dv)[16][4], int s, int buf) const
    {
#pragma unroll
        for (int kk = 0; kk < kBM / 16; ++kk)
            fa4_b256_wgmma_ss<128, 0, 1>(
                dv, FA4_B256_DESC(sm.pt(buf), kk * 32, 16, 1024),
                FA4_B256_DESC(sm.dout(s) + 2 * cw * kBM * kPanelBytes, kk * 16 * kPanelBytes, kBM * kPanelBytes, 1024),
                1);
        fa4_wgmma_commit();
    }
    __device__ __forceinline__ void issue_dk(float (&dk)[16][4], int s, int buf) const
    {
#pragma unroll
        for (int kk = 0; kk < kBM / 16; ++kk)
            fa4_b256_wgmma_ss<128, 0, 1>(
                dk, FA4_B256_DESC(sm.dst(buf), kk * 32, 16, 1024),
                FA4_B256_DESC(sm.q(s) + 2 * cw * kBM * kPanelBytes, kk * 16 * kPanelBytes, kBM * kPanelBytes, 1024),
                1);
        fa4_wgmma_commit();
    }
#endif

    /* A [query][key] fragment (this warp's 16 queries x the warpgroup's 32 keys, packed pairs:
     * x[c][0] rows g, x[c][1] rows g + 8 of key chunk c) into a [key][query] tile. */
    __device__ __forceinline__ void store_t(unsigned tile, const unsigned (&x)[4][2]) const
    {
        const int i = lane >> 3, j = lane & 7;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int key = cw * kBWgKeys + 8 * (2 * h + (i >> 1)) + j;
            const int qc = warp * 2 + (i & 1);
            fa4_b256_stsm_x4_t(tile + key * kPanelBytes + ((qc ^ (key & 7)) << 4), x[2 * h][0], x[2 * h][1],
                               x[2 * h + 1][0], x[2 * h + 1][1]);
        }
    }

    /* First pass (S complete): P, stored as P^T; sc becomes P d score_mod / d score (0 outside the
     * mask), dS's factor. */
    template <bool kCheck>
    __device__ __forceinline__ void probs(float (&sc)[4][4], int s, int h, int m0, bool full, int buf) const
    {
        const int g = lane >> 2, t = lane & 3;
#if FA4_HAS_SCORE_MOD && !(FA4_B256_REL && !FA4_B256_AUX_GRAD)
        const fa4_sm90_pre pre = fa4_sm90_prescale(p, b, h, aux);
#endif
        const int qr = warp * 16 + g;
        const float l2[2] = {fa4_b256_lds(sm.rows(s) + qr * 4), fa4_b256_lds(sm.rows(s) + (qr + 8) * 4)};
#if !FA4_HAS_SCORE_MOD
        const float k2 = p.scale * FA4_LOG2E;
#endif
        unsigned pk[4][2];
#if FA4_HAS_SCORE_MOD && FA4_B256_REL && !FA4_B256_AUX_GRAD
        /* g of chunk c's second row (e = 2 + j), carried from chunk c - 1's first row */
        const fa4_score_uniform su = fa4_score_mod_uniform(b, h, aux);
        const int qa = (int)(m0 + qr + p.q_offset), ka = (int)(n0 + cw * kBWgKeys + 2 * t + p.kv_offset);
        float gc[2], gn[2];
#pragma unroll
        for (int j = 0; j < 2; ++j)
            gc[j] = fa4_score_mod_rel(b, h, qa + 8, ka + j, aux, su);
#endif
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            float pr[4];
#if FA4_HAS_SCORE_MOD && FA4_B256_REL && !FA4_B256_AUX_GRAD
#pragma unroll
            for (int j = 0; j < 2; ++j)
                gn[j] = fa4_score_mod_rel(b, h, qa, ka + 8 * c + j, aux, su);
#endif
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int qi = m0 + qr + (e >= 2 ? 8 : 0);
                const int ki = n0 + cw * kBWgKeys + 8 * c + 2 * t + (e & 1);
                bool ok = true;
                if (kCheck) {
#if FA4_HAS_MASK_MOD
                    ok = !(qi >= len_q || ki >= len_k) &
                         (full | fa4_mask_mod(b, h, (int)(qi + p.q_offset), (int)(ki + p.kv_offset), aux));
#else
                    ok = !(qi >= len_q || ki >= len_k);
#endif
                }
#if FA4_HAS_SCORE_MOD && FA4_B256_REL && !FA4_B256_AUX_GRAD
                const float x = sc[c][e] * p.scale + (e >= 2 ? gc[e & 1] : gn[e & 1]);
                const float pv = ok ? fa4_exp2(fmaf(x, FA4_LOG2E, -l2[e >> 1])) : 0.f;
                sc[c][e] = pv; /* d score_mod / d score = 1 */
                pr[e] = pv;
#elif FA4_HAS_SCORE_MOD
                float dmod = 1.f;
                const float x = fa4_sm90_mod_deriv(sc[c][e], pre, b, h, (int)(qi + p.q_offset),
                                                   (int)(ki + p.kv_offset), aux, &dmod);
                const float pv = ok ? fa4_exp2(fmaf(x, FA4_LOG2E, -l2[e >> 1])) : 0.f;
                sc[c][e] = ok ? pv * dmod : 0.f;
                pr[e] = pv;
#else
                const float pv = ok ? fa4_exp2(fmaf(sc[c][e], k2, -l2[e >> 1])) : 0.f;
                sc[c][e] = pv;
                pr[e] = pv;
#endif
            }
#if FA4_HAS_SCORE_MOD && FA4_B256_REL && !FA4_B256_AUX_GRAD
            gc[0] = gn[0];
            gc[1] = gn[1];
#endif
            pk[c][0] = fa4_pack2(pr[0], pr[1]);
            pk[c][1] = fa4_pack2(pr[2], pr[3]);
            asm volatile("" : "+r"(pk[c][0]), "+r"(pk[c][1]), "+f"(sc[c][0]), "+f"(sc[c][1]), "+f"(sc[c][2]),
                         "+f"(sc[c][3])::"memory");
        }
        store_t(sm.pt(buf), pk);
    }

    /* Second pass (dP complete): dS = sc (dP - dpsum), stored as dS^T. Rows past the sequence
     * read whatever follows in the workspace as dpsum: kCheck zeroes it there. */
    template <bool kCheck>
    __device__ __forceinline__ void dsgrads(const float (&sc)[4][4], const float (&dp)[4][4], int s, int m0,
                                            int buf) const
    {
        const int g = lane >> 2;
        const int qr = warp * 16 + g;
        float dps[2] = {fa4_b256_lds(sm.rows(s) + (kBM + qr) * 4), fa4_b256_lds(sm.rows(s) + (kBM + qr + 8) * 4)};
        if (kCheck) {
            dps[0] = m0 + qr < len_q ? dps[0] : 0.f;
            dps[1] = m0 + qr + 8 < len_q ? dps[1] : 0.f;
        }
        unsigned pk[4][2];
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            pk[c][0] = fa4_pack2(sc[c][0] * (dp[c][0] - dps[0]), sc[c][1] * (dp[c][1] - dps[0]));
            pk[c][1] = fa4_pack2(sc[c][2] * (dp[c][2] - dps[1]), sc[c][3] * (dp[c][3] - dps[1]));
        }
        store_t(sm.dst(buf), pk);
    }

#if FA4_B256_AUX_GRAD
    /* Trainable aux, one pass after S and dP: P^T and dS^T as probs() + dsgrads(), and the terms
     * P (dP - dpsum) d mod / d aux[i] into the runs of equal indices (the index from the pass that
     * computes the value), each finished run a global atomic, the rest per warp at the end. */
    template <bool kCheck>
    __device__ __forceinline__ void grads_aux(const float (&sc)[4][4], const float (&dp)[4][4], int s, int h, int m0,
                                              bool full, int buf) const
    {
        const int g = lane >> 2, t = lane & 3;
        const int qr = warp * 16 + g;
        const float l2[2] = {fa4_b256_lds(sm.rows(s) + qr * 4), fa4_b256_lds(sm.rows(s) + (qr + 8) * 4)};
        float dps[2] = {fa4_b256_lds(sm.rows(s) + (kBM + qr) * 4), fa4_b256_lds(sm.rows(s) + (kBM + qr + 8) * 4)};
        if (kCheck) {
            dps[0] = m0 + qr < len_q ? dps[0] : 0.f;
            dps[1] = m0 + qr + 8 < len_q ? dps[1] : 0.f;
        }
        fa4_aux_grad_acc acc;
        fa4_aux_grad_begin(acc);
        unsigned pk[4][2], dk2[4][2];
#if FA4_B256_REL
        /* chunk c's second-row offsets (e = 2 + j), carried from chunk c - 1's first row: g, the
         * sites' indices and coefficients, and chunk c - 1's dS there (one term per offset) */
        const int qa = (int)(m0 + qr + p.q_offset), ka = (int)(n0 + cw * kBWgKeys + 2 * t + p.kv_offset);
        float gc[2], dc[2] = {0.f, 0.f};
        int ic[2][FA4_NUM_AUX_GRAD_SITES];
        float cc[2][FA4_NUM_AUX_GRAD_SITES];
#pragma unroll
        for (int j = 0; j < 2; ++j)
            gc[j] = fa4_score_mod_rel_sites(b, h, qa + 8, ka + j, aux, ic[j], cc[j]);
#endif
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            float pr[4], ds[4];
#if FA4_B256_REL
            float gn[2];
            int in[2][FA4_NUM_AUX_GRAD_SITES];
            float cn[2][FA4_NUM_AUX_GRAD_SITES];
#pragma unroll
            for (int j = 0; j < 2; ++j)
                gn[j] = fa4_score_mod_rel_sites(b, h, qa, ka + 8 * c + j, aux, in[j], cn[j]);
#endif
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int qi = m0 + qr + (e >= 2 ? 8 : 0);
                const int ki = n0 + cw * kBWgKeys + 8 * c + 2 * t + (e & 1);
                bool ok = true;
                if (kCheck) {
#if FA4_HAS_MASK_MOD
                    ok = !(qi >= len_q || ki >= len_k) &
                         (full | fa4_mask_mod(b, h, (int)(qi + p.q_offset), (int)(ki + p.kv_offset), aux));
#else
                    ok = !(qi >= len_q || ki >= len_k);
#endif
                }
                const float xs = sc[c][e] * p.scale;
#if FA4_B256_REL
                const float x = xs + (e >= 2 ? gc[e & 1] : gn[e & 1]);
                const float pv = ok ? fa4_exp2(fmaf(x, FA4_LOG2E, -l2[e >> 1])) : 0.f;
                pr[e] = pv;
                ds[e] = ok ? pv * (dp[c][e] - dps[e >> 1]) : 0.f;
#else
                float dmod = 1.f;
                int at[FA4_NUM_AUX_GRAD_SITES];
                const float x = fa4_score_mod_fwd_deriv_sites(xs, b, h, (int)(qi + p.q_offset), (int)(ki + p.kv_offset),
                                                              aux, &dmod, at);
                const float pv = ok ? fa4_exp2(fmaf(x, FA4_LOG2E, -l2[e >> 1])) : 0.f;
                const float d = pv * (dp[c][e] - dps[e >> 1]);
                if (ok)
                    fa4_score_mod_aux_grad_acc(xs, b, h, (int)(qi + p.q_offset), (int)(ki + p.kv_offset), aux, d, at,
                                               acc);
                pr[e] = pv;
                ds[e] = ok ? d * dmod : 0.f;
#endif
            }
#if FA4_B256_REL
#pragma unroll
            for (int j = 0; j < 2; ++j) {
                /* chunk c - 1's (j) and chunk c's (2 + j): one offset, one term */
                fa4_score_mod_rel_grad_acc(aux, ic[j], cc[j], dc[j] + ds[2 + j], acc);
                gc[j] = gn[j];
                dc[j] = ds[j];
#pragma unroll
                for (int k = 0; k < FA4_NUM_AUX_GRAD_SITES; ++k) {
                    ic[j][k] = in[j][k];
                    cc[j][k] = cn[j][k];
                }
            }
#endif
            pk[c][0] = fa4_pack2(pr[0], pr[1]);
            pk[c][1] = fa4_pack2(pr[2], pr[3]);
            dk2[c][0] = fa4_pack2(ds[0], ds[1]);
            dk2[c][1] = fa4_pack2(ds[2], ds[3]);
            asm volatile("" : "+r"(pk[c][0]), "+r"(pk[c][1]), "+r"(dk2[c][0]), "+r"(dk2[c][1])::"memory");
        }
#if FA4_B256_REL
        /* the last chunk's first-row offsets have no second-row partner in this step */
#pragma unroll
        for (int j = 0; j < 2; ++j)
            fa4_score_mod_rel_grad_acc(aux, ic[j], cc[j], dc[j], acc);
#endif
        fa4_aux_grad_flush(aux, acc); /* the warpgroup is converged here */
        store_t(sm.pt(buf), pk);
        store_t(sm.dst(buf), dk2);
    }
#endif

    /* dQ partial into the workspace (fp32, [hq][ws_rows][kD]): this thread's rows g, g + 8 of its
     * warp, columns 128 cw + 8 i + 2 t, + 1, as 2-float vector reductions; rows past the sequence
     * skipped. (4-float ones after a pair swap between lanes t, t ^ 1, half the reductions, were
     * slower: plain B4 H16 S4096 bwd 296.0 TFLOP/s against 311.8, H200 2026-12-02.)
     * Deterministic (p.dq_sem): the issuer waits for the turn of this (head, query tile, column
     * half), the number of key tiles that add into it before this one (n_tile when dense, else the
     * walk table's word for stage s plus turn_add), and passes it on once every thread's
     * reductions are performed (each thread's fence, then the warpgroup's barrier). */
    __device__ __forceinline__ void write_dq(const float (&dq)[16][4], int h, int m0, int s) const
    {
        const int g = lane >> 2, t = lane & 3;
        const long long row0 = (long long)h * p.ws_rows + wrow0 + m0;
        int *ctr = p.dq_sem ? p.dq_sem + (int)(row0 >> 2) * 2 + cw : nullptr;
        if (ctr) {
            if (warp == 0 && lane == 0) {
                int turn = n_tile;
                if (p.has_block_mask) {
                    int tw;
                    asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(tw) : "r"(sm.dq_turn(s)) : "memory");
                    turn = (tw & 0x7fffffff) + turn_add;
                }
                fa4_bwd_wait_turn(ctr, turn);
            }
            asm volatile("bar.sync %0, 128;\n" ::"r"(2 + cw) : "memory");
        }
#pragma unroll
        for (int r2 = 0; r2 < 2; ++r2) {
            const int qr = warp * 16 + g + 8 * r2;
            if (m0 + qr < len_q) {
                float *dst = p.dq_accum + (row0 + qr) * kD + cw * kBWgCols + 2 * t;
#pragma unroll
                for (int i = 0; i < kBWgCols / 8; ++i)
                    if (cw * kBWgCols + i * 8 < kD)
                        asm volatile("red.global.add.v2.f32 [%0], {%1, %2};\n" ::"l"(dst + 8 * i),
                                     "f"(dq[i][2 * r2]), "f"(dq[i][2 * r2 + 1])
                                     : "memory");
            }
        }
        if (ctr) {
            asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
            asm volatile("bar.sync %0, 128;\n" ::"r"(2 + cw) : "memory");
            if (warp == 0 && lane == 0)
                asm volatile("red.release.gpu.global.add.s32 [%0], 1;\n" ::"l"(ctr) : "memory");
        }
    }

#if FA4_SM90_BWD256_DQ_TMA
    /* Deterministic: the turn counter of (head h, query tile m0) for this warpgroup's column half,
     * and the step's turn (n_tile when dense, else the walk table's word for stage s plus
     * turn_add). */
    __device__ __forceinline__ int *dq_turn_ctr(int h, int m0) const
    {
        const int row0 = h * (int)p.ws_rows + wrow0 + m0; /* a multiple of 4 */
        return p.dq_sem + (row0 >> 2) * 2 + cw;
    }
    __device__ __forceinline__ int dq_turn(int s) const
    {
        if (!p.has_block_mask)
            return n_tile;
        int tw;
        asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(tw) : "r"(sm.dq_turn(s)) : "memory");
        return (tw & 0x7fffffff) + turn_add;
    }

#if FA4_SM90_BWD256_TURN_AGENT == 1
    /* Deterministic, issuer only: hand the agent the turn still held, once its adds are complete
     * (which also frees the previous step's stage: the caller releases it), and the next counter
     * and turn (next 0: the walk is over). Every step posts once, after the "go" of the step
     * before, so "post" and "go" run in lock step and the words are free. */
    __device__ __forceinline__ void post_dq_turn(unsigned long long next, int turn) const
    {
        fa4_bwd_post_dq_turn(sm, cw, next, turn);
    }
#endif

    /* Staging box b of stage s for this warpgroup's dQ columns 128 cw + 32 b ..: boxes 0, 1 in its
     * dO panels, 2, 3 in its Q panels (dV completes before dK under FA4_SM90_BWD256_DQ_TMA 2). */
    __device__ __forceinline__ unsigned dq_box(int s, int box) const { return sm.dq_box(s, cw, box); }

#if FA4_SM90_BWD256_TURN_AGENT == 2
    /* Deterministic, issuer only: hand step it (counter ctr, 0 after the walk) to the agent. The
     * words of parity it & 1 are free: the agent read them before it released that stage, which
     * the producer's refill and so this step needed. */
    __device__ __forceinline__ void post_dq_add(int it, const int *ctr, int turn, int row0) const
    {
        const unsigned w = sm.add_post(cw, it & 1);
        asm volatile("st.shared.u64 [%0], %1;\n" ::"r"(w), "l"((unsigned long long)ctr) : "memory");
        asm volatile("st.shared.v2.u32 [%0], {%1, %2};\n" ::"r"(w + 8u), "r"(turn), "r"(row0) : "memory");
        fa4_mbar_arrive(sm.bar_add_post(cw, it & 1));
    }
#endif

    /* dQ fragments kI0 .. kI1 - 1 (8 columns each, 4 to a box) of this step into the workspace by
     * TMA: stored into their staging boxes (rows g, g + 8 of the warp, the 128-byte swizzle as
     * bwd_consumer.cuh's write_dq_tma), made visible to the async proxy, the warpgroup's barrier,
     * then the issuer's bulk tensor reduce-adds (boxes past the head dim skipped; rows past the
     * sequence add dS = 0 rows, zeros, or are dropped past the workspace) in one bulk group.
     * Deterministic (p.dq_sem): the issuer waits for the turn before the first box (kFirst) and
     * passes it on after the last (kLast), once the adds are complete (not only read). */
    template <int kI0, int kI1, bool kFirst, bool kLast>
    __device__ __forceinline__ void write_dq_tma(const float (&dq)[16][4], int h, int m0, int s, int it) const
    {
        (void)it;
        const int g = lane >> 2, t = lane & 3;
#pragma unroll
        for (int i = kI0; i < kI1; ++i) {
            const int chunk = (i % 4) * 2 + (t >> 1);
            const unsigned tile = dq_box(s, i / 4);
#pragma unroll
            for (int r2 = 0; r2 < 2; ++r2) {
                const int row = warp * 16 + g + 8 * r2;
                asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(tile + row * 128 + ((chunk ^ (row & 7)) << 4) +
                                                                       (t & 1) * 8),
                             "f"(dq[i][2 * r2]), "f"(dq[i][2 * r2 + 1])
                             : "memory");
            }
        }
        fa4_b256_fence_async_smem();
        asm volatile("bar.sync %0, 128;\n" ::"r"(2 + cw) : "memory");
        if (warp == 0 && lane == 0) {
            const int row0 = h * (int)p.ws_rows + wrow0 + m0; /* a multiple of 4 */
            int *ctr = p.dq_sem ? p.dq_sem + (row0 >> 2) * 2 + cw : nullptr;
#if FA4_SM90_BWD256_TURN_AGENT == 2
            if (ctr) { /* the agent adds (FA4_SM90_BWD256_DQ_TMA 1: kFirst and kLast) */
                post_dq_add(it, ctr, dq_turn(s), row0);
                return;
            }
#endif
            if (kFirst && ctr) {
#if FA4_SM90_BWD256_TURN_AGENT == 1
                fa4_mbar_wait(sm.bar_turn_go(cw), (unsigned)it & 1u); /* the agent saw the turn */
#else
                fa4_bwd_wait_turn(ctr, dq_turn(s));
#endif
                asm volatile("fence.proxy.async.global;\n" ::: "memory");
            }
#pragma unroll
            for (int box = kI0 / 4; box < kI1 / 4; ++box)
                if (cw * kBWgCols + box * 32 < kD)
                    fa4_tma_reduce_add_2d(tm_dq, dq_box(s, box), cw * kBWgCols + box * 32, row0);
            fa4_bulk_commit();
            if (kLast && ctr) {
#if FA4_SM90_BWD256_TURN_AGENT == 1 /* passed on by the next post (post_dq_turn) */
                asm volatile("st.shared.u64 [%0], %1;\n" ::"r"(sm.dq_pending(cw)), "l"((unsigned long long)ctr)
                             : "memory");
#else
                fa4_bulk_wait<0>(); /* the adds are complete, not only read */
                asm volatile("fence.proxy.async.global;\n" ::: "memory");
                asm volatile("red.release.gpu.global.add.s32 [%0], 1;\n" ::"l"(ctr) : "memory");
#endif
            }
        }
    }
#endif

    /* One step: stage s (phase ph), P^T / dS^T buffers buf, query tile (h, m0). */
    __device__ __forceinline__ void step(float (&dk)[16][4], float (&dv)[16][4], int s, unsigned ph, int buf, int h,
                                         int m0, bool full, int it) const
    {
        (void)it;
        {
            float sc[4][4], dp[4][4];
            fa4_mbar_wait(sm.bar_full(s), ph);
            fa4_wgmma_fence();
            issue_s_dp(sc, dp, s);
#if FA4_SM90_BWD256_DQ_TMA
            /* the previous step's stage, held back by the issuer until its dQ reduce-adds read it */
#if FA4_SM90_BWD256_TURN_AGENT == 1
            /* deterministic: until they complete, and the turns posted (every step) */
            if (warp == 0 && lane == 0) {
                if (p.dq_sem)
                    post_dq_turn((unsigned long long)dq_turn_ctr(h, m0), dq_turn(s));
                else if (it > 0)
                    fa4_bulk_wait_read<0>();
                if (it > 0)
                    fa4_mbar_arrive(sm.bar_empty(s ^ 1));
            }
#elif FA4_SM90_BWD256_TURN_AGENT == 2
            if (it > 0 && warp == 0 && lane == 0 && !p.dq_sem) { /* deterministic: the agent's */
                fa4_bulk_wait_read<0>();
                fa4_mbar_arrive(sm.bar_empty(s ^ 1));
            }
#else
            if (it > 0 && warp == 0 && lane == 0) {
                fa4_bulk_wait_read<0>();
                fa4_mbar_arrive(sm.bar_empty(s ^ 1));
            }
#endif
#endif
            const bool inside = m0 + kBM <= len_q && n0 + kBN <= len_k && (!FA4_HAS_MASK_MOD || full);
#if FA4_B256_AUX_GRAD
            fa4_wgmma_wait<0>();
            fa4_reg_fence(sc);
            fa4_reg_fence(dp);
            if (FA4_SM90_BWD_FAST_TILES && inside)
                grads_aux<false>(sc, dp, s, h, m0, full, buf);
            else
                grads_aux<true>(sc, dp, s, h, m0, full, buf);
#else
            fa4_wgmma_wait<1>();
            fa4_reg_fence(sc);
            if (FA4_SM90_BWD_FAST_TILES && inside) {
                probs<false>(sc, s, h, m0, full, buf);
                fa4_wgmma_wait<0>();
                fa4_reg_fence(dp);
                dsgrads<false>(sc, dp, s, m0, buf);
            } else {
                probs<true>(sc, s, h, m0, full, buf);
                fa4_wgmma_wait<0>();
                fa4_reg_fence(dp);
                dsgrads<true>(sc, dp, s, m0, buf);
            }
#endif
        }
        fa4_b256_fence_async_smem();
        fa4_reg_fence(dk);
        fa4_reg_fence(dv);
        /* both warpgroups' halves of P^T and dS^T are in shared memory */
        asm volatile("bar.sync 1, 256;\n" ::: "memory");
#if FA4_SM90_BWD256_DQ_TMA == 2
        {
            float dq[16][4];
            fa4_wgmma_fence();
            issue_dq(dq, buf);
            issue_dv(dv, s, buf);
            issue_dk(dk, s, buf);
            fa4_wgmma_wait<1>(); /* dQ and dV: this warpgroup's dO panels are free */
            fa4_reg_fence(dq);
            fa4_reg_fence(dv);
            write_dq_tma<0, 8, true, false>(dq, h, m0, s, it);
            fa4_wgmma_wait<0>(); /* dK: its Q panels */
            fa4_reg_fence(dk);
            write_dq_tma<8, 16, false, true>(dq, h, m0, s, it);
        }
        if (lane == 0 && warp != 0) /* the issuer's release waits for the reads (next step) */
            fa4_mbar_arrive(sm.bar_empty(s));
#elif FA4_SM90_BWD256_DQ_TMA
        {
            float dq[16][4];
            fa4_wgmma_fence();
            issue_dq(dq, buf);
            issue_dkv(dk, dv, s, buf);
            fa4_wgmma_wait<0>(); /* dV, dK: this warpgroup's Q and dO panels are free */
            fa4_reg_fence(dq);
            fa4_reg_fence(dk);
            fa4_reg_fence(dv);
            write_dq_tma<0, 16, true, true>(dq, h, m0, s, it);
        }
        if (lane == 0 && warp != 0) /* the issuer's release waits for the reads (next step) */
            fa4_mbar_arrive(sm.bar_empty(s));
#else
        {
            float dq[16][4];
            fa4_wgmma_fence();
            issue_dq(dq, buf);
            issue_dkv(dk, dv, s, buf);
            fa4_wgmma_wait<1>();
            fa4_reg_fence(dq);
            write_dq(dq, h, m0, s);
        }
        fa4_wgmma_wait<0>();
        fa4_reg_fence(dk);
        fa4_reg_fence(dv);
        if (lane == 0)
            fa4_mbar_arrive(sm.bar_empty(s));
#endif
    }
};

#include "sm90/bwd_producer.cuh"

#if FA4_SM90_BWD256_TURN_AGENT == 2
/* The dQ agent of consumer warpgroup wg (FA4_SM90_BWD256_TURN_AGENT 2; one thread of the producer's
 * warpgroup, 24 registers): per step, once its issuer has posted (the staging tile is written),
 * wait for the step's turn, add the tile by TMA reduce-adds, release the stage once they have read
 * it, and release the turn once they are complete. Memory model: the staging stores, each
 * thread's fence.proxy.async.shared::cta, the warpgroup's barrier and the issuer's mbarrier arrive
 * (release, cta) happen before the agent's wait (acquire) and so before its TMA reads them; the
 * chain of turns is the agent's own: its adds complete for it (cp.async.bulk.wait_group 0), then
 * fence.proxy.async.global and red.release.gpu, which the next key tile's agent acquires
 * (ld.acquire.gpu) before fence.proxy.async.global and its adds. Not inlined (as
 * fa4_bwd_turn_agent, bwd_common.cuh). */
__device__ __noinline__ void fa4_b256_dq_agent(const fa4_bwd_smem sm, const fa4_tmap *tm_dq, int wg)
{
#pragma unroll 1
    for (unsigned j = 0;; ++j) {
        const int par = (int)(j & 1u); /* also the step's stage (kBStages 2) */
        fa4_mbar_wait(sm.bar_add_post(wg, par), (j >> 1) & 1u);
        unsigned long long ctr;
        int turn, row0;
        asm volatile("ld.shared.u64 %0, [%1];\n" : "=l"(ctr) : "r"(sm.add_post(wg, par)) : "memory");
        if (!ctr)
            break;
        asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n"
                     : "=r"(turn), "=r"(row0)
                     : "r"(sm.add_post(wg, par) + 8u)
                     : "memory");
        fa4_bwd_wait_turn((const int *)ctr, turn);
        asm volatile("fence.proxy.async.global;\n" ::: "memory");
#pragma unroll
        for (int box = 0; box < 4; ++box)
            if (wg * kBWgCols + box * 32 < kD)
                fa4_tma_reduce_add_2d(tm_dq, sm.dq_box(par, wg, box), wg * kBWgCols + box * 32, row0);
        fa4_bulk_commit();
        fa4_bulk_wait_read<0>();
        fa4_mbar_arrive(sm.bar_empty(par)); /* the stage's eighth arrival */
        fa4_bulk_wait<0>(); /* the adds are complete, not only read */
        asm volatile("fence.proxy.async.global;\n" ::: "memory");
        asm volatile("red.release.gpu.global.add.s32 [%0], 1;\n" ::"l"(ctr) : "memory");
    }
}
#endif

extern "C" __global__ void __launch_bounds__(kBThreads, 1)
    fa4_sm90_bwd_main(const fa4_params p, const fa4_aux aux, const __grid_constant__ fa4_tmap tm_q,
                      const __grid_constant__ fa4_tmap tm_k, const __grid_constant__ fa4_tmap tm_v,
                      const __grid_constant__ fa4_tmap tm_do, const __grid_constant__ fa4_tmap tm_lse2,
                      const __grid_constant__ fa4_tmap tm_dpsum, const __grid_constant__ fa4_tmap tm_dq)
{
#if !FA4_SM90_BWD256_DQ_TMA
    (void)tm_dq;
#endif
    const fa4_bwd_smem sm = {fa4_bwd_smem_base()};
    int n_tile, hk, b;
    fa4_pdl_launch();
    /* the grid orders of bwd_main.cu's fa4_bwd_cta without the deterministic interleave (the
     * launcher does not ask for it here) */
    if (p.tiles_slowest == 1) {
        n_tile = blockIdx.z;
        hk = blockIdx.x;
        b = blockIdx.y;
    } else {
        n_tile = blockIdx.x;
        hk = blockIdx.y;
        b = blockIdx.z;
    }
    const int tid = threadIdx.x;
    const fa4_seq seq = fa4_seq_info(p, b);
    const int n0 = n_tile * kBN;
    if (n0 >= seq.len_k)
        return;

    if (tid == 0) {
        fa4_mbar_init(sm.bar_kv(), 1);
#pragma unroll
        for (int s = 0; s < kBStages; ++s) {
            fa4_mbar_init(sm.bar_full(s), kBFullArrivals);
            fa4_mbar_init(sm.bar_empty(s), kBEmptyArrivals);
        }
#if FA4_SM90_BWD256_TURN_AGENT == 1
        for (int i = 0; i < 2; ++i) { /* deterministic dQ: the issuer's posts, the agent's go */
            fa4_mbar_init(sm.bar_turn_post(i), 1);
            fa4_mbar_init(sm.bar_turn_go(i), 1);
        }
#elif FA4_SM90_BWD256_TURN_AGENT == 2
        for (int i = 0; i < 4; ++i) /* deterministic dQ: the issuers' posts by parity */
            fa4_mbar_init(sm.bar_add_post(i >> 1, i & 1), 1);
#endif
        fa4_mbar_init_fence();
    }
    __syncthreads();

    const int wg = tid >> 7;
    if (wg == 0) {
        fa4_regs_dec<kBProducerRegs>();
#if FA4_SM90_BWD256_TURN_AGENT
        /* warps 1 and 2 (deterministic): their lane 0 is the agent of consumer warpgroup warp - 1.
         * The branch is on a vote (a uniform predicate): with a per-thread branch there, ptxas
         * moved the producer's walk out of the uniform registers and spilled it (4 bytes, plain
         * D 256, NVRTC 13), also with the agent inlined or only a trap in its place. */
        if (__any_sync(0xffffffffu, p.dq_sem && (tid == 32 || tid == 64))) {
            if ((tid & 31) == 0) {
                fa4_pdl_wait(); /* the turn counters are zeroed by bwd_pre */
#if FA4_SM90_BWD256_TURN_AGENT == 2
                fa4_b256_dq_agent(sm, &tm_dq, (tid >> 5) - 1);
#else
                fa4_bwd_turn_agent(sm, (tid >> 5) - 1);
#endif
            }
            return;
        }
#endif
        if (tid != 0)
            return;
        fa4_bwd_produce<true>(p, sm, &tm_q, &tm_k, &tm_v, &tm_do, &tm_lse2, &tm_dpsum, b, hk, n_tile, n0, seq);
    } else {
        fa4_regs_inc<kBConsumerRegs>();
        fa4_pdl_wait();
        /* FA4_SM90_BWD256_DESC_ADD: cw warp-uniform (as bwd_main.cu's), for uniform descriptors */
        const int cw = FA4_SM90_BWD256_DESC_ADD ? fa4_warp_uniform(wg - 1) : wg - 1, warp = (tid >> 5) & 3,
                  lane = tid & 31;
        float dk[16][4], dv[16][4];
#pragma unroll
        for (int i = 0; i < 16; ++i) {
            dk[i][0] = dk[i][1] = dk[i][2] = dk[i][3] = 0.f;
            dv[i][0] = dv[i][1] = dv[i][2] = dv[i][3] = 0.f;
        }
        const fa4_b256_consumer c = {p,         aux,       sm,     b,
                                     cw,        warp,      lane,   n0,
                                     seq.len_q, seq.len_k, n_tile, (int)seq.ws_row,
                                     fa4_bwd_walk_table(p) ? n_tile % (p.bm_kv_block / kBN) : 0
#if FA4_SM90_BWD256_DQ_TMA
                                     ,
                                     &tm_dq
#endif
        };
#if FA4_SM90_BWD256_TURN_AGENT == 1
        if (warp == 0 && lane == 0) /* no turn held yet (read by the first step's post) */
            asm volatile("st.shared.u64 [%0], %1;\n" ::"r"(sm.dq_pending(cw)), "l"(0ull) : "memory");
#endif
        fa4_mbar_wait(sm.bar_kv(), 0u); /* also when the walk is empty: no TMA outlives the CTA */
        fa4_bwd_cursor w;
        w.start(p, b, hk, n_tile, seq.len_q);
#if FA4_SM90_BWD256_TURN_AGENT == 2
        int it = 0; /* the end's post names the parity after the last step */
        for (; w.next(p, b, hk, n_tile, seq.len_q); ++it)
#else
        for (int it = 0; w.next(p, b, hk, n_tile, seq.len_q); ++it)
#endif
            c.step(dk, dv, it & 1, (unsigned)(it >> 1) & 1u, it & 1, w.h, w.m0, w.full, it);
#if FA4_SM90_BWD256_DQ_TMA
        if (warp == 0 && lane == 0) {
#if FA4_SM90_BWD256_TURN_AGENT == 1
            if (p.dq_sem)
                c.post_dq_turn(0ull, 0); /* the last step's turn, and the agent's end */
#elif FA4_SM90_BWD256_TURN_AGENT == 2
            if (p.dq_sem) { /* the agent's end (it still adds the last step) */
                /* the end's words reuse those of step it - 2, which no refill of its stage waited
                 * for here: wait until the agent released that stage (so it read them) */
                if (it >= 2)
                    fa4_mbar_wait(sm.bar_empty(it & 1), (unsigned)((it - 2) >> 1) & 1u);
                c.post_dq_add(it, nullptr, 0, 0);
            }
#endif
            fa4_bulk_wait<0>(); /* the last dQ reduce-adds are done before the CTA's shared memory goes */
        }
#endif

        /* epilogue: dK (scaled) and dV of the keys inside the sequence, this warpgroup's columns */
        const int g = lane >> 2, t = lane & 3;
        fa4_elem *gdK = (fa4_elem *)p.dk.data + b * p.dk.sb + hk * p.dk.sh + (seq.row_k + n0) * p.dk.ss;
        fa4_elem *gdV = (fa4_elem *)p.dv.data + b * p.dv.sb + hk * p.dv.sh + (seq.row_k + n0) * p.dv.ss;
#if FA4_SM90_BWD256_STG128
        /* (bwd_common.cuh fa4_bwd_store_row: whole groups of 32 columns in 16-byte stores) */
        const int col0 = cw * kBWgCols;
#pragma unroll
        for (int r2 = 0; r2 < 2; ++r2) {
            const int r = warp * 16 + g + 8 * r2;
            const bool in = n0 + r < seq.len_k;
            fa4_bwd_store_row<16, true, true>(gdK + (long long)r * p.dk.ss + col0, dk, r2, p.scale, t, in, kD - col0);
            fa4_bwd_store_row<16, false, true>(gdV + (long long)r * p.dv.ss + col0, dv, r2, 1.f, t, in, kDv - col0);
        }
#else
#pragma unroll
        for (int r2 = 0; r2 < 2; ++r2) {
            const int r = warp * 16 + g + 8 * r2;
            if (n0 + r < seq.len_k) {
#pragma unroll
                for (int i = 0; i < 16; ++i) {
                    const int col = cw * kBWgCols + i * 8;
                    if (col < kD)
                        *(unsigned *)(gdK + (long long)r * p.dk.ss + col + 2 * t) =
                            fa4_pack2(dk[i][2 * r2] * p.scale, dk[i][2 * r2 + 1] * p.scale);
                    if (col < kDv)
                        *(unsigned *)(gdV + (long long)r * p.dv.ss + col + 2 * t) =
                            fa4_pack2(dv[i][2 * r2], dv[i][2 * r2 + 1]);
                }
            }
        }
#endif
    }
}

#endif /* FA4_SM90_BWD256_CUH */
