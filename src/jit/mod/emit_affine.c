/*
 * emit_affine.c - the affine form of score_mod. Where score_mod is, over a box of positions
 * [q_lo, q_hi] x [kv_lo, kv_hi], ds * score + c + dq * (q_idx - q_lo) + dk * (kv_idx - kv_lo) with
 * ds, c, dq, dk the same everywhere in the box (alibi: ds 1, c = slopes[h] * (kv_lo - q_lo),
 * dq = -slopes[h], dk = slopes[h]; head_scale: ds = expf(log_temp[h])), the kernels ask once per
 * warp and tile for the four numbers (fa4_score_mod_affine) and apply them with two FMAs a score,
 * where the mod as written costs alibi a scale multiply, an integer subtraction, an int-to-float
 * conversion and an FMA (notes/issue8-mod-cost.md).
 *
 * The form is found statically: score_mod made of declarations and a return (as the tile form),
 * whose value is built from score, q_idx and kv_idx by + and -, a multiply by a position-free
 * factor, a float division by a position-free divisor, unary minus and (float) of an int that is
 * itself affine in the positions (int + - * by a position-free int). Every other position-free
 * subexpression (aux reads at h, scalar aux, helpers called on them) is computed once, with the
 * forward's own expressions. Anything else depending on a position or the score: no form
 * (FA4_SCORE_MOD_AFFINE 0).
 *
 * Soundness at run time: fa4_score_mod_affine returns false (and the kernel uses score_mod as
 * written) unless every int part stays within +-2^24 over the box, with coefficients within that
 * too (so no int32 arithmetic of the mod wraps there, and (float) of it is exact, as the affine
 * value assumes), and the four numbers are finite. Where it returns true, the value at each
 * position equals score_mod's up to the rounding of a few float operations (the mod's own
 * operations round at each position; the form rounds c at the box's first position and adds the
 * offsets), i.e. within a few ulps of the largest |term| over the box: test_mod_host checks it
 * against the evaluator inside random boxes. Checked builds keep score_mod as written.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit_internal.h"

enum { AK_FAIL = 0, AK_UNIFORM, AK_INT, AK_FLOAT };

typedef struct aff_ctx {
    fa4__emitter *E;
    const fa4__func *f;
    unsigned char *score_dep; /* per slot: depends on the score */
    unsigned char *index_dep; /* per slot: depends on q_idx or kv_idx */
    int emit;                 /* 0: classify only; 1: write the temporaries */
    int nodes;
    unsigned char nkind[4096]; /* the kind of each node written (for the unread-temporary casts) */
} aff_ctx;

typedef struct aval {
    int kind; /* AK_* */
    int n;    /* node: fa4_au<n> (uniform) or fa4_as/ac/aq/ak<n> */
    int ds;   /* the score's coefficient, statically: 0 zero, 1 exactly one, 2 anything */
} aval;

/* printf into a temporary's text (the names are short: nothing is cut at these sizes) */
static void fmt(char *dst, size_t n, const char *f, ...) __attribute__((format(printf, 3, 4)));
static void fmt(char *dst, size_t n, const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    const int w = vsnprintf(dst, n, f, ap);
    va_end(ap);
    if (w < 0 && n)
        dst[0] = '\0';
}

static int is_param(const aff_ctx *t, const fa4__expr *e, int i)
{
    return e->kind == EX_VAR && e->var == t->f->params[i];
}

static const fa4__expr *local_init(const aff_ctx *t, const fa4__var *v, int *found)
{
    const fa4__stmt *body = t->f->body;
    for (int i = 0; i < body->nitems; i++)
        if (body->items[i]->kind == ST_DECL && body->items[i]->var == v) {
            *found = 1;
            return body->items[i]->e;
        }
    *found = 0;
    return NULL;
}

static int position_free(const aff_ctx *t, const fa4__expr *e)
{
    return !fa4__expr_depends(e, t->score_dep) && !fa4__expr_depends(e, t->index_dep);
}

static const char *ctype(int ty)
{
    return ty == TY_FLOAT ? "float" : ty == TY_INT ? "int" : "bool";
}

