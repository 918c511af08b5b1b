/*
 * path_sm90.c - the Hopper kernel path (sm_90a: TMA + wgmma + warp specialisation): which programs
 * it compiles, the shared memory its forward asks for, and the launches. The forward is its own
 * program (src/kernels/sm90/fwd.cu); the backward and the block-mask programs are the portable
 * path's, compiled for sm_90a, and their launchers are delegated to fa4__sm80_ops.
 *
 * The forward reads Q, K and V through tensor maps built here from the problem's views with
 * cuTensorMapEncodeTiled: 4-d (dim, row, head, batch) maps of 64-element boxes in the 128-byte
 * swizzle that the kernel's wgmma descriptors expect. Under varlen the rows are the packed tokens
 * and the batch dimension has size 1. Rows and columns past the tensor's end are zero-filled by
 * TMA; the kernel masks keys past each sequence's end. The grid is persistent: one CTA per SM,
 * each walking tiles in the kernel's order (fa4_sm90_tile in src/kernels/sm90/schedule.cuh), or,
 * with a workspace, taking them from a counter in it (the dynamic schedule): the counter first,
 * then with a block mask each mask row's query tiles ranked by weight (fa4_sm90_fwd_order).
 * Tile geometry mirrors src/kernels/sm90/config.cuh: keep the two in step.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "params.h"
#include "params_fill.h"

enum { FWD_M = 128, FWD_THREADS = 384, BOX_COLS = 64, SMEM_LIMIT = 227 * 1024 };

/* The forward with at most max_ctas CTAs (0: one per tile); the launcher uses the SM count. */
fa4_status fa4__sm90_launch_fwd_ctas(fa4_kernel *k, const fa4__problem *p, int max_ctas);

static int bwd80_wanted(const fa4_kernel_spec *spec, const fa4__mod *mod);
static int bwd80s_wanted(const fa4_kernel_spec *spec, const fa4__mod *mod);

static int head_dim_v(const fa4_kernel_spec *spec)
{
    return spec->head_dim_v > 0 ? spec->head_dim_v : spec->head_dim;
}

/* The forward's first build at padded Dv > 192 with a score_mod is likely to spill: O (128
 * registers a thread at Dv 256), S (32) and P (16) leave the overlapped loop about 56 of the
 * consumers' 232, and alibi's, softcap's, softcap_causal's and rel_bias's D 256 first builds spilled
 * 24-32 bytes (NVRTC 13, bf16; head_scale's and t5_bias's did not). Their level 1 is compiled
 * beside it (compile.c): alibi's and softcap's cold forward at D 256 went from two builds in
 * series to two at once; with a mask_mod too, level 2 as well (softcap_causal: three builds at
 * once instead of two rounds). rel_bias's first build is clean there since session 27. */
static int fwd_speculate(const fa4_kernel_spec *spec, const fa4__mod *mod)
{
    if (!fa4__mod_has_score(mod) || head_dim_v(spec) <= 192)
        return 0;
    /* with a mask_mod too, level 1 (the checked tile's split off) spilled as well, and
     * softcap_causal's D 256 forward compiled level 2 after levels 0 and 1: both beside the first */
    return fa4__mod_has_mask(mod) ? 2 : 1;
}

static const fa4__program_desc programs[] = {
    /* spill fallback levels: FA4_SM90_FWD_FALLBACK 1, the overlapped forward without the newest
     * register-hungry choice (a mask_mod: the checked tile's split, softmax.cuh; else the
     * descriptor adds, ptx90.cuh); 2, without the descriptor adds (and without a mask_mod also
     * the late rescale, mainloop.cuh); then no overlap, the slow one. Session 24 found
     * causal_sliding_window's D 128 forward and softcap's, softcap_causal's and alibi's D 256
     * ones at the last level since session 23's changes (36 spilled bytes; level 1 takes them
     * back to the overlapped forward). */
    {"fwd", "sm90/fwd.cu", FA4_COMPILE_FWD, "fa4_sm90_fwd",
     {"-DFA4_SM90_FWD_FALLBACK=1", "-DFA4_SM90_FWD_FALLBACK=2", "-DFA4_SM90_OVERLAP=0"}, fwd_speculate, NULL, 0},
    {"bwd_pre", "sm80/bwd_pre.cu", FA4_COMPILE_BWD, "fa4_sm80_bwd_pre", {NULL}, NULL, NULL, 0},
    {"bwd_main", "sm80/bwd_main.cu", FA4_COMPILE_BWD, "fa4_sm80_bwd_main", {NULL}, NULL, NULL, 0},
    /* deterministic mode's mains where the mod has trainable aux (launch.c's fixed-point aux
     * gradients): the sm80 one for what the sm90 main does not run, and the sm90 one below */
    {"bwd_main_fx", "sm80/bwd_main_fx.cu", FA4_COMPILE_BWD, "fa4_sm80_bwd_main", {NULL}, NULL, fa4__aux_fx_wanted, 0},
    /* spill fallback levels: bwd_consumer.cuh. Level 0 is kept up to a 192-byte stack frame (no
     * speculative level 1 either): with the ptxas report read right (compiler.c, 720dcc3) some
     * score_mods' level-0 consumers spill (bytes stored / loaded, frame; NVRTC 13, bf16): alibi
     * 22 / 16, 16; head_scale 16 / 16, 16; rel_bias (not trainable) 8 / 8, 8; softcap 32 / 36,
     * 32; softcap_causal 44 / 48, 48; t5_bias 228 / 232, 168 at D 128; t5_bias 8 / 8, 8 at D 64
     * and D 256; and level 0 measured faster than the clean fallbacks.
     * H200, 2026-12-03 14:49 UTC, B4 H16 S4096 bf16, bwd TFLOP/s, one build (974122c), the process
     * that compiled (fallback kept) against the next one (NVRTC's compute cache served level 0
     * without a report, so no fallback ran): alibi 406.4 (level 1) / 481.1 (level 0), softcap
     * 329.0 / 343.1, t5_bias 207.3 (level 2) / 251.5, t5_bias D 256 253.0 (level 1) / 271.3.
     * Main a7e2cbe, whose parser read these builds as clean, kept level 0 too: 493.9 / 342.8. */
    {"bwd_main90", "sm90/bwd_main.cu", FA4_COMPILE_BWD, "fa4_sm90_bwd_main",
     {"-DFA4_SM90_BWD_FALLBACK=1", "-DFA4_SM90_BWD_FALLBACK=2"}, NULL, NULL, 192},
    {"bwd_main90fx", "sm90/bwd_main_fx.cu", FA4_COMPILE_BWD, "fa4_sm90_bwd_main",
     {"-DFA4_SM90_BWD_FALLBACK=1", "-DFA4_SM90_BWD_FALLBACK=2"}, NULL, fa4__aux_fx_wanted, 192},
    /* the same main with 80-query steps (bwd_main80.cu), only where bwd80_wanted; where it spills,
     * the fallback is a stub (bwd80_built: the launcher runs bwd_main90 instead) */
    {"bwd_main90m80", "sm90/bwd_main80.cu", FA4_COMPILE_BWD, "fa4_sm90_bwd_main", {"-DFA4_SM90_BWD80_OFF=1"}, NULL,
     bwd80_wanted, 0},
    /* the 80-query main for GQA split by query head (bwd_main80s.cu, bwd_split_asked), where the 80 main
     * is compiled and the spec asks for FA4_COMPILE_GQA; a stub where it spills (bwd80_built) */
    {"bwd_main90m80s", "sm90/bwd_main80s.cu", FA4_COMPILE_BWD, "fa4_sm90_bwd_main", {"-DFA4_SM90_BWD80_OFF=1"}, NULL,
     bwd80s_wanted, 0},
    {"bwd_post", "sm80/bwd_post.cu", FA4_COMPILE_BWD, "fa4_sm80_bwd_post", {NULL}, NULL, NULL, 0},
    {"block_mask", "sm80/block_mask.cu", FA4_COMPILE_BLOCK_MASK, "fa4_sm80_block_mask_eval", {NULL}, NULL, NULL, 0},
};

static int pad64(int d)
{
    return (d + 63) / 64 * 64;
}

/* Keys per step, as config.cuh's kN. */
static int fwd_n(int d, int dv)
{
    return pad64(d) <= 128 && pad64(dv) <= 128 ? 128 : 64;
}

/* Alignment slack, Q, the K/V ring (3 stages where they fit, as config.cuh), barriers; with three
 * consumers 192 query rows and the consumer warps' stash (config.cuh's FA4_SM90_STASH_BYTES), with
 * two the relative form's tables (FA4_SM90_RELT_BYTES; reserved for every forward, used by the
 * kernels of mods with the form); then the block of ones of FA4_SM90_ROWSUM_MMA (256 bytes, reserved
 * for every forward). */
static int fwd_smem_c(int d, int dv, int consumers)
{
    const int n = fwd_n(d, dv), m = consumers == 3 ? 192 : FWD_M, bar = 256 + (consumers == 3 ? 768 : 1536) + 256;
    const int three = 1024 + m * pad64(d) * 2 + 3 * n * (pad64(d) + pad64(dv)) * 2 + bar;
    return three <= SMEM_LIMIT ? three : 1024 + m * pad64(d) * 2 + 2 * n * (pad64(d) + pad64(dv)) * 2 + bar;
}

static int fwd_smem(int d, int dv)
{
    return fwd_smem_c(d, dv, 2);
}

/* FA4JIT_SM90_FWD64_CONSUMERS=3 or 2, an A/B switch read at each compile (0 when unset): with 3
 * the forward at padded D = Dv = 64 is built with three consumer warpgroups and the overlap
 * (config.cuh), with 2 with two; unset, plain attention (no mod source) takes three and every mod
 * two (measured on the H200, 2026-12-02: plain +4%, causal with a block mask -11%). The launch
 * follows the kernel's own thread bound, so builds of either kind launch right. The build's
 * options are part of the cache key; the switch's value, where set, too (compile.c). */
int fa4__sm90_fwd64_consumers(void)
{
    const char *e = getenv("FA4JIT_SM90_FWD64_CONSUMERS");
    if (!e || !e[0])
        return 0;
    return e[0] == '3' && !e[1] ? 3 : 2;
}

static int fwd64_three(const fa4_kernel_spec *spec)
{
    const int sw = fa4__sm90_fwd64_consumers();
    if (pad64(spec->head_dim) != 64 || pad64(head_dim_v(spec)) != 64)
        return 0;
    return sw == 3 || (sw == 0 && (!spec->source || !spec->source[0]));
}

/* The sm90 backward main (src/kernels/sm90/bwd_config.cuh): 128 keys per CTA, 64 query rows per
 * step, 384 threads; K, V, two dS buffers, the dQ staging tiles, with trainable aux the 32 KB
 * aux-gradient window, then 3 stages of (Q, dO, lse2 + dpsum) where they fit. */
enum { BWD_N = 128, BWD_M = 64, BWD_THREADS = 384, BWD_MAX_DIM = 128 };

