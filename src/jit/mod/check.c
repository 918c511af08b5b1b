/*
 * check.c - the checker's core: resolves names through scopes, types every expression (making
 * implicit int->float conversions explicit casts so no back end reasons about promotion), and
 * enforces the statement rules of MODS.md (read-only aux, const, reserved names, a return on every
 * path). check_mod.c checks the mods' signatures and the call graph and builds the aux list. After
 * both, the AST is a closed, well-typed program the emitter and the evaluator walk without checks.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_internal.h"

fa4_status fa4__check_err(checker *C, fa4_status st, int line, int col, int len, const char *fmt,
                          ...)
{
    if (C->st != FA4_OK)
        return C->st;
    char msg[420];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    C->st = fa4__diag_at(C->d, C->m, C->f ? C->f->name : NULL, st, line, col, len, "%s", msg);
    return C->st;
}

#define EERR(C, e, ...)                                                                            \
    fa4__check_err(C, FA4_ERR_MOD_CHECK, (e)->line, (e)->col, (e)->len, __VA_ARGS__)

static void name_of(const checker *C, uint32_t off, uint32_t len, char *out)
{
    size_t n = len > FA4__MOD_MAX_NAME ? FA4__MOD_MAX_NAME : len;
    memcpy(out, C->m->src + off, n);
    out[n] = '\0';
}

/* --------------------------------------------------------------------------- reserved names */
static const char *const reserved[] = {
    /* C++ and CUDA words the emitted code could trip on */
    "alignas",
    "alignof",
    "and",
    "and_eq",
    "asm",
    "auto",
    "bitand",
    "bitor",
    "break",
    "case",
    "catch",
    "char",
    "char8_t",
    "char16_t",
    "char32_t",
    "class",
    "compl",
    "concept",
    "consteval",
    "constexpr",
    "constinit",
    "const_cast",
    "continue",
    "co_await",
    "co_return",
    "co_yield",
    "decltype",
    "default",
    "delete",
    "do",
    "double",
    "dynamic_cast",
    "enum",
    "explicit",
    "export",
    "extern",
    "for",
    "friend",
    "goto",
    "inline",
    "long",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "not_eq",
    "nullptr",
    "operator",
    "or",
    "or_eq",
    "private",
    "protected",
    "public",
    "register",
    "reinterpret_cast",
    "requires",
    "short",
    "signed",
    "sizeof",
    "static",
    "static_assert",
    "static_cast",
    "struct",
    "switch",
    "template",
    "this",
    "thread_local",
    "throw",
    "try",
    "typedef",
    "typeid",
    "typename",
    "union",
    "unsigned",
    "using",
    "virtual",
    "void",
    "volatile",
    "wchar_t",
    "while",
    "xor",
    "xor_eq",
    "threadIdx",
    "blockIdx",
    "blockDim",
    "gridDim",
    "warpSize",
    "NULL",
    /* the language's own constants and type words */
    "INFINITY",
    "NAN",
    "M_PI",
    "M_E",
    "half",
    "bf16",
    "int8",
    "uint8",
    "int16",
    "int32",
    "int64",
};

const char *fa4__check_reserved_reason(const char *name)
{
    if (!strncmp(name, "fa4", 3) || !strncmp(name, "FA4", 3))
        return "names starting with 'fa4' are reserved for the generated code";
    if (name[0] == '_' && (name[1] == '_' || (name[1] >= 'A' && name[1] <= 'Z')))
        return "names starting with '__' or '_' and a capital letter are reserved";
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
        if (!strcmp(reserved[i], name))
            return "this name is reserved (a C++/CUDA word or a name of the mod language)";
    if (fa4__builtin_lookup(name, strlen(name)) != BI_NONE)
        return "this is the name of a builtin function";
    return NULL;
}

fa4__func *fa4__check_find_func(const fa4__mod *m, const char *name)
{
    for (int i = 0; i < m->nfuncs; i++)
        if (!strcmp(m->funcs[i]->name, name))
            return m->funcs[i];
    return NULL;
}

