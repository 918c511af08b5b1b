/*
 * eval.c - the CPU evaluator of checked mods: a tree walk in double precision with forward-mode
 * derivatives (every float value carries d/d seed, where the seed is the score or one element of an
 * aux tensor). It is the reference the fp64 attention tests and `fa4jit check --eval` use, so its
 * int semantics are the kernel's, made defined: int32 wrap-around (computed unsigned), x/0 == 0,
 * x%0 == 0, shift counts taken mod 32, float->int saturating with NaN -> 0, aux reads clamped.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mod_internal.h"

/* ln 2, spelled out: M_LN2 is not C11 */
#define LN2 0.69314718055994530942

typedef struct val {
    double v, d; /* float: value and derivative */
    int32_t i;   /* int, bool (0/1) */
} val;

typedef struct evaluator {
    const fa4__mod *m;
    const fa4_aux_value *aux;
    int seed_aux; /* aux index whose element `seed_elem` is the seed, or -1 (seed = score) */
    int64_t seed_elem;
    val *slots; /* slot stack: a function is never active twice (no recursion) */
    int top, cap;
    val ret;
} evaluator;

static val eval_expr(evaluator *E, const fa4__expr *e, val *frame);
static int exec_stmt(evaluator *E, const fa4__stmt *s, val *frame);

static val fv(double v, double d)
{
    val r = {v, d, 0};
    return r;
}

static val iv(int32_t i)
{
    val r = {0, 0, i};
    return r;
}

static int32_t wrap(uint32_t u)
{
    return u <= 0x7fffffffu ? (int32_t)u : -(int32_t)(0xffffffffu - u) - 1;
}

static int32_t f2i(double x)
{
    if (isnan(x))
        return 0;
    if (x >= 2147483647.0)
        return 2147483647;
    if (x <= -2147483648.0)
        return INT32_MIN;
    return (int32_t)x; /* truncation toward zero */
}

/* The kernel's integer operations, defined for every input. */
static int32_t int_binop(int op, int32_t a, int32_t b)
{
    uint32_t ua = (uint32_t)a, ub = (uint32_t)b;
    switch (op) {
    case TK_PLUS: return wrap(ua + ub);
    case TK_MINUS: return wrap(ua - ub);
    case TK_STAR: return wrap(ua * ub);
    case TK_SLASH:
        if (b == 0)
            return 0;
        if (b == -1)
            return wrap(0u - ua);
        return a / b;
    case TK_PERCENT:
        if (b == 0 || b == -1)
            return 0;
        return a % b;
    case TK_SHL: return wrap(ua << (ub & 31u));
    case TK_SHR: {
        uint32_t s = ub & 31u;
        return a < 0 ? wrap(~(~ua >> s)) : (int32_t)(ua >> s);
    }
    case TK_AMP: return wrap(ua & ub);
    case TK_PIPE: return wrap(ua | ub);
    case TK_CARET: return wrap(ua ^ ub);
    default: return 0;
    }
}

/* d(a*b) and d(a/b) that stay 0 where a derivative is 0 (no inf*0 = NaN from constants). */
static double dmul(double a, double da, double b, double db)
{
    return (da != 0 ? da * b : 0) + (db != 0 ? a * db : 0);
}

static double load_elem(const fa4_aux_value *a, fa4_dtype dt, int64_t i, int *is_float)
{
    const unsigned char *p = a->data;
    *is_float = 0;
    switch (dt) {
    case FA4_DTYPE_FP32: {
        float f;
        memcpy(&f, p + i * 4, 4);
        *is_float = 1;
        return f;
    }
    case FA4_DTYPE_BF16: {
        uint16_t h;
        memcpy(&h, p + i * 2, 2);
        uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, 4);
        *is_float = 1;
        return f;
    }
    case FA4_DTYPE_FP16: {
        uint16_t h;
        memcpy(&h, p + i * 2, 2);
        int e = (h >> 10) & 31, mant = h & 1023;
        double v = e == 0    ? ldexp(mant, -24)
                   : e == 31 ? (mant ? NAN : INFINITY)
                             : ldexp(mant + 1024, e - 25);
        *is_float = 1;
        return (h & 0x8000) ? -v : v;
    }
    case FA4_DTYPE_INT8: return (int8_t)p[i];
    case FA4_DTYPE_UINT8: return p[i];
    case FA4_DTYPE_INT16: {
        int16_t x;
        memcpy(&x, p + i * 2, 2);
        return x;
    }
    case FA4_DTYPE_INT32: {
        int32_t x;
        memcpy(&x, p + i * 4, 4);
        return x;
    }
    case FA4_DTYPE_INT64: {
        int64_t x;
        memcpy(&x, p + i * 8, 8);
        return wrap((uint32_t)(uint64_t)x); /* the kernel keeps the low 32 bits */
    }
    case FA4_DTYPE_BOOL: return p[i] != 0;
    default: return 0;
    }
}

