/*
 * bwd_common.cuh - what the two sm90 backward mains (bwd_main.cu at head dims up to 128,
 * bwd256.cuh at 256) share before their own geometry: the dynamic shared memory and its aligned
 * base, and the deterministic mode's wait for a dQ turn.
 */
#ifndef FA4_SM90_BWD_COMMON_CUH
#define FA4_SM90_BWD_COMMON_CUH

extern __shared__ __attribute__((aligned(1024))) unsigned char fa4_smem[];

/* The shared-memory map's base (fa4_bwd_smem), 1024-byte aligned. */
__device__ __forceinline__ unsigned fa4_bwd_smem_base(void)
{
    return (fa4_smem_addr(fa4_smem) + 1023u) & ~1023u;
}

/* Spin until the turn counter reaches `turn` (acquire). The turn comes unless something else
 * went wrong (a CTA that faulted): trap after 10 s rather than hang. */
__device__ __forceinline__ void fa4_bwd_wait_turn(const int *ctr, int turn)
{
    unsigned long long t0 = 0;
    for (int n = 0;; ++n) {
        int v;
        asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(v) : "l"(ctr) : "memory");
        if (v == turn)
            return;
        unsigned long long t;
        asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t));
        if (n == 0)
            t0 = t;
        else if (t - t0 > 10000000000ull)
            __trap();
        __nanosleep(32);
    }
}

#endif /* FA4_SM90_BWD_COMMON_CUH */
