/*
 * load.cuh - the load stage: global -> shared copies of row tiles with cp.async (16 bytes a thread),
 * rows past the end of the sequence zero-filled so that masked columns multiply zeros, never stale
 * data (0 * NaN would poison O). Needs 16-byte aligned rows (the launcher checks pointers/strides).
 */
#ifndef FA4_SM80_LOAD_CUH
#define FA4_SM80_LOAD_CUH

/* rows x cols elements from g (row stride gs elements) into s (row stride ls); only the first
 * `valid` rows are read, the others become zeros. */
template <int ROWS, int COLS, int NTHREADS>
__device__ __forceinline__ void fa4_load_tile(fa4_elem *s, int ls, const fa4_elem *g, long long gs,
                                              int valid, const void *gbase, int tid)
{
    constexpr int kChunks = COLS / 8;
    constexpr int kTotal = ROWS * kChunks;
#pragma unroll
    for (int c0 = 0; c0 < kTotal; c0 += NTHREADS) {
        const int c = c0 + tid;
        if (kTotal % NTHREADS == 0 || c < kTotal) {
            const int r = c / kChunks, cc = c % kChunks;
            const bool ok = r < valid;
            const void *src = ok ? (const void *)(g + (long long)r * gs + cc * 8) : gbase;
            fa4_cp_async16(fa4_smem_addr(s + r * ls + cc * 8), src, ok ? 16 : 0);
        }
    }
}

#endif /* FA4_SM80_LOAD_CUH */
