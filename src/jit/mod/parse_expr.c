/*
 * parse_expr.c - expressions of the mod language by recursive descent with C's precedence
 * (precedence climbing, iterative on each level so long chains cost no stack). It rejects what
 * mods may not use inside expressions (address-of, dereference, ++, member access, pointer casts,
 * casts to other types) and records each node's height, bounded so later passes cannot overflow.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "parse_internal.h"

#define MAX_EXPR_HEIGHT (4 * FA4__MOD_MAX_DEPTH)

/* -------------------------------------------------------------------------------- expressions */
static fa4__expr *new_expr(parser *P, int kind, const fa4__tok *t)
{
    fa4__expr *e = fa4__arena_alloc(&P->m->arena, sizeof *e);
    if (!e) {
        if (P->st == FA4_OK)
            P->st = fa4__diag_plain(P->d, FA4_ERR_OUT_OF_MEMORY, "out of memory while parsing");
        return NULL;
    }
    e->kind = kind;
    e->line = t->line;
    e->col = t->col;
    e->len = t->len ? (int)t->len : 1;
    e->depth = 1;
    return e;
}

static int height(const fa4__expr *e)
{
    return e ? e->depth : 0;
}

static fa4__expr *finish_height(parser *P, fa4__expr *e, const fa4__tok *t)
{
    int h = height(e->a);
    if (height(e->b) > h)
        h = height(e->b);
    if (height(e->c) > h)
        h = height(e->c);
    for (int i = 0; i < e->nargs; i++)
        if (height(e->args[i]) > h)
            h = height(e->args[i]);
    e->depth = h + 1;
    if (e->depth > MAX_EXPR_HEIGHT)
        return fa4__parse_fail(
            P, FA4_ERR_MOD_LIMIT, t,
            "expression is too deeply nested (more than %d operators chained); split it "
            "with local variables",
            MAX_EXPR_HEIGHT);
    return e;
}

static fa4__expr *parse_unary(parser *P);

static fa4__expr *parse_call_args(parser *P, fa4__expr *e)
{
    fa4__expr *tmp[64];
    int n = 0;
    next(P); /* ( */
    if (cur(P)->kind != TK_RPAREN) {
        for (;;) {
            if (n == 64)
                return fa4__parse_fail(P, FA4_ERR_MOD_LIMIT, cur(P),
                                       "more than 64 arguments in one call");
            fa4__expr *a = fa4__parse_expr(P);
            if (!a)
                return NULL;
            tmp[n++] = a;
            if (cur(P)->kind == TK_COMMA) {
                next(P);
                continue;
            }
            break;
        }
    }
    if (!fa4__parse_expect(P, TK_RPAREN, "')' after the arguments"))
        return NULL;
    e->nargs = n;
    if (n) {
        e->args = fa4__arena_alloc(&P->m->arena, (size_t)n * sizeof *e->args);
        if (!e->args)
            return fa4__parse_fail(P, FA4_ERR_OUT_OF_MEMORY, cur(P), "out of memory while parsing");
        memcpy(e->args, tmp, (size_t)n * sizeof *tmp);
    }
    return e;
}