/* A name being declared (parameter or local): reserved, or a function's name? */
static fa4_status check_new_name(checker *C, const fa4__var *v)
{
    const char *why = fa4__check_reserved_reason(v->name);
    if (why)
        return fa4__check_err(C, FA4_ERR_MOD_CHECK, v->line, v->col, v->len,
                              "cannot name a variable '%s': %s", v->name, why);
    if (fa4__check_find_func(C->m, v->name))
        return fa4__check_err(C, FA4_ERR_MOD_CHECK, v->line, v->col, v->len,
                              "'%s' is already the name of a function", v->name);
    return FA4_OK;
}

/* ------------------------------------------------------------------------------------ scopes */
static fa4__var *lookup(const checker *C, const char *name)
{
    for (int i = C->nvars - 1; i >= 0; i--)
        if (!strcmp(C->vars[i]->name, name))
            return C->vars[i];
    return NULL;
}

static fa4_status declare(checker *C, fa4__var *v)
{
    fa4_status st = check_new_name(C, v);
    if (st != FA4_OK)
        return st;
    for (int i = C->scope_base; i < C->nvars; i++)
        if (!strcmp(C->vars[i]->name, v->name))
            return fa4__check_err(C, FA4_ERR_MOD_CHECK, v->line, v->col, v->len,
                                  "redefinition of '%s' (first declared at line %d)", v->name,
                                  C->vars[i]->line);
    if (C->nvars == MAX_SCOPE_VARS)
        return fa4__check_err(C, FA4_ERR_MOD_LIMIT, v->line, v->col, v->len,
                              "more than %d variables in scope", MAX_SCOPE_VARS);
    C->vars[C->nvars++] = v;
    v->slot = C->f->nslots++;
    return FA4_OK;
}

/* "did you mean" over the variables in scope and the constants */
static const char *suggest_var(const checker *C, const char *name)
{
    const char *cands[MAX_SCOPE_VARS + 4];
    int n = 0;
    for (int i = 0; i < C->nvars; i++)
        cands[n++] = C->vars[i]->name;
    cands[n++] = "INFINITY";
    cands[n++] = "NAN";
    cands[n++] = "M_PI";
    cands[n++] = "M_E";
    return fa4__closest(name, cands, n);
}

static const char *suggest_func(const checker *C, const char *name)
{
    const char *cands[2 * BI_COUNT_ + 256];
    int n = 0;
    for (int i = 1; i < BI_COUNT_; i++) {
        cands[n++] = fa4__builtin_get(i)->name;
        if (fa4__builtin_get(i)->alt)
            cands[n++] = fa4__builtin_get(i)->alt;
    }
    for (int i = 0; i < C->m->nfuncs && n < (int)(sizeof cands / sizeof cands[0]); i++)
        cands[n++] = C->m->funcs[i]->name;
    return fa4__closest(name, cands, n);
}

/* ------------------------------------------------------------------------------ expressions */
static fa4__expr *make_cast(checker *C, fa4__expr *e, int to)
{
    fa4__expr *c = fa4__arena_alloc(&C->m->arena, sizeof *c);
    if (!c) {
        if (C->st == FA4_OK)
            C->st = fa4__diag_plain(C->d, FA4_ERR_OUT_OF_MEMORY, "out of memory while checking");
        return NULL;
    }
    c->kind = EX_CAST;
    c->type = to;
    c->implicit = 1;
    c->line = e->line;
    c->col = e->col;
    c->len = e->len;
    c->depth = e->depth + 1;
    c->a = e;
    return c;
}

/* Implicit conversion for an initializer, assignment, return or argument (`what` says which). */
static fa4__expr *coerce(checker *C, fa4__expr *e, int to, const char *what)
{
    if (!e || e->type == to)
        return e;
    const char *from = fa4__type_name(e->type);
    if (e->type == TY_INT && to == TY_FLOAT)
        return make_cast(C, e, TY_FLOAT);
    if (e->type == TY_FLOAT && to == TY_INT)
        EERR(C, e,
             "implicit conversion from 'float' to 'int' in %s loses precision; write "
             "'(int)' to truncate",
             what);
    else if (to == TY_BOOL)
        EERR(C, e, "'%s' does not convert implicitly to 'bool' in %s; compare it, e.g. 'x != 0'",
             from, what);
    else
        EERR(C, e, "'%s' does not convert implicitly to '%s' in %s; write '(%s)'", from,
             fa4__type_name(to), what, fa4__type_name(to));
    return NULL;
}

