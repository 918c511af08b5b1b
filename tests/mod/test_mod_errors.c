/*
 * test_mod_errors.c - rejected sources: each MODS.md rule and each limit gives its own message at
 * the user's line and column, with the source line and a caret under the offending token in the
 * rendering, and a "did you mean" hint where one helps. One table row per rejected source.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "mod_test_util.h"

/* common openings: line 1 is the signature, the body starts on line 2 */
#define SM "float score_mod(float s, int b, int h, int q, int kv) {\n"
#define SMA "float score_mod(float s, int b, int h, int q, int kv, const float *w, int n) {\n"
#define MM "bool mask_mod(int b, int h, int q, int kv) {\n"

typedef struct rejected {
    const char *src;
    fa4_status status;
    const char *msg; /* substring of the message */
    int line, col;
} rejected;

static const rejected cases[] = {
    /* names */
    {SMA "  return s + wx[h];\n}", FA4_ERR_MOD_CHECK, "unknown identifier 'wx'; did you mean 'w'?", 2, 14},
    {"float score_mod(float s, int b, int h, int q, int kv, const float *slopes) {\n"
     "  return s + slope[h];\n}", FA4_ERR_MOD_CHECK,
     "unknown identifier 'slope'; did you mean 'slopes'?", 2, 14},
    {SM "  return expff(s);\n}", FA4_ERR_MOD_CHECK, "unknown function 'expff'; did you mean 'expf'?", 2, 10},
    {SM "  return zzz(s);\n}", FA4_ERR_MOD_CHECK, "unknown function 'zzz'", 2, 10},
    {SM "  x = 1.0f;\n  return s;\n}", FA4_ERR_MOD_CHECK, "unknown identifier 'x'", 2, 3},
    {SM "  return h(s);\n}", FA4_ERR_MOD_CHECK, "'h' is a variable, not a function", 2, 10},
    {SM "  return expf;\n}", FA4_ERR_MOD_CHECK, "'expf' is a function; call it", 2, 10},
    {SM "  int y = y + 1;\n  return s;\n}", FA4_ERR_MOD_CHECK, "'y' is used in its own initializer", 2, 11},
    {SM "  float s = 1.0f;\n  return s;\n}", FA4_ERR_MOD_CHECK, "redefinition of 's'", 2, 9},
    {SM "  float class = 1.0f;\n  return s;\n}", FA4_ERR_MOD_CHECK, "cannot name a variable 'class'", 2, 9},
    {SM "  float fa4_x = 1.0f;\n  return s;\n}", FA4_ERR_MOD_CHECK, "reserved for the generated code", 2, 9},
    {SM "  float expf = 1.0f;\n  return s;\n}", FA4_ERR_MOD_CHECK, "name of a builtin function", 2, 9},
    {SM "  int threadIdx = 0;\n  return s;\n}", FA4_ERR_MOD_CHECK, "this name is reserved", 2, 7},
    {"float f(float x) { return x; }\nfloat f(float y) { return y; }\n" SM "  return s;\n}",
     FA4_ERR_MOD_CHECK, "redefinition of 'f' (first defined at line 1)", 2, 7},
    {"float logf(float x) { return x; }\n" SM "  return s;\n}", FA4_ERR_MOD_CHECK,
     "cannot name a function 'logf'", 1, 7},
    {"float f(float x) { return x; }\n", FA4_ERR_MOD_CHECK, "neither 'score_mod' nor 'mask_mod'", 1, 7},
    {"float aaaaaaaaaabbbbbbbbbbccccccccccddddddddddeeeeeeeeeeffffffffffgggg(float x) { return x; }",
     FA4_ERR_MOD_LIMIT, "identifier is longer than 63 characters", 1, 7},
    /* forbidden statements */
    {SM "  for (int i = 0; i < 3; i += 1) { }\n  return s;\n}", FA4_ERR_MOD_SYNTAX, "loops are not allowed", 2, 3},
    {SM "  while (q > 0) { }\n  return s;\n}", FA4_ERR_MOD_SYNTAX, "loops are not allowed in mods ('while')", 2, 3},
    {SM "  do { } while (q);\n  return s;\n}", FA4_ERR_MOD_SYNTAX, "loops are not allowed in mods ('do')", 2, 3},
    {SM "  goto out;\n}", FA4_ERR_MOD_SYNTAX, "'goto' is not allowed", 2, 3},
    {SM "  switch (q) { }\n  return s;\n}", FA4_ERR_MOD_SYNTAX, "'switch' is not allowed", 2, 3},
    {SM "  break;\n}", FA4_ERR_MOD_SYNTAX, "'break' is not allowed", 2, 3},
    {SM "  continue;\n}", FA4_ERR_MOD_SYNTAX, "'continue' is not allowed", 2, 3},
    {SM "  asm(\"trap;\");\n}", FA4_ERR_MOD_SYNTAX, "inline assembly", 2, 3},
    {SM "  __asm__(\"trap;\");\n}", FA4_ERR_MOD_SYNTAX, "inline assembly ('__asm__')", 2, 3},
    {"#include <math.h>\n" SM "  return s;\n}", FA4_ERR_MOD_SYNTAX, "preprocessor lines are not allowed", 1, 1},
    {SM "#define X 1\n  return s;\n}", FA4_ERR_MOD_SYNTAX, "preprocessor lines are not allowed", 2, 1},
    {"float g = 1.0f;\n" SM "  return s;\n}", FA4_ERR_MOD_CHECK, "global variables are not allowed; declare 'g'", 1, 7},
    {SM "  return s;\n}\nint counter;\n", FA4_ERR_MOD_CHECK, "global variables are not allowed", 4, 5},
    {"static float f(float x) { return x; }\n" SM "  return s;\n}", FA4_ERR_MOD_SYNTAX, "'static' is not allowed", 1, 1},
    {"struct S { int a; };\n" SM "  return s;\n}", FA4_ERR_MOD_SYNTAX, "'struct' is not supported", 1, 1},
    {"extern float f(float x);\n" SM "  return s;\n}", FA4_ERR_MOD_SYNTAX, "'extern' is not allowed", 1, 1},
    {"float f(float x);\n" SM "  return f(s);\n}", FA4_ERR_MOD_CHECK, "declarations without a body are not needed", 1, 17},
    {"void f(float x) { }\n" SM "  return s;\n}", FA4_ERR_MOD_CHECK, "return type 'void' is not supported", 1, 1},
    {"score_mod(float s, int b, int h, int q, int kv) {\n  return s;\n}", FA4_ERR_MOD_SYNTAX, "needs a return type", 1, 1},
    {SM "  q++;\n  return s;\n}", FA4_ERR_MOD_SYNTAX, "'++' is not supported; write 'x += 1'", 2, 4},
    {SM "  --q;\n  return s;\n}", FA4_ERR_MOD_SYNTAX, "'--' is not supported", 2, 3},
    {SM "  s + 1.0f;\n  return s;\n}", FA4_ERR_MOD_CHECK, "this statement does nothing", 2, 3},
    {SM "  if (q = kv) return s;\n  return s;\n}", FA4_ERR_MOD_SYNTAX, "did you mean '=='?", 2, 9},
    {SM "  q = kv = 1;\n  return s;\n}", FA4_ERR_MOD_SYNTAX, "chained assignment is not allowed", 2, 10},
    {SM "  return s, s;\n}", FA4_ERR_MOD_SYNTAX, "the comma operator is not allowed", 2, 11},
    {SM "  if (q) int z = 1;\n  return s;\n}", FA4_ERR_MOD_SYNTAX, "a declaration cannot be the body of 'if'", 2, 10},
    {SM "  else return s;\n}", FA4_ERR_MOD_SYNTAX, "'else' without a matching 'if'", 2, 3},
    {SM "  int arr[3];\n  return s;\n}", FA4_ERR_MOD_CHECK, "local arrays are not allowed", 2, 10},
    {SM "  return sizeof(s);\n}", FA4_ERR_MOD_SYNTAX, "'sizeof' is not supported", 2, 10},
    /* returns */
    {SM "  if (q > kv) return s;\n}", FA4_ERR_MOD_CHECK, "control reaches the end of 'score_mod' without a return", 3, 1},
    {SM "  return;\n}", FA4_ERR_MOD_CHECK, "'score_mod' must return a value of type 'float'", 2, 3},
    {SM "  return s\n}", FA4_ERR_MOD_SYNTAX, "expected ';' after the return value before '}'", 3, 1},
    {SM "  return s;\n", FA4_ERR_MOD_SYNTAX, "this '{' is never closed", 1, 55},
    /* recursion */
    {"float f(float x) { return f(x); }\n" SM "  return f(s);\n}", FA4_ERR_MOD_CHECK, "recursion is not allowed: 'f' calls itself", 1, 27},
    {"float f(float x) { return g(x); }\nfloat g(float x) { return f(x) + 1.0f; }\n" SM "  return f(s);\n}",
     FA4_ERR_MOD_CHECK, "recursion is not allowed: 'g' calls 'f', which leads back to 'g'", 2, 27},
    {SM "  return score_mod(s, b, h, q, kv);\n}", FA4_ERR_MOD_CHECK, "'score_mod' cannot be called", 2, 10},
    /* pointers and aux */
    {SM "  return *s;\n}", FA4_ERR_MOD_CHECK, "pointer dereference is not allowed", 2, 10},
    {SM "  return s + &q;\n}", FA4_ERR_MOD_CHECK, "address-of ('&') is not allowed", 2, 14},
    {SMA "  w[0] = 1.0f;\n  return s;\n}", FA4_ERR_MOD_CHECK, "writes through aux pointers are not allowed", 2, 8},
    {SMA "  n = 1;\n  return s;\n}", FA4_ERR_MOD_CHECK, "aux parameter 'n' is read-only", 2, 3},
    {SMA "  w = 0;\n  return s;\n}", FA4_ERR_MOD_CHECK, "aux tensor 'w' is read-only", 2, 3},
    {SMA "  return w + s;\n}", FA4_ERR_MOD_CHECK, "aux tensor 'w' must be indexed", 2, 10},
    {SMA "  return w[s];\n}", FA4_ERR_MOD_CHECK, "an index must be int, not 'float'", 2, 12},
    {SMA "  return w[0][1];\n}", FA4_ERR_MOD_CHECK, "aux tensors are one-dimensional", 2, 14},
    {SM "  return s[0];\n}", FA4_ERR_MOD_CHECK, "'s' is a float, not an aux tensor", 2, 10},
    {SM "  return s.x;\n}", FA4_ERR_MOD_CHECK, "member access", 2, 11},
    {SM "  return (float *)s;\n}", FA4_ERR_MOD_CHECK, "pointer casts are not allowed", 2, 11},
    {"float score_mod(float s, int b, int h, int q, int kv, float *w) {\n  return s;\n}",
     FA4_ERR_MOD_CHECK, "aux tensor 'w' must be declared 'const'", 1, 55},
    {"float score_mod(float s, int b, int h, int q, int kv, const double *w) {\n  return s;\n}",
     FA4_ERR_MOD_CHECK, "type 'double' is not supported", 1, 61},
    {"float score_mod(float s, int b, int h, int q, int kv, const flaot *w) {\n  return s;\n}",
     FA4_ERR_MOD_CHECK, "unknown type 'flaot'; did you mean 'float'?", 1, 61},
    {"float score_mod(float s, int b, int h, int q, int kv, half x) {\n  return s;\n}",
     FA4_ERR_MOD_CHECK, "'half' is only an aux tensor element type", 1, 55},
    {"float score_mod(float s, int b, int h, int q, int kv, const float **w) {\n  return s;\n}",
     FA4_ERR_MOD_CHECK, "pointers to pointers are not allowed", 1, 68},
    {"float score_mod(float s, int b, int h, int q, int kv, float w[]) {\n  return s;\n}",
     FA4_ERR_MOD_CHECK, "array parameters are not allowed", 1, 62},
    {"float f(const float *p) { return p[0]; }\n" SM "  return s;\n}", FA4_ERR_MOD_CHECK,
     "helper parameters must be float, int or bool", 1, 15},
    {"float score_mod(float s, int b, int h, int q, int kv, int n) {\n  return s;\n}\n"
     "bool mask_mod(int b, int h, int q, int kv, float n) {\n  return true;\n}",
     FA4_ERR_MOD_CHECK, "aux 'n' is declared 'float' here but 'int' in the other mod", 4, 50},
    {"float score_mod(float s, int b, int h, int q, int kv, const float *w, int w_len) {\n"
     "  return s;\n}", FA4_ERR_MOD_CHECK, "clashes with the length field", 1, 75},
    /* fixed parameters */
    {"float score_mod(int s, int b, int h, int q, int kv) {\n  return 1.0f;\n}",
     FA4_ERR_MOD_CHECK, "parameter 1 of score_mod must be 'float' (the scaled score)", 1, 17},
    {"float score_mod(float s, int b) {\n  return s;\n}", FA4_ERR_MOD_CHECK,
     "score_mod must start with the parameters", 1, 7},
    {"int score_mod(float s, int b, int h, int q, int kv) {\n  return 1;\n}", FA4_ERR_MOD_CHECK,
     "score_mod must return float, not 'int'", 1, 5},
    {"float mask_mod(int b, int h, int q, int kv) {\n  return 1.0f;\n}", FA4_ERR_MOD_CHECK,
     "mask_mod must return bool, not 'float'", 1, 7},
    {"bool mask_mod(int b, int h, float q, int kv) {\n  return true;\n}", FA4_ERR_MOD_CHECK,
     "parameter 3 of mask_mod must be 'int' (the query position)", 1, 29},
    /* types */
    {SM "  int x = s;\n  return s;\n}", FA4_ERR_MOD_CHECK, "implicit conversion from 'float' to 'int' in the initializer", 2, 11},
    {SM "  return q % 2.0f;\n}", FA4_ERR_MOD_CHECK, "operator '%' needs int operands; use fmodf", 2, 12},
    {SM "  return s << 1;\n}", FA4_ERR_MOD_CHECK, "operator '<<' needs int operands, not 'float'", 2, 12},
    {SM "  bool t = q;\n  return s;\n}", FA4_ERR_MOD_CHECK, "'int' does not convert implicitly to 'bool'", 2, 12},
    {SM "  if (s) return s;\n  return 0.0f;\n}", FA4_ERR_MOD_CHECK, "the condition of 'if' has type 'float'", 2, 7},
    {SM "  return true + s;\n}", FA4_ERR_MOD_CHECK, "operator '+' does not take 'bool' operands", 2, 15},
    {SM "  return s ? 1.0f : 0.0f;\n}", FA4_ERR_MOD_CHECK, "the condition of '?:' has type 'float'", 2, 10},
    {SM "  return q > 0 ? true : 1.0f;\n}", FA4_ERR_MOD_CHECK, "the branches of '?:' have different types 'bool' and 'float'", 2, 16},
    {SM "  return (float)(1 & true);\n}", FA4_ERR_MOD_CHECK, "operator '&' needs int operands, not 'bool'; use '&&'", 2, 20},
    {SM "  return (float)(s == true);\n}", FA4_ERR_MOD_CHECK, "cannot compare 'float' with 'bool'", 2, 20},
    {SM "  return (float)-true;\n}", FA4_ERR_MOD_CHECK, "unary '-' does not take a 'bool' operand", 2, 17},
    {SM "  return (float)~s;\n}", FA4_ERR_MOD_CHECK, "unary '~' does not take a 'float' operand", 2, 17},
    {SM "  return (float)!s;\n}", FA4_ERR_MOD_CHECK, "the operand of '!' has type 'float'", 2, 18},
    {SM "  return (float)(s && q);\n}", FA4_ERR_MOD_CHECK, "the left operand of the logical operator has type 'float'", 2, 18},
    {SM "  return expf(s, s);\n}", FA4_ERR_MOD_CHECK, "'expf' takes 1 argument, 2 given", 2, 10},
    {SM "  return expf(q > kv);\n}", FA4_ERR_MOD_CHECK, "argument 1 of 'expf' is 'bool'", 2, 17},
    {SM "  const float c = 1.0f;\n  c = 2.0f;\n  return s;\n}", FA4_ERR_MOD_CHECK, "cannot assign to const 'c'", 3, 3},
    {SM "  { float t = 1.0f; }\n  return t;\n}", FA4_ERR_MOD_CHECK, "unknown identifier 't'", 3, 10},
    {SM "  double x = 1.0;\n  return s;\n}", FA4_ERR_MOD_CHECK, "type 'double' is not supported", 2, 3},
    {SM "  return (double)s;\n}", FA4_ERR_MOD_CHECK, "cast to 'double' is not supported", 2, 11},
    {SM "  return float(q);\n}", FA4_ERR_MOD_SYNTAX, "casts are written '(float)x'", 2, 10},
    {"float f(float x, int k) { return x; }\n" SM "  return f(s);\n}", FA4_ERR_MOD_CHECK, "'f' takes 2 arguments, 1 given", 3, 10},
    {"float f(int k) { return 1.0f; }\n" SM "  return f(s);\n}", FA4_ERR_MOD_CHECK, "implicit conversion from 'float' to 'int' in a function argument", 3, 12},
    /* lexer */
    {SM "  return s + \"x\";\n}", FA4_ERR_MOD_SYNTAX, "string literals are not allowed", 2, 14},
    {SM "  return s + 'a';\n}", FA4_ERR_MOD_SYNTAX, "character literals are not allowed", 2, 14},
    {SM "  return s; /* never closed\n}", FA4_ERR_MOD_SYNTAX, "unterminated comment", 2, 13},
    {SM "  return s @ 2;\n}", FA4_ERR_MOD_SYNTAX, "stray '@' in mod source", 2, 12},
    {SM "  return s; // caf\xc3\xa9\n  return \xc3\xa9;\n}", FA4_ERR_MOD_SYNTAX, "stray byte 0xc3", 3, 10},
    {SM "  return (float)3000000000;\n}", FA4_ERR_MOD_SYNTAX, "integer literal '3000000000' does not fit in int", 2, 17},
    {SM "  return s * 1.5e;\n}", FA4_ERR_MOD_SYNTAX, "exponent has no digits", 2, 14},
    {SM "  return (float)10u;\n}", FA4_ERR_MOD_SYNTAX, "invalid suffix 'u' on number", 2, 17},
    {SM "  return s * 1e39;\n}", FA4_ERR_MOD_SYNTAX, "out of the range of float", 2, 14},
    {SM "  return s * 0x;\n}", FA4_ERR_MOD_SYNTAX, "hexadecimal literal", 2, 14},
    {SM "  return s * (float)010;\n}", FA4_ERR_MOD_SYNTAX, "octal literals are not supported", 2, 21},
    /* syntax */
    {SM "  retrun s;\n}", FA4_ERR_MOD_SYNTAX, "unknown statement 'retrun'; did you mean 'return'?", 2, 3},
    {SM "  flaot y = s;\n  return y;\n}", FA4_ERR_MOD_SYNTAX, "unknown statement 'flaot'; did you mean 'float'?", 2, 3},
    {"flaot score_mod(float s, int b, int h, int q, int kv) {\n  return s;\n}", FA4_ERR_MOD_CHECK,
     "unknown type 'flaot'; did you mean 'float'?", 1, 1},
    {SM "  return s +;\n}", FA4_ERR_MOD_SYNTAX, "expected an expression before ';'", 2, 13},
    {SM "  return (s;\n}", FA4_ERR_MOD_SYNTAX, "expected ')' before ';'", 2, 12},
    {"float score_mod(float s, int b, int h, int q, int kv {\n  return s;\n}", FA4_ERR_MOD_SYNTAX,
     "expected ')' after the parameters", 1, 54},
};

