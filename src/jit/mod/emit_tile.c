/*
 * emit_tile.c - the sm90 forward's tile form of score_mod. Where score_mod's value depends on the
 * position only through parts that can be constant over a whole tile of positions (rel_bias's
 * bias[h * span + clamp(kv_idx - q_idx, -d, d) + d] is one value wherever the clamp saturates:
 * 29 of 32 key tiles of a query tile at d 64, S 4096), the kernel asks once per warp and tile
 * whether they are (fa4_score_mod_tile), and if so takes their values at the tile's first position
 * and applies the rest of score_mod (fa4_score_mod_t: rel_bias's `score + c`) at every position.
 *
 * Soundness: fa4_score_mod_tile evaluates each candidate subexpression over the box
 * [q_lo, q_hi] x [kv_lo, kv_hi] abstractly: an int is an interval (64-bit bounds; outside int32
 * it becomes the whole int32 range unless it is one value, which wraps as the int arithmetic
 * does), a bool or float is "the same everywhere" or not, a comparison of intervals is decided
 * where they do not overlap, a ?: with a decided condition takes its branch, min / max / clamp /
 * abs / + / - / * / division by one value follow the intervals, and anything else is the same
 * everywhere only where all its operands are. A candidate found the same everywhere has, at every
 * position of the box, the value it has at (q_lo, kv_lo), which is how it is computed (with the
 * forward's own expressions, so with the same rounding, except that it no longer contracts into
 * an FMA with what uses it). Supported score_mods: declarations and a return at the top level
 * (no if, no assignment); others emit FA4_SCORE_MOD_TILE 0 and the kernel keeps its one form.
 * Checked builds keep score_mod as it is (FA4_SCORE_MOD_TILE 0 there).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit_internal.h"

#define MAX_CAND 16

typedef struct tile_ctx {
    fa4__emitter *E;
    const fa4__func *f;
    unsigned char *score_dep; /* per slot: depends on the score */
    unsigned char *index_dep; /* per slot: depends on q_idx or kv_idx */
    int *local_node;          /* per slot: node of a score-free local, -1 if none */
    unsigned char *live;      /* per slot: read in the tile form outside the candidates */
    const fa4__expr *cand[MAX_CAND];
    int ncand;
    int nodes;
    unsigned char ntype[4096]; /* TY_INT: fa4_tl/fa4_th; else fa4_tk (and fa4_tv for a bool) */
    int ok;                   /* every candidate can be constant over a box */
    int h_ival;               /* the head is an interval too (fa4_h_lo, fa4_h_hi) */
} tile_ctx;

static int is_param(const tile_ctx *t, const fa4__expr *e, int i)
{
    return e->kind == EX_VAR && e->var == t->f->params[i];
}

/* Through locals: a local depends on what its initializer depends on (declarations only). */
static int depends_score(const tile_ctx *t, const fa4__expr *e)
{
    return fa4__expr_depends(e, t->score_dep);
}

static int depends_index(const tile_ctx *t, const fa4__expr *e)
{
    return fa4__expr_depends(e, t->index_dep);
}

static const fa4__expr *local_init(const tile_ctx *t, const fa4__var *v)
{
    const fa4__stmt *body = t->f->body;
    for (int i = 0; i < body->nitems; i++)
        if (body->items[i]->kind == ST_DECL && body->items[i]->var == v)
            return body->items[i]->e;
    return NULL;
}

/* Could e be one value over a box wider than one position (statically: its dependence on q_idx
 * and kv_idx passes through something that saturates or decides)? */
static int can_saturate(const tile_ctx *t, const fa4__expr *e)
{
    if (!e)
        return 1;
    switch (e->kind) {
    case EX_INT:
    case EX_FLOAT:
    case EX_BOOL: return 1;
    case EX_VAR:
        if (is_param(t, e, 3) || is_param(t, e, 4))
            return 0;
        if (e->var->kind == VK_LOCAL) {
            const fa4__expr *init = local_init(t, e->var);
            return init ? can_saturate(t, init) : 1;
        }
        return 1;
    case EX_COND: return 1;
    case EX_BINARY:
        switch (e->op) {
        case TK_LT: case TK_LE: case TK_GT: case TK_GE: case TK_EQEQ: case TK_NE:
        case TK_ANDAND: case TK_OROR: return 1;
        case TK_SLASH:
            if (e->type == TY_INT)
                return can_saturate(t, e->b);
            break;
        default: break;
        }
        break;
    case EX_BUILTIN:
        if (e->type == TY_INT && (e->op == BI_MIN || e->op == BI_MAX || e->op == BI_CLAMP)) {
            for (int i = 0; i < e->nargs; i++)
                if (can_saturate(t, e->args[i]))
                    return 1;
            return 0;
        }
        break;
    default: break;
    }
    if (!can_saturate(t, e->a) || !can_saturate(t, e->b) || !can_saturate(t, e->c))
        return 0;
    for (int i = 0; i < e->nargs; i++)
        if (!can_saturate(t, e->args[i]))
            return 0;
    return 1;
}

