/*
 * bwd_main.cu - the sm90 (Hopper, sm_90a) main backward program, KV-stationary: a CTA owns kBN = 128
 * keys of one (batch, kv head), keeps K and V in shared memory and dK, dV in registers, and walks
 * every query head of its GQA group and every query tile of kBM = 64 rows that the block mask (or
 * the dense sequence) pairs with its keys (bwd_schedule.cuh). It replaces only sm80/bwd_main.cu:
 * sm80/bwd_pre.cu (dpsum, lse2; dq_accum and the turn counters zeroed) and sm80/bwd_post.cu (dQ
 * scale and convert) run around it, over the same workspace (dq_accum [slots][hq][ws_rows][d]
 * fp32), as programmatic dependent launches (PDL, common/ptx.cuh): this program starts while
 * bwd_pre (or the rank kernel) ends, loads K and V, and waits (fa4_pdl_wait) before it reads
 * anything they write.
 *
 * Grid: (ceil(seqlen_k / kBN), hkv, batch), or (hkv, batch, ceil(seqlen_k / kBN)) when the launcher
 * sets p.tiles_slowest; kBThreads = 384 threads in 3 warpgroups:
 *   warpgroup 0, the producer (registers cut to kBProducerRegs): one thread. It loads K and V
 *     once, then per step Q and dO of the tile into a kBStages ring (TMA, tensor maps of 64-column
 *     boxes, kBM rows for Q/dO and kBN rows for K/V, 128-byte swizzle) and the tile's kBM lse2 and
 *     dpsum values next to them (1-d fp32 tensor maps over the workspace arrays, boxes of kBM;
 *     rows past the sequence hold whatever follows and are masked by the consumers).
 *   warpgroups 1, 2, the consumers (registers raised to kBConsumerRegs), 64 keys each: the step of
 *     bwd_consumer.cuh, then the epilogue: dK (times the softmax scale) and dV from registers.
 * dQ goes into the workspace by TMA bulk reduce-adds of each consumer's staged fp32 tile; in
 * deterministic mode (p.dq_sem) in key-tile order per query tile, on turn counters in the workspace
 * (bwd_consumer.cuh write_dq_tma; the release and the wait at gpu scope are done by one thread
 * of warpgroup 0 per dQ warpgroup, the turn agent, FA4_SM90_BWD_TURN_AGENT): one accumulator, so
 * bwd_post has one slot to convert. With a
 * block mask the turn of a (key tile, query tile) is the key tile's rank among the key tiles whose
 * lists hold the query tile, from a table fa4_sm90_bwd_rank builds before this program runs; the
 * producer leaves each step's entry next to its stage for the dQ issuer (FA4_SM90_BWD_TURN_SLOT;
 * no register held over the step: a lookup in registers made softcap + causal D 128 spill,
 * session 3), and the lists are walked in descending order (bwd_schedule.cuh).
 *
 * Supported: bf16 and fp16; head dims with padded D, Dv <= 128 (64 and 128 compile-checked), not
 * checked builds (both: an empty stub, the sm80 backward runs instead); padded D = Dv = 256 has a
 * kernel of its own with the same parameters (sm90/bwd256.cuh, included below in place of this
 * one);
 * strides as the sm90 forward (multiples of 16 bytes, TMA); GQA/MQA; varlen via cu_seqlens; q/kv
 * offsets; score_mod with its derivative, mask_mod, trainable aux (terms summed per run of equal
 * indices in registers as sm80, each run into the CTA's shared-memory window of the read's
 * gradient where its index lies there, else a global atomic; the windows go into global memory
 * once per CTA, an atomic per entry that holds anything; fa4_aux_grad_commit);
 * block masks with q_block a multiple of 64 and kv_block a multiple of 128.
 * STATUS: wired (path_sm90.c); the GPU suite passes on it (H200, 2026-11-29); see notes/sm90-bwd.md.
 * Not yet: dQ by TMA bulk reduce-add from a dedicated warp (tried: any second role in the producer's
 * warpgroup made the producer spill at 24 registers), overlap of one step's dQ with the next
 * step's S/dP (intra-warpgroup pipelining), persistent grid. Aux gradients in deterministic mode:
 * fixed-point integer adds (the mod header's fa4_aux_grad_global), bitwise reproducible.
 */
/* Trainable aux gradients: the mod's run accumulators hand finished runs to fa4_aux_grad_commit
 * below (the CTA's shared-memory window, else global memory). */
#define FA4_AUX_GRAD_SINK 1
__device__ __forceinline__ void fa4_aux_grad_commit(int k, float *grad, int i, float v);
#include "fa4_mod.cuh"
/* a term into global memory: the mod header's fa4_aux_grad_global (a float atomic, or in
 * FA4_AUX_FX builds the fixed-point accumulator's integer adds) where it has trainable reads */
#if defined(FA4_NUM_AUX_GRAD_SITES) && FA4_NUM_AUX_GRAD_SITES > 0
#define FA4_AUX_GRAD_GLOBAL(grad, i, v) fa4_aux_grad_global(grad, i, v)
#else
#define FA4_AUX_GRAD_GLOBAL(grad, i, v) atomicAdd((grad) + (i), (v))
#endif
#include "common/params.h"
#include "common/ptx.cuh"
#include "sm80/scheduler.cuh"
#include "sm80/mask.cuh"
#include "sm90/config.cuh"
#include "sm90/ptx90.cuh"
#include "sm90/wgmma.cuh"

#if FA4_HEAD_DIM > 192 && FA4_HEAD_DIM <= 256 && FA4_HEAD_DIM_V > 192 && FA4_HEAD_DIM_V <= 256 && \
    !(defined(FA4_CHECKED) && FA4_CHECKED)
/* padded D = Dv = 256: its own tile plan (64 keys per CTA, dK / dV split over the head dim) */
#include "sm90/bwd256.cuh"
#elif (FA4_HEAD_DIM > 128 || FA4_HEAD_DIM_V > 128 || (defined(FA4_CHECKED) && FA4_CHECKED)) || \
    (defined(FA4_SM90_BWD80_OFF) && FA4_SM90_BWD80_OFF)
