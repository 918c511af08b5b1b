/*
 * ptx90.cuh - the Hopper-only primitives of the sm90 path as inline PTX (NVRTC has no headers):
 * mbarriers (init, arrive, expect_tx, parity wait), the bulk tensor copy (TMA) from a tensor map
 * passed as a __grid_constant__ kernel parameter, wgmma fences / commit / wait, shared-memory
 * matrix descriptors for the 128-byte swizzle, setmaxnreg, and a register fence that keeps the
 * compiler from moving accumulators across an asynchronous wgmma.
 */
#ifndef FA4_SM90_PTX90_CUH
#define FA4_SM90_PTX90_CUH

/* CUtensorMap as the driver fills it: 128 opaque bytes, 64-byte aligned. */
struct alignas(64) fa4_tmap {
    unsigned long long opaque[16];
};

/* ------------------------------------------------------------------------------- mbarrier */
__device__ __forceinline__ void fa4_mbar_init(unsigned bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void fa4_mbar_init_fence(void)
{
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void fa4_mbar_arrive(unsigned bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void fa4_mbar_expect_tx(unsigned bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
                 : "memory");
}
/* Wait until the phase of the given parity has completed. */
__device__ __forceinline__ void fa4_mbar_wait(unsigned bar, unsigned parity)
{
    unsigned done;
    do {
        asm volatile("{\n.reg .pred p;\n"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
    } while (!done);
}

/* ------------------------------------------------------------------------------------ TMA */
__device__ __forceinline__ void fa4_tma_prefetch(const fa4_tmap *map)
{
    asm volatile("prefetch.tensormap [%0];\n" ::"l"((unsigned long long)map) : "memory");
}
/* One box of a 4-d tensor map into shared memory; completes `bar` with the box's bytes. */
__device__ __forceinline__ void fa4_tma_load_4d(unsigned dst, const fa4_tmap *map, unsigned bar, int c0,
                                                int c1, int c2, int c3)
{
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(dst),
                 "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
                 : "memory");
}

/* One box of a 1-d tensor map (the backward's fp32 lse2 / dpsum rows: any start element, zero fill
 * past the end); completes `bar` with the box's bytes. */
__device__ __forceinline__ void fa4_tma_load_1d(unsigned dst, const fa4_tmap *map, unsigned bar, int c0)
{
    asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2}], [%3];\n" ::"r"(dst),
                 "l"((unsigned long long)map), "r"(c0), "r"(bar)
                 : "memory");
}

/* Bulk tensor reduce-add of a shared-memory box into global memory (element type and box from the
 * map; rows and columns past the tensor are dropped), tracked by the issuing thread's bulk group. */
