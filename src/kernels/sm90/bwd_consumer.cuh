/*
 * bwd_consumer.cuh - one step of a consumer warpgroup of the sm90 backward: its 64 keys against one
 * tile of kBM query rows. Everything is computed transposed (swapAB), keys as the wgmma M dimension,
 * so the probabilities and dS come out of the accumulators in the A-operand layout of the RS-wgmmas
 * that consume them:
 *   S^T = K Q^T, dP^T = V dO^T              SS-wgmma (K, V resident; Q, dO from the ring)
 *   P^T = exp2(score_mod(scale S) log2e - lse2), masked; dS^T = P^T (dP^T - dpsum) d score_mod/d score
 *   trainable aux: terms P (dP - dpsum) d mod/d aux[i] summed per run of equal addresses in a
 *                  thread's registers, each run committed (fa4_aux_grad_commit: the CTA's
 *                  shared-memory window, else a global atomic), the rest per warp at the tile's
 *                  end (fa4_score_mod_aux_grad_acc / fa4_aux_grad_flush; as the sm80 kernel)
 *   dV += P^T dO, dK += dS^T Q              RS-wgmma, P^T / dS^T from registers, dO / Q N-major
 *   dS -> shared memory ([query][key], stmatrix.trans), both warpgroups meet on named barrier 1
 *   dQ[:, panel cw] = dS K[:, panel cw]     SS-wgmma, K N-major; fp32 tile staged in shared memory
 *                                           and added into the workspace by TMA (deterministic: in
 *                                           key-tile order, on turn counters)
 * The fragment layout is mma.sync's: chunk c of an accumulator holds rows g, g+8 and columns
 * 8c+2t, 8c+2t+1 (g = lane/4, t = lane%4); rows are keys here, columns queries.
 */
#ifndef FA4_SM90_BWD_CONSUMER_CUH
#define FA4_SM90_BWD_CONSUMER_CUH

/* 1: dQ = dS K is issued before dV, dK, so its reduction into the workspace overlaps them (see
 * step()); 0: after them, the stage released before dQ completes. */
#ifndef FA4_SM90_BWD_DQ_FIRST
#define FA4_SM90_BWD_DQ_FIRST 1
#endif

/* The spill fallback levels (FA4_SM90_BWD_FALLBACK, path_sm90.c's spill_fallback list: where a
 * build spills the library compiles the next level and keeps the cleanest):
 *   0: the fastest schedule;
 *   1: where level 0 split a score_mod's score stage (FA4_SM90_BWD_MOD_SPLIT below) that split is
 *      undone and nothing else; otherwise the same as 2;
 *   2: the build with the fewest registers (FA4_SM90_BWD_FAST_TILES 0, FA4_SM90_BWD_DQ_PASS 0,
 *      FA4_SM90_BWD_DQ_PEEK 0, whatever else was set).
 * FA4_SM90_BWD_MOD_SPLIT: a score_mod kernel tries the two-pass score stage first; not with
 * trainable aux (its gradient terms need P, dP and the first pass's read indices together) nor
 * with the emitter's tile-add form (the split has no grads_add). */
/* FA4_SM90_BWD_SPLIT_ADD 1 or 2 (session 25; default 2 since session 26: H100 2026-12-06, B8 H16
 * S4096 D128 bf16, one round, fwd + bwd TFLOP/s, rel. bias trainable 440.0 -> 463.5, fixed 500.1 ->
 * 537.3, ALiBi and plain unchanged 528.9 / 532.9, 590.5 / 591.4; the suite's relbias and t5 cases
 * pass with it): mods with
 * the tile-add form but no trainable read (rel_bias or t5_bias with a fixed table) take the split too,
 * their tile steps through grads_split_add (P from score * scale + c0 in the first pass, dS in the
 * second), the band's steps through the split's relative form (probs_rel). 0: such mods keep the
 * one-pass stage (grads_add, grads_rel). */
#ifndef FA4_SM90_BWD_SPLIT_ADD
#define FA4_SM90_BWD_SPLIT_ADD 2
#endif
/* FA4_SM90_BWD_SPLIT_ADD 2: the trainable table too (rel_bias, t5_bias with a trainable table):
 * its tile steps through grads_split_add with the tile's gradient sum taken in the second pass,
 * every other step one-pass after both wgmmas (grads_add, grads_rel with the per-position terms),
 * inside the split's issue order (FA4_SM90_BWD_SPLIT_TRAIN). */
#if FA4_SM90_BWD_SPLIT_ADD >= 2 && FA4_HAS_SCORE_MOD && FA4_HAS_TRAINABLE_AUX && FA4_NUM_AUX_GRAD_SITES > 0 && \
    FA4_SCORE_MOD_TILE_ADD && defined(FA4_SCORE_MOD_TILE_GRAD) && FA4_SCORE_MOD_TILE_GRAD && FA4_SCORE_MOD_REL && \
    defined(FA4_SCORE_MOD_REL_SITES) && FA4_SCORE_MOD_REL_SITES && FA4_SM90_BWD_BM == 64
#define FA4_SM90_BWD_SPLIT_TRAIN 1
#else
#define FA4_SM90_BWD_SPLIT_TRAIN 0
#endif
#if FA4_HAS_SCORE_MOD && (!(FA4_HAS_TRAINABLE_AUX && FA4_NUM_AUX_GRAD_SITES > 0) || FA4_SM90_BWD_SPLIT_TRAIN) && \
    (!FA4_SCORE_MOD_TILE_ADD || FA4_SM90_BWD_SPLIT_ADD)
#define FA4_SM90_BWD_MOD_SPLIT 1
#else
#define FA4_SM90_BWD_MOD_SPLIT 0
#endif
#if defined(FA4_SM90_BWD_FALLBACK) && (FA4_SM90_BWD_FALLBACK >= 2 || (FA4_SM90_BWD_FALLBACK == 1 && !FA4_SM90_BWD_MOD_SPLIT))
#define FA4_SM90_BWD_FULL_FALLBACK 1
#else
#define FA4_SM90_BWD_FULL_FALLBACK 0
#endif

/* 1: the score stage in two passes, as the wgmmas complete: P^T (mask, exp2) once S^T is done,
 * while dP^T still runs, then dS^T once dP^T is done (the exp2s, 8192 a step on an SM's 16 MUFU
 * lanes, no longer wait for dP^T). 0: one pass after both. Default 1 without a score_mod; with
 * one, 1 at level 0 where FA4_SM90_BWD_MOD_SPLIT (P packed in the first pass, 16 registers more:
 * at D 128 softcap, softcap_causal, head_scale, t5_bias spill and take level 1, attention_sink
 * does not; H200 ALiBi bwd 398.9 -> 429.8 TFLOP/s, notes/sm90-bwd.md). alibi now spills there
 * too (22 / 16 bytes, NVRTC 13; the report parser hid it until session 14) and takes level 1:
 * bwd 481-483 TFLOP/s against 483-484 at its spilling level 0 (session 14). */
#ifndef FA4_SM90_BWD_SPLIT
#if FA4_SM90_BWD_BM != 64 /* 80-query steps: plain only (bwd_main80.cu) */
#define FA4_SM90_BWD_SPLIT 1
#elif !FA4_HAS_SCORE_MOD
#define FA4_SM90_BWD_SPLIT 1
#elif FA4_SM90_BWD_MOD_SPLIT && !(defined(FA4_SM90_BWD_FALLBACK) && FA4_SM90_BWD_FALLBACK)
#define FA4_SM90_BWD_SPLIT 1
#else
#define FA4_SM90_BWD_SPLIT 0
#endif
#endif
#if FA4_SM90_BWD_SPLIT && FA4_HAS_TRAINABLE_AUX && FA4_NUM_AUX_GRAD_SITES > 0 && !FA4_SM90_BWD_SPLIT_TRAIN
#error "FA4_SM90_BWD_SPLIT: not with trainable aux (but FA4_SM90_BWD_SPLIT_TRAIN)"
#endif
/* With FA4_SM90_BWD_SPLIT 1: 1 issues dV += P^T dO right after the second pass, ahead of the
 * dS store and the consumers' barrier (which it then overlaps), dK and dQ after the barrier;
 * 0 issues all three after the barrier. */
#ifndef FA4_SM90_BWD_DV_EARLY
#define FA4_SM90_BWD_DV_EARLY 1
#endif
#if FA4_SM90_BWD_SPLIT && FA4_SM90_BWD_DV_EARLY && !FA4_SM90_BWD_DQ_FIRST
#error "FA4_SM90_BWD_DV_EARLY needs FA4_SM90_BWD_DQ_FIRST"
#endif
/* FA4_SM90_BWD_DV_WAIT (80-query steps with FA4_SM90_BWD_SPLIT and FA4_SM90_BWD_DV_EARLY; 0 for 64):
 *   0: dQ^T, then dK, with dV still in flight (as the 64-query steps);
 *   1: after the consumers' barrier the warpgroup waits for its dV before it issues dQ^T and dK
 *      (P^T's 20 registers free for dQ^T's 40);
 *   2: dK is issued right behind dV, before the dS store, and both complete before dQ^T. */
/* FA4_SM90_BWD_CHECKED_ONEPASS (80-query steps with FA4_SM90_BWD_SPLIT; 0 for 64): checked tiles
 * (sequence edges) take the one-pass score stage after both wgmmas, the fast tiles the split.
 * Their split spilled 40 bytes at plain D 128 (ptxas hoisted every chunk's bounds ahead). */
#ifndef FA4_SM90_BWD_CHECKED_ONEPASS
#define FA4_SM90_BWD_CHECKED_ONEPASS (FA4_SM90_BWD_BM != 64 && FA4_SM90_BWD_SPLIT)
#endif
#ifndef FA4_SM90_BWD_DV_WAIT
#define FA4_SM90_BWD_DV_WAIT 0
#endif
#if FA4_SM90_BWD_DV_WAIT && (FA4_SM90_BWD_BM == 64 || !FA4_SM90_BWD_SPLIT || !FA4_SM90_BWD_DV_EARLY || FA4_SM90_BWD_DQ_LAG)
#error "FA4_SM90_BWD_DV_WAIT: 80-query steps with FA4_SM90_BWD_SPLIT, FA4_SM90_BWD_DV_EARLY, no lag"
#endif
#if !FA4_SM90_BWD_DQ_FIRST && FA4_SM90_BWD_TURN_SLOT
/* it releases the stage before the dQ write, whose deterministic turn (dq_turn) sits by the stage */
#error "FA4_SM90_BWD_DQ_FIRST 0 needs FA4_SM90_BWD_TURN_SLOT 0 (bwd_schedule.cuh)"
#endif

/* The full fallback (level 2, or 1 where level 0 did not split a score_mod's stage): where the
 * default build spills even so (rel_bias and t5_bias at D 128). */
#if FA4_SM90_BWD_FULL_FALLBACK
#undef FA4_SM90_BWD_FAST_TILES
#undef FA4_SM90_BWD_DQ_PASS
#undef FA4_SM90_BWD_DQ_PEEK
#define FA4_SM90_BWD_FAST_TILES 0
#define FA4_SM90_BWD_DQ_PASS 0
#define FA4_SM90_BWD_DQ_PEEK 0
#endif

/* FA4_SM90_BWD_DQ_LAG, whether the two consumer warpgroups meet every step (default 2 at padded
 * D 128 without a score_mod, else 0):
 *   0: both meet on named barrier 1 every step, after their dS stores, before dQ.
 *   1: step j stores its dS^T into buffer j % 2 and says so on mbarrier ds_full (one arrival per
 *      warp of both warpgroups); the dQ of step j (dS K over both warpgroups' keys) is issued one
 *      step later, in step j + 1 where step j's was (after the dS store, with dK), so it waits
 *      only for the other warpgroup's dS(j), stored half a step or more before; its completion
 *      goes to ds_empty (one arrival per dQ warp), which step j + 2 waits for before it
 *      overwrites the buffer. A warpgroup may run up to about a step ahead of the other. The last
 *      step's dQ is issued after the walk and the dK, dV epilogue (drain_dq). Deterministic calls
 *      (p.dq_sem) keep each step's dQ in its own step (the same code, waiting on ds_full of the
 *      step's own buffer in place of the barrier), so no turn is taken after the walk: a drain
 *      with a turn wait spilled 16 bytes or serialized the wgmma at plain D 128 (tried before
 *      drain_dq's opaque K address, which fixed the drain without a turn; not retried since).
 *   2: as 1, and warpgroup 1 starts its first step only once warpgroup 0 has stored its first
 *      dS (named barrier 4; 2 and 3 are fa4_bwd_wg_sync's): they start about half a step apart.
 * H200, bwd B4 H16 S4096 D128 (notes/sm90-bwd.md, session 7): 1 alone changed little (plain 0%,
 * causal -1.5%, window +2%, padded D 64 -3%: without an offset they still run in step); 2 gave
 * plain +1 to +1.5%, causal (block mask) +2%, window +2%, S8192 -1 to +1%. GPU-checked: 1 (quick
 * suite, --filter determ); 2 only timed. Never with a score_mod (alibi D 128's split build
 * spilled 24 bytes with 1), at padded D 64, or in the full fallback. */
/* FA4_SM90_BWD_PINGPONG 1: the consumer warpgroups take turns issuing their S^T, dP^T (named
 * barriers 5 and 6, as the forward's ping-pong), so the tensor cores run one's while the other's
 * wait and the first one's score math starts while the second's wgmmas still run. H200, with LAG
 * 0: plain +2.6%, causal +1.6%, S8192 +0.6%, window +1%, ALiBi -0.7%, padded D 64 -8%; only
 * timed, never GPU-checked. 0: both issue at will. */
#ifndef FA4_SM90_BWD_PINGPONG
#define FA4_SM90_BWD_PINGPONG 0
#endif
#ifndef FA4_SM90_BWD_DQ_LAG
#if FA4_HEAD_DIM > 64 /* padded D 64 (one dQ warpgroup): 1 and 2 were 3-4% slower */
#define FA4_SM90_BWD_DQ_LAG 2
#else
#define FA4_SM90_BWD_DQ_LAG 0
#endif
#endif
#if FA4_SM90_BWD_DQ_LAG && (FA4_SM90_BWD_FULL_FALLBACK || FA4_HAS_SCORE_MOD || FA4_SM90_BWD_BM != 64)
#undef FA4_SM90_BWD_DQ_LAG
#define FA4_SM90_BWD_DQ_LAG 0
#endif
#if FA4_SM90_BWD_DQ_LAG && !FA4_SM90_BWD_DQ_FIRST
#error "FA4_SM90_BWD_DQ_LAG needs FA4_SM90_BWD_DQ_FIRST"
#endif
#if FA4_SM90_BWD_DQ_LAG == 2 && FA4_SM90_BWD_PINGPONG
/* deadlock (it hung on the H200): warpgroup 1 waits at its first step for warpgroup 0's first dS,
 * warpgroup 0 for the first turn that warpgroup 1 opens only after that wait */
#error "FA4_SM90_BWD_DQ_LAG 2 and FA4_SM90_BWD_PINGPONG exclude each other"
#endif

/* 1: where score_mod is score + c over a warp's tile (emit_tile.c; rel_bias away from the
 * diagonal), grads_add replaces score_mod's derivative and aux-gradient terms at every position
 * with d score_mod / d score = 1 and, for a read of a trainable tensor, one atomic of the tile's
 * dS sum. Not in the spill fallback unless the read is trainable: rel_bias's fallback spilled 8
 * bytes with it (trainable: none), and there the per-position gradient terms are what it saves. */
#ifndef FA4_SM90_BWD_TILE_ADD
#if FA4_HAS_SCORE_MOD && FA4_SCORE_MOD_TILE_ADD && \
    (FA4_SCORE_MOD_TILE_GRAD || !FA4_SM90_BWD_FULL_FALLBACK)
#define FA4_SM90_BWD_TILE_ADD 1
#else
#define FA4_SM90_BWD_TILE_ADD 0
#endif
#endif