static int bwd_smem_m(int d, int dv, int trainable, int m)
{
    const int fixed = 1024 + BWD_N * pad64(d) * 2 + BWD_N * pad64(dv) * 2 + 2 * m * BWD_N * 2 +
                      (pad64(d) / 64) * m * 64 * 4 /* dQ staging */ + 512 +
                      (trainable ? 32768 : 0) /* the aux-gradient window */;
    const int stage = m * pad64(d) * 2 + m * pad64(dv) * 2 + 2 * ((m * 4 + 127) / 128 * 128) /* lse2, dpsum */;
    return fixed + (fixed + 3 * stage <= SMEM_LIMIT ? 3 : 2) * stage;
}

static int bwd_smem(int d, int dv, int trainable)
{
    return bwd_smem_m(d, dv, trainable, BWD_M);
}

/* The 80-query-step main (bwd_main90m80: src/kernels/sm90/bwd_main80.cu): compiled for padded
 * D = Dv = 128 without score_mod, unchecked (with a mask_mod too, session 9); where a mod's build
 * spills or serializes wgmma, its spill fallback -DFA4_SM90_BWD80_OFF=1 compiles a stub (thread
 * bound 32: bwd80_built), and the launcher runs bwd_main90 there. Run for dense calls
 * (deterministic ones too: bwd_det80) and block-masked ones (through the step table of
 * bwd_steps80.cuh, bwd80_table_bytes; deterministic ones where bwd80_table_bytes allows, with the
 * turn byte of fa4_sm90_bwd_turns80: bwd_det80_bm). 2 stages of Q / dO:
 * 232448 bytes. FA4JIT_SM90_BWD_BM=64 or 80 picks the main where both
 * apply (A/B); unset: BWD80_DEFAULT. H200 bf16 B4 H16 D128 bwd, same call (2026-12-02 14:49 UTC,
 * two rounds): S4096 497.7 / 497.2 -> 542.5 / 539.3 TFLOP/s, S8192 478.4 / 469.3 -> 520.9 / 527.0
 * (notes/sm90-bwd.md, session 8). */
enum { BWD80_M = 80, BWD80_DEFAULT = 1 };
/* The default with a block mask (FA4JIT_SM90_BWD_BM unset): notes/sm90-bwd.md, session 9. */
enum { BWD80_BM_DEFAULT = 1 };

static int bwd80_wanted(const fa4_kernel_spec *spec, const fa4__mod *mod)
{
    return pad64(spec->head_dim) == 128 && pad64(head_dim_v(spec)) == 128 && !(spec->flags & FA4_COMPILE_CHECKED) &&
           !(mod && fa4__mod_has_score(mod));
}

/* The GQA program: only for specs with FA4_COMPILE_GQA, since it costs every cold compile about 1.1 s
 * of NVRTC CPU time (notes/compile-time.md, sessions 19 and 20); without it a GQA backward runs the
 * group's heads in one CTA on bwd_main90m80 (the launcher asks bwd80_built) */
static int bwd80s_wanted(const fa4_kernel_spec *spec, const fa4__mod *mod)
{
    return (spec->flags & FA4_COMPILE_GQA) && bwd80_wanted(spec, mod);
}

static int64_t cdiv(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* FA4JIT_SM90_BWD80_HEADS_INNER, read at every call: block-masked GQA with one mask for every head on
 * the 80-query main walks the group's heads innermost (pr.deterministic's FA4_DET_HEADS_INNER;
 * bwd_schedule.cuh fa4_bwd_heads_inner80): deterministic calls always (they then take the 80 main,
 * bwd80_table_bytes), default-mode ones in key tiles with a long enough walk. On unless set to 0
 * (A/B; deterministic GQA then goes back to the 64 main). notes/sm90-bwd.md, sessions 18 and 19. */
static int bwd80_heads_inner(void)
{
    const char *e = getenv("FA4JIT_SM90_BWD80_HEADS_INNER");
    return !(e && *e && atoi(e) == 0);
}

/* FA4JIT_SM90_BWD80_DESC, read at every call: the default mode's 80-query block-mask steps walked
 * from the last down, as the deterministic mode's are. Default: GQA only (hq > hkv), where it
 * measured faster (H100 2026-12-06, B2 H32/4 S4096 D128 bwd: causal 2.048 / 2.106 -> 1.930 / 1.948
 * ms head by head, document 1.156 / 1.150 -> 1.138 / 1.126), and the heads-inner walk needs it;
 * with one kv head per query head it measured even (B4 H16 causal 1.490 / 1.482 -> 1.492 / 1.487,
 * B8 document 1.829 / 1.838 -> 1.835 / 1.825, prefix-LM 3.340 / 3.322 -> 3.363 / 3.387). 1: every
 * block-masked call; 0: none (A/B). */
static int bwd80_desc(const fa4__problem *p)
{
    const char *e = getenv("FA4JIT_SM90_BWD80_DESC");
    if (e && *e)
        return atoi(e) == 1;
    return p->hq > p->hkv;
}

/* The deterministic turn kernel's shared memory (bwd_steps80.cuh fa4_sm90_bwd_turns80): a word of
 * kv-block bits per 32 kv blocks for each 80-row tile of the mask's rows. */
static int64_t bwd80_turns_smem(const fa4__problem *p)
{
    return cdiv((int64_t)p->bm.num_q_blocks * p->bm.q_block, BWD80_M) * ((p->bm.num_kv_blocks + 31) / 32) * 4;
}

/* The 80-query main's step table with a block mask (bwd_schedule.cuh fa4_bwd_steps_row): per (mask
 * batch, mask head, kv block) 2 + 2 nq (q_block / 64 + 1) ints, after dq_accum's first slot (the
 * table's address in the kernel: dq_accum + that slot, 256-aligned). Its bytes; 0 where the 80 main
 * cannot run the call (then bwd_main90 does): not a block mask, another head dim, a checked build,
 * block sizes the sm90 backward does not take, marks over 48 KB of shared memory, and
 * - not deterministic: a table over an eighth of dq_accum (per-head masks of very long sequences);
 *   it comes after the workspace's sm80 layout (sm90_bwd_workspace adds its bytes);
 * - deterministic (notes/sm90-bwd.md, session 18): q_block not a multiple of 128 (two runs of a kv
 *   block could then meet in one 80-row tile), varlen queries (steps past the sequence take no
 *   turn, and the lists may be shared by entries of other lengths), GQA groups with a mask per head
 *   or FA4JIT_SM90_BWD80_HEADS_INNER=0 (head by head, key tile n + 1 would wait for key tile n at
 *   every head after the first; the 64 main walks the heads innermost there), over 256 key tiles (a turn is a byte of the step's info), the turn kernel's
 *   bits (a word a tile per 32 kv blocks) over 48 KB, or a table that does not fit dq_accum's
 *   slots past the first (the deterministic sm90 main adds into the first only; no bytes are
 *   added to the workspace).
 * Independent of FA4JIT_SM90_BWD_BM and FA4JIT_SM90_BWD_DET80_BM, so the workspace size does not
 * change with them. */
static int bwd80_built(fa4_kernel *k, const char *prog);
static size_t bwd80_table_bytes(const fa4_kernel *k, const fa4__problem *p, const fa4__bwd_ws *w)
{
    if (!p->has_block_mask || pad64(p->head_dim) != 128 || pad64(p->head_dim_v) != 128 ||
        (k->spec.flags & FA4_COMPILE_CHECKED) || p->bm.q_block <= 0 || p->bm.q_block % BWD_M ||
        p->bm.kv_block % BWD_N || p->bm.num_q_blocks > 48 * 1024)
        return 0;
    const size_t rows = (size_t)p->bm.batch * (size_t)p->bm.heads * (size_t)p->bm.num_kv_blocks;
    const size_t stride = 2 + 2 * (size_t)p->bm.num_q_blocks * (size_t)(p->bm.q_block / 64 + 1);
    const size_t bytes = rows * stride * 4;
    const size_t slot = (size_t)p->hq * (size_t)w->rows * (size_t)p->head_dim * 4;
    if (!p->deterministic)
        return bytes <= w->slots * slot / 8 ? bytes : 0;
    if (p->bm.q_block % 128 || p->cu_seqlens_q ||
        (p->hq != p->hkv &&
         !(p->bm.heads == 1 && bwd80_heads_inner() && bwd80_built((fa4_kernel *)k, "bwd_main90m80s"))) ||
        (int64_t)(p->bm.num_kv_blocks - 1) * (p->bm.kv_block / BWD_N) > 255 || bwd80_turns_smem(p) > 48 * 1024)
        return 0;
    const size_t first = (slot + 255) & ~(size_t)255, all = (w->slots * slot + 255) & ~(size_t)255;
    return first + bytes <= all ? bytes : 0;
}

/* The default mode's step table (bwd80_table_bytes), which sits after the workspace's sm80 layout;
 * deterministic calls keep theirs in dq_accum's slots: 0 */
static size_t bwd_table_bytes_nondet(const fa4_kernel *k, const fa4__problem *p, const fa4__bwd_ws *w)
{
    return p->deterministic ? 0 : bwd80_table_bytes(k, p, w);
}

/* Whether bwd_main90m80 (or bwd_main90m80s) holds the 80-query main: its spill fallback's stub has
 * a thread bound of 32 (bwd_main.cu FA4_SM90_BWD80_OFF). */
static int bwd80_built(fa4_kernel *k, const char *prog)
{
    CUfunction f = fa4__kernel_function(k, prog, "fa4_sm90_bwd_main");
    int n = 0;
    return f && k->ctx->cu->funcGetAttribute(&n, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f) == CUDA_SUCCESS &&
           n >= BWD_THREADS;
}

static pthread_once_t g_bwd_bm_once = PTHREAD_ONCE_INIT;
/* dense calls without mask_mod, block-masked calls, dense calls with a mask_mod (every step
 * checked: never timed on the 80 main, so 64 unless FA4JIT_SM90_BWD_BM=80) */
static int g_bwd_bm80, g_bwd_bm80_bm, g_bwd_bm80_dense_mask;

static void read_bwd_bm_env(void)
{
    const char *e = getenv("FA4JIT_SM90_BWD_BM");
    g_bwd_bm80 = e && e[0] ? atoi(e) == 80 : BWD80_DEFAULT;
    g_bwd_bm80_bm = e && e[0] ? atoi(e) == 80 : BWD80_BM_DEFAULT;
    g_bwd_bm80_dense_mask = e && e[0] ? atoi(e) == 80 : 0;
}

/* The padded-D 256 backward main (src/kernels/sm90/bwd256.cuh, compiled as bwd_main90 where D and
 * Dv pad to 256 and the build is not checked): 64 keys per CTA; K, V, two
 * stages of (Q, dO, lse2 + dpsum), two P^T and two dS^T tiles. FA4JIT_SM90_BWD256=0 runs the sm80
 * backward there instead (A/B). */
enum { BWD256_N = 64 };

static int bwd256_spec(int d, int dv, unsigned flags)
{
    return pad64(d) == 256 && pad64(dv) == 256 && !(flags & FA4_COMPILE_CHECKED);
}