static val read_aux(evaluator *E, const fa4__expr *e, int32_t idx)
{
    const fa4__var *v = e->var;
    const fa4_aux_value *a = &E->aux[v->aux_index];
    if (a->numel <= 0 || !a->data)
        return e->type == TY_FLOAT ? fv(0, 0) : iv(0);
    int64_t j = idx < 0 ? 0 : idx >= a->numel ? a->numel - 1 : idx;
    int isf;
    double x = load_elem(a, v->dtype, j, &isf);
    if (e->type == TY_FLOAT)
        return fv(x, E->seed_aux == v->aux_index && E->seed_elem == j ? 1.0 : 0.0);
    return iv((int32_t)x);
}

static val pick(int first, val a, val b)
{
    return first ? a : b;
}

static val eval_builtin(evaluator *E, const fa4__expr *e, val *frame)
{
    val x[3];
    memset(x, 0, sizeof x); /* builtins have 1 to 3 arguments; the rest reads as zero */
    for (int i = 0; i < e->nargs && i < 3; i++)
        x[i] = eval_expr(E, e->args[i], frame);
    double a = x[0].v, da = x[0].d;
    if (e->type == TY_INT) {
        int32_t p = x[0].i;
        switch (e->op) {
        case BI_ABS: return iv(p < 0 ? wrap(0u - (uint32_t)p) : p);
        case BI_MIN: return iv(p < x[1].i ? p : x[1].i);
        case BI_MAX: return iv(p > x[1].i ? p : x[1].i);
        case BI_CLAMP: {
            int32_t t = p > x[1].i ? p : x[1].i;
            return iv(t < x[2].i ? t : x[2].i);
        }
        default: return iv(0);
        }
    }
    double b = e->nargs > 1 ? x[1].v : 0, db = e->nargs > 1 ? x[1].d : 0;
    switch (e->op) {
    case BI_EXP: {
        double v = exp(a);
        return fv(v, da != 0 ? v * da : 0);
    }
    case BI_EXP2: {
        double v = exp2(a);
        return fv(v, da != 0 ? v * LN2 * da : 0);
    }
    case BI_LOG: return fv(log(a), da != 0 ? da / a : 0);
    case BI_LOG2: return fv(log2(a), da != 0 ? da / (a * LN2) : 0);
    case BI_LOG1P: return fv(log1p(a), da != 0 ? da / (1 + a) : 0);
    case BI_EXPM1: {
        double v = expm1(a);
        return fv(v, da != 0 ? (v + 1) * da : 0);
    }
    case BI_SQRT: {
        double v = sqrt(a);
        return fv(v, da != 0 ? 0.5 * da / v : 0);
    }
    case BI_RSQRT: {
        double v = 1 / sqrt(a);
        return fv(v, da != 0 ? -0.5 * v * v * v * da : 0);
    }
    case BI_TANH: {
        double v = tanh(a);
        return fv(v, da != 0 ? (1 - v * v) * da : 0);
    }
    case BI_SIN: return fv(sin(a), da != 0 ? cos(a) * da : 0);
    case BI_COS: return fv(cos(a), da != 0 ? -sin(a) * da : 0);
    case BI_FABS:
    case BI_ABS: return fv(fabs(a), signbit(a) ? -da : da);
    case BI_FMIN:
    case BI_MIN: return pick(a <= b || isnan(b), x[0], x[1]);
    case BI_FMAX:
    case BI_MAX: return pick(a >= b || isnan(b), x[0], x[1]);
    case BI_CLAMP: {
        val lo = x[1], hi = x[2];
        val t = pick(a >= lo.v || isnan(lo.v), x[0], lo);
        return pick(t.v <= hi.v || isnan(hi.v), t, hi);
    }
    case BI_FLOOR: return fv(floor(a), 0);
    case BI_CEIL: return fv(ceil(a), 0);
    case BI_ROUND: return fv(round(a), 0);
    case BI_TRUNC: return fv(trunc(a), 0);
    case BI_POW: {
        double v = pow(a, b);
        double d = (da != 0 ? b * pow(a, b - 1) * da : 0) + (db != 0 ? v * log(a) * db : 0);
        return fv(v, d);
    }
    case BI_FMOD: return fv(fmod(a, b), da - (db != 0 ? trunc(a / b) * db : 0));
    case BI_COPYSIGN: return fv(copysign(a, b), signbit(a) == signbit(b) ? da : -da);
    case BI_ERF: return fv(erf(a), da != 0 ? 1.1283791670955126 * exp(-a * a) * da : 0);
    default: return fv(0, 0);
    }
}

