/*
 * epilogue.cuh - the epilogue of the sm90 forward: normalise O by the row sums and write O (16-bit)
 * and LSE (fp32, natural log; the row max is kept in log2 units) for the rows inside the sequence,
 * straight from the accumulator fragment. Rows with no allowed key have l = 0: O = 0 and
 * LSE = -inf, as FlexAttention returns them.
 */
#ifndef FA4_SM90_EPILOGUE_CUH
#define FA4_SM90_EPILOGUE_CUH

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
        const float sum = fa4_quad_sum(l[r]);
        const float inv = sum > 0.f ? 1.f / sum : 0.f;
        if (row < len_q) {
            fa4_elem *orow = o + (long long)row * o_ss;
#pragma unroll
            for (int ni = 0; ni < kDv / 8; ++ni)
                *(unsigned *)(orow + ni * 8 + 2 * t) = fa4_pack2(acc[ni][2 * r] * inv, acc[ni][2 * r + 1] * inv);
            if (lse && t == 0) {
                float lg;
                asm("lg2.approx.f32 %0, %1;" : "=f"(lg) : "f"(sum));
                lse[(long long)row * lse_ss] = sum > 0.f ? (m[r] + lg) * FA4_LN2 : -FA4_INF;
            }
        }
    }
}

#endif /* FA4_SM90_EPILOGUE_CUH */
