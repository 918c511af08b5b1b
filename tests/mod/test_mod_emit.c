/*
 * test_mod_emit.c - the emitted CUDA and the cache-key hash. Golden headers for a few mods are
 * compared byte for byte (FA4_UPDATE_GOLDEN=1 rewrites them under tests/mod/golden/); emission is
 * deterministic; #line directives point at the user's lines; the token hash ignores whitespace and
 * comments but changes with any token or with the trainable set.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "mod_test_util.h"

static char *emit_file(const char *path, const char *name, const char *trainable, int checked)
{
    size_t len;
    char *src = mt_read_file(path, &len);
    assert_non_null(src);
    fa4__mod *m = mt_parse(src, len, name);
    assert_non_null(m);
    if (trainable) {
        fa4__diag d;
        assert_int_equal(fa4__mod_set_trainable(m, &trainable, 1, &d), FA4_OK);
    }
    char *out = fa4__mod_emit_cuda(m, name, checked);
    assert_non_null(out);
    fa4__mod_free(m);
    free(src);
    return out;
}

static void golden(void **state)
{
    (void)state;
    static const struct {
        const char *dir, *name, *trainable;
        int checked;
    } g[] = {
        {"mods", "alibi", NULL, 0},
        {"mods", "t5_bias", "bias", 0},
        {"mods", "document", NULL, 1},
        {"mods", "head_scale", "log_temp", 0},
        {"tests/mod/cases", "branches", "w", 0},
    };
    const char *upd = getenv("FA4_UPDATE_GOLDEN");
    int update = upd && !strcmp(upd, "1");
    int fails = 0;
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) {
        char path[512], gpath[512];
        snprintf(path, sizeof path, "%s/%s/%s.mod", FA4_TEST_SOURCE_DIR, g[i].dir, g[i].name);
        snprintf(gpath, sizeof gpath, "%s/tests/mod/golden/%s.cuh", FA4_TEST_SOURCE_DIR,
                 g[i].name);
        char name[80];
        snprintf(name, sizeof name, "%s.mod", g[i].name);
        char *out = emit_file(path, name, g[i].trainable, g[i].checked);
        if (update) {
            FILE *f = fopen(gpath, "wb");
            assert_non_null(f);
            fputs(out, f);
            fclose(f);
        } else {
            char *want = mt_read_file(gpath, NULL);
            if (!want || strcmp(want, out)) {
                fails++;
                fprintf(stderr, "golden %s differs (FA4_UPDATE_GOLDEN=1 rewrites it after "
                                "review)\n", gpath);
            }
            free(want);
        }
        /* emitting twice gives the same text */
        char *again = emit_file(path, name, g[i].trainable, g[i].checked);
        assert_string_equal(out, again);
        free(again);
        free(out);
    }
    assert_int_equal(fails, 0);
}

/* #line N "name" puts each user statement on its own line number. */
static void line_directives(void **state)
{
    (void)state;
    static const char src[] =
        "// comment line 1\n"
        "\n"
        "float score_mod(float s, int b, int h, int q, int kv) {\n" /* line 3 */
        "    float x = s * 2.0f;\n"                                  /* line 4 */
        "\n"
        "    if (q > kv) {\n"                                        /* line 6 */
        "        x = x + 1.0f;\n"                                    /* line 7 */
        "    }\n"
        "    return x;\n"                                            /* line 9 */
        "}\n";
    fa4__mod *m = mt_parse(src, sizeof src - 1, "user.mod");
    assert_non_null(m);
    char *out = fa4__mod_emit_cuda(m, "user.mod", 0);
    assert_non_null(out);
    /* find each user statement in the forward function and the line it maps to */
    const char *fwd = strstr(out, "fa4_score_mod(float s");
    assert_non_null(fwd);
    static const struct {
        const char *text;
        int line;
    } want[] = {{"float x = s * 2.0f;", 4}, {"if (q > kv)", 6}, {"x = x + 1.0f;", 7},
                {"return x;", 9}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const char *at = strstr(fwd, want[i].text);
        assert_non_null(at);
        /* walk back to the last #line and count the lines in between */
        const char *p = at;
        int lines = 0;
        while (p > out) {
            p--;
            if (*p == '\n') {
                if (!strncmp(p + 1, "#line ", 6))
                    break;
                lines++;
            }
        }
        int n = 0;
        char fname[64];
        assert_int_equal(sscanf(p + 1, "#line %d \"%63[^\"]\"", &n, fname), 2);
        assert_string_equal(fname, "user.mod");
        /* the #line's own line is not counted: the next line is n */
        assert_int_equal(n + lines - 1, want[i].line);
    }
    /* after the user's code the header maps back to itself */
    assert_non_null(strstr(out, "\"fa4_mod.cuh\""));
    assert_null(strstr(out, "#include"));
    assert_non_null(strstr(out, "#define FA4_FAST_MATH 0"));
    free(out);
    fa4__mod_free(m);
}

/* The mod's float math is mathfn.h's text: libdevice's expf, exp2f, logf, log2f, tanhf are never
 * called (every occurrence of those names is a fa4_ form), division goes through fa4_fdiv, and
 * the hardware approximations alone appear only under FA4_FAST_MATH. */