/* 1: a trainable tile-add read's gradient (commit_tile_grad) is held per lane across steps while
 * its entry stays the same (fa4_bwd_aff gacc, gidx) and committed when the entry changes or the
 * walk ends (tile_grad_flush): a warp's tile steps away from the diagonal all add into one entry
 * per side (rel_bias's clamped distance, t5_bias's last bucket), so the warp's shuffle sum and
 * lane 0's shared-memory add run about twice a head instead of at every tile step. The entry is
 * the warp's (tl is), so the test and the flush are warp-uniform. Measured (H100 2026-12-07 11:27
 * UTC, B8 H16 S4096 D128 bf16, fa4_ab.py --bwd median of 2, f+b TFLOP/s, 0 -> 1): trainable rel.
 * bias 471.8 -> 489.6, trainable T5 433.8 -> 456.6; the suite's t5, relbias and widebias cases
 * 55 / 55 (bench/results/2026-12-07-h100-s31-gdefer.md). Cost: trainable t5_bias's bwd_main90
 * keeps two more 4-byte spill slots (frame 8 -> 16 bytes; reloaded in the steps outside the
 * first box). */
#ifndef FA4_SM90_BWD_GDEFER
#define FA4_SM90_BWD_GDEFER 1
#endif
#if FA4_SM90_BWD_TILE_ADD && FA4_SCORE_MOD_TILE_GRAD && FA4_SM90_BWD_GDEFER
#define FA4_SM90_BWD_GDEF 1
#else
#define FA4_SM90_BWD_GDEF 0
#endif

/* 1: where score_mod is score + g(kv_idx - q_idx) (FA4_SCORE_MOD_REL, emit_rel.c), the one-pass
 * score stage evaluates g once per offset of a thread's fragment (grads_rel) instead of the dual
 * form at every element (grads), with trainable reads through fa4_score_mod_rel_sites
 * (emit_deriv.c; FA4_SM90_BWD_REL_SITES). 64-query steps only. FA4_SM90_BWD_REL 0 keeps grads()
 * (A/B runs). FA4_SM90_BWD_RELP (after the affine form below): the same for the first pass of the
 * split stage (probs_rel), where the affine form does not take the fast tiles. */
#ifndef FA4_SM90_BWD_REL
#if FA4_HAS_SCORE_MOD && FA4_SCORE_MOD_REL && FA4_SM90_BWD_BM == 64 && !FA4_BWD_WALK80 && \
    (!FA4_SM90_BWD_SPLIT || FA4_SM90_BWD_SPLIT_TRAIN) && \
    (!(FA4_HAS_TRAINABLE_AUX && FA4_NUM_AUX_GRAD_SITES > 0) || (defined(FA4_SCORE_MOD_REL_SITES) && FA4_SCORE_MOD_REL_SITES))
#define FA4_SM90_BWD_REL 1
#else
#define FA4_SM90_BWD_REL 0
#endif
#endif
/* FA4_SM90_BWD_REL_SHFL 1 (grads_rel, probs_rel): a warp's step needs g at 79 offsets (its 16 keys
 * against 64 queries); lane L evaluates slot k's offset 16 k + 1 + L (from the warp's lowest), and
 * a thread reads each of its 18 from the lane that holds it (one shuffle each; with trainable
 * reads the index and coefficient too). Slot k covers 32 offsets and slots start 16 apart, so
 * every chunk's 15 first-row offsets lie in one slot, chosen at compile time: 4 evaluations a
 * thread and step instead of 18 (SASS: t5_bias D 128 bwd_main90 5992 -> 4488 instructions,
 * trainable 7928 -> 6264; rel_bias, whose g is one gather, 4904 -> 5592). 0: each thread
 * evaluates its own 18 (measured, notes/sm90-bwd.md). */
#if FA4_SM90_BWD_REL && FA4_HAS_TRAINABLE_AUX && FA4_NUM_AUX_GRAD_SITES > 0
#define FA4_SM90_BWD_REL_SITES 1
constexpr int kRelSites = FA4_NUM_AUX_GRAD_SITES;
#else
#define FA4_SM90_BWD_REL_SITES 0
constexpr int kRelSites = 1;
#endif
/* FA4_SM90_BWD_REL_SCR 1 (grads_rel with trainable reads and the CTA's window): a thread's 18
 * gradient terms of a step (one per offset of its fragment) are not committed one by one (each a
 * 96-bit integer add into the window whose carry waits on the shared atomic's return: 18 serial
 * round trips and about 30 instructions a term). The lanes that hold one offset at one (chunk, j),
 * (g, t), (g + 2, t + 1), (g + 4, t + 2), (g + 6, t + 3), sum by two shuffles; per chunk the 14
 * chain heads add the sums into the warp's scratch for j (one entry per offset of the step; a
 * __syncwarp before each chunk, whose entries overlap the last one's); then lane L takes the
 * offsets L - 63 + 32 r (r = 0, 1, 2), evaluates the sites' indices and coefficients there, sums runs of equal indices
 * across lanes and commits once a run: 3 commits a lane and step. 0: the per-term runs (A/B). */
#ifndef FA4_SM90_BWD_REL_SCR
#if FA4_SM90_BWD_REL_SITES && FA4_SM90_BWD_AUX_WIN
#define FA4_SM90_BWD_REL_SCR 1
#else
#define FA4_SM90_BWD_REL_SCR 0
#endif
#endif
#if FA4_SM90_BWD_REL_SCR && !(FA4_SM90_BWD_REL_SITES && FA4_SM90_BWD_AUX_WIN && FA4_SM90_BWD_BM == 64)
#error "FA4_SM90_BWD_REL_SCR needs trainable relative sites, the aux window and 64-query steps"
#endif
#if FA4_SM90_BWD_REL_SCR
static_assert(kBAuxScrEntries >= kBM + 15, "the band scratch holds a step's offsets");
#endif
/* Default 1 where g is costly (FA4_SCORE_MOD_REL_HEAVY, emit_rel.c: t5_bias's log) and the table is
 * trainable, with the band scratch above (its owners then take the sites from the slots): H100
 * 2026-12-07, B8 H16 S4096 D128, f+b TFLOP/s, 0 / 1: trainable T5 452.2 / 479.2, trainable rel. bias
 * 515.4 / 509.1, fixed rel. bias 540.8 / 535.0 (notes/sm90-bwd.md, session 33). Fixed tables stay
 * at 0: fixed T5 511.4 / 516.5 (+1.0%), but its bwd_main90 spilled 48 / 44 bytes with it against 8 /
 * 16 without (9641b27); fixed rel. bias 543.0 / 539.8
 * (bench/results/2026-12-07-h100-s36-ab-relshfl.md). */
#ifndef FA4_SM90_BWD_REL_SHFL
#if FA4_SM90_BWD_REL_SCR && defined(FA4_SCORE_MOD_REL_HEAVY) && FA4_SCORE_MOD_REL_HEAVY
#define FA4_SM90_BWD_REL_SHFL 1
#else
#define FA4_SM90_BWD_REL_SHFL 0
#endif
#endif

/* 1: where score_mod has an affine form over a step's box (emit_affine.c: alibi, head_scale), the
 * first pass takes P from ds * scale * s + c + dq * (q - q_lo) + dk * (kv - k_lo) (two FMAs a
 * score) and d score_mod / d score = ds, instead of score_mod's forward and derivative at every
 * position. Unchecked steps of the split 64-query stage only; not with trainable aux (the
 * gradient terms need the mod's own form). FA4_SM90_AFFINE 0 turns it off (A/B runs). */
#ifndef FA4_SM90_AFFINE
#define FA4_SM90_AFFINE 1
#endif
#if FA4_HAS_SCORE_MOD && FA4_SCORE_MOD_AFFINE && !FA4_SCORE_MOD_AFFINE_TRAIN && FA4_SM90_AFFINE && \
    FA4_SM90_BWD_SPLIT && FA4_SM90_BWD_BM == 64 && !(FA4_HAS_TRAINABLE_AUX && FA4_NUM_AUX_GRAD_SITES > 0)
#define FA4_SM90_BWD_AFFINE 1
#else
#define FA4_SM90_BWD_AFFINE 0
#endif
/* The affine form over every query of the sequence and a warp's 16 keys (one box: each step's
 * box lies inside it, with the same ds, dq, dk), asked when the walk reaches a new head (a CTA
 * walks every query head of its kv head's group), not at every step. */
#ifndef FA4_SM90_BWD_RELP
#if FA4_HAS_SCORE_MOD && FA4_SCORE_MOD_REL && FA4_SM90_BWD_SPLIT && FA4_SM90_BWD_BM == 64 && !FA4_BWD_WALK80 && \
    !FA4_SM90_BWD_AFFINE && !(FA4_HAS_TRAINABLE_AUX && FA4_NUM_AUX_GRAD_SITES > 0)
#define FA4_SM90_BWD_RELP 1
#else
#define FA4_SM90_BWD_RELP 0
#endif
#endif
/* FA4_SM90_BWD_TILE_RUN K (0: off; tile-form builds, FA4_SM90_BWD_TILE_ADD): the tile test
 * (fa4_score_mod_tile, a few hundred instructions where it evaluates a helper call: t5_bias) is
 * asked, where a step's test misses, over the warp's keys and the K query tiles from this one on
 * (queries [m0, m0 + K kBM)); where that holds, the steps whose rows lie inside skip the test (the
 * values are the same over the whole box). Where the last single test failed (the diagonal band)
 * the next miss asks only its own tile. Default 8 in every tile-form build.
 * H100 2026-12-06 04:30 UTC, B4 H16 S4096 D128 bf16 bwd TFLOP/s, K = 0 / 4 / 8: T5 315.5 / 361.7 /
 * 376.0, trainable T5 247.6 / 283.1 / 292.2. H100 2026-12-06 05:05 UTC (df2830b, two rounds),
 * K = 4 (T5) or 0 (rel. bias) / 8: T5 364.4, 360.3 / 375.2, 378.0; trainable T5 283.3, 285.2 /
 * 294.1, 291.8; trainable rel. bias 312.3, 310.0 / 320.4, 320.7 (its clamp test is cheap, but the
 * run still skips it and its branch); the t5 subset passed with K = 8 (12 / 12). Relative-form
 * builds take FA4_SM90_BWD_TILE_SAT's two boxes instead of the run (below). */
#ifndef FA4_SM90_BWD_TILE_RUN
#define FA4_SM90_BWD_TILE_RUN 8
#endif
#if !FA4_SM90_BWD_TILE_ADD
#undef FA4_SM90_BWD_TILE_RUN
#define FA4_SM90_BWD_TILE_RUN 0
#endif
/* FA4_SM90_BWD_TILE_SAT (relative-form builds with FA4_SM90_BWD_TILE_RUN): once per warp and
 * head, the 32 lanes ask the tile test over 32 boxes at once, each the warp's 16 keys against every
 * query at least a distance d from them on one side (lanes 0-15 the queries before the keys,
 * 16-31 those after; d from 8 to 1536, tile_sat_d): where the nearest such box holds, every step
 * inside it takes its values without a test, and the steps between the two (the diagonal band,
 * where the boxes of a relative mod such as t5_bias's log buckets are not one value) take the
 * relative form (grads_rel) without a test. The run (FA4_SM90_BWD_TILE_RUN) asked about 12 tests a
 * warp and head at S 4096, about 13% of the fixed T5 backward main's executed instructions by
 * ncu (H100 2026-12-07, bench/results/2026-12-07-h100-s30-checks.txt). 1: builds whose test
 * evaluates a helper call (FA4_SCORE_MOD_TILE_CALLS: t5_bias), 2 (default): every relative
 * tile-form build (rel_bias too), 0: off. Not where a walk visits the heads of a group inside each
 * tile (fa4_bwd_heads_inner: a new head every step), which asks each step's own test instead.
 * H100 2026-12-07, bwd TFLOP/s (B4 H16 S4096 D128 bf16, two rounds), off / 1: T5 410.4, 415.2 /
 * 463.9, 467.4; trainable T5 348.4, 345.0 / 386.7, 384.5. f+b (B8, fa4_ab.py, median of 2), off /
 * 1 / 2: trainable rel. bias 462.4 / 461.4 / 471.7, trainable T5 403.4 / 434.8 / 434.8, plain even
 * (bench/results/2026-12-07-h100-s30-tsat.md, -sat2.md); the relative cases 55 / 55 with 1 and
 * with 2, the full suite 389 / 389 with 1. */
#ifndef FA4_SM90_BWD_TILE_SAT
#define FA4_SM90_BWD_TILE_SAT 2
#endif
#if FA4_SM90_BWD_TILE_RUN && (FA4_SM90_BWD_REL || FA4_SM90_BWD_RELP) && \
    (FA4_SM90_BWD_TILE_SAT == 2 ||                                          \
     (FA4_SM90_BWD_TILE_SAT == 1 && defined(FA4_SCORE_MOD_TILE_CALLS) && FA4_SCORE_MOD_TILE_CALLS))
#define FA4_SM90_BWD_TSAT 1
#else
#define FA4_SM90_BWD_TSAT 0
#endif
#if FA4_SM90_BWD_TSAT
/* dst = src of lane `from` (every lane of the warp takes part), word by word */
template <typename T>
__device__ __forceinline__ void fa4_bwd_shfl_tile(T &dst, const T &src, int from)
{
    unsigned w[(sizeof(T) + 3) / 4] = {};
    memcpy(w, &src, sizeof(T));
#pragma unroll
    for (int i = 0; i < (int)((sizeof(T) + 3) / 4); ++i)
        w[i] = __shfl_sync(0xffffffffu, w[i], from);
    memcpy(&dst, w, sizeof(T));
}
#endif
struct fa4_bwd_aff {
    int h; /* the head it was asked for (-1: none yet) */
#if FA4_SM90_BWD_AFFINE
    bool ok;
    float ks, c, dq, dk, ds; /* ks = ds * scale; c at (query 0, the warp's first key) */
#endif
#if FA4_SM90_BWD_TILE_RUN && !FA4_SM90_BWD_TSAT
    int th, tlo, thi; /* FA4_SM90_BWD_TILE_RUN: rows [tlo, thi) of head th hold the tile form tl */
    bool tfail;       /* the last single-tile test failed */
    fa4_score_tile tl;
#endif
#if FA4_SM90_BWD_TSAT
    int sh;                   /* FA4_SM90_BWD_TILE_SAT: the head the boxes were asked for (-1: none) */
    int qpos, qneg;           /* rows [0, qpos) hold with tpos, rows from qneg on with tneg */
    fa4_score_tile tpos, tneg;
#endif
#if FA4_SM90_BWD_GDEF
    float gacc; /* FA4_SM90_BWD_GDEFER: this lane's dS sum not yet committed to entry gidx */
    int gidx;   /* (-1: none) */
#endif
};

/* 1: where mask_mod gathers (FA4_MASK_MOD_GATHERS: document's doc_id[q_idx] == doc_id[kv_idx]), a
 * checked tile's mask (bounds and mask_mod, 32 bits per thread) is computed right after the issue
 * of S^T / dP^T, so its aux reads overlap the tensor cores instead of following the wait (the
 * forward's early mask, mainloop.cuh); the first pass then only tests the bits. Two-pass builds
 * only (FA4_SM90_BWD_SPLIT), unchecked. */
#ifndef FA4_SM90_BWD_MASK_EARLY
#if defined(FA4_MASK_MOD_GATHERS) && FA4_MASK_MOD_GATHERS && FA4_SM90_BWD_SPLIT && \
    !(defined(FA4_CHECKED) && FA4_CHECKED) && \
    !FA4_SM90_BWD_FULL_FALLBACK && FA4_SM90_BWD_BM == 64 /* 80: mask_bits80 before the issue */
#define FA4_SM90_BWD_MASK_EARLY 1
#else
#define FA4_SM90_BWD_MASK_EARLY 0
#endif
#endif
#if FA4_SM90_BWD_MASK_EARLY && !FA4_SM90_BWD_SPLIT
#error "FA4_SM90_BWD_MASK_EARLY needs FA4_SM90_BWD_SPLIT"
#endif
#if FA4_SM90_BWD_MASK_EARLY && FA4_SM90_BWD_BM != 64
#error "FA4_SM90_BWD_MASK_EARLY: 32 mask bits, 64-query steps only"
#endif
#if FA4_SM90_BWD_PINGPONG && FA4_SM90_BWD_BM != 64
#error "FA4_SM90_BWD_PINGPONG: 64-query steps only"
#endif

