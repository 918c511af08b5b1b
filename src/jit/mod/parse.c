/*
 * parse.c - recursive-descent parser of the mod language: tokens to an AST of functions, statements
 * and expressions (C precedence). It rejects the C constructs mods may not use (loops, goto, switch,
 * globals, asm, address-of, dereference, ++, assignments inside expressions, ...) each with its own
 * message, and bounds nesting so that no input can exhaust the stack of this or any later pass.
 * Names and types are resolved later by the checker (check.c).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "mod_internal.h"

typedef struct parser {
    fa4__mod *m;
    fa4__diag *d;
    int pos;
    int depth;
    const char *fname; /* function being parsed, for messages */
    fa4_status st;     /* first error */
} parser;

#define MAX_EXPR_HEIGHT (4 * FA4__MOD_MAX_DEPTH)

static const fa4__tok *cur(const parser *P)
{
    return &P->m->toks[P->pos];
}

static const fa4__tok *ahead(const parser *P, int k)
{
    int i = P->pos + k;
    if (i >= P->m->ntoks)
        i = P->m->ntoks - 1;
    return &P->m->toks[i];
}

static void next(parser *P)
{
    if (cur(P)->kind != TK_EOF)
        P->pos++;
}

static void tok_text(const parser *P, const fa4__tok *t, char *buf, size_t cap)
{
    size_t n = t->len < cap - 1 ? t->len : cap - 1;
    memcpy(buf, P->m->src + t->off, n);
    buf[n] = '\0';
}

/* Record the first error at token t. Returns NULL so callers can `return fail(...)`. */
__attribute__((format(printf, 4, 5))) static void *fail(parser *P, fa4_status st,
                                                          const fa4__tok *t, const char *fmt, ...)
{
    if (P->st != FA4_OK)
        return NULL;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    P->st = fa4__diag_at(P->d, P->m, P->fname, st, t->line, t->col, t->len ? (int)t->len : 1, "%s",
                         msg);
    return NULL;
}

static int kw_of(const parser *P, const fa4__tok *t)
{
    return t->kind == TK_IDENT ? fa4__keyword(P->m->src + t->off, t->len) : KW_NONE;
}

static int is_word(const parser *P, const fa4__tok *t, const char *w)
{
    return fa4__tok_is(P->m, t, w);
}

static int enter(parser *P, const fa4__tok *t)
{
    if (++P->depth > FA4__MOD_MAX_DEPTH) {
        fail(P, FA4_ERR_MOD_LIMIT, t, "nesting is deeper than %d levels (blocks, parentheses, "
                                      "calls, unary operators)", FA4__MOD_MAX_DEPTH);
        return 0;
    }
    return 1;
}

static void leave(parser *P)
{
    P->depth--;
}

static const char *describe(const parser *P, const fa4__tok *t, char *buf, size_t cap)
{
    if (t->kind == TK_EOF)
        return "end of input";
    char text[40];
    tok_text(P, t, text, sizeof text);
    snprintf(buf, cap, "'%s'", text);
    return buf;
}

static int expect(parser *P, int kind, const char *what)
{
    if (cur(P)->kind == kind) {
        next(P);
        return 1;
    }
    char b[64];
    if (cur(P)->kind == TK_COMMA && kind == TK_SEMI)
        fail(P, FA4_ERR_MOD_SYNTAX, cur(P), "the comma operator is not allowed");
    else if (cur(P)->kind == TK_ASSIGN && kind == TK_RPAREN)
        fail(P, FA4_ERR_MOD_SYNTAX, cur(P),
             "assignment inside an expression is not allowed; did you mean '=='?");
    else
        fail(P, FA4_ERR_MOD_SYNTAX, cur(P), "expected %s before %s", what,
             describe(P, cur(P), b, sizeof b));
    return 0;
}