/* A condition (if, !, &&, ||, ?:): bool, or int meaning "not zero". */
static fa4__expr *condition(checker *C, fa4__expr *e, const char *what)
{
    if (!e)
        return NULL;
    if (e->type == TY_BOOL)
        return e;
    if (e->type == TY_INT)
        return make_cast(C, e, TY_BOOL);
    EERR(C, e, "%s has type '%s'; a condition is bool or int (compare explicitly, e.g. 'x > 0')",
         what, fa4__type_name(e->type));
    return NULL;
}

static const char *op_text(int op)
{
    switch (op) {
    case TK_PLUS: return "+";
    case TK_MINUS: return "-";
    case TK_STAR: return "*";
    case TK_SLASH: return "/";
    case TK_PERCENT: return "%";
    case TK_SHL: return "<<";
    case TK_SHR: return ">>";
    case TK_AMP: return "&";
    case TK_PIPE: return "|";
    case TK_CARET: return "^";
    case TK_LT: return "<";
    case TK_LE: return "<=";
    case TK_GT: return ">";
    case TK_GE: return ">=";
    case TK_EQEQ: return "==";
    case TK_NE: return "!=";
    case TK_ANDAND: return "&&";
    case TK_OROR: return "||";
    case TK_BANG: return "!";
    case TK_TILDE: return "~";
    default: return "?";
    }
}

static int is_num(int ty)
{
    return ty == TY_INT || ty == TY_FLOAT;
}

static fa4__expr *check_expr(checker *C, fa4__expr *e);

/* Bring two numeric operands to one type (int, or float when either is). */
static int unify_numeric(checker *C, fa4__expr *e)
{
    if (e->a->type == e->b->type)
        return e->a->type;
    if (e->a->type == TY_INT)
        e->a = make_cast(C, e->a, TY_FLOAT);
    else
        e->b = make_cast(C, e->b, TY_FLOAT);
    return e->a && e->b ? TY_FLOAT : TY_NONE;
}

static fa4__expr *check_binary(checker *C, fa4__expr *e)
{
    int op = e->op;
    if (op == TK_ANDAND || op == TK_OROR) {
        e->a = condition(C, check_expr(C, e->a), "the left operand of the logical operator");
        if (!e->a)
            return NULL;
        e->b = condition(C, check_expr(C, e->b), "the right operand of the logical operator");
        if (!e->b)
            return NULL;
        e->type = TY_BOOL;
        return e;
    }
    e->a = check_expr(C, e->a);
    if (!e->a)
        return NULL;
    e->b = check_expr(C, e->b);
    if (!e->b)
        return NULL;
    int ta = e->a->type, tb = e->b->type;
    switch (op) {
    case TK_PLUS:
    case TK_MINUS:
    case TK_STAR:
    case TK_SLASH:
        if (!is_num(ta) || !is_num(tb)) {
            EERR(C, e, "operator '%s' does not take '%s' operands; cast with (int) or (float)",
                 op_text(op), fa4__type_name(!is_num(ta) ? ta : tb));
            return NULL;
        }
        e->type = unify_numeric(C, e);
        return e->type ? e : NULL;
    case TK_PERCENT:
        if (ta != TY_INT || tb != TY_INT) {
            EERR(C, e, "operator '%%' needs int operands%s",
                 ta == TY_FLOAT || tb == TY_FLOAT ? "; use fmodf for floats" : "");
            return NULL;
        }
        e->type = TY_INT;
        return e;
    case TK_SHL:
    case TK_SHR:
    case TK_AMP:
    case TK_PIPE:
    case TK_CARET:
        if (ta != TY_INT || tb != TY_INT) {
            EERR(C, e, "operator '%s' needs int operands, not '%s'%s", op_text(op),
                 fa4__type_name(ta != TY_INT ? ta : tb),
                 (ta == TY_BOOL || tb == TY_BOOL) && (op == TK_AMP || op == TK_PIPE)
                     ? (op == TK_AMP ? "; use '&&' on bools" : "; use '||' on bools")
                     : "");
            return NULL;
        }
        e->type = TY_INT;
        return e;
    case TK_LT:
    case TK_LE:
    case TK_GT:
    case TK_GE:
        if (!is_num(ta) || !is_num(tb)) {
            EERR(C, e, "operator '%s' compares numbers, not '%s'", op_text(op),
                 fa4__type_name(!is_num(ta) ? ta : tb));
            return NULL;
        }
        if (!unify_numeric(C, e))
            return NULL;
        e->type = TY_BOOL;
        return e;
    case TK_EQEQ:
    case TK_NE:
        if (ta == TY_BOOL && tb == TY_BOOL) {
            e->type = TY_BOOL;
            return e;
        }
        if (!is_num(ta) || !is_num(tb)) {
            EERR(C, e, "operator '%s' cannot compare '%s' with '%s'", op_text(op),
                 fa4__type_name(ta), fa4__type_name(tb));
            return NULL;
        }
        if (!unify_numeric(C, e))
            return NULL;
        e->type = TY_BOOL;
        return e;
    default: EERR(C, e, "unsupported operator"); return NULL;
    }
}