/* Other heads over 128 (padded D 192) do not fit the register plan, and checked builds (aux reads
 * that trap) spill and serialize wgmma at D 128 (alibi: 108 bytes, rel_bias: 124, C7520 once each): the program is then
 * an empty stub (cheap to compile) so that a program list carrying both backward mains builds for
 * every spec; the launcher runs sm80/bwd_main.cu for these and never launches this one. */
#if defined(FA4_SM90_BWD80_OFF) && FA4_SM90_BWD80_OFF
/* bwd_main80.cu's spill fallback (path_sm90.c): the 80-query build of this mod spilled, so the
 * program is this stub, marked by its thread bound (32, under the main's 384): the launcher reads
 * it (cuFuncGetAttribute) and runs bwd_main90 (64-query steps) */
#define FA4_SM90_BWD_STUB_BOUNDS __launch_bounds__(32)
#else
#define FA4_SM90_BWD_STUB_BOUNDS
#endif
extern "C" __global__ void FA4_SM90_BWD_STUB_BOUNDS fa4_sm90_bwd_main(const fa4_params p, const fa4_aux aux, const __grid_constant__ fa4_tmap tm_q,
                                             const __grid_constant__ fa4_tmap tm_k, const __grid_constant__ fa4_tmap tm_v,
                                             const __grid_constant__ fa4_tmap tm_do,
                                             const __grid_constant__ fa4_tmap tm_lse2,
                                             const __grid_constant__ fa4_tmap tm_dpsum,
                                             const __grid_constant__ fa4_tmap tm_dq)
{
    __trap();
}
__device__ __forceinline__ void fa4_aux_grad_commit(int k, float *grad, int i, float v)
{
    (void)k;
    FA4_AUX_GRAD_GLOBAL(grad, i, v);
}
#else
#include "sm90/bwd_wgmma.cuh"
#include "sm90/bwd_config.cuh"
#if FA4_SM90_BWD_BM != 64 && FA4_HAS_SCORE_MOD
#error "80-query steps (bwd_main80.cu): no score_mod"
#endif
#include "sm90/bwd_schedule.cuh"

#include "sm90/bwd_common.cuh"

/* A finished run of trainable read site k's gradient terms (index i, sum v): into the CTA's
 * window where i lies inside it (shared-memory add; the window goes into global memory once, at
 * the CTA's end), else straight into global memory. The window only ever holds the indices it
 * was set up for, so a range that misses (indices beyond the window's entries, or a range
 * function that gave up) costs atomics, never correctness. Every CTA of every head used to add
 * into the same few hundred floats of a relative-position table: contended L2 atomics.
 * Deterministic mode (FA4_AUX_FX; the mod header's fa4_aux_grad_global adds hi 2^-20 + lo 2^-56
 * pairs into the global accumulators): the window's entries are 16-byte integer slots, in copies
 * as the float ones: a 96-bit integer in units of 2^-56 in three 32-bit words, a term
 * t = round(v 2^56) (|v| < 2^6) added word by word with native 32-bit atomics, each word's carry
 * (seen from the value it returned) passed on to the next (fa4_bwd_aux_fx_add96): no retry loop,
 * so lanes that meet on one entry (t5_bias's few buckets) serialize in hardware only. Integer
 * adds: the CTA's sums do not depend on the order of its warps, and the flush turns every slot
 * into the global pair exactly. H100 2026-12-06 05:53 UTC, B4 H16 S4096 D128 bf16, deterministic
 * bwd TFLOP/s, these slots / the pair (hi, lo) in the slot by two red.shared.add.u64 (each a
 * compare-and-swap loop on sm_90, as the float window's f32 add; removed) / float atomics
 * (FA4JIT_DET_AUX_FIXED=0, not bitwise) / the default mode: trainable rel. bias 331.6 / 255.8 /
 * 304.4 / 317.6, trainable T5 287.8 / 229.6 / 271.1 / 291.1.
 * FA4_SM90_BWD_AUX_INT_WINDOW 1 (the default since session 18; 0 the float window): the default
 * mode's window in these slots too, flushed as one float atomic an entry (terms of 2^6 or more, and
 * non-finite ones, go to global memory as float atomics). H100 2026-12-06 06:52 UTC, B4 H16 S4096
 * D128 bf16, default-mode bwd TFLOP/s, integer / float window: trainable rel. bias 344.4 / 319.6,
 * trainable T5 320.5 / 293.1 (same call). */