/* Does e read anything that may vary by tile (an index, a local, an aux tensor, a call)? Bare
 * parameters, aux scalars and literals are at hand already. */
static int worth(const tile_ctx *t, const fa4__expr *e)
{
    if (!e)
        return 0;
    if (e->kind == EX_VAR)
        return is_param(t, e, 3) || is_param(t, e, 4) || e->var->kind == VK_LOCAL;
    if (e->kind == EX_INDEX || e->kind == EX_CALL)
        return 1;
    if (worth(t, e->a) || worth(t, e->b) || worth(t, e->c))
        return 1;
    for (int i = 0; i < e->nargs; i++)
        if (worth(t, e->args[i]))
            return 1;
    return 0;
}

static void collect(tile_ctx *t, const fa4__expr *e)
{
    if (!e || e->kind == EX_INT || e->kind == EX_FLOAT || e->kind == EX_BOOL)
        return;
    if (!depends_score(t, e)) {
        if (!worth(t, e))
            return;
        if (t->ncand == MAX_CAND || !can_saturate(t, e))
            t->ok = 0;
        else
            t->cand[t->ncand++] = e;
        return;
    }
    if (e->kind == EX_VAR)
        return;
    collect(t, e->a);
    collect(t, e->b);
    collect(t, e->c);
    for (int i = 0; i < e->nargs; i++)
        collect(t, e->args[i]);
}

/* The locals read by e outside candidates (those the tile form still computes). */
static void mark_live(tile_ctx *t, const fa4__expr *e)
{
    if (!e)
        return;
    for (int k = 0; k < t->ncand; k++)
        if (t->cand[k] == e)
            return;
    if (e->kind == EX_VAR && e->var->kind == VK_LOCAL)
        t->live[e->var->slot] = 1;
    mark_live(t, e->a);
    mark_live(t, e->b);
    mark_live(t, e->c);
    for (int i = 0; i < e->nargs; i++)
        mark_live(t, e->args[i]);
}

/* ------------------------------------------------------------------- the abstract evaluation */
/* Node n of an int: fa4_tl<n>, fa4_th<n> (bounds); of a bool: fa4_tk<n> (one value), fa4_tv<n>
 * (that value); of a float: fa4_tk<n>. */
static void out_const(tile_ctx *t, const fa4__expr *e, int n)
{
    if (e->type == TY_INT)
        fa4__out(t->E, "(fa4_tl%d == fa4_th%d)", n, n);
    else
        fa4__out(t->E, "fa4_tk%d", n);
}

static void rep(tile_ctx *t, const fa4__expr *e) /* the value at the box's first position */
{
    fa4__emit_bare(t->E, e);
}

static void int_point_or_all(tile_ctx *t, const fa4__expr *e, int n, const int *ch, const fa4__expr *const *ce,
                             int nch)
{
    fa4__emitter *E = t->E;
    fa4__out(E, "    long long fa4_tl%d = -2147483648LL, fa4_th%d = 2147483647LL;\n", n, n);
    fa4__out(E, "    if (true");
    for (int i = 0; i < nch; i++) {
        fa4__out(E, " && ");
        out_const(t, ce[i], ch[i]);
    }
    fa4__out(E, ")\n        fa4_tl%d = fa4_th%d = (long long)(", n, n);
    rep(t, e);
    fa4__out(E, ");\n");
}

static void const_if_all(tile_ctx *t, const fa4__expr *e, int n, const int *ch, const fa4__expr *const *ce,
                         int nch)
{
    fa4__emitter *E = t->E;
    fa4__out(E, "    const bool fa4_tk%d = true", n);
    for (int i = 0; i < nch; i++) {
        fa4__out(E, " && ");
        out_const(t, ce[i], ch[i]);
    }
    fa4__out(E, ";\n");
    if (e->type == TY_BOOL) {
        fa4__out(E, "    const bool fa4_tv%d = fa4_tk%d && (", n, n);
        rep(t, e);
        fa4__out(E, ");\n");
    }
}

static int node(tile_ctx *t, const fa4__expr *e);

static int children(tile_ctx *t, const fa4__expr *e, int *ch, const fa4__expr **ce)
{
    int k = 0;
    const fa4__expr *sub[3] = {e->a, e->b, e->c};
    for (int i = 0; i < 3; i++)
        if (sub[i] && k < 8) {
            ce[k] = sub[i];
            ch[k++] = node(t, sub[i]);
        }
    for (int i = 0; i < e->nargs && k < 8; i++) {
        ce[k] = e->args[i];
        ch[k++] = node(t, e->args[i]);
    }
    return k;
}

static void emit_ival(tile_ctx *t, int n, const char *lo, const char *hi)
{
    fa4__out(t->E, "    long long fa4_tl%d = %s, fa4_th%d = %s;\n    fa4_tnorm(fa4_tl%d, fa4_th%d);\n", n, lo,
             n, hi, n, n);
}

