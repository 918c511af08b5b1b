/*
 * check_mod.c - the checker's view of a whole source: score_mod and mask_mod have their fixed
 * parameters and return types, their aux parameters form one list matched by name and type (in
 * declaration order, as the kernel's fa4_aux struct lays them out), helpers take scalars only, and
 * the call graph has no cycle, bounded depth and bounded size once inlined. Entry: fa4__mod_check.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_internal.h"

#define EERR(C, e, ...)                                                                            \
    fa4__check_err(C, FA4_ERR_MOD_CHECK, (e)->line, (e)->col, (e)->len, __VA_ARGS__)

/* ------------------------------------------------------------------------------- signatures */
static const char *const score_fixed[] = {"score", "b", "h", "q_idx", "kv_idx"};
static const char *const score_meaning[] = {"the scaled score", "the batch index", "the query head",
                                            "the query position", "the key position"};

static fa4_status check_fixed_params(checker *C, fa4__func *f)
{
    int nfixed = f->role == FR_SCORE ? 5 : 4;
    const char *const *names = f->role == FR_SCORE ? score_fixed : score_fixed + 1;
    const char *const *meaning = f->role == FR_SCORE ? score_meaning : score_meaning + 1;
    int want_ret = f->role == FR_SCORE ? TY_FLOAT : TY_BOOL;
    if (f->ret != want_ret)
        return fa4__check_err(C, FA4_ERR_MOD_CHECK, f->line, f->col, f->len,
                              "%s must return %s, not '%s'", f->name, fa4__type_name(want_ret),
                              fa4__type_name(f->ret));
    for (int i = 0; i < nfixed; i++) {
        int want = f->role == FR_SCORE && i == 0 ? TY_FLOAT : TY_INT;
        if (i >= f->nparams)
            return fa4__check_err(
                C, FA4_ERR_MOD_CHECK, f->line, f->col, f->len,
                "%s must start with the parameters (%s); parameter %d ('%s %s', %s) is "
                "missing",
                f->name,
                f->role == FR_SCORE ? "float score, int b, int h, int q_idx, int kv_idx"
                                    : "int b, int h, int q_idx, int kv_idx",
                i + 1, fa4__type_name(want), names[i], meaning[i]);
        fa4__var *v = f->params[i];
        if (v->type != want)
            return fa4__check_err(C, FA4_ERR_MOD_CHECK, v->type_line, v->type_col, v->type_len,
                                  "parameter %d of %s must be '%s' (%s), not '%s'", i + 1, f->name,
                                  fa4__type_name(want), meaning[i],
                                  v->pointer ? "a pointer" : fa4__type_name(v->type));
        v->is_const = v->has_const_kw;
    }
    return FA4_OK;
}

static int same_aux_type(const fa4__aux_decl *a, const fa4__var *v)
{
    if (a->is_tensor != (v->type == TY_TENSOR))
        return 0;
    if (a->is_tensor)
        return a->dtype == v->dtype;
    return a->dtype == v->dtype;
}

static void aux_type_text(int is_tensor, fa4_dtype dt, char *out, size_t cap)
{
    static const char *const el[] = {"?",     "bf16",  "half",  "float", "int8",
                                     "uint8", "int16", "int32", "int64", "bool"};
    const char *e = (int)dt >= 0 && (int)dt <= 9 ? el[dt] : "?";
    if (is_tensor)
        snprintf(out, cap, "const %s *", e);
    else
        snprintf(out, cap, "%s",
                 dt == FA4_DTYPE_FP32   ? "float"
                 : dt == FA4_DTYPE_BOOL ? "bool"
                                        : "int");
}

static fa4_status check_aux_params(checker *C, fa4__func *f)
{
    fa4__mod *m = C->m;
    int nfixed = f->role == FR_SCORE ? 5 : 4;
    for (int i = nfixed; i < f->nparams; i++) {
        fa4__var *v = f->params[i];
        v->kind = VK_AUX;
        v->is_const = 1;
        if (v->type == TY_TENSOR && !v->has_const_kw)
            return fa4__check_err(
                C, FA4_ERR_MOD_CHECK, v->type_line, v->type_col, v->type_len,
                "aux tensor '%s' must be declared 'const': mods cannot write to aux "
                "tensors",
                v->name);
        if (v->type != TY_TENSOR)
            v->dtype = v->type == TY_FLOAT ? FA4_DTYPE_FP32
                       : v->type == TY_INT ? FA4_DTYPE_INT32
                                           : FA4_DTYPE_BOOL;
        int k;
        for (k = 0; k < m->naux; k++)
            if (!strcmp(m->aux[k].name, v->name))
                break;
        if (k < m->naux) {
            if (!same_aux_type(&m->aux[k], v)) {
                char t1[32], t2[32];
                aux_type_text(m->aux[k].is_tensor, m->aux[k].dtype, t1, sizeof t1);
                aux_type_text(v->type == TY_TENSOR, v->dtype, t2, sizeof t2);
                return fa4__check_err(
                    C, FA4_ERR_MOD_CHECK, v->line, v->col, v->len,
                    "aux '%s' is declared '%s' here but '%s' in the other mod; aux "
                    "parameters are matched by name and must have the same type",
                    v->name, t2, t1);
            }
        } else {
            if (m->naux == FA4__MOD_MAX_AUX)
                return fa4__check_err(C, FA4_ERR_MOD_LIMIT, v->line, v->col, v->len,
                                      "too many aux parameters: at most %d", FA4__MOD_MAX_AUX);
            fa4__aux_decl *a = &m->aux[m->naux];
            memcpy(a->name, v->name, sizeof a->name);
            a->is_tensor = v->type == TY_TENSOR;
            a->dtype = v->dtype;
            k = m->naux++;
        }
        v->aux_index = k;
        if (f->role == FR_SCORE) {
            m->aux[k].used_by_score = 1;
            m->aux_score[k] = v;
        } else {
            m->aux[k].used_by_mask = 1;
            m->aux_mask[k] = v;
        }
    }
    return FA4_OK;
}

