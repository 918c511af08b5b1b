/*
 * fwd.cu - the sm90 (Hopper, sm_90a) forward program: O = softmax(score_mod(scale * Q K^T) masked) V
 * and LSE, with TMA loads, wgmma and warp specialisation.
 *
 * One CTA owns 128 query rows of one (batch, head); 384 threads in 3 warpgroups:
 *   warpgroup 0, the producer (registers cut to kProducerRegs): one thread issues TMA for the Q tile
 *     (once) and for K and V tiles into a kStages ring; full barriers complete with the bytes,
 *     empty barriers are released by the consumers' 8 warps.
 *   warpgroups 1, 2, the consumers (registers raised to kConsumerRegs), 64 query rows each:
 *     S = Q K^T as SS-wgmma from the swizzled tiles; score_mod and mask_mod on the S fragment
 *     (tiles inside a full block and inside the sequence skip every check); the online softmax in
 *     registers; P converted to 16-bit in registers and used as the A operand of the RS-wgmma
 *     O += P V (V is read N-major, transposed by the descriptor); then the epilogue.
 *     K and V stages have separate empty barriers (K is released as soon as S is done).
 * Heavier query tiles are launched first (blockIdx.x reversed), which helps causal block masks.
 *
 * Supported: bf16 and fp16; head dims 64/96/128/192/256 with Dv independent; any batch, head and
 * sequence strides that are multiples of 16 bytes (TMA); GQA/MQA; any Sq, Skv (tails: TMA zero fill
 * plus masking); score_mod and mask_mod with aux; block masks (q_block a multiple of 128, kv_block
 * a multiple of 16); varlen via cu_seqlens; q/kv offsets; empty rows give O = 0 and LSE = -inf.
 * The consumers' schedule (intra-warpgroup overlap, ping-pong) is in mainloop.cuh.
 * Not yet: persistent scheduling, TMA-store epilogue.
 */
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
    const unsigned bar_q = s_bar;
#define FA4_BAR_K(s) (s_bar + 8u * (1u + (unsigned)(s)))
#define FA4_BAR_V(s) (s_bar + 8u * (1u + kStages + (unsigned)(s)))
#define FA4_BAR_EK(s) (s_bar + 8u * (1u + 2u * kStages + (unsigned)(s)))
#define FA4_BAR_EV(s) (s_bar + 8u * (1u + 3u * kStages + (unsigned)(s)))

    const int m_tile = (int)(gridDim.x - 1 - blockIdx.x), h = blockIdx.y, b = blockIdx.z;
    const int tid = threadIdx.x;
    const fa4_seq seq = fa4_seq_info(p, b);
    const int m0 = m_tile * kM;
    if (m0 >= seq.len_q)
        return;
    const fa4_sm90_tiles tiles = fa4_sm90_kv_tiles(p, b, h, m_tile, seq.len_k);
    const int n_tiles = tiles.count;

    if (tid == 0) {
        fa4_mbar_init(bar_q, 1);
#pragma unroll
        for (int s = 0; s < kStages; ++s) {
            fa4_mbar_init(FA4_BAR_K(s), 1);
            fa4_mbar_init(FA4_BAR_V(s), 1);
            fa4_mbar_init(FA4_BAR_EK(s), 8);
            fa4_mbar_init(FA4_BAR_EV(s), 8);
        }
        fa4_mbar_init_fence();
    }
    __syncthreads();

    const int wg = tid >> 7;
    if (wg == 0) {
        /* ------------------------------------------------------------------- producer */
        fa4_regs_dec<kProducerRegs>();
        if (tid == 0 && n_tiles > 0) {
            fa4_tma_prefetch(&tm_q);
            fa4_tma_prefetch(&tm_k);
            fa4_tma_prefetch(&tm_v);
            const int qrow = (int)seq.row_q + m0, qb = p.cu_seqlens_q ? 0 : b;
            const int krow0 = (int)seq.row_k, kb = p.cu_seqlens_k ? 0 : b;
            const int hk = h / p.group;
            fa4_mbar_expect_tx(bar_q, kQBytes);
#pragma unroll
            for (int c = 0; c < kDp / 64; ++c)
                fa4_tma_load_4d(s_q + c * kM * kPanelBytes, &tm_q, bar_q, c * 64, qrow, h, qb);
            for (int j = 0; j < n_tiles; ++j) {
                const int s = j % kStages;
                const unsigned ph = (unsigned)((j / kStages) - 1) & 1u;
                bool full;
                const int krow = krow0 + tiles.start(j, &full);
                if (j >= kStages)
                    fa4_mbar_wait(FA4_BAR_EK(s), ph);
                fa4_mbar_expect_tx(FA4_BAR_K(s), kKBytes);
#pragma unroll
                for (int c = 0; c < kDp / 64; ++c)
                    fa4_tma_load_4d(s_k + s * kKBytes + c * kN * kPanelBytes, &tm_k, FA4_BAR_K(s), c * 64,
                                    krow, hk, kb);
                if (j >= kStages)
                    fa4_mbar_wait(FA4_BAR_EV(s), ph);
                fa4_mbar_expect_tx(FA4_BAR_V(s), kVBytes);
#pragma unroll
                for (int c = 0; c < kDvp / 64; ++c)
                    fa4_tma_load_4d(s_v + s * kVBytes + c * kN * kPanelBytes, &tm_v, FA4_BAR_V(s), c * 64,
                                    krow, hk, kb);
            }
        }
    } else {
        /* ------------------------------------------------------------------- consumers */
        fa4_regs_inc<kConsumerRegs>();
        const int cw = wg - 1, warp = (tid >> 5) & 3, lane = tid & 31;
        const int row0 = m0 + cw * 64 + warp * 16 + (lane >> 2);
#if FA4_HAS_SCORE_MOD
        const float k2 = FA4_LOG2E;
#else
        const float k2 = p.scale * FA4_LOG2E;
#endif
        const bool q_inside = m0 + kM <= seq.len_q;
        float o[kDvp / 8][4];
#pragma unroll
        for (int i = 0; i < kDvp / 8; ++i)
            o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
        float m[2] = {-FA4_INF, -FA4_INF}, l[2] = {0.f, 0.f};
        if (n_tiles > 0)
            fa4_mbar_wait(bar_q, 0);
        const fa4_sm90_consumer c = {p,   aux,       tiles,       b,   h,   row0, lane, cw, seq.len_q,
                                     seq.len_k, q_inside, k2, s_q + cw * 64 * kPanelBytes, s_k, s_v, s_bar};
        c.run(o, m, l);

        fa4_elem *g_o = (fa4_elem *)p.o.data + b * p.o.sb + h * p.o.sh + seq.row_q * p.o.ss;
        float *g_l = p.lse.data ? (float *)p.lse.data + b * p.lse.sb + h * p.lse.sh + seq.row_q * p.lse.ss : 0;
        fa4_sm90_epilogue<kDvp / 8>(o, m, l, g_o, p.o.ss, g_l, p.lse.ss, row0, seq.len_q, lane);
    }
#undef FA4_BAR_K
#undef FA4_BAR_V
#undef FA4_BAR_EK
#undef FA4_BAR_EV
}
