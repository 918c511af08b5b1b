/*
 * fwd.cu - the sm90 (Hopper, sm_90a) forward program: O = softmax(score_mod(scale * Q K^T) masked) V
 * and LSE, with TMA loads, wgmma and warp specialisation.
 *
 * Persistent: the grid holds at most one CTA per SM. The producer decides which tiles (kM query
 * rows of one batch entry and head, see config.cuh) its CTA computes and hands each to the
 * consumers through shared memory (schedule.cuh's fa4_sm90_put_tile). Two schedules:
 *   static (no workspace): one tile from each wave of gridDim.x consecutive tiles in the order of
 *     fa4_sm90_tile(): the query tiles of a head are adjacent (their K and V share L2) and
 *     heaviest first (the tile with the most keys under a causal block mask), heads of one KV head
 *     adjacent. Dense: tile blockIdx.x of every wave; with a block mask the waves are dealt
 *     alternately forwards and backwards (fa4_sm90_walk), which evens out the CTAs' work.
 *   dynamic (a workspace, sched != NULL): the next tile of a global counter whenever the
 *     producer has issued its current tile's loads (fa4_sm90_dyn_tile; with a block mask in
 *     the weight order of fa4_sm90_fwd_order, which the host runs first).
 * Every tile is computed wholly by one CTA in the same way, so both give bitwise the same output.
 * The host may also launch one CTA per tile; the kernel is the same.
 *
 * 128 * (1 + kConsumers) threads (config.cuh):
 *   warpgroup 0, the producer (registers cut to kProducerRegs): one thread issues TMA for each
 *     tile's Q (once the consumers released the previous Q) and for K and V tiles into a kStages
 *     ring that runs on across tiles, so the next tile's loads overlap this tile's epilogue.
 *   warpgroups 1 .. kConsumers, the consumers (registers raised to kConsumerRegs), 64 query rows each:
 *     S = Q K^T as SS-wgmma from the swizzled tiles; score_mod and mask_mod on the S fragment
 *     (tiles inside a full block and inside the sequence skip every check); the online softmax in
 *     registers; P converted to 16-bit in registers as the A operand of the RS-wgmma O += P V
 *     (V read N-major, transposed by the descriptor); the schedule (intra-warpgroup overlap,
 *     ping-pong) is in mainloop.cuh; then the epilogue straight from registers.
 *
 * Supported: bf16 and fp16; head dims 64/96/128/192/256 with Dv independent; any batch, head and
 * sequence strides that are multiples of 16 bytes (TMA); GQA/MQA; any Sq, Skv (tails: TMA zero fill
 * plus masking); score_mod and mask_mod with aux; block masks (q_block a multiple of 128, kv_block
 * a multiple of the key tile or smaller); varlen via cu_seqlens; q/kv offsets; empty rows give O = 0
 * and LSE = -inf. Not yet: TMA-store epilogue.
 */
/* Checked builds report an out-of-range aux read through a flag that the consumers test once at
 * the end (fa4_mod_checked_finish): a trap reachable inside the main loop made ptxas spill. */
#define FA4_CHECKED_DEFERRED 1
#define FA4_SM90_FWD_PROGRAM 1 /* config.cuh: FA4_SM90_FWD64_CONSUMERS applies to this program only */
#include "fa4_mod.cuh"
#include "common/params.h"
#include "common/ptx.cuh"
#include "sm80/scheduler.cuh"
#include "sm80/mask.cuh"
#include "sm90/config.cuh"
#include "sm90/ptx90.cuh"
#include "sm90/wgmma.cuh"
#include "sm90/schedule.cuh"
#include "sm90/softmax.cuh"
#include "sm90/mainloop.cuh"
#include "sm90/epilogue.cuh"

