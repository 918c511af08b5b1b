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

/* a helper call being evaluated over a box (tile_call) */
typedef struct tile_frame {
    const fa4__func *f;
    int id;                /* names its variables fa4_h<id>... */
    const fa4__var **vars; /* per slot: the parameter or local, NULL if none */
    int nslots;
    int ret;               /* the call's node */
} tile_frame;

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
    unsigned char ntype[4096]; /* TY_INT: fa4_tl/fa4_th; TY_BOOL fa4_tk/fa4_tv; float fa4_tk, fa4_tfl/fh, fa4_tb */
    int ok;                   /* every candidate can be constant over a box */
    int h_ival;               /* the head is an interval too (fa4_h_lo, fa4_h_hi) */
    const tile_frame *fr;     /* the helper being evaluated, NULL in score_mod */
    int frames, ifs;          /* helper calls and ifs emitted (their names) */
    int calls;                /* a helper call was evaluated */
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

static int stmt_saturates(const fa4__stmt *s);

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
    case EX_CALL: /* a helper that decides, clamps or divides somewhere (tile_call evaluates it) */
        if (e->func && stmt_saturates(e->func->body))
            return 1;
        break;
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
 * (that value); of a float: fa4_tk<n> (one value everywhere) and, where fa4_tb<n>, bounds
 * [fa4_tfl<n>, fa4_tfh<n>] of every value (finite, no NaN). The float bounds follow + - * /,
 * casts, the monotone builtins (log, exp, sqrt, floor, min, ...) and ?:, each widened outward
 * (fa4_tfw: a relative 2^-16 for arithmetic, 2^-12 and an absolute 2^-16 for the transcendental
 * functions), which covers the kernel's own rounding (FMA contraction, the division and the math
 * functions of either math mode, few ulps) wherever the evaluation is monotone: a bound may be
 * loose, never wrong. Inside a helper called from score_mod (t->fr, tile_call) there is no value at
 * the box's first position (rep) to fall back on: the helper's variables are the mutable
 * fa4_h<id>... of the call's frame, and whatever the bounds do not decide is unknown. */
static void out_const(tile_ctx *t, const fa4__expr *e, int n)
{
    if (e->type == TY_INT)
        fa4__out(t->E, "(fa4_tl%d == fa4_th%d)", n, n);
    else
        fa4__out(t->E, "fa4_tk%d", n);
}

/* "true && <operand 0 is one value> && ..." */
static void out_all_const(tile_ctx *t, const int *ch, const fa4__expr *const *ce, int nch)
{
    fa4__out(t->E, "true");
    for (int i = 0; i < nch; i++) {
        fa4__out(t->E, " && ");
        out_const(t, ce[i], ch[i]);
    }
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
    if (t->fr) /* no first-position value inside a helper */
        return;
    fa4__out(E, "    if (");
    out_all_const(t, ch, ce, nch);
    fa4__out(E, ")\n        fa4_tl%d = fa4_th%d = (long long)(", n, n);
    rep(t, e);
    fa4__out(E, ");\n");
}

static void const_if_all(tile_ctx *t, const fa4__expr *e, int n, const int *ch, const fa4__expr *const *ce,
                         int nch)
{
    fa4__emitter *E = t->E;
    /* a bool's value needs the first position; a float that is one value everywhere may stay
     * unknown (its bounds say what is known) */
    if (t->fr && e->type == TY_BOOL) {
        fa4__out(E, "    const bool fa4_tk%d = false, fa4_tv%d = false;\n", n, n);
        return;
    }
    fa4__out(E, "    const bool fa4_tk%d = ", n);
    out_all_const(t, ch, ce, nch);
    fa4__out(E, ";\n");
    if (e->type == TY_BOOL) {
        fa4__out(E, "    const bool fa4_tv%d = fa4_tk%d && (", n, n);
        rep(t, e);
        fa4__out(E, ");\n");
    }
}

/* A float node's bounds: init, a C expression of type fa4_tf (fa4_tfw, fa4_tfx, fa4_tfadd ...),
 * then (outside helpers) the first position's value where the node is one value everywhere.
 * Every name is initialized once: NVRTC warns of a variable set later and never read. */
static void float_out(tile_ctx *t, const fa4__expr *e, int n, const char *init)
{
    fa4__emitter *E = t->E;
    fa4__out(E, "    const fa4_tf fa4_tf%d_ = %s;\n", n, init);
    if (!t->fr) {
        fa4__out(E, "    const float fa4_tx%d = fa4_tk%d ? (float)(", n, n);
        rep(t, e);
        fa4__out(E, ") : 0.0f;\n");
        fa4__out(E, "    const float fa4_tfl%d = fa4_tk%d ? fa4_tx%d : fa4_tf%d_.l, fa4_tfh%d = fa4_tk%d ? fa4_tx%d : "
                    "fa4_tf%d_.h;\n    const bool fa4_tb%d = fa4_tk%d ? fabsf(fa4_tx%d) <= 3.0e38f : fa4_tf%d_.b;\n",
                 n, n, n, n, n, n, n, n, n, n, n, n);
    } else {
        fa4__out(E, "    const float fa4_tfl%d = fa4_tf%d_.l, fa4_tfh%d = fa4_tf%d_.h;\n    const bool fa4_tb%d = fa4_tf%d_.b;\n",
                 n, n, n, n, n, n);
    }
}