static int node_raw(tile_ctx *t, const fa4__expr *e);

static int node(tile_ctx *t, const fa4__expr *e)
{
    const int n = node_raw(t, e);
    if (n >= 0 && n < 4096)
        t->ntype[n] = (unsigned char)(e->type == TY_INT ? TY_INT : e->type == TY_BOOL ? TY_BOOL : TY_FLOAT);
    return n;
}

static int node_raw(tile_ctx *t, const fa4__expr *e)
{
    fa4__emitter *E = t->E;
    if (e->kind == EX_VAR && e->var->kind == VK_LOCAL && t->local_node[e->var->slot] >= 0)
        return t->local_node[e->var->slot];
    int ch[8];
    const fa4__expr *ce[8];
    char lo[160], hi[160];
    if (e->kind == EX_VAR) {
        const int n = t->nodes++;
        if (is_param(t, e, 3) || is_param(t, e, 4) || (t->h_ival && is_param(t, e, 2))) {
            const char *w = is_param(t, e, 3) ? "q" : is_param(t, e, 4) ? "kv" : "h";
            snprintf(lo, sizeof lo, "(long long)fa4_%s_lo", w);
            snprintf(hi, sizeof hi, "(long long)fa4_%s_hi", w);
            emit_ival(t, n, lo, hi);
        } else if (e->type == TY_INT) {
            fa4__out(E, "    long long fa4_tl%d = (long long)(", n);
            rep(t, e);
            fa4__out(E, "), fa4_th%d = fa4_tl%d;\n", n, n);
        } else {
            fa4__out(E, "    const bool fa4_tk%d = true;\n", n);
            if (e->type == TY_BOOL) {
                fa4__out(E, "    const bool fa4_tv%d = ", n);
                rep(t, e);
                fa4__out(E, ";\n");
            }
        }
        return n;
    }
    if (e->kind == EX_INT || e->kind == EX_FLOAT || e->kind == EX_BOOL) {
        const int n = t->nodes++;
        if (e->kind == EX_INT)
            fa4__out(E, "    long long fa4_tl%d = %lldLL, fa4_th%d = fa4_tl%d;\n", n, (long long)e->ival, n, n);
        else if (e->kind == EX_BOOL)
            fa4__out(E, "    const bool fa4_tk%d = true, fa4_tv%d = %s;\n", n, n, e->ival ? "true" : "false");
        else
            fa4__out(E, "    const bool fa4_tk%d = true;\n", n);
        return n;
    }
    const int nch = children(t, e, ch, ce);
    const int n = t->nodes++;
    const int a = nch > 0 ? ch[0] : -1, b = nch > 1 ? ch[1] : -1, c = nch > 2 ? ch[2] : -1;
    if (e->type == TY_INT) {
        if (e->kind == EX_UNARY && e->op == TK_MINUS) {
            snprintf(lo, sizeof lo, "-fa4_th%d", a);
            snprintf(hi, sizeof hi, "-fa4_tl%d", a);
            emit_ival(t, n, lo, hi);
            return n;
        }
        if (e->kind == EX_UNARY && e->op == TK_PLUS) {
            snprintf(lo, sizeof lo, "fa4_tl%d", a);
            snprintf(hi, sizeof hi, "fa4_th%d", a);
            emit_ival(t, n, lo, hi);
            return n;
        }
        if (e->kind == EX_BINARY && e->a->type == TY_INT && e->b->type == TY_INT &&
            (e->op == TK_PLUS || e->op == TK_MINUS)) {
            if (e->op == TK_PLUS) {
                snprintf(lo, sizeof lo, "fa4_tl%d + fa4_tl%d", a, b);
                snprintf(hi, sizeof hi, "fa4_th%d + fa4_th%d", a, b);
            } else {
                snprintf(lo, sizeof lo, "fa4_tl%d - fa4_th%d", a, b);
                snprintf(hi, sizeof hi, "fa4_th%d - fa4_tl%d", a, b);
            }
            emit_ival(t, n, lo, hi);
            return n;
        }
        if (e->kind == EX_BINARY && e->op == TK_STAR && e->a->type == TY_INT) {
            fa4__out(E, "    long long fa4_tl%d, fa4_th%d;\n    fa4_tmul(fa4_tl%d, fa4_th%d, fa4_tl%d, fa4_th%d, "
                        "fa4_tl%d, fa4_th%d);\n", n, n, a, a, b, b, n, n);
            return n;
        }
        if (e->kind == EX_BINARY && e->op == TK_SLASH && e->a->type == TY_INT) {
            fa4__out(E, "    long long fa4_tl%d, fa4_th%d;\n    fa4_tdiv(fa4_tl%d, fa4_th%d, fa4_tl%d, fa4_th%d, "
                        "fa4_tl%d, fa4_th%d);\n", n, n, a, a, b, b, n, n);
            return n;
        }
        if (e->kind == EX_BUILTIN && (e->op == BI_MIN || e->op == BI_MAX) && nch == 2) {
            const char *fn = e->op == BI_MIN ? "fa4_tmin" : "fa4_tmax";
            snprintf(lo, sizeof lo, "%s(fa4_tl%d, fa4_tl%d)", fn, a, b);
            snprintf(hi, sizeof hi, "%s(fa4_th%d, fa4_th%d)", fn, a, b);
            emit_ival(t, n, lo, hi);
            return n;
        }
        if (e->kind == EX_BUILTIN && e->op == BI_CLAMP && nch == 3) {
            snprintf(lo, sizeof lo, "fa4_tmin(fa4_tmax(fa4_tl%d, fa4_tl%d), fa4_tl%d)", a, b, c);
            snprintf(hi, sizeof hi, "fa4_tmin(fa4_tmax(fa4_th%d, fa4_th%d), fa4_th%d)", a, b, c);
            emit_ival(t, n, lo, hi);
            return n;
        }
        if (e->kind == EX_BUILTIN && e->op == BI_ABS && nch == 1) {
            snprintf(lo, sizeof lo, "fa4_tl%d >= 0 ? fa4_tl%d : fa4_th%d <= 0 ? -fa4_th%d : 0LL", a, a, a, a);
            snprintf(hi, sizeof hi, "fa4_tmax(-fa4_tl%d, fa4_th%d)", a, a);
            emit_ival(t, n, lo, hi);
            return n;
        }
        if (e->kind == EX_COND) {
            /* the taken branch's interval where the condition is decided, else both */
            snprintf(lo, sizeof lo, "fa4_tk%d ? (fa4_tv%d ? fa4_tl%d : fa4_tl%d) : fa4_tmin(fa4_tl%d, fa4_tl%d)", a, a,
                     b, c, b, c);
            snprintf(hi, sizeof hi, "fa4_tk%d ? (fa4_tv%d ? fa4_th%d : fa4_th%d) : fa4_tmax(fa4_th%d, fa4_th%d)", a, a,
                     b, c, b, c);
            emit_ival(t, n, lo, hi);
            return n;
        }
        if (e->kind == EX_CAST && e->a->type == TY_BOOL) {
            fa4__out(E, "    long long fa4_tl%d = fa4_tk%d ? (long long)fa4_tv%d : 0LL, fa4_th%d = fa4_tk%d ? "
                        "(long long)fa4_tv%d : 1LL;\n", n, a, a, n, a, a);
            return n;
        }
        int_point_or_all(t, e, n, ch, ce, nch);
        return n;
    }
    if (e->type == TY_BOOL && e->kind == EX_BINARY && e->a->type == TY_INT && e->b->type == TY_INT) {
        /* a comparison of intervals: decided where they do not overlap */
        const char *T = NULL, *F = NULL;
        char tb[200], fb[200];
        switch (e->op) {
        case TK_LT: snprintf(tb, sizeof tb, "fa4_th%d < fa4_tl%d", a, b); snprintf(fb, sizeof fb, "fa4_tl%d >= fa4_th%d", a, b); break;
        case TK_LE: snprintf(tb, sizeof tb, "fa4_th%d <= fa4_tl%d", a, b); snprintf(fb, sizeof fb, "fa4_tl%d > fa4_th%d", a, b); break;
        case TK_GT: snprintf(tb, sizeof tb, "fa4_tl%d > fa4_th%d", a, b); snprintf(fb, sizeof fb, "fa4_th%d <= fa4_tl%d", a, b); break;
        case TK_GE: snprintf(tb, sizeof tb, "fa4_tl%d >= fa4_th%d", a, b); snprintf(fb, sizeof fb, "fa4_th%d < fa4_tl%d", a, b); break;
        case TK_EQEQ:
        case TK_NE:
            snprintf(tb, sizeof tb, "fa4_tl%d == fa4_th%d && fa4_tl%d == fa4_th%d && fa4_tl%d == fa4_tl%d", a, a, b,
                     b, a, b);
            snprintf(fb, sizeof fb, "fa4_th%d < fa4_tl%d || fa4_th%d < fa4_tl%d", a, b, b, a);
            break;
        default: tb[0] = fb[0] = '\0'; break;
        }
        if (tb[0]) {
            T = e->op == TK_NE ? fb : tb;
            F = e->op == TK_NE ? tb : fb;
            fa4__out(E, "    const bool fa4_tv%d = %s, fa4_tk%d = fa4_tv%d || (%s);\n", n, T, n, n, F);
            return n;
        }
    }
    if (e->type == TY_BOOL && e->kind == EX_BINARY && (e->op == TK_ANDAND || e->op == TK_OROR)) {
        if (e->op == TK_ANDAND)
            fa4__out(E, "    const bool fa4_tv%d = !((fa4_tk%d && !fa4_tv%d) || (fa4_tk%d && !fa4_tv%d)), "
                        "fa4_tk%d = !fa4_tv%d || (fa4_tk%d && fa4_tk%d);\n", n, a, a, b, b, n, n, a, b);
        else
            fa4__out(E, "    const bool fa4_tv%d = (fa4_tk%d && fa4_tv%d) || (fa4_tk%d && fa4_tv%d), "
                        "fa4_tk%d = fa4_tv%d || (fa4_tk%d && fa4_tk%d);\n", n, a, a, b, b, n, n, a, b);
        return n;
    }
    if (e->type == TY_BOOL && e->kind == EX_UNARY && e->op == TK_BANG) {
        fa4__out(E, "    const bool fa4_tk%d = fa4_tk%d, fa4_tv%d = !fa4_tv%d;\n", n, a, n, a);
        return n;
    }
    if (e->kind == EX_COND) {
        fa4__out(E, "    const bool fa4_tk%d = fa4_tk%d && (fa4_tv%d ? ", n, a, a);
        out_const(t, e->b, b);
        fa4__out(E, " : ");
        out_const(t, e->c, c);
        fa4__out(E, ");\n");
        if (e->type == TY_BOOL)
            fa4__out(E, "    const bool fa4_tv%d = fa4_tv%d ? fa4_tv%d : fa4_tv%d;\n", n, a, b, c);
        return n;
    }
    const_if_all(t, e, n, ch, ce, nch);
    return n;
}