static fa4__expr *check_var(checker *C, fa4__expr *e)
{
    char name[FA4__MOD_MAX_NAME + 1];
    name_of(C, e->name_off, e->name_len, name);
    fa4__var *v = lookup(C, name);
    if (v) {
        if (v == C->initializing) {
            EERR(C, e, "'%s' is used in its own initializer", name);
            return NULL;
        }
        if (v->type == TY_TENSOR) {
            EERR(C, e, "aux tensor '%s' must be indexed, e.g. '%s[i]'", name, name);
            return NULL;
        }
        e->var = v;
        e->type = v->type;
        v->reads++;
        return e;
    }
    double k = 0;
    int is_k = 1;
    if (!strcmp(name, "INFINITY"))
        k = INFINITY;
    else if (!strcmp(name, "NAN"))
        k = NAN;
    else if (!strcmp(name, "M_PI"))
        k = (double)(float)3.14159265358979323846;
    else if (!strcmp(name, "M_E"))
        k = (double)(float)2.71828182845904523536;
    else
        is_k = 0;
    if (is_k) {
        e->kind = EX_FLOAT;
        e->fval = k;
        e->type = TY_FLOAT;
        return e;
    }
    if (fa4__check_find_func(C->m, name) || fa4__builtin_lookup(name, strlen(name)) != BI_NONE) {
        EERR(C, e, "'%s' is a function; call it as '%s(...)'", name, name);
        return NULL;
    }
    const char *hint = suggest_var(C, name);
    if (hint)
        EERR(C, e, "unknown identifier '%s'; did you mean '%s'?", name, hint);
    else
        EERR(C, e, "unknown identifier '%s'", name);
    return NULL;
}

static fa4__expr *check_index(checker *C, fa4__expr *e)
{
    char name[FA4__MOD_MAX_NAME + 1];
    name_of(C, e->name_off, e->name_len, name);
    fa4__var *v = lookup(C, name);
    if (!v) {
        const char *hint = suggest_var(C, name);
        if (hint)
            EERR(C, e, "unknown identifier '%s'; did you mean '%s'?", name, hint);
        else
            EERR(C, e, "unknown identifier '%s'", name);
        return NULL;
    }
    if (v->type != TY_TENSOR) {
        EERR(C, e, "'%s' is a %s, not an aux tensor, and cannot be indexed", name,
             fa4__type_name(v->type));
        return NULL;
    }
    e->a = check_expr(C, e->a);
    if (!e->a)
        return NULL;
    if (e->a->type != TY_INT) {
        fa4__expr *ix = e->a;
        EERR(C, ix, "an index must be int, not '%s'%s", fa4__type_name(ix->type),
             ix->type == TY_FLOAT ? "; convert with (int)" : "");
        return NULL;
    }
    e->var = v;
    e->site = C->f->nsites++;
    switch (v->dtype) {
    case FA4_DTYPE_FP32:
    case FA4_DTYPE_FP16:
    case FA4_DTYPE_BF16: e->type = TY_FLOAT; break;
    case FA4_DTYPE_BOOL: e->type = TY_BOOL; break;
    default: e->type = TY_INT; break;
    }
    return e;
}