static void rejected_sources(void **state)
{
    (void)state;
    size_t n = sizeof cases / sizeof cases[0];
    int fails = 0;
    for (size_t i = 0; i < n; i++) {
        const rejected *c = &cases[i];
        fa4__mod *m = (fa4__mod *)1;
        fa4__diag d;
        fa4_status st = fa4__mod_parse(c->src, strlen(c->src), "test", &m, &d);
        int ok = st == c->status && m == NULL && d.status == st && strstr(d.message, c->msg) &&
                 d.line == c->line && d.col == c->col;
        if (ok) {
            /* the rendering carries name:line:col, the message, and a caret line */
            char head[64];
            snprintf(head, sizeof head, ":%d:%d: error: ", c->line, c->col);
            ok = strstr(d.rendered, head) && strstr(d.rendered, c->msg) &&
                 strchr(d.rendered, '^');
        }
        if (!ok) {
            fails++;
            fprintf(stderr, "case %zu: want %d '%s' at %d:%d; got %d at %d:%d\n%s\n---\n", i,
                    (int)c->status, c->msg, c->line, c->col, (int)st, d.line, d.col,
                    d.rendered);
        }
        if (st == FA4_OK)
            fa4__mod_free(m);
    }
    assert_true(n >= 60);
    assert_int_equal(fails, 0);
}