/* The interval helpers of the abstract evaluation, once per header (the tile form and the
 * backward's aux-gradient ranges both use them). */
void fa4__emit_ival_helpers(fa4__emitter *E)
{
    fa4__out(E, "#ifndef FA4_TILE_IVAL_HELPERS\n#define FA4_TILE_IVAL_HELPERS 1\n");
    fa4__out(E, "__device__ __forceinline__ long long fa4_tmin(long long a, long long b) { return a < b ? a : b; }\n"
                "__device__ __forceinline__ long long fa4_tmax(long long a, long long b) { return a > b ? a : b; }\n"
                "__device__ __forceinline__ void fa4_tnorm(long long &lo, long long &hi)\n{\n"
                "    if (lo == hi)\n        lo = hi = (long long)(int)(unsigned int)(unsigned long long)lo;\n"
                "    else if (lo < -2147483648LL || hi > 2147483647LL)\n"
                "        lo = -2147483648LL, hi = 2147483647LL;\n}\n"
                "__device__ __forceinline__ void fa4_tmul(long long al, long long ah, long long bl, long long bh,\n"
                "                                         long long &lo, long long &hi)\n{\n"
                "    const long long p0 = al * bl, p1 = al * bh, p2 = ah * bl, p3 = ah * bh;\n"
                "    lo = fa4_tmin(fa4_tmin(p0, p1), fa4_tmin(p2, p3));\n    hi = fa4_tmax(fa4_tmax(p0, p1), fa4_tmax(p2, p3));\n"
                "    fa4_tnorm(lo, hi);\n}\n"
                "// a / b for b one value (fa4_idiv: x / 0 == 0, x / -1 == -x); else any int\n"
                "__device__ __forceinline__ void fa4_tdiv(long long al, long long ah, long long bl, long long bh,\n"
                "                                         long long &lo, long long &hi)\n{\n"
                "    if (bl != bh)\n        lo = -2147483648LL, hi = 2147483647LL;\n"
                "    else if (bl == 0)\n        lo = hi = 0;\n"
                "    else if (bl == -1)\n        lo = -ah, hi = -al;\n"
                "    else if (bl > 0)\n        lo = al / bl, hi = ah / bl;\n"
                "    else\n        lo = ah / bl, hi = al / bl;\n"
                "    fa4_tnorm(lo, hi);\n}\n");
    fa4__out(E, "#endif\n");
}