static void float_bounds(tile_ctx *t, const fa4__expr *e, int n, const char *lo, const char *hi, const char *ok)
{
    char init[700];
    snprintf(init, sizeof init, "fa4_tfx(%s, %s, %s)", lo, hi, ok);
    float_out(t, e, n, init);
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

/* (void) for the nodes [from, t->nodes) declared in a block about to close, which the list at
 * the end of the function then skips */
static void void_nodes(tile_ctx *t, int from)
{
    for (int n = from; n < t->nodes && n < 4096; n++) {
        if (t->ntype[n] == TY_INT)
            fa4__out(t->E, "    (void)fa4_tl%d, (void)fa4_th%d;\n", n, n);
        else if (t->ntype[n] == TY_BOOL)
            fa4__out(t->E, "    (void)fa4_tk%d, (void)fa4_tv%d;\n", n, n);
        else if (t->ntype[n])
            fa4__out(t->E, "    (void)fa4_tk%d, (void)fa4_tfl%d, (void)fa4_tfh%d, (void)fa4_tb%d;\n", n, n, n, n);
        t->ntype[n] = 0;
    }
}

/* ------------------------------------------------------------ helpers called from score_mod */
/* A helper's variable v in frame id: int fa4_h<id>l<slot> / h<slot> (bounds), bool k / v, float
 * k (one value), b (bounds valid), fl / fh (bounds). */
static const char *const int_fields[] = {"l", "h"};
static const char *const bool_fields[] = {"k", "v"};
static const char *const float_fields[] = {"k", "b", "fl", "fh"};

static int var_fields(int type, const char *const **f)
{
    if (type == TY_INT) {
        *f = int_fields;
        return 2;
    }
    if (type == TY_BOOL) {
        *f = bool_fields;
        return 2;
    }
    *f = float_fields;
    return 4;
}

static const char *field_ctype(int type, const char *field)
{
    if (type == TY_INT)
        return "long long";
    return field[0] == 'f' ? "float" : "bool";
}

/* every local a helper declares, by slot */
static void collect_locals(const fa4__stmt *s, const fa4__var **vars, int nslots)
{
    if (!s)
        return;
    if (s->kind == ST_DECL && s->var && s->var->slot >= 0 && s->var->slot < nslots)
        vars[s->var->slot] = s->var;
    for (int i = 0; i < s->nitems; i++)
        collect_locals(s->items[i], vars, nslots);
    collect_locals(s->then_s, vars, nslots);
    collect_locals(s->else_s, vars, nslots);
}

/* v := node n (same type) in frame fr */
static void set_var(tile_ctx *t, const tile_frame *fr, const fa4__var *v, int n)
{
    fa4__emitter *E = t->E;
    const int id = fr->id, s = v->slot;
    if (s < 0 || s >= fr->nslots || fr->vars[s] != v)
        return;
    if (v->type == TY_INT)
        fa4__out(E, "    fa4_h%dl%d = fa4_tl%d; fa4_h%dh%d = fa4_th%d;\n", id, s, n, id, s, n);
    else if (v->type == TY_BOOL)
        fa4__out(E, "    fa4_h%dk%d = fa4_tk%d; fa4_h%dv%d = fa4_tv%d;\n", id, s, n, id, s, n);
    else
        fa4__out(E, "    fa4_h%dk%d = fa4_tk%d; fa4_h%db%d = fa4_tb%d; fa4_h%dfl%d = fa4_tfl%d; fa4_h%dfh%d = fa4_tfh%d;\n",
                 id, s, n, id, s, n, id, s, n, id, s, n);
}

/* copy the frame's variables to (or back from) fa4_h<id>s<tag>... */
static void save_vars(tile_ctx *t, const tile_frame *fr, const char *tag, int back)
{
    for (int s = 0; s < fr->nslots; s++) {
        const fa4__var *v = fr->vars[s];
        if (!v)
            continue;
        const char *const *fl;
        const int nf = var_fields(v->type, &fl);
        for (int i = 0; i < nf; i++)
            if (back)
                fa4__out(t->E, "    fa4_h%d%s%d = fa4_h%d%s%s%d;\n", fr->id, fl[i], s, fr->id, tag, fl[i], s);
            else
                fa4__out(t->E, "    const %s fa4_h%d%s%s%d = fa4_h%d%s%d;\n", field_ctype(v->type, fl[i]), fr->id, tag,
                         fl[i], s, fr->id, fl[i], s);
    }
}

/* the frame's variables := their hull with the saved fa4_h<id><tag>... */
static void join_vars(tile_ctx *t, const tile_frame *fr, const char *tag)
{
    fa4__emitter *E = t->E;
    const int id = fr->id;
    for (int s = 0; s < fr->nslots; s++) {
        const fa4__var *v = fr->vars[s];
        if (!v)
            continue;
        if (v->type == TY_INT) {
            fa4__out(E, "    fa4_h%dl%d = fa4_tmin(fa4_h%dl%d, fa4_h%d%sl%d); fa4_h%dh%d = fa4_tmax(fa4_h%dh%d, fa4_h%d%sh%d);\n",
                     id, s, id, s, id, tag, s, id, s, id, s, id, tag, s);
        } else if (v->type == TY_BOOL) {
            fa4__out(E, "    fa4_h%dk%d = fa4_h%dk%d && fa4_h%d%sk%d && fa4_h%dv%d == fa4_h%d%sv%d;\n", id, s, id, s, id,
                     tag, s, id, s, id, tag, s);
        } else {
            /* one value on both sides only where both are the same nonzero point */
            fa4__out(E, "    fa4_h%dk%d = fa4_h%dk%d && fa4_h%d%sk%d && fa4_h%db%d && fa4_h%d%sb%d && "
                        "fa4_h%dfl%d == fa4_h%dfh%d && fa4_h%d%sfl%d == fa4_h%d%sfh%d && fa4_h%dfl%d == fa4_h%d%sfl%d && "
                        "fa4_h%dfl%d != 0.0f;\n",
                     id, s, id, s, id, tag, s, id, s, id, tag, s, id, s, id, s, id, tag, s, id, tag, s, id, s, id, tag,
                     s, id, s);
            fa4__out(E, "    fa4_h%db%d = fa4_h%db%d && fa4_h%d%sb%d; fa4_h%dfl%d = fminf(fa4_h%dfl%d, fa4_h%d%sfl%d); "
                        "fa4_h%dfh%d = fmaxf(fa4_h%dfh%d, fa4_h%d%sfh%d);\n",
                     id, s, id, s, id, tag, s, id, s, id, s, id, tag, s, id, s, id, s, id, tag, s);
        }
    }
}

static void abs_stmt(tile_ctx *t, const fa4__stmt *s);

/* the return of the call: hull of the values its live returns give */
static void abs_return(tile_ctx *t, const fa4__expr *e)
{
    fa4__emitter *E = t->E;
    const tile_frame *fr = t->fr;
    const int r = fr->ret, id = fr->id;
    fa4__out(E, "    if (fa4_h%dal) {\n", id);
    const int from = t->nodes;
    const int n = node(t, e);
    if (fr->f->ret == TY_INT)
        fa4__out(E, "    fa4_tl%d = fa4_tmin(fa4_tl%d, fa4_tl%d); fa4_th%d = fa4_tmax(fa4_th%d, fa4_th%d);\n", r, r, n, r,
                 r, n);
    else if (fr->f->ret == TY_BOOL)
        fa4__out(E, "    if (!fa4_tk%d || fa4_tv%d) fa4_h%drt = true;\n    if (!fa4_tk%d || !fa4_tv%d) fa4_h%drf = true;\n",
                 n, n, id, n, n, id);
    else
        fa4__out(E, "    fa4_h%drb = fa4_h%drb && fa4_tb%d; fa4_h%drl = fminf(fa4_h%drl, fa4_tfl%d); "
                    "fa4_h%drh = fmaxf(fa4_h%drh, fa4_tfh%d); fa4_h%drk = fa4_tk%d;\n",
                 id, id, n, id, id, n, id, id, n, id, n);
    fa4__out(E, "    ++fa4_h%drc;\n", id);
    void_nodes(t, from);
    fa4__out(E, "    }\n    fa4_h%dal = false;\n", id);
}

static void abs_stmt(tile_ctx *t, const fa4__stmt *s)
{
    fa4__emitter *E = t->E;
    const tile_frame *fr = t->fr;
    const int id = fr->id;
    if (!s)
        return;
    switch (s->kind) {
    case ST_EMPTY: return;
    case ST_BLOCK:
        for (int i = 0; i < s->nitems; i++)
            abs_stmt(t, s->items[i]);
        return;
    case ST_DECL:
    case ST_ASSIGN: {
        if (!s->var || s->var->slot < 0 || s->var->slot >= fr->nslots || fr->vars[s->var->slot] != s->var)
            return; /* a variable nothing reads */
        fa4__out(E, "    if (fa4_h%dal) {\n", id);
        const int from = t->nodes;
        if (s->e) {
            const int n = node(t, s->e);
            set_var(t, fr, s->var, n);
        } else if (s->var->type == TY_INT) {
            fa4__out(E, "    fa4_h%dl%d = fa4_h%dh%d = 0;\n", id, s->var->slot, id, s->var->slot);
        } else if (s->var->type == TY_BOOL) {
            fa4__out(E, "    fa4_h%dk%d = true; fa4_h%dv%d = false;\n", id, s->var->slot, id, s->var->slot);
        } else {
            /* 0.0f: bounds but not "one nonzero value" (join_vars' rule for a point) */
            fa4__out(E, "    fa4_h%dk%d = true; fa4_h%db%d = true; fa4_h%dfl%d = fa4_h%dfh%d = 0.0f;\n", id,
                     s->var->slot, id, s->var->slot, id, s->var->slot, id, s->var->slot);
        }
        void_nodes(t, from);
        fa4__out(E, "    }\n");
        return;
    }
    case ST_RETURN: abs_return(t, s->e); return;
    case ST_IF: {
        const int k = t->ifs++;
        char tag0[24], tag1[24];
        snprintf(tag0, sizeof tag0, "s%d_", k);
        snprintf(tag1, sizeof tag1, "t%d_", k);
        fa4__out(E, "    if (fa4_h%dal) {\n", id);
        const int from = t->nodes;
        const int c = node(t, s->e);
        save_vars(t, fr, tag0, 0);
        /* the then branch where the condition may hold, the else branch where it may not */
        fa4__out(E, "    fa4_h%dal = !fa4_tk%d || fa4_tv%d;\n", id, c, c);
        abs_stmt(t, s->then_s);
        save_vars(t, fr, tag1, 0);
        fa4__out(E, "    const bool fa4_h%da%d = fa4_h%dal;\n", id, k, id);
        save_vars(t, fr, tag0, 1);
        fa4__out(E, "    fa4_h%dal = !fa4_tk%d || !fa4_tv%d;\n", id, c, c);
        abs_stmt(t, s->else_s);
        fa4__out(E, "    if (fa4_h%da%d && fa4_h%dal) {\n", id, k, id);
        join_vars(t, fr, tag1);
        fa4__out(E, "    } else if (fa4_h%da%d) {\n", id, k);
        save_vars(t, fr, tag1, 1);
        fa4__out(E, "    }\n    fa4_h%dal = fa4_h%dal || fa4_h%da%d;\n", id, id, id, k);
        void_nodes(t, from);
        fa4__out(E, "    }\n");
        return;
    }
    default: return;
    }
}

/* A helper call: its body evaluated over the arguments' bounds, node n its result */
static void tile_call(tile_ctx *t, const fa4__expr *e, int n, const int *ch, const fa4__expr *const *ce, int nch)
{
    fa4__emitter *E = t->E;
    const fa4__func *hf = e->func;
    tile_frame fr;
    memset(&fr, 0, sizeof fr);
    fr.f = hf;
    fr.id = t->frames++;
    fr.ret = n;
    fr.nslots = hf->nslots;
    fr.vars = calloc((size_t)hf->nslots + 1, sizeof *fr.vars);
    t->calls = 1;
    const int id = fr.id, ret = hf->ret;
    /* the result: empty until a return adds to it */
    if (ret == TY_INT)
        fa4__out(E, "    long long fa4_tl%d = 2147483647LL, fa4_th%d = -2147483648LL;\n", n, n);
    else if (ret == TY_BOOL)
        fa4__out(E, "    bool fa4_h%drt = false, fa4_h%drf = false;\n", id, id);
    else
        fa4__out(E, "    bool fa4_h%drb = true, fa4_h%drk = false;\n    float fa4_h%drl = 3.0e38f, fa4_h%drh = -3.0e38f;\n",
                 id, id, id, id);
    fa4__out(E, "    int fa4_h%drc = 0;\n    {\n    // %s, evaluated over the box\n    bool fa4_h%dal = true;\n", id,
             hf->name, id);
    if (!fr.vars || nch != hf->nparams) {
        fa4__out(E, "    fa4_h%drc = -1;\n    (void)fa4_h%dal;\n", id, id);
    } else {
        for (int i = 0; i < hf->nparams; i++)
            if (hf->params[i]->slot >= 0 && hf->params[i]->slot < hf->nslots)
                fr.vars[hf->params[i]->slot] = hf->params[i];
        collect_locals(hf->body, fr.vars, hf->nslots);
        for (int s = 0; s < fr.nslots; s++) /* never read: not kept (NVRTC warns of a variable only set) */
            if (fr.vars[s] && !fr.vars[s]->reads)
                fr.vars[s] = NULL;
        for (int s = 0; s < fr.nslots; s++) {
            const fa4__var *v = fr.vars[s];
            if (!v)
                continue;
            if (v->type == TY_INT)
                fa4__out(E, "    long long fa4_h%dl%d = -2147483648LL, fa4_h%dh%d = 2147483647LL;\n", id, s, id, s);
            else if (v->type == TY_BOOL)
                fa4__out(E, "    bool fa4_h%dk%d = false, fa4_h%dv%d = false;\n", id, s, id, s);
            else
                fa4__out(E, "    bool fa4_h%dk%d = false, fa4_h%db%d = false;\n    float fa4_h%dfl%d = 0.0f, "
                            "fa4_h%dfh%d = 0.0f;\n", id, s, id, s, id, s, id, s);
        }
        for (int i = 0; i < hf->nparams; i++) /* the arguments (the checker cast them to the parameters' types) */
            if (ce[i]->type == hf->params[i]->type)
                set_var(t, &fr, hf->params[i], ch[i]);
        const tile_frame *outer = t->fr;
        t->fr = &fr;
        abs_stmt(t, hf->body);
        t->fr = outer;
        for (int s = 0; s < fr.nslots; s++) { /* no warning for a variable only written */
            const fa4__var *v = fr.vars[s];
            if (!v)
                continue;
            const char *const *fl;
            const int nf = var_fields(v->type, &fl);
            for (int i = 0; i < nf; i++)
                fa4__out(E, "    (void)fa4_h%d%s%d;\n", id, fl[i], s);
        }
        fa4__out(E, "    (void)fa4_h%dal;\n", id);
    }
    fa4__out(E, "    }\n");
    free(fr.vars);
    /* no live return (or a failed set-up): anything */
    if (ret == TY_INT) {
        fa4__out(E, "    if (fa4_h%drc <= 0)\n        fa4_tl%d = -2147483648LL, fa4_th%d = 2147483647LL;\n", id, n, n);
        if (!t->fr) { /* every argument one value: the call's value at the first position */
            fa4__out(E, "    if (");
            out_all_const(t, ch, ce, nch);
            fa4__out(E, ")\n        fa4_tl%d = fa4_th%d = (long long)(", n, n);
            rep(t, e);
            fa4__out(E, ");\n");
        }
    } else if (ret == TY_BOOL) {
        fa4__out(E, "    bool fa4_tk%d = fa4_h%drc > 0 && !(fa4_h%drt && fa4_h%drf), fa4_tv%d = fa4_tk%d && fa4_h%drt;\n",
                 n, id, id, id, n, n, id);
        if (!t->fr) {
            fa4__out(E, "    if (");
            out_all_const(t, ch, ce, nch);
            fa4__out(E, ") {\n        fa4_tk%d = true;\n        fa4_tv%d = (", n, n);
            rep(t, e);
            fa4__out(E, ");\n    }\n");
        }
    } else {
        /* one value where a single return was live and its value is one value, or where every
         * argument is */
        fa4__out(E, "    const bool fa4_tk%d = (fa4_h%drc == 1 && fa4_h%drk)", n, id, id);
        if (!t->fr || nch > 0) {
            fa4__out(E, " || (");
            out_all_const(t, ch, ce, nch);
            fa4__out(E, ")");
        }
        fa4__out(E, ";\n");
        char lo[64], hi[64], ok[64];
        snprintf(lo, sizeof lo, "fa4_h%drl", id);
        snprintf(hi, sizeof hi, "fa4_h%drh", id);
        snprintf(ok, sizeof ok, "fa4_h%drc > 0 && fa4_h%drb", id, id);
        float_bounds(t, e, n, lo, hi, ok);
    }
}

/* Helpers whose result can be one value over more than one position (a decision, a clamp, an
 * int division or a float truncated to int somewhere in them) */
static int expr_saturates(const fa4__expr *e);
static int stmt_saturates(const fa4__stmt *s)
{
    if (!s)
        return 0;
    if (s->kind == ST_IF)
        return 1;
    if (s->e && expr_saturates(s->e))
        return 1;
    for (int i = 0; i < s->nitems; i++)
        if (stmt_saturates(s->items[i]))
            return 1;
    return stmt_saturates(s->then_s) || stmt_saturates(s->else_s);
}

static int expr_saturates(const fa4__expr *e)
{
    if (!e)
        return 0;
    switch (e->kind) {
    case EX_COND: return 1;
    case EX_CALL:
        if (e->func && stmt_saturates(e->func->body))
            return 1;
        break;
    case EX_CAST:
        if (e->type == TY_INT && e->a->type == TY_FLOAT)
            return 1;
        break;
    case EX_BINARY:
        switch (e->op) {
        case TK_LT: case TK_LE: case TK_GT: case TK_GE: case TK_EQEQ: case TK_NE: return 1;
        case TK_SLASH:
            if (e->type == TY_INT)
                return 1;
            break;
        default: break;
        }
        break;
    case EX_BUILTIN:
        if (e->op == BI_MIN || e->op == BI_MAX || e->op == BI_CLAMP || e->op == BI_FLOOR || e->op == BI_CEIL ||
            e->op == BI_ROUND || e->op == BI_TRUNC)
            return 1;
        break;
    default: break;
    }
    if (expr_saturates(e->a) || expr_saturates(e->b) || expr_saturates(e->c))
        return 1;
    for (int i = 0; i < e->nargs; i++)
        if (expr_saturates(e->args[i]))
            return 1;
    return 0;
}

/* A ?: node's known flag: the condition known and the branch it takes known */
static void cond_known(tile_ctx *t, const fa4__expr *e, int n, int a, int b, int c)
{
    fa4__out(t->E, "    const bool fa4_tk%d = fa4_tk%d && (fa4_tv%d ? ", n, a, a);
    out_const(t, e->b, b);
    fa4__out(t->E, " : ");
    out_const(t, e->c, c);
    fa4__out(t->E, ");\n");
}

/* ------------------------------------------------------------------------------ float nodes */
static void float_node(tile_ctx *t, const fa4__expr *e, int n, const int *ch, const fa4__expr *const *ce, int nch)
{
    fa4__emitter *E = t->E;
    char lo[200], hi[200], ok[200], init[700];
    const int a = nch > 0 ? ch[0] : -1, b = nch > 1 ? ch[1] : -1, c = nch > 2 ? ch[2] : -1;
    if (e->kind == EX_COND) {
        cond_known(t, e, n, a, b, c);
        snprintf(lo, sizeof lo, "fa4_tk%d ? (fa4_tv%d ? fa4_tfl%d : fa4_tfl%d) : fminf(fa4_tfl%d, fa4_tfl%d)", a, a, b,
                 c, b, c);
        snprintf(hi, sizeof hi, "fa4_tk%d ? (fa4_tv%d ? fa4_tfh%d : fa4_tfh%d) : fmaxf(fa4_tfh%d, fa4_tfh%d)", a, a, b,
                 c, b, c);
        snprintf(ok, sizeof ok, "fa4_tk%d ? (fa4_tv%d ? fa4_tb%d : fa4_tb%d) : (fa4_tb%d && fa4_tb%d)", a, a, b, c, b, c);
        float_bounds(t, e, n, lo, hi, ok);
        return;
    }
    /* one value everywhere where every operand is (any deterministic operation) */
    const_if_all(t, e, n, ch, ce, nch);
    const char *rel = "0x1p-16f", *abs0 = "0x1p-120f";
    int widen = 1;
    lo[0] = hi[0] = '\0';
    snprintf(ok, sizeof ok, "false");
    if (e->kind == EX_FLOAT) {
        fa4__out(E, "    const float fa4_tc%d = ", n);
        fa4__emit_bare(E, e);
        fa4__out(E, ";\n");
        snprintf(lo, sizeof lo, "fa4_tc%d", n);
        snprintf(hi, sizeof hi, "fa4_tc%d", n);
        snprintf(ok, sizeof ok, "true");
        widen = 0;
    } else if (e->kind == EX_CAST && e->a->type == TY_INT) {
        snprintf(lo, sizeof lo, "(float)fa4_tl%d", a);
        snprintf(hi, sizeof hi, "(float)fa4_th%d", a);
        snprintf(ok, sizeof ok, "true");
        widen = 0; /* rounding to nearest is monotone */
    } else if (e->kind == EX_CAST && e->a->type == TY_BOOL) {
        snprintf(lo, sizeof lo, "fa4_tk%d ? (float)fa4_tv%d : 0.0f", a, a);
        snprintf(hi, sizeof hi, "fa4_tk%d ? (float)fa4_tv%d : 1.0f", a, a);
        snprintf(ok, sizeof ok, "true");
        widen = 0;
    } else if (e->kind == EX_UNARY && (e->op == TK_MINUS || e->op == TK_PLUS) && e->a->type == TY_FLOAT) {
        const int neg = e->op == TK_MINUS;
        snprintf(lo, sizeof lo, neg ? "-fa4_tfh%d" : "fa4_tfl%d", a);
        snprintf(hi, sizeof hi, neg ? "-fa4_tfl%d" : "fa4_tfh%d", a);
        snprintf(ok, sizeof ok, "fa4_tb%d", a);
        widen = 0;
    } else if (e->kind == EX_BINARY && e->a->type == TY_FLOAT && e->b->type == TY_FLOAT &&
               (e->op == TK_PLUS || e->op == TK_MINUS || e->op == TK_STAR || e->op == TK_SLASH)) {
        const char *fn = e->op == TK_PLUS    ? "fa4_tfadd"
                         : e->op == TK_MINUS ? "fa4_tfsub"
                         : e->op == TK_STAR  ? "fa4_tfmul"
                                             : "fa4_tfdiv";
        snprintf(init, sizeof init, "%s(fa4_tfl%d, fa4_tfh%d, fa4_tb%d, fa4_tfl%d, fa4_tfh%d, fa4_tb%d)", fn, a, a, a,
                 b, b, b);
        float_out(t, e, n, init);
        return;
    } else if (e->kind == EX_BUILTIN && nch >= 1) {
        const char *f = NULL;
        int need_pos = 0; /* the argument's low bound must be > 0 (1) or >= 0 (2) */
        switch (e->op) {
        case BI_LOG: f = "fa4_logf"; need_pos = 1; break;
        case BI_LOG2: f = "fa4_log2f"; need_pos = 1; break;
        case BI_EXP: f = "fa4_expf"; break;
        case BI_EXP2: f = "fa4_exp2f"; break;
        case BI_SQRT: f = "sqrtf"; need_pos = 2; break;
        case BI_FLOOR: f = "floorf"; break;
        case BI_CEIL: f = "ceilf"; break;
        case BI_TRUNC: f = "truncf"; break;
        case BI_ROUND: f = "roundf"; break;
        default: break;
        }
        if (f) {
            /* the argument's bounds, held inside the function's domain before the call */
            snprintf(lo, sizeof lo, "%s(fa4_tb%d ? fa4_tfl%d : 1.0f)", f, a, a);
            snprintf(hi, sizeof hi, "%s(fa4_tb%d ? fa4_tfh%d : 1.0f)", f, a, a);
            if (need_pos)
                snprintf(ok, sizeof ok, "fa4_tb%d && fa4_tfl%d %s 0.0f", a, a, need_pos == 1 ? ">" : ">=");
            else
                snprintf(ok, sizeof ok, "fa4_tb%d", a);
            if (e->op == BI_LOG || e->op == BI_LOG2 || e->op == BI_EXP || e->op == BI_EXP2 || e->op == BI_SQRT) {
                rel = "0x1p-12f";
                abs0 = "0x1p-16f";
            } else {
                widen = 0; /* exact */
            }
        } else if ((e->op == BI_ABS || e->op == BI_FABS) && nch == 1) {
            snprintf(lo, sizeof lo, "fa4_tfl%d >= 0.0f ? fa4_tfl%d : fa4_tfh%d <= 0.0f ? -fa4_tfh%d : 0.0f", a, a, a, a);
            snprintf(hi, sizeof hi, "fmaxf(-fa4_tfl%d, fa4_tfh%d)", a, a);
            snprintf(ok, sizeof ok, "fa4_tb%d", a);
            widen = 0;
        } else if ((e->op == BI_MIN || e->op == BI_MAX || e->op == BI_FMIN || e->op == BI_FMAX) && nch == 2) {
            const char *mf = e->op == BI_MIN || e->op == BI_FMIN ? "fminf" : "fmaxf";
            snprintf(lo, sizeof lo, "%s(fa4_tfl%d, fa4_tfl%d)", mf, a, b);
            snprintf(hi, sizeof hi, "%s(fa4_tfh%d, fa4_tfh%d)", mf, a, b);
            snprintf(ok, sizeof ok, "fa4_tb%d && fa4_tb%d", a, b);
            widen = 0;
        } else if (e->op == BI_CLAMP && nch == 3) {
            snprintf(lo, sizeof lo, "fminf(fmaxf(fa4_tfl%d, fa4_tfl%d), fa4_tfl%d)", a, b, c);
            snprintf(hi, sizeof hi, "fminf(fmaxf(fa4_tfh%d, fa4_tfh%d), fa4_tfh%d)", a, b, c);
            snprintf(ok, sizeof ok, "fa4_tb%d && fa4_tb%d && fa4_tb%d", a, b, c);
            widen = 0;
        }
    }
    if (!lo[0]) {
        float_bounds(t, e, n, "0.0f", "0.0f", "false");
        return;
    }
    if (widen)
        snprintf(init, sizeof init, "fa4_tfw(%s, %s, %s, %s, %s)", lo, hi, ok, rel, abs0);
    else
        snprintf(init, sizeof init, "fa4_tfx(%s, %s, %s)", lo, hi, ok);
    float_out(t, e, n, init);
}

/* The comparison a OP b over bounds <lo>a..<hi>a and <lo>b..<hi>b: tb true where it holds
 * everywhere (for ==: both one and the same value), fb where it fails everywhere; empty strings
 * for an operator that is not a comparison. */
static void cmp_decided(int op, const char *lo, const char *hi, int a, int b, char *tb, char *fb, size_t size)
{
    tb[0] = fb[0] = '\0';
    switch (op) {
    case TK_LT: snprintf(tb, size, "%s%d < %s%d", hi, a, lo, b); snprintf(fb, size, "%s%d >= %s%d", lo, a, hi, b); break;
    case TK_LE: snprintf(tb, size, "%s%d <= %s%d", hi, a, lo, b); snprintf(fb, size, "%s%d > %s%d", lo, a, hi, b); break;
    case TK_GT: snprintf(tb, size, "%s%d > %s%d", lo, a, hi, b); snprintf(fb, size, "%s%d <= %s%d", hi, a, lo, b); break;
    case TK_GE: snprintf(tb, size, "%s%d >= %s%d", lo, a, hi, b); snprintf(fb, size, "%s%d < %s%d", hi, a, lo, b); break;
    case TK_EQEQ:
    case TK_NE:
        snprintf(tb, size, "%s%d == %s%d && %s%d == %s%d && %s%d == %s%d", lo, a, hi, a, lo, b, hi, b, lo, a, lo, b);
        snprintf(fb, size, "%s%d < %s%d || %s%d < %s%d", hi, a, lo, b, hi, b, lo, a);
        break;
    default: break;
    }
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
    if (!t->fr && e->kind == EX_VAR && e->var->kind == VK_LOCAL && t->local_node[e->var->slot] >= 0)
        return t->local_node[e->var->slot];
    int ch[8] = {0};
    const fa4__expr *ce[8] = {0};
    char lo[160], hi[160];
    if (e->kind == EX_VAR && t->fr) { /* a helper's variable, as it stands */
        const int n = t->nodes++, id = t->fr->id, s = e->var->slot;
        if (e->var->kind == VK_AUX || s < 0 || s >= t->fr->nslots || t->fr->vars[s] != e->var) {
            if (e->type == TY_INT)
                fa4__out(E, "    long long fa4_tl%d = -2147483648LL, fa4_th%d = 2147483647LL;\n", n, n);
            else if (e->type == TY_BOOL)
                fa4__out(E, "    const bool fa4_tk%d = false, fa4_tv%d = false;\n", n, n);
            else
                fa4__out(E, "    const bool fa4_tk%d = false;\n    const float fa4_tfl%d = 0.0f, fa4_tfh%d = 0.0f;\n"
                            "    const bool fa4_tb%d = false;\n", n, n, n, n);
        } else if (e->type == TY_INT) {
            fa4__out(E, "    long long fa4_tl%d = fa4_h%dl%d, fa4_th%d = fa4_h%dh%d;\n", n, id, s, n, id, s);
        } else if (e->type == TY_BOOL) {
            fa4__out(E, "    const bool fa4_tk%d = fa4_h%dk%d, fa4_tv%d = fa4_h%dv%d;\n", n, id, s, n, id, s);
        } else {
            fa4__out(E, "    const bool fa4_tk%d = fa4_h%dk%d;\n    const float fa4_tfl%d = fa4_h%dfl%d, fa4_tfh%d = "
                        "fa4_h%dfh%d;\n    const bool fa4_tb%d = fa4_h%db%d;\n", n, id, s, n, id, s, n, id, s, n, id, s);
        }
        return n;
    }
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
            } else {
                float_bounds(t, e, n, "0.0f", "0.0f", "false");
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
            float_node(t, e, n, ch, ce, 0);
        return n;
    }
    const int nch = children(t, e, ch, ce);
    const int n = t->nodes++;
    const int a = nch > 0 ? ch[0] : -1, b = nch > 1 ? ch[1] : -1, c = nch > 2 ? ch[2] : -1;
    if (e->kind == EX_CALL && e->func) {
        tile_call(t, e, n, ch, ce, nch);
        return n;
    }
    if (e->type == TY_FLOAT) {
        float_node(t, e, n, ch, ce, nch);
        return n;
    }
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
        if (e->kind == EX_CAST && e->a->type == TY_FLOAT) {
            /* truncation toward zero (saturating) is monotone; outside helpers the first
             * position's value where the operand is one value */
            if (!t->fr) {
                fa4__out(E, "    const long long fa4_tx%d = fa4_tk%d ? (long long)(", n, a);
                rep(t, e);
                fa4__out(E, ") : 0LL;\n");
            }
            char pl[64] = "", ph[64] = "";
            if (!t->fr) {
                snprintf(pl, sizeof pl, "fa4_tk%d ? fa4_tx%d : ", a, n);
                snprintf(ph, sizeof ph, "fa4_tk%d ? fa4_tx%d : ", a, n);
            }
            fa4__out(E, "    const long long fa4_tl%d = %sfa4_tb%d ? (long long)__float2int_rz(fa4_tfl%d) : -2147483648LL,\n"
                        "                    fa4_th%d = %sfa4_tb%d ? (long long)__float2int_rz(fa4_tfh%d) : 2147483647LL;\n",
                     n, pl, a, a, n, ph, a, a);
            return n;
        }
        int_point_or_all(t, e, n, ch, ce, nch);
        return n;
    }
    if (e->type == TY_BOOL && e->kind == EX_BINARY && e->a->type == TY_FLOAT && e->b->type == TY_FLOAT) {
        /* a comparison of float bounds: decided where they do not overlap */
        char tb[300], fb[300];
        cmp_decided(e->op, "fa4_tfl", "fa4_tfh", a, b, tb, fb, sizeof tb);
        if (tb[0]) {
            const char *T = e->op == TK_NE ? fb : tb, *F = e->op == TK_NE ? tb : fb;
            fa4__out(E, "    const bool fa4_tb%d_ = fa4_tb%d && fa4_tb%d;\n", n, a, b);
            fa4__out(E, "    bool fa4_tv%d = fa4_tb%d_ && (%s), fa4_tk%d = fa4_tv%d || (fa4_tb%d_ && (%s));\n", n, n, T, n,
                     n, n, F);
            fa4__out(E, "    (void)fa4_tb%d_;\n", n);
            if (!t->fr) {
                fa4__out(E, "    if (!fa4_tk%d && fa4_tk%d && fa4_tk%d) {\n        fa4_tk%d = true;\n        fa4_tv%d = (", n,
                         a, b, n, n);
                rep(t, e);
                fa4__out(E, ");\n    }\n");
            }
            return n;
        }
    }
    if (e->type == TY_BOOL && e->kind == EX_BINARY && e->a->type == TY_INT && e->b->type == TY_INT) {
        /* a comparison of intervals: decided where they do not overlap */
        const char *T = NULL, *F = NULL;
        char tb[300], fb[300];
        cmp_decided(e->op, "fa4_tl", "fa4_th", a, b, tb, fb, sizeof tb);
        if (tb[0]) {
            T = e->op == TK_NE ? fb : tb;
            F = e->op == TK_NE ? tb : fb;
            fa4__out(E, "    const bool fa4_tv%d = %s, fa4_tk%d = fa4_tv%d || (%s);\n", n, T, n, n, F);
            return n;
        }
    }
    if (e->type == TY_BOOL && e->kind == EX_CAST && e->a->type == TY_INT) {
        fa4__out(E, "    const bool fa4_tv%d = fa4_tl%d > 0 || fa4_th%d < 0, fa4_tk%d = fa4_tv%d || (fa4_tl%d == 0 && "
                    "fa4_th%d == 0);\n", n, a, a, n, n, a, a);
        return n;
    }
    if (e->type == TY_BOOL && e->kind == EX_CAST && e->a->type == TY_FLOAT) {
        fa4__out(E, "    const bool fa4_tv%d = fa4_tb%d && (fa4_tfl%d > 0.0f || fa4_tfh%d < 0.0f), fa4_tk%d = fa4_tv%d || "
                    "(fa4_tb%d && fa4_tfl%d == 0.0f && fa4_tfh%d == 0.0f);\n", n, a, a, a, n, n, a, a, a);
        return n;
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
        cond_known(t, e, n, a, b, c);
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
    /* float bounds [l, h], valid (b) only while finite: fa4_tfw widens them outward */
    fa4__out(E, "struct fa4_tf {\n    float l, h;\n    bool b;\n};\n"
                "__device__ __forceinline__ fa4_tf fa4_tfx(float l, float h, bool b)\n{\n"
                "    fa4_tf r;\n    r.l = l;\n    r.h = h;\n    r.b = b && fabsf(l) <= 3.0e38f && fabsf(h) <= 3.0e38f;\n"
                "    return r;\n}\n"
                "__device__ __forceinline__ fa4_tf fa4_tfw(float l, float h, bool b, float rel, float ab)\n{\n"
                "    return fa4_tfx(l - (fabsf(l) * rel + ab), h + (fabsf(h) * rel + ab), b);\n}\n"
                "__device__ __forceinline__ fa4_tf fa4_tfadd(float al, float ah, bool ab, float bl, float bh, bool bb)\n{\n"
                "    return fa4_tfw(al + bl, ah + bh, ab && bb, 0x1p-16f, 0x1p-120f);\n}\n"
                "__device__ __forceinline__ fa4_tf fa4_tfsub(float al, float ah, bool ab, float bl, float bh, bool bb)\n{\n"
                "    return fa4_tfw(al - bh, ah - bl, ab && bb, 0x1p-16f, 0x1p-120f);\n}\n"
                "__device__ __forceinline__ fa4_tf fa4_tfmul(float al, float ah, bool ab, float bl, float bh, bool bb)\n{\n"
                "    const float p0 = al * bl, p1 = al * bh, p2 = ah * bl, p3 = ah * bh;\n"
                "    return fa4_tfw(fminf(fminf(p0, p1), fminf(p2, p3)), fmaxf(fmaxf(p0, p1), fmaxf(p2, p3)), ab && bb,\n"
                "                   0x1p-16f, 0x1p-120f);\n}\n"
                "// a divisor's bounds must exclude 0 and stay under 2^120 (fast math's division is 0 above 2^126)\n"
                "__device__ __forceinline__ fa4_tf fa4_tfdiv(float al, float ah, bool ab, float bl, float bh, bool bb)\n{\n"
                "    if (!(ab && bb && (bl > 0.0f || bh < 0.0f) && fabsf(bl) <= 0x1p120f && fabsf(bh) <= 0x1p120f))\n"
                "        return fa4_tfx(0.0f, 0.0f, false);\n"
                "    const float p0 = al / bl, p1 = al / bh, p2 = ah / bl, p3 = ah / bh;\n"
                "    return fa4_tfw(fminf(fminf(p0, p1), fminf(p2, p3)), fmaxf(fmaxf(p0, p1), fmaxf(p2, p3)), true,\n"
                "                   0x1p-16f, 0x1p-120f);\n}\n");
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
    fa4__out(E, "#define FA4_SCORE_MOD_TILE 0\n#define FA4_SCORE_MOD_TILE_ADD 0\n#define FA4_SCORE_MOD_TILE_GRAD 0\n"
                "#define FA4_SCORE_MOD_TILE_CALLS 0\n");
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
    void_nodes(&t, 0); /* no warning for an unread temporary */
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
    /* 1: the test evaluates a helper call over the box (t5_bias's bucket: a few hundred
     * instructions), which the forward leaves to its relative-form table where it has one */
    fa4__out(E, "#define FA4_SCORE_MOD_TILE_CALLS %d\n", t.calls);
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
                void_nodes(&t, 0);
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