/* The dQ accumulator of a dQ warpgroup, chunks of 8 columns: kBM 64 computes dQ[:, its 64 columns]
 * = dS K (64 queries as M: 8 chunks of dims); kBM 80 computes dQ^T[its 64 dims, :] = K^T dS^T
 * (m64n80k16, A = K^T M-major from K as stored, B = dS^T K-major from the dS tile: 10 chunks of
 * queries), since 80 queries are no wgmma M. */
/* (a macro: a new namespace-scope constant would add a symbol to every cubin) */
#if FA4_SM90_BWD_BM == 64
#define FA4_SM90_BWD_DQ_CHUNKS (kBDqN / 8)
#else
#define FA4_SM90_BWD_DQ_CHUNKS (kBM / 8)
#endif

/* 1: tiles inside the sequence (and, with a mask_mod, inside a full block of a block mask) skip
 * every check (H200: causal +4.5%, sliding window +10% in the backward). The second copy of the
 * score stage costs registers (the spill fallback above turns it off). */
#ifndef FA4_SM90_BWD_FAST_TILES
#define FA4_SM90_BWD_FAST_TILES 1
#endif

/* Deterministic dQ (p.dq_sem): where a dQ warpgroup's issuer passes a step's turn on, after its
 * wait for that step's reduce-adds to complete (the warpgroup's other warps wait for the issuer at
 * their next wgmma, so that wait must not come right before one):
 *   1: in the next step's S/dP window, while those wgmmas run (H200, plain B4 H16 S4096 D128:
 *      4.17 ms against 4.56); one more register over the walk (rel_bias D 128 spilled with it);
 *   0: at the step's own end, after dV/dK (the spill fallback).
 * Measured and dropped (same run): two steps later (wait_group 1, no completion wait) 5.04 ms,
 * and at the next step's dQ write 4.30 ms: the turn's lag along the chain of key tiles costs more
 * than the issuer's wait (notes/sm90-bwd.md). Padded D 64 (one dQ warpgroup) kept 0 until session
 * 11 (window alone: deterministic D64 B8 H8 3.11 -> 3.05 ms, non-deterministic 1.94 -> 2.01, one
 * run each); with the turn agent (below) it takes the window too: deterministic D64 B8 H8 2.70 ->
 * 2.00 ms, B8 H16 5.27 -> 3.91 (H200, 2026-12-03). */
#ifndef FA4_SM90_BWD_DQ_PASS
#define FA4_SM90_BWD_DQ_PASS 1
#endif
/* 1 (with FA4_SM90_BWD_DQ_PASS 1): in the S/dP window the issuer also reads this step's turn
 * counter once (no wait; the fence that passes the previous turn on makes it an acquire); when the
 * turn has come, the dQ write skips its poll. 4.04 ms against 4.17, but softcap_causal D 128 then
 * spills and takes the spill fallback, so it is off. */
#ifndef FA4_SM90_BWD_DQ_PEEK
#define FA4_SM90_BWD_DQ_PEEK 0
#endif
#if FA4_SM90_BWD_DQ_PEEK && FA4_SM90_BWD_DQ_PASS != 1
#error "FA4_SM90_BWD_DQ_PEEK needs FA4_SM90_BWD_DQ_PASS 1"
#endif
/* FA4_SM90_BWD_TURN_AGENT 1 (default; with FA4_SM90_BWD_DQ_PASS 1, no peek): the gpu-scope half of the
 * turns leaves the consumer warpgroups. Per dQ warpgroup one thread of the producer's warpgroup
 * (warp 1 + cw, lane 0: otherwise idle), the agent (fa4_bwd_turn_agent), does the release
 * (red.release.gpu: MEMBAR.ALL.GPU, ERRBAR, RED) and the poll of the step's turn
 * (ld.acquire.gpu); the issuer only hands it each step in the S/dP window (after its previous
 * reduce-adds are complete) and waits for its "go" at the dQ write, both shared-memory
 * mbarriers. Why it is correct (PTX memory model, causality order is transitive): key tile n's
 * adds (async proxy) are complete for its issuer I(n) (cp.async.bulk.wait_group 0), which then
 * orders them before its generic accesses (fence.proxy.async.global) and arrives on "post"
 * (mbarrier.arrive: release, cta scope); its agent A(n) waits on it (try_wait: acquire, cta) and
 * adds 1 to the counter with release at gpu scope; A(n + 1)'s ld.acquire.gpu that reads that
 * value (or a later add of the release sequence: every write to a counter is an atomic add)
 * synchronizes with it; A(n + 1) arrives on its "go" (release, cta), I(n + 1) waits on it
 * (acquire, cta), then fence.proxy.async.global and its reduce-adds: so n's adds happen before
 * n + 1's in every run. Why it is faster: the release's MEMBAR.ALL.GPU and the poll's L2 round
 * trip stalled the issuer's warp, and with it its warpgroup at the next wgmma, at every step.
 * H200 bf16 B4 H16 S4096 D128 deterministic bwd, same call (2026-12-03 05:55 UTC, 3 rounds):
 * plain 3.438 / 3.447 / 3.459 -> 2.692 / 2.695 / 2.697 ms (default mode 2.54-2.59), S8192 12.62 -
 * 13.07 -> 10.90 - 11.01 (default 10.57-10.71), causal (block mask) 2.256 - 2.260 -> 1.995 -
 * 2.013, GQA 32:4 causal B2 3.02 -> 2.54 - 2.56, ALiBi 4.03 - 4.49 -> 3.19 - 3.20
 * (notes/sm90-bwd.md, session 11). 0: the issuer releases (pass_dq_turn) and polls
 * (fa4_bwd_wait_turn) itself. */
#ifndef FA4_SM90_BWD_TURN_AGENT
#define FA4_SM90_BWD_TURN_AGENT 1
#endif
#if FA4_SM90_BWD_TURN_AGENT && (FA4_SM90_BWD_DQ_PASS != 1 || FA4_SM90_BWD_DQ_PEEK)
#undef FA4_SM90_BWD_TURN_AGENT
#define FA4_SM90_BWD_TURN_AGENT 0 /* the full fallback (turns at the step's end) */
#endif
/* FA4_SM90_BWD_TURN_RELEASE 1 (FA4_SM90_BWD_DQ_PASS 1, no agent, no peek): the issuer's pass is
 * red.release.gpu after fence.proxy.async.global, without fence.acq_rel.gpu (the acquire half,
 * CCTL.IVALL and MEMBAR.ALL.CTA in SASS, is only needed for the peek's relaxed read; the waiter
 * acquires by its ld.acquire.gpu; the release keeps MEMBAR.ALL.GPU + ERRBAR, as any gpu-scope
 * release does). Measured no gain (H200, same call, 2026-12-03 05:48 UTC, deterministic plain
 * 3.445 / 3.435 -> 3.427 / 3.424 ms, S8192 12.72 / 12.49 -> 12.44 / 12.67, causal and GQA equal):
 * off. 0: fence.acq_rel.gpu, red.relaxed.gpu. */
#ifndef FA4_SM90_BWD_TURN_RELEASE
#define FA4_SM90_BWD_TURN_RELEASE 0
#endif

template <int R> __device__ __forceinline__ void fa4_bwd_fence_u(unsigned (&a)[R][4])
{
#pragma unroll
    for (int i = 0; i < R; ++i)
        asm volatile("" : "+r"(a[i][0]), "+r"(a[i][1]), "+r"(a[i][2]), "+r"(a[i][3])::"memory");
}

/* The two consumer warpgroups (256 threads) on named barrier 1. */
__device__ __forceinline__ void fa4_bwd_consumers_sync(void)
{
    asm volatile("bar.sync 1, 256;\n" ::: "memory");
}

/* The 128 threads of consumer warpgroup cw on named barrier 2 + cw. */
__device__ __forceinline__ void fa4_bwd_wg_sync(int cw)
{
    asm volatile("bar.sync %0, 128;\n" ::"r"(2 + cw) : "memory");
}

/* Generic-proxy shared stores (stmatrix) made visible to the async proxy (wgmma reads). */
__device__ __forceinline__ void fa4_bwd_fence_async_smem(void)
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

/* Four 8x8 16-bit matrices, each stored transposed: lane 8i+j gives the address of row j of
 * matrix i in memory, which receives column j of the fragment. */
__device__ __forceinline__ void fa4_bwd_stsm_x4_t(unsigned addr, const unsigned (&r)[4])
{
    asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr),
                 "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
                 : "memory");
}

__device__ __forceinline__ void fa4_bwd_lds2(unsigned addr, float &x, float &y)
{
    asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n" : "=f"(x), "=f"(y) : "r"(addr));
}

/* An address through an opaque move: the loads from it then take their chunk's offset as an
 * immediate. 80-query steps: without it ptxas kept one lse2 / dpsum address per chunk (10) live
 * over the score stage (spilled 4 bytes, plain D 128). */
__device__ __forceinline__ unsigned fa4_bwd_opaque(unsigned a)
{
    unsigned r;
    asm volatile("mov.b32 %0, %1;\n" : "=r"(r) : "r"(a));
    return r;
}

/* a step's block-mask flag: in a full block (64-row walk), or the 80-row step's info word */
#if FA4_BWD_WALK80
typedef unsigned fa4_bwd_full_t;
#else
typedef bool fa4_bwd_full_t;
#endif

struct fa4_bwd_consumer {
    const fa4_params &p;
    const fa4_aux &aux;
    fa4_bwd_smem sm;
    int b, cw, warp, lane;
    int n0;             /* first key of the CTA */
    int len_q, len_k;
    int n_tile;         /* the CTA's key tile */
    int wrow0;          /* the sequence's first workspace row */
    const fa4_tmap *tm_dq; /* dq_accum as [hq * ws_rows][d] fp32, boxes of kBM x 32 */

    /* S^T (keys x queries) and dP^T for stage s. */
    __device__ __forceinline__ void issue_s_dp(float (&sc)[kBM / 8][4], float (&dp)[kBM / 8][4], int s) const
    {
        const unsigned a_rows = cw * kBWgKeys * kPanelBytes;
#pragma unroll
        for (int kk = 0; kk < kD / 16; ++kk) {
            const unsigned long long da =
                FA4_DESC_SW128(sm.k() + a_rows, (kk / 4) * kBN * kPanelBytes + (kk % 4) * 32, 16, 1024);
            const unsigned long long db =
                FA4_DESC_SW128(sm.q(s), (kk / 4) * kBM * kPanelBytes + (kk % 4) * 32, 16, 1024);
            fa4_wgmma<kBM>::ss(sc, da, db, kk > 0);
        }
        fa4_wgmma_commit();
#pragma unroll
        for (int kk = 0; kk < kDv / 16; ++kk) {
            const unsigned long long da =
                FA4_DESC_SW128(sm.v() + a_rows, (kk / 4) * kBN * kPanelBytes + (kk % 4) * 32, 16, 1024);
            const unsigned long long db =
                FA4_DESC_SW128(sm.dout(s), (kk / 4) * kBM * kPanelBytes + (kk % 4) * 32, 16, 1024);
            fa4_wgmma<kBM>::ss(dp, da, db, kk > 0);
        }
        fa4_wgmma_commit();
    }

    /* dV += P^T dO, dK += dS^T Q (one commit group). */
    __device__ __forceinline__ void issue_dkv(float (&dk)[kDp / 8][4], float (&dv)[kDvp / 8][4],
                                              const unsigned (&pp)[kBM / 16][4], const unsigned (&pds)[kBM / 16][4],
                                              int s) const
    {
#pragma unroll
        for (int kk = 0; kk < kBM / 16; ++kk)
            fa4_wgmma<kDvp>::rs(dv, pp[kk],
                                FA4_DESC_SW128(sm.dout(s), kk * 16 * kPanelBytes, kBM * kPanelBytes, 1024), 1);
#pragma unroll
        for (int kk = 0; kk < kBM / 16; ++kk)
            fa4_wgmma<kDp>::rs(dk, pds[kk],
                               FA4_DESC_SW128(sm.q(s), kk * 16 * kPanelBytes, kBM * kPanelBytes, 1024), 1);
        fa4_wgmma_commit();
    }

    /* dQ[:, 64 cw ..] = dS K over the CTA's kBN keys (K at kbase: sm.k(), or an opaque copy of it
     * where the descriptors must not be shared with the walk's, see drain_dq). */
    __device__ __forceinline__ void issue_dq(float (&dq)[FA4_SM90_BWD_DQ_CHUNKS][4], int buf) const { issue_dq_at(dq, buf, sm.k()); }
    __device__ __forceinline__ void issue_dq_at(float (&dq)[FA4_SM90_BWD_DQ_CHUNKS][4], int buf, unsigned kbase) const
    {
#pragma unroll
        for (int kk = 0; kk < kBN / 16; ++kk) {
            const unsigned long long dds =
                FA4_DESC_SW128(sm.ds(buf), (kk / 4) * kBM * kPanelBytes + (kk % 4) * 32, 16, 1024);
            const unsigned long long dk = FA4_DESC_SW128(
                kbase + cw * kBN * kPanelBytes, kk * 16 * kPanelBytes, kBN * kPanelBytes, 1024);
#if FA4_SM90_BWD_BM == 64
            fa4_bwd_wgmma_ss_tb<kBDqN>(dq, dds, dk, kk > 0);
#else /* dQ^T: the same two tiles, operands swapped */
            fa4_bwd_wgmma_ss_ta<kBM>(dq, dk, dds, kk > 0);
#endif
        }
        fa4_wgmma_commit();
    }

    /* P^T and dS^T from the accumulators, packed to 16 bits as RS-wgmma A operands. kCheck: apply
     * the sequence bounds and mask_mod (tiles on an edge or in a partial block). */
    template <bool kCheck>
    __device__ __forceinline__ void grads(const float (&sc)[kBM / 8][4], const float (&dp)[kBM / 8][4],
                                          unsigned (&pp)[kBM / 16][4], unsigned (&pds)[kBM / 16][4], int s,
                                          int h, int m0, fa4_bwd_full_t full, unsigned mb0 = 0u, unsigned mb1 = 0u) const
    {
        (void)mb0;
        (void)mb1;
        const int g = lane >> 2, t = lane & 3;
        const int key0 = n0 + cw * kBWgKeys + warp * 16 + g;
#if FA4_HAS_SCORE_MOD
        const fa4_sm90_pre pre = fa4_sm90_prescale(p, b, h, aux); /* config.cuh FA4_SM90_PRESCALE */
#endif
#if FA4_HAS_TRAINABLE_AUX && FA4_NUM_AUX_GRAD_SITES > 0
        fa4_aux_grad_acc acc;
        fa4_aux_grad_begin(acc);
#endif
#pragma unroll
        for (int c = 0; c < kBM / 8; ++c) {
            float l2[2], dps[2];
            fa4_bwd_lds2(sm.rows(s) + (8 * c + 2 * t) * 4, l2[0], l2[1]);
            fa4_bwd_lds2(sm.rows(s) + kBRowBytes / 2 + (8 * c + 2 * t) * 4, dps[0], dps[1]);
            float pr[4], ds[4];
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int ki = key0 + (e >= 2 ? 8 : 0);
                const int qi = m0 + 8 * c + 2 * t + (e & 1);
                const float xs = sc[c][e] * p.scale;
                float x = xs, dmod = 1.f;
                bool ok = true;
                /* mask_mod and score_mod at every position, then select: no branch per position
                 * (this program is never a checked build: aux reads are clamped, integer
                 * arithmetic is total, so positions outside the mask compute harmless values) */
                if (kCheck) {
#if FA4_BWD_WALK80 /* the step's mask bits (mask_bits80) */
                    (void)ki;
                    (void)qi;
                    ok = ((c < 8 ? mb0 : mb1) >> (4 * (c & 7) + e)) & 1u;
#elif FA4_HAS_MASK_MOD
                    ok = !(qi >= len_q || ki >= len_k) &
                         (full | fa4_mask_mod(b, h, (int)(qi + p.q_offset), (int)(ki + p.kv_offset), aux));
#else
                    ok = !(qi >= len_q || ki >= len_k);
#endif
                }
#if FA4_HAS_TRAINABLE_AUX && FA4_NUM_AUX_GRAD_SITES > 0
                int at[FA4_NUM_AUX_GRAD_SITES]; /* the index each trainable site read */
                x = fa4_score_mod_fwd_deriv_sites(xs, b, h, (int)(qi + p.q_offset), (int)(ki + p.kv_offset), aux,
                                                  &dmod, at);
#elif FA4_HAS_SCORE_MOD
                x = fa4_sm90_mod_deriv(sc[c][e], pre, b, h, (int)(qi + p.q_offset), (int)(ki + p.kv_offset), aux, &dmod);
#endif
                const float pv = ok ? fa4_exp2(fmaf(x, FA4_LOG2E, -l2[e & 1])) : 0.f;
                const float d = pv * (dp[c][e] - dps[e & 1]);
#if FA4_HAS_TRAINABLE_AUX && FA4_NUM_AUX_GRAD_SITES > 0
                /* a branch on checked tiles only: the branch-free form (a zero term outside the
                 * mask) made trainable t5_bias spill 88 bytes at D 128 */
                if (ok)
                    fa4_score_mod_aux_grad_acc(xs, b, h, (int)(qi + p.q_offset), (int)(ki + p.kv_offset), aux, d,
                                               at, acc);
#endif
                pr[e] = pv;
                ds[e] = ok ? d * dmod : 0.f;
            }
            /* chunk c is half of A-operand block c/2: columns 0-7 (regs 0, 1) or 8-15 (regs 2, 3) */
            const int kk = c / 2, hi = (c & 1) * 2;
            pp[kk][hi] = fa4_pack2(pr[0], pr[1]);
            pp[kk][hi + 1] = fa4_pack2(pr[2], pr[3]);
            pds[kk][hi] = fa4_pack2(ds[0], ds[1]);
            pds[kk][hi + 1] = fa4_pack2(ds[2], ds[3]);
            /* one chunk at a time: keeps the compiler from hoisting every chunk's index and mod work
             * ahead of the first (as the forward's score stage) */
            asm volatile("" : "+r"(pp[kk][hi]), "+r"(pp[kk][hi + 1]), "+r"(pds[kk][hi]), "+r"(pds[kk][hi + 1])::"memory");
        }
#if FA4_HAS_TRAINABLE_AUX && FA4_NUM_AUX_GRAD_SITES > 0
        fa4_aux_grad_flush(aux, acc); /* the warpgroup is converged here */
#endif
    }