/* --------------------------------------------------------------------------------- type words */
static const struct {
    const char *word;
    fa4_dtype dtype;
    int scalar; /* TY_* when it is also a scalar type */
} type_words[] = {
    {"float", FA4_DTYPE_FP32, TY_FLOAT}, {"int", FA4_DTYPE_INT32, TY_INT},
    {"bool", FA4_DTYPE_BOOL, TY_BOOL},   {"half", FA4_DTYPE_FP16, 0},
    {"bf16", FA4_DTYPE_BF16, 0},         {"int8", FA4_DTYPE_INT8, 0},
    {"uint8", FA4_DTYPE_UINT8, 0},       {"int16", FA4_DTYPE_INT16, 0},
    {"int32", FA4_DTYPE_INT32, 0},       {"int64", FA4_DTYPE_INT64, 0},
};

static const char *const unsupported_types[] = {
    "double", "long", "short", "char", "unsigned", "signed", "void", "auto", "size_t",
    "int8_t", "uint8_t", "int16_t", "int32_t", "int64_t", "uint32_t", "uint64_t", "__half",
    "__nv_bfloat16", "float16", "bfloat16", "uint16", "uint32", "uint64", "float32", "float64",
};

static int type_word(const parser *P, const fa4__tok *t)
{
    for (int i = 0; i < (int)(sizeof type_words / sizeof type_words[0]); i++)
        if (is_word(P, t, type_words[i].word))
            return i;
    return -1;
}

static int unsupported_type(const parser *P, const fa4__tok *t)
{
    for (size_t i = 0; i < sizeof unsupported_types / sizeof unsupported_types[0]; i++)
        if (is_word(P, t, unsupported_types[i]))
            return 1;
    return 0;
}

/* Statement-level keywords of C that mods reject, with the reason. */
static const struct {
    const char *word;
    const char *msg;
} rejected_words[] = {
    {"for", "loops are not allowed in mods ('for'); a mod computes one score"},
    {"while", "loops are not allowed in mods ('while'); a mod computes one score"},
    {"do", "loops are not allowed in mods ('do'); a mod computes one score"},
    {"goto", "'goto' is not allowed in mods"},
    {"switch", "'switch' is not allowed in mods; use if/else"},
    {"case", "'case' is not allowed in mods ('switch' is not supported); use if/else"},
    {"default", "'default' is not allowed in mods ('switch' is not supported); use if/else"},
    {"break", "'break' is not allowed in mods (there are no loops or switches)"},
    {"continue", "'continue' is not allowed in mods (there are no loops)"},
    {"asm", "inline assembly ('asm') is not allowed in mods"},
    {"__asm__", "inline assembly ('__asm__') is not allowed in mods"},
    {"__asm", "inline assembly ('__asm') is not allowed in mods"},
    {"static", "'static' is not allowed in mods: there is no global state"},
    {"extern", "'extern' is not allowed in mods: mods cannot reach outside their function"},
    {"struct", "'struct' is not supported in mods"},
    {"union", "'union' is not supported in mods"},
    {"enum", "'enum' is not supported in mods"},
    {"typedef", "'typedef' is not supported in mods"},
    {"sizeof", "'sizeof' is not supported in mods"},
    {"volatile", "'volatile' is not allowed in mods"},
    {"inline", "'inline' is not needed: helpers are always inlined"},
    {"__device__", "'__device__' is not needed: mods are device code already"},
    {"__global__", "'__global__' is not allowed in mods"},
    {"__forceinline__", "'__forceinline__' is not needed: helpers are always inlined"},
    {"template", "templates are not supported in mods"},
};

static const char *rejected_word(const parser *P, const fa4__tok *t)
{
    for (size_t i = 0; i < sizeof rejected_words / sizeof rejected_words[0]; i++)
        if (is_word(P, t, rejected_words[i].word))
            return rejected_words[i].msg;
    return NULL;
}

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
        return fail(P, FA4_ERR_MOD_LIMIT, t,
                    "expression is too deeply nested (more than %d operators chained); split it "
                    "with local variables", MAX_EXPR_HEIGHT);
    return e;
}

static fa4__expr *parse_expr(parser *P);
static fa4__expr *parse_unary(parser *P);