/* The rendering: source line and a caret with tildes under the whole token. */
static void caret_rendering(void **state)
{
    (void)state;
    static const char src[] =
        "/* ALiBi */\n"
        "float score_mod(float score, int b, int h, int q_idx, int kv_idx, const float *slopes) {\n"
        "    return score + slope[h] * (float)(kv_idx - q_idx);\n"
        "}\n";
    fa4__mod *m;
    fa4__diag d;
    assert_int_equal(fa4__mod_parse(src, sizeof src - 1, "alibi.mod", &m, &d), FA4_ERR_MOD_CHECK);
    assert_string_equal(d.rendered,
                        "score_mod:3:20: error: unknown identifier 'slope'; did you mean "
                        "'slopes'?\n"
                        "    return score + slope[h] * (float)(kv_idx - q_idx);\n"
                        "                   ^~~~~");
    /* tabs in the source line are kept so the caret lines up */
    static const char tabbed[] = "bool mask_mod(int b, int h, int q, int kv) {\n\treturn qq;\n}";
    assert_int_equal(fa4__mod_parse(tabbed, sizeof tabbed - 1, "t", &m, &d), FA4_ERR_MOD_CHECK);
    assert_non_null(strstr(d.rendered, "\n\treturn qq;\n\t       ^~"));
    /* errors outside any function carry the source name */
    static const char glob[] = "int g;\n";
    assert_int_equal(fa4__mod_parse(glob, sizeof glob - 1, "glob.mod", &m, &d), FA4_ERR_MOD_CHECK);
    assert_non_null(strstr(d.rendered, "glob.mod:1:5: error: global variables"));
}

