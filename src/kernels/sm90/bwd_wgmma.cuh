/* Generated (the operand lists of sm90/gen_wgmma.py with the B-transpose bit set): do not edit by hand. */
/*
 * bwd_wgmma.cuh - the one wgmma form the sm90 backward needs beyond sm90/wgmma.cuh:
 *   fa4_bwd_wgmma_ss_tb<N>(d, desc_a, desc_b, accumulate): d[64 x N] (+)= A[64 x 16] * B[16 x N], both in
 *     shared memory, A K-major, B N-major (tnspB = 1), for dQ = dS K with K read as stored (keys x dim).
 *   fa4_bwd_wgmma_ss_ta<80>: the same with A M-major (tnspA = 1), B K-major, for kBM 80's dQ^T.
 * Same accumulator layout and issue rules as sm90/wgmma.cuh.
 */
#ifndef FA4_SM90_BWD_WGMMA_CUH
#define FA4_SM90_BWD_WGMMA_CUH

template <int N> __device__ __forceinline__ void fa4_bwd_wgmma_ss_tb(float (&d)[N / 8][4], unsigned long long da,
                                                                   unsigned long long db, int acc);

template <>
__device__ __forceinline__ void fa4_bwd_wgmma_ss_tb<64>(float (&d)[8][4], unsigned long long da, unsigned long long db,
                                                      int acc)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32." FA4_WG_T "." FA4_WG_T " "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 1;\n}\n"
                 : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3])
                 : "l"(da), "l"(db), "r"(acc));
}

/* fa4_bwd_wgmma_ss_ta<N>(d, desc_a, desc_b, accumulate): d[64 x N] (+)= A[64 x 16] * B[16 x N], A
 * M-major (tnspA = 1), B K-major: dQ^T = K^T dS^T of the 80-query steps (kBM 80, bwd_consumer.cuh),
 * K^T read from K as stored (keys x dim), dS^T from the dS tile ([query][key]). Operand list as
 * sm90/gen_wgmma.py writes it for N = 80. */
template <int N> __device__ __forceinline__ void fa4_bwd_wgmma_ss_ta(float (&d)[N / 8][4], unsigned long long da,
                                                                   unsigned long long db, int acc);

template <>
__device__ __forceinline__ void fa4_bwd_wgmma_ss_ta<80>(float (&d)[10][4], unsigned long long da, unsigned long long db,
                                                      int acc)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %42, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n80k16.f32." FA4_WG_T "." FA4_WG_T " "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39}, %40, %41, p, 1, 1, 1, 0;\n}\n"
                 : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]), "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3])
                 : "l"(da), "l"(db), "r"(acc));
}

#endif /* FA4_SM90_BWD_WGMMA_CUH */