static fa4__expr *parse_call_args(parser *P, fa4__expr *e)
{
    fa4__expr *tmp[64];
    int n = 0;
    next(P); /* ( */
    if (cur(P)->kind != TK_RPAREN) {
        for (;;) {
            if (n == 64)
                return fail(P, FA4_ERR_MOD_LIMIT, cur(P), "more than 64 arguments in one call");
            fa4__expr *a = parse_expr(P);
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
    if (!expect(P, TK_RPAREN, "')' after the arguments"))
        return NULL;
    e->nargs = n;
    if (n) {
        e->args = fa4__arena_alloc(&P->m->arena, (size_t)n * sizeof *e->args);
        if (!e->args)
            return fail(P, FA4_ERR_OUT_OF_MEMORY, cur(P), "out of memory while parsing");
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
        if (!enter(P, t))
            return NULL;
        next(P);
        fa4__expr *e = parse_expr(P);
        leave(P);
        if (!e || !expect(P, TK_RPAREN, "')'"))
            return NULL;
        return e;
    }
    case TK_IDENT:
        break;
    case TK_EOF:
        return fail(P, FA4_ERR_MOD_SYNTAX, t, "expected an expression before end of input");
    default:
        return fail(P, FA4_ERR_MOD_SYNTAX, t, "expected an expression before %s",
                    describe(P, t, b, sizeof b));
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
        return fail(P, FA4_ERR_MOD_SYNTAX, t, "unexpected '%s' in an expression; casts are "
                                              "written '(%s)x'", w, w);
    }
    if (kw != KW_NONE)
        return fail(P, FA4_ERR_MOD_SYNTAX, t, "expected an expression before %s",
                    describe(P, t, b, sizeof b));
    const char *rw = rejected_word(P, t);
    if (rw)
        return fail(P, FA4_ERR_MOD_SYNTAX, t, "%s", rw);
    if (is_word(P, t, "this") || is_word(P, t, "new") || is_word(P, t, "delete") ||
        is_word(P, t, "nullptr") || is_word(P, t, "NULL"))
        return fail(P, FA4_ERR_MOD_CHECK, t, "%s is not part of the mod language",
                    describe(P, t, b, sizeof b));
    fa4__expr *e = new_expr(P, EX_VAR, t);
    if (!e)
        return NULL;
    e->name_off = t->off;
    e->name_len = t->len;
    next(P);
    if (cur(P)->kind == TK_LPAREN) {
        e->kind = EX_CALL;
        if (!enter(P, cur(P)))
            return NULL;
        fa4__expr *r = parse_call_args(P, e);
        leave(P);
        return r ? finish_height(P, e, t) : NULL;
    }
    if (cur(P)->kind == TK_LBRACKET) {
        if (!enter(P, cur(P)))
            return NULL;
        next(P);
        e->kind = EX_INDEX;
        e->a = parse_expr(P);
        leave(P);
        if (!e->a || !expect(P, TK_RBRACKET, "']'"))
            return NULL;
        if (cur(P)->kind == TK_LBRACKET)
            return fail(P, FA4_ERR_MOD_CHECK, cur(P),
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
        return fail(P, FA4_ERR_MOD_SYNTAX, t, "'%s' is not supported; write 'x %s 1' as a statement",
                    t->kind == TK_INC ? "++" : "--", t->kind == TK_INC ? "+=" : "-=");
    case TK_DOT:
    case TK_ARROW:
        return fail(P, FA4_ERR_MOD_CHECK, t, "member access ('%s') is not supported in mods",
                    t->kind == TK_DOT ? "." : "->");
    case TK_LPAREN:
        return fail(P, FA4_ERR_MOD_CHECK, t, "only named functions can be called");
    case TK_LBRACKET:
        return fail(P, FA4_ERR_MOD_CHECK, t, "only aux tensors can be indexed, e.g. 'bias[i]'");
    default:
        return e;
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
        if (!enter(P, t))
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
        return fail(P, FA4_ERR_MOD_CHECK, t, "address-of ('&') is not allowed in mods");
    case TK_STAR:
        return fail(P, FA4_ERR_MOD_CHECK, t,
                    "pointer dereference is not allowed; read aux tensors as 'name[index]'");
    case TK_INC:
    case TK_DEC:
        return fail(P, FA4_ERR_MOD_SYNTAX, t, "'%s' is not supported; write 'x %s 1' as a statement",
                    t->kind == TK_INC ? "++" : "--", t->kind == TK_INC ? "+=" : "-=");
    case TK_LPAREN: {
        const fa4__tok *tt = ahead(P, 1);
        int kw = kw_of(P, tt);
        int is_cast_kw = kw == KW_FLOAT || kw == KW_INT || kw == KW_BOOL;
        if ((is_cast_kw || unsupported_type(P, tt) || (type_word(P, tt) >= 0)) &&
            ahead(P, 2)->kind == TK_RPAREN) {
            char w[40];
            tok_text(P, tt, w, sizeof w);
            if (!is_cast_kw)
                return fail(P, FA4_ERR_MOD_CHECK, tt,
                            "cast to '%s' is not supported; casts are to float, int or bool", w);
            if (!enter(P, t))
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
        if ((is_cast_kw || type_word(P, tt) >= 0) && ahead(P, 2)->kind == TK_STAR)
            return fail(P, FA4_ERR_MOD_CHECK, tt, "pointer casts are not allowed in mods");
        return parse_postfix(P);
    }
    default:
        return parse_postfix(P);
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
    case TK_EQEQ: case TK_NE: return 6;
    case TK_LT: case TK_LE: case TK_GT: case TK_GE: return 7;
    case TK_SHL: case TK_SHR: return 8;
    case TK_PLUS: case TK_MINUS: return 9;
    case TK_STAR: case TK_SLASH: case TK_PERCENT: return 10;
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
    if (!enter(P, t))
        return NULL;
    next(P);
    fa4__expr *e = new_expr(P, EX_COND, t);
    if (e) {
        e->a = c;
        e->b = parse_expr(P);
        if (e->b && expect(P, TK_COLON, "':' in the conditional expression"))
            e->c = parse_cond(P);
    }
    leave(P);
    return e && e->b && e->c ? finish_height(P, e, t) : NULL;
}

/* Every construct that nests calls enter() before getting here, so this costs no depth. */
static fa4__expr *parse_expr(parser *P)
{
    return parse_cond(P);
}

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
            fail(P, FA4_ERR_OUT_OF_MEMORY, cur(P), "out of memory while parsing");
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
        return fail(P, FA4_ERR_OUT_OF_MEMORY, t, "out of memory while parsing");
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
    if (!expect(P, TK_LBRACE, "'{'"))
        return NULL;
    if (!enter(P, t))
        return NULL;
    fa4__stmt *blk = new_stmt(P, ST_BLOCK, t);
    stmt_list l = {0};
    while (blk && cur(P)->kind != TK_RBRACE) {
        if (cur(P)->kind == TK_EOF) {
            fail(P, FA4_ERR_MOD_SYNTAX, t, "this '{' is never closed");
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
        return fail(P, FA4_ERR_MOD_CHECK, cur(P),
                    "local pointers are not allowed; mods read aux tensors by index");
    fa4__stmt *last = NULL;
    for (;;) {
        const fa4__tok *nt = cur(P);
        char b[64];
        if (nt->kind != TK_IDENT || kw_of(P, nt) != KW_NONE)
            return fail(P, FA4_ERR_MOD_SYNTAX, nt, "expected a variable name before %s",
                        describe(P, nt, b, sizeof b));
        next(P);
        if (cur(P)->kind == TK_LBRACKET)
            return fail(P, FA4_ERR_MOD_CHECK, cur(P), "local arrays are not allowed in mods");
        if (cur(P)->kind == TK_LPAREN)
            return fail(P, FA4_ERR_MOD_CHECK, nt,
                        "functions cannot be declared inside a function");
        fa4__stmt *s = new_stmt(P, ST_DECL, t0);
        if (!s)
            return NULL;
        fa4__var *v = fa4__arena_alloc(&P->m->arena, sizeof *v);
        if (!v)
            return fail(P, FA4_ERR_OUT_OF_MEMORY, nt, "out of memory while parsing");
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
            s->e = parse_expr(P);
            if (!s->e)
                return NULL;
        } else if (is_const) {
            return fail(P, FA4_ERR_MOD_CHECK, nt, "const variable '%s' needs an initializer",
                        v->name);
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
    if (!expect(P, TK_SEMI, "';' after the declaration"))
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
    fa4__expr *lhs = parse_expr(P);
    if (!lhs)
        return NULL;
    const fa4__tok *op = cur(P);
    if (!is_assign_op(op->kind)) {
        if (op->kind == TK_INC || op->kind == TK_DEC)
            return fail(P, FA4_ERR_MOD_SYNTAX, op, "'%s' is not supported; write 'x %s 1'",
                        op->kind == TK_INC ? "++" : "--", op->kind == TK_INC ? "+=" : "-=");
        if (op->kind == TK_COMMA)
            return fail(P, FA4_ERR_MOD_SYNTAX, op, "the comma operator is not allowed");
        if (op->kind != TK_SEMI) {
            char b[64];
            return fail(P, FA4_ERR_MOD_SYNTAX, op, "expected ';' before %s",
                        describe(P, op, b, sizeof b));
        }
        return fail(P, FA4_ERR_MOD_CHECK, t0,
                    "this statement does nothing: a statement is a declaration, an assignment, "
                    "'if' or 'return'");
    }
    if (lhs->kind == EX_INDEX)
        return fail(P, FA4_ERR_MOD_CHECK, op,
                    "writes through aux pointers are not allowed: aux tensors are read-only");
    if (lhs->kind != EX_VAR)
        return fail(P, FA4_ERR_MOD_CHECK, op, "the left side of '%.*s' must be a variable",
                    (int)op->len, P->m->src + op->off);
    next(P);
    fa4__stmt *s = new_stmt(P, ST_ASSIGN, op);
    if (!s)
        return NULL;
    s->op = op->kind;
    s->name_off = lhs->name_off;
    s->name_len = lhs->name_len;
    s->name_line = lhs->line;
    s->name_col = lhs->col;
    s->e = parse_expr(P);
    if (!s->e)
        return NULL;
    if (is_assign_op(cur(P)->kind))
        return fail(P, FA4_ERR_MOD_SYNTAX, cur(P),
                    "chained assignment is not allowed: an assignment is a statement");
    if (!expect(P, TK_SEMI, "';' after the assignment"))
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
        return fail(P, FA4_ERR_MOD_SYNTAX, cur(P),
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
    if (kw == KW_IF && !enter(P, t))
        return NULL;
    const char *rw = t->kind == TK_IDENT ? rejected_word(P, t) : NULL;
    if (t->kind == TK_LBRACE) {
        s = parse_block(P);
    } else if (t->kind == TK_SEMI) {
        s = new_stmt(P, ST_EMPTY, t);
        next(P);
    } else if (kw == KW_IF) {
        next(P);
        s = new_stmt(P, ST_IF, t);
        if (s && expect(P, TK_LPAREN, "'(' after 'if'") && (s->e = parse_expr(P)) &&
            expect(P, TK_RPAREN, "')' after the condition") &&
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
        s = fail(P, FA4_ERR_MOD_SYNTAX, t, "'else' without a matching 'if'");
    } else if (kw == KW_RETURN) {
        next(P);
        s = new_stmt(P, ST_RETURN, t);
        if (s && cur(P)->kind != TK_SEMI) {
            s->e = parse_expr(P);
            if (!s->e)
                s = NULL;
        }
        if (s && !expect(P, TK_SEMI, "';' after the return value"))
            s = NULL;
    } else if (starts_decl(P)) {
        return parse_decl(P, into);
    } else if (rw) {
        s = fail(P, FA4_ERR_MOD_SYNTAX, t, "%s", rw);
    } else if (t->kind == TK_IDENT && unsupported_type(P, t)) {
        char w[40];
        tok_text(P, t, w, sizeof w);
        s = fail(P, FA4_ERR_MOD_CHECK, t, "type '%s' is not supported; locals are float, int or "
                                          "bool", w);
    } else if (t->kind == TK_IDENT && type_word(P, t) >= 0) {
        char w[40];
        tok_text(P, t, w, sizeof w);
        s = fail(P, FA4_ERR_MOD_CHECK, t, "'%s' is only an aux tensor element type; locals are "
                                          "float, int or bool", w);
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
        return fail(P, FA4_ERR_OUT_OF_MEMORY, cur(P), "out of memory while parsing");
    v->kind = VK_PARAM;
    if (kw_of(P, cur(P)) == KW_CONST) {
        v->has_const_kw = 1;
        next(P);
    }
    const fa4__tok *tt = cur(P);
    char w[64], b[64];
    tok_text(P, tt, w, sizeof w);
    int tw = tt->kind == TK_IDENT ? type_word(P, tt) : -1;
    if (tw < 0) {
        if (tt->kind == TK_IDENT && unsupported_type(P, tt))
            return fail(P, FA4_ERR_MOD_CHECK, tt,
                        "type '%s' is not supported; parameters are float, int, bool or "
                        "'const T *' with T one of float, half, bf16, int8, uint8, int16, int32, "
                        "int64, bool", w);
        if (tt->kind == TK_IDENT && kw_of(P, tt) == KW_NONE) {
            const char *cands[sizeof type_words / sizeof type_words[0]];
            for (size_t i = 0; i < sizeof type_words / sizeof type_words[0]; i++)
                cands[i] = type_words[i].word;
            const char *hint = fa4__closest(w, cands, (int)(sizeof cands / sizeof cands[0]));
            if (hint)
                return fail(P, FA4_ERR_MOD_CHECK, tt, "unknown type '%s'; did you mean '%s'?", w,
                            hint);
            return fail(P, FA4_ERR_MOD_CHECK, tt, "unknown type '%s' for a parameter", w);
        }
        return fail(P, FA4_ERR_MOD_SYNTAX, tt, "expected a parameter type before %s",
                    describe(P, tt, b, sizeof b));
    }
    next(P);
    v->type_line = tt->line;
    v->type_col = tt->col;
    v->type_len = (int)tt->len;
    v->dtype = type_words[tw].dtype;
    v->type = type_words[tw].scalar;
    if (kw_of(P, cur(P)) == KW_CONST) {
        v->has_const_kw = 1;
        next(P);
    }
    if (cur(P)->kind == TK_STAR) {
        v->pointer = 1;
        v->type = TY_TENSOR;
        next(P);
        if (cur(P)->kind == TK_STAR)
            return fail(P, FA4_ERR_MOD_CHECK, cur(P), "pointers to pointers are not allowed");
        if (kw_of(P, cur(P)) == KW_CONST)
            next(P); /* `const T *const name`: the pointer itself is const too; same meaning */
        if (is_word(P, cur(P), "__restrict__") || is_word(P, cur(P), "restrict"))
            next(P);
    } else if (cur(P)->kind == TK_AMP) {
        return fail(P, FA4_ERR_MOD_CHECK, cur(P), "reference parameters are not allowed");
    }
    const fa4__tok *nt = cur(P);
    if (nt->kind != TK_IDENT || kw_of(P, nt) != KW_NONE)
        return fail(P, FA4_ERR_MOD_SYNTAX, nt, "expected a parameter name before %s",
                    describe(P, nt, b, sizeof b));
    memcpy(v->name, P->m->src + nt->off, nt->len);
    v->line = nt->line;
    v->col = nt->col;
    v->len = (int)nt->len;
    next(P);
    if (cur(P)->kind == TK_LBRACKET)
        return fail(P, FA4_ERR_MOD_CHECK, cur(P),
                    "array parameters are not allowed; declare aux tensors as 'const T *%s'",
                    v->name);
    if (!v->type && !v->pointer)
        return fail(P, FA4_ERR_MOD_CHECK, tt,
                    "'%s' is only an aux tensor element type; write 'const %s *%s' for a tensor or "
                    "use float, int or bool for a scalar", w, w, v->name);
    return v;
}

static fa4__func *parse_function(parser *P)
{
    const fa4__tok *t = cur(P);
    char w[64], b[64];
    tok_text(P, t, w, sizeof w);
    if (t->kind != TK_IDENT)
        return fail(P, FA4_ERR_MOD_SYNTAX, t, "expected a function definition before %s",
                    describe(P, t, b, sizeof b));
    const char *rw = rejected_word(P, t);
    if (rw)
        return fail(P, FA4_ERR_MOD_SYNTAX, t, "%s", rw);
    if (kw_of(P, t) == KW_CONST)
        next(P);
    const fa4__tok *tt = cur(P);
    tok_text(P, tt, w, sizeof w);
    int kw = kw_of(P, tt);
    if (kw != KW_FLOAT && kw != KW_INT && kw != KW_BOOL) {
        if (tt->kind == TK_IDENT && (unsupported_type(P, tt) || type_word(P, tt) >= 0))
            return fail(P, FA4_ERR_MOD_CHECK, tt,
                        "return type '%s' is not supported; functions return float, int or bool",
                        w);
        if (tt->kind == TK_IDENT && ahead(P, 1)->kind == TK_LPAREN)
            return fail(P, FA4_ERR_MOD_SYNTAX, tt,
                        "function '%s' needs a return type (float, int or bool)", w);
        return fail(P, FA4_ERR_MOD_SYNTAX, tt, "expected a function definition before %s",
                    describe(P, tt, b, sizeof b));
    }
    next(P);
    const fa4__tok *nt = cur(P);
    if (nt->kind == TK_STAR)
        return fail(P, FA4_ERR_MOD_CHECK, nt, "functions cannot return pointers");
    if (nt->kind != TK_IDENT || kw_of(P, nt) != KW_NONE)
        return fail(P, FA4_ERR_MOD_SYNTAX, nt, "expected a function name before %s",
                    describe(P, nt, b, sizeof b));
    next(P);
    char name[FA4__MOD_MAX_NAME + 1] = {0};
    memcpy(name, P->m->src + nt->off, nt->len);
    if (cur(P)->kind != TK_LPAREN) {
        if (cur(P)->kind == TK_ASSIGN || cur(P)->kind == TK_SEMI || cur(P)->kind == TK_COMMA ||
            cur(P)->kind == TK_LBRACKET)
            return fail(P, FA4_ERR_MOD_CHECK, nt,
                        "global variables are not allowed; declare '%s' inside the function that "
                        "uses it", name);
        return fail(P, FA4_ERR_MOD_SYNTAX, cur(P), "expected '(' after '%s'", name);
    }
    fa4__func *f = fa4__arena_alloc(&P->m->arena, sizeof *f);
    if (!f)
        return fail(P, FA4_ERR_OUT_OF_MEMORY, nt, "out of memory while parsing");
    memcpy(f->name, name, sizeof name);
    P->fname = f->name;
    f->ret = kw == KW_FLOAT ? TY_FLOAT : kw == KW_INT ? TY_INT : TY_BOOL;
    f->line = nt->line;
    f->col = nt->col;
    f->len = (int)nt->len;
    f->role = !strcmp(name, "score_mod") ? FR_SCORE : !strcmp(name, "mask_mod") ? FR_MASK
                                                                                : FR_HELPER;
    next(P); /* ( */
    fa4__var *tmp[64];
    int n = 0;
    if (is_word(P, cur(P), "void") && ahead(P, 1)->kind == TK_RPAREN) {
        next(P);
    } else if (cur(P)->kind != TK_RPAREN) {
        for (;;) {
            if (n == 64)
                return fail(P, FA4_ERR_MOD_LIMIT, cur(P), "more than 64 parameters");
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
    if (!expect(P, TK_RPAREN, "')' after the parameters"))
        return NULL;
    if (cur(P)->kind == TK_SEMI)
        return fail(P, FA4_ERR_MOD_CHECK, cur(P),
                    "function declarations without a body are not needed; define '%s' instead",
                    name);
    f->nparams = n;
    if (n) {
        f->params = fa4__arena_alloc(&P->m->arena, (size_t)n * sizeof *f->params);
        if (!f->params)
            return fail(P, FA4_ERR_OUT_OF_MEMORY, nt, "out of memory while parsing");
        memcpy(f->params, tmp, (size_t)n * sizeof *tmp);
    }
    if (cur(P)->kind != TK_LBRACE)
        return fail(P, FA4_ERR_MOD_SYNTAX, cur(P), "expected '{' to start the body of '%s'", name);
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