/* FA4_SM90_FWD_NEXT_EARLY (config.cuh): the next tile's hand-off, its sequence bounds and its key
 * tiles (with a block mask: kv_num / full_kv_num of its query block, global loads), read by the
 * consumers under the current tile's last P V instead of at the next tile's start, where their
 * latency was exposed once a tile (session 8's ncu of causal with a block mask: 2.5% of the stall
 * samples; measured then +3.4%, notes/issue8-fwd-overlap.md). The lists' first lines are
 * prefetched to L1. Two consumers only: three keep their tile state in the stash (mainloop.cuh). */
#define FA4_SM90_NEXT_EARLY (FA4_SM90_FWD_NEXT_EARLY && !FA4_SM90_STASH)
#if FA4_SM90_NEXT_EARLY
struct fa4_sm90_next {
    int m_tile, hb, b, h;
    fa4_seq seq;
    fa4_sm90_tiles tiles;
    /* hand-off nt (its barrier phase), then, unless it is the end, where the tile lies */
    __device__ __forceinline__ void fetch(const fa4_params &p, const fa4_sm90_bars &bars, int nt, int mt)
    {
        fa4_mbar_wait(bars.tile(), (unsigned)nt & 1u);
        fa4_sm90_get_tile(bars.slot(), &m_tile, &hb);
        if (m_tile < 0)
            return;
        b = hb / p.hq;
        h = hb - b * p.hq;
        seq = fa4_seq_info(p, b);
        tiles = fa4_sm90_kv_tiles(p, b, h, m_tile * mt, seq.len_k);
        /* the lists' addresses, not their counts: a prefetch that waited for the counts' loads
         * would hold the P V wait behind their latency */
        if (!tiles.dense) {
            asm volatile("prefetch.global.L1 [%0];\n" ::"l"(tiles.partial));
            if (p.full_kv_idx)
                asm volatile("prefetch.global.L1 [%0];\n" ::"l"(tiles.full));
        }
    }
};
#endif

