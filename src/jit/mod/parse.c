/*
 * parse.c - recursive-descent parser of the mod language, top half: functions, parameters and
 * statements into the AST (expressions are parse_expr.c). It rejects the C constructs mods may not
 * use at this level (loops, goto, switch, globals, asm, declarations without bodies, ++, chained
 * or expression assignments, writes through aux pointers) each with its own message, and bounds
 * nesting so that no input can exhaust the stack of this or any later pass. Names and types are
 * resolved later by the checker (check.c, check_mod.c).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "parse_internal.h"

/* -------------------------------------------------------------------------------- statements */
typedef struct stmt_list {
    fa4__stmt **v;
    int n, cap;
} stmt_list;

static int list_push(parser *P, stmt_list *l, fa4__stmt *s)
{
    if (l->n == l->cap) {
        int ncap = l->cap ? l->cap * 2 : 8;
        fa4__stmt **nv = fa4__arena_alloc(&P->m->arena, (size_t)ncap * sizeof *nv);
        if (!nv) {
            fa4__parse_fail(P, FA4_ERR_OUT_OF_MEMORY, cur(P), "out of memory while parsing");
            return 0;
        }
        if (l->n)
            memcpy(nv, l->v, (size_t)l->n * sizeof *nv);
        l->v = nv;
        l->cap = ncap;
    }
    l->v[l->n++] = s;
    return 1;
}

static fa4__stmt *new_stmt(parser *P, int kind, const fa4__tok *t)
{
    fa4__stmt *s = fa4__arena_alloc(&P->m->arena, sizeof *s);
    if (!s)
        return fa4__parse_fail(P, FA4_ERR_OUT_OF_MEMORY, t, "out of memory while parsing");
    s->kind = kind;
    s->line = t->line;
    s->col = t->col;
    s->len = t->len ? (int)t->len : 1;
    return s;
}

static fa4__stmt *parse_stmt(parser *P, stmt_list *into);

static fa4__stmt *parse_block(parser *P)
{
    const fa4__tok *t = cur(P);
    if (!fa4__parse_expect(P, TK_LBRACE, "'{'"))
        return NULL;
    if (!fa4__parse_enter(P, t))
        return NULL;
    fa4__stmt *blk = new_stmt(P, ST_BLOCK, t);
    stmt_list l = {0};
    while (blk && cur(P)->kind != TK_RBRACE) {
        if (cur(P)->kind == TK_EOF) {
            fa4__parse_fail(P, FA4_ERR_MOD_SYNTAX, t, "this '{' is never closed");
            blk = NULL;
            break;
        }
        if (!parse_stmt(P, &l))
            blk = NULL;
    }
    leave(P);
    if (!blk)
        return NULL;
    next(P); /* } */
    blk->items = l.v;
    blk->nitems = l.n;
    return blk;
}

