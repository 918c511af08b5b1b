/*
 * fwd.cu - the sm80 forward program: O = softmax(score_mod(scale * Q K^T) masked) V and LSE.
 * FA2-style: a CTA owns 128 query rows of one (batch, head), 8 warps of 16 rows (config.cuh also
 * has a 4 warps x 32 rows geometry, measured slower and off); K and V tiles of 64 keys (32 for
 * Dv 256) stream through shared memory with cp.async (K(j+1) loads while softmax and P V of tile j
 * run, V(j+1) while Q K^T of tile j+1 runs); P stays in registers, packed to 16 bits, as the A
 * operand of P V.
 *
 * Supported: bf16 and fp16; head dims 64/96/128/192/256 with Dv independent; arbitrary batch, head
 * and sequence strides (BHSD, BSHD; 16-byte aligned rows); GQA/MQA (kv head = h / group); any Sq,
 * Skv; score_mod and mask_mod with aux; block-sparse masks (partial blocks run mask_mod, full blocks
 * skip it, absent blocks are never loaded); varlen via cu_seqlens; q/kv offsets; empty rows give
 * O = 0 and LSE = -inf. Not supported: dropout, softcapping outside score_mod, paged KV.
 */
/* Checked builds: an out-of-range aux read sets a flag that each thread tests once at the end
 * (fa4_mod_checked_finish) instead of trapping inside the loop, which made ptxas spill. */
#define FA4_CHECKED_DEFERRED 1
#include "fa4_mod.cuh"
#include "common/params.h"
#include "common/ptx.cuh"
#include "sm80/config.cuh"
#include "sm80/load.cuh"
#include "sm80/mma.cuh"
#include "sm80/scheduler.cuh"
#include "sm80/mask.cuh"
#include "sm80/softmax.cuh"
#include "sm80/epilogue.cuh"