static val eval_binary(evaluator *E, const fa4__expr *e, val *frame)
{
    if (e->op == TK_ANDAND || e->op == TK_OROR) {
        int l = eval_expr(E, e->a, frame).i != 0;
        if (e->op == TK_ANDAND ? !l : l)
            return iv(l);
        return iv(eval_expr(E, e->b, frame).i != 0);
    }
    val x = eval_expr(E, e->a, frame), y = eval_expr(E, e->b, frame);
    int t = e->a->type; /* operand type: both operands agree after checking */
    switch (e->op) {
    case TK_LT: return iv(t == TY_FLOAT ? x.v < y.v : x.i < y.i);
    case TK_LE: return iv(t == TY_FLOAT ? x.v <= y.v : x.i <= y.i);
    case TK_GT: return iv(t == TY_FLOAT ? x.v > y.v : x.i > y.i);
    case TK_GE: return iv(t == TY_FLOAT ? x.v >= y.v : x.i >= y.i);
    case TK_EQEQ: return iv(t == TY_FLOAT ? x.v == y.v : x.i == y.i);
    case TK_NE: return iv(t == TY_FLOAT ? x.v != y.v : x.i != y.i);
    default: break;
    }
    if (e->type == TY_INT)
        return iv(int_binop(e->op, x.i, y.i));
    switch (e->op) {
    case TK_PLUS: return fv(x.v + y.v, x.d + y.d);
    case TK_MINUS: return fv(x.v - y.v, x.d - y.d);
    case TK_STAR: return fv(x.v * y.v, dmul(x.v, x.d, y.v, y.d));
    case TK_SLASH: {
        double v = x.v / y.v;
        return fv(v, (x.d != 0 ? x.d / y.v : 0) - (y.d != 0 ? v * y.d / y.v : 0));
    }
    default: return fv(0, 0);
    }
}

static val eval_cast(evaluator *E, const fa4__expr *e, val *frame)
{
    val x = eval_expr(E, e->a, frame);
    int from = e->a->type, to = e->type;
    if (from == to)
        return x;
    if (to == TY_FLOAT)
        return fv(from == TY_INT || from == TY_BOOL ? (double)x.i : x.v, 0);
    if (to == TY_INT)
        return iv(from == TY_FLOAT ? f2i(x.v) : x.i);
    return iv(from == TY_FLOAT ? x.v != 0 : x.i != 0); /* to bool */
}

static val scalar_aux(const evaluator *E, const fa4__var *v)
{
    const fa4_aux_value *a = &E->aux[v->aux_index];
    if (v->type == TY_FLOAT)
        return fv((double)(float)a->f, 0); /* the kernel receives a float */
    if (v->type == TY_INT)
        return iv((int32_t)a->i);
    return iv(a->i != 0);
}

static val call_helper(evaluator *E, const fa4__expr *e, val *frame)
{
    const fa4__func *g = e->func;
    val args[64];
    for (int i = 0; i < e->nargs; i++)
        args[i] = eval_expr(E, e->args[i], frame);
    val *nf = E->slots + E->top;
    E->top += g->nslots;
    for (int i = 0; i < g->nparams; i++)
        nf[g->params[i]->slot] = args[i];
    val r = fv(0, 0);
    if (exec_stmt(E, g->body, nf))
        r = E->ret;
    E->top -= g->nslots;
    return r;
}

