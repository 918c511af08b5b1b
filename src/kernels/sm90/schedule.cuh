/*
 * schedule.cuh - which key tiles the forward's CTA visits, shared by the producer (what to load)
 * and the consumers (what to mask). Dense: every kN-key tile of the sequence. With a block mask:
 * the partial blocks of the CTA's query block, then the full ones; a block of kv_block keys is
 * walked in tiles of kN keys starting at the block's first key. A block smaller than kN (64-key
 * blocks with 128-key tiles) still loads kN keys but only its own `span` keys count: the rest are
 * masked, so blocks of any multiple-of-16 size work, at the price of idle tensor-core work.
 * fa4_sm90_tile orders the tiles of the persistent grid, fa4_sm90_walk deals them to the CTAs;
 * fa4_sm90_rows says how many query rows a tile has.
 */
#ifndef FA4_SM90_SCHEDULE_CUH
#define FA4_SM90_SCHEDULE_CUH

struct fa4_sm90_tiles {
    int count;
    int per_block, span;
    int num_partial;
    const int *partial, *full;
    int dense, kv_block;

    /* First key of tile j; *is_full: inside a full block (mask_mod skipped). */
    __device__ __forceinline__ int start(int j, bool *is_full) const
    {
        if (dense) {
            *is_full = false;
            return j * kN;
        }
        const int li = j / per_block, sub = j - li * per_block;
        const bool f = li >= num_partial;
        *is_full = f;
        return (f ? full[li - num_partial] : partial[li]) * kv_block + sub * kN;
    }
};

/* Query rows per tile: kM, or 128 (a 3-consumer kernel with its third consumer idle) when a block
 * mask's q_block is not a multiple of kM: a tile must lie inside one query block, whose list of
 * key blocks it walks. The host allows q_block multiples of 128 only. */
__device__ __forceinline__ int fa4_sm90_rows(const fa4_params &p)
{
    if constexpr (kConsumers == 2)
        return kM;
    else
        return p.has_block_mask && p.bm_q_block % kM ? 128 : kM;
}

/* m0: the tile's first query row. */
__device__ __forceinline__ fa4_sm90_tiles fa4_sm90_kv_tiles(const fa4_params &p, int b, int h, int m0,
                                                            int len_k)
{
    fa4_sm90_tiles l;
    l.dense = !p.has_block_mask;
    l.num_partial = 0;
    l.partial = l.full = 0;
    l.per_block = 1;
    l.span = kN;
    l.kv_block = kN;
    if (l.dense) {
        l.count = (len_k + kN - 1) / kN;
        return l;
    }
    const int bb = p.bm_batch == 1 ? 0 : b, hh = p.bm_heads == 1 ? 0 : h;
    const int qb = m0 / p.bm_q_block;
    const long long row = ((long long)bb * p.bm_heads + hh) * p.bm_nq + qb;
    l.kv_block = p.bm_kv_block;
    l.per_block = p.bm_kv_block >= kN ? p.bm_kv_block / kN : 1;
    l.span = p.bm_kv_block >= kN ? kN : p.bm_kv_block;
    l.num_partial = p.kv_num[row];
    l.partial = p.kv_idx + row * p.bm_nkv;
    const int nf = p.full_kv_num ? p.full_kv_num[row] : 0;
    l.full = p.full_kv_idx ? p.full_kv_idx + row * p.bm_nkv : l.partial;
    l.count = (l.num_partial + nf) * l.per_block;
    return l;
}

/* Tile idx of the persistent walk -> (query tile, head, batch entry): the query tiles of one head
 * are adjacent, last (heaviest under a causal mask) first; heads are adjacent within a batch entry,
 * so the query heads of one KV head (h / group) follow each other and share K and V in L2. */
__device__ __forceinline__ void fa4_sm90_tile(int idx, int n_m, int hq, int *m_tile, int *h, int *b)
{
    const int hb = idx / n_m;
    *m_tile = n_m - 1 - (idx - hb * n_m);
    *h = hb % hq;
    *b = hb / hq;
}

/* The tile CTA c of a grid of g takes from the wave that starts at `base` (tiles base .. base +
 * g - 1 of the order above). Round robin (c) gave CTA c the tiles c, c + g, ...: with the
 * heaviest query tile of each head first and g = 132 = 4 heads + 4 tiles of 32, a CTA saw one
 * class of query tiles and causal's split was max/mean 1.12 (modelled, notes/issue8-schedule.md).
 * With a block mask the waves are dealt in a boustrophedon instead, forwards in even waves and
 * backwards in odd ones, so a CTA that drew a heavy tile in one wave draws a light one in the
 * next (modelled 1.03, the granularity of whole tiles; H200 causal +9.7%). Each wave still holds
 * the same tiles, so the heads in flight (their K and V in L2) are those of round robin. Dense
 * attention keeps round robin: its tiles are equal (dealing it the same way measured the same). */
__device__ __forceinline__ int fa4_sm90_walk(int base, bool odd_wave, int c, int g, bool boustrophedon)
{
    return base + (boustrophedon && odd_wave ? g - 1 - c : c);
}

#endif /* FA4_SM90_SCHEDULE_CUH */
