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

/* score_mod's score, q_idx and kv_idx and mask_mod's q_idx and kv_idx vary by position; b, h and
 * the aux do not. A helper's parameters are taken as varying (its body is emitted once for every
 * call site). Locals follow their assignments and the conditions around them. */
unsigned char *fa4__varying_slots(const fa4__func *f)
{
    unsigned char vary[64];
    memset(vary, f->role == FR_HELPER ? 1 : 0, sizeof vary);
    if (f->role == FR_SCORE)
        vary[0] = vary[3] = vary[4] = 1;
    else if (f->role == FR_MASK)
        vary[2] = vary[3] = 1;
    return mark_dependent(f, vary);
}