extern "C" __global__ void __launch_bounds__(kFwdThreads, kFwdMinBlocks)
    fa4_sm80_fwd(const fa4_params p, const fa4_aux aux)
{
    extern __shared__ __attribute__((aligned(128))) unsigned char fa4_smem[];
    fa4_elem *sQ = (fa4_elem *)fa4_smem;
    fa4_elem *sK = sQ + kFwdM * kLdQ;
    fa4_elem *sV = sK + kFwdN * kLdQ;

    const int m_tile = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const fa4_seq seq = fa4_seq_info(p, b);
    const int m0 = m_tile * kFwdM;
    if (m0 >= seq.len_q)
        return;
    const int hk = h / p.group;

    const fa4_elem *gQ = (const fa4_elem *)p.q.data + b * p.q.sb + h * p.q.sh + (seq.row_q + m0) * p.q.ss;
    const fa4_elem *gK = (const fa4_elem *)p.k.data + b * p.k.sb + hk * p.k.sh + seq.row_k * p.k.ss;
    const fa4_elem *gV = (const fa4_elem *)p.v.data + b * p.v.sb + hk * p.v.sh + seq.row_k * p.v.ss;
    const fa4_tile_list tiles = fa4_kv_tiles(p, b, h, m_tile, kFwdM, kFwdN, seq.len_k);
    const int n_tiles = tiles.count;

    bool full = false;
    int n = n_tiles > 0 ? tiles.tile(0, &full) : 0;
    fa4_load_tile<kFwdM, kD, kFwdThreads>(sQ, kLdQ, gQ, p.q.ss, seq.len_q - m0, p.q.data, tid);
    if (n_tiles > 0)
        fa4_load_tile<kFwdN, kD, kFwdThreads>(sK, kLdQ, gK + (long long)n * kFwdN * p.k.ss, p.k.ss,
                                              seq.len_k - n * kFwdN, p.k.data, tid);
    fa4_cp_async_commit();
    if (n_tiles > 0)
        fa4_load_tile<kFwdN, kDv, kFwdThreads>(sV, kLdV, gV + (long long)n * kFwdN * p.v.ss, p.v.ss,
                                               seq.len_k - n * kFwdN, p.v.data, tid);
    fa4_cp_async_commit();

    float acc_o[kFwdMI][kDv / 8][4];
#pragma unroll
    for (int mi = 0; mi < kFwdMI; ++mi)
#pragma unroll
        for (int i = 0; i < kDv / 8; ++i)
            acc_o[mi][i][0] = acc_o[mi][i][1] = acc_o[mi][i][2] = acc_o[mi][i][3] = 0.f;
    float m[kFwdMI][2], l[kFwdMI][2];
#pragma unroll
    for (int mi = 0; mi < kFwdMI; ++mi)
        m[mi][0] = m[mi][1] = -FA4_INF, l[mi][0] = l[mi][1] = 0.f;
    const int row0 = m0 + warp * 16 * kFwdMI + (lane >> 2);

    unsigned qf[kFwdQInRegs ? kD / 16 : 1][4];
    for (int j = 0; j < n_tiles; ++j) {
        fa4_cp_async_wait<1>();
        __syncthreads();
        if (kFwdQInRegs && j == 0)
            fa4_load_a_frags<kFwdQInRegs ? kD : 16>(qf, sQ + warp * 16 * kLdQ, kLdQ, lane);
        float s[kFwdMI][kFwdN / 8][4];
#pragma unroll
        for (int mi = 0; mi < kFwdMI; ++mi)
#pragma unroll
            for (int i = 0; i < kFwdN / 8; ++i)
                s[mi][i][0] = s[mi][i][1] = s[mi][i][2] = s[mi][i][3] = 0.f;
        if constexpr (kFwdQInRegs)
            fa4_warp_gemm_ar<kFwdMI, kFwdN, kFwdQInRegs ? kD : 16>(s, qf, sK, kLdQ, lane);
        else
            fa4_warp_gemm<16 * kFwdMI, kFwdN, kD, false, false, kFwdQkUnroll>(s, sQ + warp * 16 * kFwdMI * kLdQ, kLdQ,
                                                                              sK, kLdQ, lane);
        __syncthreads();
        const int n_cur = n;
        const bool full_cur = full;
        if (j + 1 < n_tiles) {
            n = tiles.tile(j + 1, &full);
            fa4_load_tile<kFwdN, kD, kFwdThreads>(sK, kLdQ, gK + (long long)n * kFwdN * p.k.ss, p.k.ss,
                                                  seq.len_k - n * kFwdN, p.k.data, tid);
        }
        fa4_cp_async_commit();

        unsigned pa[kFwdMI][kFwdN / 16][4]; /* P as 16-bit A fragments: half the registers of fp32 */
#pragma unroll
        for (int mi = 0; mi < kFwdMI; ++mi) {
            fa4_scores<kFwdN / 8>(s[mi], p, aux, b, h, row0 + 16 * mi, n_cur * kFwdN + 2 * (lane & 3),
                                  seq.len_q, seq.len_k, full_cur);
            float corr[2];
            fa4_online_softmax<kFwdN / 8>(s[mi], m[mi], l[mi], corr);
            fa4_pack_a<kFwdN>(pa[mi], s[mi]);
#pragma unroll
            for (int i = 0; i < kDv / 8; ++i) {
                acc_o[mi][i][0] *= corr[0];
                acc_o[mi][i][1] *= corr[0];
                acc_o[mi][i][2] *= corr[1];
                acc_o[mi][i][3] *= corr[1];
            }
        }

        fa4_cp_async_wait<1>();
        __syncthreads();
        fa4_warp_gemm_rs<kFwdMI, kDv, kFwdN>(acc_o, pa, sV, kLdV, lane);
        __syncthreads();
        if (j + 1 < n_tiles)
            fa4_load_tile<kFwdN, kDv, kFwdThreads>(sV, kLdV, gV + (long long)n * kFwdN * p.v.ss, p.v.ss,
                                                   seq.len_k - n * kFwdN, p.v.data, tid);
        fa4_cp_async_commit();
    }
    fa4_cp_async_wait<0>();

    fa4_elem *gO = (fa4_elem *)p.o.data + b * p.o.sb + h * p.o.sh + seq.row_q * p.o.ss;
    float *gL = p.lse.data ? (float *)p.lse.data + b * p.lse.sb + h * p.lse.sh + seq.row_q * p.lse.ss : 0;
#pragma unroll
    for (int mi = 0; mi < kFwdMI; ++mi)
        fa4_fwd_epilogue<kDv / 8>(acc_o[mi], m[mi], l[mi], gO, p.o.ss, gL, p.lse.ss, row0 + 16 * mi, seq.len_q,
                                  lane);
    fa4_checked_finish();
}