static int bwd256_smem(void)
{
    return 1024 + 2 * BWD256_N * 256 * 2 + 2 * (2 * BWD_M * 256 * 2 + 2 * BWD_M * 4) + 4 * BWD256_N * BWD_M * 2 + 512;
}

/* GQA split by query head (params.h kv_split): default-mode GQA backward mains (not D 256, whose
 * main keeps its own walk; not checked builds, which run the sm80 backward) walk one query head per
 * CTA, as attention without groups does, and add dK, dV into an fp32 accumulator per kv head
 * (dkv_accum, zeroed before bwd_pre; red.global.add.v2.f32 from the epilogue's registers), which
 * bwd_post's fa4_bwd_post_dkv converts. The group's heads in one CTA made walks 8 times as long in
 * 8 times fewer CTAs (their tail, and L2 reuse only as far as the CTAs of a kv head kept in step).
 * H100 2026-12-06 08:48-08:50 UTC (notes/sm90-bwd.md session 19), bf16 S4096 D128 bwd ms, two
 * rounds, head-inner walks as the default then against split: GQA 32:4 causal B8 7.481 / 7.471 ->
 * 6.285 / 6.347, B2 1.546 / 1.543 -> 1.566 / 1.570, document 1.206 / 1.210 -> 1.065 / 1.064
 * (eight heads interleaved: 1.041 / 1.037), window 1024 0.939 / 0.939 -> 0.981 / 0.981, prefix-LM
 * 1.680 / 1.683 -> 1.693 / 1.698 (1.656 / 1.656); bench/run.py GQA 32:4 B8 f+b 407 -> 489
 * TFLOP/s (cuDNN 512), GQA 8:1 446 -> 481 (cuDNN 486). FA4JIT_SM90_BWD_SPLIT, read at every
 * call: 0 off (A/B). Whether the call asks for it; the split also needs bwd_main90m80s built (the
 * workspace checks) and chosen (the launch). */
static int bwd_split_asked(const fa4_kernel *k, const fa4__problem *p)
{
    const char *e = getenv("FA4JIT_SM90_BWD_SPLIT");
    const int on = !(e && *e && atoi(e) == 0);
    return on && !p->deterministic && p->hq > p->hkv && p->hkv > 0 && pad64(p->head_dim) == 128 &&
           pad64(p->head_dim_v) == 128 && !(k->spec.flags & FA4_COMPILE_CHECKED);
}

/* Query heads per CTA of the split (params.h group; kv_split = the group over it), walked as an
 * unsplit group is (heads inner on long walks over descending steps): with N heads a CTA, 1 / N of
 * the CTAs, of the K, V loads and of the dK, dV adds. 2 unless mask_mod reads a tensor (no mask,
 * causal, sliding window: walks whose lengths follow from the positions), 1 where it does.
 * H100 2026-12-06 (notes/sm90-bwd.md session 20; bench/results/2026-12-06-h100-s20-split-heads.txt),
 * GQA 32:4 S4096 D128 bf16 bwd ms, same calls, 1 -> 2 heads: causal B2 1.554 / 1.544 / 1.556 ->
 * 1.463 / 1.473 / 1.463, window 1024 0.969 / 0.976 / 0.978 -> 0.932 / 0.931 / 0.936, causal B8
 * 6.317 / 6.015 / 6.275 -> 5.721 / 6.200 / 6.069; bench/run.py B8 f+b TFLOP/s GQA 32:4 493 -> 511
 * (cuDNN 506 / 505), 8:1 478 -> 497 (cuDNN 491 / 490); but document 1.019 / 1.018 -> 1.058 / 1.053
 * and prefix-LM 1.624 / 1.627 -> 1.672 / 1.664 (both read a tensor: doc ids, prefix lengths),
 * 4 heads: causal B2 1.770; without a mask (B2, three rounds) 2.656 / 2.660 / 2.646 -> 2.569 /
 * 2.579 / 2.579. FA4JIT_SM90_BWD_SPLIT_HEADS=N, read at every call (A/B): N where it divides the
 * group. */
static int bwd_split_heads(const fa4_kernel *k, const fa4__problem *p)
{
    const int g = p->hkv > 0 ? p->hq / p->hkv : 1;
    const char *e = getenv("FA4JIT_SM90_BWD_SPLIT_HEADS");
    int n = 1;
    if (e && *e) {
        n = atoi(e);
    } else {
        n = 2; /* the GQA program has no score_mod: any tensor is mask_mod's */
        for (int i = 0; k->mod && i < fa4__mod_num_aux(k->mod); i++)
            if (fa4__mod_aux(k->mod, i)->is_tensor)
                n = 1;
    }
    return n > 1 && n < g && g % n == 0 ? n : 1;
}

/* dkv_accum's rows per kv head, its bytes, and where it starts: after the workspace's other parts
 * (the sm80 layout, then the default mode's step table), 256-byte aligned */
static int64_t bwd_split_rows(const fa4__problem *p)
{
    return p->cu_seqlens_k ? p->total_k : (int64_t)p->batch * p->seqlen_k;
}

static size_t bwd_split_bytes(const fa4__problem *p)
{
    return (size_t)p->hkv * (size_t)bwd_split_rows(p) * (size_t)(p->head_dim + p->head_dim_v) * 4;
}

static size_t bwd_split_offset(const fa4_kernel *k, const fa4__problem *p, const fa4__bwd_ws *w)
{
    return (w->total + bwd_table_bytes_nondet(k, p, w) + 255) & ~(size_t)255;
}

static int bwd256_enabled(void)
{
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("FA4JIT_SM90_BWD256");
        on = !(e && e[0] == '0');
    }
    return on;
}

/* FA4JIT_SM90_BWD256_DQ=red|tma|tma2, read at each compile (A/B): how the padded-D 256 backward
 * adds dQ into the workspace (bwd256.cuh FA4_SM90_BWD256_DQ_TMA 0, 1, 2); unset or anything else:
 * the kernel's default (red). Only a set value adds an option (and so a key line, compile.c
 * key_inputs): other builds, and D 256 without it, compile and key exactly as before. */
static int bwd256_dq_variant(void)
{
    const char *e = getenv("FA4JIT_SM90_BWD256_DQ");
    if (!e)
        return -1;
    if (strcmp(e, "red") == 0)
        return 0;
    if (strcmp(e, "tma") == 0)
        return 1;
    if (strcmp(e, "tma2") == 0)
        return 2;
    return -1;
}

/* FA4JIT_SM90_FWD_STG128 and FA4JIT_SM90_FWD_NEXT_EARLY, A/B switches of the forward's tile
 * boundary read at each compile (config.cuh's FA4_SM90_FWD_STG128, FA4_SM90_FWD_NEXT_EARLY;
 * notes/issue8-fwd-overlap.md, session 9): "1" sets the knob, "0" clears it (STG128 "2": 8-byte
 * stores), unset (or anything else) leaves the kernel's default and adds no option, so other
 * builds key as before. A set value becomes an option of specs with a forward (every program of
 * the spec compiles with it; only fwd.cu reads it), and so part of the cache key (compile.c's
 * key inputs; the raw key hashes the variables' values). */
static int fwd_switch(const char *name, char top)
{
    const char *e = getenv(name);
    if (!e || e[0] < '0' || e[0] > top || e[1])
        return -1;
    return e[0] - '0';
}

static int bwd_dq_fused_env(void);
/* the fused dQ conversion's build option (bwd_config.cuh FA4_SM90_BWD_DQ_FUSED_BUILD) */
#define BWD_DQ_FUSED_OPTION "-DFA4_SM90_BWD_DQ_FUSED_BUILD=1"

/* FA4JIT_SM90_BWD_PERSIST, read once (opt-in, session 35): 1 or 2, the 80-query program also
 * holds the persistent main (bwd_main.cu FA4_SM90_BWD_PERSIST, fa4_sm90_bwd_main_persist), which
 * sm90_launch_bwd runs where the program has it (bwd_persist_fn): with 1 over at least 4 waves of
 * CTAs, with 2 (for tests) at any size. FA4JIT_SM90_BWD_PERSIST_GRID=N (for tests): at most N CTAs,
 * so that each takes many items. Its cubins differ, so the cache keys do. */
static int g_bwd_persist = -1, g_bwd_persist_grid;
static void read_bwd_persist_env(void)
{
    const char *e = getenv("FA4JIT_SM90_BWD_PERSIST");
    g_bwd_persist = e && (!strcmp(e, "1") || !strcmp(e, "2")) ? e[0] - '0' : 0;
    e = getenv("FA4JIT_SM90_BWD_PERSIST_GRID");
    g_bwd_persist_grid = e && *e ? atoi(e) : 0;
}
static pthread_once_t g_bwd_persist_once = PTHREAD_ONCE_INIT;
static int bwd_persist_env(void)
{
    pthread_once(&g_bwd_persist_once, read_bwd_persist_env);
    return g_bwd_persist;
}
static int sm90_options(const fa4_kernel_spec *spec, const char *arch, char opts[][64], int max)
{
    (void)arch;
    int n = 0;
    if (max < 1)
        return 0;
    snprintf(opts[n++], 64, "-DFA4_PATH_SM90=1");
    const int dq = bwd256_dq_variant();
    if (dq >= 0 && n < max && (spec->flags & FA4_COMPILE_BWD) &&
        bwd256_spec(spec->head_dim, head_dim_v(spec), spec->flags))
        snprintf(opts[n++], 64, "-DFA4_SM90_BWD256_DQ_TMA=%d", dq);
    if (bwd_dq_fused_env() && n < max && (spec->flags & FA4_COMPILE_BWD))
        snprintf(opts[n++], 64, "%s", BWD_DQ_FUSED_OPTION);
    if (bwd_persist_env() && n < max && (spec->flags & FA4_COMPILE_BWD))
        snprintf(opts[n++], 64, "-DFA4_SM90_BWD_PERSIST=1");
    if (n + 2 <= max && fwd64_three(spec)) {
        snprintf(opts[n++], 64, "-DFA4_SM90_FWD64_CONSUMERS=3");
        snprintf(opts[n++], 64, "-DFA4_SM90_FWD_THREADS_FROM_KERNEL=1");
    }
    static const char *const fwd_knobs[2][2] = {{"FA4JIT_SM90_FWD_STG128", "FA4_SM90_FWD_STG128"},
                                                {"FA4JIT_SM90_FWD_NEXT_EARLY", "FA4_SM90_FWD_NEXT_EARLY"}};
    for (int i = 0; i < 2; i++) {
        const int v = fwd_switch(fwd_knobs[i][0], i == 0 ? '2' : '1');
        if (v >= 0 && n < max && (spec->flags & FA4_COMPILE_FWD))
            snprintf(opts[n++], 64, "-D%s=%d", fwd_knobs[i][1], v);
    }
    /* FA4JIT_SM90_FWD_MASK_ROLL=N (1-8; softmax.cuh's FA4_SM90_MASK_ROLL, which is on where defined
     * at all): a mask_mod evaluated in a loop unrolled N times instead of at all 64 positions of a
     * fragment (forward code and cold compile a third smaller for document, longformer,
     * dilated_window; but slower at run time: N 4 on the H100, 2026-12-07, document's forward
     * 322 -> 267 TFLOP/s, sliding window 489 -> 435); 0 or unset: the default build. */
    const int roll = fwd_switch("FA4JIT_SM90_FWD_MASK_ROLL", '8');
    if (roll > 0 && n < max && (spec->flags & FA4_COMPILE_FWD))
        snprintf(opts[n++], 64, "-DFA4_SM90_MASK_ROLL=%d", roll);
    return n;
}