#ifndef FA4_SM90_BWD_AUX_INT_WINDOW
#define FA4_SM90_BWD_AUX_INT_WINDOW 1
#endif
#if defined(FA4_AUX_FX) && FA4_AUX_FX
#define FA4_SM90_BWD_AUX_INT 1 /* integer slots */
#else
#define FA4_SM90_BWD_AUX_INT FA4_SM90_BWD_AUX_INT_WINDOW
#endif
#if FA4_SM90_BWD_AUX_WIN && FA4_SM90_BWD_AUX_INT
__device__ __forceinline__ void fa4_bwd_aux_fx_add96(unsigned a, long long t)
{
    const unsigned t0 = (unsigned)t, t1 = (unsigned)((unsigned long long)t >> 32), t2 = t < 0 ? 0xffffffffu : 0u;
    unsigned o0;
    asm volatile("atom.shared.add.u32 %0, [%1], %2;\n" : "=r"(o0) : "r"(a), "r"(t0) : "memory");
    const unsigned long long a1 = (unsigned long long)t1 + (o0 + t0 < o0 ? 1u : 0u); /* <= 2^32 */
    unsigned c1 = (unsigned)(a1 >> 32);
    if ((unsigned)a1) {
        unsigned o1;
        asm volatile("atom.shared.add.u32 %0, [%1+4], %2;\n" : "=r"(o1) : "r"(a), "r"((unsigned)a1) : "memory");
        c1 = o1 + (unsigned)a1 < o1 ? 1u : 0u;
    }
    if (t2 + c1)
        asm volatile("red.shared.add.u32 [%0+8], %1;\n" ::"r"(a), "r"(t2 + c1) : "memory");
}
#endif
__device__ __forceinline__ void fa4_aux_grad_commit(int k, float *grad, int i, float v)
{
#if FA4_SM90_BWD_AUX_WIN
    const fa4_bwd_smem sm = {fa4_bwd_smem_base()};
    int lo, n, cm;
    unsigned w;
    asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(lo), "=r"(n), "=r"(cm), "=r"(w)
                 : "r"(sm.aux_hdr(k)));
    const unsigned off = (unsigned)(i - lo);
    if (off < (unsigned)n) {
        const unsigned c = ((threadIdx.x & 3u) | ((threadIdx.x >> 3) & 4u)) & (unsigned)cm;
#if FA4_SM90_BWD_AUX_INT
        if (fabsf(v) < 0x1p6f) {
            fa4_bwd_aux_fx_add96(w + 16u * (off + c * (unsigned)n), __float2ll_rn(__fmul_rn(v, 0x1p56f)));
            return;
        }
#else
        asm volatile("red.shared.add.f32 [%0], %1;\n" ::"r"(w + 4u * (off + c * (unsigned)n)), "f"(v));
        return;
#endif
    }
#endif
    FA4_AUX_GRAD_GLOBAL(grad, i, v);
}

#if FA4_SM90_BWD_AUX_WIN
/* Consumers (ct = 0..255), before the walk: each site's window over what the CTA can read (its
 * keys, every query of the sequence, the heads of its kv head's group), zeroed. The callers
 * meet on the consumers' barrier before any step. */
__device__ __forceinline__ void fa4_bwd_aux_window_init(const fa4_params &p, const fa4_aux &aux, const fa4_bwd_smem &sm,
                                                        int b, int hk, int n0, int len_q, int len_k, int ct)
{
    for (int j = ct; j < FA4_NUM_AUX_GRAD_SITES * kBAuxSiteEntries; j += 256)
        asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(sm.aux_win(0) + 4u * j), "f"(0.f) : "memory");
    for (int j = ct; j < kBAuxScrBytes / 4; j += 256) /* the band scratch (bwd_consumer.cuh grads_rel) */
        asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(sm.aux_scr(0) + 4u * j), "f"(0.f) : "memory");
    if (ct < FA4_NUM_AUX_GRAD_SITES) {
        const long long lim = 2147483647LL;
        const auto cl = [&](long long x) { return (int)(x < -lim - 1 ? -lim - 1 : x > lim ? lim : x); };
        const int k_hi = (n0 + kBN < len_k ? n0 + kBN : len_k) - 1;
        long long lo, hi;
        fa4_aux_grad_site_range(ct, b, hk * p.group, hk * p.group + p.group - 1, cl(p.q_offset),
                                cl(p.q_offset + len_q - 1), cl(n0 + p.kv_offset), cl(k_hi + p.kv_offset), aux, lo,
                                hi);
        long long n = hi - lo + 1;
        if (lo > lim || n <= 0)
            lo = n = 0;
        /* entries of 4 bytes, or 16 (integer slots) */
#if FA4_SM90_BWD_AUX_INT
        constexpr int cap = kBAuxSiteEntries / 4;
#else
        constexpr int cap = kBAuxSiteEntries;
#endif
        n = n > cap ? cap : n;
        int c = FA4_SM90_BWD_AUX_COPIES;
        while (c > 1 && c * n > cap)
            c >>= 1;
        asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(sm.aux_hdr(ct)), "r"((int)lo), "r"((int)n),
                     "r"(c - 1), "r"(sm.aux_win(ct))
                     : "memory");
    }
}

/* Consumers, after the walk and the consumers' barrier: the windows into global memory, one
 * atomic per entry that holds anything. */
__device__ __forceinline__ void fa4_bwd_aux_window_flush(const fa4_aux &aux, const fa4_bwd_smem &sm, int ct)
{
#pragma unroll 1
    for (int k = 0; k < FA4_NUM_AUX_GRAD_SITES; ++k) {
        int lo, n, cm;
        unsigned w;
        float *grad = fa4_aux_grad_site_grad(k, aux);
        asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(lo), "=r"(n), "=r"(cm), "=r"(w)
                     : "r"(sm.aux_hdr(k))
                     : "memory");
#if FA4_SM90_BWD_AUX_INT
        /* each copy's slot as the pair (hi, lo) of the global accumulator (hi 2^-20 + lo 2^-56),
         * summed over the copies; FA4_SM90_BWD_AUX_INT_WINDOW: the pair's value, one float atomic */
#if defined(FA4_AUX_FX) && FA4_AUX_FX
        unsigned long long *fx = (unsigned long long *)grad;
#endif
        for (int j = ct; j < n; j += 256) {
            long long xh = 0, xl = 0;
            for (int c = 0; c <= cm; ++c) {
                const unsigned a = w + 16u * (j + c * n);
                unsigned w0, w1, w2;
                asm volatile("ld.shared.v2.b32 {%0, %1}, [%3];\n"
                             "ld.shared.b32 %2, [%3+8];\n"
                             : "=r"(w0), "=r"(w1), "=r"(w2)
                             : "r"(a)
                             : "memory");
                /* V = w2 2^64 + w1 2^32 + w0 (w2 signed): V >> 36 and V mod 2^36 */
                xh += (long long)(int)w2 * (1ll << 28) + (long long)(w1 >> 4);
                xl += (long long)(((unsigned long long)(w1 & 15u) << 32) | w0);
            }
#if defined(FA4_AUX_FX) && FA4_AUX_FX
            if (xh)
                atomicAdd(fx + 3ll * (lo + j), (unsigned long long)xh);
            if (xl)
                atomicAdd(fx + 3ll * (lo + j) + 1, (unsigned long long)xl);
#else
            if (xh | xl)
                atomicAdd(grad + lo + j, __double2float_rn((double)xh * 0x1p-20 + (double)xl * 0x1p-56));
#endif
        }
#else
        for (int j = ct; j < n; j += 256) {
            float v = 0.f;
            for (int c = 0; c <= cm; ++c) { /* the copies in order */
                float x;
                asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(x) : "r"(w + 4u * (j + c * n)) : "memory");
                v += x;
            }
            if (v != 0.f)
                atomicAdd(grad + lo + j, v);
        }
