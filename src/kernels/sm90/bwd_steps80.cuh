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

/* FA4_SM90_BWD_STEPS_EARLY 1 (session 34, opt-in): in default-mode calls the table is built while
 * bwd_pre runs and the wait comes last (below); 0: the wait first, as before. Measured slower
 * (session 35, H100, causal B8 H16 S4096 f+b, one round: 525.5 -> 518.5 TFLOP/s), so it stays off
 * (bench/results/2026-12-07-h100-s35-steps-epi.md). */
#ifndef FA4_SM90_BWD_STEPS_EARLY
#define FA4_SM90_BWD_STEPS_EARLY 0
#endif
extern "C" __global__ void __launch_bounds__(32) fa4_sm90_bwd_steps80(const fa4_params p)
{
    extern __shared__ unsigned char fa4_steps_mark[];
    /* The wait makes this kernel's completion imply bwd_pre's (the main kernel waits on this one
     * only). Deterministic calls keep the table in dq_accum's slots (path_sm90.c
     * bwd80_table_bytes), so it is written after bwd_pre, as fa4_sm90_bwd_rank's. Default-mode
     * calls keep it after everything bwd_pre writes, and the lists it is made from are older than
     * bwd_pre (a full-order launch), as is the previous backward's main that read the last table
     * (this grid starts only once bwd_pre's CTAs have): so the table is built while bwd_pre runs,
     * and lane 0 waits last, with no early trigger (session 34: the main kernel's CTAs, launched at
     * this grid's completion, would otherwise take SMs from bwd_pre's last waves). Before, the
     * table waited for bwd_pre and the main kernel for the table. */
    const bool wait_first = !FA4_SM90_BWD_STEPS_EARLY || p.dq_sem != nullptr;
    if (wait_first) {
        fa4_pdl_wait();
        fa4_pdl_launch();
    }
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
    /* deterministic (path_sm90.c bwd80_table_bytes): steps also end at every multiple of 80 rows, so that each
     * lies in one 80-row tile of the sequence and takes one turn on that tile's counter; the same
     * for the fused dQ conversion (p.dq_cnt), which counts a tile's adds */
#if FA4_SM90_BWD_DQ_FUSED
    const bool det = p.dq_sem != nullptr || p.dq_cnt != nullptr;
#else
    const bool det = p.dq_sem != nullptr;
#endif
    const auto lim = [&](int at) { return det ? at - at % kBM + kBM : at + kBM; };
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
            const int e = lim(s), lo = b0 > s ? b0 : s, hi = b1 < e ? b1 : e;
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
            if (e <= b1) {
                emit(e);
                s = e;
                continue;
            }
            break;
        }
    }
    if (s >= 0)
        emit(rend);
    out[0] = n;
    /* deterministic: the steps from the last one down (as the 64-row walk table's lists), so that
     * under causal or document masks every key tile of a head meets a tile at the same step as the
     * key tile before it, one link of the turn chain behind. Ascending, key tile n + 1 starts at its
     * diagonal, which key tile n reaches only 1.6 steps after its own start, and the lag grows by
     * as much with every key tile (H100 2026-12-06 06:51 UTC, B4 H16 S4096 D128 deterministic bwd:
     * causal 2.631 ms ascending against 1.982 on the 64 main, document B8 4.670 against 2.565) */
    if (p.dq_sem || (p.deterministic & FA4_BWD80_DESCENDING)) /* the default mode on request */
        for (int i = 0, j = n - 1; i < j; ++i, --j) {
            const int m = out[2 + 2 * i], f = out[3 + 2 * i];
            out[2 + 2 * i] = out[2 + 2 * j];
            out[3 + 2 * i] = out[3 + 2 * j];
            out[2 + 2 * j] = m;
            out[3 + 2 * j] = f;
        }
    if (!wait_first)
        fa4_pdl_wait();
}

/* Deterministic with a block mask (path_sm90.c bwd80_table_bytes), after fa4_sm90_bwd_steps80: each
 * step's turn into its info's top byte (bwd_schedule.cuh): the number of key tiles of earlier kv
 * blocks whose steps reach its 80-row tile. A kv block has one step in a tile at most (the steps are
 * cut at every 80 rows, and q_block >= 128 leaves no two runs in one tile); its r = kv_block / 128
 * key tiles take turns t .. t + r - 1 (a last kv block the keys end inside counts r all the same: no
 * later key tile waits on its count). Steps from seqlen_q on take no turn: the walk skips them
 * (fixed-length queries only). Turns fit the byte: the launcher allows at most 256 key tiles.
 * One CTA of 256 threads per (mask batch, mask head), in two passes over every step of its kv
 * blocks (a warp a kv block): which kv blocks reach each tile, as bits (tile-major, nw words a tile:
 * kv block kb is bit kb % 32 of word kb / 32), then each step's turn, r times the bits below its kv
 * block in its tile's words. (A warp that walked the kv blocks in order, counting per tile, took
 * 51 us at causal S 4096: two dependent global loads a kv block; H100 2026-12-06 07:02 UTC.) */