__device__ __forceinline__ void fa4_tma_reduce_add_2d(const fa4_tmap *map, unsigned src, int c0, int c1)
{
    asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(
                     (unsigned long long)map),
                 "r"(c0), "r"(c1), "r"(src)
                 : "memory");
}
__device__ __forceinline__ void fa4_bulk_commit(void)
{
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
/* Wait until the issuing thread's bulk groups, all but the newest N, have read their shared memory. */
template <int N> __device__ __forceinline__ void fa4_bulk_wait_read(void)
{
    asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
template <int N> __device__ __forceinline__ void fa4_bulk_wait(void)
{
    asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}

/* A bulk reduce-add of `bytes` (a multiple of 16; both addresses 16-byte aligned) floats from shared
 * into global memory, tracked by the issuing thread's bulk group. */
__device__ __forceinline__ void fa4_bulk_reduce_add_f32(float *dst, unsigned src, unsigned bytes)
{
    asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;\n" ::"l"(dst), "r"(src),
                 "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void fa4_fence_proxy_async_smem(void)
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

/* 2 consecutive floats (8-byte aligned) added to global memory in one vector reduction */
__device__ __forceinline__ void fa4_red_add_v2(float *dst, float a, float b)
{
    asm volatile("red.global.add.v2.f32 [%0], {%1, %2};\n" ::"l"(dst), "f"(a), "f"(b) : "memory");
}

/* ---------------------------------------------------------------------------------- wgmma */
__device__ __forceinline__ void fa4_wgmma_fence(void)
{
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void fa4_wgmma_commit(void)
{
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N> __device__ __forceinline__ void fa4_wgmma_wait(void)
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
/* Pin accumulator registers in place around asynchronous wgmma (no moves across issue/wait). */
template <int R> __device__ __forceinline__ void fa4_reg_fence(float (&d)[R][4])
{
#pragma unroll
    for (int i = 0; i < R; ++i)
        asm volatile("" : "+f"(d[i][0]), "+f"(d[i][1]), "+f"(d[i][2]), "+f"(d[i][3])::"memory");
}

/* Descriptor of an operand tile in shared memory with the 128-byte swizzle (TMA's SWIZZLE_128B):
 * rows of 64 16-bit elements, 8-row atoms of 1024 bytes. lbo: byte stride between 64-element
 * column panels (N-major operands); sbo: byte stride between 8-row groups. */
__device__ __forceinline__ unsigned long long fa4_desc_sw128(unsigned addr, unsigned lbo, unsigned sbo)
{
    return (unsigned long long)((addr & 0x3FFFFu) >> 4) |
           ((unsigned long long)((lbo >> 4) & 0x3FFFu) << 16) |
           ((unsigned long long)((sbo >> 4) & 0x3FFFu) << 32) | (1ull << 62);
}

/* A descriptor moved `bytes` (a multiple of 16) further along shared memory: its start address field
 * (bits 0-13) holds address >> 4, and with every shared-memory address below 2^18 (fa4_desc_sw128's
 * mask) the sum stays inside that field, so only the low word changes. Built from a descriptor
 * made once per stage, a wgmma's operand then costs one 32-bit add instead of the add, mask, shift
 * and or of fa4_desc_sw128 at every k step (ptxas recomputed those per wgmma, in uniform registers:
 * about 5 instructions a wgmma, 20% of the forward's steady-state loop; session 23). */
/* FA4_SM90_DESC_ADD (default 1): the kernels make a stage's wgmma descriptors once
 * (fa4_desc_sw128_base) and each k step's by fa4_desc_add; 0: fa4_desc_sw128 at every k step (the
 * build before session 23). */
#ifndef FA4_SM90_DESC_ADD
/* the forward's spill fallback (path_sm90.c, FA4_SM90_FWD_FALLBACK): level 1 without a mask_mod,
 * level 2 always (the D 256 forwards of softcap, softcap_causal and alibi spilled with it) */
#if defined(FA4_SM90_FWD_FALLBACK) && (FA4_SM90_FWD_FALLBACK >= 2 || (FA4_SM90_FWD_FALLBACK >= 1 && !(defined(FA4_HAS_MASK_MOD) && FA4_HAS_MASK_MOD)))
#define FA4_SM90_DESC_ADD 0
#else
#define FA4_SM90_DESC_ADD 1
#endif
#endif
/* FA4_SM90_DESC_HI_OPAQUE 1 (session 29, opt-in): the descriptors' high word made
 * opaque to ptxas (fa4_desc_sw128_base). nvdisasm at D 128, steady loops: each wgmma's two UMOV of
 * the constant high words become one UMOV between uniform registers; plain fwd 766 -> 746
 * instructions, plain bwd 80-query main 1174 -> 1150, ALiBi fwd 979 -> 967 and bwd 2567 -> 2546,
 * trainable rel_bias bwd -7, but t5_bias fwd 954 -> 964. Measured (H100 2026-12-07, B8 H16 S4096
 * D128 bf16, fwd / f+b TFLOP/s, default -> 1): ALiBi 647.2 / 531.5 -> 637.7 / 540.0, causal 609.3
 * / 508.2 -> 601.4 / 509.9, plain and the trainable biases within 1%
 * (bench/results/2026-12-07-h100-s30-deschi.md): forwards lose, so it stays off. */
#ifndef FA4_SM90_DESC_HI_OPAQUE
#define FA4_SM90_DESC_HI_OPAQUE 0
#endif
/* fa4_desc_sw128's value, its fields joined by adds (they are disjoint, so the same bits): with
 * the or, ptxas folded it and each later fa4_desc_add into an add and a mask per wgmma */
__device__ __forceinline__ unsigned long long fa4_desc_sw128_base(unsigned addr, unsigned lbo, unsigned sbo)
{
    const unsigned lo = ((addr & 0x3FFFFu) >> 4) + (((lbo >> 4) & 0x3FFFu) << 16);
#if FA4_SM90_DESC_HI_OPAQUE
    /* + (gridDim.y >> 16), always 0 (gridDim.y <= 65535), which ptxas cannot know: the high word
     * is then a value it keeps in a uniform register instead of a constant it writes again (two
     * UMOV) before every wgmma */
    unsigned z;
    asm("mov.u32 %0, %%nctaid.y;" : "=r"(z));
    const unsigned hi = ((sbo >> 4) & 0x3FFFu) + (1u << 30) + (z >> 16);
#else
    const unsigned hi = ((sbo >> 4) & 0x3FFFu) + (1u << 30);
#endif
    return ((unsigned long long)hi << 32) | lo;
}
__device__ __forceinline__ unsigned long long fa4_desc_add(unsigned long long d, unsigned bytes)
{
    const unsigned lo = (unsigned)d + (bytes >> 4), hi = (unsigned)(d >> 32);
    return ((unsigned long long)hi << 32) | lo;
}
/* The descriptor of base + off: kAdd, base's descriptor moved by off (its base part is the same
 * for every k step of a loop, so ptxas makes it once); else fa4_desc_sw128 of the sum, the build
 * before session 23. FA4_DESC_SW128 is the kernels' default (FA4_SM90_DESC_ADD). */
template <bool kAdd>
__device__ __forceinline__ unsigned long long fa4_desc_sw128_at(unsigned base, unsigned off, unsigned lbo, unsigned sbo)
{
    return kAdd ? fa4_desc_add(fa4_desc_sw128_base(base, lbo, sbo), off) : fa4_desc_sw128(base + off, lbo, sbo);
}
#define FA4_DESC_SW128 fa4_desc_sw128_at<FA4_SM90_DESC_ADD != 0>

/* x from lane 0 of the warp, for values that are the same in every lane but come from threadIdx or
 * a shared load: ptxas then knows they are warp-uniform and keeps what depends on them (wgmma
 * descriptors, stage indices) in uniform registers instead of moving them there (R2UR) at each use.
 * Every lane of the warp must call it. */
__device__ __forceinline__ unsigned fa4_warp_uniform(unsigned x) { return __shfl_sync(0xffffffffu, x, 0); }
__device__ __forceinline__ int fa4_warp_uniform(int x) { return __shfl_sync(0xffffffffu, x, 0); }
/* %tid.x read again at the call (volatile: ptxas neither hoists it nor keeps it live), for a
 * per-thread value that would otherwise stay in a register across a long loop (and spill there). */
__device__ __forceinline__ unsigned fa4_tid_fresh(void)
{
    unsigned t;
    asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(t));
    return t;
}

/* Descriptor of a block of 256 bytes without swizzle whose two 128-byte core matrices sit 128 bytes
 * apart (strides of 128 both ways): the 16 x 8 B operand of a m64n8k16 wgmma, read whole whatever
 * its major-ness, so a block of equal values needs no particular order (mainloop.cuh's ones). */
__device__ __forceinline__ unsigned long long fa4_desc_ones(unsigned addr)
{
    return (unsigned long long)((addr & 0x3FFFFu) >> 4) | ((unsigned long long)(128u >> 4) << 16) |
           ((unsigned long long)(128u >> 4) << 32);
}

/* ------------------------------------------------------- quad transpose for 16-byte stores */
/* A row's words (two 16-bit columns each) of an accumulator fragment lie across the four lanes of
 * a quad, lane t holding columns 8 ni + 2t, +1 of every 8-column block ni; fa4_sm90_quad_transpose
 * (two shfl.xor rounds, 1 then 2, of two words each) makes lane t hold block 4 grp + t whole (8
 * consecutive elements of its row) for one 16-byte store (epilogue.cuh's forward, bwd_main.cu's dK
 * and dV). One shuffle round of the transpose: lanes with send_lo give their lo word to the xor-mask
 * partner and take the partner's in its place; the others do the same with hi. */
__device__ __forceinline__ void fa4_sm90_xor_swap(unsigned &lo, unsigned &hi, bool send_lo, int mask)
{
    const unsigned a = __shfl_xor_sync(0xffffffffu, send_lo ? lo : hi, mask);
    if (send_lo)
        lo = a;
    else
        hi = a;
}

__device__ __forceinline__ void fa4_sm90_quad_transpose(unsigned (&w)[4], int t)
{
    const bool odd = t & 1, hi = t & 2;
    fa4_sm90_xor_swap(w[0], w[1], odd, 1);
    fa4_sm90_xor_swap(w[2], w[3], odd, 1);
    fa4_sm90_xor_swap(w[0], w[2], hi, 2);
    fa4_sm90_xor_swap(w[1], w[3], hi, 2);
}

/* --------------------------------------------------------------------- register reallocation */
template <int R> __device__ __forceinline__ void fa4_regs_dec(void)
{
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(R));
}
template <int R> __device__ __forceinline__ void fa4_regs_inc(void)
{
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(R));
}

#endif /* FA4_SM90_PTX90_CUH */