/* an int node's value and coefficients, from a uniform node or an int node */
static void int_parts(const aff_ctx *t, aval v, char *c, char *q, char *k, size_t n)
{
    (void)t;
    if (v.kind == AK_UNIFORM) {
        fmt(c, n, "(long long)fa4_au%d", v.n);
        fmt(q, n, "0LL");
        fmt(k, n, "0LL");
    } else {
        fmt(c, n, "fa4_ac%d", v.n);
        fmt(q, n, "fa4_aq%d", v.n);
        fmt(k, n, "fa4_ak%d", v.n);
    }
}

/* a float node's four numbers, from a uniform node or a float node */
static void float_parts(const aff_ctx *t, aval v, char (*p)[40])
{
    (void)t;
    if (v.kind == AK_UNIFORM) {
        fmt(p[0], 40, "0.0f");
        fmt(p[1], 40, "fa4_au%d", v.n);
        fmt(p[2], 40, "0.0f");
        fmt(p[3], 40, "0.0f");
    } else {
        fmt(p[0], 40, "fa4_as%d", v.n);
        fmt(p[1], 40, "fa4_ac%d", v.n);
        fmt(p[2], 40, "fa4_aq%d", v.n);
        fmt(p[3], 40, "fa4_ak%d", v.n);
    }
}

static aval mk(int kind, int n)
{
    aval v = {kind, n, 0};
    return v;
}

/* an int node: c, q, k as expressions; then the range check, which zeroes it where it fails */
static aval emit_int(aff_ctx *t, const char *c, const char *q, const char *k)
{
    const int n = t->nodes++;
    if (t->emit && n < 4096)
        t->nkind[n] = AK_INT;
    if (t->emit) {
        fa4__out(t->E, "    long long fa4_ac%d = %s, fa4_aq%d = %s, fa4_ak%d = %s;\n", n, c, n, q, n, k);
        fa4__out(t->E, "    fa4_ok = fa4_aff_fit(fa4_ok, fa4_ac%d, fa4_aq%d, fa4_ak%d, fa4_wq, fa4_wk);\n", n, n, n);
    }
    return mk(AK_INT, n);
}

static aval with_ds(aval v, int ds)
{
    v.ds = ds;
    return v;
}

static aval emit_float(aff_ctx *t, const char *s, const char *c, const char *q, const char *k)
{
    const int n = t->nodes++;
    if (t->emit && n < 4096)
        t->nkind[n] = AK_FLOAT;
    if (t->emit)
        fa4__out(t->E, "    const float fa4_as%d = %s, fa4_ac%d = %s, fa4_aq%d = %s, fa4_ak%d = %s;\n", n, s, n, c, n,
                 q, n, k);
    return mk(AK_FLOAT, n);
}

static aval node(aff_ctx *t, const fa4__expr *e);

