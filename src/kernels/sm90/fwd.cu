/*
 * fwd.cu - the sm90 (Hopper, sm_90a) forward program: O = softmax(score_mod(scale * Q K^T) masked) V
 * and LSE, with TMA loads, wgmma and warp specialisation.
 *
 * Persistent: the grid holds at most one CTA per SM and each CTA takes one tile (kM query rows
 * of one batch entry and head, see config.cuh) from each wave of gridDim.x consecutive tiles in the
 * order of fa4_sm90_tile(): the query tiles of a head are adjacent (their K and V share L2) and
 * heaviest first (the tile with the most keys under a causal block mask), heads of one KV head
 * adjacent. Dense: tile blockIdx.x of every wave; with a block mask the waves are dealt alternately
 * forwards and backwards (fa4_sm90_walk), which evens out the CTAs' work. The producer and the
 * consumers walk the same sequence.
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
 * and LSE = -inf. Not yet: TMA-store epilogue, dynamic (atomic) tile scheduling (the API has no
 * workspace for a per-launch counter, notes/issue8-schedule.md).
 */
/* Checked builds report an out-of-range aux read through a flag that the consumers test once at
 * the end (fa4_mod_checked_finish): a trap reachable inside the main loop made ptxas spill. */
#define FA4_CHECKED_DEFERRED 1
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

extern "C" __global__ void __launch_bounds__(kThreads, 1)
    fa4_sm90_fwd(const fa4_params p, const fa4_aux aux, const __grid_constant__ fa4_tmap tm_q,
                 const __grid_constant__ fa4_tmap tm_k, const __grid_constant__ fa4_tmap tm_v)
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
    const int total = n_m * p.hq * p.batch;
    const bool zigzag = p.has_block_mask != 0; /* how the waves are dealt (fa4_sm90_walk) */

    if (tid == 0) {
        /* the empty barriers count one arrival per consumer warp */
        fa4_mbar_init(bars.q(), 1);
        fa4_mbar_init(bars.eq(), 4 * nc);
#pragma unroll
        for (int s = 0; s < kStages; ++s) {
            fa4_mbar_init(bars.k(s), 1);
            fa4_mbar_init(bars.v(s), 1);
            fa4_mbar_init(bars.ek(s), 4 * nc);
            fa4_mbar_init(bars.ev(s), 4 * nc);
        }
        fa4_mbar_init_fence();
    }
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
        int it = 0, nq = 0; /* K/V ring iterations and Q loads so far */
        for (int base = 0, odd = 0; base < total; base += gridDim.x, odd ^= 1) {
            const int idx = fa4_sm90_walk(base, odd, blockIdx.x, gridDim.x, zigzag);
            if (idx >= total)
                continue;
            int m_tile, h, b;
            fa4_sm90_tile(idx, n_m, p.hq, &m_tile, &h, &b);
            const fa4_seq seq = fa4_seq_info(p, b);
            const int m0 = m_tile * mt;
            if (m0 >= seq.len_q)
                continue;
            const fa4_sm90_tiles tiles = fa4_sm90_kv_tiles(p, b, h, m0, seq.len_k);
            const int n_tiles = tiles.count;
            if (n_tiles <= 0)
                continue;
            const int qrow = (int)seq.row_q + m0, qb = p.cu_seqlens_q ? 0 : b;
            const int krow0 = (int)seq.row_k, kb = p.cu_seqlens_k ? 0 : b;
            const int hk = h / p.group;
            if (nq > 0)
                fa4_mbar_wait(bars.eq(), (unsigned)(nq - 1) & 1u);
            fa4_mbar_expect_tx(bars.q(), (unsigned)(mt * kDp * 2));
#pragma unroll
            for (int c = 0; c < kDp / 64; ++c)
                for (int r = 0; r < mt; r += kQBox)
                    fa4_tma_load_4d(s_q + (c * kM + r) * kPanelBytes, &tm_q, bars.q(), c * 64, qrow + r, h, qb);
            ++nq;
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
                    fa4_tma_load_4d(s_k + s * kKBytes + c * kN * kPanelBytes, &tm_k, bars.k(s), c * 64, krow, hk,
                                    kb);
                if (it >= kStages)
                    fa4_mbar_wait(bars.ev(s), ph);
                fa4_mbar_expect_tx(bars.v(s), kVBytes);
#pragma unroll
                for (int c = 0; c < kDvp / 64; ++c)
                    fa4_tma_load_4d(s_v + s * kVBytes + c * kN * kPanelBytes, &tm_v, bars.v(s), c * 64, krow, hk,
                                    kb);
            }
        }
    } else {
        /* ------------------------------------------------------------------- consumers */
        fa4_regs_inc<kConsumerRegs>();
        const int cw = wg - 1, warp = (tid >> 5) & 3, lane = tid & 31;
#if FA4_HAS_SCORE_MOD
        const float k2 = FA4_LOG2E;
#else
        const float k2 = p.scale * FA4_LOG2E;
#endif
        fa4_sm90_pingpong pp = {cw, nc, false};
        int it = 0, nq = 0;
        for (int base = kConsumers == 2 || cw < nc ? 0 : total, odd = 0; base < total;
             base += gridDim.x, odd ^= 1) {
            const int idx = fa4_sm90_walk(base, odd, blockIdx.x, gridDim.x, zigzag);
            if (idx >= total)
                continue;
            int m_tile, h, b;
            fa4_sm90_tile(idx, n_m, p.hq, &m_tile, &h, &b);
            const fa4_seq seq = fa4_seq_info(p, b);
            const int m0 = m_tile * mt;
            if (m0 >= seq.len_q)
                continue;
            const fa4_sm90_tiles tiles = fa4_sm90_kv_tiles(p, b, h, m0, seq.len_k);
            const int row0 = m0 + cw * 64 + warp * 16 + (lane >> 2);
            float o[kDvp / 8][4];
#pragma unroll
            for (int i = 0; i < kDvp / 8; ++i)
                o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
            float m[2] = {-FA4_INF, -FA4_INF}, l[2] = {0.f, 0.f};
            if (tiles.count > 0) {
                const fa4_sm90_consumer c = {p,      aux,       tiles, bars, b,  h,
                                             row0,   lane,      cw,    seq.len_q, seq.len_k,
                                             m0 + mt <= seq.len_q, k2, s_q + cw * 64 * kPanelBytes, s_k, s_v};
                fa4_mbar_wait(bars.q(), (unsigned)nq & 1u);
                c.run(o, m, l, it, pp);
                it += tiles.count;
                ++nq;
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
