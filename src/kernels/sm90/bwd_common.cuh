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

/* Whether the calling thread is thread 0 of its warpgroup, from %tid.x read again at the call
 * (fa4_tid_fresh, ptx90.cuh): the walk's per-step issuer tests kept a flag live across the whole
 * walk, which spilled where a mod takes registers (ALiBi and fixed T5 at D 128: 4 / 4 and 8 / 16
 * bytes of spill stores / loads, NVRTC 13; none with this). */
__device__ __forceinline__ bool fa4_wg_thread0(void)
{
    return (fa4_tid_fresh() & 127u) == 0u;
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

/* FA4_SM90_BWD_STG128 1 (session 34): the epilogue writes dK and dV in 16-byte stores, the forward's
 * FA4_SM90_FWD_STG128 form (ptx90.cuh fa4_sm90_quad_transpose on each group of four 8-column
 * blocks, then one st.global.v4 a lane: a warp store covers whole 32-byte sectors of its 8 rows,
 * where the 4-byte stores covered half sectors and the 64 of them a thread stalled on lg_throttle,
 * session 23's ncu); blocks past the last whole group (head dims not a multiple of 32) keep 4-byte
 * stores. dK, dV and their strides are 16-byte aligned (launch.c check_tensor). 0: 4-byte stores.
 * H100 2026-12-07, B8 H16 S4096 bf16, f+b TFLOP/s, median of 2 rounds, 0 -> 1: plain D 128 594.8 ->
 * 599.4, causal 508.9 -> 520.4, D 64 431.1 -> 434.2 (bench/results/2026-12-07-h100-s34-stg128.md);
 * the quick suite 143 / 144 on it (the one failure a D 256 case, which this does not reach). */
#ifndef FA4_SM90_BWD_STG128
#define FA4_SM90_BWD_STG128 1
#endif
/* FA4_SM90_BWD256_STG128 1: the same 16-byte stores in the D 256 backward's epilogue (bwd256.cuh;
 * each warpgroup's 128 columns, groups past the head dim in 4-byte stores). 0: 4-byte stores. H100
 * 2026-12-07, B8 H16 S4096 D256 bf16, f+b TFLOP/s, median of 2 rounds, 0 -> 1: 439.6 -> 441.9 (each
 * round higher); the quick suite's 26 d256 cases pass on it
 * (bench/results/2026-12-07-h100-s36-ab-d256stg.md). */
#ifndef FA4_SM90_BWD256_STG128
#define FA4_SM90_BWD256_STG128 1
#endif
/* one row half r2 of a consumer thread's accumulator (NB 8-column blocks from the row's column 0,
 * of which the first ncols columns are real: a compile-time constant at D <= 128, the warpgroup's
 * share at D 256), times s where kScale, into row (lanes whose row lies outside the sequence, !in,
 * store nothing but take part in the shuffles; ncols is the same in the whole warp). kWide: the
 * 16-byte form (FA4_SM90_BWD_STG128, FA4_SM90_BWD256_STG128), else 4-byte stores. */
template <int NB, bool kScale, bool kWide>
__device__ __forceinline__ void fa4_bwd_store_row(fa4_elem *row, const float (&a)[NB][4], int r2, float s, int t, bool in,
                                                  int ncols)
{
    const auto word = [&](int i) {
        return kScale ? fa4_pack2(a[i][2 * r2] * s, a[i][2 * r2 + 1] * s) : fa4_pack2(a[i][2 * r2], a[i][2 * r2 + 1]);
    };
#pragma unroll
    for (int g = 0; g < NB / 4; ++g) {
        if (kWide && 32 * g + 32 <= ncols) {
            unsigned w[4];
#pragma unroll
            for (int k = 0; k < 4; ++k)
                w[k] = word(4 * g + k);
            fa4_sm90_quad_transpose(w, t);
            if (in)
                asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"l"(row + (4 * g + t) * 8), "r"(w[0]),
                             "r"(w[1]), "r"(w[2]), "r"(w[3]));
        } else {
#pragma unroll
            for (int i = 4 * g; i < 4 * g + 4; ++i)
                if (i * 8 < ncols && in)
                    *(unsigned *)(row + i * 8 + 2 * t) = word(i);
        }
    }
}

#endif /* FA4_SM90_BWD_COMMON_CUH */