#endif
    }
}
#endif

#include "sm90/bwd_consumer.cuh"

/* The CTA's (key tile, kv head, batch); see the launcher for the grid orders. p.tiles_slowest:
 * 0 head-major (key tile, kv head, batch); 1 key tiles slowest (kv head, batch, key tile);
 * G >= 2 (head-major grid, 4 heads per wave or more) the linear CTA index taken as (unit mod G, key tile,
 * unit / G) over the units (kv head, batch): about one wave holds G heads, and the key tiles of
 * one head start G CTAs apart, as their turns stagger them anyway. Every order starts a CTA after
 * the smaller key tiles of its kv head (the turns' wait order). */
/* The split epilogue's staging (FA4_SM90_BWD_SPLIT_BULK): row half r2 of a thread's accumulator
 * fragments (the first `cols` columns) to the shared-memory row at `row` (+ 8 t bytes already) */
template <int NT>
__device__ __forceinline__ void fa4_bwd_stage_row(const float (&a)[NT][4], int r2, unsigned row, int cols)
{
#pragma unroll
    for (int i = 0; i < NT; ++i)
        if (i * 8 < cols)
            asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(row + 32u * (unsigned)i), "f"(a[i][2 * r2]),
                         "f"(a[i][2 * r2 + 1])
                         : "memory");
}

__device__ __forceinline__ void fa4_bwd_cta(const fa4_params &p, int &n_tile, int &hk, int &b)
{
    if (p.tiles_slowest == 1) {
        n_tile = blockIdx.z;
        hk = blockIdx.x;
        b = blockIdx.y;
    } else if (p.tiles_slowest > 1) {
        const unsigned g0 = (unsigned)p.tiles_slowest, tiles = gridDim.x, units = gridDim.y * gridDim.z;
        const unsigned l = blockIdx.x + tiles * (blockIdx.y + gridDim.y * blockIdx.z);
        const unsigned grp = l / (g0 * tiles), rem = l - grp * g0 * tiles;
        const unsigned g = units - grp * g0 < g0 ? units - grp * g0 : g0;
        const unsigned t = rem / g, u = grp * g0 + rem - t * g;
        n_tile = (int)t;
        hk = (int)(u % gridDim.y);
        b = (int)(u / gridDim.y);
    } else {
        n_tile = blockIdx.x;
        hk = blockIdx.y;
        b = blockIdx.z;
    }
}

#include "sm90/bwd_rank.cuh"
#if FA4_BWD_WALK80
#include "sm90/bwd_steps80.cuh"
#endif

#include "sm90/bwd_producer.cuh"

/* score_mod's affine / tile-run state (bwd_consumer.cuh fa4_bwd_aff) before a walk: nothing known */
__device__ __forceinline__ void fa4_bwd_aff_reset(fa4_bwd_aff &aff)
{
    aff.h = -1;
#if FA4_SM90_BWD_TILE_RUN && !FA4_SM90_BWD_TSAT
    aff.th = -1;
    aff.tlo = aff.thi = 0;
    aff.tfail = false;
#endif
#if FA4_SM90_BWD_TSAT
    aff.sh = -1;
#endif
#if FA4_SM90_BWD_GDEF
    aff.gidx = -1;
    aff.gacc = 0.f;
#endif
}

/* A consumer warp's walk over key tile n_tile's query tiles (the cursor's steps, the ring's stage
 * and phase from the running step count it); hp / m0p end as the last step's head and first row. */
__device__ __forceinline__ void fa4_bwd_consume_walk(const fa4_bwd_consumer &c, const fa4_params &p, int b, int hk,
                                                     int n_tile, int len_q, float (&dk)[kDp / 8][4],
                                                     float (&dv)[kDvp / 8][4], int &it, int &hp, int &m0p,
                                                     fa4_bwd_aff &aff)
{
    fa4_bwd_cursor w;
    w.start(p, b, hk, n_tile, len_q);
    for (; w.next(p, b, hk, n_tile, len_q); ++it) {
        c.step(dk, dv, it % kBStages, (unsigned)(it / kBStages) & 1u, it, w.h, w.m0, w.full, hp, m0p, aff);
        hp = w.h;
        m0p = w.m0;
    }
}

/* dK (scaled) and dV of the CTA's keys inside the sequence, from the consumer warp's accumulators
 * (the epilogue of calls without the GQA split) */
__device__ __forceinline__ void fa4_bwd_store_dkv(const fa4_params &p, const float (&dk)[kDp / 8][4],
                                                  const float (&dv)[kDvp / 8][4], int b, int hk, const fa4_seq &seq,
                                                  int n0, int cw, int warp, int lane)
{
    const int g = lane >> 2, t = lane & 3;
    fa4_elem *gdK = (fa4_elem *)p.dk.data + b * p.dk.sb + hk * p.dk.sh + (seq.row_k + n0) * p.dk.ss;
    fa4_elem *gdV = (fa4_elem *)p.dv.data + b * p.dv.sb + hk * p.dv.sh + (seq.row_k + n0) * p.dv.ss;
#pragma unroll
    for (int r2 = 0; r2 < 2; ++r2) {
        const int r = cw * kBWgKeys + warp * 16 + g + 8 * r2;
        const bool in = n0 + r < seq.len_k;
        fa4_bwd_store_row<kDp / 8, true, FA4_SM90_BWD_STG128 != 0>(gdK + (long long)r * p.dk.ss, dk, r2, p.scale, t,
                                                                   in, kD);
        fa4_bwd_store_row<kDvp / 8, false, FA4_SM90_BWD_STG128 != 0>(gdV + (long long)r * p.dv.ss, dv, r2, 1.f, t,
                                                                    in, kDv);
    }
}

