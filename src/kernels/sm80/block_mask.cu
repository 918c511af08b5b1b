/*
 * block_mask.cu - fa4_block_mask_create on the GPU: mask_mod -> FlexAttention BlockMask without ever
 * materialising the S x S mask. Two kernels, launched back to back on one stream:
 *   fa4_sm80_block_mask_eval     one CTA per (kv block, q block, batch*head): evaluates mask_mod over
 *                                the block's in-range pairs; status 0 empty, 1 partial, 2 full, written
 *                                at [b,h,qb,kb] of kv_idx and at [b,h,kb,qb] of q_idx;
 *   fa4_sm80_block_mask_compact  one thread per row of either array: compacts the statuses in place
 *                                into the partial list (kv_idx / q_idx) and the full list, with counts.
 * The mods see indices with no offset. Pairs beyond the sequence lengths do not count, so an edge
 * block whose in-range pairs are all allowed is full (the attention kernels bound-check anyway).
 */
#include "fa4_mod.cuh"
#include "common/params.h"
#include "common/ptx.cuh"

extern "C" __global__ void __launch_bounds__(256)
    fa4_sm80_block_mask_eval(const fa4_block_mask_params p, const fa4_aux aux)
{
    const int kb = blockIdx.x, qb = blockIdx.y, bh = blockIdx.z;
    const int b = bh / p.heads, h = bh % p.heads;
    const long long q0 = (long long)qb * p.q_block, k0 = (long long)kb * p.kv_block;
    const int nq = (int)min((long long)p.q_block, p.seqlen_q - q0);
    const int nk = (int)min((long long)p.kv_block, p.seqlen_k - k0);
    int any = 0, all = 1;
    for (int i = threadIdx.x; i < nq * nk; i += blockDim.x) {
        const int qi = (int)q0 + i / nk, ki = (int)k0 + i % nk;
#if FA4_HAS_MASK_MOD
        const bool ok = fa4_mask_mod(b, h, qi, ki, aux);
#else
        const bool ok = true;
        (void)qi;
        (void)ki;
#endif
        any |= ok;
        all &= ok;
    }
    any = __syncthreads_or(any);
    all = __syncthreads_and(all);
    if (threadIdx.x == 0) {
        const int st = !any ? 0 : (all ? 2 : 1);
        p.kv_idx[((long long)bh * p.nq + qb) * p.nkv + kb] = st;
        p.q_idx[((long long)bh * p.nkv + kb) * p.nq + qb] = st;
    }
}

extern "C" __global__ void __launch_bounds__(256) fa4_sm80_block_mask_compact(const fa4_block_mask_params p)
{
    const long long rows_kv = (long long)p.batch * p.heads * p.nq;
    const long long rows_q = (long long)p.batch * p.heads * p.nkv;
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    int *st, *full, *np_out, *nf_out;
    int len;
    if (i < rows_kv) {
        st = p.kv_idx + i * p.nkv;
        full = p.full_kv_idx + i * p.nkv;
        np_out = p.kv_num + i;
        nf_out = p.full_kv_num + i;
        len = p.nkv;
    } else if (i < rows_kv + rows_q) {
        const long long r = i - rows_kv;
        st = p.q_idx + r * p.nq;
        full = p.full_q_idx + r * p.nq;
        np_out = p.q_num + r;
        nf_out = p.full_q_num + r;
        len = p.nq;
    } else {
        return;
    }
    int np = 0, nf = 0;
    for (int j = 0; j < len; ++j) {
        const int s = st[j];
        if (s == 1)
            st[np++] = j; /* np <= j: in place is safe */
        else if (s == 2)
            full[nf++] = j;
    }
    for (int j = np; j < len; ++j)
        st[j] = 0;
    for (int j = nf; j < len; ++j)
        full[j] = 0;
    *np_out = np;
    *nf_out = nf;
}
