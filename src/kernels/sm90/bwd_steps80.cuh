/*
 * bwd_steps80.cuh - fa4_sm90_bwd_steps80, the step table of the 80-query-step backward main
 * (bwd_main80.cu) with a block mask (layout: bwd_schedule.cuh, fa4_bwd_steps_row). Launched by
 * path_sm90.c after bwd_pre and before the main program (programmatic dependent launches), only
 * in the bwd_main90m80 program.
 *
 * One warp per (mask batch, mask head, kv block): the kv block's q blocks are marked in shared
 * memory (1 partial, 2 full; absent 0), then lane 0 walks them in ascending order: a run of
 * consecutive present blocks is cut into 80-row steps from its first row (so every step starts at
 * a multiple of 16 rows: the TMA boxes of lse2 / dpsum start 16-byte aligned), the last one cut at
 * the run's end. A step's partial rows must be one interval: where q_block 64 would put a partial,
 * a full and a partial block into one step, the step ends at the second partial block's start and
 * the next starts there. Steps then hold at most runs + rows / 64 entries, at most nq (q_block /
 * 64 + 1) (the host's row stride). Entries of one kv block's lists must name distinct q blocks in
 * [0, nq), as the 64-row walk needs too; their order does not matter.
 */
#ifndef FA4_SM90_BWD_STEPS80_CUH
#define FA4_SM90_BWD_STEPS80_CUH

extern "C" __global__ void __launch_bounds__(32) fa4_sm90_bwd_steps80(const fa4_params p)
{
    extern __shared__ unsigned char fa4_steps_mark[];
    /* as fa4_sm90_bwd_rank: the table was read by the previous backward's main, and the wait
     * makes this kernel's completion imply bwd_pre's (the main kernel waits on this one only) */
    fa4_pdl_wait();
    fa4_pdl_launch();
    const int lane = threadIdx.x, nq = p.bm_nq;
    const long long row = blockIdx.x; /* (mask batch, mask head) * nkv + kv block */
    for (int i = lane; i < nq; i += 32)
        fa4_steps_mark[i] = 0;
    __syncwarp();
    fa4_bwd_mark_q_blocks(p, row, fa4_steps_mark, lane);
    __syncwarp();
    if (lane != 0)
        return;
    int *out = fa4_bwd_steps_table(p) + row * fa4_bwd_steps_stride(p);
    const int qb = p.bm_q_block;
    int n = 0;
    int s = -1;          /* the pending step's first row; -1: no run open */
    int plo = -1, phi = -1; /* its partial rows [plo, phi), -1: none yet */
    int fap = 0;         /* a full block came after its partial rows */
    int rend = 0;        /* end of the open run's last block */
    const auto emit = [&](int e) {
        if (e > s) {
            const int info = (e - s) | (plo >= 0 ? ((plo - s) << 8) | ((phi - s) << 16) : 0);
            out[2 + 2 * n] = s;
            out[3 + 2 * n] = info;
            ++n;
        }
        plo = phi = -1;
        fap = 0;
    };
    for (int m = 0; m < nq; ++m) {
        const int v = fa4_steps_mark[m];
        const int b0 = m * qb, b1 = b0 + qb;
        if (!v) {
            if (s >= 0)
                emit(rend);
            s = -1;
            continue;
        }
        if (s < 0) {
            s = b0;
            plo = phi = -1;
            fap = 0;
        }
        rend = b1;
        for (;;) {
            const int lo = b0 > s ? b0 : s, hi = b1 < s + kBM ? b1 : s + kBM;
            if (lo >= hi)
                break;
            if (v == 1) {
                if (fap) { /* partial, full, partial: end the step at this block */
                    emit(lo);
                    s = lo;
                    continue;
                }
                if (plo < 0)
                    plo = lo;
                phi = hi;
            } else if (plo >= 0) {
                fap = 1;
            }
            if (s + kBM <= b1) {
                emit(s + kBM);
                s += kBM;
                continue;
            }
            break;
        }
    }
    if (s >= 0)
        emit(rend);
    out[0] = n;
}

#endif /* FA4_SM90_BWD_STEPS80_CUH */