/* `[const] type [const] name [= init] {, name [= init]} ;` -> one ST_DECL per name. */
static fa4__stmt *parse_decl(parser *P, stmt_list *into)
{
    const fa4__tok *t0 = cur(P);
    int is_const = 0;
    if (kw_of(P, cur(P)) == KW_CONST) {
        is_const = 1;
        next(P);
    }
    const fa4__tok *tt = cur(P);
    int kw = kw_of(P, tt);
    next(P);
    if (kw_of(P, cur(P)) == KW_CONST) {
        is_const = 1;
        next(P);
    }
    if (cur(P)->kind == TK_STAR)
        return fa4__parse_fail(P, FA4_ERR_MOD_CHECK, cur(P),
                               "local pointers are not allowed; mods read aux tensors by index");
    fa4__stmt *last = NULL;
    for (;;) {
        const fa4__tok *nt = cur(P);
        char b[64];
        if (nt->kind != TK_IDENT || kw_of(P, nt) != KW_NONE)
            return fa4__parse_fail(P, FA4_ERR_MOD_SYNTAX, nt, "expected a variable name before %s",
                                   fa4__parse_describe(P, nt, b, sizeof b));
        next(P);
        if (cur(P)->kind == TK_LBRACKET)
            return fa4__parse_fail(P, FA4_ERR_MOD_CHECK, cur(P),
                                   "local arrays are not allowed in mods");
        if (cur(P)->kind == TK_LPAREN)
            return fa4__parse_fail(P, FA4_ERR_MOD_CHECK, nt,
                                   "functions cannot be declared inside a function");
        fa4__stmt *s = new_stmt(P, ST_DECL, t0);
        if (!s)
            return NULL;
        fa4__var *v = fa4__arena_alloc(&P->m->arena, sizeof *v);
        if (!v)
            return fa4__parse_fail(P, FA4_ERR_OUT_OF_MEMORY, nt, "out of memory while parsing");
        size_t n = nt->len;
        memcpy(v->name, P->m->src + nt->off, n);
        v->kind = VK_LOCAL;
        v->type = kw == KW_FLOAT ? TY_FLOAT : kw == KW_INT ? TY_INT : TY_BOOL;
        v->is_const = is_const;
        v->line = nt->line;
        v->col = nt->col;
        v->len = (int)nt->len;
        v->type_line = tt->line;
        v->type_col = tt->col;
        v->type_len = (int)tt->len;
        s->var = v;
        s->name_line = nt->line;
        s->name_col = nt->col;
        if (cur(P)->kind == TK_ASSIGN) {
            next(P);
            s->e = fa4__parse_expr(P);
            if (!s->e)
                return NULL;
        } else if (is_const) {
            return fa4__parse_fail(P, FA4_ERR_MOD_CHECK, nt,
                                   "const variable '%s' needs an initializer", v->name);
        }
        if (!list_push(P, into, s))
            return NULL;
        last = s;
        if (cur(P)->kind == TK_COMMA) {
            next(P);
            continue;
        }
        break;
    }
    if (!fa4__parse_expect(P, TK_SEMI, "';' after the declaration"))
        return NULL;
    return last;
}

static int is_assign_op(int k)
{
    return k == TK_ASSIGN || k == TK_PLUSEQ || k == TK_MINUSEQ || k == TK_STAREQ ||
           k == TK_SLASHEQ || k == TK_PERCENTEQ || k == TK_AMPEQ || k == TK_PIPEEQ ||
           k == TK_CARETEQ || k == TK_SHLEQ || k == TK_SHREQ;
}

/* A statement that is not a block, if, return or declaration: must be an assignment. */
static fa4__stmt *parse_simple(parser *P)
{
    const fa4__tok *t0 = cur(P);
    fa4__expr *lhs = fa4__parse_expr(P);
    if (!lhs)
        return NULL;
    const fa4__tok *op = cur(P);
    if (!is_assign_op(op->kind)) {
        if (op->kind == TK_INC || op->kind == TK_DEC)
            return fa4__parse_fail(
                P, FA4_ERR_MOD_SYNTAX, op, "'%s' is not supported; write 'x %s 1'",
                op->kind == TK_INC ? "++" : "--", op->kind == TK_INC ? "+=" : "-=");
        if (op->kind == TK_COMMA)
            return fa4__parse_fail(P, FA4_ERR_MOD_SYNTAX, op, "the comma operator is not allowed");
        if (op->kind != TK_SEMI) {
            /* `retrun x;`, `flaot y = 1;`: a misspelt keyword or type leads the statement */
            static const char *const words[] = {"return", "if",   "else", "float",
                                                "int",    "bool", "const"};
            char w[FA4__MOD_MAX_NAME + 1];
            tok_text(P, t0, w, sizeof w);
            const char *hint = t0->kind == TK_IDENT && lhs->kind == EX_VAR
                                   ? fa4__closest(w, words, (int)(sizeof words / sizeof words[0]))
                                   : NULL;
            if (hint)
                return fa4__parse_fail(P, FA4_ERR_MOD_SYNTAX, t0,
                                       "unknown statement '%s'; did you mean '%s'?", w, hint);
            char b[64];
            return fa4__parse_fail(P, FA4_ERR_MOD_SYNTAX, op, "expected ';' before %s",
                                   fa4__parse_describe(P, op, b, sizeof b));
        }
        return fa4__parse_fail(
            P, FA4_ERR_MOD_CHECK, t0,
            "this statement does nothing: a statement is a declaration, an assignment, "
            "'if' or 'return'");
    }
    if (lhs->kind == EX_INDEX)
        return fa4__parse_fail(
            P, FA4_ERR_MOD_CHECK, op,
            "writes through aux pointers are not allowed: aux tensors are read-only");
    if (lhs->kind != EX_VAR)
        return fa4__parse_fail(P, FA4_ERR_MOD_CHECK, op,
                               "the left side of '%.*s' must be a variable", (int)op->len,
                               P->m->src + op->off);
    next(P);
    fa4__stmt *s = new_stmt(P, ST_ASSIGN, op);
    if (!s)
        return NULL;
    s->op = op->kind;
    s->name_off = lhs->name_off;
    s->name_len = lhs->name_len;
    s->name_line = lhs->line;
    s->name_col = lhs->col;
    s->e = fa4__parse_expr(P);
    if (!s->e)
        return NULL;
    if (is_assign_op(cur(P)->kind))
        return fa4__parse_fail(P, FA4_ERR_MOD_SYNTAX, cur(P),
                               "chained assignment is not allowed: an assignment is a statement");
    if (!fa4__parse_expect(P, TK_SEMI, "';' after the assignment"))
        return NULL;
    return s;
}

