/*
 * scheduler.cuh - which tiles a CTA visits. A CTA maps to (tile, head, batch) through blockIdx; the
 * sequence of a batch entry comes from cu_seqlens under varlen; the tiles it iterates come from the
 * block mask when there is one (partial blocks first, then full ones; absent blocks never appear),
 * else every tile of the sequence. Block sizes must be multiples of the tile sizes (the launcher
 * checks), so a tile never straddles two blocks.
 */
#ifndef FA4_SM80_SCHEDULER_CUH
#define FA4_SM80_SCHEDULER_CUH

struct fa4_seq {
    int len_q, len_k;       /* rows of this sequence */
    long long row_q, row_k; /* first row in the packed tensors (0 for fixed length) */
    long long ws_row;       /* first row in the workspace (per head): a multiple of 4, see below */
};

/* Workspace rows of sequence b (lse2, dpsum, dq_accum: [hq][ws_rows]) start at
 * round_up_4(first_row + 3 b), so every sequence starts 16-byte aligned in the fp32 arrays (the sm90
 * backward loads lse2 / dpsum rows with TMA, whose boxes must start 16-byte aligned) and never
 * overlaps the next one (round_up_4(x) <= x + 3). The host sizes ws_rows as
 * round_up_4(total rows + 3 batch) (path_sm80.c bwd_layout). */
__device__ __forceinline__ long long fa4_ws_row(long long first_row, int b)
{
    return (first_row + 3LL * b + 3) & ~3LL;
}

__device__ __forceinline__ fa4_seq fa4_seq_info(const fa4_params &p, int b)
{
    fa4_seq s;
    if (p.cu_seqlens_q) {
        s.row_q = p.cu_seqlens_q[b];
        s.len_q = p.cu_seqlens_q[b + 1] - p.cu_seqlens_q[b];
        s.ws_row = fa4_ws_row(s.row_q, b);
    } else {
        s.row_q = 0;
        s.len_q = p.seqlen_q;
        s.ws_row = fa4_ws_row((long long)b * p.seqlen_q, b);
    }
    if (p.cu_seqlens_k) {
        s.row_k = p.cu_seqlens_k[b];
        s.len_k = p.cu_seqlens_k[b + 1] - p.cu_seqlens_k[b];
    } else {
        s.row_k = 0;
        s.len_k = p.seqlen_k;
    }
    return s;
}

/* The tiles one CTA walks: `count` tiles; tile(j) gives the tile index along the walked dimension
 * (in units of `tile` rows) and whether it lies in a full block (mask_mod skipped). */
struct fa4_tile_list {
    int count;
    int per_block;          /* tiles per mask block */
    int num_partial;
    const int *partial, *full;
    int dense;

    __device__ __forceinline__ int tile(int j, bool *is_full) const
    {
        if (dense) {
            *is_full = false;
            return j;
        }
        const int li = j / per_block, sub = j - li * per_block;
        const bool f = li >= num_partial;
        *is_full = f;
        return (f ? full[li - num_partial] : partial[li]) * per_block + sub;
    }
};

/* Forward: the kv tiles of query tile m_tile (tile rows = kFwdM; kv tiles of kFwdN). */
__device__ __forceinline__ fa4_tile_list fa4_kv_tiles(const fa4_params &p, int b, int h, int m_tile,
                                                      int m_rows, int n_rows, int len_k)
{
    fa4_tile_list l;
    l.dense = !p.has_block_mask;
    l.num_partial = 0;
    l.partial = l.full = 0;
    l.per_block = 1;
    if (l.dense) {
        l.count = (len_k + n_rows - 1) / n_rows;
        return l;
    }
    const int bb = p.bm_batch == 1 ? 0 : b, hh = p.bm_heads == 1 ? 0 : h;
    const int qb = m_tile * m_rows / p.bm_q_block;
    const long long row = ((long long)bb * p.bm_heads + hh) * p.bm_nq + qb;
    l.per_block = p.bm_kv_block / n_rows;
    l.num_partial = p.kv_num[row];
    l.partial = p.kv_idx + row * p.bm_nkv;
    const int nf = p.full_kv_num ? p.full_kv_num[row] : 0;
    l.full = p.full_kv_idx ? p.full_kv_idx + row * p.bm_nkv : l.partial;
    l.count = (l.num_partial + nf) * l.per_block;
    return l;
}

/* Backward: the q tiles (of m_rows) that kv tile n_tile (of n_rows) sees, from the transposed lists. */
__device__ __forceinline__ fa4_tile_list fa4_q_tiles(const fa4_params &p, int b, int h, int n_tile,
                                                     int m_rows, int n_rows, int len_q)
{
    fa4_tile_list l;
    l.dense = !p.has_block_mask;
    l.num_partial = 0;
    l.partial = l.full = 0;
    l.per_block = 1;
    if (l.dense) {
        l.count = (len_q + m_rows - 1) / m_rows;
        return l;
    }
    const int bb = p.bm_batch == 1 ? 0 : b, hh = p.bm_heads == 1 ? 0 : h;
    const int kb = n_tile * n_rows / p.bm_kv_block;
    const long long row = ((long long)bb * p.bm_heads + hh) * p.bm_nkv + kb;
    l.per_block = p.bm_q_block / m_rows;
    l.num_partial = p.q_num[row];
    l.partial = p.q_idx + row * p.bm_nq;
    const int nf = p.full_q_num ? p.full_q_num[row] : 0;
    l.full = p.full_q_idx ? p.full_q_idx + row * p.bm_nq : l.partial;
    l.count = (l.num_partial + nf) * l.per_block;
    return l;
}

#endif /* FA4_SM80_SCHEDULER_CUH */
