/*
 * emit_deriv.c - the backward's entry points of "fa4_mod.cuh", built on the dual-number form of
 * score_mod that emit_cuda.c writes: fa4_score_mod_fwd_deriv (value and d score_mod / d score, the
 * score seeded), fa4_score_mod_fwd_deriv_sites (the same, plus the clamped index each trainable aux
 * read site used), fa4_score_mod_aux_grad (one trainable read site seeded at a time) and the
 * per-thread run accumulators of aux gradients (fa4_aux_grad_acc).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit_internal.h"

static void collect_sites_expr(const fa4__expr *e, const fa4__expr **sites, int *n, int max)
{
    if (!e)
        return;
    if (e->kind == EX_INDEX && e->type == TY_FLOAT && e->var->kind == VK_AUX && *n < max)
        sites[(*n)++] = e;
    collect_sites_expr(e->a, sites, n, max);
    collect_sites_expr(e->b, sites, n, max);
    collect_sites_expr(e->c, sites, n, max);
    for (int i = 0; i < e->nargs; i++)
        collect_sites_expr(e->args[i], sites, n, max);
}

static void collect_sites(const fa4__stmt *s, const fa4__expr **sites, int *n, int max)
{
    if (!s)
        return;
    collect_sites_expr(s->e, sites, n, max);
    for (int i = 0; i < s->nitems; i++)
        collect_sites(s->items[i], sites, n, max);
    collect_sites(s->then_s, sites, n, max);
    collect_sites(s->else_s, sites, n, max);
}

/*
 * The kernels' accumulation of the terms (where FA4_NUM_AUX_GRAD_SITES > 0): one atomic per run of
 * equal indices in a thread's walk over its elements, then one per warp where its lanes end on
 * one index. Far from the diagonal a relative-position table is read at one clamped bucket for a
 * whole tile, and per-element atomics (even warp-aggregated) queued on that one address made the
 * backward 5x slower than plain attention. The index comes from the pass that computes the value
 * (fa4_score_mod_fwd_deriv_sites), runs are 32-bit indices (the read index is an int), and the
 * per-element update is two compares, a select, an add and one branch around the atomic (ptxas
 * branches there even for an inline-PTX predicated red): a first form that recomputed the index
 * and compared pointers under nested branches cost ~60 SASS instructions per element, which
 * was most of the remaining time once the atomics were combined.
 */
/*
 * The relative form's backward entry points (score_mod = score + g(b, h, kv_idx - q_idx),
 * emit_rel.c, which defines FA4_SCORE_MOD_REL before this text). There g, the index each trainable
 * site reads and d score_mod / d x at that index are functions of the offset kv_idx - q_idx alone
 * (score is read only in `score + g`, so no derivative with respect to an aux read involves it),
 * and the sm90 backward evaluates them once per offset of a thread's fragment instead of twice
 * per element (bwd_consumer.cuh, grads_rel). fa4_score_mod_rel_sites runs the dual form with the
 * score a constant 0 and site k seeded, one pass per site: its value is 0 + g, which is g except
 * that -0 becomes +0 (score + g then differs only in the sign of a zero score, which exp2 does not
 * see). fa4_score_mod_rel_grad_acc hands one offset's summed term to the runs; a zero sum adds
 * nothing, so a masked pair never meets an infinite coefficient (0 * inf).
 */