/* --------------------------------------------------------------------------------- emission */
int fa4__score_mod_is_straight(const fa4__func *f)
{
    if (!f || f->role != FR_SCORE || f->nparams < 5)
        return 0;
    const fa4__stmt *body = f->body;
    for (int i = 0; i < body->nitems; i++) {
        const fa4__stmt *s = body->items[i];
        if (s->kind == ST_EMPTY || s->kind == ST_DECL)
            continue;
        if (s->kind == ST_RETURN && i == body->nitems - 1)
            continue;
        return 0;
    }
    return body->nitems > 0 && body->items[body->nitems - 1]->kind == ST_RETURN;
}

static void emit_none(fa4__emitter *E)
{
    fa4__out(E, "#define FA4_SCORE_MOD_TILE 0\n#define FA4_SCORE_MOD_TILE_ADD 0\n#define FA4_SCORE_MOD_TILE_GRAD 0\n");
}

/* The candidate k when score_mod is `return score + cand[k]` (or cand[k] + score) and nothing else
 * depends on the score; else -1. */
static int add_form(const tile_ctx *t)
{
    const fa4__stmt *body = t->f->body;
    for (int i = 0; i < body->nitems; i++)
        if (body->items[i]->kind == ST_DECL && t->score_dep[body->items[i]->var->slot] &&
            body->items[i]->var->reads)
            return -1;
    const fa4__expr *r = body->items[body->nitems - 1]->e;
    if (!r || r->kind != EX_BINARY || r->op != TK_PLUS || r->type != TY_FLOAT)
        return -1;
    const fa4__expr *other = is_param(t, r->a, 0) ? r->b : is_param(t, r->b, 0) ? r->a : NULL;
    for (int k = 0; other && k < t->ncand; k++)
        if (t->cand[k] == other && other->type == TY_FLOAT)
            return k;
    return -1;
}

