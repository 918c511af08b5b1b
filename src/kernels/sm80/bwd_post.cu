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