static void emit_rel_sites(fa4__emitter *E, const fa4__expr *const *sites, int n, int nall)
{
    fa4__out(E,
             "#if FA4_SCORE_MOD_REL\n"
             "// g of score_mod = score + g(kv_idx - q_idx) and, per trainable site k, the index it read\n"
             "// (at[k]; -1: the site did not run) and d score_mod / d x[at[k]] (coef[k]); all three\n"
             "// depend on the positions only through kv_idx - q_idx\n"
             "#define FA4_SCORE_MOD_REL_SITES 1\n"
             "__device__ __forceinline__ float fa4_score_mod_rel_sites(int b, int h, int q_idx, int kv_idx, "
             "const fa4_aux &fa4_a,\n"
             "                                                         int *at, float *coef)\n{\n"
             "    long long s[%d];\n"
             "    float v = 0.0f;\n",
             nall);
    for (int k = 0; k < n; k++)
        fa4__out(E,
                 "    { // site %d: %s[...] at line %d\n"
                 "        for (int j = 0; j < %d; j++)\n"
                 "            s[j] = -1;\n"
                 "        const fa4_dual r = fa4_score_mod_dual(fa4_dconst(0.0f), b, h, q_idx, kv_idx, "
                 "fa4_a, %d, s);\n"
                 "        at[%d] = (int)s[%d];\n"
                 "        coef[%d] = r.d;\n"
                 "        v = r.v;\n"
                 "    }\n",
                 k, sites[k]->var->name, sites[k]->line, nall, sites[k]->site, k, sites[k]->site, k);
    fa4__out(E, "    return v;\n}\n"
                "// the summed term d of one offset (indices at, coefficients coef) into the runs\n"
                "__device__ __forceinline__ void fa4_score_mod_rel_grad_acc(const fa4_aux &fa4_a, "
                "const int *at, const float *coef,\n"
                "                                                          float d, fa4_aux_grad_acc &acc)\n{\n");
    for (int k = 0; k < n; k++)
        fa4__out(E,
                 "    { // site %d\n"
                 "        const int i = at[%d], prev = acc.at[%d];\n"
                 "        fa4_aux_grad_red_if(%d, fa4_a.%s_grad, acc.sum[%d], i, prev);\n"
                 "        acc.sum[%d] = (i == prev ? acc.sum[%d] : 0.0f) + (d != 0.0f ? d * coef[%d] : 0.0f);\n"
                 "        acc.at[%d] = i;\n"
                 "    }\n",
                 k, k, k, k, sites[k]->var->name, k, k, k, k, k);
    fa4__out(E, "}\n#else\n#define FA4_SCORE_MOD_REL_SITES 0\n#endif\n");
}

