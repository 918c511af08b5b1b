/*
 * bwd_main.cu - the main backward program, KV-stationary: a CTA owns 64 keys of one (batch, kv head),
 * keeps dK and dV for them in registers, and walks every query head of its GQA group and every
 * query tile (64 rows) that the block mask (or the dense sequence) pairs with its keys. Per step:
 *   S = Q K^T, dP = dO V^T                 (8 warps as 4 x 2, operands from shared memory)
 *   P = exp2(score_mod(scale S) log2e - lse2), masked; dS = P (dP - dpsum) * d score_mod / d score
 *   trainable aux: terms P (dP - dpsum) d mod/d aux[i] summed per run of equal addresses in a
 *   thread's registers (fa4_score_mod_aux_grad_acc), one atomic per run, the rest per warp at the
 *   step's end (fa4_aux_grad_flush)
 *   P, dS -> shared memory (16-bit); dV += P^T dO; dK += dS^T Q; dQ += dS K (fp32 atomics into the
 *   workspace, or plain stores into this kv tile's own slot in deterministic mode).
 * The query tiles of all heads of the group form one walk (fa4_bwd_cursor); with two stages the
 * next tile's Q and dO load (cp.async) while the current one computes.
 * The softmax scale is applied to dK here and to dQ in bwd_post.
 *
 * Supported: everything the forward supports (dtypes, head dims, Dv != D, strides, GQA/MQA, varlen,
 * offsets, score_mod / mask_mod with aux, block-sparse masks through the transposed q lists, empty
 * rows), trainable aux gradients, deterministic dQ. Aux gradients use the mod's atomics: float in
 * the default mode, fixed-point integer adds in deterministic mode (the host tags the gradient
 * pointers; fa4_aux_grad_global), so bitwise reproducible there.
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

/* The walk over (query head of the group, query tile of that head's list). */
struct fa4_bwd_cursor {
    int hh, j, h, m0;
    bool full;
    fa4_tile_list tiles;

    /* Advance to the next tile inside the sequence; false when the walk is over. */
    __device__ __forceinline__ bool next(const fa4_params &p, int b, int hk, int n_tile, int len_q)
    {
        for (;;) {
            ++j;
            while (j >= tiles.count) {
                if (++hh >= p.group)
                    return false;
                tiles = fa4_q_tiles(p, b, hk * p.group + hh, n_tile, kBwdM, kBwdN, len_q);
                j = 0;
            }
            h = hk * p.group + hh;
            m0 = tiles.tile(j, &full) * kBwdM;
            if (m0 < len_q)
                return true;
        }
    }
};

