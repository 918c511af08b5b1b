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
/* 1 in the GQA program (bwd_main80s.cu; bwd_config.cuh says what it changes) */
#ifndef FA4_SM90_BWD_GQA_PROG
#define FA4_SM90_BWD_GQA_PROG 0
#endif

/* 1 in the 80-query-step program (bwd_main80.cu; bwd256.cuh never defines FA4_SM90_BWD_BM) */
#if defined(FA4_SM90_BWD_BM) && FA4_SM90_BWD_BM != 64
#define FA4_BWD_WALK80 1
#else
#define FA4_BWD_WALK80 0
#endif

/* Deterministic with a block mask (p.dq_sem and p.has_block_mask; dQ added in turns, bwd_main.cu):
 * the walk follows the walk table fa4_sm90_bwd_rank builds from the transposed lists, at
 * [mask batch][mask head][kv block] rows of 2 bm_nq ints: the kv block's q blocks (partial and
 * full lists merged) in descending order, then per q block its turn | full << 31. Under causal,
 * sliding-window or document masks every key tile of a kv head then reaches a query tile at the
 * same step as the key tile before it or later, so a turn costs one link of the chain, not a wait
 * over steps. Such a list reads as partial blocks only (one walk for both modes: in the producer a
 * walk of its own spilled its 24 registers under rel_bias); the consumers take the full flag from
 * the row's second half, the dQ issuer its turn (bwd_consumer.cuh dq_turn). The table address
 * goes through a volatile move: computed once per list, never hoisted into registers held over
 * every mode's steps (a cp.async of the turn here, or any register held over the step, made
 * rel_bias's spill fallback spill 4 bytes). */
/* 1: the producer leaves each step's walk-table word next to its stage (and the consumers their
 * key tile's place in its kv block), so that the dQ issuer finds its turn in two shared loads
 * (bwd_consumer.cuh dq_turn); 0: the issuer looks it up in the walk table at the dQ write (three
 * integer divisions and a global load before its wait for the turn). 0 in the spill fallback:
 * rel_bias's fallback build spilled 4 bytes with any code of this kind in the producer or the
 * step loop (sessions 5 and 6). */
#ifndef FA4_SM90_BWD_TURN_SLOT
#if defined(FA4_SM90_BWD_FALLBACK) && FA4_SM90_BWD_FALLBACK
#define FA4_SM90_BWD_TURN_SLOT 0
#else
#define FA4_SM90_BWD_TURN_SLOT 1
#endif
#endif

__device__ __forceinline__ bool fa4_bwd_walk_table(const fa4_params &p)
{
    return p.dq_sem && p.has_block_mask;
}

/* Deterministic with a block mask that is one for every head (p.bm_heads 1), p.deterministic's
 * FA4_DET_HEADS_INNER (common/params.h; the launcher's, path_sm90.c): the GQA group's heads are
 * walked innermost, for each query tile of the one list every head of the group, instead of head
 * by head. The turns are the same (the walk table's, per head and query tile), only the order of
 * a CTA's steps changes. Head by head, key tile n + 1 has fewer tiles per head than key tile n
 * under causal or document masks, so from the second head on it reaches each query tile before
 * key tile n has added there and waits, and every key tile of a kv head runs at key tile 0's
 * pace; with heads inner the walk of key tile n + 1 is a prefix of key tile n's (descending
 * lists): it reaches each (head, query tile) at the same step as key tile n, one link of the chain
 * behind. Only in the 64-query main at D <= 128 (not bwd256.cuh, for which the launcher never
 * sets the bit; not the 80-query walk, which deterministic block masks do not run), and only in
 * builds with a mask_mod: elsewhere the walks below are the head-by-head ones as they were, so
 * plain and score_mod-only builds keep their cubins (with the heads-inner cursor in every build,
 * H200 2026-12-03 14:31 UTC, ALiBi B4 H16 S4096 D128 default-mode bwd 2.798 / 2.805 / 2.804 ms
 * with main's kernels against 2.848 / 2.863 / 2.860 with the cursor alone: +2%, the step's
 * registers allocated differently; the producer walk alone 2.819 / 2.817 / 2.817). */