#if FA4_SM90_BWD_RELP
    /* Whether element e of chunk c (key g + 8 (e >= 2), query m0 + 8c + 2t + (e & 1)) may attend on a
     * checked tile (key0 = the thread's first key, t = lane % 4): inside the sequence and mask_mod,
     * or the early mask's bit where kEarly */
    template <bool kEarly>
    __device__ __forceinline__ bool elem_ok(int h, int key0, int m0, int t, int c, int e, bool full,
                                            unsigned mbits) const
    {
        if (kEarly)
            return (mbits >> (4 * c + e)) & 1u;
        const int ki = key0 + (e >= 2 ? 8 : 0);
        const int qi = m0 + 8 * c + 2 * t + (e & 1);
#if FA4_HAS_MASK_MOD
        return !(qi >= len_q || ki >= len_k) &
               (full | fa4_mask_mod(b, h, (int)(qi + p.q_offset), (int)(ki + p.kv_offset), aux));
#else
        (void)h;
        (void)full;
        return !(qi >= len_q || ki >= len_k);
#endif
    }
#endif

#if FA4_SM90_BWD_REL || FA4_SM90_BWD_RELP
    /* g of score_mod = score + g(kv_idx - q_idx) at (q, k) (emit_rel.c: rel_bias, t5_bias, alibi)
     * and, with trainable reads, the index each trainable site reads there and its coefficient
     * d score_mod / d x (emit_deriv.c's fa4_score_mod_rel_sites); all depend on the positions only
     * through k - q */
    __device__ __forceinline__ float rel_g(int h, int q, int k, const fa4_score_uniform &su, int (&at)[kRelSites],
                                           float (&coef)[kRelSites]) const
    {
#if FA4_SM90_BWD_REL_SITES
        (void)su;
        return fa4_score_mod_rel_sites(b, h, q, k, aux, at, coef);
#else
        (void)at;
        (void)coef;
        return fa4_score_mod_rel(b, h, q, k, aux, su);
#endif
    }

    /* FA4_SM90_BWD_REL_SHFL: slot k of the warp's offsets, 16 k + 1 + lane - kBM from the local
     * offset 0 (the warp's first key against query m0): lane L evaluates g there at (qb, kb +
     * that), qb = m0 and kb = the warp's first key with their offsets (int32, as rel_g's callers
     * form positions; the int32 difference is what g reads) */
    struct rel_slot {
        float g;
        int at[kRelSites];
        float coef[kRelSites];
    };
    __device__ __forceinline__ void rel_slot_eval(int h, int k, int qb, int kb, const fa4_score_uniform &su,
                                                  rel_slot &r) const
    {
        r.g = rel_g(h, qb, kb + 16 * k + 1 + lane - kBM, su, r.at, r.coef);
    }
    /* the slot's entry at lane src (every lane of the warp takes part) */
    __device__ __forceinline__ float rel_slot_get(const rel_slot &r, int src, int (&at)[kRelSites],
                                                  float (&coef)[kRelSites]) const
    {
#if FA4_SM90_BWD_REL_SITES
#pragma unroll
        for (int k = 0; k < kRelSites; ++k) {
            at[k] = __shfl_sync(0xffffffffu, r.at[k], src);
            coef[k] = __shfl_sync(0xffffffffu, r.coef[k], src);
        }
#else
        (void)at;
        (void)coef;
#endif
        return __shfl_sync(0xffffffffu, r.g, src);
    }
    /* the slot of chunk c's first-row offsets (local kBM - 7 - 8c .. kBM + 7 - 8c), and the lane of
     * the one at local offset d (d = g - 2t - j - 8c, or + 8 for chunk 0's second row) */
    static constexpr __device__ int rel_slot_of(int c) { return (kBM - 8 - 8 * c) / 16; }
#endif

#if FA4_SM90_BWD_REL
    /* grads() where score_mod is score + g(kv_idx - q_idx) (rel_g). A thread's element (c, 2 + j)
     * (key g + 8, query 8c + 2t + j) has the offset of its element (c - 1, j) (key g, query
     * 8c - 8 + 2t + j), so the mod runs once per offset, at 2 kBM / 8 + 2 of the thread's 4 kBM / 8
     * elements (18 of 32), where grads() runs its dual form at every element, twice with
     * trainable reads (value and index, then the coefficient); and the two elements of an offset
     * sum their gradient terms before one enters the runs. d score_mod / d score = 1; P is formed
     * as the forward forms it (scaled score + g). */
    template <bool kCheck>
    __device__ __forceinline__ void grads_rel(const float (&sc)[kBM / 8][4], const float (&dp)[kBM / 8][4],
                                              unsigned (&pp)[kBM / 16][4], unsigned (&pds)[kBM / 16][4], int s,
                                              int h, int m0, fa4_bwd_full_t full) const
    {
        const int g = lane >> 2, t = lane & 3;
        const int key0 = n0 + cw * kBWgKeys + warp * 16 + g;
        const int kl = (int)(key0 + p.kv_offset);
        const int ql = (int)(m0 + 2 * t + p.q_offset);
#if FA4_SM90_BWD_REL_SITES
#if FA4_SM90_BWD_REL_SCR
        float xs[2]; /* the terms of chunk c (j): offsets g - 2t - j + 8 - 8c from the warp's first key and m0 */
#else
        fa4_aux_grad_acc acc;
        fa4_aux_grad_begin(acc);
#endif
        const fa4_score_uniform su{};
#else
        const fa4_score_uniform su = fa4_score_mod_uniform(b, h, aux);
#endif
        /* the offsets of chunk c's second row (e = 2 + j), carried from chunk c - 1's first row:
         * g, the sites' indices and coefficients, and chunk c - 1's dS there */
        float gc[2], dc[2] = {0.f, 0.f};
        int ic[2][kRelSites];
        float cc[2][kRelSites];
#if FA4_SM90_BWD_REL_SHFL
        (void)ql;
        const int qb = (int)(m0 + p.q_offset), kb = kl - g, d0 = g - 2 * t;
        rel_slot sl;
        rel_slot_eval(h, rel_slot_of(0), qb, kb, su, sl);
#if FA4_SM90_BWD_REL_SCR
        /* the owners' sites (rel_scr_commit): offsets L - 63 + 32 r are slot 0's and slot 2's at lane L
         * and slot 3's at lane L + 16 */
        static_assert(kBM == 64 && rel_slot_of(0) == 3 && rel_slot_of(2) == 2 && rel_slot_of(kBM / 8 - 1) == 0,
                      "the band scratch's owners read slots 0, 2 and 3");
        int own_at[3][kRelSites];
        float own_coef[3][kRelSites];
#pragma unroll
        for (int k = 0; k < kRelSites; ++k) {
            own_at[2][k] = __shfl_down_sync(0xffffffffu, sl.at[k], 16);
            own_coef[2][k] = __shfl_down_sync(0xffffffffu, sl.coef[k], 16);
        }
#endif
#pragma unroll
        for (int j = 0; j < 2; ++j)
            gc[j] = rel_slot_get(sl, d0 - j + 8 + kBM - 16 * rel_slot_of(0) - 1, ic[j], cc[j]);
#else
#pragma unroll
        for (int j = 0; j < 2; ++j)
            gc[j] = rel_g(h, ql + j, kl + 8, su, ic[j], cc[j]);
#endif
#pragma unroll
        for (int c = 0; c < kBM / 8; ++c) {
            float l2[2], dps[2];
            fa4_bwd_lds2(sm.rows(s) + (8 * c + 2 * t) * 4, l2[0], l2[1]);
            fa4_bwd_lds2(sm.rows(s) + kBRowBytes / 2 + (8 * c + 2 * t) * 4, dps[0], dps[1]);
            float gn[2];
            int in[2][kRelSites];
            float cn[2][kRelSites];
#if FA4_SM90_BWD_REL_SHFL
            if (c > 0 && rel_slot_of(c) != rel_slot_of(c - 1))
                rel_slot_eval(h, rel_slot_of(c), qb, kb, su, sl);
#if FA4_SM90_BWD_REL_SCR
            if (c > 0 && rel_slot_of(c) == 2 && rel_slot_of(c - 1) != 2)
#pragma unroll
                for (int k = 0; k < kRelSites; ++k) {
                    own_at[1][k] = sl.at[k];
                    own_coef[1][k] = sl.coef[k];
                }
#endif
#pragma unroll
            for (int j = 0; j < 2; ++j)
                gn[j] = rel_slot_get(sl, d0 - j - 8 * c + kBM - 16 * rel_slot_of(c) - 1, in[j], cn[j]);
#else
#pragma unroll
            for (int j = 0; j < 2; ++j)
                gn[j] = rel_g(h, ql + 8 * c + j, kl, su, in[j], cn[j]);
#endif
            float pr[4], ds[4];
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                bool ok = true;
                if (kCheck) {
                    const int ki = key0 + (e >= 2 ? 8 : 0);
                    const int qi = m0 + 8 * c + 2 * t + (e & 1);
#if FA4_HAS_MASK_MOD
                    ok = !(qi >= len_q || ki >= len_k) &
                         (full | fa4_mask_mod(b, h, (int)(qi + p.q_offset), (int)(ki + p.kv_offset), aux));
#else
                    ok = !(qi >= len_q || ki >= len_k);
#endif
                }
                const float x = sc[c][e] * p.scale + (e >= 2 ? gc[e & 1] : gn[e & 1]);
                const float pv = ok ? fa4_exp2(fmaf(x, FA4_LOG2E, -l2[e & 1])) : 0.f;
                pr[e] = pv;
                ds[e] = ok ? pv * (dp[c][e] - dps[e & 1]) : 0.f;
            }
#pragma unroll
            for (int j = 0; j < 2; ++j) {
#if FA4_SM90_BWD_REL_SCR
                xs[j] = dc[j] + ds[2 + j]; /* chunk c - 1's (j) and chunk c's (2 + j): one offset */
                dc[j] = ds[j];
#elif FA4_SM90_BWD_REL_SITES
                /* chunk c - 1's (j) and chunk c's (2 + j): one offset, one term */
                fa4_score_mod_rel_grad_acc(aux, ic[j], cc[j], dc[j] + ds[2 + j], acc);
                dc[j] = ds[j];
#pragma unroll
                for (int k = 0; k < kRelSites; ++k) {
                    ic[j][k] = in[j][k];
                    cc[j][k] = cn[j][k];
                }
#endif
                gc[j] = gn[j];
            }
#if FA4_SM90_BWD_REL_SCR
            rel_scr_add(c, xs);
#endif
            const int kk = c / 2, hi = (c & 1) * 2;
            pp[kk][hi] = fa4_pack2(pr[0], pr[1]);
            pp[kk][hi + 1] = fa4_pack2(pr[2], pr[3]);
            pds[kk][hi] = fa4_pack2(ds[0], ds[1]);
            pds[kk][hi + 1] = fa4_pack2(ds[2], ds[3]);
            asm volatile("" : "+r"(pp[kk][hi]), "+r"(pp[kk][hi + 1]), "+r"(pds[kk][hi]), "+r"(pds[kk][hi + 1])::"memory");
        }
        (void)dc;
#if FA4_SM90_BWD_REL_SCR
        /* the last chunk's first-row offsets have no second-row partner in this step */
        rel_scr_add(kBM / 8, dc);
#if FA4_SM90_BWD_REL_SHFL
#pragma unroll
        for (int k = 0; k < kRelSites; ++k) {
            own_at[0][k] = sl.at[k];
            own_coef[0][k] = sl.coef[k];
        }
        rel_scr_commit<true>(h, 0, 0, su, own_at, own_coef);
#else
        int own_at[3][kRelSites];
        float own_coef[3][kRelSites];
        rel_scr_commit<false>(h, (int)(m0 + p.q_offset), kl - g, su, own_at, own_coef);
#endif
#elif FA4_SM90_BWD_REL_SITES
        /* the last chunk's first-row offsets have no second-row partner in this step */
#pragma unroll
        for (int j = 0; j < 2; ++j)
            fa4_score_mod_rel_grad_acc(aux, ic[j], cc[j], dc[j], acc);
        fa4_aux_grad_flush(aux, acc); /* the warpgroup is converged here */
#endif
    }
#endif

#if FA4_SM90_BWD_REL_SCR
    /* grads_rel's step terms (FA4_SM90_BWD_REL_SCR): xs[j] is the thread's dS summed over offset
     * g - 2t - j + 8 - 8c (keys from the warp's first, queries from m0). The chain of lanes
     * (g, t), (g + 2, t + 1), ... that holds one offset sums into its head (g < 2 or t == 0): lane
     * + 9 is the next link, lane + 18 the one after (holding its own next's by then); the heads add
     * into the warp's scratch for j, entry offset + kBM - 1. Every lane of the warp takes part. */
    __device__ __forceinline__ void rel_scr_add(int c, const float (&xs)[2]) const
    {
        const int g = lane >> 2, t = lane & 3;
        const bool n1 = g <= 5 && t <= 2, n2 = g <= 3 && t <= 1, head = g < 2 || t == 0;
        float y[2];
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            float v = xs[j];
            const float w1 = __shfl_down_sync(0xffffffffu, v, 9);
            v = n1 ? v + w1 : v;
            const float w2 = __shfl_down_sync(0xffffffffu, v, 18);
            y[j] = n2 ? v + w2 : v;
        }
        const unsigned a = sm.aux_scr(cw * 4 + warp) + 4u * (unsigned)(g - 2 * t - 8 * c + 8 + kBM - 1);
        __syncwarp(); /* chunk c - 1's heads added into 6 of these entries */
        if (head) {
            float o[2];
#pragma unroll
            for (int j = 0; j < 2; ++j)
                asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(o[j]) : "r"(a + (unsigned)(kBAuxScrJBytes - 4) * j) : "memory");