extern "C" __global__ void __launch_bounds__(256) fa4_sm90_bwd_turns80(const fa4_params p)
{
    extern __shared__ unsigned fa4_turns_bits[];
    fa4_pdl_wait(); /* the step table: this kernel's completion implies bwd_pre's and the steps' */
    fa4_pdl_launch();
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nkv = p.bm_nkv, nw = (nkv + 31) >> 5;
    const int nt = (p.bm_nq * p.bm_q_block + kBM - 1) / kBM, r = p.bm_kv_block / kBN;
    for (int i = threadIdx.x; i < nt * nw; i += 256)
        fa4_turns_bits[i] = 0u;
    __syncthreads();
    int *const table = fa4_bwd_steps_table(p) + (long long)blockIdx.x * nkv * fa4_bwd_steps_stride(p);
    for (int kb = warp; kb < nkv; kb += 8) {
        const int *row = table + (long long)kb * fa4_bwd_steps_stride(p);
        const int n = row[0];
        for (int j = lane; j < n; j += 32) {
            const int m0 = row[2 + 2 * j];
            if (m0 < p.seqlen_q)
                atomicOr(&fa4_turns_bits[(m0 / kBM) * nw + (kb >> 5)], 1u << (kb & 31));
        }
    }
    __syncthreads();
    for (int kb = warp; kb < nkv; kb += 8) {
        int *row = table + (long long)kb * fa4_bwd_steps_stride(p);
        const int n = row[0];
        for (int j = lane; j < n; j += 32) {
            const int m0 = row[2 + 2 * j];
            if (m0 < p.seqlen_q) {
                const unsigned *w = fa4_turns_bits + (m0 / kBM) * nw;
                int c = __popc(w[kb >> 5] & ((1u << (kb & 31)) - 1u));
                for (int i = 0; i < (kb >> 5); ++i)
                    c += __popc(w[i]);
                row[3 + 2 * j] |= (c * r) << 24;
            }
        }
    }
}

#if FA4_SM90_BWD_DQ_FUSED
/* The fused dQ conversion with a block mask (params.h dq_cnt; path_sm90.c: fixed-length queries,
 * q_block a multiple of 128), after fa4_sm90_bwd_steps80 (whose steps are then cut at every 80 rows,
 * at most one a kv block and tile): per 80-row tile of the sequence, the number of key tiles that
 * will add into it, i.e. over the kv blocks with a step in the tile (the walk skips steps from
 * seqlen_q on) the key tiles of the block that have a CTA (n0 < seqlen_k), into the counter of
 * every (batch, query head) this mask row serves, both column halves; a tile nobody adds into has
 * dQ 0, written here. One 256-thread CTA per (mask batch, mask head); nt ints of shared memory. */
extern "C" __global__ void __launch_bounds__(256) fa4_sm90_bwd_expect80(const fa4_params p)
{
    extern __shared__ int fa4_expect_cnt[];
    fa4_pdl_wait(); /* the step table: this kernel's completion implies bwd_pre's and the steps' */
    fa4_pdl_launch();
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nkv = p.bm_nkv, r = p.bm_kv_block / kBN;
    const int nt = (p.seqlen_q + kBM - 1) / kBM, key_tiles = (p.seqlen_k + kBN - 1) / kBN;
    for (int i = threadIdx.x; i < nt; i += 256)
        fa4_expect_cnt[i] = 0;
    __syncthreads();
    const int *const table = fa4_bwd_steps_table(p) + (long long)blockIdx.x * nkv * fa4_bwd_steps_stride(p);
    for (int kb = warp; kb < nkv; kb += 8) {
        const int tiles = min(r, key_tiles - kb * r);
        if (tiles <= 0)
            continue;
        const int *row = table + (long long)kb * fa4_bwd_steps_stride(p);
        const int n = row[0];
        for (int j = lane; j < n; j += 32) {
            const int m0 = row[2 + 2 * j];
            if (m0 < p.seqlen_q)
                atomicAdd(&fa4_expect_cnt[m0 / kBM], tiles);
        }
    }
    __syncthreads();
    const int mb = blockIdx.x / p.bm_heads, mh = blockIdx.x % p.bm_heads;
    const int b0 = p.bm_batch == 1 ? 0 : mb, nb = p.bm_batch == 1 ? p.batch : 1;
    const int h0 = p.bm_heads == 1 ? 0 : mh, nh = p.bm_heads == 1 ? p.hq : 1;
    /* a warp per (head, batch), its lanes over the tiles (no 64-bit division per entry: the serial
     * form of session 21 took 634 us at B4 H16 S4096 with a broadcast mask, H100) */
    for (int hb = warp; hb < nb * nh; hb += 8) {
        const int h = h0 + hb % nh, b = b0 + hb / nh;
        const long long base = (long long)h * p.ws_rows + fa4_seq_info(p, b).ws_row;
        for (int t = lane; t < nt; t += 32) {
            const long long row0 = base + (long long)t * kBM;
            p.dq_cnt[(row0 >> 2) * 2] = p.dq_cnt[(row0 >> 2) * 2 + 1] = fa4_expect_cnt[t];
        }
    }
    /* tiles without adds (rare: query blocks no kv block keeps): dQ zero-filled there, the whole
     * CTA a tile at a time (the test is one shared-memory read a tile, the same for every thread) */
    for (int t = 0; t < nt; ++t) {
        if (fa4_expect_cnt[t])
            continue;
        const int rows = min(kBM, p.seqlen_q - t * kBM), d = p.head_dim;
        for (int hb = 0; hb < nb * nh; ++hb) {
            const int h = h0 + hb % nh, b = b0 + hb / nh;
            fa4_elem *gdQ = (fa4_elem *)p.dq.data + b * p.dq.sb + h * p.dq.sh + (long long)t * kBM * p.dq.ss;
            for (int e = threadIdx.x; e < rows * d; e += 256)
                gdQ[(long long)(e / d) * p.dq.ss + e % d] = fa4_from_float(0.f);
        }
    }
}
#endif

#endif /* FA4_SM90_BWD_STEPS80_CUH */