void fa4__emit_tile_forms(fa4__emitter *E)
{
    const fa4__func *f = E->m->score;
    fa4__out(E, "\n// ---- score_mod over a tile whose index-dependent parts are one value there\n");
    if (!fa4__score_mod_is_straight(f)) {
        emit_none(E);
        return;
    }
    tile_ctx t;
    memset(&t, 0, sizeof t);
    t.E = E;
    t.f = f;
    t.ok = 1;
    t.score_dep = calloc((size_t)f->nslots + 1, 1);
    t.index_dep = calloc((size_t)f->nslots + 1, 1);
    t.local_node = malloc(((size_t)f->nslots + 1) * sizeof *t.local_node);
    t.live = calloc((size_t)f->nslots + 1, 1);
    if (!t.score_dep || !t.index_dep || !t.local_node || !t.live) {
        emit_none(E);
        goto done;
    }
    for (int i = 0; i <= f->nslots; i++)
        t.local_node[i] = -1;
    const fa4__stmt *body = f->body;
    t.score_dep[f->params[0]->slot] = 1;
    t.index_dep[f->params[3]->slot] = t.index_dep[f->params[4]->slot] = 1;
    for (int i = 0; i < body->nitems; i++) {
        const fa4__stmt *s = body->items[i];
        if (s->kind == ST_DECL && s->e && depends_score(&t, s->e))
            t.score_dep[s->var->slot] = 1;
        if (s->kind == ST_DECL && s->e && depends_index(&t, s->e))
            t.index_dep[s->var->slot] = 1;
    }
    for (int i = 0; i < body->nitems; i++) {
        const fa4__stmt *s = body->items[i];
        if ((s->kind == ST_DECL && t.score_dep[s->var->slot] && s->var->reads) || s->kind == ST_RETURN)
            collect(&t, s->e);
    }
    int index_dep = 0;
    for (int k = 0; k < t.ncand; k++)
        index_dep |= depends_index(&t, t.cand[k]);
    if (!t.ok || t.ncand == 0 || !index_dep) {
        emit_none(E);
        goto done;
    }
    for (int i = 0; i < body->nitems; i++) {
        const fa4__stmt *s = body->items[i];
        if ((s->kind == ST_DECL && t.score_dep[s->var->slot] && s->var->reads) || s->kind == ST_RETURN)
            mark_live(&t, s->e);
    }
    fa4__out(E, "#if FA4_CHECKED\n");
    emit_none(E);
    fa4__out(E, "#else\n#define FA4_SCORE_MOD_TILE %d\n", t.ncand);
    /* the backward's form: score_mod is score + c<k> over the tile, and c<k> a read of a
     * trainable tensor (rel_bias): its gradient over the tile is the sum of dS there */
    const int add = add_form(&t);
    const fa4__expr *gread = NULL;
    if (add >= 0 && t.cand[add]->kind == EX_INDEX && t.cand[add]->var->kind == VK_AUX &&
        E->m->aux[t.cand[add]->var->aux_index].trainable)
        gread = t.cand[add];
    fa4__out(E, "struct fa4_score_tile {\n");
    for (int k = 0; k < t.ncand; k++)
        fa4__out(E, "    %s c%d;\n", t.cand[k]->type == TY_FLOAT ? "float" : t.cand[k]->type == TY_INT ? "int" : "bool",
                 k);
    if (gread)
        fa4__out(E, "    int gi; /* the index c%d reads */\n", add);
    fa4__out(E, "};\n");
    fa4__emit_ival_helpers(E);
    /* the box's values, the locals at its first position, then the candidates */
    fa4__out(E, "__device__ __forceinline__ bool fa4_score_mod_tile(int %s, int %s, int fa4_q_lo, int fa4_q_hi, "
                "int fa4_kv_lo, int fa4_kv_hi, const fa4_aux &fa4_a, fa4_score_tile &fa4_t)\n{\n",
             f->params[1]->name, f->params[2]->name);
    fa4__out(E, "    const int %s = fa4_q_lo, %s = fa4_kv_lo;\n", f->params[3]->name, f->params[4]->name);
    fa4__out(E, "    (void)%s, (void)%s;\n", f->params[3]->name, f->params[4]->name);
    for (int i = 0; i < body->nitems; i++) {
        const fa4__stmt *s = body->items[i];
        if (s->kind != ST_DECL || t.score_dep[s->var->slot] || !s->var->reads)
            continue;
        fa4__line_directive(E, s->line);
        fa4__out(E, "    const %s %s = ", s->var->type == TY_FLOAT ? "float" : s->var->type == TY_INT ? "int" : "bool",
                 s->var->name);
        if (s->e)
            fa4__emit_bare(E, s->e);
        else
            fa4__out(E, s->var->type == TY_FLOAT ? "0.0f" : s->var->type == TY_INT ? "0" : "false");
        fa4__out(E, ";\n");
        fa4__reset_line(E);
        if (s->e)
            t.local_node[s->var->slot] = node(&t, s->e);
    }
    int cn[MAX_CAND];
    for (int k = 0; k < t.ncand; k++)
        cn[k] = node(&t, t.cand[k]);
    fa4__out(E, "    if (!(true");
    for (int k = 0; k < t.ncand; k++) {
        fa4__out(E, " && ");
        out_const(&t, t.cand[k], cn[k]);
    }
    fa4__out(E, "))\n        return false;\n");
    for (int k = 0; k < t.ncand; k++) {
        fa4__line_directive(E, t.cand[k]->line);
        fa4__out(E, "    fa4_t.c%d = ", k);
        fa4__emit_bare(E, t.cand[k]);
        fa4__out(E, ";\n");
    }
    if (gread) {
        fa4__out(E, "    fa4_t.gi = ");
        fa4__emit_bare(E, gread->a);
        fa4__out(E, ";\n");
    }
    fa4__reset_line(E);
    for (int n = 0; n < t.nodes && n < 4096; n++) /* no warning for an unread temporary */
        if (t.ntype[n] == TY_INT)
            fa4__out(E, "    (void)fa4_tl%d, (void)fa4_th%d;\n", n, n);
        else if (t.ntype[n] == TY_BOOL)
            fa4__out(E, "    (void)fa4_tk%d, (void)fa4_tv%d;\n", n, n);
        else if (t.ntype[n])
            fa4__out(E, "    (void)fa4_tk%d;\n", n);
    fa4__out(E, "    return true;\n}\n");
    /* score_mod with the candidates read from the tile */
    fa4__line_directive(E, f->line);
    fa4__out(E, "__device__ __forceinline__ float fa4_score_mod_t(float %s, int %s, int %s, int %s, int %s, "
                "const fa4_aux &fa4_a, const fa4_score_tile &fa4_t)\n{\n",
             f->params[0]->name, f->params[1]->name, f->params[2]->name, f->params[3]->name, f->params[4]->name);
    E->tile_cand = t.cand;
    E->ntile_cand = t.ncand;
    for (int i = 0; i < body->nitems; i++) {
        const fa4__stmt *s = body->items[i];
        if (s->kind == ST_DECL && (!t.live[s->var->slot] || !s->var->reads))
            continue;
        fa4__emit_stmt(E, s, 4);
    }
    E->tile_cand = NULL;
    E->ntile_cand = 0;
    fa4__out(E, "}\n");
    fa4__reset_line(E);
    fa4__out(E, "#define FA4_SCORE_MOD_TILE_ADD %d\n", add >= 0);
    fa4__out(E, "#define FA4_SCORE_MOD_TILE_GRAD %d\n", gread != NULL);
    if (add >= 0)
        fa4__out(E, "// score_mod is score + this over the tile (d score_mod / d score = 1)\n"
                    "__device__ __forceinline__ float fa4_score_mod_tile_add(const fa4_score_tile &fa4_t) "
                    "{ return fa4_t.c%d; }\n", add);
    if (gread) {
        const char *nm = gread->var->name;
        fa4__out(E, "// where the gradient of that read goes (its index clamped as the read clamps it)\n"
                    "__device__ __forceinline__ float *fa4_score_mod_tile_grad(const fa4_aux &fa4_a, "
                    "const fa4_score_tile &fa4_t)\n{\n"
                    "    const long long n = fa4_a.%s_len;\n"
                    "    if (n <= 0)\n        return nullptr;\n"
                    "    const int hi = n > 2147483647LL ? 2147483647 : (int)(n - 1);\n"
                    "    return fa4_a.%s_grad + (fa4_t.gi < 0 ? 0 : fa4_t.gi > hi ? hi : fa4_t.gi);\n}\n",
                 nm, nm);
        /* the same entry as (trainable read site, index), for a kernel's own sink */
        fa4__out(E, "#define FA4_SCORE_MOD_TILE_GRAD_SITE %d\n"
                    "__device__ __forceinline__ int fa4_score_mod_tile_grad_index(const fa4_aux &fa4_a, "
                    "const fa4_score_tile &fa4_t)\n{\n"
                    "    const long long n = fa4_a.%s_len;\n"
                    "    if (n <= 0)\n        return -1;\n"
                    "    const int hi = n > 2147483647LL ? 2147483647 : (int)(n - 1);\n"
                    "    return fa4_t.gi < 0 ? 0 : fa4_t.gi > hi ? hi : fa4_t.gi;\n}\n",
                 fa4__trainable_site_index(E->m, gread), nm);
    }
    fa4__out(E, "#endif\n");
    fa4__out(E, "#line %d \"fa4_mod.cuh\"\n", E->out_line + 1);
done:
    free(t.score_dep);
    free(t.index_dep);
    free(t.local_node);
    free(t.live);
}