#pragma unroll
            for (int j = 0; j < 2; ++j)
                asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(a + (unsigned)(kBAuxScrJBytes - 4) * j), "f"(o[j] + y[j]) : "memory");
        }
    }
    /* the step's end: lane L takes the offsets L - 63 + 32 r (entries L + 32 r of both scratches, r = 2
     * for L < 15 only), zeroes them for the next step, evaluates the read sites' indices and
     * coefficients there (qb, kb: m0 and the warp's first key with their offsets), sums runs of
     * equal indices over consecutive lanes and commits each run once */
    template <bool kHeld> /* the sites' indices and coefficients given in own_at, own_coef (REL_SHFL's slots) */
    __device__ __forceinline__ void rel_scr_commit(int h, int qb, int kb, const fa4_score_uniform &su,
                                                   int (&own_at)[3][kRelSites], float (&own_coef)[3][kRelSites]) const
    {
        const unsigned scr = sm.aux_scr(cw * 4 + warp);
        __syncwarp();
        /* lane L: the offsets L - 63 + 32 r, entries L + 32 r (r = 2 for L < 15 only), read and
         * zeroed for the next step */
#pragma unroll
        for (int r = 0; r < 3; ++r) {
            const bool own = r < 2 || lane < kBM + 15 - 64;
            float d = 0.f;
            if (own) {
                const unsigned a = scr + 4u * (unsigned)(lane + 32 * r);
                float d0, d1;
                asm volatile("ld.shared.f32 %0, [%2];\n"
                             "ld.shared.f32 %1, [%2+%3];\n"
                             : "=f"(d0), "=f"(d1)
                             : "r"(a), "n"(kBAuxScrJBytes)
                             : "memory");
                asm volatile("st.shared.f32 [%0], %1;\n"
                             "st.shared.f32 [%0+%2], %1;\n" ::"r"(a), "f"(0.f), "n"(kBAuxScrJBytes)
                             : "memory");
                d = d0 + d1;
            }
            if (!kHeld)
                (void)rel_g(h, qb, kb + lane + 32 * r - (kBM - 1), su, own_at[r], own_coef[r]);
#pragma unroll
            for (int k = 0; k < kRelSites; ++k) {
                const int i = own ? own_at[r][k] : -1;
                float v = d != 0.f ? d * own_coef[r][k] : 0.f;
                /* runs of equal indices over consecutive lanes (a clamped or bucketed table) sum
                 * into their first lane: a segmented reduction, where any run is longer than one */
                const int nx = __shfl_down_sync(0xffffffffu, i, 1);
                const unsigned ends = __ballot_sync(0xffffffffu, lane == 31 || nx != i);
                if (ends != 0xffffffffu) {
                    const int e = __ffs(ends & (0xffffffffu << lane)) - 1;
#pragma unroll
                    for (int o = 1; o < 32; o <<= 1) {
                        const float w = __shfl_down_sync(0xffffffffu, v, o);
                        if (lane + o <= e)
                            v += w;
                    }
                }
                const int pv = __shfl_up_sync(0xffffffffu, i, 1);
                if ((lane == 0 || pv != i) && i >= 0 && v != 0.f)
                    fa4_aux_grad_commit(k, fa4_aux_grad_site_grad(k, aux), i, v);
            }
        }
    }
#endif

#if FA4_SM90_BWD_TILE_ADD
    /* Whether score_mod is score + c over this warp's 16 keys and query tile m0's kBM queries
     * (rel_bias away from the diagonal; emit_tile.c): the same for every lane of the warp. Asked at
     * the step's start, before S and dP hold registers. */
    __device__ __forceinline__ bool tile_add(int h, int m0, fa4_score_tile &tl, int rows = kBM) const
    {
        const long long ql = (long long)m0 + p.q_offset;
        const long long kl = (long long)(n0 + cw * kBWgKeys + warp * 16) + p.kv_offset;
        return ql >= -2147483647LL - 1 && ql + rows - 1 <= 2147483647LL && kl >= -2147483647LL - 1 &&
               kl + 15 <= 2147483647LL &&
               fa4_score_mod_tile(b, h, (int)ql, (int)(ql + rows - 1), (int)kl, (int)(kl + 15), aux, tl);
    }

#if FA4_SM90_BWD_TILE_RUN
    /* tile_add through the run of steps proven before (FA4_SM90_BWD_TILE_RUN) */
    __device__ __forceinline__ bool tile_add_run(int h, int m0, fa4_score_tile &tl, fa4_bwd_aff &a) const
    {
#if FA4_SM90_BWD_TSAT
        /* (the run's state is not kept beside the boxes: its registers spilled) */
        if (!fa4_bwd_heads_inner(p)) {
            if (h != a.sh)
                tile_sat(h, a);
            if (m0 + kBM <= a.qpos) {
                tl = a.tpos;
                return true;
            }
            if (m0 >= a.qneg) {
                tl = a.tneg;
                return true;
            }
            if (a.qpos > 0 && a.qneg < 2147483647) /* both held: the band between takes grads_rel */
                return false;
        }
        return tile_add(h, m0, tl);
#else
        if (h == a.th && m0 >= a.tlo && m0 + kBM <= a.thi) {
            tl = a.tl;
            return true;
        }
        constexpr int kRun = FA4_SM90_BWD_TILE_RUN * kBM;
        if (!a.tfail && tile_add(h, m0, tl, kRun)) {
            a.th = h;
            a.tlo = m0;
            a.thi = m0 + kRun;
            a.tl = tl;
            return true;
        }
        const bool ok = tile_add(h, m0, tl);
        a.tfail = !ok;
        return ok;
#endif
    }
#endif
#if FA4_SM90_BWD_TSAT
    /* the distance of lane L's box from the warp's keys: 8, 12, 16, 24, ... 1536 (lane & 15) */
    static __device__ __forceinline__ int tile_sat_d(int j) { return (8 << (j >> 1)) + (j & 1) * (4 << (j >> 1)); }
    /* FA4_SM90_BWD_TILE_SAT: the two boxes of head h into a (every lane of the warp takes part).
     * Lane L's box: the warp's 16 keys against rows [0, k0 - d] (before the keys: key - query >=
     * d) or, lanes 16-31, the rows from k0 + 15 + d to the end; on each side the nearest box that
     * held (the smallest d: the lowest lane of its half) gives qpos or qneg (0 or INT_MAX: none) */
    __device__ __forceinline__ void tile_sat(int h, fa4_bwd_aff &a) const
    {
        const int k0 = n0 + cw * kBWgKeys + warp * 16; /* the warp's first key */
        const int qend = (len_q + kBM - 1) / kBM * kBM; /* past the last step's rows */
        const int d = tile_sat_d(lane & 15);
        const int lo = lane < 16 ? 0 : k0 + 15 + d;
        const int rows = lane < 16 ? k0 - d + 1 : qend - lo;
        fa4_score_tile t;
        const bool ok = rows >= kBM && tile_add(h, lo, t, rows);
        const unsigned held = __ballot_sync(0xffffffffu, ok);
        const int jp = __ffs((int)(held & 0xffffu)) - 1, jn = __ffs((int)(held >> 16)) - 1;
        a.sh = h;
        a.qpos = jp >= 0 ? k0 - tile_sat_d(jp) + 1 : 0; /* >= kBM where it held */
        a.qneg = jn >= 0 ? k0 + 15 + tile_sat_d(jn) : 2147483647;
        fa4_bwd_shfl_tile(a.tpos, t, jp >= 0 ? jp : 0);
        fa4_bwd_shfl_tile(a.tneg, t, jn >= 0 ? 16 + jn : 0);
    }
#endif

    /* grads() where score_mod is score + c over the warp's tile: d score_mod / d score = 1, and
     * where c is a read of a trainable tensor its gradient is the tile's sum of dS, one atomic per
     * warp instead of score_mod's derivative and gradient terms at every position */
    template <bool kCheck>
    __device__ __forceinline__ void grads_add(const float (&sc)[kBM / 8][4], const float (&dp)[kBM / 8][4],
                                              unsigned (&pp)[kBM / 16][4], unsigned (&pds)[kBM / 16][4], int s,
                                              int h, int m0, bool full, const fa4_score_tile &tl,
                                              fa4_bwd_aff &af) const
    {
        const int g = lane >> 2, t = lane & 3;
        const int key0 = n0 + cw * kBWgKeys + warp * 16 + g;
        const float cadd = fa4_score_mod_tile_add(tl);
        float gsum = 0.f;
#pragma unroll
        for (int c = 0; c < kBM / 8; ++c) {
            float l2[2], dps[2];
            fa4_bwd_lds2(sm.rows(s) + (8 * c + 2 * t) * 4, l2[0], l2[1]);
            fa4_bwd_lds2(sm.rows(s) + kBRowBytes / 2 + (8 * c + 2 * t) * 4, dps[0], dps[1]);
            float pr[4], ds[4];
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int ki = key0 + (e >= 2 ? 8 : 0);
                const int qi = m0 + 8 * c + 2 * t + (e & 1);
                bool ok = true;
                if (kCheck) {
#if FA4_HAS_MASK_MOD
                    ok = !(qi >= len_q || ki >= len_k) &
                         (full | fa4_mask_mod(b, h, (int)(qi + p.q_offset), (int)(ki + p.kv_offset), aux));
#else
                    ok = !(qi >= len_q || ki >= len_k);
#endif
                }
                const float x = sc[c][e] * p.scale + cadd;
                const float pv = ok ? fa4_exp2(fmaf(x, FA4_LOG2E, -l2[e & 1])) : 0.f;
                const float d = pv * (dp[c][e] - dps[e & 1]);
                pr[e] = pv;
                ds[e] = ok ? d : 0.f;
                gsum += ds[e];
            }
            const int kk = c / 2, hi = (c & 1) * 2;
            pp[kk][hi] = fa4_pack2(pr[0], pr[1]);
            pp[kk][hi + 1] = fa4_pack2(pr[2], pr[3]);
            pds[kk][hi] = fa4_pack2(ds[0], ds[1]);
            pds[kk][hi + 1] = fa4_pack2(ds[2], ds[3]);
            asm volatile("" : "+r"(pp[kk][hi]), "+r"(pp[kk][hi + 1]), "+r"(pds[kk][hi]), "+r"(pds[kk][hi + 1])::"memory");
        }
        commit_tile_grad(gsum, tl, af);
    }

    /* A trainable c0's gradient: the warp's sum of the tile's dS (lane partial sums in gsum), one
     * commit by lane 0 (FA4_SCORE_MOD_TILE_GRAD; nothing without a trainable read) */
    __device__ __forceinline__ void commit_tile_grad(float gsum, const fa4_score_tile &tl, fa4_bwd_aff &af) const
    {
#if FA4_SM90_BWD_GDEF
        const int gi = fa4_score_mod_tile_grad_index(aux, tl); /* the warp's */
        if (gi != af.gidx) {
            tile_grad_flush(af);
            af.gidx = gi;
            af.gacc = 0.f;
        }
        af.gacc += gsum;
#elif FA4_SCORE_MOD_TILE_GRAD
        (void)af;
        tile_grad_add(fa4_score_mod_tile_grad_index(aux, tl), gsum);
#else
        (void)gsum;
        (void)tl;
        (void)af;
#endif
    }
#if FA4_SCORE_MOD_TILE_GRAD
    /* the warp's sum of the lanes' v into entry gi of the tile-add read's gradient (none where gi
     * < 0); every lane of the warp calls it */
    __device__ __forceinline__ void tile_grad_add(int gi, float v) const
    {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1)
            v += __shfl_xor_sync(0xffffffffu, v, o);
        if (lane == 0 && gi >= 0)
            fa4_aux_grad_commit(FA4_SCORE_MOD_TILE_GRAD_SITE, fa4_aux_grad_site_grad(FA4_SCORE_MOD_TILE_GRAD_SITE, aux),
                                gi, v);
    }
#endif
    /* FA4_SM90_BWD_GDEFER: what af holds, committed (after the walk, and where the entry changes) */
    __device__ __forceinline__ void tile_grad_flush(fa4_bwd_aff &af) const
    {
#if FA4_SM90_BWD_GDEF
        if (af.gidx >= 0)
            tile_grad_add(af.gidx, af.gacc);
#else
        (void)af;
#endif
    }
#endif

#if FA4_BWD_WALK80
/* 1: an empty asm on the mask bits pins their computation before the S^T / dP^T issue (H200,
 * session 9: measured with it); 0: ptxas may move the mask's work (a gathering mask_mod's loads)
 * past the issue. Both compile clean for the shipped mask mods. */
#ifndef FA4_SM90_BWD80_BITS_FENCE
#define FA4_SM90_BWD80_BITS_FENCE 1
#endif
    /* 80-query steps, a checked step's mask (bit 4 (c % 8) + e of word c / 8: whether element e of
     * chunk c may attend), computed right after the S^T / dP^T issue (the one-pass stage then
     * holds no bounds): rows below the step's valid rows (info & 0xff, and the sequence), keys
     * inside the sequence, and mask_mod on the rows of partial blocks ([info >> 8 & 0xff,
     * info >> 16), see bwd_schedule.cuh). */
    __device__ __forceinline__ void mask_bits80(int h, int m0, unsigned info, unsigned &mb0, unsigned &mb1) const
    {
        (void)h;
        const int g = lane >> 2, t = lane & 3;
        const int key0 = n0 + cw * kBWgKeys + warp * 16 + g;
        const int qe = (int)(info & 0xffu) < len_q - m0 ? (int)(info & 0xffu) : len_q - m0;
        const int qv = qe - 2 * t; /* element rows 8 c + (e & 1) below it are valid */
#if FA4_HAS_MASK_MOD
        const int plo = (int)((info >> 8) & 0xffu) - 2 * t;
        const unsigned span = ((info >> 16) & 0xffu) - ((info >> 8) & 0xffu);
#endif
        mb0 = mb1 = 0u;
#pragma unroll
        for (int c = 0; c < kBM / 8; ++c)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int r = 8 * c + (e & 1);
                const int ki = key0 + (e >= 2 ? 8 : 0);
                bool ok = (r < qv) & (ki < len_k);
#if FA4_HAS_MASK_MOD
                const int qi = m0 + 2 * t + r;
                ok = ok & (((unsigned)(r - plo) >= span) |
                           fa4_mask_mod(b, h, (int)(qi + p.q_offset), (int)(ki + p.kv_offset), aux));
#endif
                if (c < 8)
                    mb0 |= (unsigned)ok << (4 * c + e);
                else
                    mb1 |= (unsigned)ok << (4 * (c - 8) + e);
            }
#if FA4_SM90_BWD80_BITS_FENCE /* computed here, not moved next to its use in the score stage */
        asm volatile("" : "+r"(mb0), "+r"(mb1));
#endif
    }
#endif

#if FA4_SM90_BWD_MASK_EARLY
    /* The early mask of a checked tile: bit 4c + e of the result is whether the thread's element e
     * of chunk c may attend (inside the sequence and mask_mod). */
    __device__ __forceinline__ unsigned mask_bits(int h, int m0, bool full) const
    {
        const int g = lane >> 2, t = lane & 3;
        const int key0 = n0 + cw * kBWgKeys + warp * 16 + g;
        unsigned bits = 0u;
#pragma unroll
        for (int c = 0; c < kBM / 8; ++c)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int ki = key0 + (e >= 2 ? 8 : 0);
                const int qi = m0 + 8 * c + 2 * t + (e & 1);
                const bool ok = !(qi >= len_q || ki >= len_k) &
                                (full | fa4_mask_mod(b, h, (int)(qi + p.q_offset), (int)(ki + p.kv_offset), aux));
                bits |= (unsigned)ok << (4 * c + e);
            }
        return bits;
    }
#endif

    /* P^T of the first pass's chunk c (pr) into pp, sc's chunk fenced with it */
    static __device__ __forceinline__ void pack_pt(unsigned (&pp)[kBM / 16][4], float (&sc)[kBM / 8][4], int c,
                                                   const float (&pr)[4])
    {
        const int kk = c / 2, hi = (c & 1) * 2;
        pp[kk][hi] = fa4_pack2(pr[0], pr[1]);
        pp[kk][hi + 1] = fa4_pack2(pr[2], pr[3]);
        asm volatile("" : "+r"(pp[kk][hi]), "+r"(pp[kk][hi + 1]), "+f"(sc[c][0]), "+f"(sc[c][1]), "+f"(sc[c][2]),
                     "+f"(sc[c][3])::"memory");
    }

    /* FA4_SM90_BWD_SPLIT, first pass (S^T complete, dP^T may still run). Without a score_mod
     * sc[c][e] becomes P in place (0 outside the mask) and the second pass packs it; with one,
     * P^T is packed into pp here and sc[c][e] becomes P d score_mod / d score, dS^T's factor (16
     * registers more over the second pass). */