extern "C" __global__ void __launch_bounds__(kThreads, 1)
    fa4_sm90_fwd(const fa4_params p, const fa4_aux aux, const __grid_constant__ fa4_tmap tm_q,
                 const __grid_constant__ fa4_tmap tm_k, const __grid_constant__ fa4_tmap tm_v,
                 unsigned *sched
#if FA4_SM90_RBOUND
                 , const int *rel_bounds /* fa4_sm90_rel_bounds's, or NULL (the host passes it to every build) */
#endif
                 )
{
    extern __shared__ __attribute__((aligned(1024))) unsigned char fa4_smem[];
    /* 128-byte swizzled tiles want 1024-byte aligned atoms. */
    const unsigned s_q = (fa4_smem_addr(fa4_smem) + 1023u) & ~1023u;
    const unsigned s_k = s_q + kQBytes;
    const unsigned s_v = s_k + kStages * kKBytes;
    const unsigned s_bar = s_v + kStages * kVBytes;
    const fa4_sm90_bars bars = {s_bar};
    const int tid = threadIdx.x;
    const int mt = fa4_sm90_rows(p), nc = mt / 64; /* rows per tile, consumers at work */
    const int n_m = (p.seqlen_q + mt - 1) / mt;

    if (tid == 0) {
        /* the empty barriers count one arrival per consumer warp */
        fa4_mbar_init(bars.q(), 1);
        fa4_mbar_init(bars.eq(), 4 * nc);
        fa4_mbar_init(bars.tile(), 1);
#pragma unroll
        for (int s = 0; s < kStages; ++s) {
            fa4_mbar_init(bars.k(s), 1);
            fa4_mbar_init(bars.v(s), 1);
            fa4_mbar_init(bars.ek(s), 4 * nc);
            fa4_mbar_init(bars.ev(s), 4 * nc);
        }
        fa4_mbar_init_fence();
    }
#if FA4_SM90_ROWSUM_MMA
    if (tid < 64) { /* the block of ones of the row sums (mainloop.cuh), for the async proxy */
#if defined(FA4_DTYPE_BF16)
        const unsigned one2 = 0x3F803F80u;
#else
        const unsigned one2 = 0x3C003C00u;
#endif
        asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(bars.ones() + 4u * tid), "r"(one2) : "memory");
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    }
#endif
    __syncthreads();

    const int wg = tid >> 7;
    if (wg == 0) {
        /* ------------------------------------------------------------------- producer */
        fa4_regs_dec<kProducerRegs>();
        if (tid != 0)
            return;
        fa4_tma_prefetch(&tm_q);
        fa4_tma_prefetch(&tm_k);
        fa4_tma_prefetch(&tm_v);
        /* PDL: after fa4_sm90_fwd_order the launch is a dependent one (path_sm90.c); sched is its */
        fa4_pdl_wait();
        const int nh = p.hq * p.batch, total = n_m * nh;
        const bool zigzag = p.has_block_mask != 0; /* how static waves are dealt (fa4_sm90_walk) */
        int it = 0, nt = 0; /* K/V ring iterations and tiles handed over so far */
        /* with a block mask the ranking follows the counter's 256 bytes (path_sm90.c), and k0 is
         * the number of tiles per head to hoist (fa4_sm90_fwd_order's count, at most n_m) */
        const int *perm = sched && p.has_block_mask ? (const int *)(sched + 64) : 0;
        const int k0 = perm ? min((int)sched[1], n_m) : 0;
        int base = 0, odd = 0, idx = blockIdx.x;
        while (idx < total) {
            int m_tile, hb;
            if (sched) {
                fa4_sm90_dyn_tile(p, perm, k0, idx, n_m, nh, &m_tile, &hb);
            } else {
                hb = idx / n_m;
                m_tile = n_m - 1 - (idx - hb * n_m);
            }
            const int b = hb / p.hq, h = hb - b * p.hq;
            const fa4_seq seq = fa4_seq_info(p, b);
            const int m0 = m_tile * mt;
            if (m0 < seq.len_q) { /* varlen: tiles past a sequence's end are skipped */
                const fa4_sm90_tiles tiles = fa4_sm90_kv_tiles(p, b, h, m0, seq.len_k);
                const int n_tiles = tiles.count;
                /* the consumers have read the last hand-off and released Q */
                if (nt > 0)
                    fa4_mbar_wait(bars.eq(), (unsigned)(nt - 1) & 1u);
                /* the tile first, so that the consumers read its lists while Q is in flight; no
                 * keys: no Q either, the consumers write O = 0, LSE = -inf */
                fa4_sm90_put_tile(bars.slot(), m_tile, hb);
                fa4_mbar_arrive(bars.tile());
                ++nt;
                if (n_tiles > 0) {
                    const int qrow = (int)seq.row_q + m0, qb = p.cu_seqlens_q ? 0 : b;
                    const int krow0 = (int)seq.row_k, kb = p.cu_seqlens_k ? 0 : b;
                    const int hk = h / p.group;
                    fa4_mbar_expect_tx(bars.q(), (unsigned)(mt * kDp * 2));
#pragma unroll
                    for (int c = 0; c < kDp / 64; ++c)
                        for (int r = 0; r < mt; r += kQBox)
                            fa4_tma_load_4d(s_q + (c * kM + r) * kPanelBytes, &tm_q, bars.q(), c * 64, qrow + r, h,
                                            qb);
                    for (int j = 0; j < n_tiles; ++j, ++it) {
                        const int s = it % kStages;
                        const unsigned ph = (unsigned)((it / kStages) - 1) & 1u;
                        bool full;
                        const int krow = krow0 + tiles.start(j, &full);
                        if (it >= kStages)
                            fa4_mbar_wait(bars.ek(s), ph);
                        fa4_mbar_expect_tx(bars.k(s), kKBytes);
#pragma unroll
                        for (int c = 0; c < kDp / 64; ++c)
                            fa4_tma_load_4d(s_k + s * kKBytes + c * kN * kPanelBytes, &tm_k, bars.k(s), c * 64,
                                            krow, hk, kb);
                        if (it >= kStages)
                            fa4_mbar_wait(bars.ev(s), ph);
                        fa4_mbar_expect_tx(bars.v(s), kVBytes);
#pragma unroll
                        for (int c = 0; c < kDvp / 64; ++c)
                            fa4_tma_load_4d(s_v + s * kVBytes + c * kN * kPanelBytes, &tm_v, bars.v(s), c * 64,
                                            krow, hk, kb);
                    }
                }
            }
            /* the next tile, once this one's loads are issued (the ring runs kStages key tiles
             * ahead of the consumers, so the counter's latency hides behind them) */
            if (sched) {
                idx = (int)gridDim.x + (int)atomicAdd(sched, 1u);
            } else {
                base += gridDim.x;
                odd ^= 1;
                idx = base < total ? fa4_sm90_walk(base, odd, blockIdx.x, gridDim.x, zigzag) : total;
            }
        }
        /* the end: a hand-off of -1 once the last tile's Q is released */
        if (nt > 0)
            fa4_mbar_wait(bars.eq(), (unsigned)(nt - 1) & 1u);
        fa4_sm90_put_tile(bars.slot(), -1, -1);
        fa4_mbar_arrive(bars.tile());
    } else {
        /* ------------------------------------------------------------------- consumers */
        fa4_regs_inc<kConsumerRegs>();
        fa4_pdl_wait(); /* PDL: nothing of the order kernel's is read here; the wait keeps every
                         * global read of the grid after its predecessor all the same */
        const int cw = wg - 1, warp = (tid >> 5) & 3, lane = tid & 31;
#if FA4_SM90_DESC_ADD
        /* this warpgroup's Q panel, broadcast from lane 0 so that ptxas knows it is the same in
         * every lane: its descriptors then live in uniform registers (without it, eight Q
         * descriptors sat in 16 ordinary registers and each wgmma paid two R2UR) */
        const unsigned s_qw = fa4_warp_uniform(s_q + (unsigned)cw * 64u * kPanelBytes);
#else
        const unsigned s_qw = s_q + cw * 64 * kPanelBytes;
#endif
#if FA4_HAS_SCORE_MOD
        const float k2 = FA4_LOG2E;
#else
        const float k2 = fabsf(p.scale) * FA4_LOG2E; /* a negative scale: mainloop.cuh's softmax */
#endif
        fa4_sm90_pingpong pp = {cw, nc, false};
#if FA4_SM90_STASH
        /* three consumers with the overlap: the first turn opened here, so that no flag rides
         * through the loop, and the tile's state kept in this warp's stash while it runs */
        pp.open();
        const unsigned stash = s_bar + 256u + (unsigned)((tid >> 5) - 4) * FA4_SM90_STASH_WARP_BYTES;
#endif
        int it = 0, nq = 0; /* ring iterations, Q loads so far */
#if FA4_SM90_NEXT_EARLY
        /* dense tiles without varlen have no global reads to hide: the base order (runtime test) */
        const bool next_early = p.has_block_mask || p.cu_seqlens_q;
        fa4_sm90_next nx;
        bool fetched = false; /* hand-off nt already read, under the previous tile's last P V */
#endif
        /* a third consumer idles on 128-row tiles (fa4_sm90_rows) */
        for (int nt = 0; kConsumers == 2 || cw < nc; ++nt) {
#if FA4_SM90_NEXT_EARLY
            if (!fetched)
                nx.fetch(p, bars, nt, mt);
            fetched = false;
            if (nx.m_tile < 0)
                break;
            const int hb = nx.hb, b = nx.b, h = nx.h;
            const fa4_seq seq = nx.seq;
            const int m0 = nx.m_tile * mt;
            const fa4_sm90_tiles tiles = nx.tiles;
            auto between = [&] {
                if (next_early) {
                    nx.fetch(p, bars, nt + 1, mt);
                    fetched = true;
                }
            };
            (void)hb;
#else
            int m_tile, hb;
            fa4_mbar_wait(bars.tile(), (unsigned)nt & 1u);
            fa4_sm90_get_tile(bars.slot(), &m_tile, &hb);
            if (m_tile < 0)
                break;
            int b = hb / p.hq, h = hb - b * p.hq;
            fa4_seq seq = fa4_seq_info(p, b);
            int m0 = m_tile * mt;
            const fa4_sm90_tiles tiles = fa4_sm90_kv_tiles(p, b, h, m0, seq.len_k);
            auto between = [] {};
#endif
            int row0 = m0 + cw * 64 + warp * 16 + (lane >> 2);
            float o[kDvp / 8][4];
#pragma unroll
            for (int i = 0; i < kDvp / 8; ++i)
                o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
            float m[2] = {-FA4_INF, -FA4_INF}, l[2] = {0.f, 0.f};
            if (tiles.count > 0) {
#if FA4_SM90_STASH
                /* before the Q wait: what only the epilogue and the next tile need dies here */
                fa4_sm90_stash_put(stash, nt, nq + 1, it + tiles.count, hb, m_tile, s_qw);
                fa4_sm90_stash_tiles(stash + 32u, tiles);
                const fa4_sm90_tiles_st ctiles = {p, tiles.count, stash + 32u};
#else
                const fa4_sm90_tiles &ctiles = tiles;
#endif
                const fa4_sm90_consumer c = {p,      aux,       ctiles, bars, b,  h,
                                             row0,   lane,      cw,    seq.len_q, seq.len_k,
                                             m0 + mt <= seq.len_q, k2, s_qw, s_k, s_v
#if FA4_SM90_STASH
                                             , stash
#endif
#if FA4_SM90_RBOUND
                                             , rel_bounds
#endif
                };
                fa4_mbar_wait(bars.q(), (unsigned)nq & 1u);
                ++nq;
#if FA4_SM90_STASH
                c.run(o, m, l, it, pp, between);
                fa4_sm90_stash_get(stash, nt, nq, it, hb, m_tile);
                b = hb / p.hq;
                h = hb - b * p.hq;
                seq = fa4_seq_info(p, b);
                m0 = m_tile * mt;
                {
                    /* the thread's row read again: a value kept from before the loop spilled */
                    const unsigned t = fa4_tid_fresh();
                    row0 = m0 + (int)(t >> 7) * 64 - 64 + (int)((t >> 5) & 3u) * 16 + (int)((t & 31u) >> 2);
                }
#else
                c.run(o, m, l, it, pp, between);
                it += tiles.count;
#endif
            } else {
                /* no keys, no Q: release the hand-off slot once every lane has read it */
                __syncwarp();
                if (lane == 0)
                    fa4_mbar_arrive(bars.eq());
            }
            fa4_elem *g_o = (fa4_elem *)p.o.data + b * p.o.sb + h * p.o.sh + seq.row_q * p.o.ss;
            float *g_l =
                p.lse.data ? (float *)p.lse.data + b * p.lse.sb + h * p.lse.sh + seq.row_q * p.lse.ss : 0;
            fa4_sm90_epilogue<kDvp / 8>(o, m, l, g_o, p.o.ss, g_l, p.lse.ss, row0, seq.len_q, lane);
        }
        pp.finish();
        fa4_checked_finish();
    }
}