static void limits(void **state)
{
    (void)state;
    fa4__mod *m;
    fa4__diag d;
    /* source size */
    size_t big = FA4__MOD_MAX_SOURCE + 1;
    char *src = malloc(big + 1);
    memset(src, ' ', big);
    src[big] = '\0';
    assert_int_equal(fa4__mod_parse(src, big, "big", &m, &d), FA4_ERR_MOD_LIMIT);
    assert_non_null(strstr(d.message, "the limit is 65536 bytes"));
    free(src);
    /* nesting: parentheses */
    char buf[8192];
    int k = snprintf(buf, sizeof buf, SM "  return ");
    for (int i = 0; i < 70; i++)
        buf[k++] = '(';
    buf[k++] = 's';
    for (int i = 0; i < 70; i++)
        buf[k++] = ')';
    k += snprintf(buf + k, sizeof buf - (size_t)k, ";\n}");
    assert_int_equal(fa4__mod_parse(buf, (size_t)k, "deep", &m, &d), FA4_ERR_MOD_LIMIT);
    assert_non_null(strstr(d.message, "nesting is deeper than 64 levels"));
    assert_int_equal(d.line, 2);
    /* nesting: blocks */
    k = snprintf(buf, sizeof buf, SM);
    for (int i = 0; i < 70; i++)
        buf[k++] = '{';
    for (int i = 0; i < 70; i++)
        buf[k++] = '}';
    k += snprintf(buf + k, sizeof buf - (size_t)k, "\n  return s;\n}");
    assert_int_equal(fa4__mod_parse(buf, (size_t)k, "deep", &m, &d), FA4_ERR_MOD_LIMIT);
    /* 60 nested parentheses are fine */
    k = snprintf(buf, sizeof buf, SM "  return ");
    for (int i = 0; i < 60; i++)
        buf[k++] = '(';
    buf[k++] = 's';
    for (int i = 0; i < 60; i++)
        buf[k++] = ')';
    k += snprintf(buf + k, sizeof buf - (size_t)k, ";\n}");
    assert_int_equal(fa4__mod_parse(buf, (size_t)k, "ok", &m, &d), FA4_OK);
    fa4__mod_free(m);
    /* long operator chains */
    k = snprintf(buf, sizeof buf, SM "  return s");
    for (int i = 0; i < 300; i++)
        k += snprintf(buf + k, sizeof buf - (size_t)k, " + s");
    k += snprintf(buf + k, sizeof buf - (size_t)k, ";\n}");
    assert_int_equal(fa4__mod_parse(buf, (size_t)k, "chain", &m, &d), FA4_ERR_MOD_LIMIT);
    assert_non_null(strstr(d.message, "too deeply nested"));
    /* aux count */
    k = snprintf(buf, sizeof buf, "float score_mod(float s, int b, int h, int q, int kv");
    for (int i = 0; i < FA4__MOD_MAX_AUX + 1; i++)
        k += snprintf(buf + k, sizeof buf - (size_t)k, ", int a%d", i);
    k += snprintf(buf + k, sizeof buf - (size_t)k, ") {\n  return s;\n}");
    assert_int_equal(fa4__mod_parse(buf, (size_t)k, "aux", &m, &d), FA4_ERR_MOD_LIMIT);
    assert_non_null(strstr(d.message, "too many aux parameters: at most 16"));
    assert_int_equal(d.line, 1);
    /* sibling blocks may reuse a name; inner blocks may shadow */
    static const char scopes[] = SM "  { float t = 1.0f; s = s + t; }\n  { int t = 2; if (t > 1) { "
                                    "float s2 = 0.5f; { float t2 = s2; s = s * t2; } } }\n"
                                    "  float t = 3.0f;\n  return s + t;\n}";
    assert_int_equal(fa4__mod_parse(scopes, sizeof scopes - 1, "scopes", &m, &d), FA4_OK);
    double v;
    assert_int_equal(fa4__mod_eval_score(m, 1.0, 0, 0, 0, 0, NULL, 0, &v, NULL, &d), FA4_OK);
    assert_true(v == (1.0 + 1.0) * 0.5 + 3.0);
    fa4__mod_free(m);
    /* deep expressions along a long chain of helpers: bounded for the evaluator's stack */
    for (int helpers = 8; helpers <= 20; helpers += 12) {
        size_t cap = 65536;
        char *chain_src = malloc(cap);
        int n = snprintf(chain_src, cap, "float f0(float x) { return x; }\n");
        for (int i = 1; i < helpers; i++) {
            n += snprintf(chain_src + n, cap - (size_t)n, "float f%d(float x) { return f%d(x)", i, i - 1);
            for (int j = 0; j < 200; j++)
                n += snprintf(chain_src + n, cap - (size_t)n, "+x");
            n += snprintf(chain_src + n, cap - (size_t)n, "; }\n");
        }
        n += snprintf(chain_src + n, cap - (size_t)n, SM "  return f%d(s);\n}", helpers - 1);
        fa4_status st = fa4__mod_parse(chain_src, (size_t)n, "chain", &m, &d);
        if (helpers == 8) {
            assert_int_equal(st, FA4_OK);
            assert_int_equal(fa4__mod_eval_score(m, 1.0, 0, 0, 0, 0, NULL, 0, &v, NULL, &d), FA4_OK);
            assert_true(v == 1.0 + 7 * 200);
            fa4__mod_free(m);
        } else {
            assert_int_equal(st, FA4_ERR_MOD_LIMIT);
            assert_non_null(strstr(d.message, "along this chain of helper calls"));
        }
        free(chain_src);
    }
    /* exponential helper expansion */
    k = 0;
    k += snprintf(buf + k, sizeof buf - (size_t)k, "float f0(float x) { return x + 1.0f; }\n");
    for (int i = 1; i < 40; i++)
        k += snprintf(buf + k, sizeof buf - (size_t)k,
                      "float f%d(float x) { return f%d(x) + f%d(x); }\n", i, i - 1, i - 1);
    k += snprintf(buf + k, sizeof buf - (size_t)k, SM "  return f39(s);\n}");
    assert_int_equal(fa4__mod_parse(buf, (size_t)k, "blowup", &m, &d), FA4_ERR_MOD_LIMIT);
    assert_non_null(strstr(d.message, "once its helpers are inlined"));
}