static int starts_decl(const parser *P)
{
    int kw = kw_of(P, cur(P));
    return kw == KW_CONST || kw == KW_FLOAT || kw == KW_INT || kw == KW_BOOL;
}

static fa4__stmt *parse_sub_stmt(parser *P, const char *what)
{
    if (starts_decl(P))
        return fa4__parse_fail(P, FA4_ERR_MOD_SYNTAX, cur(P),
                               "a declaration cannot be the body of '%s'; add braces", what);
    stmt_list l = {0};
    fa4__stmt *s = parse_stmt(P, &l);
    return s ? l.v[0] : NULL;
}

static fa4__stmt *parse_stmt(parser *P, stmt_list *into)
{
    const fa4__tok *t = cur(P);
    fa4__stmt *s = NULL;
    int kw = kw_of(P, t);
    /* only 'if' nests statements directly (blocks count themselves) */
    if (kw == KW_IF && !fa4__parse_enter(P, t))
        return NULL;
    const char *rw = t->kind == TK_IDENT ? fa4__parse_rejected_word(P, t) : NULL;
    if (t->kind == TK_LBRACE) {
        s = parse_block(P);
    } else if (t->kind == TK_SEMI) {
        s = new_stmt(P, ST_EMPTY, t);
        next(P);
    } else if (kw == KW_IF) {
        next(P);
        s = new_stmt(P, ST_IF, t);
        if (s && fa4__parse_expect(P, TK_LPAREN, "'(' after 'if'") && (s->e = fa4__parse_expr(P)) &&
            fa4__parse_expect(P, TK_RPAREN, "')' after the condition") &&
            (s->then_s = parse_sub_stmt(P, "if"))) {
            if (kw_of(P, cur(P)) == KW_ELSE) {
                next(P);
                s->else_s = parse_sub_stmt(P, "else");
                if (!s->else_s)
                    s = NULL;
            }
        } else {
            s = NULL;
        }
    } else if (kw == KW_ELSE) {
        s = fa4__parse_fail(P, FA4_ERR_MOD_SYNTAX, t, "'else' without a matching 'if'");
    } else if (kw == KW_RETURN) {
        next(P);
        s = new_stmt(P, ST_RETURN, t);
        if (s && cur(P)->kind != TK_SEMI) {
            s->e = fa4__parse_expr(P);
            if (!s->e)
                s = NULL;
        }
        if (s && !fa4__parse_expect(P, TK_SEMI, "';' after the return value"))
            s = NULL;
    } else if (starts_decl(P)) {
        return parse_decl(P, into);
    } else if (rw) {
        s = fa4__parse_fail(P, FA4_ERR_MOD_SYNTAX, t, "%s", rw);
    } else if (t->kind == TK_IDENT && fa4__parse_unsupported_type(P, t)) {
        char w[40];
        tok_text(P, t, w, sizeof w);
        s = fa4__parse_fail(P, FA4_ERR_MOD_CHECK, t,
                            "type '%s' is not supported; locals are float, int or "
                            "bool",
                            w);
    } else if (t->kind == TK_IDENT && fa4__parse_type_word(P, t) >= 0) {
        char w[40];
        tok_text(P, t, w, sizeof w);
        s = fa4__parse_fail(P, FA4_ERR_MOD_CHECK, t,
                            "'%s' is only an aux tensor element type; locals are "
                            "float, int or bool",
                            w);
    } else {
        s = parse_simple(P);
    }
    if (kw == KW_IF)
        leave(P);
    if (s && !list_push(P, into, s))
        return NULL;
    return s;
}