static aval node_bin(aff_ctx *t, const fa4__expr *e)
{
    const aval a = node(t, e->a), b = node(t, e->b);
    if (a.kind == AK_FAIL || b.kind == AK_FAIL)
        return mk(AK_FAIL, 0);
    char s[4][256];
    if (e->type == TY_INT) {
        if ((a.kind != AK_INT && a.kind != AK_UNIFORM) || (b.kind != AK_INT && b.kind != AK_UNIFORM))
            return mk(AK_FAIL, 0);
        char ac[40], aq[40], ak[40], bc[40], bq[40], bk[40];
        int_parts(t, a, ac, aq, ak, sizeof ac);
        int_parts(t, b, bc, bq, bk, sizeof bc);
        switch (e->op) {
        case TK_PLUS:
        case TK_MINUS: {
            const char op = e->op == TK_PLUS ? '+' : '-';
            fmt(s[1], sizeof s[1], "%s %c %s", ac, op, bc);
            fmt(s[2], sizeof s[2], "%s %c %s", aq, op, bq);
            fmt(s[3], sizeof s[3], "%s %c %s", ak, op, bk);
            return emit_int(t, s[1], s[2], s[3]);
        }
        case TK_STAR: {
            if (a.kind == AK_INT && b.kind == AK_INT)
                return mk(AK_FAIL, 0);
            const aval u = a.kind == AK_UNIFORM ? a : b, v = a.kind == AK_UNIFORM ? b : a;
            char vc[40], vq[40], vk[40];
            int_parts(t, v, vc, vq, vk, sizeof vc);
            fmt(s[1], sizeof s[1], "%s * (long long)fa4_au%d", vc, u.n);
            fmt(s[2], sizeof s[2], "%s * (long long)fa4_au%d", vq, u.n);
            fmt(s[3], sizeof s[3], "%s * (long long)fa4_au%d", vk, u.n);
            return emit_int(t, s[1], s[2], s[3]);
        }
        default: return mk(AK_FAIL, 0);
        }
    }
    if (e->type != TY_FLOAT)
        return mk(AK_FAIL, 0);
    if ((a.kind != AK_FLOAT && a.kind != AK_UNIFORM) || (b.kind != AK_FLOAT && b.kind != AK_UNIFORM))
        return mk(AK_FAIL, 0);
    char pa[4][40], pb[4][40];
    float_parts(t, a, pa);
    float_parts(t, b, pb);
    switch (e->op) {
    case TK_PLUS:
    case TK_MINUS: {
        const char op = e->op == TK_PLUS ? '+' : '-';
        for (int i = 0; i < 4; i++)
            fmt(s[i], sizeof s[i], "%s %c %s", pa[i], op, pb[i]);
        /* 1 + 0 * u is exactly 1 wherever the numbers are finite (the form declines elsewhere) */
        const int ds = b.ds == 0 ? a.ds : a.ds == 0 && e->op == TK_PLUS ? b.ds : 2;
        return with_ds(emit_float(t, s[0], s[1], s[2], s[3]), ds);
    }
    case TK_STAR:
    case TK_SLASH: {
        if (b.kind != AK_UNIFORM && (e->op == TK_SLASH || a.kind != AK_UNIFORM))
            return mk(AK_FAIL, 0);
        const aval u = b.kind == AK_UNIFORM ? b : a;
        const char(*pv)[40] = b.kind == AK_UNIFORM ? pa : pb;
        const char op = e->op == TK_STAR ? '*' : '/';
        for (int i = 0; i < 4; i++)
            fmt(s[i], sizeof s[i], "%s %c fa4_au%d", pv[i], op, u.n);
        const int ds = (b.kind == AK_UNIFORM ? a.ds : b.ds) == 0 ? 0 : 2;
        return with_ds(emit_float(t, s[0], s[1], s[2], s[3]), ds);
    }
    default: return mk(AK_FAIL, 0);
    }
}

static aval node(aff_ctx *t, const fa4__expr *e)
{
    if (!e)
        return mk(AK_FAIL, 0);
    if (position_free(t, e)) {
        if (e->type != TY_INT && e->type != TY_FLOAT && e->type != TY_BOOL)
            return mk(AK_FAIL, 0);
        const int n = t->nodes++;
        if (t->emit && n < 4096)
            t->nkind[n] = AK_UNIFORM;
        if (t->emit) {
            fa4__out(t->E, "    const %s fa4_au%d = ", ctype(e->type), n);
            fa4__emit_bare(t->E, e);
            fa4__out(t->E, ";\n");
        }
        return mk(AK_UNIFORM, n);
    }
    char s[4][256];
    switch (e->kind) {
    case EX_VAR:
        if (is_param(t, e, 0))
            return with_ds(emit_float(t, "1.0f", "0.0f", "0.0f", "0.0f"), 1);
        if (is_param(t, e, 3))
            return emit_int(t, "(long long)fa4_q_lo", "1LL", "0LL");
        if (is_param(t, e, 4))
            return emit_int(t, "(long long)fa4_kv_lo", "0LL", "1LL");
        if (e->var->kind == VK_LOCAL) {
            int found = 0;
            const fa4__expr *init = local_init(t, e->var, &found);
            if (found && init)
                return node(t, init);
        }
        return mk(AK_FAIL, 0);
    case EX_CAST: {
        const aval a = node(t, e->a);
        if (a.kind == AK_FAIL)
            return a;
        if (e->type == TY_INT && a.kind == AK_INT && e->a->type == TY_INT)
            return a;
        if (e->type == TY_FLOAT && a.kind == AK_FLOAT)
            return a;
        if (e->type == TY_FLOAT && a.kind == AK_INT) {
            /* exact: fa4_aff_fit keeps the value and coefficients within +-2^24 */
            fmt(s[1], sizeof s[1], "(float)fa4_ac%d", a.n);
            fmt(s[2], sizeof s[2], "(float)fa4_aq%d", a.n);
            fmt(s[3], sizeof s[3], "(float)fa4_ak%d", a.n);
            return emit_float(t, "0.0f", s[1], s[2], s[3]);
        }
        return mk(AK_FAIL, 0);
    }
    case EX_UNARY: {
        const aval a = node(t, e->a);
        if (e->op == TK_PLUS)
            return a;
        if (e->op != TK_MINUS)
            return mk(AK_FAIL, 0);
        if (a.kind == AK_INT) {
            fmt(s[1], sizeof s[1], "-fa4_ac%d", a.n);
            fmt(s[2], sizeof s[2], "-fa4_aq%d", a.n);
            fmt(s[3], sizeof s[3], "-fa4_ak%d", a.n);
            return emit_int(t, s[1], s[2], s[3]);
        }
        if (a.kind == AK_FLOAT) {
            fmt(s[0], sizeof s[0], "-fa4_as%d", a.n);
            fmt(s[1], sizeof s[1], "-fa4_ac%d", a.n);
            fmt(s[2], sizeof s[2], "-fa4_aq%d", a.n);
            fmt(s[3], sizeof s[3], "-fa4_ak%d", a.n);
            return with_ds(emit_float(t, s[0], s[1], s[2], s[3]), a.ds == 0 ? 0 : 2);
        }
        return mk(AK_FAIL, 0);
    }
    case EX_BINARY: return node_bin(t, e);
    default: return mk(AK_FAIL, 0);
    }
}