#if !FA4_BWD_WALK80 && !defined(FA4_SM90_BWD256_CUH) && FA4_HAS_MASK_MOD
#define FA4_BWD_HEADS_INNER_BUILD 1
#else
#define FA4_BWD_HEADS_INNER_BUILD 0
#endif
__device__ __forceinline__ bool fa4_bwd_heads_inner(const fa4_params &p)
{
    return FA4_BWD_HEADS_INNER_BUILD && fa4_bwd_walk_table(p) && (p.deterministic & FA4_DET_HEADS_INNER);
}

/* Deterministic dense walks, rotated (p.deterministic = G >= 2, set by the launcher only where
 * every key tile of a rotation group can be resident at once; 1 or 0: from query tile 0 up): in
 * each head, key tile n starts at query tile (n mod G) mod nq and wraps around, so that in a
 * lock-step run the key tiles of a group never meet at one query tile, and the turns follow that
 * order (fa4_bwd_rot_turn). fa4_bwd_q_tiles leaves the start in num_partial (unused when dense);
 * fa4_bwd_tile reads it. */
__device__ __forceinline__ bool fa4_bwd_rotated(const fa4_params &p)
{
    return !p.has_block_mask && p.deterministic > 1;
}

/* Rotated walks: the turn of query tile m0 (the number of key tiles that add into it before this
 * one). The key tiles of this one's group (gs of them) reach query tile q in the order of their
 * walk step (q - start) mod nq, ties by key tile; with C(x) = f x + min(r, x) the group's key tiles
 * that start below x (f, r: gs over nq), the turn is the earlier groups' g0 key tiles plus C(q + 1)
 * - C(start + 1) (+ gs where q < start) plus the group's key tiles of this start below this one.
 * cst: {start, gs, f, r, base} in shared memory (bwd_main.cu, once per CTA), base the part that
 * does not depend on q. Checked against a lock-step simulation for every G, nk, nq below 40. */
__device__ __forceinline__ int fa4_bwd_rot_turn(unsigned cst, int m0)
{
    int st, gs, f, r, base;
    asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n" : "=r"(st), "=r"(gs), "=r"(f), "=r"(r) : "r"(cst) : "memory");
    asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(base) : "r"(cst + 16u) : "memory");
    const int q = m0 / kBM;
    return f * q + (r < q + 1 ? r : q + 1) + (q < st ? gs : 0) - base;
}

/* Rotated walks, once per CTA before any walk: fa4_bwd_rot_turn's constants for key tile n_tile. */
__device__ __forceinline__ void fa4_bwd_rot_init(const fa4_params &p, unsigned cst, int n_tile, int len_q, int len_k)
{
    const int nq = (len_q + kBM - 1) / kBM;
    if (!fa4_bwd_rotated(p) || nq <= 0)
        return;
    const int nk = (len_k + kBN - 1) / kBN, nl = n_tile % p.deterministic, g0 = n_tile - nl;
    const int gs = nk - g0 < p.deterministic ? nk - g0 : p.deterministic, st = nl % nq;
    const int f = gs / nq, r = gs - f * nq;
    const int base = f * st + (r < st + 1 ? r : st + 1) - nl / nq - g0;
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(cst), "r"(st), "r"(gs), "r"(f), "r"(r) : "memory");
    asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(cst + 16u), "r"(base) : "memory");
}

__device__ __forceinline__ int fa4_bwd_tile(const fa4_tile_list &l, int j, bool *full)
{
    if (l.dense) {
        *full = false;
        const int t = j + l.num_partial;
        return t >= l.count ? t - l.count : t;
    }
    return l.tile(j, full);
}