/* The dynamic schedule's preparation with a block mask, one CTA before the forward on the same
 * stream: clears the tile counter (sched[0]), ranks each mask row's query tiles by weight,
 * heaviest first (ties: the later tile first, as causal's order), perm[row][rank] = query tile,
 * and sets sched[1] to the number of tiles per head to hoist (schedule.cuh): the most tiles of
 * one row that weigh over twice the row's mean, at most FA4_SM90_HOIST_MAX. One warp per row;
 * a tile's rank counts the tiles before it, 32 weights at a time passed round the warp. */
__device__ __forceinline__ int fa4_sm90_tile_weight(const fa4_params &p, const int *np, const int *nf, int mt,
                                                    int n_m, int i)
{
    return i < n_m ? fa4_sm90_block_weight(np, nf, i * mt / p.bm_q_block) : -1;
}

extern "C" __global__ void __launch_bounds__(1024) fa4_sm90_fwd_order(const fa4_params p, unsigned *sched)
{
    int *perm = (int *)(sched + 64);
    __shared__ int s_hoist;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = blockDim.x >> 5;
    const int mt = fa4_sm90_rows(p), n_m = (p.seqlen_q + mt - 1) / mt, rows = p.bm_batch * p.bm_heads;
    fa4_pdl_launch(); /* the forward (a dependent launch) may start; its wait covers this grid */
    if (threadIdx.x == 0) {
        s_hoist = 0;
        sched[0] = 0u;
    }
    __syncthreads();
    for (int row = warp; row < rows; row += nw) {
        const int *np = p.kv_num + (long long)row * p.bm_nq;
        const int *nf = p.full_kv_num ? p.full_kv_num + (long long)row * p.bm_nq : 0;
        float sum = 0.f;
        for (int i = lane; i < n_m; i += 32)
            sum += (float)fa4_sm90_tile_weight(p, np, nf, mt, n_m, i);
#pragma unroll
        for (int o = 16; o > 0; o >>= 1)
            sum += __shfl_xor_sync(0xffffffffu, sum, o);
        int heavy = 0;
        for (int i0 = 0; i0 < n_m; i0 += 32) {
            const int i = i0 + lane, wi = fa4_sm90_tile_weight(p, np, nf, mt, n_m, i);
            int rank = 0;
            for (int j0 = 0; j0 < n_m; j0 += 32) {
                const int wl = fa4_sm90_tile_weight(p, np, nf, mt, n_m, j0 + lane);
#pragma unroll
                for (int t = 0; t < 32; ++t) {
                    const int wj = __shfl_sync(0xffffffffu, wl, t);
                    rank += wj > wi || (wj == wi && j0 + t > i);
                }
            }
            if (i < n_m) {
                perm[(long long)row * n_m + rank] = i;
                heavy += (float)wi * (float)n_m > 2.f * sum;
            }
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1)
            heavy += __shfl_xor_sync(0xffffffffu, heavy, o);
        if (lane == 0)
            atomicMax(&s_hoist, min(heavy, FA4_SM90_HOIST_MAX));
    }
    __syncthreads();
    if (threadIdx.x == 0)
        sched[1] = (unsigned)s_hoist;
}

