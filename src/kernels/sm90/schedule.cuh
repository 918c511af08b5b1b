/*
 * schedule.cuh - which key tiles the forward's CTA visits, shared by the producer (what to load)
 * and the consumers (what to mask). Dense: every kN-key tile of the sequence. With a block mask:
 * the partial blocks of the CTA's query block, then the full ones; a block of kv_block keys is
 * walked in tiles of kN keys starting at the block's first key. A block smaller than kN (64-key
 * blocks with 128-key tiles) still loads kN keys but only its own `span` keys count: the rest are
 * masked, so blocks of any multiple-of-16 size work, at the price of idle tensor-core work.
 * fa4_sm90_tile orders the tiles of the persistent grid, fa4_sm90_walk deals them to the CTAs;
 * fa4_sm90_rows says how many query rows a tile has. With a workspace the tiles are handed out
 * dynamically instead (fa4_sm90_dyn_tile, fa4_sm90_fwd_order, notes/issue8-schedule.md).
 */
#ifndef FA4_SM90_SCHEDULE_CUH
#define FA4_SM90_SCHEDULE_CUH

/* FA4_SM90_TILES_ONE_PER_BLOCK (session 23, default 1): fa4_sm90_tiles::start without a division
 * where a mask block holds one key tile; 0: the build before. Measured with MASK_FULL_SPLIT
 * (softmax.cuh; H100 2026-12-06, bench/results/2026-12-06-h100-s24-pending.txt): causal +3.2%,
 * prefix-LM +3.3%, document +1.9% forward. */
#ifndef FA4_SM90_TILES_ONE_PER_BLOCK
#define FA4_SM90_TILES_ONE_PER_BLOCK 1
#endif
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
#if FA4_SM90_TILES_ONE_PER_BLOCK
        /* one key tile a mask block (kv_block = kN, as FlexAttention's 128-key blocks at D <= 128):
         * the list index is j itself; the signed division by a runtime per_block took ~30
         * instructions a key tile on every block-masked call (session 23). A uniform branch. */
        int li = j, sub = 0;
        if (per_block != 1) {
            li = (int)((unsigned)j / (unsigned)per_block);
            sub = j - li * per_block;
        }
#else
        const int li = j / per_block, sub = j - li * per_block;
#endif
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

/* ------------------------------------------------------------------------ dynamic schedule
 * With a workspace (fa4_fwd_args.workspace) the producer of each CTA takes its first tile at
 * blockIdx.x and every further one from a counter in the workspace (gridDim.x + atomicAdd), when
 * its previous tile's loads are issued; it hands each tile to the consumers through shared memory
 * (fwd.cu). A CTA that is free takes the next tile, so the split follows the tiles' real costs
 * (greedy list scheduling). The launch clears the counter on its stream before the kernel
 * (cuMemsetD32Async, or fa4_sm90_fwd_order below with a block mask): nothing waits on another CTA,
 * so a grid that is not all resident at once still finishes.
 * Order of the counter's tiles (notes/issue8-schedule-model.py: max/mean CTA time, 132 CTAs):
 *   no block mask: fa4_sm90_tile's (all tiles of a head cost the same);
 *   block mask: per (batch, head) the query tiles ranked by weight (2 x partial + full key blocks,
 *     fa4_sm90_fwd_order): first the hoisted ones, the K heaviest of every head, then sections of
 *     FA4_SM90_SECTION consecutive (batch, head) pairs with their other tiles interleaved heaviest
 *     first (the heads in flight stay few, their K and V in L2). K (at most FA4_SM90_HOIST_MAX)
 *     counts the tiles of a mask row that weigh over twice the row's mean: tiles that, taken with
 *     the last section, would overhang the end. Document's two boundary tiles (46 and 27 units
 *     against a mean CTA load of 371, where the last section leaves about 23 per CTA) are such;
 *     causal, window and prefix-LM have none (K = 0). Modelled max/mean: document 1.444 (round
 *     robin) -> 1.003 (1.054 without the hoist), causal 1.031 -> 1.001. */
#ifndef FA4_SM90_SECTION
#define FA4_SM90_SECTION 8
#endif
#ifndef FA4_SM90_HOIST_MAX
#define FA4_SM90_HOIST_MAX 4
#endif

/* The weight of query block qb of a mask row (its lists' counts np, nf; nf may be NULL). */
__device__ __forceinline__ int fa4_sm90_block_weight(const int *np, const int *nf, int qb)
{
    return 2 * np[qb] + (nf ? nf[qb] : 0);
}

/* The block mask's row (its lists' [batch][head]) of a tile's batch entry and head. */
__device__ __forceinline__ int fa4_sm90_bm_row(const fa4_params &p, int b, int h)
{
    return (p.bm_batch == 1 ? 0 : b) * p.bm_heads + (p.bm_heads == 1 ? 0 : h);
}

/* Counter value idx -> (query tile, head * batch index hb). perm: fa4_sm90_fwd_order's ranking
 * (block masks) with k0 tiles of every head hoisted, or NULL: fa4_sm90_tile's order. */
__device__ __forceinline__ void fa4_sm90_dyn_tile(const fa4_params &p, const int *perm, int k0, int idx, int n_m,
                                                  int nh, int *m_tile, int *hb)
{
    if (!perm) {
        const int q = idx / n_m;
        *m_tile = n_m - 1 - (idx - q * n_m);
        *hb = q;
        return;
    }
    int rank;
    if (idx < k0 * nh) {
        rank = idx / nh;
        *hb = idx - rank * nh;
    } else {
        const int i = idx - k0 * nh, per = (n_m - k0) * FA4_SM90_SECTION, s = i / per;
        const int h0 = s * FA4_SM90_SECTION, hs = min(FA4_SM90_SECTION, nh - h0), r = i - s * per;
        const int rr = r / hs;
        *hb = h0 + (r - rr * hs);
        rank = k0 + rr;
    }
    const int b = *hb / p.hq;
    *m_tile = __ldg(perm + (long long)fa4_sm90_bm_row(p, b, *hb - b * p.hq) * n_m + rank);
}

/* Handing a tile to the consumers: two words in shared memory, written by the producer before it
 * arrives on the Q barrier and read by the consumers after their wait on it. */
__device__ __forceinline__ void fa4_sm90_put_tile(unsigned slot, int m_tile, int hb)
{
    asm volatile("st.shared.v2.b32 [%0], {%1, %2};\n" ::"r"(slot), "r"(m_tile), "r"(hb) : "memory");
}
__device__ __forceinline__ void fa4_sm90_get_tile(unsigned slot, int *m_tile, int *hb)
{
    asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];\n" : "=r"(*m_tile), "=r"(*hb) : "r"(slot) : "memory");
}

#endif /* FA4_SM90_SCHEDULE_CUH */
