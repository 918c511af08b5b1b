/*
 * emit_prelude.c - the fixed parts of the generated "fa4_mod.cuh": the text buffer with its #line
 * bookkeeping, the interface macros, the fa4_aux struct (natural C layout, as src/jit/aux.c lays it
 * out with libffi), bounds-checked aux accessors (bf16 by bit shift, half by `cvt.f32.f16`, no
 * headers), int32 helpers with the evaluator's defined semantics, and dual-number arithmetic and
 * builtins for the derivative (only the builtins score_mod uses).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit_internal.h"
#include "mathfn.h"

/* ------------------------------------------------------------------------------------ buffer */
void fa4__emitter_init(fa4__emitter *E, const fa4__mod *m, const char *source_name)
{
    memset(E, 0, sizeof *E);
    E->m = m;
    E->out_line = 1;
    const char *s = source_name && source_name[0] ? source_name : m->name;
    size_t k = 0;
    for (; *s && k < sizeof E->source - 1; s++) {
        unsigned char c = (unsigned char)*s;
        E->source[k++] = (c < 32 || c >= 127 || c == '"' || c == '\\') ? '_' : (char)c;
    }
    E->source[k] = '\0';
}

void fa4__out(fa4__emitter *E, const char *fmt, ...)
{
    if (E->failed)
        return;
    va_list ap;
    va_start(ap, fmt);
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        va_end(ap2);
        E->failed = 1;
        return;
    }
    if (E->len + (size_t)n + 1 > E->cap) {
        size_t ncap = E->cap ? E->cap * 2 : 16384;
        while (ncap < E->len + (size_t)n + 1)
            ncap *= 2;
        char *nb = realloc(E->buf, ncap);
        if (!nb) {
            va_end(ap2);
            E->failed = 1;
            return;
        }
        E->buf = nb;
        E->cap = ncap;
    }
    vsnprintf(E->buf + E->len, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    for (int i = 0; i < n; i++)
        if (E->buf[E->len + (size_t)i] == '\n') {
            E->out_line++;
            if (E->mapped)
                E->map_line++;
        }
    E->len += (size_t)n;
}

void fa4__line_directive(fa4__emitter *E, int line)
{
    if (E->mapped && E->map_line == line)
        return;
    fa4__out(E, "#line %d \"%s\"\n", line, E->source);
    E->mapped = 1;
    E->map_line = line;
}

void fa4__reset_line(fa4__emitter *E)
{
    if (!E->mapped)
        return;
    E->mapped = 0;
    fa4__out(E, "#line %d \"fa4_mod.cuh\"\n", E->out_line + 1);
}

char *fa4__emitter_finish(fa4__emitter *E)
{
    if (E->failed || !E->buf) {
        free(E->buf);
        return NULL;
    }
    return E->buf;
}

/* ---------------------------------------------------------------------------------------- math */
/* One function of mathfn.h (a single line once stringified), laid out one statement a line. */
static void emit_math_text(fa4__emitter *E, const char *text)
{
    int depth = 0, bol = 1;
    for (const char *c = text; *c; c++) {
        if (bol && *c == ' ')
            continue;
        if (*c == '{' && !bol) /* a brace opens its own line */
            fa4__out(E, "\n%*s", 4 * depth, "");
        if (*c == '}')
            depth--;
        if (bol)
            fa4__out(E, "%*s", 4 * depth, "");
        bol = 0;
        if (*c == '{' || *c == ';' || *c == '}') {
            fa4__out(E, "%c\n", *c);
            bol = 1;
            depth += *c == '{';
        } else if (!(*c == ' ' && c[1] == '{')) {
            fa4__out(E, "%c", *c);
        }
    }
}

/* fa4_fdiv, fa4_expf, fa4_exp2f, fa4_logf, fa4_log2f, fa4_tanhf: mathfn.h's forms by default, the
 * bare hardware approximations under FA4_FAST_MATH; fa4_tanhf's corrected quotient under
 * FA4_TANHF_CORRECTED (a kernel source may define it before including the header: A/B runs). */
