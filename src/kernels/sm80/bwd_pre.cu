/*
 * bwd_pre.cu - the first backward program: per query row, dpsum = rowsum(dO * O) (fp32) and the LSE
 * in log2 units (+inf for rows with nothing allowed, so that P = exp2(s - lse2) is 0 there, not NaN),
 * both into the workspace where the main kernel reads them (dpsum less d loss / d LSE where the caller
 * gives it). A CTA covers 64 rows of one (batch, head), a warp per row at a time. Supports everything the forward does (varlen, strides).
 * It also zeroes what the main kernel adds into, for its rows: dq_accum (every slot) and, in the
 * sm90 deterministic backward, the rows' dQ turn counters (p.dq_sem); and the persistent sm90
 * main's work counter (p.bwd_next); no memset launch before it.
 * PDL (ptx.cuh): the launchers launch it plainly (its predecessor may be anything); its wait comes
 * first all the same, before it reads O, dO, LSE or writes the workspace that the previous
 * backward's post reads; then it lets the main kernel start.
 */
#include "fa4_mod.cuh"
#include "common/params.h"
#include "common/ptx.cuh"
#include "sm80/config.cuh"
#include "sm80/scheduler.cuh"

extern "C" __global__ void __launch_bounds__(128) fa4_sm80_bwd_pre(const fa4_params p, const fa4_aux aux)
{
    const int h = blockIdx.y, b = blockIdx.z;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const fa4_seq seq = fa4_seq_info(p, b);
    const int m0 = blockIdx.x * kBwdM;
    /* the persistent sm90 main's work counter (params.h bwd_next), by the first CTA whether or not
     * it has rows (the main reads it only after this grid completes) */
    if (p.bwd_next && (blockIdx.x | blockIdx.y | blockIdx.z | threadIdx.x) == 0) {
        fa4_pdl_wait();
        *p.bwd_next = 0;
    }
    if (m0 >= seq.len_q)
        return;
    fa4_pdl_wait();
    fa4_pdl_launch(); /* the main kernel's prologue (K, V loads) may start; it waits for this grid */
    {
        /* rows past the sequence are left as they are: the main kernels add nothing but zeros
         * there (sm90's 64-row TMA boxes), and bwd_post never reads them */
        const long long row0 = (long long)h * p.ws_rows + seq.ws_row + m0;
        const int n4 = min(kBwdM, seq.len_q - m0) * (kD / 4);
        const long long slot4 = (long long)p.hq * p.ws_rows * (kD / 4);
        float *z = p.dq_accum + row0 * kD;
        for (int s = 0; s < p.dq_slots; ++s)
            for (int i = threadIdx.x; i < n4; i += blockDim.x)
                asm volatile("st.global.v4.f32 [%0], {%1, %1, %1, %1};\n" ::"l"(z + (s * slot4 + i) * 4), "f"(0.f)
                             : "memory");
        /* the turn counters of the query tiles that start in these rows, [(row / 4) * 2 + column
         * half] (bwd_consumer.cuh): at every 16th row, so that the 80-row tiles of bwd_main80.cu
         * find theirs zeroed as the 64-row ones do */
        if (p.dq_sem && threadIdx.x < 2 * (kBwdM / 16) && m0 + 16 * (int)(threadIdx.x >> 1) < seq.len_q)
            p.dq_sem[((row0 + 16 * (threadIdx.x >> 1)) >> 2) * 2 + (threadIdx.x & 1)] = 0;
        /* the sm90 80-query main's fused dQ conversion without a block mask (params.h dq_cnt): every
         * key tile of 128 keys adds into every 80-row tile once; the counters at the same places.
         * Without keys no CTA adds, so dQ is 0: written here. (With a block mask,
         * fa4_sm90_bwd_expect80 sets the counters.) */
#if defined(FA4_SM90_BWD_DQ_FUSED_BUILD) && FA4_SM90_BWD_DQ_FUSED_BUILD
        if (p.dq_cnt && !p.has_block_mask) {
            const int key_tiles = (seq.len_k + 127) / 128;
            if (threadIdx.x < 2 * (kBwdM / 16) && m0 + 16 * (int)(threadIdx.x >> 1) < seq.len_q)
                p.dq_cnt[((row0 + 16 * (threadIdx.x >> 1)) >> 2) * 2 + (threadIdx.x & 1)] = key_tiles;
            if (key_tiles == 0) {
                fa4_elem *gdQ = (fa4_elem *)p.dq.data + b * p.dq.sb + h * p.dq.sh + (seq.row_q + m0) * p.dq.ss;
                const int rows = min(kBwdM, seq.len_q - m0);
                for (int i = threadIdx.x; i < rows * p.head_dim; i += blockDim.x)
                    gdQ[(long long)(i / p.head_dim) * p.dq.ss + i % p.head_dim] = fa4_from_float(0.f);
            }
        }
#endif
    }
    const fa4_elem *gO = (const fa4_elem *)p.o.data + b * p.o.sb + h * p.o.sh + seq.row_q * p.o.ss;
    const fa4_elem *gdO = (const fa4_elem *)p.dout.data + b * p.dout.sb + h * p.dout.sh + seq.row_q * p.dout.ss;
    const float *gL = (const float *)p.lse.data + b * p.lse.sb + h * p.lse.sh + seq.row_q * p.lse.ss;
    /* d loss / d LSE, where the caller gives one: the LSE term of dS = P (dP - rowsum(dO O) + dlse)
     * is folded into dpsum, so the main kernels need nothing else */
    const float *gdL = p.dlse.data ? (const float *)p.dlse.data + b * p.dlse.sb + h * p.dlse.sh + seq.row_q * p.dlse.ss
                                   : nullptr;
    float *dps = p.dpsum + h * p.ws_rows + seq.ws_row;
    float *l2 = p.lse2 + h * p.ws_rows + seq.ws_row;
    /* 16-byte loads where the head dim and O's and dO's layouts allow (kL lanes per row, 32 / kL
     * rows per warp at a time): the kernel is bandwidth-bound, and a warp per row with 4-byte
     * loads kept too few bytes in flight. Else the portable loop below. */
    constexpr int kL = kDv >= 8 ? kDv / 8 : 1;
    constexpr bool kWideRows = kDv % 8 == 0 && kL <= 32 && 32 % kL == 0; /* whole rows per warp */
    const bool wide = kWideRows &&
                      (((unsigned long long)gO | (unsigned long long)gdO |
                        ((unsigned long long)p.o.ss * sizeof(fa4_elem)) |
                        ((unsigned long long)p.dout.ss * sizeof(fa4_elem))) & 15) == 0;
    if (wide) {
        struct alignas(16) u4 { unsigned x, y, z, w; };
        constexpr int kR = kWideRows ? 32 / kL : 1;
        const fa4_elem *__restrict__ o_ = gO;
        const fa4_elem *__restrict__ d_ = gdO;
        const int sub = lane / kL, c = (lane % kL) * 8;
#pragma unroll 2
        for (int r0 = m0 + warp * kR; r0 < m0 + kBwdM; r0 += 4 * kR) { /* 64 % (4 kR) == 0 */
            const int r = r0 + sub;
            float acc = 0.f;
            if (r < seq.len_q) {
                const u4 o4 = *(const u4 *)(o_ + (long long)r * p.o.ss + c);
                const u4 d4 = *(const u4 *)(d_ + (long long)r * p.dout.ss + c);
                const unsigned ow[4] = {o4.x, o4.y, o4.z, o4.w}, dw[4] = {d4.x, d4.y, d4.z, d4.w};
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    acc += fa4_to_float((fa4_elem)(ow[j] & 0xffff)) * fa4_to_float((fa4_elem)(dw[j] & 0xffff));
                    acc += fa4_to_float((fa4_elem)(ow[j] >> 16)) * fa4_to_float((fa4_elem)(dw[j] >> 16));
                }
            }
#pragma unroll
            for (int off = kL / 2; off > 0; off >>= 1) /* within the row's kL lanes */
                acc += __shfl_xor_sync(0xffffffffu, acc, off);
            if (lane % kL == 0 && r < seq.len_q) {
                const float lse = gL[(long long)r * p.lse.ss];
                dps[r] = gdL ? acc - gdL[(long long)r * p.dlse.ss] : acc;
                l2[r] = lse == -FA4_INF ? FA4_INF : lse * FA4_LOG2E;
            }
        }
        return;
    }
    for (int r = m0 + warp; r < m0 + kBwdM && r < seq.len_q; r += 4) {
        float acc = 0.f;
        for (int c = lane * 2; c < kDv; c += 64) {
            const unsigned o2 = *(const unsigned *)(gO + (long long)r * p.o.ss + c);
            const unsigned d2 = *(const unsigned *)(gdO + (long long)r * p.dout.ss + c);
            acc += fa4_to_float((fa4_elem)(o2 & 0xffff)) * fa4_to_float((fa4_elem)(d2 & 0xffff));
            acc += fa4_to_float((fa4_elem)(o2 >> 16)) * fa4_to_float((fa4_elem)(d2 >> 16));
        }
#pragma unroll
        for (int off = 16; off > 0; off >>= 1)
            acc += __shfl_xor_sync(0xffffffffu, acc, off);
        if (lane == 0) {
            const float lse = gL[(long long)r * p.lse.ss];
            dps[r] = gdL ? acc - gdL[(long long)r * p.dlse.ss] : acc;
            l2[r] = lse == -FA4_INF ? FA4_INF : lse * FA4_LOG2E;
        }
    }
}