/* The kernel's struct has `name_len` / `name_grad` members beside tensor `name`. */
static fa4_status check_aux_member_names(checker *C)
{
    fa4__mod *m = C->m;
    for (int i = 0; i < m->naux; i++) {
        if (!m->aux[i].is_tensor)
            continue;
        size_t n = strlen(m->aux[i].name);
        for (int j = 0; j < m->naux; j++) {
            const char *o = m->aux[j].name;
            if (j != i && !strncmp(o, m->aux[i].name, n) &&
                (!strcmp(o + n, "_len") || !strcmp(o + n, "_grad"))) {
                const fa4__var *v = m->aux_score[j] ? m->aux_score[j] : m->aux_mask[j];
                return fa4__check_err(
                    C, FA4_ERR_MOD_CHECK, v ? v->line : 0, v ? v->col : 0, v ? v->len : 1,
                    "aux '%s' clashes with the %s field the kernel keeps for tensor '%s'; "
                    "rename it",
                    o, !strcmp(o + n, "_len") ? "length" : "gradient", m->aux[i].name);
            }
        }
    }
    return FA4_OK;
}

static fa4_status check_function(checker *C, fa4__func *f)
{
    C->f = f;
    C->nvars = 0;
    C->scope_base = 0;
    if (f->role != FR_HELPER) {
        if (check_fixed_params(C, f) != FA4_OK || check_aux_params(C, f) != FA4_OK)
            return C->st;
    } else {
        for (int i = 0; i < f->nparams; i++) {
            fa4__var *v = f->params[i];
            if (v->type == TY_TENSOR)
                return fa4__check_err(
                    C, FA4_ERR_MOD_CHECK, v->type_line, v->type_col, v->type_len,
                    "helper parameters must be float, int or bool; read the aux tensor "
                    "in the mod and pass the value");
            v->is_const = v->has_const_kw;
        }
    }
    return fa4__check_body(C, f);
}

/* ------------------------------------------------------------------------------- call graph */
static void mark_builtins(fa4__mod *m, const fa4__expr *e)
{
    /* walk with an explicit stack: expression height is bounded, but keep this pass cheap */
    const fa4__expr *stack[4 * FA4__MOD_MAX_DEPTH + 8];
    int n = 0;
    if (e)
        stack[n++] = e;
    while (n) {
        const fa4__expr *x = stack[--n];
        if (x->kind == EX_BUILTIN)
            m->builtins_used |= 1u << x->op;
        const fa4__expr *kids[3] = {x->a, x->b, x->c};
        for (int i = 0; i < 3; i++)
            if (kids[i] && n < (int)(sizeof stack / sizeof stack[0]))
                stack[n++] = kids[i];
        for (int i = 0; i < x->nargs; i++)
            if (n < (int)(sizeof stack / sizeof stack[0]))
                stack[n++] = x->args[i];
    }
}

static void mark_builtins_stmt(fa4__mod *m, const fa4__stmt *s)
{
    if (!s)
        return;
    mark_builtins(m, s->e);
    for (int i = 0; i < s->nitems; i++)
        mark_builtins_stmt(m, s->items[i]);
    mark_builtins_stmt(m, s->then_s);
    mark_builtins_stmt(m, s->else_s);
}

static void mark_reach(fa4__mod *m, fa4__func *f, int score)
{
    if (score ? f->used_in_score : f->used_in_mask)
        return;
    if (score)
        f->used_in_score = 1;
    else
        f->used_in_mask = 1;
    if (score)
        mark_builtins_stmt(m, f->body);
    for (int i = 0; i < f->ncalls; i++)
        mark_reach(m, f->calls[i]->func, score);
}