static void emit_math(fa4__emitter *E)
{
    fa4__out(
        E,
        "\n// Float math of the mod (division, expf, exp2f, logf, log2f, tanhf). By default\n"
        "// straight-line forms on the PTX approximations, no slow paths; worst errors:\n"
        "//   fa4_fdiv  <= 1 ulp (<= 4.5 ulps for |a| < 2^-102; |b| <= 2^-128 acts as 0), exact where\n"
        "//             a / b is a float\n"
        "//   fa4_fdiv_u < 2 ulps for |b| in [2^-126, 2^126] (a divisor the same at every position)\n"
        "//   fa4_expf  <= 3.4 ulps (2^-22.5 relative + 1/2 ulp)   fa4_exp2f <= 2.9 ulps\n"
        "//   fa4_logf  <= 2 ulps   fa4_log2f <= 2 ulps (exact at powers of 2)\n"
        "//   fa4_tanhf <= 6.75 ulps (|result| <= 1, exactly 1 from |x| = 10.25; with\n"
        "//             FA4_TANHF_CORRECTED 1 <= 5.25 ulps, 1 from 9.5, two FMAs more)\n"
        "// Results below 2^-126 may flush to 0. Source: src/jit/mod/mathfn.h, bounds checked by\n"
        "// tests/mod/test_mod_mathfn.c. FA4_FAST_MATH: the bare approximations (tanh.approx\n"
        "// 2^-10.99 relative; lg2.approx 2^-22.6 absolute in log2; ex2.approx of x log2(e),\n"
        "// about 2 + |x| ulps; div.approx 2 ulps for |b| in [2^-126, 2^126]).\n"
        "__device__ __forceinline__ float fa4_rcp_approx(float x)\n{\n    float y;\n"
        "    asm(\"rcp.approx.ftz.f32 %%0, %%1;\" : \"=f\"(y) : \"f\"(x));\n    return y;\n}\n"
        "__device__ __forceinline__ float fa4_rcp_div(float x) { return __fdividef(1.0f, x); }\n"
        "__device__ __forceinline__ float fa4_ex2_approx(float x)\n{\n    float y;\n"
        "    asm(\"ex2.approx.ftz.f32 %%0, %%1;\" : \"=f\"(y) : \"f\"(x));\n    return y;\n}\n"
        "// copysign(min(|x|, c), x) for c > 0, NaN stays NaN: one instruction from sm_86 on\n"
        "__device__ __forceinline__ float fa4_clamp_xorsign(float x, float c)\n{\n    float y;\n"
        "#if __CUDA_ARCH__ >= 860\n"
        "    asm(\"min.NaN.xorsign.abs.f32 %%0, %%1, %%2;\" : \"=f\"(y) : \"f\"(x), \"f\"(c));\n"
        "#else\n"
        "    asm(\"min.NaN.f32 %%0, %%1, %%2;\" : \"=f\"(y) : \"f\"(fabsf(x)), \"f\"(c));\n"
        "    y = copysignf(y, x);\n"
        "#endif\n"
        "    return y;\n}\n"
        "#if FA4_FAST_MATH\n"
        "__device__ __forceinline__ float fa4_lg2_approx(float x)\n{\n    float y;\n"
        "    asm(\"lg2.approx.ftz.f32 %%0, %%1;\" : \"=f\"(y) : \"f\"(x));\n    return y;\n}\n"
        "__device__ __forceinline__ float fa4_tanhf(float x)\n{\n    float y;\n"
        "    asm(\"tanh.approx.f32 %%0, %%1;\" : \"=f\"(y) : \"f\"(x));\n    return y;\n}\n"
        "__device__ __forceinline__ float fa4_expf(float x) { return fa4_ex2_approx(x * "
        "1.44269502f); }\n"
        "__device__ __forceinline__ float fa4_exp2f(float x) { return fa4_ex2_approx(x); }\n"
        "__device__ __forceinline__ float fa4_logf(float x) { return fa4_lg2_approx(x) * "
        "0.693147182f; }\n"
        "__device__ __forceinline__ float fa4_log2f(float x) { return fa4_lg2_approx(x); }\n"
        "__device__ __forceinline__ float fa4_fdiv(float a, float b) { return __fdividef(a, b); "
        "}\n"
        "#else\n"
        "__device__ __forceinline__ int fa4_as_int(float x) { return __float_as_int(x); }\n"
        "__device__ __forceinline__ float fa4_as_float(int i) { return __int_as_float(i); }\n");
    static const char *const texts[] = {
        FA4__MATH_TEXT(FA4__MATHFN_FDIV),  FA4__MATH_TEXT(FA4__MATHFN_EXPF),
        FA4__MATH_TEXT(FA4__MATHFN_EXP2F), FA4__MATH_TEXT(FA4__MATHFN_LOG_CORE),
        FA4__MATH_TEXT(FA4__MATHFN_LOGF),  FA4__MATH_TEXT(FA4__MATHFN_LOG2F),
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        emit_math_text(E, texts[i]);
    fa4__out(E, "#ifndef FA4_TANHF_CORRECTED\n#define FA4_TANHF_CORRECTED 0\n#endif\n#if FA4_TANHF_CORRECTED\n");
    emit_math_text(E, FA4__MATH_TEXT(FA4__MATHFN_TANHF_CORRECTED));
    fa4__out(E, "#else\n");
    emit_math_text(E, FA4__MATH_TEXT(FA4__MATHFN_TANHF));
    fa4__out(E, "#endif\n#endif\n");
    /* the same with or without FA4_FAST_MATH: already as cheap as __fdividef per score */
    emit_math_text(E, FA4__MATH_TEXT(FA4__MATHFN_RCP_U));
    emit_math_text(E, FA4__MATH_TEXT(FA4__MATHFN_FDIV_U));
}

/* ------------------------------------------------------------------------------------ prelude */
static const char *member_type(fa4_dtype t)
{
    switch (t) {
    case FA4_DTYPE_FP32: return "float";
    case FA4_DTYPE_BF16:
    case FA4_DTYPE_FP16: return "unsigned short";
    case FA4_DTYPE_INT8: return "signed char";
    case FA4_DTYPE_UINT8:
    case FA4_DTYPE_BOOL: return "unsigned char";
    case FA4_DTYPE_INT16: return "short";
    case FA4_DTYPE_INT32: return "int";
    case FA4_DTYPE_INT64: return "long long";
    default: return "int";
    }
}

static const char *dtype_word(fa4_dtype t)
{
    switch (t) {
    case FA4_DTYPE_FP32: return "float";
    case FA4_DTYPE_BF16: return "bf16";
    case FA4_DTYPE_FP16: return "half";
    case FA4_DTYPE_INT8: return "int8";
    case FA4_DTYPE_UINT8: return "uint8";
    case FA4_DTYPE_BOOL: return "bool";
    case FA4_DTYPE_INT16: return "int16";
    case FA4_DTYPE_INT32: return "int32";
    case FA4_DTYPE_INT64: return "int64";
    default: return "?";
    }
}

static int trainable_any(const fa4__mod *m)
{
    for (int i = 0; i < m->naux; i++)
        if (m->aux[i].trainable)
            return 1;
    return 0;
}

void fa4__emit_prelude(fa4__emitter *E, int checked)
{
    const fa4__mod *m = E->m;
    fa4__out(E, "// fa4_mod.cuh - generated by fa4jit from \"%s\"; do not edit.\n", E->source);
    fa4__out(E, "// score_mod: %s; mask_mod: %s; aux:", m->score ? "yes" : "no (identity)",
             m->mask ? "yes" : "no (all pairs attend)");
    if (!m->naux)
        fa4__out(E, " none");
    for (int i = 0; i < m->naux; i++) {
        const fa4__aux_decl *a = &m->aux[i];
        if (a->is_tensor)
            fa4__out(E, "%s const %s *%s%s", i ? "," : "", dtype_word(a->dtype), a->name,
                     a->trainable ? " (trainable)" : "");
        else
            fa4__out(E, "%s %s %s", i ? "," : "", dtype_word(a->dtype), a->name);
    }
    fa4__out(E,
             "\n#define FA4_HAS_SCORE_MOD %d\n#define FA4_HAS_MASK_MOD %d\n"
             "#define FA4_NUM_AUX %d\n#define FA4_HAS_TRAINABLE_AUX %d\n"
             "#define FA4_MASK_MOD_GATHERS %d\n",
             m->score ? 1 : 0, m->mask ? 1 : 0, m->naux, trainable_any(m), fa4__mask_gathers(m));
    fa4__out(E, "#ifndef FA4_CHECKED\n#define FA4_CHECKED %d\n#endif\n", checked ? 1 : 0);
    fa4__out(E, "#ifndef FA4_CHECKED_DEFERRED\n#define FA4_CHECKED_DEFERRED 0\n#endif\n"
                "#ifndef FA4_FAST_MATH\n#define FA4_FAST_MATH 0\n#endif\n");

    fa4__out(E, "\n// Aux parameters in declaration order, natural C layout.\nstruct fa4_aux {\n");
    if (!m->naux)
        fa4__out(E, "    int fa4_unused_;\n");
    for (int i = 0; i < m->naux; i++) {
        const fa4__aux_decl *a = &m->aux[i];
        if (a->is_tensor) {
            fa4__out(E, "    const %s *%s;\n    long long %s_len;\n", member_type(a->dtype),
                     a->name, a->name);
            if (a->trainable)
                fa4__out(E, "    float *%s_grad;\n", a->name);
        } else {
            fa4__out(E, "    %s %s;\n",
                     a->dtype == FA4_DTYPE_FP32   ? "float"
                     : a->dtype == FA4_DTYPE_BOOL ? "bool"
                                                  : "int",
                     a->name);
        }
    }
    fa4__out(E, "};\n");

    fa4__out(
        E, "\n// int32 arithmetic as the CPU evaluator defines it: wrap-around, x / 0 == 0,\n"
           "// x %% 0 == 0, INT_MIN / -1 == INT_MIN, shift counts taken mod 32.\n"
           "__device__ __forceinline__ int fa4_iadd(int a, int b) { return (int)((unsigned)a + "
           "(unsigned)b); }\n"
           "__device__ __forceinline__ int fa4_isub(int a, int b) { return (int)((unsigned)a - "
           "(unsigned)b); }\n"
           "__device__ __forceinline__ int fa4_imul(int a, int b) { return (int)((unsigned)a * "
           "(unsigned)b); }\n"
           "__device__ __forceinline__ int fa4_ineg(int a) { return (int)(0u - (unsigned)a); }\n"
           "// The quotient is taken by a divisor that is never 0 or -1, then selected: no branch\n"
           "// around the division (NVVM keeps one around an a / b that may divide by 0); the\n"
           "// remainder comes from that quotient, so a / b and a %% b in one mod divide once.\n"
           "__device__ __forceinline__ int fa4_idiv(int a, int b) { const int q = a / (b == 0 || b "
           "== -1 ? 1 : b); return b == 0 ? 0 : b == -1 ? fa4_ineg(a) : q; }\n"
           "__device__ __forceinline__ int fa4_imod(int a, int b) { return b == 0 ? 0 : fa4_isub(a, "
           "fa4_imul(fa4_idiv(a, b), b)); }\n"
           "// fa4_idiv_u / fa4_imod_u: the same results, for a divisor b that is the same at every\n"
           "// position: with sh = floor(log2 |b|) and m = floor((2^(32+sh) - 1) / |b|) (< 2^32;\n"
           "// 2^32 - 1 for a power of 2; 0 for b == 0), |a| / |b| == floor(m (|a| + 1) / 2^(32+sh))\n"
           "// for every |a| <= 2^31 (round-down method with increment). m and sh depend on b alone:\n"
           "// ptxas computes them once where the mod is inlined without branches around it (its 64-bit\n"
           "// division is one PTX instruction), and each position then costs a multiply-high, a shift\n"
           "// and the sign instead of a division's ~16 instructions (and compile time; issue 8).\n"
           "// FA4_IDIV_UNIFORM 0, for programs that call the mods under per-position branches (where\n"
           "// m would be computed at every position): the general forms.\n"
           "#ifndef FA4_IDIV_UNIFORM\n#define FA4_IDIV_UNIFORM 1\n#endif\n"
           "#if FA4_IDIV_UNIFORM\n"
           "__device__ __forceinline__ unsigned fa4_iabs_u(int a) { return a < 0 ? 0u - (unsigned)a : "
           "(unsigned)a; }\n"
           "__device__ __forceinline__ int fa4_idiv_u(int a, int b)\n{\n"
           "    const unsigned ab = fa4_iabs_u(b);\n"
           "    const int sh = 31 - __clz(ab | 1u);\n"
           "    const unsigned m0 = (unsigned)(((1ull << (32 + sh)) - 1ull) / (ab + (ab == 0u)));\n"
           "    const unsigned m = ab == 0u ? 0u : m0;\n"
           "    const unsigned q = __umulhi(m, fa4_iabs_u(a) + 1u) >> sh;\n"
           "    const unsigned s = (unsigned)((a ^ b) >> 31);\n"
           "    return (int)((q ^ s) - s);\n}\n"
           "// the remainder masked to 0 for b == 0 (a select there made NVVM version the code on b)\n"
           "__device__ __forceinline__ int fa4_imod_u(int a, int b)\n{\n"
           "    return (int)((unsigned)fa4_isub(a, fa4_imul(fa4_idiv_u(a, b), b)) & (0u - (unsigned)(b != 0)));\n}\n"
           "#else\n"
           "__device__ __forceinline__ int fa4_idiv_u(int a, int b) { return fa4_idiv(a, b); }\n"
           "__device__ __forceinline__ int fa4_imod_u(int a, int b) { return fa4_imod(a, b); }\n"
           "#endif\n"
           "__device__ __forceinline__ int fa4_ishl(int a, int b) { return (int)((unsigned)a << "
           "(b & 31)); }\n"
           "__device__ __forceinline__ int fa4_ishr(int a, int b) { return a >> (b & 31); }\n"
           "__device__ __forceinline__ int fa4_iabs(int a) { return a < 0 ? fa4_ineg(a) : a; }\n"
           "__device__ __forceinline__ int fa4_imin(int a, int b) { return a < b ? a : b; }\n"
           "__device__ __forceinline__ int fa4_imax(int a, int b) { return a > b ? a : b; }\n"
           "__device__ __forceinline__ int fa4_iclamp(int x, int lo, int hi) { return "
           "fa4_imin(fa4_imax(x, lo), hi); }\n");

    emit_math(E);

    fa4__out(
        E,
        "\n// Checked builds: an out-of-range aux read traps, or with FA4_CHECKED_DEFERRED sets\n"
        "// fa4_aux_oob and fa4_mod_checked_finish() traps once, at the end of the kernel.\n"
        "#if FA4_CHECKED && FA4_CHECKED_DEFERRED\n"
        "__device__ unsigned int fa4_aux_oob;\n"
        "#endif\n"
        "__device__ __forceinline__ void fa4_mod_aux_out_of_range()\n{\n"
        "#if FA4_CHECKED && FA4_CHECKED_DEFERRED\n    fa4_aux_oob = 1u;\n"
        "#elif FA4_CHECKED\n    __trap();\n#endif\n}\n"
        "__device__ __forceinline__ void fa4_mod_checked_finish()\n{\n"
        "#if FA4_CHECKED && FA4_CHECKED_DEFERRED\n"
        "    if (*(volatile unsigned int *)&fa4_aux_oob)\n        __trap();\n#endif\n}\n");

    fa4__out(
        E,
        "\n// Dual numbers for the derivative: v is the value, d its derivative.\n"
        "struct fa4_dual {\n    float v, d;\n};\n"
        "__device__ __forceinline__ fa4_dual fa4_dmake(float v, float d) { fa4_dual r; r.v = v; "
        "r.d = d; return r; }\n"
        "__device__ __forceinline__ fa4_dual fa4_dconst(float v) { return fa4_dmake(v, 0.0f); }\n"
        "// Scalar aux reads of the dual form: values the compiler cannot hoist (emit_cuda.c).\n"
        "__device__ __forceinline__ float fa4_opaque_f(float x) { asm volatile(\"\" : \"+f\"(x)); "
        "return x; }\n"
        "__device__ __forceinline__ int fa4_opaque_i(int x) { asm volatile(\"\" : \"+r\"(x)); "
        "return x; }\n");
}

/* ------------------------------------------------------------------------------ aux reads */
static const char *load_expr(fa4_dtype t, char *buf, size_t cap, const char *name)
{
    switch (t) {
    case FA4_DTYPE_FP32: snprintf(buf, cap, "fa4_a.%s[j]", name); break;
    case FA4_DTYPE_BF16:
        snprintf(buf, cap, "__uint_as_float((unsigned)fa4_a.%s[j] << 16)", name);
        break;
    case FA4_DTYPE_FP16: snprintf(buf, cap, "fa4_half_to_float(fa4_a.%s[j])", name); break;
    case FA4_DTYPE_INT64:
        snprintf(buf, cap, "(int)(unsigned)(unsigned long long)fa4_a.%s[j]", name);
        break;
    case FA4_DTYPE_BOOL: snprintf(buf, cap, "fa4_a.%s[j] != 0", name); break;
    default: snprintf(buf, cap, "(int)fa4_a.%s[j]", name); break;
    }
    return buf;
}

static int is_float_dtype(fa4_dtype t)
{
    return t == FA4_DTYPE_FP32 || t == FA4_DTYPE_BF16 || t == FA4_DTYPE_FP16;
}

void fa4__emit_aux_access(fa4__emitter *E)
{
    const fa4__mod *m = E->m;
    int any_half = 0, any_tensor = 0;
    for (int i = 0; i < m->naux; i++) {
        any_half |= m->aux[i].is_tensor && m->aux[i].dtype == FA4_DTYPE_FP16;
        any_tensor |= m->aux[i].is_tensor;
    }
    if (!any_tensor)
        return;
    fa4__out(E, "\n// Aux tensor reads: indices clamp to [0, len-1] (an empty tensor reads 0);\n"
                "// with FA4_CHECKED an index out of range traps instead. The index is an int, so the\n"
                "// clamp is exact in 32 bits (a bound above INT_MAX never binds).\n");
    if (any_half)
        fa4__out(E, "__device__ __forceinline__ float fa4_half_to_float(unsigned short h)\n{\n"
                    "    float f;\n    asm(\"cvt.f32.f16 %%0, %%1;\" : \"=f\"(f) : \"h\"(h));\n"
                    "    return f;\n}\n");
    for (int i = 0; i < m->naux; i++) {
        const fa4__aux_decl *a = &m->aux[i];
        if (!a->is_tensor)
            continue;
        int fl = is_float_dtype(a->dtype);
        const char *rt = fl ? "float" : a->dtype == FA4_DTYPE_BOOL ? "bool" : "int";
        char ld[160];
        fa4__out(
            E,
            "__device__ __forceinline__ %s fa4_aux_%s(const fa4_aux &fa4_a, int i)\n{\n"
            "    const long long n = fa4_a.%s_len;\n"
            "#if FA4_CHECKED\n    if (i < 0 || (long long)i >= n)\n        "
            "fa4_mod_aux_out_of_range();\n"
            "#endif\n"
            "    if (n <= 0)\n        return %s;\n"
            "    const int hi = n > 2147483647LL ? 2147483647 : (int)(n - 1);\n"
            "    const int j = i < 0 ? 0 : (i > hi ? hi : i);\n"
            "    return %s;\n}\n",
            rt, a->name, a->name,
            fl                           ? "0.0f"
            : a->dtype == FA4_DTYPE_BOOL ? "false"
                                         : "0",
            load_expr(a->dtype, ld, sizeof ld, a->name));
        if (fl && m->score && a->used_by_score)
            fa4__out(E,
                     "__device__ __forceinline__ fa4_dual fa4_daux_%s(const fa4_aux &fa4_a, int i, "
                     "bool seed, long long *at)\n{\n"
                     "    const float v = fa4_aux_%s(fa4_a, i);\n"
                     "    const long long n = fa4_a.%s_len;\n"
                     "    if (at && n > 0) { // the read's clamp, in 32 bits (i is an int)\n"
                     "        const int hi = n > 2147483647LL ? 2147483647 : (int)(n - 1);\n"
                     "        *at = i < 0 ? 0 : (i > hi ? hi : i);\n"
                     "    }\n"
                     "    return fa4_dmake(v, seed ? 1.0f : 0.0f);\n}\n",
                     a->name, a->name, a->name);
    }
}

/* --------------------------------------------------------------------------- dual builtins */
static const struct {
    int id;
    const char *name;
    const char *text; /* body after the signature */
} dual_builtins[] = {
    {BI_EXP, "fa4_d_expf",
     "(fa4_dual x) { const float v = fa4_expf(x.v); return fa4_dmake(v, x.d "
     "!= 0.0f ? v * x.d : 0.0f); }"},
    {BI_EXP2, "fa4_d_exp2f",
     "(fa4_dual x) { const float v = fa4_exp2f(x.v); return fa4_dmake(v, x.d "
     "!= 0.0f ? v * 0.693147181f * x.d : 0.0f); }"},
    {BI_LOG, "fa4_d_logf",
     "(fa4_dual x) { return fa4_dmake(fa4_logf(x.v), x.d != 0.0f ? fa4_fdiv(x.d, x.v) : "
     "0.0f); }"},
    {BI_LOG2, "fa4_d_log2f",
     "(fa4_dual x) { return fa4_dmake(fa4_log2f(x.v), x.d != 0.0f ? "
     "fa4_fdiv(x.d, x.v * 0.693147181f) : 0.0f); }"},
    {BI_LOG1P, "fa4_d_log1pf",
     "(fa4_dual x) { return fa4_dmake(log1pf(x.v), x.d != 0.0f ? "
     "fa4_fdiv(x.d, 1.0f + x.v) : 0.0f); }"},
    {BI_EXPM1, "fa4_d_expm1f",
     "(fa4_dual x) { const float v = expm1f(x.v); return fa4_dmake(v, "
     "x.d != 0.0f ? (v + 1.0f) * x.d : 0.0f); }"},
    {BI_SQRT, "fa4_d_sqrtf",
     "(fa4_dual x) { const float v = sqrtf(x.v); return fa4_dmake(v, x.d "
     "!= 0.0f ? fa4_fdiv(0.5f * x.d, v) : 0.0f); }"},
    {BI_RSQRT, "fa4_d_rsqrtf",
     "(fa4_dual x) { const float v = rsqrtf(x.v); return fa4_dmake(v, "
     "x.d != 0.0f ? -0.5f * v * v * v * x.d : 0.0f); }"},
    {BI_TANH, "fa4_d_tanhf",
     "(fa4_dual x) { const float v = fa4_tanhf(x.v); return fa4_dmake(v, "
     "x.d != 0.0f ? (1.0f - v * v) * x.d : 0.0f); }"},
    {BI_SIN, "fa4_d_sinf",
     "(fa4_dual x) { return fa4_dmake(sinf(x.v), x.d != 0.0f ? cosf(x.v) * "
     "x.d : 0.0f); }"},
    {BI_COS, "fa4_d_cosf",
     "(fa4_dual x) { return fa4_dmake(cosf(x.v), x.d != 0.0f ? -sinf(x.v) "
     "* x.d : 0.0f); }"},
    {BI_FABS, "fa4_d_fabsf",
     "(fa4_dual x) { return fa4_dmake(fabsf(x.v), __float_as_int(x.v) < "
     "0 ? -x.d : x.d); }"},
    {BI_FMIN, "fa4_d_fminf",
     "(fa4_dual a, fa4_dual b) { return (a.v <= b.v || b.v != b.v) ? a : "
     "b; }"},
    {BI_FMAX, "fa4_d_fmaxf",
     "(fa4_dual a, fa4_dual b) { return (a.v >= b.v || b.v != b.v) ? a : "
     "b; }"},
    {BI_FLOOR, "fa4_d_floorf", "(fa4_dual x) { return fa4_dconst(floorf(x.v)); }"},
    {BI_CEIL, "fa4_d_ceilf", "(fa4_dual x) { return fa4_dconst(ceilf(x.v)); }"},
    {BI_ROUND, "fa4_d_roundf", "(fa4_dual x) { return fa4_dconst(roundf(x.v)); }"},
    {BI_TRUNC, "fa4_d_truncf", "(fa4_dual x) { return fa4_dconst(truncf(x.v)); }"},
    {BI_POW, "fa4_d_powf",
     "(fa4_dual a, fa4_dual b)\n{\n    const float v = powf(a.v, b.v);\n"
     "    const float d = (a.d != 0.0f ? b.v * powf(a.v, b.v - 1.0f) * a.d "
     ": 0.0f) +\n                    (b.d != 0.0f ? v * fa4_logf(a.v) * b.d : "
     "0.0f);\n    return fa4_dmake(v, d);\n}"},
    {BI_FMOD, "fa4_d_fmodf",
     "(fa4_dual a, fa4_dual b) { return fa4_dmake(fmodf(a.v, b.v), a.d - "
     "(b.d != 0.0f ? truncf(fa4_fdiv(a.v, b.v)) * b.d : 0.0f)); }"},
    {BI_COPYSIGN, "fa4_d_copysignf",
     "(fa4_dual a, fa4_dual b) { return "
     "fa4_dmake(copysignf(a.v, b.v), (__float_as_int(a.v) ^ "
     "__float_as_int(b.v)) < 0 ? -a.d : a.d); }"},
    {BI_ERF, "fa4_d_erff",
     "(fa4_dual x) { return fa4_dmake(erff(x.v), x.d != 0.0f ? 1.12837917f "
     "* fa4_expf(-x.v * x.v) * x.d : 0.0f); }"},
    {BI_CLAMP, "fa4_d_clamp",
     "(fa4_dual x, fa4_dual lo, fa4_dual hi)\n{\n"
     "    const fa4_dual t = (x.v >= lo.v || lo.v != lo.v) ? x : lo;\n"
     "    return (t.v <= hi.v || hi.v != hi.v) ? t : hi;\n}"},
};

/* generic builtins on floats are their float namesakes */
static int dual_id(int builtin)
{
    return builtin == BI_ABS   ? BI_FABS
           : builtin == BI_MIN ? BI_FMIN
           : builtin == BI_MAX ? BI_FMAX
                               : builtin;
}

const char *fa4__dual_builtin_name(int builtin)
{
    int id = dual_id(builtin);
    for (size_t i = 0; i < sizeof dual_builtins / sizeof dual_builtins[0]; i++)
        if (dual_builtins[i].id == id)
            return dual_builtins[i].name;
    return "fa4_d_unknown";
}

void fa4__emit_dual_prelude(fa4__emitter *E)
{
    uint32_t want = 0;
    for (int b = 1; b < BI_COUNT_; b++)
        if (E->m->builtins_used & (1u << b))
            want |= 1u << dual_id(b);
    fa4__out(E,
             "\n// Dual-number arithmetic; a zero derivative stays zero (no inf * 0).\n"
             "__device__ __forceinline__ fa4_dual fa4_dadd(fa4_dual a, fa4_dual b) { return "
             "fa4_dmake(a.v + b.v, a.d + b.d); }\n"
             "__device__ __forceinline__ fa4_dual fa4_dsub(fa4_dual a, fa4_dual b) { return "
             "fa4_dmake(a.v - b.v, a.d - b.d); }\n"
             "__device__ __forceinline__ fa4_dual fa4_dneg(fa4_dual a) { return "
             "fa4_dmake(-a.v, -a.d); }\n"
             "__device__ __forceinline__ fa4_dual fa4_dmul(fa4_dual a, fa4_dual b)\n{\n"
             "    return fa4_dmake(a.v * b.v, (a.d != 0.0f ? a.d * b.v : 0.0f) + (b.d != 0.0f "
             "? a.v * b.d : 0.0f));\n}\n"
             "__device__ __forceinline__ fa4_dual fa4_ddiv(fa4_dual a, fa4_dual b)\n{\n"
             "    const float v = fa4_fdiv(a.v, b.v);\n"
             "    const float n = a.d - (b.d != 0.0f ? v * b.d : 0.0f);\n"
             "    return fa4_dmake(v, a.d != 0.0f || b.d != 0.0f ? fa4_fdiv(n, b.v) : 0.0f);\n}\n");
    for (size_t i = 0; i < sizeof dual_builtins / sizeof dual_builtins[0]; i++)
        if (want & (1u << dual_builtins[i].id))
            fa4__out(E, "__device__ __forceinline__ fa4_dual %s%s\n", dual_builtins[i].name,
                     dual_builtins[i].text);
}