/*
 * The backward's window of a trainable read's gradient (emit_deriv.c's fa4_aux_grad_site_range):
 * one case of its switch, the interval of site x's index over a box of positions with the
 * evaluation above, the head an interval too (a CTA of the sm90 backward walks every query head
 * of its kv head's group), cut to the tensor. Where score_mod has no tile form's shape
 * (statements other than declarations and a return) or the index depends on the score, the
 * interval is the whole tensor. The kernel checks every index against its window, so nothing
 * here decides what is added, only which entries the window holds.
 */
void fa4__emit_site_range(fa4__emitter *E, const fa4__expr *x, int k)
{
    const fa4__func *f = E->m->score;
    const char *nm = x->var->name;
    fa4__out(E, "    case %d: { // %s[...] at line %d\n", k, nm, x->line);
    int done = 0;
    tile_ctx t;
    memset(&t, 0, sizeof t);
    if (fa4__score_mod_is_straight(f)) {
        t.E = E;
        t.f = f;
        t.ok = 1;
        t.h_ival = 1;
        t.score_dep = calloc((size_t)f->nslots + 1, 1);
        t.local_node = malloc(((size_t)f->nslots + 1) * sizeof *t.local_node);
        if (t.score_dep && t.local_node) {
            const fa4__stmt *body = f->body;
            for (int i = 0; i <= f->nslots; i++)
                t.local_node[i] = -1;
            t.score_dep[f->params[0]->slot] = 1;
            for (int i = 0; i < body->nitems; i++) {
                const fa4__stmt *s = body->items[i];
                if (s->kind == ST_DECL && s->e && depends_score(&t, s->e))
                    t.score_dep[s->var->slot] = 1;
            }
            if (!depends_score(&t, x->a)) {
                fa4__out(E, "    const int %s = fa4_b, %s = fa4_h_lo, %s = fa4_q_lo, %s = fa4_kv_lo;\n", f->params[1]->name,
                         f->params[2]->name, f->params[3]->name, f->params[4]->name);
                fa4__out(E, "    (void)%s, (void)%s, (void)%s, (void)%s;\n", f->params[1]->name, f->params[2]->name,
                         f->params[3]->name, f->params[4]->name);
                for (int i = 0; i < body->nitems; i++) {
                    const fa4__stmt *s = body->items[i];
                    if (s->kind != ST_DECL || t.score_dep[s->var->slot] || !s->var->reads)
                        continue;
                    fa4__out(E, "    const %s %s = ",
                             s->var->type == TY_FLOAT ? "float" : s->var->type == TY_INT ? "int" : "bool", s->var->name);
                    if (s->e)
                        fa4__emit_bare(E, s->e);
                    else
                        fa4__out(E, s->var->type == TY_FLOAT ? "0.0f" : s->var->type == TY_INT ? "0" : "false");
                    fa4__out(E, ";\n    (void)%s;\n", s->var->name);
                    if (s->e)
                        t.local_node[s->var->slot] = node(&t, s->e);
                }
                const int xn = node(&t, x->a);
                fa4__out(E, "    fa4_lo = fa4_tl%d;\n    fa4_hi = fa4_th%d;\n", xn, xn);
                for (int n = 0; n < t.nodes && n < 4096; n++)
                    if (t.ntype[n] == TY_INT)
                        fa4__out(E, "    (void)fa4_tl%d, (void)fa4_th%d;\n", n, n);
                    else if (t.ntype[n] == TY_BOOL)
                        fa4__out(E, "    (void)fa4_tk%d, (void)fa4_tv%d;\n", n, n);
                    else if (t.ntype[n])
                        fa4__out(E, "    (void)fa4_tk%d;\n", n);
                done = 1;
            }
        }
        free(t.score_dep);
        free(t.local_node);
    }
    if (!done)
        fa4__out(E, "    fa4_lo = 0;\n    fa4_hi = 2147483647LL;\n");
    fa4__out(E, "    const long long n = fa4_a.%s_len;\n"
                "    fa4_lo = fa4_lo < 0 ? 0 : fa4_lo;\n"
                "    fa4_hi = fa4_hi > n - 1 ? n - 1 : fa4_hi;\n"
                "    break;\n"
                "    }\n", nm);
}