__device__ __forceinline__ fa4_tile_list fa4_bwd_q_tiles(const fa4_params &p, int b, int h, int n_tile, int len_q)
{
    fa4_tile_list l = fa4_q_tiles(p, b, h, n_tile, kBM, kBN, len_q);
    if (l.dense && p.deterministic > 1 && l.count > 0)
        l.num_partial = (n_tile % p.deterministic) % l.count;
    if (fa4_bwd_walk_table(p)) {
        const int *sem;
        asm volatile("mov.b64 %0, %1;\n" : "=l"(sem) : "l"(p.dq_sem));
        const int bb = p.bm_batch == 1 ? 0 : b, hh = p.bm_heads == 1 ? 0 : h;
        const long long row = ((long long)bb * p.bm_heads + hh) * p.bm_nkv + n_tile * kBN / p.bm_kv_block;
        l.partial = l.full = sem + (long long)p.hq * (p.ws_rows / 4) * 2 + row * 2 * p.bm_nq;
        l.num_partial = l.count / l.per_block;
    }
    return l;
}

/* The walk, twice: fa4_bwd_walk calls visit(h, m0, tw) for each query tile in two plain loops
 * (tw: with the walk table the tile's turn | full << 31 from it, else 0)
 * (the producer: a cursor kept across steps spilled at 24 registers); fa4_bwd_cursor steps through
 * the same tiles one next() at a time (the consumers: their step then sits in a single loop body,
 * which ptxas allocates without spills at 240 registers where the nested loops spilled a few bytes
 * at D 128 with mods). Keep the two in the same order. */
#if !FA4_BWD_WALK80
#if FA4_BWD_HEADS_INNER_BUILD
template <typename F>
__device__ __forceinline__ void fa4_bwd_walk(const fa4_params &p, int b, int hk, int n_tile, int len_q, F &&visit)
{
    /* heads inner (fa4_bwd_heads_inner): head 0's list (the same for every head), each tile
     * visited for every head before the next; the outer loop runs once. Written with one list
     * load and one visit site, the heads counted in hh as they are: a loop over the heads nested
     * inside made the producer spill 52 bytes more at 24 registers, a second list load cost
     * ~260 instructions (plain D 128, NVRTC 13); this form spills less than the head-by-head
     * walk alone did (16 / 16 bytes against 28 / 24) */
    const bool hin = fa4_bwd_heads_inner(p);
    for (int hh = 0; hh < p.group; ++hh) {
        const fa4_tile_list tl = fa4_bwd_q_tiles(p, b, hk * p.group + hh, n_tile, len_q);
        for (int j = 0; j < tl.count;) {
            bool full;
            const int m0 = fa4_bwd_tile(tl, j, &full) * kBM;
            if (m0 < len_q)
                visit(hk * p.group + hh, m0,
                      FA4_SM90_BWD_TURN_SLOT && fa4_bwd_walk_table(p) ? tl.partial[p.bm_nq + tl.partial[j / tl.per_block]]
                                                                      : 0);
            if (hin && ++hh < p.group)
                continue; /* the next head, the same tile */
            if (hin)
                hh = 0;
            ++j;
        }
        if (hin)
            break;
    }
}
#else /* bwd256.cuh, builds without mask_mod: the head-by-head walk only, as it was (a copy on
       * purpose: the form above with fa4_bwd_heads_inner a constant false compiles to other SASS,
       * plain D 128 bwd_main90 5522 -> 5530 lines, NVRTC 13, 2026-12-03) */
template <typename F>
__device__ __forceinline__ void fa4_bwd_walk(const fa4_params &p, int b, int hk, int n_tile, int len_q, F &&visit)
{
    for (int hh = 0; hh < p.group; ++hh) {
        const int h = hk * p.group + hh;
        const fa4_tile_list tl = fa4_bwd_q_tiles(p, b, h, n_tile, len_q);
        for (int j = 0; j < tl.count; ++j) {
            bool full;
            const int m0 = fa4_bwd_tile(tl, j, &full) * kBM;
            if (m0 < len_q)
                visit(h, m0,
                      FA4_SM90_BWD_TURN_SLOT && fa4_bwd_walk_table(p) ? tl.partial[p.bm_nq + tl.partial[j / tl.per_block]]
                                                                      : 0);
        }
    }
}
#endif
#endif