#if FA4_SM90_BWD_AFFINE
    /* fa4_bwd_aff for head h: the form over queries [0, len_q) and this warp's 16 keys, the same for
     * every lane of the warp */
    __device__ __forceinline__ void affine_for(int h, fa4_bwd_aff &a) const
    {
        const long long ql = p.q_offset, qh = ql + (len_q > 0 ? len_q - 1 : 0);
        const long long kl = (long long)(n0 + cw * kBWgKeys + warp * 16) + p.kv_offset;
        fa4_score_aff af;
        a.h = h;
        a.ok = ql >= -2147483647LL - 1 && qh <= 2147483647LL && kl >= -2147483647LL - 1 && kl + 15 <= 2147483647LL &&
               len_q < (1 << 24) && fa4_score_mod_affine(b, h, (int)ql, (int)qh, (int)kl, (int)(kl + 15), aux, af);
        a.ks = af.ds * p.scale;
        a.c = af.c;
        a.dq = af.dq;
        a.dk = af.dk;
        a.ds = af.ds;
    }

    /* probs<false> where the form holds: element (c, e) is query m0 + 8 c + 2 t + (e & 1), key
     * key0 + 8 (e >= 2), so its bias is r[e] + dq * 8 c with r[e] the lane's offsets */
    __device__ __forceinline__ void probs_affine(float (&sc)[kBM / 8][4], unsigned (&pp)[kBM / 16][4], int s, int m0,
                                                 const fa4_bwd_aff &af) const
    {
        const int g = lane >> 2, t = lane & 3;
        const float cm = fmaf(af.dq, (float)m0, af.c);
        float r[4];
#pragma unroll
        for (int e = 0; e < 4; ++e)
            r[e] = fmaf(af.dq, (float)(2 * t + (e & 1)), fmaf(af.dk, (float)(g + (e >= 2 ? 8 : 0)), cm));
#pragma unroll
        for (int c = 0; c < kBM / 8; ++c) {
            float l2[2];
            fa4_bwd_lds2(sm.rows(s) + (8 * c + 2 * t) * 4, l2[0], l2[1]);
            float pr[4];
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const float x = fmaf(sc[c][e], af.ks, fmaf(af.dq, (float)(8 * c), r[e]));
                const float pv = fa4_exp2(fmaf(x, FA4_LOG2E, -l2[e & 1]));
                sc[c][e] = pv * af.ds;
                pr[e] = pv;
            }
            pack_pt(pp, sc, c, pr);
        }
    }
#endif

    template <bool kCheck>
    __device__ __forceinline__ void probs(float (&sc)[kBM / 8][4], unsigned (&pp)[kBM / 16][4], int s, int h,
                                          int m0, bool full, unsigned mbits) const
    {
        (void)mbits;
        const int g = lane >> 2, t = lane & 3;
        const int key0 = n0 + cw * kBWgKeys + warp * 16 + g;
#if FA4_HAS_SCORE_MOD
        const fa4_sm90_pre pre = fa4_sm90_prescale(p, b, h, aux);
#endif
#if !FA4_HAS_SCORE_MOD
        const float k2 = p.scale * FA4_LOG2E; /* as the forward: one FMA into log2 units */
#endif
#if FA4_SM90_BWD_BM != 64
        const unsigned rl = fa4_bwd_opaque(sm.rows(s) + 8 * t);
#endif
#pragma unroll
        for (int c = 0; c < kBM / 8; ++c) {
            float l2[2];
#if FA4_SM90_BWD_BM == 64
            fa4_bwd_lds2(sm.rows(s) + (8 * c + 2 * t) * 4, l2[0], l2[1]);
#else
            fa4_bwd_lds2(rl + 32 * c, l2[0], l2[1]);
#endif
            float pr[4];
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int ki = key0 + (e >= 2 ? 8 : 0);
                const int qi = m0 + 8 * c + 2 * t + (e & 1);
                bool ok = true;
                if (kCheck) {
#if FA4_SM90_BWD_MASK_EARLY
                    (void)ki;
                    (void)qi;
                    ok = (mbits >> (4 * c + e)) & 1u;
#elif FA4_HAS_MASK_MOD
                    ok = !(qi >= len_q || ki >= len_k) &
                         (full | fa4_mask_mod(b, h, (int)(qi + p.q_offset), (int)(ki + p.kv_offset), aux));
#else
                    ok = !(qi >= len_q || ki >= len_k);
#endif
                }
#if FA4_HAS_SCORE_MOD
                float dmod = 1.f;
                const float x = fa4_sm90_mod_deriv(sc[c][e], pre, b, h, (int)(qi + p.q_offset),
                                                   (int)(ki + p.kv_offset), aux, &dmod);
                const float pv = ok ? fa4_exp2(fmaf(x, FA4_LOG2E, -l2[e & 1])) : 0.f;
                sc[c][e] = ok ? pv * dmod : 0.f;
                pr[e] = pv;
#else
                sc[c][e] = ok ? fa4_exp2(fmaf(sc[c][e], k2, -l2[e & 1])) : 0.f;
                pr[e] = 0.f;
#endif
            }
#if FA4_HAS_SCORE_MOD
            pack_pt(pp, sc, c, pr);
#else
            (void)pr;
            asm volatile("" : "+f"(sc[c][0]), "+f"(sc[c][1]), "+f"(sc[c][2]), "+f"(sc[c][3])::"memory");
#endif
        }
    }

#if FA4_SM90_BWD_RELP
    /* probs() where score_mod is score + g(kv_idx - q_idx) without trainable reads (t5_bias): g
     * once per offset of the thread's fragment (grads_rel), d score_mod / d score = 1 */
    template <bool kCheck>
    __device__ __forceinline__ void probs_rel(float (&sc)[kBM / 8][4], unsigned (&pp)[kBM / 16][4], int s, int h,
                                              int m0, bool full, unsigned mbits) const
    {
        (void)mbits;
        const int g = lane >> 2, t = lane & 3;
        const int key0 = n0 + cw * kBWgKeys + warp * 16 + g;
        const int kl = (int)(key0 + p.kv_offset);
        const int ql = (int)(m0 + 2 * t + p.q_offset);
        const fa4_score_uniform su = fa4_score_mod_uniform(b, h, aux);
        int at[kRelSites];
        float coef[kRelSites];
        float gc[2];
#if FA4_SM90_BWD_REL_SHFL
        (void)ql;
        const int qb = (int)(m0 + p.q_offset), kb = kl - g, d0 = g - 2 * t;
        rel_slot sl;
        rel_slot_eval(h, rel_slot_of(0), qb, kb, su, sl);
#pragma unroll
        for (int j = 0; j < 2; ++j)
            gc[j] = rel_slot_get(sl, d0 - j + 8 + kBM - 16 * rel_slot_of(0) - 1, at, coef);
#else
#pragma unroll
        for (int j = 0; j < 2; ++j)
            gc[j] = rel_g(h, ql + j, kl + 8, su, at, coef);
#endif
#pragma unroll
        for (int c = 0; c < kBM / 8; ++c) {
            float l2[2];
            fa4_bwd_lds2(sm.rows(s) + (8 * c + 2 * t) * 4, l2[0], l2[1]);
            float gn[2];
#if FA4_SM90_BWD_REL_SHFL
            if (c > 0 && rel_slot_of(c) != rel_slot_of(c - 1))
                rel_slot_eval(h, rel_slot_of(c), qb, kb, su, sl);
#pragma unroll
            for (int j = 0; j < 2; ++j)
                gn[j] = rel_slot_get(sl, d0 - j - 8 * c + kBM - 16 * rel_slot_of(c) - 1, at, coef);
#else
#pragma unroll
            for (int j = 0; j < 2; ++j)
                gn[j] = rel_g(h, ql + 8 * c + j, kl, su, at, coef);
#endif
            float pr[4];
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const bool ok = !kCheck || elem_ok<FA4_SM90_BWD_MASK_EARLY != 0>(h, key0, m0, t, c, e, full, mbits);
                const float x = sc[c][e] * p.scale + (e >= 2 ? gc[e & 1] : gn[e & 1]);
                const float pv = ok ? fa4_exp2(fmaf(x, FA4_LOG2E, -l2[e & 1])) : 0.f;
                sc[c][e] = pv;
                pr[e] = pv;
            }
            gc[0] = gn[0];
            gc[1] = gn[1];
            pack_pt(pp, sc, c, pr);
        }
    }
#endif

    /* FA4_SM90_BWD_SPLIT, second pass (dP^T complete): dS^T = sc (dP^T - dpsum) into pds (and,
     * without a score_mod, P^T = sc into pp). Rows past the sequence read whatever follows in the
     * workspace as dpsum: kCheck zeroes it there (sc is 0 already), so no NaN reaches dS. */
    template <bool kCheck>
    __device__ __forceinline__ void dsgrads(const float (&sc)[kBM / 8][4], const float (&dp)[kBM / 8][4],
                                            unsigned (&pp)[kBM / 16][4], unsigned (&pds)[kBM / 16][4], int s,
                                            int m0, float *dsum = nullptr) const
    {
        const int t = lane & 3;
#if FA4_SM90_BWD_BM != 64
        const unsigned rl = fa4_bwd_opaque(sm.rows(s) + kBRowBytes / 2 + 8 * t);
#endif
#pragma unroll
        for (int c = 0; c < kBM / 8; ++c) {
            float dps[2];
#if FA4_SM90_BWD_BM == 64
            fa4_bwd_lds2(sm.rows(s) + kBRowBytes / 2 + (8 * c + 2 * t) * 4, dps[0], dps[1]);
#else
            fa4_bwd_lds2(rl + 32 * c, dps[0], dps[1]);
#endif
            if (kCheck) {
                const int qi = m0 + 8 * c + 2 * t;
                dps[0] = qi < len_q ? dps[0] : 0.f;
                dps[1] = qi + 1 < len_q ? dps[1] : 0.f;
            }
            float ds[4];
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                ds[e] = sc[c][e] * (dp[c][e] - dps[e & 1]);
                if (dsum) /* (a constant after inlining) the tile's dS sum: a trainable c0's gradient */
                    *dsum += ds[e];
            }
            const int kk = c / 2, hi = (c & 1) * 2;
#if !FA4_HAS_SCORE_MOD
            pp[kk][hi] = fa4_pack2(sc[c][0], sc[c][1]);
            pp[kk][hi + 1] = fa4_pack2(sc[c][2], sc[c][3]);
#endif
            pds[kk][hi] = fa4_pack2(ds[0], ds[1]);
            pds[kk][hi + 1] = fa4_pack2(ds[2], ds[3]);
#if !FA4_HAS_SCORE_MOD
            asm volatile("" : "+r"(pp[kk][hi]), "+r"(pp[kk][hi + 1]), "+r"(pds[kk][hi]), "+r"(pds[kk][hi + 1])::"memory");
#endif
        }
    }

    /* dV += P^T dO alone (FA4_SM90_BWD_DV_EARLY; one commit group). */
    __device__ __forceinline__ void issue_dv(float (&dv)[kDvp / 8][4], const unsigned (&pp)[kBM / 16][4],
                                             int s) const
    {
#pragma unroll
        for (int kk = 0; kk < kBM / 16; ++kk)
            fa4_wgmma<kDvp>::rs(dv, pp[kk],
                                FA4_DESC_SW128(sm.dout(s), kk * 16 * kPanelBytes, kBM * kPanelBytes, 1024), 1);
        fa4_wgmma_commit();
    }

    /* dK += dS^T Q alone (FA4_SM90_BWD_DV_EARLY; one commit group). */
    __device__ __forceinline__ void issue_dk(float (&dk)[kDp / 8][4], const unsigned (&pds)[kBM / 16][4],
                                             int s) const
    {
#pragma unroll
        for (int kk = 0; kk < kBM / 16; ++kk)
            fa4_wgmma<kDp>::rs(dk, pds[kk],
                               FA4_DESC_SW128(sm.q(s), kk * 16 * kPanelBytes, kBM * kPanelBytes, 1024), 1);
        fa4_wgmma_commit();
    }

    /* FA4_SM90_BWD_SPLIT: the score stage between the S^T/dP^T issue (S^T complete) and the dS
     * store: first pass, the wait for dP^T, second pass. */
    template <bool kCheck>
    __device__ __forceinline__ void grads_split(float (&sc)[kBM / 8][4], float (&dp)[kBM / 8][4],
                                                unsigned (&pp)[kBM / 16][4], unsigned (&pds)[kBM / 16][4], int s,
                                                int h, int m0, bool full, unsigned mbits) const
    {
#if FA4_SM90_BWD_RELP
        probs_rel<kCheck>(sc, pp, s, h, m0, full, mbits);
#else
        probs<kCheck>(sc, pp, s, h, m0, full, mbits);
#endif
        fa4_wgmma_wait<0>();
        fa4_reg_fence(dp);
        dsgrads<kCheck>(sc, dp, pp, pds, s, m0);
    }
#if FA4_SM90_BWD_SPLIT && FA4_SM90_BWD_TILE_ADD
    /* FA4_SM90_BWD_SPLIT_ADD: an unchecked step where score_mod is score + c0 over the warp's tile
     * (no trainable read): P^T in the first pass, d score_mod / d score = 1 */
    __device__ __forceinline__ void grads_split_add(float (&sc)[kBM / 8][4], float (&dp)[kBM / 8][4],
                                                    unsigned (&pp)[kBM / 16][4], unsigned (&pds)[kBM / 16][4],
                                                    int s, int m0, const fa4_score_tile &tl,
                                                    fa4_bwd_aff &af) const
    {
        const int t = lane & 3;
        const float cadd = fa4_score_mod_tile_add(tl);
#pragma unroll
        for (int c = 0; c < kBM / 8; ++c) {
            float l2[2], pr[4]; /* lse2 of the chunk's two rows, its P */
            fa4_bwd_lds2(sm.rows(s) + (8 * c + 2 * t) * 4, l2[0], l2[1]);
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const float x = sc[c][e] * p.scale + cadd;
                pr[e] = fa4_exp2(fmaf(x, FA4_LOG2E, -l2[e & 1]));
                sc[c][e] = pr[e];
            }
            pack_pt(pp, sc, c, pr);
        }
        fa4_wgmma_wait<0>();
        fa4_reg_fence(dp);
        float gsum = 0.f; /* a trainable c0's gradient (commit_tile_grad: nothing without one) */
        dsgrads<false>(sc, dp, pp, pds, s, m0, &gsum);
        commit_tile_grad(gsum, tl, af);
    }
#endif
#if FA4_SM90_BWD_AFFINE
    __device__ __forceinline__ void grads_split_affine(float (&sc)[kBM / 8][4], float (&dp)[kBM / 8][4],
                                                       unsigned (&pp)[kBM / 16][4], unsigned (&pds)[kBM / 16][4],
                                                       int s, int m0, const fa4_bwd_aff &af) const
    {
        probs_affine(sc, pp, s, m0, af);
        fa4_wgmma_wait<0>();
        fa4_reg_fence(dp);
        dsgrads<false>(sc, dp, pp, pds, s, m0);
    }
