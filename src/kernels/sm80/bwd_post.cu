/*
 * bwd_post.cu - the last backward program: dQ = scale * dQaccum (fp32 workspace) converted to the
 * element type. In deterministic mode the workspace holds one dQ partial per kv tile, summed here
 * in a fixed order so the result is bitwise reproducible. (dK and dV, including the GQA reduction
 * over the query heads of a kv head, are finished by the main kernel.)
 */
#include "fa4_mod.cuh"
#include "common/params.h"
#include "common/ptx.cuh"
#include "sm80/config.cuh"
#include "sm80/scheduler.cuh"

extern "C" __global__ void __launch_bounds__(256) fa4_sm80_bwd_post(const fa4_params p, const fa4_aux aux)
{
    const int h = blockIdx.y, b = blockIdx.z;
    const fa4_seq seq = fa4_seq_info(p, b);
    const int m0 = blockIdx.x * kBwdM;
    if (m0 >= seq.len_q)
        return;
    fa4_pdl_wait(); /* PDL: dq_accum is the main kernel's */
    fa4_pdl_launch();
    const int rows = min(kBwdM, seq.len_q - m0);
    fa4_elem *gdQ = (fa4_elem *)p.dq.data + b * p.dq.sb + h * p.dq.sh + (seq.row_q + m0) * p.dq.ss;
    const long long slot = (long long)p.hq * p.ws_rows * kD;
    const float *acc = p.dq_accum + ((long long)h * p.ws_rows + seq.ws_row + m0) * kD;
    /* 16-byte loads of the fp32 sums and 8-byte stores of four elements where the head dim and
     * dQ's layout allow (every sm90 layout: TMA needs 16-byte strides), else pairs; the kernel
     * is bandwidth-bound, and the wide accesses halve its memory instructions */
    const bool wide = kD % 4 == 0 &&
                      (((unsigned long long)gdQ | ((unsigned long long)p.dq.ss * sizeof(fa4_elem))) & 7) == 0;
    if (wide) {
        struct alignas(16) f4 { float x, y, z, w; };
        struct alignas(8) u2 { unsigned x, y; };
        const float *__restrict__ acc4 = acc;
        fa4_elem *__restrict__ out = gdQ;
        const int n = rows * (kD / 4);
        if (p.dq_slots == 1) { /* the default backward: independent loads, several in flight */
#pragma unroll 4
            for (int i = threadIdx.x; i < n; i += blockDim.x) {
                const int r = i / (kD / 4), c = (i % (kD / 4)) * 4;
                const f4 y = *(const f4 *)(acc4 + (long long)r * kD + c);
                *(u2 *)(out + (long long)r * p.dq.ss + c) =
                    u2{fa4_pack2(y.x * p.scale, y.y * p.scale), fa4_pack2(y.z * p.scale, y.w * p.scale)};
            }
            return;
        }
        for (int i = threadIdx.x; i < n; i += blockDim.x) {
            const int r = i / (kD / 4), c = (i % (kD / 4)) * 4;
            f4 x{0.f, 0.f, 0.f, 0.f};
            for (int s = 0; s < p.dq_slots; ++s) { /* deterministic: the slots in a fixed order */
                const f4 y = *(const f4 *)(acc4 + s * slot + (long long)r * kD + c);
                x.x += y.x;
                x.y += y.y;
                x.z += y.z;
                x.w += y.w;
            }
            *(u2 *)(out + (long long)r * p.dq.ss + c) =
                u2{fa4_pack2(x.x * p.scale, x.y * p.scale), fa4_pack2(x.z * p.scale, x.w * p.scale)};
        }
        return;
    }
    for (int i = threadIdx.x; i < rows * (kD / 2); i += blockDim.x) {
        const int r = i / (kD / 2), c = (i % (kD / 2)) * 2;
        float x0 = 0.f, x1 = 0.f;
        for (int s = 0; s < p.dq_slots; ++s) {
            const float *a = acc + s * slot + (long long)r * kD + c;
            x0 += a[0];
            x1 += a[1];
        }
        *(unsigned *)(gdQ + (long long)r * p.dq.ss + c) = fa4_pack2(x0 * p.scale, x1 * p.scale);
    }
}

/* Deterministic mode with trainable aux tensors (launch.c): one tensor's fixed-point accumulator
 * (entries of three 64-bit words, the mod header's fa4_aux_grad_global) added into its fp32
 * gradient, grad[i] += hi 2^-20 + lo 2^-56 (in double, then rounded to float), or the
 * non-finite value its flags name. Launched after bwd_post, in stream order. */
extern "C" __global__ void __launch_bounds__(256) fa4_aux_fx_post(const unsigned long long *__restrict__ fx,
                                                                   float *__restrict__ grad, long long n)
{
    for (long long i = blockIdx.x * 256ll + threadIdx.x; i < n; i += gridDim.x * 256ll) {
        /* the same integer hi 2^36 + lo may come split differently (the sm90 window's flush splits
         * partial sums): first the one split with lo in [0, 2^36), so the double below, and the
         * gradient, depend on the integer only */
        const long long l0 = (long long)fx[3 * i + 1];
        const long long hi = (long long)fx[3 * i] + (l0 >> 36);
        const long long lo = (long long)((unsigned long long)l0 & 0xfffffffffull);
        const unsigned long long f = fx[3 * i + 2];
        float v;
        if (f & 1ull || (f & 6ull) == 6ull)
            v = __int_as_float(0x7fc00000);
        else if (f)
            v = __int_as_float(f & 2ull ? 0x7f800000 : (int)0xff800000u);
        else if (hi == 0 && lo == 0)
            continue;
        else
            v = __double2float_rn((double)hi * 0x1p-20 + (double)lo * 0x1p-56);
        grad[i] += v;
    }
}

/* The sm90 backward with GQA split by query head (params.h kv_split): dK = scale * sum and dV =
 * sum from dkv_accum, converted to the element type. Grid (row blocks of 64, hkv, 2: dK then dV);
 * launched after bwd_post in stream order. */
extern "C" __global__ void __launch_bounds__(256) fa4_bwd_post_dkv(const fa4_params p, const fa4_aux aux)
{
    (void)aux;
    const int hkv = blockIdx.y, is_v = blockIdx.z;
    const long long r0 = (long long)blockIdx.x * 64;
    if (r0 >= p.dkv_rows)
        return;
    const int d = is_v ? p.head_dim_v : p.head_dim;
    const float s = is_v ? 1.f : p.scale;
    const float *acc = p.dkv_accum + (is_v ? (long long)p.hkv * p.dkv_rows * p.head_dim : 0LL) +
                       ((long long)hkv * p.dkv_rows + r0) * d;
    const fa4_view &o = is_v ? p.dv : p.dk;
    const long long per_b = p.cu_seqlens_k ? p.dkv_rows : p.seqlen_k;
    const int rows = (int)min(64LL, p.dkv_rows - r0), pairs = d / 2;
    struct alignas(8) f2 { float x, y; };
    for (int i = threadIdx.x; i < rows * pairs; i += blockDim.x) {
        const int r = i / pairs, c = (i - r * pairs) * 2;
        const long long row = r0 + r, b = row / per_b, tok = row - b * per_b;
        const f2 x = *(const f2 *)(acc + (long long)r * d + c);
        *(unsigned *)((fa4_elem *)o.data + b * o.sb + hkv * o.sh + tok * o.ss + c) = fa4_pack2(x.x * s, x.y * s);
    }
}