static void math_forms(void **state)
{
    (void)state;
    size_t len = 0;
    char *src = mt_read_file(FA4_TEST_SOURCE_DIR "/tests/mod/cases/builtins.mod", &len);
    fa4__mod *m = mt_parse(src, len, "builtins.mod");
    assert_non_null(m);
    char *out = fa4__mod_emit_cuda(m, "builtins.mod", 0);
    assert_non_null(out);
    static const char *const names[] = {"expf(", "exp2f(", "logf(", "log2f(", "tanhf("};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        for (const char *p = strstr(out, names[i]); p; p = strstr(p + 1, names[i]))
            assert_true(p > out && p[-1] == '_');
    const char *fast = strstr(out, "#if FA4_FAST_MATH\n");
    const char *dflt = fast ? strstr(fast, "#else\n") : NULL;
    /* inside the default forms, tanhf's two: the corrected quotient under FA4_TANHF_CORRECTED */
    const char *tc = dflt ? strstr(dflt, "#ifndef FA4_TANHF_CORRECTED\n#define FA4_TANHF_CORRECTED 0\n#endif\n"
                                         "#if FA4_TANHF_CORRECTED\n")
                          : NULL;
    const char *tc_else = tc ? strstr(tc, "#else\n") : NULL;
    const char *tc_end = tc_else ? strstr(tc_else, "#endif\n") : NULL;
    assert_non_null(tc_end);
    assert_true(strstr(tc_end, "#endif\n#endif\n") == tc_end); /* tanhf's, then the default forms' */
    const char *end = tc_end + strlen("#endif\n");
    const char *corr = strstr(tc, "    return fa4_clamp_xorsign(fmaf(-fmaf(q, y, -n), r, y), 1.0f);\n}\n");
    assert_true(corr && corr < tc_else && strstr(tc, "fa4_clamp_xorsign(x, 0x1.3p+3f)") < tc_else);
    const char *plain = strstr(tc_else, "    return fa4_clamp_xorsign(n * fa4_rcp_approx(q), 1.0f);\n}\n");
    assert_true(plain && plain < tc_end && strstr(tc_else, "fa4_clamp_xorsign(x, 0x1.48p+3f)") < tc_end);
    static const char *const approx[] = {"tanh.approx.f32 %0", "lg2.approx.ftz.f32 %0",
                                         "__fdividef(a, b)"};
    for (size_t i = 0; i < sizeof approx / sizeof approx[0]; i++) {
        const char *p = strstr(out, approx[i]);
        assert_true(p && p > fast && p < dflt);
        assert_null(strstr(p + 1, approx[i]));
    }
    static const char *const lines[] = {
        "float fa4_fdiv(float a, float b)\n{\n    const float ab = fabsf(b);\n",
        "    const float q1 = fmaf(fmaf(-b, q, a), r, q);\n    return q1 != q1 ? q : q1;\n}\n",
        "    return fabsf(t) < 128.0f ? fmaf(y, c * 0x1.62e43p-1f, y) : y;\n}\n",
        "float fa4_log2f(float x)\n{\n    float k;\n"};
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        const char *p = strstr(out, lines[i]);
        assert_true(p && p > dflt && p < end);
    }
    /* the dual forms use the same functions */
    assert_non_null(strstr(out, "fa4_dmake(fa4_logf(x.v), x.d != 0.0f ? fa4_fdiv(x.d, x.v)"));
    assert_non_null(strstr(out, "const float v = fa4_tanhf(x.v);"));
    const char *user = strstr(out, "// ---- the user's functions");
    assert_non_null(user);
    const char *slash = strstr(user, " / "), *wrappers = strstr(user, "\n// d score_mod / d score");
    assert_true(wrappers && slash == strstr(wrappers, " / "));
    free(out);
    fa4__mod_free(m);
    free(src);
}

static void hash_of(const char *src, size_t len, uint8_t out[16])
{
    fa4__mod *m = mt_parse(src, len, "h");
    assert_non_null(m);
    fa4__mod_hash(m, out);
    fa4__mod_free(m);
}

static char *replace_all(const char *s, const char *from, const char *to)
{
    size_t fl = strlen(from), tl = strlen(to), n = 0;
    for (const char *p = strstr(s, from); p; p = strstr(p + fl, from))
        n++;
    char *out = malloc(strlen(s) + n * (tl + 1) + 1), *o = out;
    while (*s) {
        if (!strncmp(s, from, fl)) {
            memcpy(o, to, tl);
            o += tl;
            s += fl;
        } else {
            *o++ = *s++;
        }
    }
    *o = '\0';
    return out;
}

/* Drop the comments (the shipped mods have no strings, so a plain scan is exact). */
static char *strip_comments(const char *s)
{
    char *out = malloc(strlen(s) + 1), *o = out;
    while (*s) {
        if (s[0] == '/' && s[1] == '*') {
            const char *e = strstr(s + 2, "*/");
            s = e ? e + 2 : s + strlen(s);
            *o++ = ' ';
        } else if (s[0] == '/' && s[1] == '/') {
            while (*s && *s != '\n')
                s++;
        } else {
            *o++ = *s++;
        }
    }
    *o = '\0';
    return out;
}