#endif

    /* dS^T fragment -> dS[query][key] in buffer buf (128-byte swizzle, panel = key / 64). */
    __device__ __forceinline__ void store_ds(const unsigned (&pds)[kBM / 16][4], int buf) const
    {
        const int i = lane >> 3, j = lane & 7;
        const int kin = warp * 16 + (i & 1) * 8; /* key within this warpgroup's panel */
        const unsigned panel = sm.ds(buf) + cw * kBM * kPanelBytes;
#pragma unroll
        for (int kk = 0; kk < kBM / 16; ++kk) {
            const int q = kk * 16 + (i >> 1) * 8 + j;
            fa4_bwd_stsm_x4_t(panel + q * kPanelBytes + (((kin >> 3) ^ (q & 7)) << 4), pds[kk]);
        }
    }

    /* Deterministic, issuer only: pass on the turn still held (sm.dq_pending), once the adds are
     * complete. The fence (acq_rel) is the store's release, and an acquire for the issuer's
     * earlier relaxed reads; kFence: fence even when no turn is held. */
    template <bool kFence>
    __device__ __forceinline__ void pass_dq_turn(void) const
    {
        unsigned long long ctr;
        asm volatile("ld.shared.u64 %0, [%1];\n" : "=l"(ctr) : "r"(sm.dq_pending(cw)) : "memory");
        if (ctr) {
            fa4_bulk_wait<0>(); /* the adds are complete, not only read */
            asm volatile("fence.proxy.async.global;\n" ::: "memory");
        }
        if (FA4_SM90_BWD_TURN_RELEASE && !kFence) {
            if (ctr) /* the waiter's ld.acquire.gpu is the acquire */
                asm volatile("red.release.gpu.global.add.s32 [%0], 1;\n" ::"l"(ctr) : "memory");
        } else if (kFence || ctr)
            asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
        if (ctr) {
            if (!(FA4_SM90_BWD_TURN_RELEASE && !kFence))
                asm volatile("red.relaxed.gpu.global.add.s32 [%0], 1;\n" ::"l"(ctr) : "memory");
            asm volatile("st.shared.u64 [%0], %1;\n" ::"r"(sm.dq_pending(cw)), "l"(0ull) : "memory");
        }
    }

    /* Deterministic, issuer only, FA4_SM90_BWD_DQ_PASS 0: the same at the step's end (a release
     * store, no acquire needed). */
    __device__ __forceinline__ void release_dq_turn(void) const
    {
        unsigned long long ctr;
        asm volatile("ld.shared.u64 %0, [%1];\n" : "=l"(ctr) : "r"(sm.dq_pending(cw)) : "memory");
        if (ctr) {
            fa4_bulk_wait<0>(); /* the adds are complete, not only read */
            asm volatile("fence.proxy.async.global;\n" ::: "memory");
            asm volatile("red.release.gpu.global.add.s32 [%0], 1;\n" ::"l"(ctr) : "memory");
            asm volatile("st.shared.u64 [%0], %1;\n" ::"r"(sm.dq_pending(cw)), "l"(0ull) : "memory");
        }
    }

    /* Deterministic, issuer only: the turn of the step in stage s, the number of key tiles that
     * add into its query tile before this one: n_tile when dense; with a block mask the walk
     * table's (bwd_schedule.cuh; the producer leaves the step's word next to the stage) plus this
     * key tile's place in its kv block (stored at the walk's start): two shared loads, no division
     * and no global load right before the wait for the turn, the chain's critical path. The
     * producer reuses the slot only once every consumer warp has released the stage, after this. */
    __device__ __forceinline__ int dq_turn(int s, int h, int m0) const
    {
        if (!p.has_block_mask) {
            if (p.deterministic <= 1)
                return n_tile;
#if FA4_SM90_BWD_TURN_SLOT
            /* rotated walks: the producer leaves the step's turn by its stage */
            int t;
            asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(t) : "r"(sm.dq_turn(s)) : "memory");
            return t;
#else
            return fa4_bwd_rot_turn(sm.dq_rot(), m0);
#endif
        }
#if FA4_SM90_BWD_TURN_SLOT
        int t, a;
        asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(t) : "r"(sm.dq_turn(s)) : "memory");
        asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(a) : "r"(sm.dq_turn_add(cw)) : "memory");
#if FA4_BWD_WALK80
        return (int)((unsigned)t >> 24) + a; /* the step's info, its turn in the top byte */
#else
        return (t & 0x7fffffff) + a;
#endif
#else
        const int bb = p.bm_batch == 1 ? 0 : b, hh = p.bm_heads == 1 ? 0 : h;
        const long long row = ((long long)bb * p.bm_heads + hh) * p.bm_nkv + n_tile * kBN / p.bm_kv_block;
        const long long at = (long long)p.hq * (p.ws_rows / 4) * 2 + row * 2 * p.bm_nq + p.bm_nq;
        const int t = p.dq_sem[at + m0 / p.bm_q_block];
        return (t & 0x7fffffff) + n_tile % (p.bm_kv_block / kBN);
#endif
    }

    /* The turn counter of (head h, query tile m0) for this warpgroup's column half. */
    __device__ __forceinline__ int *dq_turn_ctr(int h, int m0) const
    {
#if FA4_BWD_WALK80
        m0 -= m0 % kBM; /* a block mask's steps start inside their 80-row tile (fa4_bwd_turns80) */
#endif
        const int row0 = h * (int)p.ws_rows + wrow0 + m0; /* a multiple of 4 */
        return p.dq_sem + (row0 >> 2) * 2 + cw; /* 2 per query tile for any kBDqWgs: bwd_pre zeroes them */
    }

    /* Deterministic, issuer only, FA4_SM90_BWD_TURN_AGENT: hand the agent the turn still held
     * (once its adds are complete) and the next step's counter and turn (next 0: the walk is
     * over). Every step posts once, and a post follows the agent's "go" of the step before (the
     * dQ write waited for it), so the words are free and "post" and "go" run in lock step. */
    __device__ __forceinline__ void post_dq_turn(unsigned long long next, int turn) const
    {
        fa4_bwd_post_dq_turn(sm, cw, next, turn);
    }

    /* Deterministic, issuer only, while the step's S/dP wgmmas run (FA4_SM90_BWD_DQ_PASS 1): pass
     * on the previous step's turn and, with FA4_SM90_BWD_DQ_PEEK, note whether this step's turn
     * has already come; with the agent, post both to it. */
    __device__ __forceinline__ void dq_turn_window(int h, int m0, int s) const
    {
        (void)s;
#if FA4_SM90_BWD_TURN_AGENT
        post_dq_turn((unsigned long long)dq_turn_ctr(h, m0), dq_turn(s, h, m0));
        return;
#endif
#if FA4_SM90_BWD_DQ_PEEK
        int v;
        asm volatile("ld.relaxed.gpu.global.b32 %0, [%1];\n" : "=r"(v) : "l"(dq_turn_ctr(h, m0)) : "memory");
#endif
        pass_dq_turn<FA4_SM90_BWD_DQ_PEEK>();
#if FA4_SM90_BWD_DQ_PEEK
        const unsigned seen = /* block masks: not from the window */
            !p.has_block_mask && v == (p.deterministic > 1 ? fa4_bwd_rot_turn(sm.dq_rot(), m0) : n_tile);
        asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(sm.dq_seen(cw)), "r"(seen) : "memory");
#endif
    }

#if FA4_SM90_BWD_DQ_FUSED
    /* every half tile of the list (n entries) converted */
    __device__ __forceinline__ void dq_fused_convert(unsigned n, int t) const
    {
        asm volatile("fence.proxy.async.global;\n" ::: "memory"); /* the sums were added by the async proxy */
        const fa4_seq seq = fa4_seq_info(p, b);
        const int d = p.head_dim;
        constexpr int kQ = kBM * (kBDqN / 4); /* float4 of a half tile */
        /* loads in flight a thread: 16 x 16 B x 256 threads = 64 KB a CTA (the registers of dK and
         * dV are free here); the element's place is worked out again for the store */
        constexpr int kU = 16;
        const long long total = (long long)n * kQ;
        const auto where = [&](long long i, int &h, int &row, int &col) {
            unsigned long long e;
            asm volatile("ld.shared.u64 %0, [%1];\n" : "=l"(e) : "r"(sm.ds(0) + 8u * (unsigned)(i / kQ)) : "memory");
            const int q = (int)(i % kQ);
            col = (int)(e & 1) * kBDqN + (q & 15) * 4;
            h = (int)(e >> 33);
            row = (int)((e >> 1) & 0xffffffffu) + (q >> 4);
            return i < total && row < len_q && col < d;
        };
        for (long long i0 = t; i0 < total; i0 += 256LL * kU) {
            float4 v[kU];
#pragma unroll
            for (int u = 0; u < kU; ++u) {
                int h, row, col;
                if (where(i0 + 256LL * u, h, row, col)) {
                    const float *src = p.dq_accum + ((long long)h * p.ws_rows + wrow0 + row) * d + col;
                    asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                                 : "=f"(v[u].x), "=f"(v[u].y), "=f"(v[u].z), "=f"(v[u].w)
                                 : "l"(src)
                                 : "memory");
                }
            }
#pragma unroll
            for (int u = 0; u < kU; ++u) {
                int h, row, col;
                if (where(i0 + 256LL * u, h, row, col)) {
                    const unsigned lo = fa4_pack2(v[u].x * p.scale, v[u].y * p.scale);
                    const unsigned hi = fa4_pack2(v[u].z * p.scale, v[u].w * p.scale);
                    fa4_elem *dst = (fa4_elem *)p.dq.data + b * p.dq.sb + h * p.dq.sh + (seq.row_q + row) * p.dq.ss + col;
                    asm volatile("st.global.v2.b32 [%0], {%1, %2};\n" ::"l"(dst), "r"(lo), "r"(hi) : "memory");
                }
            }
        }
    }

    /* Default mode with p.dq_cnt (FA4_SM90_BWD_DQ_FUSED), the 256 consumer threads once the walk is
     * over and every dQ add of this CTA is complete (the issuers' bulk wait and proxy fence, then
     * a consumers' barrier): each 80-row tile's counter holds the key tiles still to add into it
     * (set before this grid); the CTA counts off every (tile, column half) of its walk, and the
     * halves it takes to 0 (every key tile's adds complete) it converts itself: dQ = scale * sums
     * of the rows inside the sequence, in the element type. The release of the count follows the
     * barrier after the completion (cumulative), the acquire of the last one precedes the barrier
     * before everyone's loads.
     * Why at the walk's end, not per step: a step's count needs its adds complete first
     * (cp.async.bulk.wait_group, which invalidates L1: the block-mask walk's table entries, kept
     * there by prefetch, then missed) and a gpu-scope release: per step, on the issuer or on an
     * agent thread of the producer warpgroup, that made the backward 8-48% slower (H100
     * 2026-12-06, B4 H16 S4096 bwd ms, bwd_post / per step: plain S8192 10.11 / 10.96, causal
     * 1.461 / 2.167, document B8 1.862 / 2.999). The list of halves to convert sits in the dS
     * buffers and the dQ staging (free after the walk), its length in sm.dq_fused_n(); a round of
     * 256 (step, half) pairs at a time, converted whenever another round might not fit. */
    __device__ __forceinline__ void dq_fused_end(int hk) const
    {
        /* the list: 8 bytes a half tile in the dS buffers and the dQ staging (contiguous, free) */
        constexpr unsigned kCap = (2 * kBDsBytes + (kDp / 64) * kBDqBytes) / 8;
        static_assert(kCap >= 2 * 256, "the fused dQ list holds two rounds");
        const int t = cw * 128 + warp * 32 + lane;
        for (int hh = 0; hh < p.group; ++hh) {
            const int h = hk * p.group + hh;
            int count;
            const int *st = fa4_bwd_steps_row(p, b, h, n_tile, len_q, count);
            for (int j0 = 0; j0 < 2 * count; j0 += 256) { /* rounds of 256 (step, half) pairs */
                const int j = j0 + t;
                const int m0 = j < 2 * count ? (st ? st[2 * (j >> 1)] : (j >> 1) * kBM) : len_q;
                if (m0 < len_q) {
                    const int tile0 = m0 - m0 % kBM, half = j & 1;
                    const long long row0 = (long long)h * p.ws_rows + wrow0 + tile0; /* a multiple of 4 */
                    int left;
                    asm volatile("atom.acq_rel.gpu.global.add.s32 %0, [%1], -1;\n"
                                 : "=r"(left)
                                 : "l"(p.dq_cnt + (row0 >> 2) * 2 + half)
                                 : "memory");
                    if (left == 1) {
                        unsigned slot;
                        asm volatile("atom.shared.add.u32 %0, [%1], 1;\n" : "=r"(slot) : "r"(sm.dq_fused_n()) : "memory");
                        asm volatile("st.shared.u64 [%0], %1;\n" ::"r"(sm.ds(0) + 8u * slot),
                                     "l"(((unsigned long long)h << 33) | ((unsigned long long)tile0 << 1) | (unsigned)half)
                                     : "memory");
                    }
                }
                fa4_bwd_consumers_sync();
                unsigned n;
                asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(n) : "r"(sm.dq_fused_n()) : "memory");
                fa4_bwd_consumers_sync(); /* everyone has read n before the next round adds to it */
                if (n + 256u > kCap) { /* no room for another round: convert what is there */
                    dq_fused_convert(n, t);
                    fa4_bwd_consumers_sync();
                    if (t == 0)
                        asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(sm.dq_fused_n()), "r"(0u) : "memory");
                    fa4_bwd_consumers_sync();
                }
            }
        }
        unsigned n;
        asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(n) : "r"(sm.dq_fused_n()) : "memory");
        if (n)
            dq_fused_convert(n, t);
    }
#endif

    /* dQ partial of this step added into the workspace by TMA: the fragment goes to this
     * warpgroup's staging buffer (2 boxes of 32 fp32 columns, 128-byte swizzle), then one thread
     * issues the bulk tensor reduce-adds. Query rows past the sequence add zeros (their dS is 0)
     * to whatever rows follow (no bits change), or are dropped past the workspace.
     * Deterministic (p.dq_sem): each (head, query tile, column half) has a turn counter; the
     * issuer adds only when it reads its turn (dq_turn: the number of key tiles before it that add
     * into this query tile, n_tile when dense) and, once its adds are complete, adds 1 to it: the
     * same additions in the same order on every run. In ascending walks a CTA only ever waits for
     * CTAs of smaller key tiles of its kv head, which the grid starts first in all its orders, so
     * the waits cannot deadlock; rotated walks (p.deterministic > 1) also wait for larger key
     * tiles of the rotation group, which the launcher makes small enough to be resident at once
     * (path_sm90.c), and every wait is for a step of no later walk position (ties: smaller key
     * tiles), so none closes a cycle. */
    template <bool kTurn>
    __device__ __forceinline__ void write_dq_tma(const float (&dq)[FA4_SM90_BWD_DQ_CHUNKS][4], int h, int m0, int s,
                                                 int it) const
    {
        (void)it;
        const int g = lane >> 2, t = lane & 3;
        const unsigned buf = sm.dqs(cw);
        const bool issuer = fa4_wg_thread0();
        if (issuer)
            fa4_bulk_wait_read<0>(); /* the previous step's reduce has read the buffer */
        fa4_bwd_wg_sync(cw);
#if FA4_SM90_BWD_BM == 64
        {
#pragma unroll
            for (int i = 0; i < kBDqN / 8; ++i) {
                const int box = i / 4, chunk = (i % 4) * 2 + (t >> 1);
#pragma unroll
                for (int r2 = 0; r2 < 2; ++r2) {
                    const int row = warp * 16 + g + 8 * r2;
                    const unsigned addr =
                        buf + box * kBDqBoxBytes + row * 128 + ((chunk ^ (row & 7)) << 4) + (t & 1) * 8;
                    asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(addr), "f"(dq[i][2 * r2]),
                                 "f"(dq[i][2 * r2 + 1])
                                 : "memory");
                }
            }
        }
#else
        {
            /* dQ^T: the fragment's rows are dims (box warp / 2, column (warp % 2) 16 + g + 8 r2),
             * its columns queries (the staging rows 8 i + 2 t + e): one float a store, the 32
             * lanes on 32 banks (the rows' swizzle spreads t's four rows over the chunks) */
            const int box = warp >> 1;
#pragma unroll
            for (int i = 0; i < kBM / 8; ++i)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int col = (warp & 1) * 16 + g + 8 * (e >> 1), row = 8 * i + 2 * t + (e & 1);
                    const unsigned addr =
                        buf + box * kBDqBoxBytes + row * 128 + (((col >> 2) ^ (row & 7)) << 4) + (col & 3) * 4;
                    asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(addr), "f"(dq[i][e]) : "memory");
                }
        }
#endif
        fa4_bwd_fence_async_smem();
        fa4_bwd_wg_sync(cw);
        if (issuer) {
            const int row0 = h * (int)p.ws_rows + wrow0 + m0; /* a multiple of 4 */
            int *ctr = kTurn && p.dq_sem ? dq_turn_ctr(h, m0) : nullptr;
            if (ctr) {
#if FA4_SM90_BWD_TURN_AGENT
                fa4_mbar_wait(sm.bar_turn_go(cw), (unsigned)it & 1u); /* the agent saw the turn */
#elif FA4_SM90_BWD_DQ_PEEK
                unsigned seen;
                asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(seen) : "r"(sm.dq_seen(cw)) : "memory");
                if (!seen)
                    fa4_bwd_wait_turn(ctr, dq_turn(s, h, m0));
#else
                fa4_bwd_wait_turn(ctr, dq_turn(s, h, m0));
#endif
                asm volatile("fence.proxy.async.global;\n" ::: "memory");
            }