static int add_call(checker *C, fa4__expr *e)
{
    fa4__func *f = C->f;
    if (f->ncalls == f->capcalls) {
        int ncap = f->capcalls ? f->capcalls * 2 : 8;
        fa4__expr **nv = fa4__arena_alloc(&C->m->arena, (size_t)ncap * sizeof *nv);
        if (!nv) {
            if (C->st == FA4_OK)
                C->st = fa4__diag_plain(C->d, FA4_ERR_OUT_OF_MEMORY, "out of memory");
            return 0;
        }
        if (f->ncalls)
            memcpy(nv, f->calls, (size_t)f->ncalls * sizeof *nv);
        f->calls = nv;
        f->capcalls = ncap;
    }
    f->calls[f->ncalls++] = e;
    return 1;
}

static fa4__expr *check_call(checker *C, fa4__expr *e)
{
    char name[FA4__MOD_MAX_NAME + 1];
    name_of(C, e->name_off, e->name_len, name);
    for (int i = 0; i < e->nargs; i++) {
        e->args[i] = check_expr(C, e->args[i]);
        if (!e->args[i])
            return NULL;
    }
    if (lookup(C, name)) {
        EERR(C, e, "'%s' is a variable, not a function", name);
        return NULL;
    }
    int bi = fa4__builtin_lookup(name, strlen(name));
    if (bi != BI_NONE) {
        const fa4__builtin_info *info = fa4__builtin_get(bi);
        if (e->nargs != info->arity) {
            EERR(C, e, "'%s' takes %d argument%s, %d given", name, info->arity,
                 info->arity == 1 ? "" : "s", e->nargs);
            return NULL;
        }
        int all_int = 1;
        for (int i = 0; i < e->nargs; i++) {
            if (!is_num(e->args[i]->type)) {
                fa4__expr *a = e->args[i];
                EERR(C, a, "argument %d of '%s' is '%s'; it takes numbers", i + 1, name,
                     fa4__type_name(a->type));
                return NULL;
            }
            all_int &= e->args[i]->type == TY_INT;
        }
        int ty = info->generic && all_int ? TY_INT : TY_FLOAT;
        for (int i = 0; i < e->nargs; i++) {
            e->args[i] = coerce(C, e->args[i], ty, "a builtin argument");
            if (!e->args[i])
                return NULL;
        }
        e->kind = EX_BUILTIN;
        e->op = bi;
        e->type = ty;
        return e;
    }
    fa4__func *g = fa4__check_find_func(C->m, name);
    if (!g) {
        const char *hint = suggest_func(C, name);
        if (hint)
            EERR(C, e, "unknown function '%s'; did you mean '%s'?", name, hint);
        else
            EERR(C, e, "unknown function '%s'", name);
        return NULL;
    }
    if (g->role != FR_HELPER) {
        EERR(C, e, "'%s' cannot be called; only helper functions can", name);
        return NULL;
    }
    if (e->nargs != g->nparams) {
        EERR(C, e, "'%s' takes %d argument%s, %d given", name, g->nparams,
             g->nparams == 1 ? "" : "s", e->nargs);
        return NULL;
    }
    for (int i = 0; i < e->nargs; i++) {
        e->args[i] = coerce(C, e->args[i], g->params[i]->type, "a function argument");
        if (!e->args[i])
            return NULL;
    }
    e->func = g;
    e->type = g->ret;
    return add_call(C, e) ? e : NULL;
}

