/*
 * mma.cuh - the mma stage: warp-level matrix products on shared-memory tiles with ldmatrix and
 * mma.sync m16n8k16. Accumulators use the mma C layout: acc[mi][ni][0..1] is row g, columns
 * 2t, 2t+1 of the (mi, ni) 16x8 tile, acc[..][2..3] row g+8 (g = lane / 4, t = lane % 4).
 * A is stored [m][k] (or [k][m] with A_KM), B is stored [n][k] (or [k][n] with B_KN).
 */
#ifndef FA4_SM80_MMA_CUH
#define FA4_SM80_MMA_CUH

#ifndef FA4_GEMM_K_UNROLL
#define FA4_GEMM_K_UNROLL 2
#endif

/* A fragment (16 x 16) at s, stored [m][k]. */
__device__ __forceinline__ void fa4_lda(unsigned (&a)[4], const fa4_elem *s, int ld, int lane)
{
    fa4_ldsm_x4(a, fa4_smem_addr(s + (lane & 15) * ld + (lane >> 4) * 8));
}
/* A fragment (16 x 16) at s, stored [k][m]. */
__device__ __forceinline__ void fa4_lda_km(unsigned (&a)[4], const fa4_elem *s, int ld, int lane)
{
    const int i = lane >> 3, r = lane & 7;
    fa4_ldsm_x4_t(a, fa4_smem_addr(s + (r + (i >> 1) * 8) * ld + (i & 1) * 8));
}
/* B fragments of two 8-column tiles (n, n+8) x k16 at s, stored [n][k]: b[0..1], b[2..3]. */
__device__ __forceinline__ void fa4_ldb(unsigned (&b)[4], const fa4_elem *s, int ld, int lane)
{
    const int i = lane >> 3, r = lane & 7;
    fa4_ldsm_x4(b, fa4_smem_addr(s + (r + (i >> 1) * 8) * ld + (i & 1) * 8));
}
/* Same, stored [k][n]. */
__device__ __forceinline__ void fa4_ldb_kn(unsigned (&b)[4], const fa4_elem *s, int ld, int lane)
{
    const int i = lane >> 3, r = lane & 7;
    fa4_ldsm_x4_t(b, fa4_smem_addr(s + (r + (i & 1) * 8) * ld + (i >> 1) * 8));
}

/* acc (WM x WN) += A (WM x K) * B (K x WN), both operands in shared memory. */
template <int WM, int WN, int K, bool A_KM, bool B_KN, int UNROLL = FA4_GEMM_K_UNROLL>
__device__ __forceinline__ void fa4_warp_gemm(float (&acc)[WM / 16][WN / 8][4], const fa4_elem *sA,
                                              int lda, const fa4_elem *sB, int ldb, int lane)
{
    static_assert(WM % 16 == 0 && WN % 16 == 0 && K % 16 == 0, "warp tile must be 16-aligned");
    /* A partial unroll: full unrolling lets the compiler hoist every ldmatrix of a large head dim
     * and spill at 255 registers. */
#pragma unroll UNROLL
    for (int k0 = 0; k0 < K; k0 += 16) {
        unsigned a[WM / 16][4];
#pragma unroll
        for (int mi = 0; mi < WM / 16; ++mi) {
            if (A_KM)
                fa4_lda_km(a[mi], sA + k0 * lda + mi * 16, lda, lane);
            else
                fa4_lda(a[mi], sA + mi * 16 * lda + k0, lda, lane);
        }
#pragma unroll
        for (int nj = 0; nj < WN / 16; ++nj) {
            unsigned b[4];
            if (B_KN)
                fa4_ldb_kn(b, sB + k0 * ldb + nj * 16, ldb, lane);
            else
                fa4_ldb(b, sB + nj * 16 * ldb + k0, ldb, lane);
#pragma unroll
            for (int mi = 0; mi < WM / 16; ++mi) {
                fa4_mma16816(acc[mi][2 * nj], a[mi], b[0], b[1]);
                fa4_mma16816(acc[mi][2 * nj + 1], a[mi], b[2], b[3]);
            }
        }
    }
}

/* A fragments of a 16 x K tile stored [m][k] at s, all k16 steps, into registers. */
template <int K>
__device__ __forceinline__ void fa4_load_a_frags(unsigned (&a)[K / 16][4], const fa4_elem *s, int ld, int lane)
{
#pragma unroll
    for (int kk = 0; kk < K / 16; ++kk)
        fa4_lda(a[kk], s + kk * 16, ld, lane);
}

/* acc[0] (16 x WN) += A (16 x K, fragments in registers) * B (K x WN, stored [n][k]). */
template <int MI, int WN, int K>
__device__ __forceinline__ void fa4_warp_gemm_ar(float (&acc)[MI][WN / 8][4], const unsigned (&a)[K / 16][4],
                                                 const fa4_elem *sB, int ldb, int lane)
{
#pragma unroll
    for (int kk = 0; kk < K / 16; ++kk) {
#pragma unroll
        for (int nj = 0; nj < WN / 16; ++nj) {
            unsigned b[4];
            fa4_ldb(b, sB + nj * 16 * ldb + kk * 16, ldb, lane);
            fa4_mma16816(acc[0][2 * nj], a[kk], b[0], b[1]);
            fa4_mma16816(acc[0][2 * nj + 1], a[kk], b[2], b[3]);
        }
    }
}

/* The C layout of two adjacent 8-column tiles is exactly the A layout of one k16 step: pack a
 * 16 x K fp32 fragment (K/8 tiles) into K/16 A fragments of 16-bit pairs. */
template <int K>
__device__ __forceinline__ void fa4_pack_a(unsigned (&a)[K / 16][4], const float (&p)[K / 8][4])
{
#pragma unroll
    for (int kk = 0; kk < K / 16; ++kk) {
        a[kk][0] = fa4_pack2(p[2 * kk][0], p[2 * kk][1]);
        a[kk][1] = fa4_pack2(p[2 * kk][2], p[2 * kk][3]);
        a[kk][2] = fa4_pack2(p[2 * kk + 1][0], p[2 * kk + 1][1]);
        a[kk][3] = fa4_pack2(p[2 * kk + 1][2], p[2 * kk + 1][3]);
    }
}

/* acc (16 MI x WN) += P (16 MI x K, packed A fragments in registers) * B (K x WN, stored [k][n]). */
template <int MI, int WN, int K>
__device__ __forceinline__ void fa4_warp_gemm_rs(float (&acc)[MI][WN / 8][4], const unsigned (&pa)[MI][K / 16][4],
                                                 const fa4_elem *sB, int ldb, int lane)
{
#pragma unroll
    for (int kk = 0; kk < K / 16; ++kk) {
#pragma unroll
        for (int nj = 0; nj < WN / 16; ++nj) {
            unsigned b[4];
            fa4_ldb_kn(b, sB + kk * 16 * ldb + nj * 16, ldb, lane);
#pragma unroll
            for (int mi = 0; mi < MI; ++mi) {
                fa4_mma16816(acc[mi][2 * nj], pa[mi][kk], b[0], b[1]);
                fa4_mma16816(acc[mi][2 * nj + 1], pa[mi][kk], b[2], b[3]);
            }
        }
    }
}

#endif /* FA4_SM80_MMA_CUH */
