/*
 * bwd_schedule.cuh - which query tiles the sm90 backward's CTA visits, shared by the producer (what
 * to load) and the consumers (what to mask): for its kBN keys of kv head hk, every query head of the
 * GQA group in turn, and for each head the query tiles of kBM rows that the block mask pairs with
 * these keys (the transposed lists: partial blocks first, then full ones), or every tile of the
 * sequence when dense. Producer and consumers run the same walk independently, so the ring's stage
 * and phase follow from the step count alone.
 * Block masks need kv_block a multiple of kBN and q_block a multiple of kBM (the launcher checks):
 * a CTA's keys then lie in one kv block.
 */
#ifndef FA4_SM90_BWD_SCHEDULE_CUH
#define FA4_SM90_BWD_SCHEDULE_CUH

/* The walk, twice: fa4_bwd_walk calls visit(h, m0, full) for each query tile in two plain loops
 * (the producer: a cursor kept across steps spilled at 24 registers); fa4_bwd_cursor steps through
 * the same tiles one next() at a time (the consumers: their step then sits in a single loop body,
 * which ptxas allocates without spills at 240 registers where the nested loops spilled a few bytes
 * at D 128 with mods). Keep the two in the same order. */
template <typename F>
__device__ __forceinline__ void fa4_bwd_walk(const fa4_params &p, int b, int hk, int n_tile, int len_q, F &&visit)
{
    for (int hh = 0; hh < p.group; ++hh) {
        const int h = hk * p.group + hh;
        const fa4_tile_list tl = fa4_q_tiles(p, b, h, n_tile, kBM, kBN, len_q);
        for (int j = 0; j < tl.count; ++j) {
            bool full;
            const int m0 = tl.tile(j, &full) * kBM;
            if (m0 < len_q)
                visit(h, m0, full);
        }
    }
}

struct fa4_bwd_cursor {
    int hh, j, h, m0;
    bool full;
    fa4_tile_list tiles;

    __device__ __forceinline__ void start(const fa4_params &p, int b, int hk, int n_tile, int len_q)
    {
        hh = 0;
        j = -1;
        tiles = fa4_q_tiles(p, b, hk * p.group, n_tile, kBM, kBN, len_q);
    }

    /* Advance to the next tile inside the sequence; false when the walk is over. */
    __device__ __forceinline__ bool next(const fa4_params &p, int b, int hk, int n_tile, int len_q)
    {
        for (;;) {
            ++j;
            while (j >= tiles.count) {
                if (++hh >= p.group)
                    return false;
                tiles = fa4_q_tiles(p, b, hk * p.group + hh, n_tile, kBM, kBN, len_q);
                j = 0;
            }
            h = hk * p.group + hh;
            m0 = tiles.tile(j, &full) * kBM;
            if (m0 < len_q)
                return true;
        }
    }
};

#endif /* FA4_SM90_BWD_SCHEDULE_CUH */