static int sm90_smem_bytes(const fa4_kernel_spec *spec, const char *program)
{
    if (strcmp(program, "fwd") == 0)
        return fwd_smem(spec->head_dim, head_dim_v(spec));
    const int main90 = strcmp(program, "bwd_main90") == 0 || strcmp(program, "bwd_main90fx") == 0;
    if (main90 && bwd256_spec(spec->head_dim, head_dim_v(spec), spec->flags))
        return bwd256_smem();
    if (strcmp(program, "bwd_main90m80") == 0 || strcmp(program, "bwd_main90m80s") == 0)
        return bwd_smem_m(spec->head_dim, head_dim_v(spec), 0, BWD80_M);
    if (main90)
        return pad64(spec->head_dim) <= BWD_MAX_DIM && pad64(head_dim_v(spec)) <= BWD_MAX_DIM &&
                       !(spec->flags & FA4_COMPILE_CHECKED)
                   ? bwd_smem(spec->head_dim, head_dim_v(spec), spec->num_trainable_aux > 0)
                   : 0;
    return fa4__sm80_ops.smem_bytes(spec, program);
}

/* launch.c has checked everything common to the paths (shapes, head dims, Hq % Hkv, lengths,
 * 16-byte alignment, block-mask shape and lists, no block mask with varlen); what is left is this
 * path's tile geometry. */
static fa4_status check_problem(fa4_kernel *k, const fa4__problem *p)
{
    const int n = fwd_n(p->head_dim, p->head_dim_v);
    if (p->has_block_mask) {
        const fa4_block_mask *bm = &p->bm;
        if (bm->q_block % FWD_M || (bm->kv_block >= n && bm->kv_block % n))
            return fa4__set_error(k->ctx, FA4_ERR_UNSUPPORTED,
                                  "sm90: block mask block sizes %dx%d: q_block must be a multiple of %d, "
                                  "kv_block a multiple of %d or smaller than it",
                                  bm->q_block, bm->kv_block, FWD_M, n);
    }
    return FA4_OK;
}


/* A 4-d tensor map (dim, row, head, batch) over a 16-bit tensor, boxes of 64 x box_rows. Strides of
 * dimensions of size 1 are never used by the copy engine but must still be legal. */
static fa4_status make_map(fa4_ctx *ctx, CUtensorMap *map, const char *what, const fa4__tview *t,
                           fa4_dtype dtype, int d, int64_t rows, int heads, int batch, int box_rows)
{
    cuuint64_t dims[4], strides[3];
    cuuint32_t box[4] = {BOX_COLS, (cuuint32_t)box_rows, 1, 1}, estr[4] = {1, 1, 1, 1};
    int64_t st[3] = {t->ss, t->sh, t->sb};
    const int64_t size[3] = {rows, heads, batch};
    CUresult r;
    dims[0] = (cuuint64_t)d;
    for (int i = 0; i < 3; i++) {
        dims[i + 1] = (cuuint64_t)(size[i] > 0 ? size[i] : 1);
        if (size[i] <= 1 || st[i] == 0)
            st[i] = st[i] > 0 ? st[i] : 8; /* unused: any multiple of 16 bytes */
        if (st[i] < 0 || (st[i] * 2) % 16 || st[i] * 2 >= ((int64_t)1 << 40))
            return fa4__set_error(ctx, FA4_ERR_ALIGNMENT,
                                  "sm90: %s strides must be positive multiples of 16 bytes for TMA", what);
        strides[i] = (cuuint64_t)(st[i] * 2);
    }
    if ((size[1] > 1 && t->sh == 0) || (size[2] > 1 && t->sb == 0 && batch > 1))
        return fa4__set_error(ctx, FA4_ERR_UNSUPPORTED, "sm90: %s has a zero (broadcast) stride", what);
    if ((uintptr_t)t->data % 16)
        return fa4__set_error(ctx, FA4_ERR_ALIGNMENT, "sm90: %s must be 16-byte aligned for TMA", what);
    r = ctx->cu->tensorMapEncodeTiled(map,
                                      dtype == FA4_DTYPE_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                              : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                                      4, t->data, dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        return fa4__cu_error(ctx, FA4_ERR_LAUNCH, r, what);
    return FA4_OK;
}

static const uint8_t zero_aux[FA4__AUX_BLOCK_MAX];

/* The dynamic schedule's workspace: the tile counter and the hoist count (in their own 256
 * bytes), then with a block mask the ranking of each mask row's query tiles (int32 [rows][query
 * tiles of 128 rows]). */
enum { SCHED_CTR_BYTES = 256 };

static size_t fwd_perm_bytes(const fa4__problem *p)
{
    if (!p->has_block_mask)
        return 0;
    const size_t rows = (size_t)p->bm.batch * (size_t)p->bm.heads;
    const size_t n = rows * (size_t)cdiv(p->seqlen_q, FWD_M) * sizeof(int32_t);
    return (n + 255) / 256 * 256;
}

/* ... then the relative form's bounds (softmax.cuh FA4_SM90_RELT_BOUNDS, fwd.cu fa4_sm90_rel_bounds):
 * int32 [batch][hq][4], reserved for every call (16 bytes a head and batch entry) so that the size
 * does not depend on which build runs; except for a build with FA4_SM90_RELT_GARR (its bounds
 * kernel is fa4_sm90_rel_bounds_g): records of 8 words, then per (batch, head) an array of g over
 * seqlen_q + seqlen_k + 127 + kN - 1 offsets (floats). */
static int fwd_garr(fa4_kernel *k)
{
    fa4_ctx *ctx = k->ctx;
    if (!fa4__mod_has_score(k->mod)) /* (the bounds kernels exist for relative-form score_mods only) */
        return 0;
    int pushed = ctx->cu_context && fa4__ctx_push(ctx) == FA4_OK;
    const int has = fa4__kernel_function(k, "fwd", "fa4_sm90_rel_bounds_g") != NULL;
    if (pushed)
        fa4__ctx_pop(ctx);
    return has;
}

static size_t fwd_garr_stride(const fa4__problem *p)
{
    return (size_t)p->seqlen_q + (size_t)p->seqlen_k + 127 + (size_t)fwd_n(p->head_dim, p->head_dim_v) - 1;
}

static size_t fwd_bounds_bytes(const fa4__problem *p, int garr)
{
    const size_t hb = (size_t)p->batch * (size_t)p->hq;
    const size_t rec = (hb * (garr ? 8 : 4) * sizeof(int32_t) + 255) / 256 * 256;
    return rec + (garr ? (hb * fwd_garr_stride(p) * sizeof(float) + 255) / 256 * 256 : 0);
}

static fa4_status sm90_fwd_workspace(fa4_kernel *k, const fa4__problem *p, size_t *bytes)
{
    *bytes = SCHED_CTR_BYTES + fwd_perm_bytes(p) + fwd_bounds_bytes(p, fwd_garr(k));
    return FA4_OK;
}

/* With a workspace and a build that has fa4_sm90_rel_bounds (FA4_SM90_RELT_BOUNDS), after the
 * schedule's preparation on the same stream: the bounds' words set to INT_MIN, then the kernel
 * (grid: batch x hq CTAs by chunks of 1024 offsets, 256 threads; an ordinary launch, so that the
 * order kernel has ended before it, and the forward's wait covers both). *rb: the bounds, or NULL
 * where nothing ran. */
static fa4_status bounds_prepare(fa4_kernel *k, const fa4__problem *p, fa4_params *pr, int **rb)
{
    fa4_ctx *ctx = k->ctx;
    const fa4__cu *cu = ctx->cu;
    *rb = NULL;
    if (!fa4__mod_has_score(k->mod)) /* no lookups for the kernels that cannot have one */
        return FA4_OK;
    CUfunction f = fa4__kernel_function(k, "fwd", "fa4_sm90_rel_bounds_g");
    const int garr = f != NULL;
    if (!f)
        f = fa4__kernel_function(k, "fwd", "fa4_sm90_rel_bounds");
    if (!f)
        return FA4_OK;
    const int64_t hb = (int64_t)p->batch * p->hq;
    const int64_t offsets = garr ? (int64_t)fwd_garr_stride(p) - 1 : (int64_t)p->seqlen_q + p->seqlen_k - 1;
    const int64_t chunks = (offsets + 1023) / 1024;
    if (hb <= 0 || offsets <= 0 || hb > INT32_MAX)
        return FA4_OK;
    int *b = (int *)((uint8_t *)p->workspace + SCHED_CTR_BYTES + fwd_perm_bytes(p));
    CUresult r = cu->memsetD32Async((CUdeviceptr)(uintptr_t)b, 0x80000000u, (size_t)hb * (garr ? 8 : 4), p->stream);
    if (r != CUDA_SUCCESS)
        return fa4__cu_error(ctx, FA4_ERR_LAUNCH, r, "cuMemsetD32Async(relative bounds)");
    void *args[3] = {pr, (void *)(p->aux_block ? p->aux_block : zero_aux), &b};
    r = fa4__cu_launch(cu, f, (unsigned)hb, (unsigned)(chunks < 65535 ? chunks : 65535), 1, 256, 0, p->stream,
                       args, 0);
    if (r != CUDA_SUCCESS)
        return fa4__cu_error(ctx, FA4_ERR_LAUNCH, r, "fa4_sm90_rel_bounds");
    *rb = b;
    return FA4_OK;
}

/* Before the forward, on its stream: the counter cleared, and with a block mask the weight ranking
 * and hoist count written (fa4_sm90_fwd_order, one CTA, which clears the counter too). Stream
 * order makes both visible to the forward (after the order kernel the forward is a programmatic
 * dependent launch: its producer waits for the order kernel before it reads the workspace), and a
 * later launch on the same stream cannot start before this one's forward ends. */
static fa4_status sched_prepare(fa4_kernel *k, const fa4__problem *p, fa4_params *pr, unsigned **ctr)
{
    fa4_ctx *ctx = k->ctx;
    const fa4__cu *cu = ctx->cu;
    CUresult r;
    *ctr = (unsigned *)p->workspace;
    if (!p->has_block_mask) {
        r = cu->memsetD32Async((CUdeviceptr)(uintptr_t)*ctr, 0, 1, p->stream);
        if (r != CUDA_SUCCESS)
            return fa4__cu_error(ctx, FA4_ERR_LAUNCH, r, "cuMemsetD32Async(tile counter)");
        return FA4_OK;
    }
    CUfunction f = fa4__kernel_function(k, "fwd", "fa4_sm90_fwd_order");
    if (!f)
        return fa4__set_error(ctx, FA4_ERR_WRONG_KERNEL, "sm90: the fwd program has no fa4_sm90_fwd_order");
    void *args[2] = {pr, ctr};
    r = fa4__cu_launch(cu, f, 1, 1, 1, 1024, 0, p->stream, args, 0);
    if (r != CUDA_SUCCESS)
        return fa4__cu_error(ctx, FA4_ERR_LAUNCH, r, "fwd_order");
    return FA4_OK;
}

fa4_status fa4__sm90_launch_fwd_ctas(fa4_kernel *k, const fa4__problem *p, int max_ctas)
{
    fa4_ctx *ctx = k->ctx;
    const fa4__cu *cu = ctx->cu;
    fa4_params pr;
    CUtensorMap mq, mk, mv;
    CUfunction f;
    CUresult r;
    void *args[7];
    unsigned *ctr = NULL;
    int *rb = NULL;
    const int varlen_q = p->cu_seqlens_q != NULL, varlen_k = p->cu_seqlens_k != NULL;
    const int n = fwd_n(p->head_dim, p->head_dim_v);
    int smem = fwd_smem(p->head_dim, p->head_dim_v), q_box = FWD_M, threads = FWD_THREADS;
    /* an upper bound with 192-row tiles: the kernel counts its own tiles and spare CTAs exit */
    const int64_t tiles = cdiv(p->seqlen_q, FWD_M) * p->hq * p->batch;
    int64_t ctas;
    fa4_status st = check_problem(k, p);
    if (st != FA4_OK)
        return st;
    if (!cu)
        return fa4__set_error(ctx, FA4_ERR_NO_DRIVER, "sm90: no CUDA driver");
    f = fa4__kernel_function(k, "fwd", "fa4_sm90_fwd");
    if (!f)
        return fa4__set_error(ctx, FA4_ERR_WRONG_KERNEL,
                              "sm90: program 'fwd' is not loaded (compile with FA4_COMPILE_FWD, on an "
                              "sm_90a device)");
    /* three consumer warpgroups (FA4JIT_SM90_FWD64_CONSUMERS=3 builds at D 64): 512 threads,
     * Q boxes of 64 rows (config.cuh's kQBox), 192-row tiles and the stash in shared memory */
    if (pad64(p->head_dim) == 64 && pad64(p->head_dim_v) == 64 && cu->funcGetAttribute) {
        if (cu->funcGetAttribute(&threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f) != CUDA_SUCCESS ||
            (threads != 384 && threads != 512))
            return fa4__set_error(ctx, FA4_ERR_WRONG_KERNEL, "sm90: a forward of %d threads", threads);
        if (threads == 512) {
            smem = fwd_smem_c(p->head_dim, p->head_dim_v, 3);
            q_box = 64;
        }
    }
    if (tiles == 0)
        return FA4_OK;
    ctas = max_ctas > 0 && tiles > max_ctas ? max_ctas : tiles;
    /* the dynamic schedule's counter runs past the last tile by up to the grid */
    if (tiles + ctas > INT32_MAX)
        return fa4__set_error(ctx, FA4_ERR_SHAPE, "sm90: too many tiles");

    st = make_map(ctx, &mq, "q", &p->q, p->dtype, p->head_dim, varlen_q ? p->total_q : p->seqlen_q, p->hq,
                  varlen_q ? 1 : p->batch, q_box);
    if (st == FA4_OK)
        st = make_map(ctx, &mk, "k", &p->k, p->dtype, p->head_dim, varlen_k ? p->total_k : p->seqlen_k,
                      p->hkv, varlen_k ? 1 : p->batch, n);
    if (st == FA4_OK)
        st = make_map(ctx, &mv, "v", &p->v, p->dtype, p->head_dim_v, varlen_k ? p->total_k : p->seqlen_k,
                      p->hkv, varlen_k ? 1 : p->batch, n);
    if (st != FA4_OK)
        return st;
    fa4__params_fill(&pr, p);

    if (smem > ctx->max_smem_optin && ctx->max_smem_optin > 0)
        return fa4__set_error(ctx, FA4_ERR_UNSUPPORTED,
                              "sm90: the forward needs %d bytes of shared memory, the device has %d", smem,
                              ctx->max_smem_optin);
    r = cu->funcSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem);
    if (r != CUDA_SUCCESS)
        return fa4__cu_error(ctx, FA4_ERR_LAUNCH, r, "cuFuncSetAttribute(max dynamic smem)");
    if (p->workspace && (st = sched_prepare(k, p, &pr, &ctr)) != FA4_OK)
        return st;
    if (p->workspace && (st = bounds_prepare(k, p, &pr, &rb)) != FA4_OK)
        return st;
    args[0] = &pr;
    args[1] = (void *)(p->aux_block ? p->aux_block : zero_aux);
    args[2] = &mq;
    args[3] = &mk;
    args[4] = &mv;
    args[5] = &ctr;
    args[6] = &rb; /* a build without the bounds has six parameters and reads no seventh */
    r = fa4__cu_launch(cu, f, (unsigned)ctas, 1, 1, (unsigned)threads, (unsigned)smem, p->stream, args,
                       p->workspace && (p->has_block_mask || rb));
    if (r != CUDA_SUCCESS)
        return fa4__cu_error(ctx, FA4_ERR_LAUNCH, r, "fwd");
    return FA4_OK;
}