static void trainable_rules(void **state)
{
    (void)state;
    static const char src[] =
        "float score_mod(float s, int b, int h, int q, int kv, const float *bias, int n,\n"
        "                const int32 *ids, const float *unused) {\n"
        "  return s + bias[h] + (float)ids[q];\n}\n"
        "bool mask_mod(int b, int h, int q, int kv, const float *mk) {\n  return mk[q] > 0.0f;\n}";
    fa4__mod *m = mt_parse(src, sizeof src - 1, "t");
    assert_non_null(m);
    fa4__diag d;
    const char *one[1];
    one[0] = "bias";
    assert_int_equal(fa4__mod_set_trainable(m, one, 1, &d), FA4_OK);
    assert_int_equal(fa4__mod_aux(m, 0)->trainable, 1);
    one[0] = "nope";
    assert_int_equal(fa4__mod_set_trainable(m, one, 1, &d), FA4_ERR_AUX);
    assert_non_null(strstr(d.message, "'nope' is not a parameter"));
    one[0] = "n";
    assert_int_equal(fa4__mod_set_trainable(m, one, 1, &d), FA4_ERR_AUX);
    assert_non_null(strstr(d.message, "scalar"));
    one[0] = "ids";
    assert_int_equal(fa4__mod_set_trainable(m, one, 1, &d), FA4_ERR_AUX);
    assert_non_null(strstr(d.message, "integers"));
    one[0] = "unused";
    assert_int_equal(fa4__mod_set_trainable(m, one, 1, &d), FA4_ERR_AUX);
    assert_non_null(strstr(d.message, "not read by score_mod"));
    one[0] = "mk";
    assert_int_equal(fa4__mod_set_trainable(m, one, 1, &d), FA4_ERR_AUX);
    /* a failed call leaves the previous set; an empty list clears it */
    assert_int_equal(fa4__mod_aux(m, 0)->trainable, 1);
    assert_int_equal(fa4__mod_set_trainable(m, NULL, 0, &d), FA4_OK);
    assert_int_equal(fa4__mod_aux(m, 0)->trainable, 0);
    /* the aux list: order of declaration, who declares it */
    assert_int_equal(fa4__mod_num_aux(m), 5);
    assert_string_equal(fa4__mod_aux(m, 4)->name, "mk");
    assert_int_equal(fa4__mod_aux(m, 4)->used_by_mask, 1);
    assert_int_equal(fa4__mod_aux(m, 4)->used_by_score, 0);
    assert_int_equal(fa4__mod_aux(m, 1)->dtype, FA4_DTYPE_INT32);
    assert_int_equal(fa4__mod_aux(m, 1)->is_tensor, 0);
    assert_null(fa4__mod_aux(m, 5));
    assert_null(fa4__mod_aux(m, -1));
    fa4__mod_free(m);
    /* at most FA4__MOD_MAX_GRAD_SITES reads of trainable tensors */
    char src2[8192];
    int k = snprintf(src2, sizeof src2,
                     "float score_mod(float s, int b, int h, int q, int kv, const float *w) {\n"
                     "  return s");
    for (int i = 0; i < FA4__MOD_MAX_GRAD_SITES + 1; i++)
        k += snprintf(src2 + k, sizeof src2 - (size_t)k, "%s+ w[%d]", i % 8 ? " " : "\n    ", i);
    k += snprintf(src2 + k, sizeof src2 - (size_t)k, ";\n}\n");
    m = mt_parse(src2, (size_t)k, "sites");
    assert_non_null(m);
    one[0] = "w";
    assert_int_equal(fa4__mod_set_trainable(m, one, 1, &d), FA4_ERR_AUX);
    assert_non_null(strstr(d.message, "read at 65 places"));
    fa4__mod_free(m);
}