static void emit_none(fa4__emitter *E)
{
    fa4__out(E, "#define FA4_SCORE_MOD_AFFINE 0\n");
}

void fa4__emit_affine_form(fa4__emitter *E)
{
    const fa4__func *f = E->m->score;
    fa4__out(E, "\n// ---- score_mod as ds * score + c + dq * (q_idx - q_lo) + dk * (kv_idx - kv_lo) over a box\n");
    if (!fa4__score_mod_is_straight(f)) {
        emit_none(E);
        return;
    }
    aff_ctx t;
    memset(&t, 0, sizeof t);
    t.E = E;
    t.f = f;
    t.score_dep = calloc((size_t)f->nslots + 1, 1);
    t.index_dep = calloc((size_t)f->nslots + 1, 1);
    if (!t.score_dep || !t.index_dep) {
        emit_none(E);
        goto done;
    }
    const fa4__stmt *body = f->body;
    t.score_dep[f->params[0]->slot] = 1;
    t.index_dep[f->params[3]->slot] = t.index_dep[f->params[4]->slot] = 1;
    for (int i = 0; i < body->nitems; i++) {
        const fa4__stmt *s = body->items[i];
        if (s->kind == ST_DECL && s->e && fa4__expr_depends(s->e, t.score_dep))
            t.score_dep[s->var->slot] = 1;
        if (s->kind == ST_DECL && s->e && fa4__expr_depends(s->e, t.index_dep))
            t.index_dep[s->var->slot] = 1;
    }
    const fa4__expr *r = body->items[body->nitems - 1]->e;
    /* (a position-free score_mod takes the form too: head_scale's factor then joins the scale) */
    aval v = r && r->type == TY_FLOAT ? node(&t, r) : mk(AK_FAIL, 0);
    if (v.kind != AK_FLOAT) {
        emit_none(E);
        goto done;
    }
    int train = 0;
    for (int i = 0; i < E->m->naux; i++)
        train |= E->m->aux[i].trainable;
    fa4__out(E, "#if FA4_CHECKED\n");
    emit_none(E);
    fa4__out(E, "#else\n#define FA4_SCORE_MOD_AFFINE 1\n");
    fa4__out(E, "// a trainable aux tensor: the backward keeps the mod's own form for its gradient\n"
                "#define FA4_SCORE_MOD_AFFINE_TRAIN %d\n",
             train);
    /* the analysis pass's value: whether ds is exactly 1 wherever the form is taken */
    fa4__out(E, "// ds is exactly 1 wherever fa4_score_mod_affine returns true (score + ...)\n"
                "#define FA4_SCORE_MOD_AFFINE_DS1 %d\n",
             v.ds == 1);
    fa4__out(E, "struct fa4_score_aff {\n    float ds, c, dq, dk;\n};\n");
    fa4__out(E, "// an int part over the box: within +-2^24 with its coefficients, else not taken (and zeroed)\n"
                "__device__ __forceinline__ bool fa4_aff_fit(bool ok, long long &c, long long &q, long long &k, "
                "long long wq, long long wk)\n{\n"
                "    const long long lim = 16777216LL;\n"
                "    const long long lo = c + (q < 0 ? q * wq : 0) + (k < 0 ? k * wk : 0);\n"
                "    const long long hi = c + (q > 0 ? q * wq : 0) + (k > 0 ? k * wk : 0);\n"
                "    const bool fit = c >= -lim && c <= lim && q >= -lim && q <= lim && k >= -lim && k <= lim &&\n"
                "                     lo >= -lim && hi <= lim;\n"
                "    if (!fit)\n        c = q = k = 0;\n"
                "    return ok && fit;\n}\n"
                "__device__ __forceinline__ bool fa4_aff_finite(float x)\n{\n"
                "    return (__float_as_int(x) & 0x7f800000) != 0x7f800000;\n}\n");
    fa4__out(E, "__device__ __forceinline__ bool fa4_score_mod_affine(int %s, int %s, int fa4_q_lo, int fa4_q_hi, "
                "int fa4_kv_lo, int fa4_kv_hi, const fa4_aux &fa4_a, fa4_score_aff &fa4_r)\n{\n",
             f->params[1]->name, f->params[2]->name);
    fa4__out(E, "    const int %s = fa4_q_lo, %s = fa4_kv_lo;\n", f->params[3]->name, f->params[4]->name);
    fa4__out(E, "    (void)%s, (void)%s, (void)%s, (void)%s;\n", f->params[1]->name, f->params[2]->name,
             f->params[3]->name, f->params[4]->name);
    fa4__out(E, "    const long long fa4_wq = (long long)fa4_q_hi - fa4_q_lo, fa4_wk = (long long)fa4_kv_hi - fa4_kv_lo;\n"
                "    bool fa4_ok = fa4_wq >= 0 && fa4_wk >= 0;\n");
    /* the position-free locals (what the uniform parts read), at the box's first position */
    for (int i = 0; i < body->nitems; i++) {
        const fa4__stmt *s = body->items[i];
        if (s->kind != ST_DECL || t.score_dep[s->var->slot] || t.index_dep[s->var->slot] || !s->var->reads)
            continue;
        fa4__line_directive(E, s->line);
        fa4__out(E, "    const %s %s = ", ctype(s->var->type), s->var->name);
        if (s->e)
            fa4__emit_bare(E, s->e);
        else
            fa4__out(E, s->var->type == TY_FLOAT ? "0.0f" : s->var->type == TY_INT ? "0" : "false");
        fa4__out(E, ";\n");
        fa4__reset_line(E);
        fa4__out(E, "    (void)%s;\n", s->var->name);
    }
    t.emit = 1;
    t.nodes = 0;
    v = node(&t, r);
    for (int n = 0; n < t.nodes && n < 4096; n++) /* no warning for an unread temporary */
        if (t.nkind[n] == AK_UNIFORM)
            fa4__out(E, "    (void)fa4_au%d;\n", n);
        else if (t.nkind[n] == AK_INT)
            fa4__out(E, "    (void)fa4_ac%d, (void)fa4_aq%d, (void)fa4_ak%d;\n", n, n, n);
        else if (t.nkind[n] == AK_FLOAT)
            fa4__out(E, "    (void)fa4_as%d, (void)fa4_ac%d, (void)fa4_aq%d, (void)fa4_ak%d;\n", n, n, n, n);
    fa4__out(E, "    fa4_r.ds = fa4_as%d;\n    fa4_r.c = fa4_ac%d;\n    fa4_r.dq = fa4_aq%d;\n    fa4_r.dk = fa4_ak%d;\n",
             v.n, v.n, v.n, v.n);
    fa4__out(E, "    return fa4_ok && fa4_aff_finite(fa4_r.ds) && fa4_aff_finite(fa4_r.c) && fa4_aff_finite(fa4_r.dq) &&\n"
                "           fa4_aff_finite(fa4_r.dk);\n}\n");
    fa4__out(E, "#endif\n");
    fa4__out(E, "#line %d \"fa4_mod.cuh\"\n", E->out_line + 1);
done:
    free(t.score_dep);
    free(t.index_dep);
}