#if FA4_SM90_RBOUND
/* FA4_SM90_RELT_BOUNDS (softmax.cuh's fa4_sm90_rel_bound): before the forward, on its stream, per
 * (batch, head) hb = blockIdx.x, the offsets kv - q (the mod's indices, offsets added) of the
 * sequence's real pairs, [omin, omax], at which g differs from g(omin) and from g(omax), in hb's
 * record w = out + FA4_SM90_RB_WORDS hb:
 *   w[0] = max over them of -o where g(o) != g(omin) (-(the first such offset));
 *   w[1] = max of o where g(o) != g(omax) (the last such offset);
 *   w[2], w[3] = the bits of g(omin) and g(omax).
 * The host sets every word to INT_MIN first (one memset): no such offset leaves it there (one g
 * over the whole range). A g at an end that is not finite, or offsets or lengths past 2^29 (where
 * the forward's int32 indices of padded rows could wrap), put INT_MAX in that region's word: no
 * region. g at offset o is taken at a real pair (q = 0 or kv = 0), so it reads what the forward's
 * own evaluation of that offset reads. blockIdx.x = hb; each CTA takes chunks of kRbChunk offsets
 * (blockIdx.y, then every gridDim.y-th), 4 a thread. */
constexpr int kRbChunk = 1024;
__device__ __forceinline__ unsigned fa4_sm90_rel_g(const fa4_params &p, const fa4_aux &aux, int b, int h, long long kq,
                                                   long long o, const fa4_score_uniform &su)
{
    const long long d = o - kq; /* kv - q as sequence positions */
    const long long q = d >= 0 ? 0 : -d, k = d >= 0 ? d : 0;
    return __float_as_uint(fa4_score_mod_rel(b, h, (int)(q + p.q_offset), (int)(k + p.kv_offset), aux, su));
}