/* Depth-first over calls: rejects recursion, orders callees first, bounds depth and size. */
static fa4_status visit(checker *C, fa4__func *f, int *order)
{
    if (f->done)
        return FA4_OK;
    f->visiting = 1;
    double size = f->own_size;
    int depth = 0, stack = 0;
    for (int i = 0; i < f->ncalls; i++) {
        fa4__expr *call = f->calls[i];
        fa4__func *g = call->func;
        C->f = f;
        if (g->visiting) {
            if (g == f)
                return EERR(C, call, "recursion is not allowed: '%s' calls itself", f->name);
            return EERR(C, call,
                        "recursion is not allowed: '%s' calls '%s', which leads back to "
                        "'%s'",
                        f->name, g->name, f->name);
        }
        if (visit(C, g, order) != FA4_OK)
            return C->st;
        size += g->inlined_size;
        if (g->stack > stack)
            stack = g->stack;
        if (f->max_nest + stack > FA4__MOD_MAX_STACK) {
            C->f = f;
            return fa4__check_err(C, FA4_ERR_MOD_LIMIT, call->line, call->col, call->len,
                                  "expressions nest more than %d levels deep along this chain of "
                                  "helper calls; use local variables or fewer helpers",
                                  FA4__MOD_MAX_STACK);
        }
        if (g->call_depth + 1 > depth)
            depth = g->call_depth + 1;
        if (depth > FA4__MOD_MAX_DEPTH) {
            C->f = f;
            return fa4__check_err(C, FA4_ERR_MOD_LIMIT, call->line, call->col, call->len,
                                  "helper calls are nested more than %d deep", FA4__MOD_MAX_DEPTH);
        }
        if (size > FA4__MOD_MAX_INLINED) {
            C->f = f;
            return fa4__check_err(
                C, FA4_ERR_MOD_LIMIT, call->line, call->col, call->len,
                "'%s' grows to more than %.0f operations once its helpers are inlined", f->name,
                FA4__MOD_MAX_INLINED);
        }
    }
    f->inlined_size = size;
    f->call_depth = depth;
    f->stack = f->max_nest + stack;
    f->visiting = 0;
    f->done = 1;
    f->order = (*order)++;
    C->m->order[f->order] = f;
    return FA4_OK;
}

fa4_status fa4__mod_check(fa4__mod *m, fa4__diag *d)
{
    checker *C = calloc(1, sizeof *C);
    if (!C)
        return fa4__diag_plain(d, FA4_ERR_OUT_OF_MEMORY, "out of memory while checking");
    C->m = m;
    C->d = d;
    fa4_status st = FA4_OK;
    /* function names: unique, not reserved; find the mods */
    for (int i = 0; i < m->nfuncs && st == FA4_OK; i++) {
        fa4__func *f = m->funcs[i];
        C->f = NULL;
        const char *why = fa4__check_reserved_reason(f->name);
        if (why) {
            st = fa4__check_err(C, FA4_ERR_MOD_CHECK, f->line, f->col, f->len,
                                "cannot name a function '%s': %s", f->name, why);
            break;
        }
        for (int j = 0; j < i; j++)
            if (!strcmp(m->funcs[j]->name, f->name)) {
                st = fa4__check_err(C, FA4_ERR_MOD_CHECK, f->line, f->col, f->len,
                                    "redefinition of '%s' (first defined at line %d)", f->name,
                                    m->funcs[j]->line);
                break;
            }
        if (f->role == FR_SCORE)
            m->score = f;
        else if (f->role == FR_MASK)
            m->mask = f;
    }
    if (st == FA4_OK && !m->score && !m->mask)
        st = fa4__diag_at(d, m, NULL, FA4_ERR_MOD_CHECK, m->nfuncs ? m->funcs[0]->line : 0,
                          m->nfuncs ? m->funcs[0]->col : 0, m->nfuncs ? m->funcs[0]->len : 0,
                          "the source defines neither 'score_mod' nor 'mask_mod'");
    for (int i = 0; i < m->nfuncs && st == FA4_OK; i++)
        st = check_function(C, m->funcs[i]);
    if (st == FA4_OK)
        st = check_aux_member_names(C);
    if (st == FA4_OK) {
        m->order =
            fa4__arena_alloc(&m->arena, (size_t)(m->nfuncs ? m->nfuncs : 1) * sizeof *m->order);
        if (!m->order)
            st = fa4__diag_plain(d, FA4_ERR_OUT_OF_MEMORY, "out of memory while checking");
    }
    int order = 0;
    for (int i = 0; i < m->nfuncs && st == FA4_OK; i++)
        st = visit(C, m->funcs[i], &order);
    if (st == FA4_OK) {
        if (m->score)
            mark_reach(m, m->score, 1);
        if (m->mask)
            mark_reach(m, m->mask, 0);
    }
    free(C);
    return st;
}
