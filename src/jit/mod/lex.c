/*
 * lex.c - the mod language's lexer: source bytes to tokens with line and column. It rejects what
 * cannot be a mod at the character level (preprocessor lines, strings, stray bytes, out-of-range
 * literals) with a message pointing at the spot. The token array is also the canonical stream the
 * cache key hashes (mod.c), so whitespace and comments never reach it.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mod_internal.h"

typedef struct lexer {
    fa4__mod *m;
    fa4__diag *d;
    const char *s;
    size_t n, i;
    int line, col;
    int cap;
} lexer;

static const struct {
    const char *text;
    int kind;
} puncts[] = {
    /* three characters first, then two, then one: maximal munch */
    {"<<=", TK_SHLEQ}, {">>=", TK_SHREQ},  {"<<", TK_SHL},       {">>", TK_SHR},
    {"&&", TK_ANDAND}, {"||", TK_OROR},    {"<=", TK_LE},        {">=", TK_GE},
    {"==", TK_EQEQ},   {"!=", TK_NE},      {"+=", TK_PLUSEQ},    {"-=", TK_MINUSEQ},
    {"*=", TK_STAREQ}, {"/=", TK_SLASHEQ}, {"%=", TK_PERCENTEQ}, {"&=", TK_AMPEQ},
    {"|=", TK_PIPEEQ}, {"^=", TK_CARETEQ}, {"++", TK_INC},       {"--", TK_DEC},
    {"->", TK_ARROW},  {"(", TK_LPAREN},   {")", TK_RPAREN},     {"{", TK_LBRACE},
    {"}", TK_RBRACE},  {"[", TK_LBRACKET}, {"]", TK_RBRACKET},   {",", TK_COMMA},
    {";", TK_SEMI},    {"?", TK_QUESTION}, {":", TK_COLON},      {".", TK_DOT},
    {"+", TK_PLUS},    {"-", TK_MINUS},    {"*", TK_STAR},       {"/", TK_SLASH},
    {"%", TK_PERCENT}, {"&", TK_AMP},      {"|", TK_PIPE},       {"^", TK_CARET},
    {"~", TK_TILDE},   {"!", TK_BANG},     {"<", TK_LT},         {">", TK_GT},
    {"=", TK_ASSIGN},
};

static const struct {
    const char *text;
    int kw;
} keywords[] = {
    {"float", KW_FLOAT},   {"int", KW_INT},   {"bool", KW_BOOL},
    {"const", KW_CONST},   {"if", KW_IF},     {"else", KW_ELSE},
    {"return", KW_RETURN}, {"true", KW_TRUE}, {"false", KW_FALSE},
};

int fa4__keyword(const char *s, size_t len)
{
    for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++)
        if (strlen(keywords[i].text) == len && !memcmp(keywords[i].text, s, len))
            return keywords[i].kw;
    return KW_NONE;
}

int fa4__tok_is(const fa4__mod *m, const fa4__tok *t, const char *s)
{
    size_t n = strlen(s);
    return t->kind == TK_IDENT && t->len == n && !memcmp(m->src + t->off, s, n);
}