/* --------------------------------------------------------------------------------- functions */
static fa4__var *parse_param(parser *P)
{
    fa4__var *v = fa4__arena_alloc(&P->m->arena, sizeof *v);
    if (!v)
        return fa4__parse_fail(P, FA4_ERR_OUT_OF_MEMORY, cur(P), "out of memory while parsing");
    v->kind = VK_PARAM;
    if (kw_of(P, cur(P)) == KW_CONST) {
        v->has_const_kw = 1;
        next(P);
    }
    const fa4__tok *tt = cur(P);
    char w[64], b[64];
    tok_text(P, tt, w, sizeof w);
    int tw = tt->kind == TK_IDENT ? fa4__parse_type_word(P, tt) : -1;
    if (tw < 0) {
        if (tt->kind == TK_IDENT && fa4__parse_unsupported_type(P, tt))
            return fa4__parse_fail(
                P, FA4_ERR_MOD_CHECK, tt,
                "type '%s' is not supported; parameters are float, int, bool or "
                "'const T *' with T one of float, half, bf16, int8, uint8, int16, int32, "
                "int64, bool",
                w);
        if (tt->kind == TK_IDENT && kw_of(P, tt) == KW_NONE) {
            const char *cands[FA4__PARSE_NUM_TYPE_WORDS];
            for (size_t i = 0; i < FA4__PARSE_NUM_TYPE_WORDS; i++)
                cands[i] = fa4__parse_type_words[i].word;
            const char *hint = fa4__closest(w, cands, (int)(sizeof cands / sizeof cands[0]));
            if (hint)
                return fa4__parse_fail(P, FA4_ERR_MOD_CHECK, tt,
                                       "unknown type '%s'; did you mean '%s'?", w, hint);
            return fa4__parse_fail(P, FA4_ERR_MOD_CHECK, tt, "unknown type '%s' for a parameter",
                                   w);
        }
        return fa4__parse_fail(P, FA4_ERR_MOD_SYNTAX, tt, "expected a parameter type before %s",
                               fa4__parse_describe(P, tt, b, sizeof b));
    }
    next(P);
    v->type_line = tt->line;
    v->type_col = tt->col;
    v->type_len = (int)tt->len;
    v->dtype = fa4__parse_type_words[tw].dtype;
    v->type = fa4__parse_type_words[tw].scalar;
    if (kw_of(P, cur(P)) == KW_CONST) {
        v->has_const_kw = 1;
        next(P);
    }
    if (cur(P)->kind == TK_STAR) {
        v->pointer = 1;
        v->type = TY_TENSOR;
        next(P);
        if (cur(P)->kind == TK_STAR)
            return fa4__parse_fail(P, FA4_ERR_MOD_CHECK, cur(P),
                                   "pointers to pointers are not allowed");
        if (kw_of(P, cur(P)) == KW_CONST)
            next(P); /* `const T *const name`: the pointer itself is const too; same meaning */
        if (is_word(P, cur(P), "__restrict__") || is_word(P, cur(P), "restrict"))
            next(P);
    } else if (cur(P)->kind == TK_AMP) {
        return fa4__parse_fail(P, FA4_ERR_MOD_CHECK, cur(P),
                               "reference parameters are not allowed");
    }
    const fa4__tok *nt = cur(P);
    if (nt->kind != TK_IDENT || kw_of(P, nt) != KW_NONE)
        return fa4__parse_fail(P, FA4_ERR_MOD_SYNTAX, nt, "expected a parameter name before %s",
                               fa4__parse_describe(P, nt, b, sizeof b));
    memcpy(v->name, P->m->src + nt->off, nt->len);
    v->line = nt->line;
    v->col = nt->col;
    v->len = (int)nt->len;
    next(P);
    if (cur(P)->kind == TK_LBRACKET)
        return fa4__parse_fail(
            P, FA4_ERR_MOD_CHECK, cur(P),
            "array parameters are not allowed; declare aux tensors as 'const T *%s'", v->name);
    if (!v->type && !v->pointer)
        return fa4__parse_fail(
            P, FA4_ERR_MOD_CHECK, tt,
            "'%s' is only an aux tensor element type; write 'const %s *%s' for a tensor or "
            "use float, int or bool for a scalar",
            w, w, v->name);
    return v;
}

