/*
 * emit_deps.c - dependence analyses of the checked mod for the emitter: whether mask_mod gathers
 * (reads an aux tensor at an index that depends on q_idx or kv_idx), written as
 * FA4_MASK_MOD_GATHERS; and which values of a function vary from one (query, key) position to the
 * next, so that a division by a value that does not (soft-capping's score / cap) is emitted as a
 * multiply by a reciprocal the compiler computes once (fa4_fdiv_u).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit_internal.h"

/* Does mask_mod read an aux tensor element at an index that depends on q_idx or kv_idx (document's
 * doc_id[q_idx])? The sm90 forward evaluates such a mask while S is on the tensor cores
 * (FA4_MASK_MOD_GATHERS, mainloop.cuh), where its reads overlap the MMA; a mask computed from the
 * indices alone, or from aux[b], is cheaper inline. Dependence flows through locals (an assignment
 * from a dependent value, or under a dependent condition), helper arguments and helper results (a
 * result depends on the arguments). It may answer yes too often, never wrongly for correctness:
 * the answer only picks where the mask is computed. */
int fa4__expr_depends(const fa4__expr *e, const unsigned char *dep)
{
    if (!e)
        return 0;
    if (e->kind == EX_VAR && e->var && e->var->kind != VK_AUX && dep[e->var->slot])
        return 1;
    if (fa4__expr_depends(e->a, dep) || fa4__expr_depends(e->b, dep) || fa4__expr_depends(e->c, dep))
        return 1;
    for (int i = 0; i < e->nargs; i++)
        if (fa4__expr_depends(e->args[i], dep))
            return 1;
    return 0;
}

/* Mark the locals that depend on the indices; sets *changed when one is newly marked. */
static void stmt_mark(const fa4__stmt *s, int under_dep, unsigned char *dep, int *changed)
{
    if (!s)
        return;
    switch (s->kind) {
    case ST_BLOCK:
        for (int i = 0; i < s->nitems; i++)
            stmt_mark(s->items[i], under_dep, dep, changed);
        return;
    case ST_DECL:
    case ST_ASSIGN:
        if (s->var && !dep[s->var->slot] && (under_dep || fa4__expr_depends(s->e, dep))) {
            dep[s->var->slot] = 1;
            *changed = 1;
        }
        return;
    case ST_IF: {
        const int d = under_dep || fa4__expr_depends(s->e, dep);
        stmt_mark(s->then_s, d, dep, changed);
        stmt_mark(s->else_s, d, dep, changed);
        return;
    }
    default: return;
    }
}

static int func_gathers(const fa4__func *f, const unsigned char *param_dep);

static int expr_gathers(const fa4__expr *e, const unsigned char *dep)
{
    if (!e)
        return 0;
    if (e->kind == EX_INDEX && fa4__expr_depends(e->a, dep))
        return 1;
    if (e->kind == EX_CALL && e->func) {
        unsigned char arg_dep[64] = {0};
        for (int i = 0; i < e->nargs && i < 64; i++)
            arg_dep[i] = (unsigned char)fa4__expr_depends(e->args[i], dep);
        if (func_gathers(e->func, arg_dep))
            return 1;
    }
    if (expr_gathers(e->a, dep) || expr_gathers(e->b, dep) || expr_gathers(e->c, dep))
        return 1;
    for (int i = 0; i < e->nargs; i++)
        if (expr_gathers(e->args[i], dep))
            return 1;
    return 0;
}

static int stmt_gathers(const fa4__stmt *s, const unsigned char *dep)
{
    if (!s)
        return 0;
    if (s->kind == ST_BLOCK) {
        for (int i = 0; i < s->nitems; i++)
            if (stmt_gathers(s->items[i], dep))
                return 1;
        return 0;
    }
    return expr_gathers(s->e, dep) || stmt_gathers(s->then_s, dep) || stmt_gathers(s->else_s, dep);
}

/* param_dep[i]: whether parameter i depends on the indices */
/* The slots of f that depend on the parameters marked in param_dep (calloc'd; NULL when out of
 * memory). */