static fa4__expr *check_expr(checker *C, fa4__expr *e)
{
    if (!e || C->st != FA4_OK)
        return NULL;
    C->f->own_size += 1;
    switch (e->kind) {
    case EX_INT: e->type = TY_INT; return e;
    case EX_FLOAT: e->type = TY_FLOAT; return e;
    case EX_BOOL: e->type = TY_BOOL; return e;
    case EX_VAR: return check_var(C, e);
    case EX_INDEX: return check_index(C, e);
    case EX_CALL: return check_call(C, e);
    case EX_UNARY:
        if (e->op == TK_BANG) {
            e->a = condition(C, check_expr(C, e->a), "the operand of '!'");
            if (!e->a)
                return NULL;
            e->type = TY_BOOL;
            return e;
        }
        e->a = check_expr(C, e->a);
        if (!e->a)
            return NULL;
        if (e->op == TK_TILDE ? e->a->type != TY_INT : !is_num(e->a->type)) {
            EERR(C, e, "unary '%s' does not take a '%s' operand",
                 e->op == TK_TILDE   ? "~"
                 : e->op == TK_MINUS ? "-"
                                     : "+",
                 fa4__type_name(e->a->type));
            return NULL;
        }
        e->type = e->a->type;
        return e;
    case EX_BINARY: return check_binary(C, e);
    case EX_COND: {
        e->a = condition(C, check_expr(C, e->a), "the condition of '?:'");
        if (!e->a)
            return NULL;
        e->b = check_expr(C, e->b);
        if (!e->b)
            return NULL;
        e->c = check_expr(C, e->c);
        if (!e->c)
            return NULL;
        if (e->b->type == e->c->type) {
            e->type = e->b->type;
        } else if (is_num(e->b->type) && is_num(e->c->type)) {
            e->b = coerce(C, e->b, TY_FLOAT, "'?:'");
            e->c = coerce(C, e->c, TY_FLOAT, "'?:'");
            e->type = TY_FLOAT;
        } else {
            EERR(C, e, "the branches of '?:' have different types '%s' and '%s'",
                 fa4__type_name(e->b->type), fa4__type_name(e->c->type));
            return NULL;
        }
        return e->b && e->c ? e : NULL;
    }
    case EX_CAST:
        e->a = check_expr(C, e->a);
        if (!e->a)
            return NULL;
        return e; /* any scalar converts explicitly */
    default: EERR(C, e, "unsupported expression"); return NULL;
    }
}

/* ------------------------------------------------------------------------------- statements */
static int always_returns(const fa4__stmt *s)
{
    if (!s)
        return 0;
    switch (s->kind) {
    case ST_RETURN: return 1;
    case ST_BLOCK:
        for (int i = 0; i < s->nitems; i++)
            if (always_returns(s->items[i]))
                return 1;
        return 0;
    case ST_IF: return s->else_s && always_returns(s->then_s) && always_returns(s->else_s);
    default: return 0;
    }
}

static fa4_status check_stmt(checker *C, fa4__stmt *s);

static fa4_status check_scoped(checker *C, fa4__stmt *s)
{
    int nv = C->nvars, base = C->scope_base;
    C->scope_base = C->nvars;
    C->block_depth++;
    fa4_status st = check_stmt(C, s);
    C->block_depth--;
    C->nvars = nv;
    C->scope_base = base;
    return st;
}

static int compound_binop(int op)
{
    switch (op) {
    case TK_PLUSEQ: return TK_PLUS;
    case TK_MINUSEQ: return TK_MINUS;
    case TK_STAREQ: return TK_STAR;
    case TK_SLASHEQ: return TK_SLASH;
    case TK_PERCENTEQ: return TK_PERCENT;
    case TK_AMPEQ: return TK_AMP;
    case TK_PIPEEQ: return TK_PIPE;
    case TK_CARETEQ: return TK_CARET;
    case TK_SHLEQ: return TK_SHL;
    case TK_SHREQ: return TK_SHR;
    default: return 0;
    }
}

