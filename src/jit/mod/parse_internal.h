/*
 * parse_internal.h - the parser's state and token helpers, shared by parse.c (statements, functions,
 * the entry point), parse_expr.c (expressions) and parse_words.c (error reporting, nesting depth,
 * and the words of C that mods reject or spell differently).
 */
#ifndef FA4_JIT_MOD_PARSE_INTERNAL_H
#define FA4_JIT_MOD_PARSE_INTERNAL_H

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

static inline const fa4__tok *cur(const parser *P)
{
    return &P->m->toks[P->pos];
}

static inline const fa4__tok *ahead(const parser *P, int k)
{
    int i = P->pos + k;
    if (i >= P->m->ntoks)
        i = P->m->ntoks - 1;
    return &P->m->toks[i];
}

static inline void next(parser *P)
{
    if (cur(P)->kind != TK_EOF)
        P->pos++;
}

static inline void tok_text(const parser *P, const fa4__tok *t, char *buf, size_t cap)
{
    size_t n = t->len < cap - 1 ? t->len : cap - 1;
    memcpy(buf, P->m->src + t->off, n);
    buf[n] = '\0';
}

static inline int kw_of(const parser *P, const fa4__tok *t)
{
    return t->kind == TK_IDENT ? fa4__keyword(P->m->src + t->off, t->len) : KW_NONE;
}

static inline int is_word(const parser *P, const fa4__tok *t, const char *w)
{
    return fa4__tok_is(P->m, t, w);
}

static inline void leave(parser *P)
{
    P->depth--;
}

/* Record the first error at token t. Returns NULL so callers can `return fa4__parse_fail(...)`. */
void *fa4__parse_fail(parser *P, fa4_status st, const fa4__tok *t, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* One more nesting level at t; 0 (with the error recorded) past FA4__MOD_MAX_DEPTH. */
int fa4__parse_enter(parser *P, const fa4__tok *t);
/* "'x'" or "end of input", in buf. */
const char *fa4__parse_describe(const parser *P, const fa4__tok *t, char *buf, size_t cap);
/* Consume a token of this kind or record "expected <what> before ...". */
int fa4__parse_expect(parser *P, int kind, const char *what);

/* Parameter type words: float int bool half bf16 int8 uint8 int16 int32 int64. */
typedef struct fa4__type_word {
    const char *word;
    fa4_dtype dtype;
    int scalar; /* TY_* when it is also a scalar type, else 0 */
} fa4__type_word;
#define FA4__PARSE_NUM_TYPE_WORDS 10
extern const fa4__type_word fa4__parse_type_words[FA4__PARSE_NUM_TYPE_WORDS];
int fa4__parse_type_word(const parser *P, const fa4__tok *t);        /* index or -1 */
int fa4__parse_unsupported_type(const parser *P, const fa4__tok *t); /* double, long, ... */
const char *fa4__parse_rejected_word(const parser *P, const fa4__tok *t); /* why, or NULL */

fa4__expr *fa4__parse_expr(parser *P);

#endif /* FA4_JIT_MOD_PARSE_INTERNAL_H */