#pragma unroll
            for (int box = 0; box < 2; ++box)
                fa4_tma_reduce_add_2d(tm_dq, buf + box * kBDqBoxBytes, cw * kBDqN + box * kBDqBox, row0);
            fa4_bulk_commit();
            if (ctr) /* passed on by pass_dq_turn (FA4_SM90_BWD_DQ_PASS) */
                asm volatile("st.shared.u64 [%0], %1;\n" ::"r"(sm.dq_pending(cw)), "l"((unsigned long long)ctr)
                             : "memory");
        }
    }

    /* dQ partial of this step into the workspace: the TMA reduce-add (in turn when p.dq_sem and
     * kTurn; kTurn false only where p.dq_sem is known to be null). */
    template <bool kTurn = true>
    __device__ __forceinline__ void write_dq(const float (&dq)[FA4_SM90_BWD_DQ_CHUNKS][4], int h, int m0, int s,
                                             int it) const
    {
        write_dq_tma<kTurn>(dq, h, m0, s, it);
    }

    /* FA4_SM90_BWD_DQ_LAG, not deterministic: the dQ of the walk's last step it (its dS in buffer
     * it % 2, its query tile (h, m0)), after the walk and the dK, dV epilogue. */
    __device__ __forceinline__ void drain_dq(int it, int h, int m0) const
    {
        if (kBDqWgs == 2 || cw < kBDqWgs) {
            const int lb = it & 1;
            float dq[FA4_SM90_BWD_DQ_CHUNKS][4];
            /* K's address through an opaque move: with the walk's own, ptxas computed the dQ
             * descriptors once before the walk and kept them live over it (plain D 128 spilled
             * 56 bytes) */
            unsigned kbase;
            asm volatile("mov.b32 %0, %1;\n" : "=r"(kbase) : "r"(sm.k()));
            fa4_mbar_wait(sm.bar_ds_full(lb), (unsigned)(it >> 1) & 1u);
            fa4_wgmma_fence();
            issue_dq_at(dq, lb, kbase);
            fa4_wgmma_wait<0>();
            fa4_reg_fence(dq);
            write_dq<false>(dq, h, m0, 0, 0);
        }
    }

    /* A step's end where dQ went first (FA4_SM90_BWD_DQ_FIRST, with or without the lag): every
     * wgmma complete, the stage released, and without FA4_SM90_BWD_DQ_PASS the deterministic turn
     * passed on (the adds issued before dV / dK have had their time). */
    __device__ __forceinline__ void finish_step(float (&dk)[kDp / 8][4], float (&dv)[kDvp / 8][4],
                                                unsigned (&pp)[kBM / 16][4], unsigned (&pds)[kBM / 16][4],
                                                int s) const
    {
        fa4_wgmma_wait<0>();
        fa4_reg_fence(dk);
        fa4_reg_fence(dv);
#if !FA4_SM90_BWD_DV_WAIT /* else P^T was let go at the dV wait */
        fa4_bwd_fence_u(pp);
#endif
#if FA4_SM90_BWD_DV_WAIT != 2
        fa4_bwd_fence_u(pds);
#endif
        if (lane == 0)
            fa4_mbar_arrive(sm.bar_empty(s));
        if (FA4_SM90_BWD_DQ_PASS == 0 && p.dq_sem && fa4_wg_thread0() && cw < kBDqWgs)
            release_dq_turn();
    }

    /* One step: stage s (ring phase ph), the walk's step it (dS buffer it % 2), query tile (h, m0);
     * (hp, m0p): the previous step's (FA4_SM90_BWD_DQ_LAG: its dQ is written here). */
    __device__ __forceinline__ void step(float (&dk)[kDp / 8][4], float (&dv)[kDvp / 8][4], int s, unsigned ph,
                                         int it, int h, int m0, fa4_bwd_full_t full, int hp, int m0p,
                                         fa4_bwd_aff &af) const
    {
        (void)af;
        const int buf = it & 1;
        (void)hp;
        (void)m0p;
#if FA4_SM90_BWD_DQ_LAG == 2
        if (it == 0 && cw == 1)
            asm volatile("bar.sync 4, 256;\n" ::: "memory"); /* warpgroup 0 stored its first dS */
#endif
        unsigned pp[kBM / 16][4], pds[kBM / 16][4];
#if FA4_SM90_BWD_TILE_ADD
        fa4_score_tile tl;
#if FA4_SM90_BWD_TILE_RUN
        const bool add = tile_add_run(h, m0, tl, af);
#else
        const bool add = tile_add(h, m0, tl);
#endif
#endif
#if FA4_SM90_BWD_AFFINE
        if (h != af.h)
            affine_for(h, af);
        const bool aff = af.ok;
#endif
#if FA4_BWD_WALK80 /* full: the step's info (bwd_schedule.cuh) */
        const bool inside = m0 + kBM <= len_q && n0 + kBN <= len_k &&
                            (FA4_HAS_MASK_MOD ? (full & 0xffffffu) == 80u : (full & 0xffu) == 80u);
        unsigned mb0 = 0u, mb1 = 0u;
        /* before the S^T / dP^T issue, while their 80 accumulator registers are free (computed
         * under them, causal D 128 spilled 72 bytes) */
        if (!(FA4_SM90_BWD_FAST_TILES && inside))
            mask_bits80(h, m0, full, mb0, mb1);
#endif
        {
            float sc[kBM / 8][4], dp[kBM / 8][4];
            fa4_mbar_wait(sm.bar_full(s), ph);
#if FA4_SM90_BWD_PINGPONG
            if (it == 0 && cw == 1)
                asm volatile("bar.arrive 5, 256;\n" ::: "memory"); /* warpgroup 0's first turn */
            asm volatile("bar.sync %0, 256;\n" ::"r"(5 + cw) : "memory"); /* this warpgroup's turn */
#endif
            fa4_wgmma_fence();
            issue_s_dp(sc, dp, s);
#if FA4_SM90_BWD_PINGPONG
            asm volatile("bar.arrive %0, 256;\n" ::"r"(6 - cw) : "memory"); /* the other's turn */
#endif
#if FA4_SM90_BWD_DQ_PASS == 1
            if (p.dq_sem && fa4_wg_thread0() && cw < kBDqWgs)
                dq_turn_window(h, m0, s); /* the previous step's turn */
#endif
#if !FA4_BWD_WALK80
            const bool inside = m0 + kBM <= len_q && n0 + kBN <= len_k && (!FA4_HAS_MASK_MOD || full);
#endif
#if FA4_SM90_BWD_SPLIT
#if !FA4_SM90_BWD_SPLIT_TRAIN /* (its one-pass steps take the mask themselves) */
            unsigned mbits = ~0u;
#if FA4_SM90_BWD_MASK_EARLY
            if (!(FA4_SM90_BWD_FAST_TILES && inside))
                mbits = mask_bits(h, m0, full); /* while S^T and dP^T are on the tensor cores */
#endif
#endif
            fa4_wgmma_wait<1>();
            fa4_reg_fence(sc);
#if FA4_SM90_BWD_AFFINE
            if (FA4_SM90_BWD_FAST_TILES && inside && aff)
                grads_split_affine(sc, dp, pp, pds, s, m0, af);
            else
#endif
#if FA4_SM90_BWD_TILE_ADD
            if (FA4_SM90_BWD_FAST_TILES && inside && add)
                grads_split_add(sc, dp, pp, pds, s, m0, tl, af);
            else
#endif
#if FA4_SM90_BWD_SPLIT_TRAIN
            { /* the trainable table's other steps: one pass after both wgmmas, with the gradient terms */
                fa4_wgmma_wait<0>();
                fa4_reg_fence(dp);
                if (add)
                    grads_add<true>(sc, dp, pp, pds, s, h, m0, full, tl, af);
                else if (FA4_SM90_BWD_FAST_TILES && inside)
                    grads_rel<false>(sc, dp, pp, pds, s, h, m0, full);
                else
                    grads_rel<true>(sc, dp, pp, pds, s, h, m0, full);
            }
#else
            if (FA4_SM90_BWD_FAST_TILES && inside)
                grads_split<false>(sc, dp, pp, pds, s, h, m0, full, mbits);
            else {
#if !FA4_SM90_BWD_CHECKED_ONEPASS
                grads_split<true>(sc, dp, pp, pds, s, h, m0, full, mbits);
#else
                fa4_wgmma_wait<0>();
                fa4_reg_fence(dp);
#if FA4_BWD_WALK80
                grads<true>(sc, dp, pp, pds, s, h, m0, full, mb0, mb1);
#else
                grads<true>(sc, dp, pp, pds, s, h, m0, full);
#endif
#endif
            }
#endif
#if FA4_SM90_BWD_DV_EARLY
            /* after the branch: a wgmma in flight across its join made ptxas serialize them */
            fa4_reg_fence(dv);
            fa4_bwd_fence_u(pp);
            fa4_bwd_fence_u(pds);
            fa4_wgmma_fence();
            issue_dv(dv, pp, s);
#if FA4_SM90_BWD_DV_WAIT == 2
            issue_dk(dk, pds, s);
#endif
#endif
#else
            fa4_wgmma_wait<0>();
            fa4_reg_fence(sc);
            fa4_reg_fence(dp);
#if FA4_SM90_BWD_TILE_ADD
            if (add && FA4_SM90_BWD_FAST_TILES && inside)
                grads_add<false>(sc, dp, pp, pds, s, h, m0, full, tl, af);
            else if (add)
                grads_add<true>(sc, dp, pp, pds, s, h, m0, full, tl, af);
            else
#endif
#if FA4_SM90_BWD_REL
            if (FA4_SM90_BWD_FAST_TILES && inside)
                grads_rel<false>(sc, dp, pp, pds, s, h, m0, full);
            else
                grads_rel<true>(sc, dp, pp, pds, s, h, m0, full);
#else
            if (FA4_SM90_BWD_FAST_TILES && inside)
                grads<false>(sc, dp, pp, pds, s, h, m0, full);
            else
                grads<true>(sc, dp, pp, pds, s, h, m0, full);
#endif
#endif
        }
#if FA4_SM90_BWD_DQ_LAG
        if (it >= 2) /* every dQ of step it - 2 has read the buffer */
            fa4_mbar_wait(sm.bar_ds_empty(buf), ((unsigned)(it >> 1) & 1u) ^ 1u);
#endif
        store_ds(pds, buf);
        fa4_bwd_fence_async_smem();
#if FA4_SM90_BWD_DQ_LAG
        /* lane 0 for its warp: the warp's stores are ordered before it by __syncwarp */
        __syncwarp();
        if (lane == 0)
            fa4_mbar_arrive(sm.bar_ds_full(buf));
#if FA4_SM90_BWD_DQ_LAG == 2
        if (it == 0 && cw == 0)
            asm volatile("bar.arrive 4, 256;\n" ::: "memory"); /* warpgroup 1 may start */
#endif
#endif
        fa4_reg_fence(dk);
        fa4_reg_fence(dv);
        fa4_bwd_fence_u(pp);
        fa4_bwd_fence_u(pds);
#if FA4_SM90_BWD_DQ_LAG
        /* the previous step's dQ with this step's dK (deterministic: this step's; the walk's
         * first step without a lag: a dQ of whatever buffer 1 holds, discarded, so that no wgmma
         * is issued under a branch while dV runs) */
        if (kBDqWgs == 2 || cw < kBDqWgs) {
            const bool lag = !p.dq_sem;
            const int qit = lag ? it - 1 : it, qb = qit & 1;
            float dq[FA4_SM90_BWD_DQ_CHUNKS][4];
            if (qit >= 0)
                fa4_mbar_wait(sm.bar_ds_full(qb), (unsigned)(qit >> 1) & 1u);
            fa4_wgmma_fence();
            issue_dq(dq, qb);
#if FA4_SM90_BWD_SPLIT && FA4_SM90_BWD_DV_EARLY
            issue_dk(dk, pds, s);
#else
            issue_dkv(dk, dv, pp, pds, s);
#endif
            fa4_wgmma_wait<1>();
            fa4_reg_fence(dq);
            if (qit >= 0) {
                __syncwarp();
                if (lane == 0)
                    fa4_mbar_arrive(sm.bar_ds_empty(qb));
                write_dq(dq, lag ? hp : h, lag ? m0p : m0, s, it);
            }
        } else {
            fa4_wgmma_fence();
#if FA4_SM90_BWD_SPLIT && FA4_SM90_BWD_DV_EARLY
            issue_dk(dk, pds, s);
#else
            issue_dkv(dk, dv, pp, pds, s);
#endif
        }
        finish_step(dk, dv, pp, pds, s);
#elif FA4_SM90_BWD_DQ_FIRST
        /* dQ first: both halves of dS must be in shared memory, then dQ, dV, dK go to the tensor
         * cores back to back, and dQ's reduction into the workspace runs while dV, dK compute. */
        fa4_bwd_consumers_sync();
#if FA4_SM90_BWD_SPLIT && FA4_SM90_BWD_DV_EARLY
        /* dV is in flight already: dQ, then dK; waiting for all but the last group leaves dK */
        if (kBDqWgs == 2 || cw < kBDqWgs) { /* D 128: both warpgroups, no branch */
            float dq[FA4_SM90_BWD_DQ_CHUNKS][4];
#if FA4_SM90_BWD_DV_WAIT
            fa4_wgmma_wait<0>(); /* dV (and with 2 dK) complete: P^T's registers are free */
            fa4_reg_fence(dv);
            fa4_bwd_fence_u(pp);
#if FA4_SM90_BWD_DV_WAIT == 2
            fa4_reg_fence(dk);
            fa4_bwd_fence_u(pds);
#endif
#endif
            fa4_wgmma_fence();
            issue_dq(dq, buf);
#if FA4_SM90_BWD_DV_WAIT == 2
            fa4_wgmma_wait<0>();
#else
            issue_dk(dk, pds, s);
            fa4_wgmma_wait<1>();
#endif
            fa4_reg_fence(dq);
            write_dq(dq, h, m0, s, it);
        } else {
            fa4_wgmma_fence();
            issue_dk(dk, pds, s);
        }
#else
        if (cw < kBDqWgs) {
            float dq[FA4_SM90_BWD_DQ_CHUNKS][4];
            fa4_wgmma_fence();
            issue_dq(dq, buf);
            issue_dkv(dk, dv, pp, pds, s);
            fa4_wgmma_wait<1>();
            fa4_reg_fence(dq);
            write_dq(dq, h, m0, s, it);
        } else {
            fa4_wgmma_fence();
            issue_dkv(dk, dv, pp, pds, s);
        }
#endif
        finish_step(dk, dv, pp, pds, s);
#else
        fa4_wgmma_fence();
        issue_dkv(dk, dv, pp, pds, s);
        fa4_bwd_consumers_sync(); /* both halves of dS are in shared memory */
        if (cw < kBDqWgs) {
            float dq[FA4_SM90_BWD_DQ_CHUNKS][4];
            fa4_wgmma_fence();
            issue_dq(dq, buf);
            fa4_wgmma_wait<1>();
            fa4_reg_fence(dk);
            fa4_reg_fence(dv);
            fa4_bwd_fence_u(pp);
            fa4_bwd_fence_u(pds);
            if (lane == 0)
                fa4_mbar_arrive(sm.bar_empty(s));
            fa4_wgmma_wait<0>();
            fa4_reg_fence(dq);
            write_dq(dq, h, m0, s, it);
            if (FA4_SM90_BWD_DQ_PASS == 0 && p.dq_sem && fa4_wg_thread0())
                release_dq_turn();
        } else {
            fa4_wgmma_wait<0>();
            fa4_reg_fence(dk);
            fa4_reg_fence(dv);
            fa4_bwd_fence_u(pp);
            fa4_bwd_fence_u(pds);
            if (lane == 0)
                fa4_mbar_arrive(sm.bar_empty(s));
        }
#endif
    }
};

#endif /* FA4_SM90_BWD_CONSUMER_CUH */