#if FA4_BWD_WALK80
/* 80-query steps (bwd_main80.cu): 80 divides no q_block, so with a block mask the walk follows a
 * step table built before the main program (fa4_sm90_bwd_steps80, bwd_steps80.cuh) from the
 * transposed lists: per (mask batch, mask head, kv block) a count, then steps {m0, info}: the kv
 * block's present q blocks in ascending order, each maximal run of consecutive ones (partial and
 * full merged) cut into 80-row steps from its first row, the last step of a run cut at the run's
 * end; info = valid rows (1..80) | first partial row << 8 | end of the partial rows << 16 (rows
 * relative to m0; rows outside [first, end) but valid lie in full blocks: no mask_mod).
 * Deterministic (q_block a multiple of 128, fixed-length queries, no GQA group but by the opt-in
 * heads-inner walk below, at most 256 key tiles: path_sm90.c bwd80_table_bytes): steps are also cut
 * at every multiple of 80 rows, so each lies in one 80-row tile of the sequence and adds its dQ on
 * that tile's turn counter (rows past its valid ones add zeros into the next tile's rows, which
 * changes no bit: the TMA box is 80 rows), and info's top byte holds the turn of the kv block's
 * first key tile there (the key tiles of earlier kv blocks whose steps reach the tile;
 * fa4_sm90_bwd_turns80), which the producer leaves by the stage for the dQ issuer (bwd_consumer.cuh
 * dq_turn). The table then sits in dq_accum's slots past the first, which the deterministic sm90
 * main does not use. Dense: every 80 rows, info fa4_bwd_dense_info. The table sits after the
 * workspace's dq_accum (fa4_bwd_steps_table; the host sizes it, path_sm90.c bwd80_table_bytes). */
#if FA4_HAS_MASK_MOD
#define fa4_bwd_dense_info (80u | (80u << 16)) /* every row evaluates mask_mod */
#else
#define fa4_bwd_dense_info 80u
#endif
__device__ __forceinline__ int *fa4_bwd_steps_table(const fa4_params &p)
{
    const long long dq = 4LL * p.dq_slots * p.hq * p.ws_rows * p.head_dim;
    return (int *)((char *)p.dq_accum + ((dq + 255) & ~255LL));
}
__device__ __forceinline__ long long fa4_bwd_steps_stride(const fa4_params &p)
{
    return 2 + 2LL * p.bm_nq * (p.bm_q_block / 64 + 1);
}
/* The table row of head h (count at [0], steps from [2]); nullptr when dense. */
__device__ __forceinline__ const int *fa4_bwd_steps_row(const fa4_params &p, int b, int h, int n_tile, int len_q,
                                                        int &count)
{
    if (!p.has_block_mask) {
        count = (len_q + kBM - 1) / kBM;
        return nullptr;
    }
    const int bb = p.bm_batch == 1 ? 0 : b, hh = p.bm_heads == 1 ? 0 : h;
    const long long row = ((long long)bb * p.bm_heads + hh) * p.bm_nkv + n_tile * kBN / p.bm_kv_block;
    const int *r = fa4_bwd_steps_table(p) + row * fa4_bwd_steps_stride(p);
    count = r[0];
    return r + 2;
}