/* FA4_SM90_BWD_EPI_FIRST 1 (session 34, opt-in): where no turn or split epilogue follows the walk
 * (default mode, not the GQA split), the dK / dV epilogue runs before the wait for the last dQ
 * reduce-adds instead of after it. 0: after (the order since session 3). Measured slower (session
 * 35, H100, causal B8 H16 S4096 f+b, one round: 525.5 -> 519.8 TFLOP/s), so it stays off. */
#ifndef FA4_SM90_BWD_EPI_FIRST
#define FA4_SM90_BWD_EPI_FIRST 0
#endif
extern "C" __global__ void __launch_bounds__(kBThreads, 1)
    fa4_sm90_bwd_main(const fa4_params p, const fa4_aux aux, const __grid_constant__ fa4_tmap tm_q,
                      const __grid_constant__ fa4_tmap tm_k, const __grid_constant__ fa4_tmap tm_v,
                      const __grid_constant__ fa4_tmap tm_do, const __grid_constant__ fa4_tmap tm_lse2,
                      const __grid_constant__ fa4_tmap tm_dpsum, const __grid_constant__ fa4_tmap tm_dq)
{
    const fa4_bwd_smem sm = {fa4_bwd_smem_base()};
    int n_tile, hk, b;
    /* PDL (path_sm90.c): bwd_post may be scheduled once every CTA of this grid has started; it
     * waits for this grid to complete before it reads dq_accum */
    fa4_pdl_launch();
    fa4_bwd_cta(p, n_tile, hk, b);
    const int tid = threadIdx.x;
    const fa4_seq seq = fa4_seq_info(p, b);
    const int n0 = n_tile * kBN;
    if (n0 >= seq.len_k)
        return; /* uniform over the CTA: before any barrier */

    if (tid == 0) {
        fa4_mbar_init(sm.bar_kv(), 1);
#pragma unroll
        for (int s = 0; s < kBStages; ++s) {
            fa4_mbar_init(sm.bar_full(s), kBFullArrivals);
            fa4_mbar_init(sm.bar_empty(s), kBEmptyArrivals);
        }
        /* rotated deterministic walks: the turns' constants (the producer's and the issuers') */
        fa4_bwd_rot_init(p, sm.dq_rot(), n_tile, seq.len_q, seq.len_k);
#if FA4_SM90_BWD_TURN_AGENT
        for (int i = 0; i < kBDqWgs; ++i) { /* deterministic dQ: the issuer's posts, the agent's go */
            fa4_mbar_init(sm.bar_turn_post(i), 1);
            fa4_mbar_init(sm.bar_turn_go(i), 1);
        }
#endif
#if FA4_SM90_BWD_DQ_FUSED
        asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(sm.dq_fused_n()), "r"(0u) : "memory"); /* fused dQ: no half tile yet */
#endif
#if FA4_SM90_BWD_DQ_LAG
        for (int i = 0; i < 2; ++i) { /* every consumer warp stores dS; the dQ warps read it */
            fa4_mbar_init(sm.bar_ds_full(i), 8);
            fa4_mbar_init(sm.bar_ds_empty(i), 4 * kBDqWgs);
        }
#endif
        fa4_mbar_init_fence();
    }
    __syncthreads();

    const int wg = tid >> 7;
    if (wg == 0) {
        /* ------------------------------------------------------------------- producer */
        fa4_regs_dec<kBProducerRegs>();
#if FA4_SM90_BWD_TURN_AGENT
        /* warps 1 (and 2 with two dQ warpgroups), deterministic: their lane 0 is the agent of
         * consumer warpgroup warp - 1. The branch is on a vote (a uniform predicate), as in
         * bwd256.cuh: with the per-thread branch ptxas spilled the producer at its 24 registers
         * (plain D 128: 28 / 24 bytes, NVRTC 13). */
        if (__any_sync(0xffffffffu, p.dq_sem && (tid == 32 || (kBDqWgs == 2 && tid == 64)))) {
            if ((tid & 31) == 0) {
                fa4_pdl_wait(); /* the turn counters are zeroed by bwd_pre */
                fa4_bwd_turn_agent(sm, (tid >> 5) - 1);
            }
            return;
        }
#endif
        if (tid != 0)
            return;
        fa4_bwd_produce<FA4_SM90_BWD_TURN_SLOT != 0, kBDqRotOff>(p, sm, &tm_q, &tm_k, &tm_v, &tm_do, &tm_lse2, &tm_dpsum, b, hk,
                                                     n_tile, n0, seq);
    } else {
        /* ------------------------------------------------------------------- consumers */
        fa4_regs_inc<kBConsumerRegs>();
        /* PDL: the walk table, the turn counters and dq_accum (zeroed by bwd_pre) come after it */
        fa4_pdl_wait();
        /* cw warp-uniform (FA4_SM90_DESC_ADD): the descriptors that depend on it in uniform
         * registers (without it: two R2UR a wgmma) */
        const int cw = FA4_SM90_DESC_ADD ? fa4_warp_uniform(wg - 1) : wg - 1, warp = (tid >> 5) & 3, lane = tid & 31;
        float dk[kDp / 8][4], dv[kDvp / 8][4];
#pragma unroll
        for (int i = 0; i < kDp / 8; ++i)
            dk[i][0] = dk[i][1] = dk[i][2] = dk[i][3] = 0.f;
#pragma unroll
        for (int i = 0; i < kDvp / 8; ++i)
            dv[i][0] = dv[i][1] = dv[i][2] = dv[i][3] = 0.f;
        const fa4_bwd_consumer c = {p,  aux,       sm,        b,      cw,           warp,
                                    lane, n0, seq.len_q, seq.len_k, n_tile, (int)seq.ws_row, &tm_dq};
        if (warp == 0 && lane == 0 && cw < kBDqWgs) { /* no turn held yet (read by the first step) */
            asm volatile("st.shared.u64 [%0], %1;\n" ::"r"(sm.dq_pending(cw)), "l"(0ull) : "memory");
            /* with a block mask, this key tile's place in its kv block: what its turns add to the
             * walk table's (dq_turn), divided out once here */
            if (FA4_SM90_BWD_TURN_SLOT && fa4_bwd_walk_table(p))
                asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(sm.dq_turn_add(cw)),
                             "r"(n_tile % (p.bm_kv_block / kBN))
                             : "memory");
        }

