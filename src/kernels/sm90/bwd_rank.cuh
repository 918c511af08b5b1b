/*
 * bwd_rank.cuh - fa4_sm90_bwd_rank, the walk table of the sm90 backward's deterministic mode with a
 * block mask, shared by both backward mains (bwd_main.cu at D <= 128 with kBN = 128, bwd256.cuh at
 * D 256 with kBN = 64: the table counts key tiles of the including program's kBN). Included where
 * the kernel was defined before, so that bwd_main.cu's program text stays as it was.
 */
#ifndef FA4_SM90_BWD_RANK_CUH
#define FA4_SM90_BWD_RANK_CUH

/* Deterministic with a block mask, before the main program: the walk table of bwd_schedule.cuh
 * (fa4_bwd_q_tiles) after the turn counters. For kv block kb, its q blocks (partial and full
 * lists) in descending order, then per q block m of them its turn (| full << 31): the number of
 * key tiles of kv blocks before kb whose lists hold m too (key tile kb * r + i, r = kv_block /
 * kBN, adds at that + i). One warp
 * per (mask batch, mask head), kv blocks in order, shared memory per q block: the mark of kb's
 * lists and the count of earlier key tiles (2 bm_nq ints). Entries of one kv block's lists must
 * name distinct q blocks in [0, bm_nq) (as the backward's walk needs anyway). */
/* The warp marks the q blocks of the transposed lists' row `row` (a kv block): mark[m] = 1 for a
 * partial block, 2 for a full one; entries outside [0, bm_nq) are skipped. Shared by the
 * deterministic walk table (fa4_sm90_bwd_rank) and the 80-query step table (bwd_steps80.cuh). */
template <typename T>
__device__ __forceinline__ void fa4_bwd_mark_q_blocks(const fa4_params &p, long long row, T *mark, int lane)
{
    const int nq = p.bm_nq, np = p.q_num[row], nf = p.full_q_num ? p.full_q_num[row] : 0;
    for (int i = lane; i < np + nf; i += 32) {
        const int m = i < np ? p.q_idx[row * nq + i] : p.full_q_idx[row * nq + i - np];
        if (m >= 0 && m < nq)
            mark[m] = i < np ? 1 : 2;
    }
}

extern "C" __global__ void __launch_bounds__(32) fa4_sm90_bwd_rank(const fa4_params p)
{
    extern __shared__ int fa4_rank_smem[];
    /* a dependent launch on bwd_pre: its lists are older than bwd_pre, and the table it writes was
     * read by the previous backward's main; the wait also makes its completion imply bwd_pre's,
     * which the main kernel's wait relies on */
    fa4_pdl_wait();
    fa4_pdl_launch();
    int *mark = fa4_rank_smem, *cnt = fa4_rank_smem + p.bm_nq;
    const int lane = threadIdx.x, nq = p.bm_nq, r = p.bm_kv_block / kBN;
    for (int i = lane; i < 2 * nq; i += 32)
        fa4_rank_smem[i] = 0;
    __syncwarp();
    for (int kb = 0; kb < p.bm_nkv; ++kb) {
        const long long row = (long long)blockIdx.x * p.bm_nkv + kb;
        fa4_bwd_mark_q_blocks(p, row, mark, lane);
        __syncwarp();
        int *out = p.dq_sem + (long long)p.hq * (p.ws_rows / 4) * 2 + row * 2 * nq;
        int at = 0;
        for (int top = nq - 1; top >= 0; top -= 32) {
            const int m = top - lane, v = m >= 0 ? mark[m] : 0;
            const unsigned set = __ballot_sync(0xffffffffu, v != 0);
            if (v) {
                const int k = at + __popc(set & ((1u << lane) - 1u));
                out[k] = m;
                out[nq + m] = cnt[m] | (v == 2 ? (int)0x80000000u : 0);
                cnt[m] += r;
                mark[m] = 0;
            }
            at += __popc(set);
        }
        __syncwarp();
    }
}

#endif /* FA4_SM90_BWD_RANK_CUH */
