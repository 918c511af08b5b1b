/*
 * parse_words.c - the parser's error reporting and nesting bound, and the words that matter to it:
 * the type words of parameters, C types mods do not have (double, long, ...), and the C keywords
 * mods reject (loops, goto, switch, asm, static, ...) each with the reason given to the user.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "parse_internal.h"

void *fa4__parse_fail(parser *P, fa4_status st, const fa4__tok *t, const char *fmt, ...)
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

int fa4__parse_enter(parser *P, const fa4__tok *t)
{
    if (++P->depth > FA4__MOD_MAX_DEPTH) {
        fa4__parse_fail(P, FA4_ERR_MOD_LIMIT, t,
                        "nesting is deeper than %d levels (blocks, parentheses, "
                        "calls, unary operators)",
                        FA4__MOD_MAX_DEPTH);
        return 0;
    }
    return 1;
}

const char *fa4__parse_describe(const parser *P, const fa4__tok *t, char *buf, size_t cap)
{
    if (t->kind == TK_EOF)
        return "end of input";
    char text[40];
    tok_text(P, t, text, sizeof text);
    snprintf(buf, cap, "'%s'", text);
    return buf;
}

int fa4__parse_expect(parser *P, int kind, const char *what)
{
    if (cur(P)->kind == kind) {
        next(P);
        return 1;
    }
    char b[64];
    if (cur(P)->kind == TK_COMMA && kind == TK_SEMI)
        fa4__parse_fail(P, FA4_ERR_MOD_SYNTAX, cur(P), "the comma operator is not allowed");
    else if (cur(P)->kind == TK_ASSIGN && kind == TK_RPAREN)
        fa4__parse_fail(P, FA4_ERR_MOD_SYNTAX, cur(P),
                        "assignment inside an expression is not allowed; did you mean '=='?");
    else
        fa4__parse_fail(P, FA4_ERR_MOD_SYNTAX, cur(P), "expected %s before %s", what,
                        fa4__parse_describe(P, cur(P), b, sizeof b));
    return 0;
}

/* --------------------------------------------------------------------------------- type words */
const fa4__type_word fa4__parse_type_words[FA4__PARSE_NUM_TYPE_WORDS] = {
    {"float", FA4_DTYPE_FP32, TY_FLOAT}, {"int", FA4_DTYPE_INT32, TY_INT},
    {"bool", FA4_DTYPE_BOOL, TY_BOOL},   {"half", FA4_DTYPE_FP16, 0},
    {"bf16", FA4_DTYPE_BF16, 0},         {"int8", FA4_DTYPE_INT8, 0},
    {"uint8", FA4_DTYPE_UINT8, 0},       {"int16", FA4_DTYPE_INT16, 0},
    {"int32", FA4_DTYPE_INT32, 0},       {"int64", FA4_DTYPE_INT64, 0},
};

static const char *const unsupported_types[] = {
    "double",   "long",     "short",   "char",          "unsigned", "signed",   "void",
    "auto",     "size_t",   "int8_t",  "uint8_t",       "int16_t",  "int32_t",  "int64_t",
    "uint32_t", "uint64_t", "__half",  "__nv_bfloat16", "float16",  "bfloat16", "uint16",
    "uint32",   "uint64",   "float32", "float64",
};

int fa4__parse_type_word(const parser *P, const fa4__tok *t)
{
    for (int i = 0; i < (int)(FA4__PARSE_NUM_TYPE_WORDS); i++)
        if (is_word(P, t, fa4__parse_type_words[i].word))
            return i;
    return -1;
}

int fa4__parse_unsupported_type(const parser *P, const fa4__tok *t)
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

const char *fa4__parse_rejected_word(const parser *P, const fa4__tok *t)
{
    for (size_t i = 0; i < sizeof rejected_words / sizeof rejected_words[0]; i++)
        if (is_word(P, t, rejected_words[i].word))
            return rejected_words[i].msg;
    return NULL;
}
