/*
 * epilogue.cuh - the epilogue of the sm90 forward: normalise O by the row sums and write O (16-bit)
 * and LSE (fp32, natural log; the row max is kept in log2 units) for the rows inside the sequence,
 * straight from the accumulator fragment. Rows with no allowed key have l = 0: O = 0 and
 * LSE = -inf, as FlexAttention returns them.
 */
#ifndef FA4_SM90_EPILOGUE_CUH
#define FA4_SM90_EPILOGUE_CUH

/* FA4_SM90_FWD_STG128 (config.cuh): O in 16-byte stores. A row's words (two 16-bit columns each)
 * lie across the four lanes of a quad, lane t holding columns 8 ni + 2t, +1 of every 8-column block
 * ni; two shfl.xor rounds (1, then 2) of two words each transpose every group of four blocks within
 * the quad, so that lane t holds block 4 grp + t whole (8 consecutive elements of its row), and one
 * st.global.v4 per group writes it: a warp store then covers 64 contiguous bytes of each of its
 * 8 rows, whole 32-byte sectors, where the 4-byte stores covered half sectors (session 8's ncu:
 * 46% of the forward's global sectors excessive, the 32 4-byte STG per thread stalled on
 * lg_throttle). The transpose was checked in a Python model of the fragment (notes/
 * issue8-fwd-overlap.md, session 9). The stores are inline PTX: a C-level 16-byte store was split
 * into 4-byte ones by ptxas (session 8). Rows, strides and O's base are 16-byte aligned (launch.c's
 * check_tensor), and kDv is a multiple of 32 (config.cuh), so the groups are whole.
 * FA4_SM90_FWD_STG128 2: 8-byte stores after one shuffle round instead (whole sectors too). */
/* (the quad transpose, fa4_sm90_quad_transpose, is in ptx90.cuh: the backward's epilogue uses it too) */
template <int NT>
__device__ __forceinline__ void fa4_sm90_epilogue(const float (&acc)[NT][4], const float (&m)[2],
                                                  const float (&l)[2], fa4_elem *o, long long o_ss,
                                                  float *lse, long long lse_ss, int row0, int len_q,
                                                  int lane)
{
    const int t = lane & 3;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        const int row = row0 + 8 * r;
#if FA4_SM90_ROWSUM_MMA
        const float sum = l[r]; /* the whole row's already (mainloop.cuh issue_pv) */
#else
        const float sum = fa4_quad_sum(l[r]);
#endif
        const float inv = sum > 0.f ? 1.f / sum : 0.f;
#if FA4_SM90_FWD_STG128 == 2
        /* 8-byte stores: one xor-1 shuffle per pair of blocks (2q, 2q + 1); the even lane keeps
         * block 2q (words t, t + 1), the odd lane block 2q + 1 (words t - 1, t): a quad writes 32
         * contiguous bytes of its row, one whole sector, with half the shuffles of 16 bytes */
        fa4_elem *orow = o + (long long)row * o_ss;
        const bool odd = t & 1;
#pragma unroll
        for (int q = 0; q < kDv / 16; ++q) {
            const unsigned w0 = fa4_pack2(acc[2 * q][2 * r] * inv, acc[2 * q][2 * r + 1] * inv);
            const unsigned w1 = fa4_pack2(acc[2 * q + 1][2 * r] * inv, acc[2 * q + 1][2 * r + 1] * inv);
            const unsigned x = __shfl_xor_sync(0xffffffffu, odd ? w0 : w1, 1);
            if (row < len_q)
                asm volatile("st.global.v2.b32 [%0], {%1, %2};\n" ::"l"(orow + (2 * q + odd) * 8 + 2 * (t & 2)),
                             "r"(odd ? x : w0), "r"(odd ? w1 : x));
        }
        if (row < len_q) {
#elif FA4_SM90_FWD_STG128
        /* the shuffles outside the row test: a quad's lanes share their row, a warp's do not */
        fa4_elem *orow = o + (long long)row * o_ss;
#pragma unroll
        for (int g = 0; g < kDv / 32; ++g) {
            unsigned w[4];
#pragma unroll
            for (int k = 0; k < 4; ++k)
                w[k] = fa4_pack2(acc[4 * g + k][2 * r] * inv, acc[4 * g + k][2 * r + 1] * inv);
            fa4_sm90_quad_transpose(w, t);
            if (row < len_q)
                asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"l"(orow + (4 * g + t) * 8), "r"(w[0]),
                             "r"(w[1]), "r"(w[2]), "r"(w[3]));
        }
        if (row < len_q) {
#else
        if (row < len_q) {
            fa4_elem *orow = o + (long long)row * o_ss;
#pragma unroll
            for (int ni = 0; ni < kDv / 8; ++ni)
                *(unsigned *)(orow + ni * 8 + 2 * t) = fa4_pack2(acc[ni][2 * r] * inv, acc[ni][2 * r + 1] * inv);
#endif
            if (lse && t == 0) {
                float lg;
                asm("lg2.approx.f32 %0, %1;" : "=f"(lg) : "f"(sum));
                lse[(long long)row * lse_ss] = sum > 0.f ? (m[r] + lg) * FA4_LN2 : -FA4_INF;
            }
        }
    }
}

#endif /* FA4_SM90_EPILOGUE_CUH */