static void hash_stability(void **state)
{
    (void)state;
    char *names[MT_MAX_MODS];
    int n = mt_list_mods(names);
    assert_true(n >= 14);
    uint8_t first[MT_MAX_MODS][16];
    for (int i = 0; i < n; i++) {
        size_t len;
        char *src = mt_read_mod(names[i], &len);
        uint8_t h0[16], h1[16];
        hash_of(src, len, h0);
        memcpy(first[i], h0, 16);
        /* whitespace: spaces become runs of blanks and tabs, newlines after ; and { */
        char *a = replace_all(src, " ", "  \t ");
        char *b2 = replace_all(a, ";", ";\n\n");
        char *c = replace_all(b2, "{", "{\r\n");
        hash_of(c, strlen(c), h1);
        assert_memory_equal(h0, h1, 16);
        /* comments removed, and a new one added */
        char *d = strip_comments(c);
        size_t dl = strlen(d);
        char *e = malloc(dl + 64);
        snprintf(e, dl + 64, "// %s, reformatted\n%s/* end */", names[i], d);
        hash_of(e, strlen(e), h1);
        assert_memory_equal(h0, h1, 16);
        /* one more token (an empty statement): a different hash */
        char *f = replace_all(src, ") {", ") { ;");
        assert_string_not_equal(f, src);
        hash_of(f, strlen(f), h1);
        assert_memory_not_equal(h0, h1, 16);
        free(a);
        free(b2);
        free(c);
        free(d);
        free(e);
        free(f);
        free(src);
    }
    /* distinct mods hash apart */
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            assert_memory_not_equal(first[i], first[j], 16);
    for (int i = 0; i < n; i++)
        free(names[i]);
    /* token spelling matters even where the meaning is the same; the trainable set matters */
    static const char s1[] = "float score_mod(float s, int b, int h, int q, int kv, const float "
                             "*w) { return s * 1.0f + w[h]; }";
    static const char s2[] = "float score_mod(float s, int b, int h, int q, int kv, const float "
                             "*w) { return s * 1.0 + w[h]; }";
    uint8_t h1[16], h2[16], h3[16];
    hash_of(s1, sizeof s1 - 1, h1);
    hash_of(s2, sizeof s2 - 1, h2);
    assert_memory_not_equal(h1, h2, 16);
    fa4__mod *m = mt_parse(s1, sizeof s1 - 1, "t");
    const char *w = "w";
    fa4__diag dg;
    assert_int_equal(fa4__mod_set_trainable(m, &w, 1, &dg), FA4_OK);
    fa4__mod_hash(m, h3);
    assert_memory_not_equal(h1, h3, 16);
    assert_int_equal(fa4__mod_set_trainable(m, NULL, 0, &dg), FA4_OK);
    fa4__mod_hash(m, h3);
    assert_memory_equal(h1, h3, 16);
    fa4__mod_free(m);
}

/* The interface macros and the aux struct layout the host relies on. */
static void interface_shape(void **state)
{
    (void)state;
    static const char src[] =
        "float score_mod(float s, int b, int h, int q, int kv, const bf16 *t, float c, "
        "const int64 *ix) { return s * c + t[ix[q]]; }\n"
        "bool mask_mod(int b, int h, int q, int kv, bool on, float c) { return on; }";
    fa4__mod *m = mt_parse(src, sizeof src - 1, "t");
    assert_non_null(m);
    const char *t = "t";
    fa4__diag dg;
    assert_int_equal(fa4__mod_set_trainable(m, &t, 1, &dg), FA4_OK);
    char *out = fa4__mod_emit_cuda(m, "t", 1);
    assert_non_null(strstr(out, "#define FA4_HAS_SCORE_MOD 1\n#define FA4_HAS_MASK_MOD 1\n"
                                "#define FA4_NUM_AUX 4\n#define FA4_HAS_TRAINABLE_AUX 1\n"));
    assert_non_null(strstr(out, "#define FA4_CHECKED 1"));
    assert_non_null(strstr(out, "struct fa4_aux {\n"
                                "    const unsigned short *t;\n    long long t_len;\n"
                                "    float *t_grad;\n"
                                "    float c;\n"
                                "    const long long *ix;\n    long long ix_len;\n"
                                "    bool on;\n};\n"));
    assert_non_null(strstr(out, "#define FA4_NUM_AUX_GRAD_SITES 1\n"));
    assert_non_null(strstr(out, "] : nullptr;"));
    assert_non_null(strstr(out, "where[0] = at["));
    assert_non_null(strstr(out, "&fa4_a.t_grad[at["));
    assert_non_null(strstr(out, "fa4_aux_grad_red_if(0, fa4_a.t_grad, acc.sum[0], i, prev);"));
    assert_non_null(strstr(out, "fa4_aux_grad_commit(0, fa4_a.t_grad, i, s);"));
    assert_non_null(strstr(out, "__device__ __forceinline__ void fa4_aux_grad_site_range(int fa4_k, "));
    assert_non_null(strstr(out, "fa4_aux_grad_add(where[k], what[k]);"));
    assert_non_null(strstr(out, "struct fa4_aux_grad_acc {"));
    assert_non_null(strstr(out, "__device__ __forceinline__ void fa4_aux_grad_flush(const fa4_aux &fa4_a, "
                                "fa4_aux_grad_acc &acc)"));
    assert_non_null(strstr(out, "__uint_as_float((unsigned)fa4_a.t[j] << 16)"));
    assert_non_null(strstr(out, "__trap();"));
    assert_non_null(strstr(out, "fa4_mod_aux_out_of_range();"));
    assert_non_null(strstr(out, "#define FA4_CHECKED_DEFERRED 0"));
    free(out);
    fa4__mod_free(m);
    /* no aux at all: the struct still has a member */
    static const char src2[] = "bool mask_mod(int b, int h, int q, int kv) { return true; }";
    m = mt_parse(src2, sizeof src2 - 1, "t2");
    out = fa4__mod_emit_cuda(m, NULL, 0);
    assert_non_null(strstr(out, "struct fa4_aux {\n    int fa4_unused_;\n};"));
    assert_non_null(strstr(out, "#define FA4_HAS_SCORE_MOD 0"));
    assert_non_null(strstr(out, "*dscore = 1.0f;\n    return score;"));
    free(out);
    fa4__mod_free(m);
    assert_null(fa4__mod_emit_cuda(NULL, "x", 0));
}