static fa4__expr *parse_primary(parser *P)
{
    const fa4__tok *t = cur(P);
    char b[64];
    switch (t->kind) {
    case TK_INT: {
        fa4__expr *e = new_expr(P, EX_INT, t);
        if (e)
            e->ival = t->ival;
        next(P);
        return e;
    }
    case TK_FLOAT: {
        fa4__expr *e = new_expr(P, EX_FLOAT, t);
        if (e)
            e->fval = t->fval;
        next(P);
        return e;
    }
    case TK_LPAREN: {
        if (!fa4__parse_enter(P, t))
            return NULL;
        next(P);
        fa4__expr *e = fa4__parse_expr(P);
        leave(P);
        if (!e || !fa4__parse_expect(P, TK_RPAREN, "')'"))
            return NULL;
        return e;
    }
    case TK_IDENT: break;
    case TK_EOF:
        return fa4__parse_fail(P, FA4_ERR_MOD_SYNTAX, t,
                               "expected an expression before end of input");
    default:
        return fa4__parse_fail(P, FA4_ERR_MOD_SYNTAX, t, "expected an expression before %s",
                               fa4__parse_describe(P, t, b, sizeof b));
    }
    int kw = kw_of(P, t);
    if (kw == KW_TRUE || kw == KW_FALSE) {
        fa4__expr *e = new_expr(P, EX_BOOL, t);
        if (e)
            e->ival = kw == KW_TRUE;
        next(P);
        return e;
    }
    if (kw == KW_FLOAT || kw == KW_INT || kw == KW_BOOL) {
        char w[8];
        tok_text(P, t, w, sizeof w);
        return fa4__parse_fail(P, FA4_ERR_MOD_SYNTAX, t,
                               "unexpected '%s' in an expression; casts are "
                               "written '(%s)x'",
                               w, w);
    }
    if (kw != KW_NONE)
        return fa4__parse_fail(P, FA4_ERR_MOD_SYNTAX, t, "expected an expression before %s",
                               fa4__parse_describe(P, t, b, sizeof b));
    const char *rw = fa4__parse_rejected_word(P, t);
    if (rw)
        return fa4__parse_fail(P, FA4_ERR_MOD_SYNTAX, t, "%s", rw);
    if (is_word(P, t, "this") || is_word(P, t, "new") || is_word(P, t, "delete") ||
        is_word(P, t, "nullptr") || is_word(P, t, "NULL"))
        return fa4__parse_fail(P, FA4_ERR_MOD_CHECK, t, "%s is not part of the mod language",
                               fa4__parse_describe(P, t, b, sizeof b));
    fa4__expr *e = new_expr(P, EX_VAR, t);
    if (!e)
        return NULL;
    e->name_off = t->off;
    e->name_len = t->len;
    next(P);
    if (cur(P)->kind == TK_LPAREN) {
        e->kind = EX_CALL;
        if (!fa4__parse_enter(P, cur(P)))
            return NULL;
        fa4__expr *r = parse_call_args(P, e);
        leave(P);
        return r ? finish_height(P, e, t) : NULL;
    }
    if (cur(P)->kind == TK_LBRACKET) {
        if (!fa4__parse_enter(P, cur(P)))
            return NULL;
        next(P);
        e->kind = EX_INDEX;
        e->a = fa4__parse_expr(P);
        leave(P);
        if (!e->a || !fa4__parse_expect(P, TK_RBRACKET, "']'"))
            return NULL;
        if (cur(P)->kind == TK_LBRACKET)
            return fa4__parse_fail(
                P, FA4_ERR_MOD_CHECK, cur(P),
                "aux tensors are one-dimensional: index them once, e.g. 'x[i * n + j]'");
        return finish_height(P, e, t);
    }
    return e;
}

static fa4__expr *parse_postfix(parser *P)
{
    fa4__expr *e = parse_primary(P);
    if (!e)
        return NULL;
    const fa4__tok *t = cur(P);
    switch (t->kind) {
    case TK_INC:
    case TK_DEC:
        return fa4__parse_fail(P, FA4_ERR_MOD_SYNTAX, t,
                               "'%s' is not supported; write 'x %s 1' as a statement",
                               t->kind == TK_INC ? "++" : "--", t->kind == TK_INC ? "+=" : "-=");
    case TK_DOT:
    case TK_ARROW:
        return fa4__parse_fail(P, FA4_ERR_MOD_CHECK, t,
                               "member access ('%s') is not supported in mods",
                               t->kind == TK_DOT ? "." : "->");
    case TK_LPAREN:
        return fa4__parse_fail(P, FA4_ERR_MOD_CHECK, t, "only named functions can be called");
    case TK_LBRACKET:
        return fa4__parse_fail(P, FA4_ERR_MOD_CHECK, t,
                               "only aux tensors can be indexed, e.g. 'bias[i]'");
    default: return e;
    }
}