#if FA4_SM90_BWD_AUX_WIN
        fa4_bwd_aux_window_init(p, aux, sm, b, hk, n0, seq.len_q, seq.len_k, tid - 128);
        fa4_bwd_consumers_sync();
#endif
        fa4_mbar_wait(sm.bar_kv(), 0u); /* also when the walk is empty: no TMA outlives the CTA */
        int it = 0, hp = 0, m0p = 0;
        fa4_bwd_aff aff; /* score_mod's affine form, per head (bwd_consumer.cuh) */
        fa4_bwd_aff_reset(aff);
        fa4_bwd_consume_walk(c, p, b, hk, n_tile, seq.len_q, dk, dv, it, hp, m0p, aff);
#if FA4_SM90_BWD_GDEF
        c.tile_grad_flush(aff); /* FA4_SM90_BWD_GDEFER: the last entry's sum (before the windows' flush) */
#endif
#if FA4_SM90_BWD_PINGPONG
        if (it > 0 && cw == 0) /* the turn warpgroup 1 left open after its last step */
            asm volatile("bar.sync 5, 256;\n" ::: "memory");
#endif
        /* epilogue: dK (scaled) and dV of the keys inside the sequence; in the GQA program
         * (FA4_SM90_BWD_GQA_PROG, bwd_main80s.cu) split calls (p.kv_split) add them into dkv_accum,
         * unscaled (bwd_post's fa4_bwd_post_dkv scales and converts) */
        const auto epilogue = [&]() {
            const int g = lane >> 2, t = lane & 3;
            if (FA4_SM90_BWD_GQA_PROG && p.kv_split) {
                const int hkv = hk / p.kv_split;
                const long long row0 = (p.cu_seqlens_k ? seq.row_k : (long long)b * p.seqlen_k) + n0;
                float *aK = p.dkv_accum + ((long long)hkv * p.dkv_rows + row0) * kD;
                float *aV = p.dkv_accum + (long long)p.hkv * p.dkv_rows * kD + ((long long)hkv * p.dkv_rows + row0) * kDv;
#if FA4_SM90_BWD_SPLIT_BULK
                /* each warp stages its 16 rows of dK, then of dV, in the Q / dO ring (free once both
                 * consumer warpgroups are past their last step) and adds them by bulk reduce, a row a
                 * lane: rows kBSplitRowBytes apart, so the quads' 8-byte stores meet no more than two
                 * to a bank */
                fa4_bwd_consumers_sync();
                const unsigned st = sm.q(0) + (unsigned)((cw * 4 + warp) * 16 * kBSplitRowBytes);
                const int rw = cw * kBWgKeys + warp * 16; /* the warp's first row */
#pragma unroll
                for (int half = 0; half < 2; ++half) {
#pragma unroll
                    for (int r2 = 0; r2 < 2; ++r2) {
                        const unsigned row = st + (unsigned)((g + 8 * r2) * kBSplitRowBytes) + 8u * (unsigned)t;
                        if (half == 0)
                            fa4_bwd_stage_row<kDp / 8>(dk, r2, row, kD);
                        else
                            fa4_bwd_stage_row<kDvp / 8>(dv, r2, row, kDv);
                    }
                    fa4_fence_proxy_async_smem();
                    __syncwarp();
                    if (lane < 16 && n0 + rw + lane < seq.len_k) {
                        if (half == 0)
                            fa4_bulk_reduce_add_f32(aK + (long long)(rw + lane) * kD, st + (unsigned)(lane * kBSplitRowBytes),
                                                    kD * 4);
                        else
                            fa4_bulk_reduce_add_f32(aV + (long long)(rw + lane) * kDv, st + (unsigned)(lane * kBSplitRowBytes),
                                                    kDv * 4);
                        fa4_bulk_commit();
                        fa4_bulk_wait_read<0>(); /* the rows are read before the next half overwrites them */
                    }
                    __syncwarp();
                }
                if (lane < 16)
                    fa4_bulk_wait<0>();
#else
#pragma unroll
                for (int r2 = 0; r2 < 2; ++r2) {
                    const int r = cw * kBWgKeys + warp * 16 + g + 8 * r2;
                    if (n0 + r < seq.len_k) {
#pragma unroll
                        for (int i = 0; i < kDp / 8; ++i)
                            if (i * 8 < kD)
                                fa4_red_add_v2(aK + (long long)r * kD + i * 8 + 2 * t, dk[i][2 * r2], dk[i][2 * r2 + 1]);
#pragma unroll
                        for (int i = 0; i < kDvp / 8; ++i)
                            if (i * 8 < kDv)
                                fa4_red_add_v2(aV + (long long)r * kDv + i * 8 + 2 * t, dv[i][2 * r2], dv[i][2 * r2 + 1]);
                    }
                }
#endif
                return;
            }
            fa4_bwd_store_dkv(p, dk, dv, b, hk, seq, n0, cw, warp, lane);
        };
#if FA4_SM90_BWD_DQ_LAG
        /* dK, dV out first: the last step's dQ after the loop with dK and dV still live spilled
         * (80 bytes for its staging stores alone, plain D 128) */
        epilogue();
        if (it > 0 && !p.dq_sem)
            c.drain_dq(it - 1, hp, m0p); /* the last step's dQ */