/* Persistent: one CTA per SM (each holds most of an SM's shared memory). */
static fa4_status sm90_launch_fwd(fa4_kernel *k, const fa4__problem *p)
{
    return fa4__sm90_launch_fwd_ctas(k, p, k->ctx->sm_count > 0 ? k->ctx->sm_count : 132);
}

/* Deterministic mode: the sm80 layout (whose slots the sm80 backward needs where it runs instead)
 * plus the sm90 main's dQ turn counters, one int per (query head, 4 workspace rows, column half). */
static size_t sm90_dq_sem_bytes(const fa4__problem *p, const fa4__bwd_ws *w)
{
    return p->deterministic ? (size_t)p->hq * (size_t)(w->rows / 4) * 2 * sizeof(int) : 0;
}

/* ... and with a block mask, after the counters, the walk table (bwd_main.cu's fa4_sm90_bwd_rank):
 * rows [bm batch][bm heads][nkv] of nq q blocks, then their nq turns. */
static size_t sm90_dq_rank_bytes(const fa4__problem *p)
{
    return p->deterministic && p->has_block_mask
               ? 2 * (size_t)p->bm.batch * (size_t)p->bm.heads * (size_t)p->bm.num_kv_blocks *
                     (size_t)p->bm.num_q_blocks * sizeof(int)
               : 0;
}

/* The workspace before the fused conversion's counters. */
static size_t bwd_ws_bytes_base(fa4_kernel *k, const fa4__problem *p, const fa4__bwd_ws *w)
{
    /* deterministic: the step table lies in dq_accum's unused slots (bwd80_table_bytes) */
    size_t bytes = w->total + sm90_dq_sem_bytes(p, w) + sm90_dq_rank_bytes(p) + bwd_table_bytes_nondet(k, p, w);
    /* split GQA (never deterministic, so after the table): the dK / dV accumulator */
    if (bwd_split_asked(k, p) && bwd80_built(k, "bwd_main90m80s"))
        bytes = bwd_split_offset(k, p, w) + bwd_split_bytes(p);
    return bytes;
}

/* The fused dQ conversion's counters (params.h dq_cnt: one int per query head, 4 workspace rows and
 * column half, as the deterministic turn counters), last in the workspace of every default-mode
 * call under FA4JIT_SM90_BWD_DQ_FUSED=1 whether or not the call will use them (1/256 of dq_accum
 * at D 128): the size then does not depend on the walk. */
static size_t bwd_cnt_offset(fa4_kernel *k, const fa4__problem *p, const fa4__bwd_ws *w)
{
    return (bwd_ws_bytes_base(k, p, w) + 255) & ~(size_t)255;
}

static size_t bwd_cnt_bytes(const fa4__problem *p, const fa4__bwd_ws *w)
{
    return p->deterministic || !bwd_dq_fused_env() ? 0 : (size_t)p->hq * (size_t)(w->rows / 4) * 2 * sizeof(int);
}

/* The persistent 80-query main (bwd_main.cu fa4_sm90_bwd_main_persist) where the 80-query program
 * (not the GQA one) has it: built with FA4_SM90_BWD_PERSIST (FA4JIT_SM90_BWD_PERSIST). NULL
 * otherwise. */
static CUfunction bwd_persist_fn(fa4_kernel *k)
{
    return bwd80_built(k, "bwd_main90m80") ? fa4__kernel_function(k, "bwd_main90m80", "fa4_sm90_bwd_main_persist")
                                           : NULL;
}

/* Its work counter (params.h bwd_next): one int at a 256-byte boundary after everything else, in
 * every default-mode workspace at padded D 128 under FA4JIT_SM90_BWD_PERSIST where the program has
 * the persistent main (the size then does not depend on the launch's choice). */
static size_t bwd_next_offset(fa4_kernel *k, const fa4__problem *p, const fa4__bwd_ws *w)
{
    const size_t end = bwd_cnt_bytes(p, w) ? bwd_cnt_offset(k, p, w) + bwd_cnt_bytes(p, w) : bwd_ws_bytes_base(k, p, w);
    return (end + 255) & ~(size_t)255;
}

/* The persistent main where this problem's workspace has its counter, else NULL. */
static CUfunction bwd_next_fn(fa4_kernel *k, const fa4__problem *p)
{
    return !p->deterministic && bwd_persist_env() && pad64(p->head_dim) == 128 && pad64(p->head_dim_v) == 128
               ? bwd_persist_fn(k)
               : NULL;
}

static fa4_status sm90_bwd_workspace(fa4_kernel *k, const fa4__problem *p, size_t *bytes)
{
    fa4__bwd_ws w;
    fa4__sm80_bwd_layout(p, &w);
    *bytes = bwd_ws_bytes_base(k, p, &w);
    if (bwd_cnt_bytes(p, &w))
        *bytes = bwd_cnt_offset(k, p, &w) + bwd_cnt_bytes(p, &w);
    if (bwd_next_fn(k, p))
        *bytes = bwd_next_offset(k, p, &w) + sizeof(int);
    return FA4_OK;
}

/* FA4JIT_SM90_BWD_DQ_FUSED=1, read once (opt-in; its cubins differ, so the cache keys do:
 * sm90_options): the 80-query main converts dQ itself (bwd_config.cuh FA4_SM90_BWD_DQ_FUSED_BUILD,
 * bwd_consumer.cuh dq_fused_end) and bwd_post does not run. Correct (the full sm90 suite) but slower
 * than bwd_post on an H100 (causal 1.49 -> 2.17 ms, GQA 32:4 dense 2.60 -> 2.77; plain S8192 within
 * noise): notes/sm90-bwd.md, sessions 21 and 22. */