extern "C" __global__ void __launch_bounds__(kBwdThreads, 1)
    fa4_sm80_bwd_main(const fa4_params p, const fa4_aux aux)
{
    extern __shared__ __attribute__((aligned(128))) unsigned char fa4_smem[];
    fa4_elem *sK = (fa4_elem *)fa4_smem;
    fa4_elem *sV = sK + kBwdN * kLdQ;
    fa4_elem *sP = sV + kBwdN * kLdV;
    fa4_elem *sdS = sP + kBwdM * kLdP;
    float *sL2 = (float *)(sdS + kBwdM * kLdP);
    float *sDps = sL2 + kBwdM;
    fa4_elem *sStage = (fa4_elem *)(sDps + kBwdM); /* kBwdStages x (Q tile, dO tile) */

    const int n_tile = blockIdx.x, hk = blockIdx.y, b = blockIdx.z;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp & 3, wn = warp >> 2;
    const int g = lane >> 2, t = lane & 3;
    const fa4_seq seq = fa4_seq_info(p, b);
    const int n0 = n_tile * kBwdN;
    if (n0 >= seq.len_k)
        return;

    const fa4_elem *gK = (const fa4_elem *)p.k.data + b * p.k.sb + hk * p.k.sh + (seq.row_k + n0) * p.k.ss;
    const fa4_elem *gV = (const fa4_elem *)p.v.data + b * p.v.sb + hk * p.v.sh + (seq.row_k + n0) * p.v.ss;
    fa4_load_tile<kBwdN, kD, kBwdThreads>(sK, kLdQ, gK, p.k.ss, seq.len_k - n0, p.k.data, tid);
    fa4_load_tile<kBwdN, kDv, kBwdThreads>(sV, kLdV, gV, p.v.ss, seq.len_k - n0, p.v.data, tid);

    float acc_dk[1][kD / 16][4], acc_dv[1][kDv / 16][4];
#pragma unroll
    for (int i = 0; i < kD / 16; ++i)
        acc_dk[0][i][0] = acc_dk[0][i][1] = acc_dk[0][i][2] = acc_dk[0][i][3] = 0.f;
#pragma unroll
    for (int i = 0; i < kDv / 16; ++i)
        acc_dv[0][i][0] = acc_dv[0][i][1] = acc_dv[0][i][2] = acc_dv[0][i][3] = 0.f;

    float *dq_base = p.dq_accum + (p.deterministic ? (long long)n_tile * p.hq * p.ws_rows * kD : 0);

    /* Q and dO of query tile (h, m0) into stage `st` (no commit). */
    auto load_q = [&](int h, int m0, int st) {
        fa4_elem *sQ = sStage + st * (kBwdM * kLdQ + kBwdM * kLdV);
        fa4_elem *sdO = sQ + kBwdM * kLdQ;
        const fa4_elem *gQ = (const fa4_elem *)p.q.data + b * p.q.sb + h * p.q.sh + (seq.row_q + m0) * p.q.ss;
        const fa4_elem *gdO =
            (const fa4_elem *)p.dout.data + b * p.dout.sb + h * p.dout.sh + (seq.row_q + m0) * p.dout.ss;
        fa4_load_tile<kBwdM, kD, kBwdThreads>(sQ, kLdQ, gQ, p.q.ss, seq.len_q - m0, p.q.data, tid);
        fa4_load_tile<kBwdM, kDv, kBwdThreads>(sdO, kLdV, gdO, p.dout.ss, seq.len_q - m0, p.dout.data, tid);
    };

    fa4_bwd_cursor cur;
    cur.hh = 0;
    cur.j = -1;
    cur.tiles = fa4_q_tiles(p, b, hk * p.group, n_tile, kBwdM, kBwdN, seq.len_q);
    bool have = cur.next(p, b, hk, n_tile, seq.len_q);
    if (have && kBwdStages == 2)
        load_q(cur.h, cur.m0, 0);
    fa4_cp_async_commit(); /* K, V (and the first Q, dO) */
    int stage = 0;

    while (have) {
        fa4_bwd_cursor nxt = cur;
        const bool have_next = nxt.next(p, b, hk, n_tile, seq.len_q);
        if (kBwdStages == 2) {
            if (have_next)
                load_q(nxt.h, nxt.m0, stage ^ 1); /* its last readers passed the barrier below */
            fa4_cp_async_commit();
            fa4_cp_async_wait<1>();
        } else {
            load_q(cur.h, cur.m0, 0);
            fa4_cp_async_commit();
            fa4_cp_async_wait<0>();
        }
        const int h = cur.h, m0 = cur.m0;
        const bool full = cur.full;
        const fa4_elem *sQ = sStage + stage * (kBwdM * kLdQ + kBwdM * kLdV);
        const fa4_elem *sdO = sQ + kBwdM * kLdQ;
        if (tid < kBwdM) {
            const bool ok = m0 + tid < seq.len_q;
            sL2[tid] = ok ? p.lse2[h * p.ws_rows + seq.ws_row + m0 + tid] : FA4_INF;
            sDps[tid] = ok ? p.dpsum[h * p.ws_rows + seq.ws_row + m0 + tid] : 0.f;
        }
        __syncthreads();

        float s[1][4][4], dp[1][4][4];
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int e = 0; e < 4; ++e)
                s[0][i][e] = dp[0][i][e] = 0.f;
        fa4_warp_gemm<16, 32, kD, false, false>(s, sQ + wm * 16 * kLdQ, kLdQ, sK + wn * 32 * kLdQ, kLdQ, lane);
        fa4_warp_gemm<16, 32, kDv, false, false>(dp, sdO + wm * 16 * kLdV, kLdV, sV + wn * 32 * kLdV, kLdV, lane);

#if FA4_HAS_TRAINABLE_AUX && FA4_NUM_AUX_GRAD_SITES > 0
        fa4_aux_grad_acc acc;
        fa4_aux_grad_begin(acc);
#endif
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int r = wm * 16 + g + (e >= 2 ? 8 : 0);
                const int c = wn * 32 + ni * 8 + 2 * t + (e & 1);
                const int qi = m0 + r, ki = n0 + c;
                const float xs = s[0][ni][e] * p.scale;
                const bool ok = fa4_allowed(p, aux, b, h, qi, ki, seq.len_q, seq.len_k, full);
                float x = xs, dmod = 1.f;
#if FA4_HAS_TRAINABLE_AUX && FA4_NUM_AUX_GRAD_SITES > 0
                int at[FA4_NUM_AUX_GRAD_SITES]; /* the index each trainable site read */
                if (ok)
                    x = fa4_score_mod_fwd_deriv_sites(xs, b, h, (int)(qi + p.q_offset), (int)(ki + p.kv_offset),
                                                      aux, &dmod, at);
#elif FA4_HAS_SCORE_MOD
                if (ok)
                    x = fa4_score_mod_fwd_deriv(xs, b, h, (int)(qi + p.q_offset), (int)(ki + p.kv_offset), aux,
                                                &dmod);
#endif
                const float pr = ok ? fa4_exp2(fmaf(x, FA4_LOG2E, -sL2[r])) : 0.f;
                const float ds = pr * (dp[0][ni][e] - sDps[r]);
#if FA4_HAS_TRAINABLE_AUX && FA4_NUM_AUX_GRAD_SITES > 0
                if (ok)
                    fa4_score_mod_aux_grad_acc(xs, b, h, (int)(qi + p.q_offset), (int)(ki + p.kv_offset), aux, ds,
                                               at, acc);
#endif
                s[0][ni][e] = pr;
                dp[0][ni][e] = ok ? ds * dmod : 0.f;
            }
            const int c = wn * 32 + ni * 8 + 2 * t;
            const int r = wm * 16 + g;
            *(unsigned *)(sP + r * kLdP + c) = fa4_pack2(s[0][ni][0], s[0][ni][1]);
            *(unsigned *)(sP + (r + 8) * kLdP + c) = fa4_pack2(s[0][ni][2], s[0][ni][3]);
            *(unsigned *)(sdS + r * kLdP + c) = fa4_pack2(dp[0][ni][0], dp[0][ni][1]);
            *(unsigned *)(sdS + (r + 8) * kLdP + c) = fa4_pack2(dp[0][ni][2], dp[0][ni][3]);
        }