static val eval_expr(evaluator *E, const fa4__expr *e, val *frame)
{
    switch (e->kind) {
    case EX_INT:
    case EX_BOOL: return iv((int32_t)e->ival);
    case EX_FLOAT: return fv(e->fval, 0);
    case EX_VAR:
        if (e->var->kind == VK_AUX)
            return scalar_aux(E, e->var);
        return frame[e->var->slot];
    case EX_INDEX: return read_aux(E, e, eval_expr(E, e->a, frame).i);
    case EX_CALL: return call_helper(E, e, frame);
    case EX_BUILTIN: return eval_builtin(E, e, frame);
    case EX_UNARY: {
        val x = eval_expr(E, e->a, frame);
        if (e->op == TK_BANG)
            return iv(x.i == 0);
        if (e->op == TK_TILDE)
            return iv(wrap(~(uint32_t)x.i));
        if (e->op == TK_PLUS)
            return x;
        return e->type == TY_INT ? iv(wrap(0u - (uint32_t)x.i)) : fv(-x.v, -x.d);
    }
    case EX_BINARY: return eval_binary(E, e, frame);
    case EX_COND:
        return eval_expr(E, e->a, frame).i ? eval_expr(E, e->b, frame) : eval_expr(E, e->c, frame);
    case EX_CAST: return eval_cast(E, e, frame);
    default: return fv(0, 0);
    }
}

/* Returns 1 when a return statement ran (value in E->ret). */
static int exec_stmt(evaluator *E, const fa4__stmt *s, val *frame)
{
    switch (s->kind) {
    case ST_BLOCK:
        for (int i = 0; i < s->nitems; i++)
            if (exec_stmt(E, s->items[i], frame))
                return 1;
        return 0;
    case ST_DECL: frame[s->var->slot] = s->e ? eval_expr(E, s->e, frame) : fv(0, 0); return 0;
    case ST_ASSIGN: frame[s->var->slot] = eval_expr(E, s->e, frame); return 0;
    case ST_IF:
        if (eval_expr(E, s->e, frame).i)
            return exec_stmt(E, s->then_s, frame);
        return s->else_s ? exec_stmt(E, s->else_s, frame) : 0;
    case ST_RETURN: E->ret = eval_expr(E, s->e, frame); return 1;
    default: return 0;
    }
}

/* ----------------------------------------------------------------------------- entry points */
static fa4_status check_aux(const fa4__mod *m, const fa4_aux_value *aux, int num_aux, fa4__diag *d)
{
    if (num_aux != m->naux)
        return fa4__diag_plain(d, FA4_ERR_AUX, "the mod declares %d aux parameter%s, %d given",
                               m->naux, m->naux == 1 ? "" : "s", num_aux);
    if (num_aux && !aux)
        return fa4__diag_plain(d, FA4_ERR_AUX, "aux values are NULL");
    for (int i = 0; i < num_aux; i++) {
        const fa4__aux_decl *a = &m->aux[i];
        const fa4_aux_value *v = &aux[i];
        if (v->name && strcmp(v->name, a->name))
            return fa4__diag_plain(d, FA4_ERR_AUX,
                                   "aux %d is '%s' in the mod, but the value is "
                                   "named '%s'",
                                   i, a->name, v->name);
        if (v->dtype != (int32_t)a->dtype)
            return fa4__diag_plain(d, FA4_ERR_AUX,
                                   "aux '%s' has dtype %d in the mod, but the "
                                   "value has dtype %d",
                                   a->name, (int)a->dtype, (int)v->dtype);
        if (a->is_tensor && (v->numel < 0 || (v->numel > 0 && !v->data)))
            return fa4__diag_plain(d, FA4_ERR_AUX,
                                   "aux tensor '%s' has no data for its %lld "
                                   "elements",
                                   a->name, (long long)v->numel);
        if (!a->is_tensor && a->dtype == FA4_DTYPE_INT32 && (v->i < INT32_MIN || v->i > INT32_MAX))
            return fa4__diag_plain(d, FA4_ERR_AUX,
                                   "aux '%s' is an int but its value %lld does "
                                   "not fit in int32",
                                   a->name, (long long)v->i);
    }
    return FA4_OK;
}

