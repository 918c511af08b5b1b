/*
 * bwd_common.cuh - what the two sm90 backward mains (bwd_main.cu at head dims up to 128,
 * bwd256.cuh at 256) share before their own geometry: the dynamic shared memory and its aligned
 * base, and the deterministic mode's wait for a dQ turn and its turn agent.
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

/* The turn agent of dQ warpgroup wg (deterministic dQ with FA4_SM90_BWD_TURN_AGENT in
 * bwd_consumer.cuh, FA4_SM90_BWD256_TURN_AGENT in bwd256.cuh; one thread of the producer's
 * warpgroup, 24 registers): per step, once its issuer has posted, pass on the turn it held and
 * wait for the step's own turn, then say "go". Ends at the post without a next counter (after the
 * walk). Smem: either main's fa4_bwd_smem (bar_turn_post, bar_turn_go, turn_post). */
/* Not inlined: inlined into the producer's warpgroup (24 registers), any second role there made
 * ptxas spill the producer's walk (28 bytes at plain D 128, 44 at 80 queries; session 3 saw the
 * same); as a call it takes 16 registers (R0-R15) and nothing of the producer's. */
template <class Smem> __device__ __noinline__ void fa4_bwd_turn_agent(const Smem sm, int wg)
{
#pragma unroll 1
    for (unsigned j = 0;; ++j) {
        fa4_mbar_wait(sm.bar_turn_post(wg), j & 1u);
        unsigned long long prev, next;
        int turn;
        asm volatile("ld.shared.v2.u64 {%0, %1}, [%2];\n" : "=l"(prev), "=l"(next) : "r"(sm.turn_post(wg)) : "memory");
        asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(turn) : "r"(sm.turn_post(wg) + 16u) : "memory");
        if (prev)
            asm volatile("red.release.gpu.global.add.s32 [%0], 1;\n" ::"l"(prev) : "memory");
        if (!next)
            break;
        fa4_bwd_wait_turn((const int *)next, turn);
        fa4_mbar_arrive(sm.bar_turn_go(wg));
    }
}

/* Deterministic, the dQ issuer of warpgroup cw (bwd_main.cu with its turn agent, bwd256.cuh in its
 * agent mode 1): hand the agent the turn still held, once its adds are complete, and the next
 * counter and turn (next 0: the walk is over). Every step posts once, after the agent's "go" of the step before, so "post" and
 * "go" run in lock step and the words are free. Smem: either main's fa4_bwd_smem (dq_pending,
 * turn_post, bar_turn_post). */
template <class Smem>
__device__ __forceinline__ void fa4_bwd_post_dq_turn(const Smem &sm, int cw, unsigned long long next, int turn)
{
    unsigned long long prev;
    asm volatile("ld.shared.u64 %0, [%1];\n" : "=l"(prev) : "r"(sm.dq_pending(cw)) : "memory");
    if (prev) {
        fa4_bulk_wait<0>(); /* the adds are complete, not only read */
        asm volatile("fence.proxy.async.global;\n" ::: "memory");
    }
    asm volatile("st.shared.v2.u64 [%0], {%1, %2};\n" ::"r"(sm.turn_post(cw)), "l"(prev), "l"(next) : "memory");
    asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(sm.turn_post(cw) + 16u), "r"(turn) : "memory");
    fa4_mbar_arrive(sm.bar_turn_post(cw));
}

#endif /* FA4_SM90_BWD_COMMON_CUH */