static void emit_aux_grad_acc(fa4__emitter *E, const fa4__expr *const *sites, int n, int nall)
{
    fa4__out(
        E,
        "\n// Run-combining accumulation for the backward kernels. A thread keeps, per read site,\n"
        "// the index of its current run of terms and the run's sum (the kernel's registers):\n"
        "// a term for another index first adds the finished run into global memory, and\n"
        "// fa4_aux_grad_flush (every lane of the warp, at the end of a tile) adds what is left,\n"
        "// one atomic per warp where all its lanes end on one index. In the default mode the\n"
        "// adds are float atomics in any order (not bitwise reproducible, as\n"
        "// fa4_score_mod_aux_grad); in deterministic mode they are integer adds (below).\n"
        "//\n"
        "// Deterministic mode (programs built with FA4_AUX_FX 1, which the launcher runs when\n"
        "// fa4_bwd_args.deterministic is set and the mod has trainable aux tensors): in place of\n"
        "// each such tensor's fp32 gradient the host passes its fixed-point accumulator in the\n"
        "// backward's workspace. Entry i is three 64-bit words: hi and lo, the sum being\n"
        "// hi 2^-20 + lo 2^-56 (a term is split exactly but for its bits below 2^-57, and integer\n"
        "// adds give the same bits in any order), and flags for terms that are not finite or of\n"
        "// magnitude 2^40 or more (1: NaN, 2: positive, 4: negative; both signs make NaN). The\n"
        "// backward's last kernel (bwd_post.cu's fa4_aux_fx_post) adds each sum into the gradient.\n"
        "#if defined(FA4_AUX_FX) && FA4_AUX_FX\n"
        "__device__ __forceinline__ bool fa4_aux_fx_split(float v, long long &hi, long long &lo)\n{\n"
        "    if (!(fabsf(v) < 0x1p40f))\n"
        "        return false;\n"
        "    const float s = __fmul_rn(v, 0x1p20f), h = rintf(s); // exact; s - h exact too\n"
        "    hi = (long long)h;\n"
        "    lo = __float2ll_rn(__fmul_rn(__fsub_rn(s, h), 0x1p36f));\n"
        "    return true;\n"
        "}\n"
        "// One term into global memory: into the accumulator's entry i\n"
        "__device__ __forceinline__ void fa4_aux_grad_global(float *grad, int i, float v)\n{\n"
        "    unsigned long long *e = (unsigned long long *)grad + 3ll * i;\n"
        "    long long hi, lo;\n"
        "    if (!fa4_aux_fx_split(v, hi, lo)) {\n"
        "        atomicOr(e + 2, v != v ? 1ull : v > 0.0f ? 2ull : 4ull);\n"
        "        return;\n"
        "    }\n"
        "    if (hi)\n"
        "        atomicAdd(e, (unsigned long long)hi);\n"
        "    if (lo)\n"
        "        atomicAdd(e + 1, (unsigned long long)lo);\n"
        "}\n"
        "#else\n"
        "// One term into global memory: grad[i] += v\n"
        "__device__ __forceinline__ void fa4_aux_grad_global(float *grad, int i, float v)\n{\n"
        "    atomicAdd(grad + i, v);\n"
        "}\n"
        "#endif\n"
        "// Where a finished run of site k's terms goes (grad: the site's gradient tensor, i the\n"
        "// index). A kernel with a sink of its own (the sm90 backward's shared-memory window)\n"
        "// defines FA4_AUX_GRAD_SINK to 1 and declares fa4_aux_grad_commit before this header;\n"
        "// else the term goes into global memory.\n"
        "#if !defined(FA4_AUX_GRAD_SINK) || !FA4_AUX_GRAD_SINK\n"
        "__device__ __forceinline__ void fa4_aux_grad_commit(int k, float *grad, int i, float v)\n{\n"
        "    (void)k;\n"
        "    fa4_aux_grad_global(grad, i, v);\n"
        "}\n"
        "#endif\n"
        "struct fa4_aux_grad_acc {\n"
        "    int at[FA4_NUM_AUX_GRAD_SITES]; // -1: no run yet\n"
        "    float sum[FA4_NUM_AUX_GRAD_SITES];\n"
        "};\n"
        "__device__ __forceinline__ void fa4_aux_grad_begin(fa4_aux_grad_acc &acc)\n{\n"
        "#pragma unroll\n"
        "    for (int k = 0; k < FA4_NUM_AUX_GRAD_SITES; k++) {\n"
        "        acc.at[k] = -1;\n"
        "        acc.sum[k] = 0.0f;\n"
        "    }\n"
        "}\n"
        "// a finished run (index prev) of site k committed when the next term is for index i\n"
        "__device__ __forceinline__ void fa4_aux_grad_red_if(int k, float *grad, float v, int i, int prev)\n{\n"
        "    if (i != prev && prev >= 0)\n"
        "        fa4_aux_grad_commit(k, grad, prev, v);\n"
        "}\n"
        "// score_mod's value and d score_mod / d score (fa4_score_mod_fwd_deriv) and, in the same\n"
        "// pass, the index that trainable site k read (at[k]; -1: the site did not run)\n"
        "__device__ __forceinline__ float fa4_score_mod_fwd_deriv_sites(float score, int b, int h, "
        "int q_idx, int kv_idx,\n"
        "                                                               const fa4_aux &fa4_a, "
        "float *dscore, int *at)\n{\n");
    fa4__out(E,
             "    long long s[%d];\n"
             "    for (int k = 0; k < %d; k++)\n"
             "        s[k] = -1;\n"
             "    fa4_dual r = fa4_score_mod_dual(fa4_dmake(score, 1.0f), b, h, q_idx, kv_idx, "
             "fa4_a, -1, s);\n",
             nall, nall);
    for (int k = 0; k < n; k++)
        fa4__out(E, "    at[%d] = (int)s[%d]; // <= INT_MAX: the index of the read is an int\n", k,
                 sites[k]->site);
    fa4__out(E, "    *dscore = r.d;\n    return r.v;\n}\n"
                "// g * d score_mod / d x[at[k]] into the runs (at from fa4_score_mod_fwd_deriv_sites)\n"
                "__device__ __forceinline__ void fa4_score_mod_aux_grad_acc(float score, int b, "
                "int h, int q_idx, int kv_idx,\n"
                "                                                           const fa4_aux &fa4_a, "
                "float g, const int *at,\n"
                "                                                           fa4_aux_grad_acc &acc)\n{\n");
    for (int k = 0; k < n; k++) {
        const fa4__expr *x = sites[k];
        fa4__out(E,
                 "    { // site %d: %s[...] at line %d\n"
                 "        const fa4_dual r = fa4_score_mod_dual(fa4_dconst(score), b, h, q_idx, "
                 "kv_idx, fa4_a, %d, nullptr);\n"
                 "        const int i = at[%d], prev = acc.at[%d];\n"
                 "        fa4_aux_grad_red_if(%d, fa4_a.%s_grad, acc.sum[%d], i, prev);\n"
                 "        acc.sum[%d] = (i == prev ? acc.sum[%d] : 0.0f) + g * r.d;\n"
                 "        acc.at[%d] = i;\n"
                 "    }\n",
                 k, x->var->name, x->line, x->site, k, k, k, x->var->name, k, k, k, k);
    }
    fa4__out(E, "}\n");
    if (E->rel_form)
        emit_rel_sites(E, sites, n, nall);
    fa4__out(E, "__device__ __forceinline__ void fa4_aux_grad_flush(const fa4_aux &fa4_a, "
                "fa4_aux_grad_acc &acc)\n{\n"
                "    const unsigned act = __activemask();\n");
    for (int k = 0; k < n; k++)
        fa4__out(E,
                 "    { // site %d\n"
                 "        const int i = acc.at[%d];\n"
                 "        float s = acc.sum[%d];\n"
                 "        acc.at[%d] = -1;\n"
                 "        acc.sum[%d] = 0.0f;\n"
                 "        int same = 0;\n"
                 "        if (act == 0xffffffffu)\n"
                 "            (void)__match_all_sync(act, i, &same);\n"
                 "        if (same) {\n"
                 "            for (int o = 16; o > 0; o >>= 1)\n"
                 "                s += __shfl_xor_sync(0xffffffffu, s, o);\n"
                 "            if (i >= 0 && (threadIdx.x & 31) == 0)\n"
                 "                fa4_aux_grad_commit(%d, fa4_a.%s_grad, i, s);\n"
                 "        } else if (i >= 0) {\n"
                 "            fa4_aux_grad_commit(%d, fa4_a.%s_grad, i, s);\n"
                 "        }\n"
                 "    }\n",
                 k, k, k, k, k, k, sites[k]->var->name, k, sites[k]->var->name);
    fa4__out(E, "}\n");
    fa4__emit_ival_helpers(E);
    fa4__out(E,
             "// The indices trainable site k can read over a box of positions (batch b, heads\n"
             "// [h_lo, h_hi], queries [q_lo, q_hi], keys [kv_lo, kv_hi]; positions as score_mod sees\n"
             "// them), within its tensor: [lo, hi], empty when hi < lo. A kernel may keep the\n"
             "// gradient entries of that range in a window of its own (the sm90 backward's shared\n"
             "// memory); its fa4_aux_grad_commit sends any index outside the window to global\n"
             "// memory, so the range decides only where the window sits, never what is added.\n"
             "__device__ __forceinline__ void fa4_aux_grad_site_range(int fa4_k, int fa4_b, int fa4_h_lo, "
             "int fa4_h_hi, int fa4_q_lo,\n"
             "                                                        int fa4_q_hi, int fa4_kv_lo, int "
             "fa4_kv_hi, const fa4_aux &fa4_a,\n"
             "                                                        long long &fa4_lo, long long &fa4_hi)\n{\n"
             "    (void)fa4_b, (void)fa4_h_lo, (void)fa4_h_hi, (void)fa4_q_lo, (void)fa4_q_hi, (void)fa4_kv_lo, "
             "(void)fa4_kv_hi;\n"
             "    fa4_lo = 0;\n"
             "    fa4_hi = -1;\n"
             "    switch (fa4_k) {\n");
    for (int k = 0; k < n; k++)
        fa4__emit_site_range(E, sites[k], k);
    fa4__out(E, "    default: break;\n"
                "    }\n"
                "}\n"
                "// site k's gradient tensor\n"
                "__device__ __forceinline__ float *fa4_aux_grad_site_grad(int k, const fa4_aux &fa4_a)\n{\n"
                "    switch (k) {\n");
    for (int k = 0; k < n; k++)
        fa4__out(E, "    case %d: return fa4_a.%s_grad;\n", k, sites[k]->var->name);
    fa4__out(E, "    default: return nullptr;\n"
                "    }\n"
                "}\n");
}