/* FA4_SM90_BWD80_HEADS_INNER 1 (the GQA program's; 0 compiles the walks below as head by head only,
 * as every other program does, whose code it would change: the 80 main's SASS for attention without
 * groups measured 2-5% slower with it and the split epilogue, H100 2026-12-06): block-masked GQA
 * with one mask for every head, where the launcher sets p.deterministic's FA4_DET_HEADS_INNER
 * (path_sm90.c; FA4JIT_SM90_BWD80_HEADS_INNER=0 clears it), walks each step of the one step table
 * for every head of the group before the next step, as the 64-row walk's heads-inner order
 * (fa4_bwd_heads_inner above).
 * - Deterministic, always: key tile n + 1 then meets each (step, head) one link of the turn chain
 *   behind key tile n instead of waiting for it at every head after the first.
 * - Default mode, where the key tile's walk has at least FA4_SM90_BWD80_HI_MIN_STEPS steps: with
 *   the steps descending (FA4_BWD80_DESCENDING, the launcher's default for GQA) the CTAs of a kv
 *   head read each (query tile, head) together, so L2 can serve its Q and dO to all of them; head
 *   by head they part after the first head, whose walk length differs per key tile.
 * H100 2026-12-06 08:22-08:24 UTC (notes/sm90-bwd.md session 19), B2 H32/4 S4096 D128 bwd ms, two
 * rounds each: GQA causal: head by head ascending 2.048 / 2.106, descending 1.930 / 1.948,
 * heads-inner ascending 2.372 / 2.375, heads-inner descending 1.690 / 1.696; GQA document (three
 * documents): 1.156 / 1.150, 1.138 / 1.126, 1.302 / 1.337, 1.204 / 1.209. Deterministic
 * (heads-inner, descending) causal 1.745 / 1.753, document 1.219 / 1.199, against 2.048 / 2.043
 * and 1.319 / 1.320 on the 64 main. */
#ifndef FA4_SM90_BWD80_HEADS_INNER /* only in the GQA program (bwd_main80s.cu) */
#define FA4_SM90_BWD80_HEADS_INNER FA4_SM90_BWD_GQA_PROG
#endif
#ifndef FA4_SM90_BWD80_HI_MIN_STEPS
#define FA4_SM90_BWD80_HI_MIN_STEPS 28
#endif
#ifndef FA4_SM90_BWD80_HI_DET_MIN_STEPS /* the same for the deterministic mode */
#define FA4_SM90_BWD80_HI_DET_MIN_STEPS 0
#endif
/* count: the key tile's steps (the same for every head: the flag comes only with bm_heads 1) */
__device__ __forceinline__ bool fa4_bwd_heads_inner80(const fa4_params &p, int count)
{
    return FA4_SM90_BWD80_HEADS_INNER && p.has_block_mask && (p.deterministic & FA4_DET_HEADS_INNER) &&
           count >= ((p.deterministic & 1) ? FA4_SM90_BWD80_HI_DET_MIN_STEPS : FA4_SM90_BWD80_HI_MIN_STEPS);
}

template <typename F>
__device__ __forceinline__ void fa4_bwd_walk(const fa4_params &p, int b, int hk, int n_tile, int len_q, F &&visit)
{
    int count0;
    const int *st0 = fa4_bwd_steps_row(p, b, hk * p.group, n_tile, len_q, count0);
    if (fa4_bwd_heads_inner80(p, count0)) {
        const int *st = st0;
        const int count = count0;
        for (int j = 0; j < count; ++j) {
            const int m0 = st[2 * j];
            if (m0 < len_q)
                for (int hh = 0; hh < p.group; ++hh)
                    visit(hk * p.group + hh, m0,
                          FA4_SM90_BWD_TURN_SLOT && fa4_bwd_walk_table(p) ? st[2 * j + 1] : 0);
        }
        return;
    }
    for (int hh = 0; hh < p.group; ++hh) {
        const int h = hk * p.group + hh;
        int count;
        const int *st = fa4_bwd_steps_row(p, b, h, n_tile, len_q, count);
        for (int j = 0; j < count; ++j) {
            const int m0 = st ? st[2 * j] : j * kBM;
            if (m0 < len_q) /* deterministic: the step's info, its turn in the top byte */
                visit(h, m0, FA4_SM90_BWD_TURN_SLOT && fa4_bwd_walk_table(p) ? st[2 * j + 1] : 0);
        }
    }
}

struct fa4_bwd_cursor {
    int hh, j, h, m0, count;
    unsigned full; /* the step's info (see above), named as the 64-row walk's flag */
    const int *st;

    __device__ __forceinline__ void start(const fa4_params &p, int b, int hk, int n_tile, int len_q)
    {
        hh = 0;
        j = -1;
        st = fa4_bwd_steps_row(p, b, hk * p.group, n_tile, len_q, count);
    }