static fa4__func *parse_function(parser *P)
{
    const fa4__tok *t = cur(P);
    char w[64], b[64];
    tok_text(P, t, w, sizeof w);
    if (t->kind != TK_IDENT)
        return fa4__parse_fail(P, FA4_ERR_MOD_SYNTAX, t, "expected a function definition before %s",
                               fa4__parse_describe(P, t, b, sizeof b));
    const char *rw = fa4__parse_rejected_word(P, t);
    if (rw)
        return fa4__parse_fail(P, FA4_ERR_MOD_SYNTAX, t, "%s", rw);
    if (kw_of(P, t) == KW_CONST)
        next(P);
    const fa4__tok *tt = cur(P);
    tok_text(P, tt, w, sizeof w);
    int kw = kw_of(P, tt);
    if (kw != KW_FLOAT && kw != KW_INT && kw != KW_BOOL) {
        if (tt->kind == TK_IDENT &&
            (fa4__parse_unsupported_type(P, tt) || fa4__parse_type_word(P, tt) >= 0))
            return fa4__parse_fail(
                P, FA4_ERR_MOD_CHECK, tt,
                "return type '%s' is not supported; functions return float, int or bool", w);
        if (tt->kind == TK_IDENT && ahead(P, 1)->kind == TK_LPAREN)
            return fa4__parse_fail(P, FA4_ERR_MOD_SYNTAX, tt,
                                   "function '%s' needs a return type (float, int or bool)", w);
        if (tt->kind == TK_IDENT && ahead(P, 1)->kind == TK_IDENT) {
            static const char *const rets[] = {"float", "int", "bool"};
            const char *hint = fa4__closest(w, rets, 3);
            if (hint)
                return fa4__parse_fail(P, FA4_ERR_MOD_CHECK, tt,
                                       "unknown type '%s'; did you mean '%s'?", w, hint);
        }
        return fa4__parse_fail(P, FA4_ERR_MOD_SYNTAX, tt,
                               "expected a function definition before %s",
                               fa4__parse_describe(P, tt, b, sizeof b));
    }
    next(P);
    const fa4__tok *nt = cur(P);
    if (nt->kind == TK_STAR)
        return fa4__parse_fail(P, FA4_ERR_MOD_CHECK, nt, "functions cannot return pointers");
    if (nt->kind != TK_IDENT || kw_of(P, nt) != KW_NONE)
        return fa4__parse_fail(P, FA4_ERR_MOD_SYNTAX, nt, "expected a function name before %s",
                               fa4__parse_describe(P, nt, b, sizeof b));
    next(P);
    char name[FA4__MOD_MAX_NAME + 1] = {0};
    memcpy(name, P->m->src + nt->off, nt->len);
    if (cur(P)->kind != TK_LPAREN) {
        if (cur(P)->kind == TK_ASSIGN || cur(P)->kind == TK_SEMI || cur(P)->kind == TK_COMMA ||
            cur(P)->kind == TK_LBRACKET)
            return fa4__parse_fail(
                P, FA4_ERR_MOD_CHECK, nt,
                "global variables are not allowed; declare '%s' inside the function that "
                "uses it",
                name);
        return fa4__parse_fail(P, FA4_ERR_MOD_SYNTAX, cur(P), "expected '(' after '%s'", name);
    }
    fa4__func *f = fa4__arena_alloc(&P->m->arena, sizeof *f);
    if (!f)
        return fa4__parse_fail(P, FA4_ERR_OUT_OF_MEMORY, nt, "out of memory while parsing");
    memcpy(f->name, name, sizeof name);
    P->fname = f->name;
    f->ret = kw == KW_FLOAT ? TY_FLOAT : kw == KW_INT ? TY_INT : TY_BOOL;
    f->line = nt->line;
    f->col = nt->col;
    f->len = (int)nt->len;
    f->role = !strcmp(name, "score_mod")  ? FR_SCORE
              : !strcmp(name, "mask_mod") ? FR_MASK
                                          : FR_HELPER;
    next(P); /* ( */
    fa4__var *tmp[64];
    int n = 0;
    if (is_word(P, cur(P), "void") && ahead(P, 1)->kind == TK_RPAREN) {
        next(P);
    } else if (cur(P)->kind != TK_RPAREN) {
        for (;;) {
            if (n == 64)
                return fa4__parse_fail(P, FA4_ERR_MOD_LIMIT, cur(P), "more than 64 parameters");
            fa4__var *v = parse_param(P);
            if (!v)
                return NULL;
            tmp[n++] = v;
            if (cur(P)->kind == TK_COMMA) {
                next(P);
                continue;
            }
            break;
        }
    }
    if (!fa4__parse_expect(P, TK_RPAREN, "')' after the parameters"))
        return NULL;
    if (cur(P)->kind == TK_SEMI)
        return fa4__parse_fail(
            P, FA4_ERR_MOD_CHECK, cur(P),
            "function declarations without a body are not needed; define '%s' instead", name);
    f->nparams = n;
    if (n) {
        f->params = fa4__arena_alloc(&P->m->arena, (size_t)n * sizeof *f->params);
        if (!f->params)
            return fa4__parse_fail(P, FA4_ERR_OUT_OF_MEMORY, nt, "out of memory while parsing");
        memcpy(f->params, tmp, (size_t)n * sizeof *tmp);
    }
    if (cur(P)->kind != TK_LBRACE)
        return fa4__parse_fail(P, FA4_ERR_MOD_SYNTAX, cur(P),
                               "expected '{' to start the body of '%s'", name);
    int depth0 = P->depth;
    f->body = parse_block(P);
    P->depth = depth0;
    if (!f->body)
        return NULL;
    const fa4__tok *close = &P->m->toks[P->pos - 1];
    f->end_line = close->line;
    f->end_col = close->col;
    P->fname = NULL;
    return f;
}