#endif
#if FA4_SM90_BWD_EPI_FIRST && !FA4_SM90_BWD_DQ_LAG
        /* default-mode calls without the split epilogue: dK, dV out before warp 0's lane 0 waits
         * for the last dQ reduce-adds (its warp's stores waited behind that wait) */
        const bool epi_first = !p.dq_sem && !(FA4_SM90_BWD_GQA_PROG && p.kv_split);
        if (epi_first)
            epilogue();
#endif
        if (warp == 0 && lane == 0 && cw < kBDqWgs) {
#if FA4_SM90_BWD_TURN_AGENT
            if (p.dq_sem)
                c.post_dq_turn(0ull, 0); /* the last step's, and the agent's end */
#elif FA4_SM90_BWD_DQ_PASS == 1
            if (p.dq_sem)
                c.pass_dq_turn<false>(); /* the last step's */
#else
            if (p.dq_sem)
                c.release_dq_turn(); /* none left: each step passed its own */
#endif
            fa4_bulk_wait<0>(); /* the last dQ reduce-adds are done before the CTA's shared memory goes */
        }
#if FA4_SM90_BWD_AUX_WIN
        fa4_bwd_consumers_sync(); /* every step's terms are in the windows */
        fa4_bwd_aux_window_flush(aux, sm, tid - 128);
#endif
#if !FA4_SM90_BWD_DQ_LAG
#if FA4_SM90_BWD_EPI_FIRST
        if (!epi_first)
#endif
            epilogue();
#endif
#if FA4_SM90_BWD_DQ_FUSED
        /* this CTA's tiles counted off, those it completes converted (bwd_consumer.cuh) */
        if (p.dq_cnt) {
            if (warp == 0 && lane == 0 && cw < kBDqWgs) /* after the bulk wait above */
                asm volatile("fence.proxy.async.global;\n" ::: "memory");
            fa4_bwd_consumers_sync();
            c.dq_fused_end(hk);
        }
#endif
    }
}

/* FA4_SM90_BWD_PERSIST 1 (session 35, opt-in: FA4JIT_SM90_BWD_PERSIST=1 adds it to the backward's
 * build options; correct on the GPU suite, but no faster: H100 B8 H16 S4096 f+b plain 598.0 ->
 * 596.9, causal 519.5 -> 519.5, notes/sm90-bwd.md session 35): the 80-query program also holds
 * fa4_sm90_bwd_main_persist, which path_sm90.c launches, where the program has it, for
 * default-mode calls without the GQA split or the fused dQ conversion, over at least 4 waves of
 * CTAs: a grid of one CTA an SM, each taking work items (key tile, kv head, batch: the linear
 * index of the normal grid, fa4_bwd_cta's order) until none
 * is left, its first blockIdx.x, the next ones from the counter p.bwd_next (zeroed by bwd_pre) plus
 * gridDim.x, taken by the producer thread after its last stage of the item: the heaviest tiles of
 * a causal call (the first of each group) start first, as the normal grid's do, and an SM that
 * finishes early takes the next item, as the hardware's block scheduler did.
 * What it saves: the normal grid's CTA pays, once each, the K / V load and the first Q / dO stages
 * before its first wgmma and the dK / dV epilogue after its last (session 34: about 1.4% of plain
 * f+b at S 4096, about twice that under causal). Here the consumers arrive on bar_kv_empty after
 * the item's last step (every wgmma that reads K or V complete), so the producer loads the next
 * item's K / V and first stages while they write dK / dV; the ring's stage and phase run on across
 * items, and the dQ staging's bulk reads are waited for as between steps. The item's index goes
 * to the consumers in shared memory, announced with its K / V on bar_kv; ~0u there says none is
 * left. */
#ifndef FA4_SM90_BWD_PERSIST
#define FA4_SM90_BWD_PERSIST 0
#endif
#if FA4_SM90_BWD_PERSIST && FA4_SM90_BWD_BM == 80 && !FA4_SM90_BWD_GQA_PROG && !FA4_SM90_BWD_DQ_FUSED && \
    !FA4_SM90_BWD_AUX_WIN
/* work item l of the normal grid's linear order (blockIdx.x + tiles (blockIdx.y + units
 * blockIdx.z)) as fa4_bwd_cta reads it; never tiles_slowest 1 (the launcher's rule) */
__device__ __forceinline__ void fa4_bwd_item(const fa4_params &p, unsigned l, int &n_tile, int &hk, int &b)
{
    const unsigned tiles = (unsigned)((p.seqlen_k + kBN - 1) / kBN), units_h = (unsigned)p.hkv;
    unsigned t, u;
    if (p.tiles_slowest > 1) {
        const unsigned g0 = (unsigned)p.tiles_slowest, units = units_h * (unsigned)p.batch;
        const unsigned grp = l / (g0 * tiles), rem = l - grp * g0 * tiles;
        const unsigned g = units - grp * g0 < g0 ? units - grp * g0 : g0;
        t = rem / g;
        u = grp * g0 + rem - t * g;
    } else {
        u = l / tiles;
        t = l - u * tiles;
    }
    n_tile = (int)t;
    hk = (int)(u % units_h);
    b = (int)(u / units_h);
}