/* FA4_MASK_MOD_GATHERS: an aux read at an index that depends on q_idx or kv_idx, directly, through
 * locals, conditions or helpers; not an aux read indexed by b or h, nor a mask of the indices alone */
static void mask_gathers(void **state)
{
    (void)state;
    static const struct {
        const char *src;
        int gathers;
    } cases[] = {
        {"bool mask_mod(int b, int h, int q, int kv, const int32 *d) { return d[q] == d[kv]; }", 1},
        {"bool mask_mod(int b, int h, int q, int kv, const int32 *p) { return kv < p[b] || q >= kv; }",
         0},
        {"bool mask_mod(int b, int h, int q, int kv) { return q >= kv; }", 0},
        {"bool mask_mod(int b, int h, int q, int kv, const bool *g) { int i = 0; if (q > 3) { i = 1; }"
         " return g[i]; }",
         1},
        {"int at(int x, int y) { return x + y; }\n"
         "bool mask_mod(int b, int h, int q, int kv, const bool *g) { return g[at(h, kv)]; }",
         1},
        {"int twice(int x) { return 2 * x; }\n"
         "bool mask_mod(int b, int h, int q, int kv, const bool *g) { return g[twice(b)] && q >= kv; }",
         0},
        {"float score_mod(float s, int b, int h, int q, int kv, const float *t) { return s + t[q]; }", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fa4__mod *m = mt_parse(cases[i].src, strlen(cases[i].src), "g");
        assert_non_null(m);
        char *out = fa4__mod_emit_cuda(m, "g", 0);
        assert_non_null(out);
        if (!strstr(out, cases[i].gathers ? "#define FA4_MASK_MOD_GATHERS 1\n"
                                          : "#define FA4_MASK_MOD_GATHERS 0\n"))
            fail_msg("case %zu: FA4_MASK_MOD_GATHERS should be %d", i, cases[i].gathers);
        free(out);
        fa4__mod_free(m);
    }
}

/* A float division by a value the same at every position is a multiply by a reciprocal computed
 * once (fa4_fdiv_u); one whose divisor depends on the score or the indices, directly, through a
 * local, a condition, an aux read at such an index or a helper parameter that some call passes
 * such a value, keeps fa4_fdiv. Only the user's functions are searched (the prelude defines both). */
/* The prescaled forms (FA4_SCORE_MOD_PRESCALE): only where every read of the score is score / D
 * for one hoisted divisor D; the forward form reads score / D as its argument, the dual form too */
static void prescale_forms(void **state)
{
    (void)state;
    static const struct {
        const char *src;
        int pre;
        const char *body; /* fa4_score_mod_u_p's return, where pre */
    } cases[] = {
        {"float score_mod(float s, int b, int h, int q, int kv, float cap) { return cap * tanhf(s / cap); }", 1,
         "return fa4_a.cap * fa4_tanhf(s);"},
        {"float score_mod(float s, int b, int h, int q, int kv, const float *t) { return expf(s / t[h]) + "
         "(float)kv; }",
         1, "return fa4_expf(s) + ((float)kv);"},
        {"float score_mod(float s, int b, int h, int q, int kv, float cap) { return cap * tanhf(s / cap) + s; }",
         0, NULL},
        {"float score_mod(float s, int b, int h, int q, int kv, float c) { return s / c + s / c; }", 0, NULL},
        {"float score_mod(float s, int b, int h, int q, int kv) { return s / (float)(kv + 1); }", 0, NULL},
        {"float score_mod(float s, int b, int h, int q, int kv, float c) { s = s * 2.0f; return s / c; }", 0,
         NULL},
        {"float ratio(float x, float y) { return x / y; }\n"
         "float score_mod(float s, int b, int h, int q, int kv, float c) { return ratio(s, c); }",
         0, NULL},
        {"float score_mod(float s, int b, int h, int q, int kv, float c) { return s * c; }", 0, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fa4__mod *m = mt_parse(cases[i].src, strlen(cases[i].src), "p");
        assert_non_null(m);
        char *out = fa4__mod_emit_cuda(m, "p", 0);
        assert_non_null(out);
        /* the checked branch never prescales; the release one (none without hoisted parts) as the
         * case says */
        const char *chk = strstr(out, "#define FA4_SCORE_MOD_PRESCALE 0\n");
        assert_non_null(chk);
        const char *rel = strstr(chk + 1, "#define FA4_SCORE_MOD_PRESCALE ");
        if ((rel ? atoi(rel + strlen("#define FA4_SCORE_MOD_PRESCALE ")) : 0) != cases[i].pre)
            fail_msg("case %zu: prescale %d expected\n%s", i, cases[i].pre, out);
        const char *fp = strstr(out, "fa4_score_mod_u_p(");
        const char *dp = strstr(out, "fa4_score_mod_dual_p(");
        const char *wp = strstr(out, "float fa4_score_mod_fwd_deriv_p(float sp, float mul,");
        if (cases[i].pre) {
            assert_true(fp && dp && wp && strstr(out, "fa4_score_mod_pre_mul(int b, int h"));
            const char *ret = strstr(fp, "return ");
            if (!ret || strncmp(ret, cases[i].body, strlen(cases[i].body)) != 0)
                fail_msg("case %zu: %s expected\n%s", i, cases[i].body, out);
            /* no division left in the prescaled forms */
            const char *dend = strstr(dp, "\n}\n");
            assert_non_null(dend);
            for (const char *c = dp; c < dend; c++)
                assert_true(strncmp(c, "fa4_ddiv", 8) != 0);
        } else {
            assert_true(!fp && !dp && !wp);
        }
        free(out);
        fa4__mod_free(m);
    }
}

static void uniform_divisors(void **state)
{
    (void)state;
    static const struct {
        const char *src;
        int uniform;
    } cases[] = {
        {"float score_mod(float s, int b, int h, int q, int kv, float cap) { return s / cap; }", 1},
        {"float score_mod(float s, int b, int h, int q, int kv, const float *t) { return s / t[h]; }",
         1},
        {"float score_mod(float s, int b, int h, int q, int kv) { return s / (float)(b + h + 2); }", 1},
        {"float score_mod(float s, int b, int h, int q, int kv) { return s / (float)(kv + 1); }", 0},
        {"float score_mod(float s, int b, int h, int q, int kv, const float *t) { return s / t[kv]; }",
         0},
        {"float score_mod(float s, int b, int h, int q, int kv) { return 2.0f / s; }", 0},
        {"float score_mod(float s, int b, int h, int q, int kv, float c) { float d = c; if (q > kv) "
         "{ d = 2.0f * c; } return s / d; }",
         0},
        {"float score_mod(float s, int b, int h, int q, int kv, float c) { const float d = c * c; "
         "return s / d; }",
         1},
        {"float ratio(float x, float y) { return x / y; }\n"
         "float score_mod(float s, int b, int h, int q, int kv, float c) { return ratio(s, c); }",
         1},
        {"float ratio(float x, float y) { return x / y; }\n"
         "float score_mod(float s, int b, int h, int q, int kv, float c) { return ratio(s, c) + "
         "ratio(c, (float)kv); }",
         0},
        {"float ratio(float x, float y) { return x / y; }\n"
         "bool mask_mod(int b, int h, int q, int kv, float c) { return ratio(1.0f, (float)q) < c; }\n"
         "float score_mod(float s, int b, int h, int q, int kv, float c) { return ratio(s, c); }",
         0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fa4__mod *m = mt_parse(cases[i].src, strlen(cases[i].src), "u");
        assert_non_null(m);
        char *out = fa4__mod_emit_cuda(m, "u", 0);
        assert_non_null(out);
        const char *user = strstr(out, "// ---- the user's functions");
        const char *dual = user ? strstr(user, "\n// Dual-number arithmetic") : NULL;
        assert_non_null(dual);
        const char *u = strstr(user, "fa4_fdiv_u("), *g = strstr(user, "fa4_fdiv(");
        const int got_u = u && u < dual, got_g = g && g < dual;
        if (got_u != cases[i].uniform || got_g == cases[i].uniform)
            fail_msg("case %zu: expected %s in the forward", i,
                     cases[i].uniform ? "fa4_fdiv_u only" : "fa4_fdiv only");
        free(out);
        fa4__mod_free(m);
    }
}

/* Which subexpressions of score_mod fa4_score_mod_uniform computes once (emit_deps.c
 * fa4__collect_uniform), and how fa4_score_mod_u reads them. */
static void uniform_hoist(void **state)
{
    (void)state;
    static const struct {
        const char *src;
        int n;              /* FA4_SCORE_MOD_UNIFORM */
        const char *want;   /* in fa4_score_mod_uniform (NULL: nothing) */
        const char *body;   /* in fa4_score_mod_u (NULL: not checked) */
    } cases[] = {
        {"float score_mod(float s, int b, int h, int q, int kv, const float *t) { return s + t[h] * "
         "(float)(kv - q); }",
         1, "fa4_u.u0 = fa4_aux_t(fa4_a, h);", "s + (fa4_u.u0 * ((float)fa4_isub(kv, q)))"},
        {"float score_mod(float s, int b, int h, int q, int kv, const float *t) { return s * expf(t[h]); }",
         1, "fa4_u.u0 = fa4_expf(fa4_aux_t(fa4_a, h));", "return s * fa4_u.u0;"},
        {"float score_mod(float s, int b, int h, int q, int kv, float c) { return s / (c * 2.0f); }", 1,
         "fa4_u.u0 = fa4_rcp_u(fa4_a.c * 2.0f)", "(s * fa4_u.u0)"},
        {"float score_mod(float s, int b, int h, int q, int kv, float c) { return s / c; }", 1,
         "fa4_u.u0 = fa4_rcp_u(fa4_a.c)", "(s * fa4_u.u0)"},
        {"float score_mod(float s, int b, int h, int q, int kv, const float *t) { return s + t[q]; }", 0,
         NULL, NULL},
        {"float score_mod(float s, int b, int h, int q, int kv, float c) { return s * c; }", 0, NULL, NULL},
        {"float score_mod(float s, int b, int h, int q, int kv, const float *t) { float d = t[h]; "
         "return s + d; }",
         1, "fa4_u.u0 = fa4_aux_t(fa4_a, h);", "float d = fa4_u.u0;"},
        {"float score_mod(float s, int b, int h, int q, int kv, const float *t) { return q > kv ? s + "
         "t[h + 1] : s; }",
         1, "fa4_u.u0 = fa4_aux_t(fa4_a, fa4_iadd(h, 1));", "s + fa4_u.u0"},
        {"float f(int x) { return (float)(x * x); }\n"
         "float score_mod(float s, int b, int h, int q, int kv) { return s + f(h) + f(kv); }",
         1, "fa4_u.u0 = fa4_h_f(h);", "fa4_h_f(kv)"},
        {"float score_mod(float x, int bb, int hh, int qi, int ki, const float *t) { return x + t[hh * "
         "2 + bb] + t[ki]; }",
         1, "fa4_score_mod_uniform(int bb, int hh,", "fa4_aux_t(fa4_a, ki)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fa4__mod *m = mt_parse(cases[i].src, strlen(cases[i].src), "u");
        assert_non_null(m);
        char *out = fa4__mod_emit_cuda(m, "u", 0);
        assert_non_null(out);
        char def[64];
        snprintf(def, sizeof def, "#define FA4_SCORE_MOD_UNIFORM %d\n", cases[i].n);
        if (!strstr(out, def))
            fail_msg("case %zu: expected %s", i, def);
        const char *rel = strstr(out, "#if FA4_CHECKED || !FA4_SCORE_MOD_UNIFORM");
        assert_non_null(rel);
        rel = strstr(rel, "#else\n");
        const char *end = rel ? strstr(rel, "\n#endif\n") : NULL;
        if (cases[i].n == 0) {
            const char *next = strstr(strstr(out, "#if FA4_CHECKED || !FA4_SCORE_MOD_UNIFORM"), "#endif\n");
            if (rel && next && rel < next)
                fail_msg("case %zu: a hoisted form where nothing is uniform", i);
        } else {
            assert_non_null(end);
            const char *u = strstr(rel, "fa4_score_mod_uniform(");
            const char *fu = strstr(rel, "fa4_score_mod_u(");
            assert_true(u && fu && fu < end);
            const char *w = strstr(rel, cases[i].want);
            if (!w || w > fu)
                fail_msg("case %zu: expected '%s' in fa4_score_mod_uniform", i, cases[i].want);
            if (cases[i].body) {
                const char *bd = strstr(fu, cases[i].body);
                if (!bd || bd > end)
                    fail_msg("case %zu: expected '%s' in fa4_score_mod_u", i, cases[i].body);
            }
        }
        free(out);
        fa4__mod_free(m);
    }
}

/* Which score_mods get a tile form (emit_tile.c) and what it reads from the tile. */
static void tile_forms(void **state)
{
    (void)state;
    static const struct {
        const char *src;
        int n;              /* FA4_SCORE_MOD_TILE of the release build */
        const char *want;   /* in fa4_score_mod_tile */
        const char *body;   /* in fa4_score_mod_t */
    } cases[] = {
        {"float score_mod(float score, int b, int h, int q_idx, int kv_idx, const float *bias, int d) "
         "{ const int span = 2 * d + 1; int rel = clamp(kv_idx - q_idx, -d, d); return score + "
         "bias[h * span + rel + d]; }",
         1, "fa4_t.c0 = fa4_aux_bias(fa4_a, fa4_iadd(fa4_iadd(fa4_imul(h, span), rel), fa4_a.d));",
         "return score + fa4_t.c0;"},
        {"float score_mod(float s, int b, int h, int q, int kv) { return q >= kv ? s : s * 0.5f; }", 1,
         "fa4_t.c0 = q >= kv;", "fa4_t.c0 ? s : (s * 0.5f)"},
        {"float score_mod(float s, int b, int h, int q, int kv) { return s + (float)(kv / 128); }", 1,
         "fa4_t.c0 = (float)fa4_idiv(kv, 128);", "return s + fa4_t.c0;"},
        {"float score_mod(float s, int b, int h, int q, int kv, const float *t) { return s + t[h] * "
         "(float)(kv - q); }",
         0, NULL, NULL},
        /* a helper call: its body evaluated over the box (emit_tile.c tile_call) */
        {"int f(int r) { return r > 0 ? 1 : 0; }\n"
         "float score_mod(float s, int b, int h, int q, int kv, const float *t) { return s + t[f(kv - q)]; }",
         1, "fa4_t.c0 = fa4_aux_t(fa4_a, fa4_h_f(fa4_isub(kv, q)));", "return s + fa4_t.c0;"},
        /* a helper that never saturates: no tile form */
        {"int f(int r) { return r * 2 + 1; }\n"
         "float score_mod(float s, int b, int h, int q, int kv, const float *t) { return s + t[f(kv - q)]; }",
         0, NULL, NULL},
        {"float score_mod(float s, int b, int h, int q, int kv) { if (q > kv) { return s; } return 0.0f; }",
         0, NULL, NULL},
        {"float score_mod(float s, int b, int h, int q, int kv) { return s; }", 0, NULL, NULL},
        {"float score_mod(float s, int b, int h, int q, int kv, const float *t) { return s + t[h]; }", 0,
         NULL, NULL},
        {"float score_mod(float s, int b, int h, int q, int kv, const float *t) { return s + t[kv % 7]; }",
         0, NULL, NULL},
        {"bool mask_mod(int b, int h, int q, int kv) { return q >= kv; }", 0, NULL, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fa4__mod *m = mt_parse(cases[i].src, strlen(cases[i].src), "t");
        assert_non_null(m);
        char *out = fa4__mod_emit_cuda(m, "t", 0);
        assert_non_null(out);
        const char *sec = strstr(out, "// ---- score_mod over a tile");
        assert_non_null(sec);
        if (cases[i].n == 0) {
            const char *d = strstr(sec, "#define FA4_SCORE_MOD_TILE ");
            if (!d || strncmp(d, "#define FA4_SCORE_MOD_TILE 0\n", 29) != 0 ||
                strstr(sec, "fa4_score_mod_tile("))
                fail_msg("case %zu: expected no tile form", i);
        } else {
            char def[64];
            snprintf(def, sizeof def, "#else\n#define FA4_SCORE_MOD_TILE %d\n", cases[i].n);
            const char *tf = strstr(sec, "fa4_score_mod_tile("), *tt = strstr(sec, "fa4_score_mod_t(");
            if (!strstr(sec, def) || !tf || !tt)
                fail_msg("case %zu: expected a tile form of %d candidates", i, cases[i].n);
            const char *w = strstr(tf, cases[i].want);
            if (!w || w > tt)
                fail_msg("case %zu: expected '%s' in fa4_score_mod_tile", i, cases[i].want);
            if (!strstr(tt, cases[i].body))
                fail_msg("case %zu: expected '%s' in fa4_score_mod_t", i, cases[i].body);
        }
        free(out);
        fa4__mod_free(m);
    }
    /* the backward's add form: score + a read of a trainable tensor */
    const char *rb = cases[0].src;
    fa4__mod *m = mt_parse(rb, strlen(rb), "t");
    assert_non_null(m);
    const char *names[] = {"bias"};
    assert_int_equal(fa4__mod_set_trainable(m, names, 1, NULL), FA4_OK);
    char *out = fa4__mod_emit_cuda(m, "t", 0);
    assert_non_null(out);
    assert_non_null(strstr(out, "#define FA4_SCORE_MOD_TILE_ADD 1\n#define FA4_SCORE_MOD_TILE_GRAD 1\n"));
    assert_non_null(strstr(out, "fa4_t.gi = fa4_iadd(fa4_iadd(fa4_imul(h, span), rel), fa4_a.d);"));
    assert_non_null(strstr(out, "return fa4_a.bias_grad + (fa4_t.gi < 0 ? 0 : fa4_t.gi > hi ? hi : fa4_t.gi);"));
    free(out);
    fa4__mod_free(m);
    /* not an add form: the score scaled */
    const char *sc = "float score_mod(float s, int b, int h, int q, int kv, const float *t) { return s * "
                     "t[clamp(kv - q, 0, 3)]; }";
    m = mt_parse(sc, strlen(sc), "t");
    assert_non_null(m);
    out = fa4__mod_emit_cuda(m, "t", 0);
    assert_non_null(out);
    assert_non_null(strstr(out, "#else\n#define FA4_SCORE_MOD_TILE 1\n"));
    assert_non_null(strstr(out, "#define FA4_SCORE_MOD_TILE_ADD 0\n#define FA4_SCORE_MOD_TILE_GRAD 0\n#define FA4_SCORE_MOD_TILE_CALLS 0\n#endif"));
    free(out);
    fa4__mod_free(m);
}

/* Which int divisions the emitter turns into fa4_idiv_u / fa4_imod_u (a divisor the same at every
 * position that is not a literal) and which keep fa4_idiv / fa4_imod (literals, which the compiler
 * divides by best; divisors that vary; helpers that the backward's dual code also calls with
 * opaque scalar aux reads). */
static void uniform_int_divisors(void **state)
{
    (void)state;
    static const struct {
        const char *src;
        int uniform;
    } cases[] = {
        {"bool mask_mod(int b, int h, int q, int kv, int d) { return q / d == kv / d; }", 1},
        {"bool mask_mod(int b, int h, int q, int kv, int d) { return (q - kv) % (d + h) == 0; }", 1},
        {"bool mask_mod(int b, int h, int q, int kv) { return q / 4 == kv % 3; }", 0},
        {"bool mask_mod(int b, int h, int q, int kv) { return q / (kv + 1) == 0; }", 0},
        {"bool mask_mod(int b, int h, int q, int kv, int d) { int e = d; if (q > kv) { e = 2 * d; } "
         "return q / e == 0; }",
         0},
        {"int f(int x, int n) { return x / n; }\n"
         "float score_mod(float s, int b, int h, int q, int kv, int n) { return s + (float)f(kv - q, n); }",
         0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fa4__mod *m = mt_parse(cases[i].src, strlen(cases[i].src), "u");
        assert_non_null(m);
        char *out = fa4__mod_emit_cuda(m, "u", 0);
        assert_non_null(out);
        const char *user = strstr(out, "// ---- the user's functions");
        assert_non_null(user);
        const int got_u = strstr(user, "fa4_idiv_u(") || strstr(user, "fa4_imod_u(");
        const int got_g = strstr(user, "fa4_idiv(") || strstr(user, "fa4_imod(");
        if (got_u != cases[i].uniform || got_g == cases[i].uniform)
            fail_msg("case %zu: expected %s", i, cases[i].uniform ? "fa4_idiv_u / fa4_imod_u only"
                                                                  : "fa4_idiv / fa4_imod only");
        free(out);
        fa4__mod_free(m);
    }
}

/* The relative form (emit_rel.c): score + g with q_idx and kv_idx read only as their difference;
 * everything else keeps FA4_SCORE_MOD_REL 0. */
static void rel_forms(void **state)
{
    (void)state;
    static const struct {
        const char *src;
        int rel;
        const char *body; /* in fa4_score_mod_rel */
        int heavy;        /* FA4_SCORE_MOD_REL_HEAVY, where rel */
    } cases[] = {
        {"float score_mod(float score, int b, int h, int q_idx, int kv_idx, const float *bias, int d) "
         "{ const int span = 2 * d + 1; int rel = clamp(kv_idx - q_idx, -d, d); return score + "
         "bias[h * span + rel + d]; }",
         1, "return fa4_aux_bias(fa4_a, fa4_iadd(fa4_iadd(fa4_imul(h, span), rel), fa4_a.d));", 0},
        {"float score_mod(float s, int b, int h, int q, int kv, const float *t) { return t[h] * (float)(q - kv) + s; }",
         1, "return fa4_u.u0 * ((float)fa4_isub(q, kv));", 0},
        {"int f(int r) { return r > 0 ? 1 : 0; }\n"
         "float score_mod(float s, int b, int h, int q, int kv, const float *t) { return s + t[f(kv - q)]; }",
         1, "return fa4_aux_t(fa4_a, fa4_h_f(fa4_isub(kv, q)));", 0},
        {"float score_mod(float s, int b, int h, int q, int kv, const float *t) { return s + t[h]; }", 1,
         "return fa4_u.u0;", 0},
        /* costly g (a log in a helper, as t5_bias; a float division; a root in a local's initialiser;
         * a division-assignment), and cheap ones (fabsf, min, an integer division) */
        {"int f(int r) { return (int)logf((float)(r > 0 ? r : 1)); }\n"
         "float score_mod(float s, int b, int h, int q, int kv, const float *t) { return s + t[f(kv - q)]; }",
         1, "return fa4_aux_t(fa4_a, fa4_h_f(fa4_isub(kv, q)));", 1},
        {"float score_mod(float s, int b, int h, int q, int kv, float c) { return s + (float)(kv - q) / c; }", 1,
         "fa4_isub(kv, q)", 1},
        {"float score_mod(float s, int b, int h, int q, int kv) { float r = sqrtf(fabsf((float)(kv - q))); "
         "return s + r; }",
         1, "return r;", 1},
        {"float f(float x) { x /= 3.0f; return x; }\n"
         "float score_mod(float s, int b, int h, int q, int kv) { return s + f((float)(kv - q)); }",
         1, "fa4_h_f(", 1},
        {"float score_mod(float s, int b, int h, int q, int kv) { return s + fabsf(fminf((float)((kv - q) / 3), 8.0f)); }",
         1, "fa4_isub(kv, q)", 0},
        /* positions read apart from their difference */
        {"float score_mod(float s, int b, int h, int q, int kv, const float *t) { return s + t[q]; }", 0, NULL, 0},
        {"float score_mod(float s, int b, int h, int q, int kv, const float *t) { return s + t[kv - q + q]; }", 0,
         NULL, 0},
        {"float score_mod(float s, int b, int h, int q, int kv) { return s + (float)(kv - 2 * q); }", 0, NULL, 0},
        {"float score_mod(float s, int b, int h, int q, int kv) { int x = kv; return s + (float)(x - q); }", 0, NULL, 0},
        {"float score_mod(float s, int b, int h, int q, int kv) { return s + (float)((kv + 1) - q); }", 0, NULL, 0},
        /* the score not simply added */
        {"float score_mod(float s, int b, int h, int q, int kv) { return s * 0.5f + (float)(kv - q); }", 0, NULL, 0},
        {"float score_mod(float s, int b, int h, int q, int kv) { return s + s * (float)(kv - q); }", 0, NULL, 0},
        {"float score_mod(float s, int b, int h, int q, int kv) { float t = s; return t + (float)(kv - q); }", 0,
         NULL, 0},
        {"float score_mod(float s, int b, int h, int q, int kv) { return s - (float)(kv - q); }", 0, NULL, 0},
        {"float score_mod(float s, int b, int h, int q, int kv) { if (kv > q) { return s; } return s + 1.0f; }", 0,
         NULL, 0},
        {"float score_mod(float s, int b, int h, int q, int kv) { return s; }", 0, NULL, 0},
        {"bool mask_mod(int b, int h, int q, int kv) { return q >= kv; }", 0, NULL, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fa4__mod *m = mt_parse(cases[i].src, strlen(cases[i].src), "t");
        assert_non_null(m);
        char *out = fa4__mod_emit_cuda(m, "t", 0);
        assert_non_null(out);
        const char *sec = strstr(out, "// ---- score_mod as score + g(b, h, kv_idx - q_idx)");
        assert_non_null(sec);
        const char *fn = strstr(sec, "fa4_score_mod_rel(");
        if (cases[i].rel) {
            if (!strstr(sec, "#if FA4_CHECKED\n#define FA4_SCORE_MOD_REL 0\n#else\n#define FA4_SCORE_MOD_REL 1\n") || !fn)
                fail_msg("case %zu: expected the relative form", i);
            if (!strstr(fn, cases[i].body))
                fail_msg("case %zu: expected '%s' in fa4_score_mod_rel:\n%s", i, cases[i].body, fn);
            char want[48];
            snprintf(want, sizeof want, "#define FA4_SCORE_MOD_REL_HEAVY %d\n", cases[i].heavy);
            if (!strstr(sec, want))
                fail_msg("case %zu: expected '%s'", i, want);
        } else if (strncmp(strstr(sec, "#define FA4_SCORE_MOD_REL "), "#define FA4_SCORE_MOD_REL 0\n", 28) != 0 ||
                   (fn && fn < sec + 200)) {
            fail_msg("case %zu: expected no relative form", i);
        }
        int hoisted, tile, add, affine, rel = -1;
        assert_int_equal(fa4__mod_forward_forms(m, &hoisted, &tile, &add, &affine, &rel, NULL, NULL), 0);
        assert_int_equal(rel, cases[i].rel ? 1 + cases[i].heavy : 0);
        free(out);
        fa4__mod_free(m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(golden),
        cmocka_unit_test(math_forms),
        cmocka_unit_test(line_directives),
        cmocka_unit_test(hash_stability),
        cmocka_unit_test(interface_shape),
        cmocka_unit_test(mask_gathers),
        cmocka_unit_test(uniform_divisors),
        cmocka_unit_test(prescale_forms),
        cmocka_unit_test(uniform_hoist),
        cmocka_unit_test(tile_forms),
        cmocka_unit_test(uniform_int_divisors),
        cmocka_unit_test(rel_forms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