static unsigned char *mark_dependent(const fa4__func *f, const unsigned char *param_dep)
{
    unsigned char *dep = calloc((size_t)f->nslots + 1, 1);
    if (!dep)
        return NULL;
    for (int i = 0; i < f->nparams && i < 64; i++)
        dep[f->params[i]->slot] = param_dep[i];
    int changed = 1;
    while (changed) {
        changed = 0;
        stmt_mark(f->body, 0, dep, &changed);
    }
    return dep;
}

static int func_gathers(const fa4__func *f, const unsigned char *param_dep)
{
    unsigned char *dep = mark_dependent(f, param_dep);
    if (!dep)
        return 1; /* out of memory: the answer that is never wrong */
    const int r = stmt_gathers(f->body, dep);
    free(dep);
    return r;
}

int fa4__mask_gathers(const fa4__mod *m)
{
    if (!m->mask || m->mask->nparams < 4)
        return 0;
    unsigned char index_params[64] = {0}; /* b, h, q_idx, kv_idx, then the aux */
    index_params[2] = index_params[3] = 1;
    return func_gathers(m->mask, index_params);
}

/* The helper calls in an expression or statement: each argument that varies under dep makes that
 * parameter of the callee vary (pv: one row of 64 flags per function, as m->order). */
static int order_index(const fa4__mod *m, const fa4__func *f)
{
    for (int i = 0; i < m->nfuncs; i++)
        if (m->order[i] == f)
            return i;
    return -1;
}

static void expr_calls(const fa4__mod *m, const fa4__expr *e, const unsigned char *dep,
                       unsigned char (*pv)[64])
{
    if (!e)
        return;
    if (e->kind == EX_CALL && e->func) {
        const int j = order_index(m, e->func);
        for (int a = 0; j >= 0 && a < e->nargs && a < 64; a++)
            if (fa4__expr_depends(e->args[a], dep))
                pv[j][a] = 1;
    }
    expr_calls(m, e->a, dep, pv);
    expr_calls(m, e->b, dep, pv);
    expr_calls(m, e->c, dep, pv);
    for (int i = 0; i < e->nargs; i++)
        expr_calls(m, e->args[i], dep, pv);
}

static void stmt_calls(const fa4__mod *m, const fa4__stmt *s, const unsigned char *dep,
                       unsigned char (*pv)[64])
{
    if (!s)
        return;
    for (int i = 0; i < s->nitems; i++)
        stmt_calls(m, s->items[i], dep, pv);
    expr_calls(m, s->e, dep, pv);
    stmt_calls(m, s->then_s, dep, pv);
    stmt_calls(m, s->else_s, dep, pv);
}

/* score_mod's score, q_idx and kv_idx and mask_mod's q_idx and kv_idx vary by position; b, h and
 * the aux do not. A helper's parameter varies where some call passes it a varying value (its body
 * is emitted once for every call site); callers come before callees in the reverse of m->order,
 * so each helper's parameters are settled before its body is marked. Locals follow their
 * assignments and the conditions around them. */
unsigned char **fa4__mod_varying(const fa4__mod *m)
{
    unsigned char **dep = calloc((size_t)m->nfuncs + 1, sizeof *dep);
    unsigned char(*pv)[64] = calloc((size_t)m->nfuncs + 1, sizeof *pv);
    if (!dep || !pv)
        goto fail;
    for (int k = m->nfuncs - 1; k >= 0; k--) {
        const fa4__func *f = m->order[k];
        if (f->role == FR_SCORE)
            pv[k][0] = pv[k][3] = pv[k][4] = 1;
        else if (f->role == FR_MASK)
            pv[k][2] = pv[k][3] = 1;
        dep[k] = mark_dependent(f, pv[k]);
        if (!dep[k])
            goto fail;
        stmt_calls(m, f->body, dep[k], pv);
    }
    free(pv);
    return dep;
    /* fail: out of memory; the emitter then takes every division as general */
fail:
    fa4__mod_varying_free(m, dep);
    free(pv);
    return NULL;
}

void fa4__mod_varying_free(const fa4__mod *m, unsigned char **dep)
{
    if (!dep)
        return;
    for (int k = 0; k < m->nfuncs; k++)
        free(dep[k]);
    free(dep);
}

const unsigned char *fa4__func_varying(const fa4__mod *m, unsigned char *const *dep, const fa4__func *f)
{
    const int k = dep ? order_index(m, f) : -1;
    return k >= 0 ? dep[k] : NULL;
}