static fa4_status check_assign(checker *C, fa4__stmt *s)
{
    char name[FA4__MOD_MAX_NAME + 1];
    name_of(C, s->name_off, s->name_len, name);
    int nlen = (int)s->name_len;
    fa4__var *v = lookup(C, name);
    if (!v) {
        const char *hint = suggest_var(C, name);
        if (hint)
            return fa4__check_err(C, FA4_ERR_MOD_CHECK, s->name_line, s->name_col, nlen,
                                  "unknown identifier '%s'; did you mean '%s'?", name, hint);
        return fa4__check_err(C, FA4_ERR_MOD_CHECK, s->name_line, s->name_col, nlen,
                              "unknown identifier '%s'", name);
    }
    if (v->type == TY_TENSOR)
        return fa4__check_err(C, FA4_ERR_MOD_CHECK, s->name_line, s->name_col, nlen,
                              "aux tensor '%s' is read-only", name);
    if (v->kind == VK_AUX)
        return fa4__check_err(C, FA4_ERR_MOD_CHECK, s->name_line, s->name_col, nlen,
                              "aux parameter '%s' is read-only", name);
    if (v->is_const)
        return fa4__check_err(C, FA4_ERR_MOD_CHECK, s->name_line, s->name_col, nlen,
                              "cannot assign to const '%s'", name);
    s->var = v;
    int bop = compound_binop(s->op);
    if (bop) {
        /* x op= y  ->  x = x op y, typed as the binary operator */
        fa4__expr *lhs = fa4__arena_alloc(&C->m->arena, sizeof *lhs);
        fa4__expr *bin = fa4__arena_alloc(&C->m->arena, sizeof *bin);
        if (!lhs || !bin)
            return fa4__diag_plain(C->d, FA4_ERR_OUT_OF_MEMORY, "out of memory");
        lhs->kind = EX_VAR;
        lhs->line = s->name_line;
        lhs->col = s->name_col;
        lhs->len = nlen;
        lhs->name_off = s->name_off;
        lhs->name_len = s->name_len;
        lhs->depth = 1;
        bin->kind = EX_BINARY;
        bin->op = bop;
        bin->line = s->line;
        bin->col = s->col;
        bin->len = s->len;
        bin->a = lhs;
        bin->b = s->e;
        bin->depth = s->e->depth + 1;
        s->e = bin;
    }
    s->e = coerce(C, check_expr(C, s->e), v->type, "the assignment");
    return s->e ? FA4_OK : C->st;
}

static fa4_status check_stmt(checker *C, fa4__stmt *s)
{
    if (C->st != FA4_OK)
        return C->st;
    /* +2: implicit casts the checker may add around the parsed expression */
    int nest = C->block_depth + (s->e ? s->e->depth + 2 : 1);
    if (nest > C->f->max_nest)
        C->f->max_nest = nest;
    switch (s->kind) {
    case ST_EMPTY: return FA4_OK;
    case ST_BLOCK: {
        /* a nested block is a scope of its own, as in C */
        int nv = C->nvars, base = C->scope_base;
        C->scope_base = C->nvars;
        C->block_depth++;
        for (int i = 0; i < s->nitems && C->st == FA4_OK; i++)
            check_stmt(C, s->items[i]);
        C->block_depth--;
        C->nvars = nv;
        C->scope_base = base;
        return C->st;
    }
    case ST_DECL: {
        fa4__var *v = s->var;
        if (declare(C, v) != FA4_OK)
            return C->st;
        if (s->e) {
            C->initializing = v;
            s->e = coerce(C, check_expr(C, s->e), v->type, "the initializer");
            C->initializing = NULL;
            if (!s->e)
                return C->st;
        }
        return FA4_OK;
    }
    case ST_ASSIGN: return check_assign(C, s);
    case ST_IF:
        s->e = condition(C, check_expr(C, s->e), "the condition of 'if'");
        if (!s->e)
            return C->st;
        if (check_scoped(C, s->then_s) != FA4_OK)
            return C->st;
        return s->else_s ? check_scoped(C, s->else_s) : FA4_OK;
    case ST_RETURN:
        if (!s->e)
            return fa4__check_err(C, FA4_ERR_MOD_CHECK, s->line, s->col, s->len,
                                  "'%s' must return a value of type '%s'", C->f->name,
                                  fa4__type_name(C->f->ret));
        s->e = coerce(C, check_expr(C, s->e), C->f->ret, "the return value");
        return s->e ? FA4_OK : C->st;
    default:
        return fa4__check_err(C, FA4_ERR_MOD_CHECK, s->line, s->col, s->len,
                              "unsupported statement");
    }
}

/* Declare f's parameters and check its body; the body's top block shares the parameters'
 * scope, as in C++. */
fa4_status fa4__check_body(checker *C, fa4__func *f)
{
    for (int i = 0; i < f->nparams; i++)
        if (declare(C, f->params[i]) != FA4_OK)
            return C->st;
    for (int i = 0; i < f->body->nitems; i++)
        if (check_stmt(C, f->body->items[i]) != FA4_OK)
            return C->st;
    if (!always_returns(f->body))
        return fa4__check_err(C, FA4_ERR_MOD_CHECK, f->end_line, f->end_col, 1,
                              "control reaches the end of '%s' without a return on some path",
                              f->name);
    return FA4_OK;
}