static void bad_arguments(void **state)
{
    (void)state;
    fa4__mod *m = (fa4__mod *)1;
    fa4__diag d;
    assert_int_equal(fa4__mod_parse(NULL, 5, "x", &m, &d), FA4_ERR_INVALID_ARGUMENT);
    assert_null(m);
    assert_int_equal(fa4__mod_parse("", 0, NULL, NULL, &d), FA4_ERR_INVALID_ARGUMENT);
    /* empty source: no mod */
    assert_int_equal(fa4__mod_parse("", 0, NULL, &m, &d), FA4_ERR_MOD_CHECK);
    assert_int_equal(fa4__mod_parse(" /* */ ", 7, NULL, &m, NULL), FA4_ERR_MOD_CHECK);
    /* the source need not be NUL-terminated: only len bytes are read */
    static const char src[] = "bool mask_mod(int b, int h, int q, int kv) { return true; }XXXX";
    assert_int_equal(fa4__mod_parse(src, sizeof src - 5, NULL, &m, &d), FA4_OK);
    fa4__mod_free(m);
    fa4__mod_free(NULL);
    assert_int_equal(fa4__mod_has_score(NULL), 0);
    assert_int_equal(fa4__mod_num_aux(NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rejected_sources),
        cmocka_unit_test(caret_rendering),
        cmocka_unit_test(limits),
        cmocka_unit_test(trainable_rules),
        cmocka_unit_test(bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