static fa4_status run(const fa4__mod *m, const fa4__func *f, val *args, int nargs,
                      const fa4_aux_value *aux, int seed_aux, int64_t seed_elem, val *out,
                      fa4__diag *d)
{
    evaluator E = {.m = m, .aux = aux, .seed_aux = seed_aux, .seed_elem = seed_elem};
    int total = 0;
    for (int i = 0; i < m->nfuncs; i++)
        total += m->funcs[i]->nslots;
    E.slots = calloc((size_t)(total ? total : 1), sizeof *E.slots);
    if (!E.slots)
        return fa4__diag_plain(d, FA4_ERR_OUT_OF_MEMORY, "out of memory while evaluating");
    E.top = f->nslots;
    for (int i = 0; i < nargs; i++)
        E.slots[f->params[i]->slot] = args[i];
    *out = fv(0, 0);
    if (exec_stmt(&E, f->body, E.slots))
        *out = E.ret;
    free(E.slots);
    return FA4_OK;
}

fa4_status fa4__mod_eval_score(const fa4__mod *m, double score, int b, int h, int q_idx, int kv_idx,
                               const fa4_aux_value *aux, int num_aux, double *value,
                               double *dvalue_dscore, fa4__diag *diag)
{
    if (!m)
        return fa4__diag_plain(diag, FA4_ERR_INVALID_ARGUMENT, "mod is NULL");
    fa4_status st = check_aux(m, aux, num_aux, diag);
    if (st != FA4_OK)
        return st;
    val r = fv(score, 1);
    if (m->score) {
        val args[5] = {fv(score, 1), iv(b), iv(h), iv(q_idx), iv(kv_idx)};
        st = run(m, m->score, args, 5, aux, -1, 0, &r, diag);
        if (st != FA4_OK)
            return st;
    }
    if (value)
        *value = r.v;
    if (dvalue_dscore)
        *dvalue_dscore = r.d;
    return FA4_OK;
}

fa4_status fa4__mod_eval_mask(const fa4__mod *m, int b, int h, int q_idx, int kv_idx,
                              const fa4_aux_value *aux, int num_aux, int *allowed, fa4__diag *diag)
{
    if (!m)
        return fa4__diag_plain(diag, FA4_ERR_INVALID_ARGUMENT, "mod is NULL");
    fa4_status st = check_aux(m, aux, num_aux, diag);
    if (st != FA4_OK)
        return st;
    val r = iv(1);
    if (m->mask) {
        val args[4] = {iv(b), iv(h), iv(q_idx), iv(kv_idx)};
        st = run(m, m->mask, args, 4, aux, -1, 0, &r, diag);
        if (st != FA4_OK)
            return st;
    }
    if (allowed)
        *allowed = r.i != 0;
    return FA4_OK;
}

fa4_status fa4__mod_eval_score_daux(const fa4__mod *m, double score, int b, int h, int q_idx,
                                    int kv_idx, const fa4_aux_value *aux, int num_aux,
                                    int aux_index, int64_t elem, double *deriv, fa4__diag *diag)
{
    if (!m)
        return fa4__diag_plain(diag, FA4_ERR_INVALID_ARGUMENT, "mod is NULL");
    fa4_status st = check_aux(m, aux, num_aux, diag);
    if (st != FA4_OK)
        return st;
    if (aux_index < 0 || aux_index >= m->naux || !m->aux[aux_index].is_tensor)
        return fa4__diag_plain(diag, FA4_ERR_INVALID_ARGUMENT,
                               "aux index %d is not an aux tensor of the mod", aux_index);
    val r = fv(score, 0);
    if (m->score) {
        val args[5] = {fv(score, 0), iv(b), iv(h), iv(q_idx), iv(kv_idx)};
        st = run(m, m->score, args, 5, aux, aux_index, elem, &r, diag);
        if (st != FA4_OK)
            return st;
    }
    if (deriv)
        *deriv = m->score ? r.d : 0;
    return FA4_OK;
}