static int is_ident_start(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_digit(int c)
{
    return c >= '0' && c <= '9';
}

static int is_ident_char(int c)
{
    return is_ident_start(c) || is_digit(c);
}

static int peek(const lexer *L, size_t k)
{
    return L->i + k < L->n ? (unsigned char)L->s[L->i + k] : -1;
}

static void advance(lexer *L, size_t k)
{
    for (size_t j = 0; j < k && L->i < L->n; j++) {
        if (L->s[L->i] == '\n') {
            L->line++;
            L->col = 1;
        } else {
            L->col++;
        }
        L->i++;
    }
}

static fa4__tok *push(lexer *L, int kind, size_t start, int line, int col)
{
    fa4__mod *m = L->m;
    if (m->ntoks == L->cap) {
        int ncap = L->cap ? L->cap * 2 : 256;
        fa4__tok *t = realloc(m->toks, (size_t)ncap * sizeof *t);
        if (!t)
            return NULL;
        m->toks = t;
        L->cap = ncap;
    }
    fa4__tok *t = &m->toks[m->ntoks++];
    memset(t, 0, sizeof *t);
    t->kind = kind;
    t->off = (uint32_t)start;
    t->len = (uint32_t)(L->i - start);
    t->line = line;
    t->col = col;
    return t;
}

__attribute__((format(printf, 6, 7))) static fa4_status err(lexer *L, fa4_status st, int line,
                                                            int col, int len, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return fa4__diag_at(L->d, L->m, NULL, st, line, col, len, "%s", msg);
}

/* A number: decimal or hex int, or a float with '.', exponent and/or 'f' suffix. */
static fa4_status lex_number(lexer *L)
{
    size_t start = L->i;
    int line = L->line, col = L->col;
    int is_float = 0, hex = 0;
    if (peek(L, 0) == '0' && (peek(L, 1) == 'x' || peek(L, 1) == 'X')) {
        hex = 1;
        advance(L, 2);
        size_t d0 = L->i;
        while (is_digit(peek(L, 0)) || (peek(L, 0) >= 'a' && peek(L, 0) <= 'f') ||
               (peek(L, 0) >= 'A' && peek(L, 0) <= 'F'))
            advance(L, 1);
        if (L->i == d0)
            return err(L, FA4_ERR_MOD_SYNTAX, line, col, (int)(L->i - start),
                       "hexadecimal literal '0x' has no digits");
    } else {
        while (is_digit(peek(L, 0)))
            advance(L, 1);
        /* C reads 010 as octal 8; mods have no octal, and a silent 10 would surprise */
        if (L->i - start > 1 && L->s[start] == '0' && peek(L, 0) != '.' && peek(L, 0) != 'e' &&
            peek(L, 0) != 'E' && peek(L, 0) != 'f' && peek(L, 0) != 'F')
            return err(L, FA4_ERR_MOD_SYNTAX, line, col, (int)(L->i - start),
                       "octal literals are not supported (C would read '%.*s' as octal); drop the "
                       "leading zeros",
                       (int)(L->i - start), L->s + start);
        if (peek(L, 0) == '.') {
            is_float = 1;
            advance(L, 1);
            while (is_digit(peek(L, 0)))
                advance(L, 1);
        }
        if (peek(L, 0) == 'e' || peek(L, 0) == 'E') {
            size_t k = 1;
            if (peek(L, 1) == '+' || peek(L, 1) == '-')
                k = 2;
            if (!is_digit(peek(L, k))) {
                advance(L, 1);
                return err(L, FA4_ERR_MOD_SYNTAX, line, col, (int)(L->i - start),
                           "exponent has no digits");
            }
            is_float = 1;
            advance(L, k);
            while (is_digit(peek(L, 0)))
                advance(L, 1);
        }
        if (peek(L, 0) == 'f' || peek(L, 0) == 'F') {
            is_float = 1;
            advance(L, 1);
        }
    }
    size_t numlen = L->i - start;
    if (is_ident_char(peek(L, 0)) || peek(L, 0) == '.') {
        size_t s0 = L->i;
        while (is_ident_char(peek(L, 0)) || peek(L, 0) == '.')
            advance(L, 1);
        char suf[32];
        size_t sl = L->i - s0 < sizeof suf - 1 ? L->i - s0 : sizeof suf - 1;
        memcpy(suf, L->s + s0, sl);
        suf[sl] = '\0';
        return err(L, FA4_ERR_MOD_SYNTAX, line, col, (int)(L->i - start),
                   "invalid suffix '%s' on number (ints are int32, floats are float; only 'f' is "
                   "accepted)",
                   suf);
    }
    char buf[80];
    if (numlen >= sizeof buf)
        return err(L, FA4_ERR_MOD_SYNTAX, line, col, (int)numlen, "number is too long");
    memcpy(buf, L->s + start, numlen);
    buf[numlen] = '\0';
    fa4__tok *t = push(L, is_float ? TK_FLOAT : TK_INT, start, line, col);
    if (!t)
        return fa4__diag_plain(L->d, FA4_ERR_OUT_OF_MEMORY, "out of memory while lexing");
    if (is_float) {
        if (buf[numlen - 1] == 'f' || buf[numlen - 1] == 'F')
            buf[numlen - 1] = '\0';
        double v = strtod(buf, NULL);
        float f = (float)v;
        if (isinf(f))
            return err(L, FA4_ERR_MOD_SYNTAX, line, col, (int)numlen,
                       "floating literal '%s' is out of the range of float", buf);
        t->fval = (double)f; /* a double literal is read as float */
    } else {
        unsigned long long v = 0;
        int over = 0;
        for (size_t k = hex ? 2 : 0; k < numlen; k++) {
            int c = buf[k], dv;
            if (c >= '0' && c <= '9')
                dv = c - '0';
            else if (c >= 'a' && c <= 'f')
                dv = c - 'a' + 10;
            else
                dv = c - 'A' + 10;
            v = v * (hex ? 16u : 10u) + (unsigned)dv;
            if (v > 0xffffffffull)
                over = 1;
        }
        /* hex literals may spell any 32-bit pattern (0xffffffff is -1), decimals only int32 */
        if (over || (!hex && v > 2147483647ull))
            return err(L, FA4_ERR_MOD_SYNTAX, line, col, (int)numlen,
                       "integer literal '%s' does not fit in int (int32)", buf);
        t->ival = (int64_t)(int32_t)(uint32_t)v;
    }
    return FA4_OK;
}

fa4_status fa4__mod_lex(fa4__mod *m, fa4__diag *d)
{
    lexer L = {.m = m, .d = d, .s = m->src, .n = m->len, .line = 1, .col = 1};
    while (L.i < L.n) {
        int c = peek(&L, 0);
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
            advance(&L, 1);
            continue;
        }
        if (c == '/' && peek(&L, 1) == '/') {
            while (L.i < L.n && L.s[L.i] != '\n')
                advance(&L, 1);
            continue;
        }
        if (c == '/' && peek(&L, 1) == '*') {
            int line = L.line, col = L.col;
            advance(&L, 2);
            while (L.i < L.n && !(peek(&L, 0) == '*' && peek(&L, 1) == '/'))
                advance(&L, 1);
            if (L.i >= L.n)
                return err(&L, FA4_ERR_MOD_SYNTAX, line, col, 2, "unterminated comment");
            advance(&L, 2);
            continue;
        }
        size_t start = L.i;
        int line = L.line, col = L.col;
        if (is_ident_start(c)) {
            while (is_ident_char(peek(&L, 0)))
                advance(&L, 1);
            if (L.i - start > FA4__MOD_MAX_NAME)
                return fa4__diag_at(d, m, NULL, FA4_ERR_MOD_LIMIT, line, col, (int)(L.i - start),
                                    "identifier is longer than %d characters", FA4__MOD_MAX_NAME);
            if (!push(&L, TK_IDENT, start, line, col))
                return fa4__diag_plain(d, FA4_ERR_OUT_OF_MEMORY, "out of memory while lexing");
            continue;
        }
        if (is_digit(c) || (c == '.' && is_digit(peek(&L, 1)))) {
            fa4_status st = lex_number(&L);
            if (st != FA4_OK)
                return st;
            continue;
        }
        if (c == '#')
            return err(&L, FA4_ERR_MOD_SYNTAX, line, col, 1,
                       "preprocessor lines are not allowed in mods");
        if (c == '"') {
            /* `asm("...")` fails here first: name the real offence */
            if (m->ntoks >= 2 && m->toks[m->ntoks - 1].kind == TK_LPAREN) {
                const fa4__tok *a = &m->toks[m->ntoks - 2];
                if (fa4__tok_is(m, a, "asm") || fa4__tok_is(m, a, "__asm__") ||
                    fa4__tok_is(m, a, "__asm"))
                    return err(&L, FA4_ERR_MOD_SYNTAX, a->line, a->col, (int)a->len,
                               "inline assembly ('%.*s') is not allowed in mods", (int)a->len,
                               m->src + a->off);
            }
            return err(&L, FA4_ERR_MOD_SYNTAX, line, col, 1, "string literals are not allowed");
        }
        if (c == '\'')
            return err(&L, FA4_ERR_MOD_SYNTAX, line, col, 1, "character literals are not allowed");
        int matched = 0;
        for (size_t k = 0; k < sizeof puncts / sizeof puncts[0]; k++) {
            size_t pl = strlen(puncts[k].text);
            if (L.i + pl <= L.n && !memcmp(L.s + L.i, puncts[k].text, pl)) {
                advance(&L, pl);
                if (!push(&L, puncts[k].kind, start, line, col))
                    return fa4__diag_plain(d, FA4_ERR_OUT_OF_MEMORY, "out of memory while lexing");
                matched = 1;
                break;
            }
        }
        if (matched)
            continue;
        if (c >= 33 && c < 127) {
            char ch[2] = {(char)c, 0};
            return err(&L, FA4_ERR_MOD_SYNTAX, line, col, 1, "stray '%s' in mod source", ch);
        }
        return fa4__diag_at(d, m, NULL, FA4_ERR_MOD_SYNTAX, line, col, 1,
                            "stray byte 0x%02x in mod source (mods are ASCII)", (unsigned)c);
    }
    if (!push(&L, TK_EOF, L.i, L.line, L.col))
        return fa4__diag_plain(d, FA4_ERR_OUT_OF_MEMORY, "out of memory while lexing");
    return FA4_OK;
}