/* Site x's number among score_mod's trainable read sites (the order of FA4_NUM_AUX_GRAD_SITES),
 * -1 if it is not one. */
int fa4__trainable_site_index(const fa4__mod *m, const fa4__expr *x)
{
    int cap = m->score ? m->score->nsites : 0, nsites = 0, k = -1;
    const fa4__expr **sites = malloc(sizeof *sites * (size_t)(cap + 1));
    if (!sites)
        return -1;
    if (m->score)
        collect_sites(m->score->body, sites, &nsites, cap);
    for (int i = 0, n = 0; i < nsites && k < 0; i++)
        if (m->aux[sites[i]->var->aux_index].trainable) {
            if (sites[i] == x)
                k = n;
            n++;
        }
    free(sites);
    return k;
}

void fa4__emit_deriv_wrappers(fa4__emitter *E)
{
    const fa4__mod *m = E->m;
    fa4__out(E, "\n// d score_mod / d score by forward-mode differentiation.\n");
    fa4__out(E, "__device__ __forceinline__ float fa4_score_mod_fwd_deriv(float score, int b, "
                "int h, int q_idx, int kv_idx,\n"
                "                                                         const fa4_aux &fa4_a, "
                "float *dscore)\n{\n");
    if (m->score) {
        fa4__out(E, "    fa4_dual r = fa4_score_mod_dual(fa4_dmake(score, 1.0f), b, h, q_idx, "
                    "kv_idx, fa4_a, -1, nullptr);\n"
                    "    *dscore = r.d;\n"
                    "    return r.v;\n}\n");
    } else {
        fa4__out(E, "    *dscore = 1.0f;\n    return score;\n}\n");
    }
    /* the trainable read sites, in source order */
    int cap = m->score ? m->score->nsites : 0, nsites = 0, n = 0;
    const fa4__expr **sites = malloc(sizeof *sites * (size_t)(cap + 1));
    if (!sites) {
        E->failed = 1;
        return;
    }
    if (m->score)
        collect_sites(m->score->body, sites, &nsites, cap);
    for (int i = 0; i < nsites; i++)
        if (m->aux[sites[i]->var->aux_index].trainable)
            sites[n++] = sites[i];
    fa4__out(
        E,
        "\n// For trainable aux read site k of score_mod, reading x[i]: where[k] = &x_grad[i] and\n"
        "// what[k] = g * d score_mod / d x[i]; where[k] = nullptr if the site did not run.\n"
        "#define FA4_NUM_AUX_GRAD_SITES %d\n",
        n);
    fa4__out(E,
             "__device__ __forceinline__ void fa4_score_mod_aux_grad_terms(float score, int b, "
             "int h, int q_idx, int kv_idx,\n"
             "                                                             const fa4_aux &fa4_a, "
             "float g, float **where,\n"
             "                                                             float *what)\n{\n");
    if (!n)
        fa4__out(E, "    // no trainable aux tensors\n");
    for (int k = 0; k < n; k++) {
        const fa4__expr *x = sites[k];
        fa4__out(E, "    { // site %d: %s[...] at line %d\n", k, x->var->name, x->line);
        fa4__out(E,
                 "        long long at[%d];\n"
                 "        for (int s = 0; s < %d; s++)\n"
                 "            at[s] = -1;\n"
                 "        fa4_dual r = fa4_score_mod_dual(fa4_dconst(score), b, h, q_idx, "
                 "kv_idx, fa4_a, %d, at);\n"
                 "        where[%d] = at[%d] >= 0 ? &fa4_a.%s_grad[at[%d]] : nullptr;\n"
                 "        what[%d] = g * r.d;\n"
                 "    }\n",
                 cap, cap, x->site, k, x->site, x->var->name, x->site, k);
    }
    fa4__out(E, "}\n");
    if (n)
        fa4__out(E,
                 "\n// One aux-gradient term into global memory. When the whole warp adds into one\n"
                 "// address (a bias table clamped to its last bucket, a per-head scalar), the warp\n"
                 "// sums first and one lane adds: 32 times fewer atomics on the hot address.\n"
                 "__device__ __forceinline__ void fa4_aux_grad_add(float *where, float what)\n{\n"
                 "    const unsigned act = __activemask();\n"
                 "    int same = 0;\n"
                 "    if (act == 0xffffffffu)\n"
                 "        (void)__match_all_sync(act, (unsigned long long)where, &same);\n"
                 "    if (same) {\n"
                 "        for (int o = 16; o > 0; o >>= 1)\n"
                 "            what += __shfl_xor_sync(0xffffffffu, what, o);\n"
                 "        if ((threadIdx.x & 31) == 0)\n"
                 "            atomicAdd(where, what);\n"
                 "    } else {\n"
                 "        atomicAdd(where, what);\n"
                 "    }\n"
                 "}\n");
    fa4__out(E,
             "\n// The same terms, accumulated: atomicAdd(&x_grad[i], g * d score_mod / d x[i]).\n"
             "__device__ __forceinline__ void fa4_score_mod_aux_grad(float score, int b, int h, "
             "int q_idx, int kv_idx,\n"
             "                                                       const fa4_aux &fa4_a, "
             "float g)\n{\n");
    if (n)
        fa4__out(E, "    float *where[FA4_NUM_AUX_GRAD_SITES];\n"
                    "    float what[FA4_NUM_AUX_GRAD_SITES];\n"
                    "    fa4_score_mod_aux_grad_terms(score, b, h, q_idx, kv_idx, fa4_a, g, where, "
                    "what);\n"
                    "    for (int k = 0; k < FA4_NUM_AUX_GRAD_SITES; k++)\n"
                    "        if (where[k])\n"
                    "            fa4_aux_grad_add(where[k], what[k]);\n");
    else
        fa4__out(E, "    // no trainable aux tensors\n");
    fa4__out(E, "}\n");
    if (n)
        emit_aux_grad_acc(E, sites, n, cap);
    free(sites);
}