/* (FA4_SM90_RELT_GARR: named fa4_sm90_rel_bounds_g, records of 8 words, and g also written at every
 * offset of [omin - RG_LO, omax + RG_HI] to the array after the records; softmax.cuh) */
#if FA4_SM90_RGARR
#define FA4_SM90_RB_KERNEL fa4_sm90_rel_bounds_g
#else
#define FA4_SM90_RB_KERNEL fa4_sm90_rel_bounds
#endif
extern "C" __global__ void __launch_bounds__(256) FA4_SM90_RB_KERNEL(const fa4_params p, const fa4_aux aux, int *out)
{
    fa4_pdl_launch(); /* the forward (a dependent launch) may start; its wait covers this grid */
    const int hb = blockIdx.x, b = hb / p.hq, h = hb - b * p.hq;
    const fa4_seq seq = fa4_seq_info(p, b);
    const long long kq = p.kv_offset - p.q_offset;
    const long long omin = kq - (seq.len_q - 1), omax = kq + (seq.len_k - 1);
#if FA4_SM90_RGARR
    const long long olo = omin - FA4_SM90_RG_LO, ohi = omax + FA4_SM90_RG_HI;
    long long stride;
    float *garr = fa4_sm90_garr(out, p, hb, &stride);
#else
    const long long olo = omin, ohi = omax;
#endif
    if (seq.len_q <= 0 || seq.len_k <= 0 || olo + (long long)blockIdx.y * kRbChunk > ohi)
        return;
    int *w = out + FA4_SM90_RB_WORDS * hb;
    const long long lim = 1LL << 29;
    if (p.q_offset < -lim || p.q_offset > lim || p.kv_offset < -lim || p.kv_offset > lim || p.seqlen_q > lim ||
        p.seqlen_k > lim) {
        if (blockIdx.y == 0 && threadIdx.x == 0) {
            atomicMax(w, 2147483647);
            atomicMax(w + 1, 2147483647);
        }
        return;
    }
    const fa4_score_uniform su = fa4_score_mod_uniform(b, h, aux);
    const unsigned glo = fa4_sm90_rel_g(p, aux, b, h, kq, omin, su), ghi = fa4_sm90_rel_g(p, aux, b, h, kq, omax, su);
    int nf = -2147483647 - 1, lne = -2147483647 - 1;
    /* chunks blockIdx.y, + gridDim.y, ... (the host caps gridDim.y at 65535) */
#pragma unroll 1
    for (long long o0 = olo + (long long)blockIdx.y * kRbChunk; o0 <= ohi; o0 += (long long)gridDim.y * kRbChunk) {
#pragma unroll 1
        for (long long o = o0 + threadIdx.x; o <= ohi && o < o0 + kRbChunk; o += blockDim.x) {
            const unsigned v = fa4_sm90_rel_g(p, aux, b, h, kq, o, su);
#if FA4_SM90_RGARR
            garr[o - olo] = __uint_as_float(v);
            if (o < omin || o > omax)
                continue;
#endif
            if (v != glo)
                nf = max(nf, (int)-o);
            if (v != ghi)
                lne = max(lne, (int)o);
        }
    }
    nf = __reduce_max_sync(0xffffffffu, nf);
    lne = __reduce_max_sync(0xffffffffu, lne);
    if ((threadIdx.x & 31) == 0) {
        if (nf != -2147483647 - 1)
            atomicMax(w, nf);
        if (lne != -2147483647 - 1)
            atomicMax(w + 1, lne);
    }
    if (blockIdx.y == 0 && threadIdx.x == 0) {
        w[2] = (int)glo;
        w[3] = (int)ghi;
#if FA4_SM90_RGARR
        w[4] = 1; /* the array is valid (the memset left INT_MIN: not) */
        w[5] = (int)olo;
#endif
        if ((glo & 0x7f800000u) == 0x7f800000u)
            atomicMax(w, 2147483647);
        if ((ghi & 0x7f800000u) == 0x7f800000u)
            atomicMax(w + 1, 2147483647);
    }
}
#endif