static int bwd_dq_fused_env(void)
{
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("FA4JIT_SM90_BWD_DQ_FUSED");
        on = e && *e && atoi(e) == 1;
    }
    return on;
}

/* Whether a default-mode call on the 80-query main converts dQ in the main kernel (bwd_consumer.cuh
 * FA4_SM90_BWD_DQ_FUSED; bwd_post does not run): dQ's address and strides in 8-byte units (the
 * conversion stores 4 elements at a time); with a block mask fixed-length queries, q_block a
 * multiple of 128 (at most one step of a kv block in an 80-row tile) and the count kernel's
 * shared memory under 48 KB. */
static int bwd_dq_fused(const fa4__problem *p)
{
    const size_t es = fa4_dtype_size(p->dtype);
    if (p->deterministic || !bwd_dq_fused_env() ||
        (((uintptr_t)p->dq.data | (uintptr_t)(p->dq.sb * (int64_t)es) | (uintptr_t)(p->dq.sh * (int64_t)es) |
          (uintptr_t)(p->dq.ss * (int64_t)es)) & 7u))
        return 0;
    return !p->has_block_mask ||
           (!p->cu_seqlens_q && p->bm.q_block % 128 == 0 && cdiv(p->seqlen_q, BWD80_M) * 4 <= 48 * 1024);
}

/* A 1-d fp32 tensor map over n floats (the lse2 / dpsum workspace arrays), boxes of m (the main's
 * query rows per step). */