static fa4__expr *parse_unary(parser *P)
{
    const fa4__tok *t = cur(P);
    switch (t->kind) {
    case TK_MINUS:
    case TK_PLUS:
    case TK_BANG:
    case TK_TILDE: {
        if (!fa4__parse_enter(P, t))
            return NULL;
        next(P);
        fa4__expr *e = new_expr(P, EX_UNARY, t);
        if (e) {
            e->op = t->kind;
            e->a = parse_unary(P);
        }
        leave(P);
        return e && e->a ? finish_height(P, e, t) : NULL;
    }
    case TK_AMP:
        return fa4__parse_fail(P, FA4_ERR_MOD_CHECK, t, "address-of ('&') is not allowed in mods");
    case TK_STAR:
        return fa4__parse_fail(
            P, FA4_ERR_MOD_CHECK, t,
            "pointer dereference is not allowed; read aux tensors as 'name[index]'");
    case TK_INC:
    case TK_DEC:
        return fa4__parse_fail(P, FA4_ERR_MOD_SYNTAX, t,
                               "'%s' is not supported; write 'x %s 1' as a statement",
                               t->kind == TK_INC ? "++" : "--", t->kind == TK_INC ? "+=" : "-=");
    case TK_LPAREN: {
        const fa4__tok *tt = ahead(P, 1);
        int kw = kw_of(P, tt);
        int is_cast_kw = kw == KW_FLOAT || kw == KW_INT || kw == KW_BOOL;
        if ((is_cast_kw || fa4__parse_unsupported_type(P, tt) ||
             (fa4__parse_type_word(P, tt) >= 0)) &&
            ahead(P, 2)->kind == TK_RPAREN) {
            char w[40];
            tok_text(P, tt, w, sizeof w);
            if (!is_cast_kw)
                return fa4__parse_fail(
                    P, FA4_ERR_MOD_CHECK, tt,
                    "cast to '%s' is not supported; casts are to float, int or bool", w);
            if (!fa4__parse_enter(P, t))
                return NULL;
            next(P);
            next(P);
            next(P);
            fa4__expr *e = new_expr(P, EX_CAST, tt);
            if (e) {
                e->type = kw == KW_FLOAT ? TY_FLOAT : kw == KW_INT ? TY_INT : TY_BOOL;
                e->a = parse_unary(P);
            }
            leave(P);
            return e && e->a ? finish_height(P, e, tt) : NULL;
        }
        if ((is_cast_kw || fa4__parse_type_word(P, tt) >= 0) && ahead(P, 2)->kind == TK_STAR)
            return fa4__parse_fail(P, FA4_ERR_MOD_CHECK, tt,
                                   "pointer casts are not allowed in mods");
        return parse_postfix(P);
    }
    default: return parse_postfix(P);
    }
}

/* Binary precedence, C's: higher binds tighter. 0 = not a binary operator. */
static int precedence(int kind)
{
    switch (kind) {
    case TK_OROR: return 1;
    case TK_ANDAND: return 2;
    case TK_PIPE: return 3;
    case TK_CARET: return 4;
    case TK_AMP: return 5;
    case TK_EQEQ:
    case TK_NE: return 6;
    case TK_LT:
    case TK_LE:
    case TK_GT:
    case TK_GE: return 7;
    case TK_SHL:
    case TK_SHR: return 8;
    case TK_PLUS:
    case TK_MINUS: return 9;
    case TK_STAR:
    case TK_SLASH:
    case TK_PERCENT: return 10;
    default: return 0;
    }
}

/* Precedence climbing; iterative on one level so long chains use no stack. */
static fa4__expr *parse_binary(parser *P, int minprec)
{
    fa4__expr *lhs = parse_unary(P);
    while (lhs) {
        const fa4__tok *t = cur(P);
        int prec = precedence(t->kind);
        if (!prec || prec < minprec)
            break;
        next(P);
        fa4__expr *rhs = parse_binary(P, prec + 1);
        if (!rhs)
            return NULL;
        fa4__expr *e = new_expr(P, EX_BINARY, t);
        if (!e)
            return NULL;
        e->op = t->kind;
        e->a = lhs;
        e->b = rhs;
        lhs = finish_height(P, e, t);
    }
    return lhs;
}

static fa4__expr *parse_cond(parser *P)
{
    fa4__expr *c = parse_binary(P, 1);
    if (!c || cur(P)->kind != TK_QUESTION)
        return c;
    const fa4__tok *t = cur(P);
    if (!fa4__parse_enter(P, t))
        return NULL;
    next(P);
    fa4__expr *e = new_expr(P, EX_COND, t);
    if (e) {
        e->a = c;
        e->b = fa4__parse_expr(P);
        if (e->b && fa4__parse_expect(P, TK_COLON, "':' in the conditional expression"))
            e->c = parse_cond(P);
    }
    leave(P);
    return e && e->b && e->c ? finish_height(P, e, t) : NULL;
}

/* Every construct that nests calls fa4__parse_enter() before getting here: no depth here. */
fa4__expr *fa4__parse_expr(parser *P)
{
    return parse_cond(P);
}