fa4_status fa4__mod_parse_tokens(fa4__mod *m, fa4__diag *d)
{
    parser P = {.m = m, .d = d};
    fa4__func *tmp[256];
    int n = 0;
    while (cur(&P)->kind != TK_EOF) {
        if (n == 256)
            return fa4__diag_at(d, m, NULL, FA4_ERR_MOD_LIMIT, cur(&P)->line, cur(&P)->col,
                                (int)cur(&P)->len, "more than 256 functions in one mod source");
        if (cur(&P)->kind == TK_SEMI) { /* a stray ';' between functions is harmless */
            next(&P);
            continue;
        }
        fa4__func *f = parse_function(&P);
        if (!f)
            return P.st != FA4_OK ? P.st : FA4_ERR_MOD_SYNTAX;
        tmp[n++] = f;
    }
    if (P.st != FA4_OK)
        return P.st;
    m->nfuncs = n;
    if (n) {
        m->funcs = fa4__arena_alloc(&m->arena, (size_t)n * sizeof *m->funcs);
        if (!m->funcs)
            return fa4__diag_plain(d, FA4_ERR_OUT_OF_MEMORY, "out of memory while parsing");
        memcpy(m->funcs, tmp, (size_t)n * sizeof *tmp);
    }
    return FA4_OK;
}
