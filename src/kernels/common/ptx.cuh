/*
 * ptx.cuh - the hardware primitives every kernel program uses, as inline PTX because NVRTC gives us no
 * headers: 16-bit element conversions (bf16 or fp16, chosen by FA4_DTYPE_BF16 / FA4_DTYPE_FP16),
 * shared-memory addresses, cp.async, ldmatrix, mma.sync m16n8k16 with fp32 accumulators, exp2, and
 * the two instructions of programmatic dependent launch (sm_90; nothing on older archs).
 * Elements travel as raw 16-bit patterns (fa4_elem); two of them packed in a 32-bit register.
 */
#ifndef FA4_COMMON_PTX_CUH
#define FA4_COMMON_PTX_CUH

#if !defined(FA4_DTYPE_BF16) && !defined(FA4_DTYPE_FP16)
#error "define FA4_DTYPE_BF16 or FA4_DTYPE_FP16"
#endif

typedef unsigned short fa4_elem;

#define FA4_LOG2E 1.4426950408889634f
#define FA4_LN2 0.6931471805599453f
#define FA4_INF __int_as_float(0x7f800000)

__device__ __forceinline__ unsigned fa4_smem_addr(const void *p)
{
    unsigned r;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
    return r;
}

/* ------------------------------------------------------------- programmatic dependent launch */
/* Between kernels that the host launches with programmatic stream serialization (PDL: the sm90
 * backward's pre -> [rank] -> main -> post, the forward's order -> forward), a kernel may start
 * while its predecessor still runs. fa4_pdl_wait blocks the calling thread until the whole
 * predecessor grid has completed and its memory is visible: every read of the predecessor's
 * output, and every write to what it reads, comes after it. fa4_pdl_launch lets the successor's
 * CTAs be scheduled once every CTA of this grid has issued it (or exited); it orders nothing, so
 * it may come first. A kernel launched without the attribute, or an arch before sm_90, makes both
 * no-ops. Every kernel of a chain waits somewhere, even one that reads nothing of its
 * predecessor's (the rank kernel, at its end): its completion then implies its predecessor's, so
 * that a wait in the next kernel covers the whole chain. */
__device__ __forceinline__ void fa4_pdl_wait(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void fa4_pdl_launch(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

/* ---------------------------------------------------------------------------- conversions */
__device__ __forceinline__ float fa4_to_float(fa4_elem x)
{
#if defined(FA4_DTYPE_BF16)
    return __uint_as_float(((unsigned)x) << 16);
#else
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x));
    return f;
#endif
}

__device__ __forceinline__ fa4_elem fa4_from_float(float f)
{
    fa4_elem r;
#if defined(FA4_DTYPE_BF16)
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f));
#else
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(f));
#endif
    return r;
}

/* lo in bits 0-15, hi in bits 16-31 (the order mma.sync expects: lower column first). */
__device__ __forceinline__ unsigned fa4_pack2(float lo, float hi)
{
    unsigned r;
#if defined(FA4_DTYPE_BF16)
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#else
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#endif
    return r;
}

__device__ __forceinline__ float fa4_exp2(float x)
{
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}

/* ------------------------------------------------------------------------------- cp.async */
/* 16 bytes global -> shared; src_bytes 0 fills zeros (rows past the end of a sequence). */
__device__ __forceinline__ void fa4_cp_async16(unsigned saddr, const void *gptr, int src_bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(saddr), "l"(gptr),
                 "r"(src_bytes)
                 : "memory");
}
__device__ __forceinline__ void fa4_cp_async_commit(void)
{
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N> __device__ __forceinline__ void fa4_cp_async_wait(void)
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

/* -------------------------------------------------------------------------------- ldmatrix */
__device__ __forceinline__ void fa4_ldsm_x4(unsigned (&r)[4], unsigned saddr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(saddr)
                 : "memory");
}
__device__ __forceinline__ void fa4_ldsm_x4_t(unsigned (&r)[4], unsigned saddr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(saddr)
                 : "memory");
}

/* ------------------------------------------------------------------------------------ mma */
/* c (16x8 fp32) += a (16x16, row) * b (16x8, col). */
__device__ __forceinline__ void fa4_mma16816(float (&c)[4], const unsigned (&a)[4], unsigned b0,
                                             unsigned b1)
{
#if defined(FA4_DTYPE_BF16)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

/* 4 consecutive floats (16-byte aligned) added to global memory: one vector reduction on sm_90+,
 * four scalar ones before. */
__device__ __forceinline__ void fa4_red_add4(float *dst, float a, float b, float c, float d)
{
#if defined(FA4_ARCH) && FA4_ARCH >= 90
    asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(dst), "f"(a), "f"(b), "f"(c), "f"(d)
                 : "memory");
#else
    atomicAdd(dst, a);
    atomicAdd(dst + 1, b);
    atomicAdd(dst + 2, c);
    atomicAdd(dst + 3, d);
#endif
}

/* ----------------------------------------------------------------------------- reductions */
__device__ __forceinline__ float fa4_quad_max(float x)
{
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
    return x;
}
__device__ __forceinline__ float fa4_quad_sum(float x)
{
    x += __shfl_xor_sync(0xffffffffu, x, 1);
    x += __shfl_xor_sync(0xffffffffu, x, 2);
    return x;
}

#endif /* FA4_COMMON_PTX_CUH */