static fa4_status make_map_1d(fa4_ctx *ctx, CUtensorMap *map, const char *what, float *data, int64_t n, int m)
{
    cuuint64_t dims[1] = {(cuuint64_t)(n > 0 ? n : 1)};
    cuuint64_t strides[1] = {0}; /* rank 1: none used */
    cuuint32_t box[1] = {(cuuint32_t)m}, estr[1] = {1};
    CUresult r = ctx->cu->tensorMapEncodeTiled(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 1, data, dims, strides, box,
                                               estr, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                                               CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        return fa4__cu_error(ctx, FA4_ERR_LAUNCH, r, what);
    return FA4_OK;
}

/* dq_accum as a 2-d fp32 tensor [rows][d] for the backward's bulk reduce-adds: boxes of m rows (the
 * main's query rows per step) by 32 columns (128 bytes), 128-byte swizzle. */
static fa4_status make_map_dq(fa4_ctx *ctx, CUtensorMap *map, float *data, int d, int64_t rows, int m)
{
    cuuint64_t dims[2] = {(cuuint64_t)d, (cuuint64_t)(rows > 0 ? rows : 1)};
    cuuint64_t strides[1] = {(cuuint64_t)d * 4};
    cuuint32_t box[2] = {32, (cuuint32_t)m}, estr[2] = {1, 1};
    CUresult r = ctx->cu->tensorMapEncodeTiled(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, data, dims, strides, box,
                                               estr, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                               CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        return fa4__cu_error(ctx, FA4_ERR_LAUNCH, r, "dq_accum");
    return FA4_OK;
}

/* FA4JIT_SM90_BWD_HEADS=G, for A/B measurements: the head-major backward grid with G heads
 * interleaved (G >= 2) or none (1) whatever the rule in sm90_launch_bwd says; unset or 0: the rule. */
static pthread_once_t g_bwd_heads_once = PTHREAD_ONCE_INIT;
static int g_bwd_heads_env;

static void read_bwd_heads_env(void)
{
    const char *e = getenv("FA4JIT_SM90_BWD_HEADS");
    g_bwd_heads_env = e ? atoi(e) : 0;
    if (g_bwd_heads_env < 0 || g_bwd_heads_env > 64)
        g_bwd_heads_env = 0;
}

/* FA4JIT_SM90_BWD_SLOWEST=1, read at every call (A/B, session 19): the key-tiles-slowest backward
 * grid (heaviest first) whatever the number of waves. */
static int bwd_slowest_env(void)
{
    const char *e = getenv("FA4JIT_SM90_BWD_SLOWEST");
    return e && *e && atoi(e) == 1;
}

/* FA4JIT_SM90_BWD_DET_ROTATE, read at every call (A/B): 0 the deterministic dense backward walks
 * every key tile's query tiles from tile 0 up (turn = key tile: CTA n waits for CTA n - 1 at every
 * tile), 1 rotated walks where a head's key tiles can all be resident, 2 rotated walks in the
 * largest groups of key tiles that can (sm90_launch_bwd). Unset: 1 where score_mod has a tile form
 * or a relative form without the affine one (rel_bias, t5_bias: a step costs more near the
 * diagonal, which every key tile meets at another step, and the ascending walk's turn chain hands
 * each CTA's slow steps on to the next), else 0 (plain, alibi: steps of equal cost).
 * H100 2026-12-06 03:47 UTC, bf16 B4 H16 S4096 D128 deterministic bwd TFLOP/s, 0 / 1 / 2: trainable
 * T5 149.8 / 243.2 / 239.2 (default mode 246.7), trainable relative bias 234.7 / 303.4 / 299.1
 * (default 309.7). Plain stays ascending: H200 2026-12-02 21:01 UTC, 3.887 / 3.866 ms ascending,
 * 3.859 / 3.840 rotated, S8192 14.22 / 14.27 -> 14.78 / 14.77, D64 B8 H8 2.70 -> 2.81
 * (notes/sm90-bwd.md, sessions 9 and 16). */
static int bwd_det_rotate(fa4_kernel *k)
{
    const char *e = getenv("FA4JIT_SM90_BWD_DET_ROTATE");
    if (e && *e) {
        const int v = atoi(e);
        return v >= 0 && v <= 2 ? v : 0;
    }
    int pref = atomic_load_explicit(&k->bwd_rot_pref, memory_order_relaxed);
    if (!pref) {
        int hoisted = 0, tile = 0, add = 0, affine = 0, rel = 0;
        /* not where the affine form runs (alibi: every step costs the same, as plain's) */
        const int forms = k->mod && fa4__mod_has_score(k->mod) &&
                          fa4__mod_forward_forms(k->mod, &hoisted, &tile, &add, &affine, &rel, NULL, NULL) == 0 &&
                          (tile || (rel && !affine));
        pref = forms ? 2 : 1;
        atomic_store_explicit(&k->bwd_rot_pref, pref, memory_order_relaxed);
    }
    return pref == 2 ? 1 : 0;
}

/* Deterministic block-masked calls take the 80-query main where bwd80_table_bytes allows (steps cut
 * at every 80-row tile and walked from the last down, one turn a step on the tile's counter,
 * fa4_sm90_bwd_turns80); FA4JIT_SM90_BWD_DET80_BM=0, read at every call, keeps them on the 64 main
 * (A/B). H100 2026-12-06, bf16 D128 S4096, deterministic bwd ms, 64 main / 80 main (1a0a864, same
 * call, 06:58 UTC): causal B4 H16 1.993 / 1.782, window 1024 1.161 / 1.044, document B8 2.545 /
 * 2.289, prefix-LM B8 4.420 / 3.754; ebe3f2c (07:08 UTC) 80 main against the default mode: causal
 * 1.735 / 1.487, window 1.018 / 0.930, document 2.250 / 1.815, prefix-LM 3.710 / 3.369, causal S8192
 * 6.480 / 5.135 (notes/sm90-bwd.md, session 18). */
static int bwd_det80_bm(void)
{
    const char *e = getenv("FA4JIT_SM90_BWD_DET80_BM");
    return !(e && *e && atoi(e) == 0);
}

/* Deterministic dense calls take the 80-query main (bwd_main80.cu) where non-deterministic ones do
 * (its turn counters sit at 80-row tile starts, which bwd_pre zeroes since session 9); block masks
 * keep the 64 main's walk table. FA4JIT_SM90_BWD_DET80=0, read at every call, keeps them on the 64
 * main (A/B). H200 bf16 B4 H16 D128 deterministic bwd, same call (2026-12-02 21:50 UTC, two rounds):
 * S4096 354.2 / 354.4 -> 396.9 / 399.3 TFLOP/s, S8192 386.5 / 384.0 -> 436.0 / 434.3; `--filter
 * determ` 34 / 34 bitwise repeatable and memcheck clean with it. */
static int bwd_det80(void)
{
    const char *e = getenv("FA4JIT_SM90_BWD_DET80");
    return !(e && *e && atoi(e) == 0);
}

/* Deterministic block-masked GQA calls on the 64-query main at D <= 128 of a kernel with a mask_mod
 * (the kernels compile the walk only there, bwd_schedule.cuh) whose mask is one for every head
 * (bm.heads 1) walk the group's heads innermost (FA4_DET_HEADS_INNER, bwd_schedule.cuh
 * fa4_bwd_heads_inner): the same turns, so the same dQ bits, in a walk where key tile n + 1 trails
 * key tile n by one link instead of waiting for it at every head after the first.
 * FA4JIT_SM90_BWD_DET_BM=0, read at every call, keeps the head-by-head order (A/B, and an escape
 * hatch). H200 bf16 B2 S4096 D128 deterministic bwd, same call (2026-12-03 14:25 UTC, two rounds):
 * GQA 32:4 causal (bm) 2.572 / 2.576 -> 1.916 / 1.918 ms, GQA 32:4 document (bm) 1.686 / 1.700 ->
 * 1.286 / 1.298 (notes/sm90-bwd.md, session 14). */
static int bwd_det_heads_inner(void)
{
    const char *e = getenv("FA4JIT_SM90_BWD_DET_BM");
    return !(e && *e && atoi(e) == 0);
}

/* sm80 bwd_pre (dpsum, lse2; dq_accum and the turn counters zeroed) -> [deterministic with a block
 * mask: fa4_sm90_bwd_rank] -> sm90 bwd_main (TMA, wgmma) -> sm80 bwd_post, each after the first a
 * programmatic dependent launch on the one before (the kernels' fa4_pdl_wait / fa4_pdl_launch:
 * bwd_main's CTAs start and load K and V while bwd_pre's last CTAs run, bwd_post's start on the
 * SMs bwd_main's last wave leaves). Padded D = Dv = 256 runs bwd256.cuh's main (64-key CTAs) in
 * the same chain. Falls back to the whole sm80 backward for other heads over 128, checked builds (bwd_main90 is an empty stub for these), block masks whose kv_block
 * is not a multiple of the CTA's keys (128, at D 256 64: a CTA's keys must lie in one block), and
 * FA4JIT_SM90_BWD256=0 at D 256. */
static fa4_status sm90_launch_bwd(fa4_kernel *k, const fa4__problem *p)
{
    fa4_ctx *ctx = k->ctx;
    const fa4__cu *cu = ctx->cu;
    fa4_params pr;
    CUtensorMap mq, mk, mv, mdo, ml, md, mdq;
    CUfunction f;
    CUresult r;
    void *args[9];
    const int varlen_q = p->cu_seqlens_q != NULL, varlen_k = p->cu_seqlens_k != NULL;
    fa4__bwd_ws w;
    const int d256 = bwd256_spec(p->head_dim, p->head_dim_v, k->spec.flags);
    const int bn = d256 ? BWD256_N : BWD_N;
    int smem = d256 ? bwd256_smem() : bwd_smem(p->head_dim, p->head_dim_v, k->spec.num_trainable_aux > 0);
    const char *main_prog = p->aux_fx ? "bwd_main90fx" : "bwd_main90";
    int bm = BWD_M;
    fa4_status st;

    if (((pad64(p->head_dim) > BWD_MAX_DIM || pad64(p->head_dim_v) > BWD_MAX_DIM) && !d256) ||
        (d256 && !bwd256_enabled()) ||
        (k->spec.flags & FA4_COMPILE_CHECKED) ||
        (p->has_block_mask && (p->bm.kv_block % bn || p->bm.q_block % BWD_M)) ||
        (p->deterministic && p->has_block_mask && (int64_t)p->bm.num_q_blocks * 8 > 227 * 1024) ||
        !fa4__kernel_function(k, main_prog, "fa4_sm90_bwd_main"))
        return fa4__sm80_ops.launch_bwd(k, p);
    /* the workspace (its size and alignment checked by launch.c) as the sm80 backward lays it out */
    fa4__sm80_bwd_layout(p, &w);
    pthread_once(&g_bwd_bm_once, read_bwd_bm_env);
    /* GQA takes the GQA program (bwd_main80s.cu: split by query head, the heads-inner walk) where
     * it was built; the 80 main otherwise */
    const int gqa80 = p->hq > p->hkv && bwd80_built(k, "bwd_main90m80s");
    const char *m80 = gqa80 ? "bwd_main90m80s" : "bwd_main90m80";
    if ((p->has_block_mask ? g_bwd_bm80_bm
                           : k->mod && fa4__mod_has_mask(k->mod) ? g_bwd_bm80_dense_mask : g_bwd_bm80) &&
        !d256 && (!p->deterministic || (bwd_det80() && (!p->has_block_mask || bwd_det80_bm()))) &&
        (!p->has_block_mask || bwd80_table_bytes(k, p, &w) > 0) &&
        (gqa80 || bwd80_built(k, m80))) {
        main_prog = m80;
        bm = BWD80_M;
        smem = bwd_smem_m(p->head_dim, p->head_dim_v, 0, BWD80_M);
    }
    st = check_problem(k, p);
    if (st != FA4_OK)
        return st;
    if (!cu)
        return fa4__set_error(ctx, FA4_ERR_NO_DRIVER, "sm90: no CUDA driver");
    if ((int64_t)p->hq * w.rows > INT32_MAX)
        return fa4__set_error(ctx, FA4_ERR_SHAPE, "sm90: Hq x query rows over 2^31 (lse2 map coordinates)");
    if (smem > ctx->max_smem_optin && ctx->max_smem_optin > 0)
        return fa4__set_error(ctx, FA4_ERR_UNSUPPORTED,
                              "sm90: the backward needs %d bytes of shared memory, the device has %d", smem,
                              ctx->max_smem_optin);
    fa4__params_fill(&pr, p);
    fa4__sm80_bwd_workspace_params(&pr, p, &w);
    /* deterministic: one dQ accumulator, added into in key-tile order (turn counters after the sm80
     * layout, zeroed by bwd_pre; with a block mask each tile's turn from the rank table after them) */
    if (p->deterministic) {
        pr.dq_slots = 1;
        pr.dq_sem = (int *)((uint8_t *)p->workspace + w.total);
        if (p->has_block_mask && p->bm.heads == 1 && p->hq > p->hkv && !d256 && bm == BWD_M && k->mod &&
            fa4__mod_has_mask(k->mod) && bwd_det_heads_inner())
            pr.deterministic |= FA4_DET_HEADS_INNER;
    }
    /* split GQA (bwd_split_asked): one query head per CTA, dK and dV into the accumulator; on the 80
     * main only (its program of its own, bwd_main80s.cu) */
    const int split = bm == BWD80_M && gqa80 && bwd_split_asked(k, p);
    const int split_heads = split ? bwd_split_heads(k, p) : 1; /* query heads per CTA */
    const int group_walk = !split || split_heads > 1;          /* a CTA walks several heads */
    if (split) {
        pr.kv_split = p->hq / p->hkv / split_heads;
        pr.group = split_heads;
        pr.dkv_rows = bwd_split_rows(p);
        pr.dkv_accum = (float *)((uint8_t *)p->workspace + bwd_split_offset(k, p, &w));
    }
    /* the default mode's 80-query block-mask steps from the last down (bwd80_desc; split GQA walks
     * as attention without groups does) */
    if (bm == BWD80_M && p->has_block_mask && !p->deterministic && group_walk && bwd80_desc(p))
        pr.deterministic |= FA4_BWD80_DESCENDING;
    /* the 80 main's heads-inner walk (bwd80_heads_inner): deterministic, or over descending steps
     * (ascending it measured slower than head by head: causal 2.372 against 2.048 ms); with a
     * block mask the field's other bits mean nothing to the default mode's kernels */
    if (bm == BWD80_M && p->has_block_mask && p->bm.heads == 1 && p->hq > p->hkv && group_walk && bwd80_heads_inner() &&
        (p->deterministic || (pr.deterministic & FA4_BWD80_DESCENDING)))
        pr.deterministic |= FA4_DET_HEADS_INNER;

    /* the 80 main converts dQ itself where it can (bwd_dq_fused) and was built to (its key's options
     * say so: a kernel compiled without the option ignores dq_cnt, and dQ would stay unwritten) */
    const int fused = bm == BWD80_M && bwd_dq_fused(p) && fa4__kernel_built_with(k, BWD_DQ_FUSED_OPTION);
    if (fused)
        pr.dq_cnt = (int *)((uint8_t *)p->workspace + bwd_cnt_offset(k, p, &w));

    st = make_map(ctx, &mq, "q", &p->q, p->dtype, p->head_dim, varlen_q ? p->total_q : p->seqlen_q, p->hq,
                  varlen_q ? 1 : p->batch, bm);
    if (st == FA4_OK)
        st = make_map(ctx, &mdo, "dout", &p->dout, p->dtype, p->head_dim_v, varlen_q ? p->total_q : p->seqlen_q,
                      p->hq, varlen_q ? 1 : p->batch, bm);
    if (st == FA4_OK)
        st = make_map(ctx, &mk, "k", &p->k, p->dtype, p->head_dim, varlen_k ? p->total_k : p->seqlen_k, p->hkv,
                      varlen_k ? 1 : p->batch, bn);
    if (st == FA4_OK)
        st = make_map(ctx, &mv, "v", &p->v, p->dtype, p->head_dim_v, varlen_k ? p->total_k : p->seqlen_k, p->hkv,
                      varlen_k ? 1 : p->batch, bn);
    if (st == FA4_OK)
        st = make_map_1d(ctx, &ml, "lse2", pr.lse2, (int64_t)p->hq * w.rows, bm);
    if (st == FA4_OK)
        st = make_map_1d(ctx, &md, "dpsum", pr.dpsum, (int64_t)p->hq * w.rows, bm);
    if (st == FA4_OK)
        st = make_map_dq(ctx, &mdq, pr.dq_accum, p->head_dim, (int64_t)p->hq * w.rows, bm);
    if (st != FA4_OK)
        return st;

    /* bwd_pre is a plain launch: what came before may be any kernel, perhaps itself a dependent
     * launch that does not wait for its own predecessor, so only full stream order makes O, dO and
     * LSE safe to read. PDL only behind it (when it runs): bwd_main loads K and V before its wait,
     * trusting that every kernel before bwd_pre has completed */
    const int pdl = cdiv(p->seqlen_q, BWD_M) > 0;
    CUfunction f_dkv = NULL;
    if (split) {
        f_dkv = fa4__kernel_function(k, "bwd_post", "fa4_bwd_post_dkv");
        if (!f_dkv)
            return fa4__set_error(ctx, FA4_ERR_LAUNCH, "sm90: no fa4_bwd_post_dkv in bwd_post");
        r = cu->memsetD32Async((CUdeviceptr)(uintptr_t)pr.dkv_accum, 0, bwd_split_bytes(p) / 4, p->stream);
        if (r != CUDA_SUCCESS)
            return fa4__cu_error(ctx, FA4_ERR_LAUNCH, r, "cuMemsetD32Async(dkv_accum)");
    }
    /* the persistent main (bwd_persist_fn) for default-mode calls on the 80-query program without
     * the split or the fused conversion, over at least 4 waves of CTAs (fewer: the grid's
     * key-tiles-first order, tiles_slowest 1, which the persistent order does not follow); its
     * counter is zeroed by bwd_pre, so only where bwd_pre runs */
    CUfunction f_persist = NULL;
    const int64_t ctas_all = cdiv(p->seqlen_k, bn) * (int64_t)p->hkv * p->batch;
    if (bm == BWD80_M && !split && !fused && pdl && ctx->sm_count > 0 && strcmp(main_prog, "bwd_main90m80") == 0 &&
        (ctas_all >= 4 * (int64_t)ctx->sm_count || bwd_persist_env() == 2) && ctas_all < INT32_MAX &&
        !bwd_slowest_env() && (f_persist = bwd_next_fn(k, p)) != NULL)
        pr.bwd_next = (int *)((uint8_t *)p->workspace + bwd_next_offset(k, p, &w));
    st = fa4__sm80_bwd_pre(k, &pr, p, 0);
    if (st != FA4_OK)
        return st;

    if (p->deterministic && p->has_block_mask && bm == BWD_M) {
        const int rank_smem = p->bm.num_q_blocks * 8;
        void *rank_args[1] = {&pr};
        f = fa4__kernel_function(k, "bwd_main90", "fa4_sm90_bwd_rank");
        if (!f)
            return fa4__set_error(ctx, FA4_ERR_LAUNCH, "sm90: no fa4_sm90_bwd_rank in bwd_main90");
        r = cu->funcSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, rank_smem);
        if (r == CUDA_SUCCESS)
            r = fa4__cu_launch(cu, f, (unsigned)(p->bm.batch * p->bm.heads), 1, 1, 32, (unsigned)rank_smem,
                               p->stream, rank_args, pdl);
        if (r != CUDA_SUCCESS)
            return fa4__cu_error(ctx, FA4_ERR_LAUNCH, r, "bwd_rank90");
    }
    if (bm == BWD80_M && p->has_block_mask) {
        /* the 80-query main's step table (bwd_steps80.cuh), one warp per (mask batch, mask head,
         * kv block), after bwd_pre as the rank kernel */
        void *steps_args[1] = {&pr};
        const int64_t rows = (int64_t)p->bm.batch * p->bm.heads * p->bm.num_kv_blocks;
        f = fa4__kernel_function(k, main_prog, "fa4_sm90_bwd_steps80");
        if (!f)
            return fa4__set_error(ctx, FA4_ERR_LAUNCH, "sm90: no fa4_sm90_bwd_steps80 in bwd_main90m80");
        if (rows > INT32_MAX)
            return fa4__set_error(ctx, FA4_ERR_SHAPE, "sm90: %lld block-mask rows", (long long)rows);
        r = rows > 0 ? fa4__cu_launch(cu, f, (unsigned)rows, 1, 1, 32, (unsigned)p->bm.num_q_blocks, p->stream,
                                      steps_args, pdl)
                     : CUDA_SUCCESS;
        if (r != CUDA_SUCCESS)
            return fa4__cu_error(ctx, FA4_ERR_LAUNCH, r, "bwd_steps80");
        if (p->deterministic) {
            /* each step's turn into the step table, a 256-thread CTA per (mask batch, mask head) */
            f = fa4__kernel_function(k, main_prog, "fa4_sm90_bwd_turns80");
            if (!f)
                return fa4__set_error(ctx, FA4_ERR_LAUNCH, "sm90: no fa4_sm90_bwd_turns80 in bwd_main90m80");
            r = rows > 0 ? fa4__cu_launch(cu, f, (unsigned)(p->bm.batch * p->bm.heads), 1, 1, 256,
                                          (unsigned)bwd80_turns_smem(p), p->stream, steps_args, pdl)
                         : CUDA_SUCCESS;
            if (r != CUDA_SUCCESS)
                return fa4__cu_error(ctx, FA4_ERR_LAUNCH, r, "bwd_turns80");
        }
        if (fused) {
            /* each 80-row tile's count of key tiles into the counters, a 256-thread CTA per (mask
             * batch, mask head) */
            f = fa4__kernel_function(k, main_prog, "fa4_sm90_bwd_expect80");
            if (!f)
                return fa4__set_error(ctx, FA4_ERR_LAUNCH, "sm90: no fa4_sm90_bwd_expect80 in %s", main_prog);
            r = fa4__cu_launch(cu, f, (unsigned)(p->bm.batch * p->bm.heads), 1, 1, 256,
                               (unsigned)(cdiv(p->seqlen_q, BWD80_M) * 4), p->stream, steps_args, pdl);
            if (r != CUDA_SUCCESS)
                return fa4__cu_error(ctx, FA4_ERR_LAUNCH, r, "bwd_expect80");
        }
    }
    f = fa4__kernel_function(k, main_prog, "fa4_sm90_bwd_main");
    r = cu->funcSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem);
    if (r != CUDA_SUCCESS)
        return fa4__cu_error(ctx, FA4_ERR_LAUNCH, r, "cuFuncSetAttribute(max dynamic smem)");
    args[0] = &pr;
    args[1] = (void *)(p->aux_block ? p->aux_block : zero_aux);
    args[2] = &mq;
    args[3] = &mk;
    args[4] = &mv;
    args[5] = &mdo;
    args[6] = &ml;
    args[7] = &md;
    args[8] = &mdq;
    if (cdiv(p->seqlen_k, bn) > 0 && p->hkv > 0 && p->batch > 0) {
        /* Grid order. Normally (key tile, kv head, batch): the CTAs running together share one
         * head's Q and dO in L2 (the other order was 22% slower on plain B4 H16 S4096 D128). With
         * fewer than 4 waves of CTAs (long CTAs: GQA groups) the tail dominates instead: (kv head,
         * batch, key tile) starts the first keys first, the heaviest under a causal mask (GQA 32:4
         * causal B2 S4096: 244 -> 340 TFLOP/s). */
        const int units_h = split ? p->hq / split_heads : p->hkv; /* the grid's heads: query heads (or groups of split_heads) when split */
        const int64_t tiles = cdiv(p->seqlen_k, bn), ctas = tiles * units_h * p->batch;
        pr.tiles_slowest = ((ctx->sm_count > 0 && ctas < 4 * (int64_t)ctx->sm_count) && !f_persist) || bwd_slowest_env();
        /* head-major with CTAs of 4 heads interleaved (bwd_main.cu fa4_bwd_cta: the 4 heads' key
         * tile 0, then their key tile 1, ...) where 4 heads' key tiles fit one wave: about the
         * same heads are in flight as in plain head-major order, but within them the heaviest key
         * tiles (the first, under causal) start first instead of one head's tiles from heaviest to
         * lightest after another's, which left a tail (a greedy model of causal B4 H16 S4096:
         * makespan 1.068 of the mean -> 1.002). H200 bf16 B4 H16 S4096 D128 bwd, same call
         * (2026-12-02 00:08 UTC, two rounds): causal (bm) 400.9 / 400.6 -> 418.3 / 420.8 TFLOP/s,
         * prefix-LM (B8) 426.8 / 426.4 -> 430.9 / 429.4, plain, D64 B8 H8 and document equal.
         * Deterministic, same rule, earlier: S4096 4.17 -> 4.00 ms, D64 B8 H8 3.14 -> 2.93. Not
         * where a head's key tiles alone fill a quarter wave: deterministic S8192 (64 key tiles)
         * was 10% slower with 4 heads, and plain S8192 showed no gain with 2 or 4. The D 256
         * backward (bwd256.cuh) keeps its own order. */
        if (!d256 && !pr.tiles_slowest && ctx->sm_count >= 4 * tiles && (int64_t)units_h * p->batch >= 4 && ctas < INT32_MAX)
            pr.tiles_slowest = 4;
        /* split GQA with groups of 8 or more: 8 query heads interleaved, the CTAs of one kv head's
         * key tile together (their K, V loads and dK, dV adds meet in L2; document 1.065 -> 1.041,
         * prefix-LM 1.695 -> 1.656 ms above, causal equal) */
        if (split && pr.tiles_slowest == 4 && units_h / p->hkv >= 8 && (int64_t)units_h * p->batch >= 8)
            pr.tiles_slowest = 8;
        pthread_once(&g_bwd_heads_once, read_bwd_heads_env);
        if (g_bwd_heads_env > 0 && pr.tiles_slowest != 1 && ctas < INT32_MAX)
            pr.tiles_slowest = g_bwd_heads_env >= 2 && (int64_t)units_h * p->batch >= g_bwd_heads_env
                                   ? g_bwd_heads_env : 0;
        /* deterministic dense walks rotated (bwd_schedule.cuh, pr.deterministic = G, the rotation
         * group in key tiles): rotated CTAs also wait for larger key tiles of their group, so all G
         * of them must be resident at once: at one CTA an SM and CTAs started in linear order,
         * the group's linear span (G - 1) stride + 1 (stride: 1 head-major, the interleave, or
         * the units when key tiles vary slowest) must fit ctx->sm_count. By default for mods with
         * a relative or tile form, else on request (FA4JIT_SM90_BWD_DET_ROTATE, bwd_det_rotate):
         * =1 the whole head's key tiles where they fit, else the ascending walk (G = 1); =2 the
         * largest group that fits. Only on the 64-query main: on the 80-query one (plain padded
         * D 128, deterministic by default since session 8) =1 measured 13x slower (H100
         * 2026-12-06 05:05 UTC, B4 H16 S4096 bf16 deterministic bwd: 41.5 TFLOP/s against 528.7
         * ascending; S8192 22.5 against 517.0), so there it ascends whatever the request. */
        if (p->deterministic && !p->has_block_mask && !d256 && bm == BWD_M && tiles > 1 && ctx->sm_count > 0) {
            const int rot = bwd_det_rotate(k);
            const int64_t units = (int64_t)units_h * p->batch;
            const int64_t stride = pr.tiles_slowest == 1 ? units
                                   : pr.tiles_slowest > 1 ? (units < pr.tiles_slowest ? units : pr.tiles_slowest)
                                                          : 1;
            const int64_t fit = ((int64_t)ctx->sm_count - 1) / stride + 1; /* the largest G that fits */
            if (rot == 1 && fit >= tiles)
                pr.deterministic = (int)tiles;
            else if (rot == 2 && fit >= 2)
                pr.deterministic = (int)(fit < tiles ? fit : tiles);
        }
        if (pr.tiles_slowest == 1 ? (p->batch > 65535 || tiles > 65535) : (units_h > 65535 || p->batch > 65535))
            return fa4__set_error(ctx, FA4_ERR_SHAPE,
                                  "sm90: %lld key tiles, %d heads, %d batch entries: over the grid's 65535",
                                  (long long)tiles, units_h, p->batch);
        if (f_persist && pr.tiles_slowest != 1) {
            /* one CTA an SM (the main's shared memory allows no second), items from the counter */
            r = cu->funcSetAttribute(f_persist, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem);
            if (r != CUDA_SUCCESS)
                return fa4__cu_error(ctx, FA4_ERR_LAUNCH, r, "cuFuncSetAttribute(max dynamic smem, persistent)");
            const int64_t cap = g_bwd_persist_grid > 0 && g_bwd_persist_grid < ctx->sm_count ? g_bwd_persist_grid
                                                                                              : ctx->sm_count;
            const int64_t grid = ctas < cap ? ctas : cap;
            r = fa4__cu_launch(cu, f_persist, (unsigned)grid, 1, 1, BWD_THREADS, (unsigned)smem, p->stream, args, pdl);
        } else if (pr.tiles_slowest == 1)
            r = fa4__cu_launch(cu, f, (unsigned)units_h, (unsigned)p->batch, (unsigned)tiles, BWD_THREADS,
                               (unsigned)smem, p->stream, args, pdl);
        else
            r = fa4__cu_launch(cu, f, (unsigned)tiles, (unsigned)units_h, (unsigned)p->batch, BWD_THREADS,
                               (unsigned)smem, p->stream, args, pdl);
        if (r != CUDA_SUCCESS)
            return fa4__cu_error(ctx, FA4_ERR_LAUNCH, r, "bwd_main90");
    }
    st = fused ? FA4_OK : fa4__sm80_bwd_post(k, &pr, p, pdl);
    if (st != FA4_OK || !split || pr.dkv_rows == 0)
        return st;
    /* split GQA: dK, dV from the accumulator, in stream order after bwd_post */
    {
        void *dargs[2] = {&pr, (void *)(p->aux_block ? p->aux_block : zero_aux)};
        r = fa4__cu_launch(cu, f_dkv, (unsigned)cdiv(pr.dkv_rows, 64), (unsigned)p->hkv, 2, 256, 0, p->stream,
                           dargs, 0);
        if (r != CUDA_SUCCESS)
            return fa4__cu_error(ctx, FA4_ERR_LAUNCH, r, "fa4_bwd_post_dkv");
    }
    return FA4_OK;
}

static fa4_status sm90_block_mask(fa4_kernel *k, int batch, int heads, int64_t sq, int64_t skv,
                                  const void *aux_block, size_t aux_size, fa4_block_mask *out,
                                  CUstream stream)
{
    return fa4__sm80_ops.block_mask(k, batch, heads, sq, skv, aux_block, aux_size, out, stream);
}

const fa4__path_ops fa4__sm90_ops = {
    FA4_PATH_SM90,
    programs,
    (int)(sizeof(programs) / sizeof(programs[0])),
    sm90_options,
    sm90_smem_bytes,
    sm90_launch_fwd,
    sm90_fwd_workspace,
    sm90_bwd_workspace,
    sm90_launch_bwd,
    sm90_block_mask,
};