    __device__ __forceinline__ bool next(const fa4_params &p, int b, int hk, int n_tile, int len_q)
    {
        const bool inner = fa4_bwd_heads_inner80(p, count);
        for (;;) {
            if (inner && j >= 0 && hh + 1 < p.group) {
                ++hh; /* the same step, the next head (fa4_bwd_walk's order) */
                h = hk * p.group + hh;
                return true;
            }
            if (inner)
                hh = 0;
            ++j;
            while (j >= count) {
                if (inner || ++hh >= p.group)
                    return false;
                st = fa4_bwd_steps_row(p, b, hk * p.group + hh, n_tile, len_q, count);
                j = 0;
            }
            h = hk * p.group + hh;
            if (st) {
                int2 e;
                asm volatile("ld.global.nc.v2.s32 {%0, %1}, [%2];\n" : "=r"(e.x), "=r"(e.y) : "l"(st + 2 * j));
                /* the steps 8 ahead into L1 (no register held over the step): the entry is read
                 * before the S^T / dP^T issue (inside, mask_bits80), so a miss there stalls it */
                asm volatile("prefetch.global.L1 [%0];\n" ::"l"(st + 2 * j + 16));
                m0 = e.x;
                full = (unsigned)e.y;
            } else {
                m0 = j * kBM;
                full = fa4_bwd_dense_info;
            }
            if (m0 < len_q)
                return true;
            if (inner)
                hh = p.group - 1; /* past the sequence for every head: the next step */
        }
    }
};
#else
struct fa4_bwd_cursor {
    int hh, j, h, m0;
    bool full;
    fa4_tile_list tiles;

    __device__ __forceinline__ void start(const fa4_params &p, int b, int hk, int n_tile, int len_q)
    {
        hh = 0;
        j = -1;
        tiles = fa4_bwd_q_tiles(p, b, hk * p.group, n_tile, len_q);
    }

#if FA4_BWD_HEADS_INNER_BUILD
    /* Advance to the next tile inside the sequence; false when the walk is over. Heads inner
     * (fa4_bwd_heads_inner, the producer's order): the next head of the group at the same tile,
     * after the last head 0 at the list's next tile; the list is head 0's. */
    __device__ __forceinline__ bool next(const fa4_params &p, int b, int hk, int n_tile, int len_q)
    {
        const bool inner = fa4_bwd_heads_inner(p);
        for (;;) {
            if (!(inner && j >= 0 && ++hh < p.group)) {
                if (inner)
                    hh = 0;
                ++j;
            }
            while (j >= tiles.count) {
                if (inner || ++hh >= p.group)
                    return false;
                tiles = fa4_bwd_q_tiles(p, b, hk * p.group + hh, n_tile, len_q);
                j = 0;
            }
            h = hk * p.group + hh;
            m0 = fa4_bwd_tile(tiles, j, &full) * kBM;
            if (fa4_bwd_walk_table(p))
                full = tiles.partial[p.bm_nq + tiles.partial[j / tiles.per_block]] < 0;
            if (m0 < len_q)
                return true;
        }
    }
#else
    /* Advance to the next tile inside the sequence; false when the walk is over. */
    __device__ __forceinline__ bool next(const fa4_params &p, int b, int hk, int n_tile, int len_q)
    {
        for (;;) {
            ++j;
            while (j >= tiles.count) {
                if (++hh >= p.group)
                    return false;
                tiles = fa4_bwd_q_tiles(p, b, hk * p.group + hh, n_tile, len_q);
                j = 0;
            }
            h = hk * p.group + hh;
            m0 = fa4_bwd_tile(tiles, j, &full) * kBM;
            if (fa4_bwd_walk_table(p))
                full = tiles.partial[p.bm_nq + tiles.partial[j / tiles.per_block]] < 0;
            if (m0 < len_q)
                return true;
        }
    }
#endif
};
#endif /* FA4_BWD_WALK80 */

#endif /* FA4_SM90_BWD_SCHEDULE_CUH */