extern "C" __global__ void __launch_bounds__(kBThreads, 1)
    fa4_sm90_bwd_main_persist(const fa4_params p, const fa4_aux aux, const __grid_constant__ fa4_tmap tm_q,
                              const __grid_constant__ fa4_tmap tm_k, const __grid_constant__ fa4_tmap tm_v,
                              const __grid_constant__ fa4_tmap tm_do, const __grid_constant__ fa4_tmap tm_lse2,
                              const __grid_constant__ fa4_tmap tm_dpsum, const __grid_constant__ fa4_tmap tm_dq)
{
    const fa4_bwd_smem sm = {fa4_bwd_smem_base()};
    fa4_pdl_launch();
    const int tid = threadIdx.x;
    const unsigned items =
        (unsigned)((p.seqlen_k + kBN - 1) / kBN) * (unsigned)p.hkv * (unsigned)p.batch; /* < 2^31 (launcher) */
    if (tid == 0) {
        fa4_mbar_init(sm.bar_kv(), 1);
        fa4_mbar_init(sm.bar_kv_empty(), 8); /* every consumer warp */
#pragma unroll
        for (int s = 0; s < kBStages; ++s) {
            fa4_mbar_init(sm.bar_full(s), kBFullArrivals);
            fa4_mbar_init(sm.bar_empty(s), kBEmptyArrivals);
        }
        fa4_mbar_init_fence();
    }
    __syncthreads();

    const int wg = tid >> 7;
    if (wg == 0) {
        /* ------------------------------------------------------------------- producer */
        fa4_regs_dec<kBProducerRegs>();
        if (tid != 0)
            return;
        fa4_tma_prefetch(&tm_q);
        fa4_tma_prefetch(&tm_k);
        fa4_tma_prefetch(&tm_v);
        fa4_tma_prefetch(&tm_do);
        fa4_tma_prefetch(&tm_lse2);
        fa4_tma_prefetch(&tm_dpsum);
        /* (few live values: the producer has 24 registers; PDL's wait is repeated where an item
         * is skipped, a no-op after the first) */
        unsigned l = blockIdx.x;
        int it = 0; /* steps issued: the ring's stage and phase */
        for (unsigned j = 0;; ++j) {
            int n_tile = 0, hk = 0, b = 0;
            fa4_seq seq;
            for (;;) { /* the next item with keys (past the sequence under varlen: none) */
                if (l >= items)
                    break;
                fa4_bwd_item(p, l, n_tile, hk, b);
                seq = fa4_seq_info(p, b);
                if (n_tile * kBN < seq.len_k)
                    break;
                fa4_pdl_wait();
                l = gridDim.x + (unsigned)atomicAdd(p.bwd_next, 1);
            }
            if (j > 0) /* the consumers are past the previous item's last step */
                fa4_mbar_wait(sm.bar_kv_empty(), (j - 1u) & 1u);
            asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(sm.persist_item()), "r"(l < items ? l : ~0u) : "memory");
            if (l >= items) {
                fa4_mbar_arrive(sm.bar_kv()); /* (release: the ~0u above is seen after the wait) */
                break;
            }
            const int qb = p.cu_seqlens_q ? 0 : b;
            fa4_bwd_produce_kv(sm, &tm_k, &tm_v, (int)seq.row_k + n_tile * kBN, hk, p.cu_seqlens_k ? 0 : b);
            if (j == 0)
                fa4_pdl_wait();
            const int qrow0 = (int)seq.row_q, wrow0 = (int)seq.ws_row;
            fa4_bwd_walk(p, b, hk, n_tile, seq.len_q, [&](int h, int m0, int tw) {
                fa4_bwd_produce_step<false, 0>(p, sm, &tm_q, &tm_do, &tm_lse2, &tm_dpsum, it % kBStages,
                                               (unsigned)(it / kBStages) & 1u, it, h, m0, tw, qrow0, wrow0, qb);
                ++it;
            });
            l = gridDim.x + (unsigned)atomicAdd(p.bwd_next, 1);
        }
    } else {
        /* ------------------------------------------------------------------- consumers */
        fa4_regs_inc<kBConsumerRegs>();
        fa4_pdl_wait();
        const int cw = FA4_SM90_DESC_ADD ? fa4_warp_uniform(wg - 1) : wg - 1, warp = (tid >> 5) & 3, lane = tid & 31;
        if (warp == 0 && lane == 0 && cw < kBDqWgs) /* no turn held (default mode: none taken) */
            asm volatile("st.shared.u64 [%0], %1;\n" ::"r"(sm.dq_pending(cw)), "l"(0ull) : "memory");
        int it = 0;
        for (unsigned j = 0;; ++j) {
            fa4_mbar_wait(sm.bar_kv(), j & 1u);
            unsigned l;
            asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(l) : "r"(sm.persist_item()) : "memory");
            if (l == ~0u)
                break;
            int n_tile, hk, b;
            fa4_bwd_item(p, l, n_tile, hk, b);
            const fa4_seq seq = fa4_seq_info(p, b);
            const int n0 = n_tile * kBN;
            float dk[kDp / 8][4], dv[kDvp / 8][4];
#pragma unroll
            for (int i = 0; i < kDp / 8; ++i)
                dk[i][0] = dk[i][1] = dk[i][2] = dk[i][3] = 0.f;
#pragma unroll
            for (int i = 0; i < kDvp / 8; ++i)
                dv[i][0] = dv[i][1] = dv[i][2] = dv[i][3] = 0.f;
            const fa4_bwd_consumer c = {p,    aux, sm,        b,         cw,     warp,           lane,
                                        n0,   seq.len_q, seq.len_k, n_tile, (int)seq.ws_row, &tm_dq};
            int hp = 0, m0p = 0;
            fa4_bwd_aff aff;
            fa4_bwd_aff_reset(aff);
            fa4_bwd_consume_walk(c, p, b, hk, n_tile, seq.len_q, dk, dv, it, hp, m0p, aff);
            /* every wgmma of this warp's steps is complete (finish_step): K and V may go (the item's
             * slot is read above, before this warp's arrival) */
            __syncwarp();
            if (lane == 0)
                fa4_mbar_arrive(sm.bar_kv_empty());
            fa4_bwd_store_dkv(p, dk, dv, b, hk, seq, n0, cw, warp, lane);
        }
        if (warp == 0 && lane == 0 && cw < kBDqWgs)
            fa4_bulk_wait<0>(); /* the last dQ reduce-adds are done before the CTA's shared memory goes */
    }
}
#endif /* FA4_SM90_BWD_PERSIST */
#endif /* head dims */