#if FA4_HAS_TRAINABLE_AUX && FA4_NUM_AUX_GRAD_SITES > 0
        fa4_aux_grad_flush(aux, acc); /* every lane of the warp is here */
#endif
        __syncthreads();

        /* dV (keys wm*16.., columns wn*Dv/2..) += P^T dO; dK += dS^T Q */
        fa4_warp_gemm<16, kDv / 2, kBwdM, true, true>(acc_dv, sP + wm * 16, kLdP, sdO + wn * (kDv / 2), kLdV, lane);
        fa4_warp_gemm<16, kD / 2, kBwdM, true, true>(acc_dk, sdS + wm * 16, kLdP, sQ + wn * (kD / 2), kLdQ, lane);

        /* dQ (queries wm*16.., columns wn*D/2..) += dS K, a chunk of columns at a time */
        float *dqh = dq_base + ((long long)h * p.ws_rows + seq.ws_row) * kD;
#pragma unroll 1
        for (int c0 = wn * (kD / 2); c0 < (wn + 1) * (kD / 2); c0 += kBwdDqChunk) {
            float dq[1][kBwdDqChunk / 8][4];
#pragma unroll
            for (int i = 0; i < kBwdDqChunk / 8; ++i)
                dq[0][i][0] = dq[0][i][1] = dq[0][i][2] = dq[0][i][3] = 0.f;
            fa4_warp_gemm<16, kBwdDqChunk, kBwdN, false, true>(dq, sdS + wm * 16 * kLdP, kLdP, sK + c0, kLdQ, lane);
            /* lanes t and t^1 swap halves so each holds 4 consecutive columns of one row: one
             * 16-byte reduction (or store) per 8 columns instead of two or four */
#pragma unroll
            for (int i = 0; i < kBwdDqChunk / 8; ++i) {
                const bool odd = t & 1;
                const float r0 = __shfl_xor_sync(0xffffffffu, odd ? dq[0][i][0] : dq[0][i][2], 1);
                const float r1 = __shfl_xor_sync(0xffffffffu, odd ? dq[0][i][1] : dq[0][i][3], 1);
                const float v0 = odd ? r0 : dq[0][i][0], v1 = odd ? r1 : dq[0][i][1];
                const float v2 = odd ? dq[0][i][2] : r0, v3 = odd ? dq[0][i][3] : r1;
                const int qi = m0 + wm * 16 + g + (odd ? 8 : 0);
                const int col = c0 + i * 8 + 2 * (t & 2);
                if (qi < seq.len_q) {
                    float *dst = dqh + (long long)qi * kD + col;
                    if (p.deterministic) {
                        dst[0] = v0;
                        dst[1] = v1;
                        dst[2] = v2;
                        dst[3] = v3;
                    } else {
                        fa4_red_add4(dst, v0, v1, v2, v3);
                    }
                }
            }
        }
        __syncthreads(); /* this step is done with its Q/dO stage, sP, sdS, sL2, sDps */
        stage ^= (kBwdStages - 1);
        cur = nxt;
        have = have_next;
    }
    fa4_cp_async_wait<0>();

    /* epilogue: dK (scaled) and dV for the keys inside the sequence */
    fa4_elem *gdK = (fa4_elem *)p.dk.data + b * p.dk.sb + hk * p.dk.sh + (seq.row_k + n0) * p.dk.ss;
    fa4_elem *gdV = (fa4_elem *)p.dv.data + b * p.dv.sb + hk * p.dv.sh + (seq.row_k + n0) * p.dv.ss;
#pragma unroll
    for (int r2 = 0; r2 < 2; ++r2) {
        const int r = wm * 16 + g + 8 * r2;
        if (n0 + r < seq.len_k) {
#pragma unroll
            for (int i = 0; i < kD / 16; ++i)
                *(unsigned *)(gdK + (long long)r * p.dk.ss + wn * (kD / 2) + i * 8 + 2 * t) =
                    fa4_pack2(acc_dk[0][i][2 * r2] * p.scale, acc_dk[0][i][2 * r2 + 1] * p.scale);
#pragma unroll
            for (int i = 0; i < kDv / 16; ++i)
                *(unsigned *)(gdV + (long long)r * p.dv.ss + wn * (kDv / 2) + i * 8 + 2 * t) =
                    fa4_pack2(acc_dv[0][i][2 * r2], acc_dv[0][i][2 * r2 + 1]);
        }
    }
    fa4_checked_finish();
}