/*
 * Uniform subexpressions of score_mod: built only from literals, b, h, aux scalars, aux tensor
 * reads at such indices, builtins and helper calls of such arguments, they are the same at every
 * (query, key) position of a tile. The sm90 forward computes them once per score fragment
 * (fa4_score_mod_uniform) instead of at each of its 64 positions, where an aux read (alibi's
 * slopes[h]) was reloaded and re-clamped per 8-column chunk and head_scale's expf(log_temp[h])
 * recomputed. Reads are clamped and integer arithmetic is total in release builds, so computing
 * a subexpression that the score_mod would not have reached (under an if, a ?:, an && or ||)
 * changes no value; checked builds, where an out-of-range read is reported, do not hoist.
 * A float division whose divisor is uniform hoists the divisor's reciprocal.
 */
static int uniform_expr(const fa4__func *f, const fa4__expr *e)
{
    if (!e)
        return 1;
    switch (e->kind) {
    case EX_INT:
    case EX_FLOAT:
    case EX_BOOL: return 1;
    case EX_VAR:
        if (e->var->kind == VK_AUX)
            return e->var->type != TY_TENSOR;
        return e->var->kind == VK_PARAM && f->nparams >= 3 &&
               (e->var == f->params[1] || e->var == f->params[2]);
    default: break;
    }
    if (!uniform_expr(f, e->a) || !uniform_expr(f, e->b) || !uniform_expr(f, e->c))
        return 0;
    for (int i = 0; i < e->nargs; i++)
        if (!uniform_expr(f, e->args[i]))
            return 0;
    return 1;
}

/* Worth a register: reads b, h or an aux value (a constant expression the compiler folds), and is
 * more than a bare variable or literal (aux scalars and b, h are already at hand). */
static int reads_something(const fa4__expr *e)
{
    if (!e)
        return 0;
    if (e->kind == EX_VAR || e->kind == EX_INDEX || e->kind == EX_CALL)
        return 1;
    if (reads_something(e->a) || reads_something(e->b) || reads_something(e->c))
        return 1;
    for (int i = 0; i < e->nargs; i++)
        if (reads_something(e->args[i]))
            return 1;
    return 0;
}

static void add_hoist(fa4__emitter *E, const fa4__expr *e, int rcp)
{
    if (E->nhoist < FA4__MAX_HOIST) {
        E->hoist[E->nhoist] = e;
        E->hoist_rcp[E->nhoist] = (unsigned char)rcp;
        E->nhoist++;
    }
}

static void collect_expr(fa4__emitter *E, const fa4__func *f, const fa4__expr *e)
{
    if (!e || e->kind == EX_INT || e->kind == EX_FLOAT || e->kind == EX_BOOL || e->kind == EX_VAR)
        return;
    if (uniform_expr(f, e) && reads_something(e)) {
        add_hoist(E, e, 0);
        return;
    }
    if (e->kind == EX_BINARY && e->type == TY_FLOAT && e->op == TK_SLASH &&
        uniform_expr(f, e->b) && reads_something(e->b)) {
        add_hoist(E, e->b, 1);
        collect_expr(E, f, e->a);
        return;
    }
    collect_expr(E, f, e->a);
    collect_expr(E, f, e->b);
    collect_expr(E, f, e->c);
    for (int i = 0; i < e->nargs; i++)
        collect_expr(E, f, e->args[i]);
}

static void collect_stmt(fa4__emitter *E, const fa4__func *f, const fa4__stmt *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->nitems; i++)
        collect_stmt(E, f, s->items[i]);
    if (s->kind == ST_DECL || s->kind == ST_ASSIGN) {
        if (!s->var->reads)
            return; /* dropped by the emitter */
    }
    collect_expr(E, f, s->e);
    collect_stmt(E, f, s->then_s);
    collect_stmt(E, f, s->else_s);
}

void fa4__collect_uniform(fa4__emitter *E, const fa4__func *f)
{
    E->nhoist = 0;
    if (f && f->role == FR_SCORE)
        collect_stmt(E, f, f->body);
}

int fa4__hoisted(const fa4__emitter *E, const fa4__expr *e, int rcp)
{
    for (int k = 0; k < E->nhoist; k++)
        if (E->hoist[k] == e && E->hoist_rcp[k] == rcp)
            return k;
    return -1;
}
