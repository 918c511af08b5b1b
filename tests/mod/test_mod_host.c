/*
 * test_mod_host.c - the emitted CUDA run on the host, against the CPU evaluator. Every shipped mod
 * and every test case in tests/mod/cases is emitted, compiled as C++ with the host's compiler (a
 * small shim stands in for the CUDA builtins; the PTX approximations become the C library's exact
 * functions), and run at random points: fa4_score_mod, fa4_score_mod_fwd_deriv and fa4_mask_mod
 * must agree with the evaluator (float against double, within a relative 1e-4), and the release
 * build (straight-line form: every statement runs under a predicate) must agree bit for bit with
 * the checked build (the branches as written); the release build's hoisted form (fa4_score_mod_u)
 * and, where fa4_score_mod_tile takes a box around the point, its tile form (fa4_score_mod_t) must
 * agree with the evaluator too. No GPU needed; skips where there is no C++
 * compiler. FA4_MOD_HOST_KEEP=1 keeps the generated programs under the build directory.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "mod_test_util.h"

#define NPOINTS 240
#define NUMEL 96

static const char shim[] =
    "#include <math.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
    "#define __device__\n#define __forceinline__ inline\n"
    "static inline int __float_as_int(float x) { int i; memcpy(&i, &x, 4); return i; }\n"
    "static inline float __int_as_float(int i) { float x; memcpy(&x, &i, 4); return x; }\n"
    "static inline float __uint_as_float(unsigned u) { float x; memcpy(&x, &u, 4); return x; }\n"
    "static inline int __float2int_rz(float x) { return x != x ? 0 : x >= 2147483647.0f ? "
    "2147483647 : x <= -2147483648.0f ? (-2147483647 - 1) : (int)x; }\n"
    "static inline float __fdividef(float a, float b) { return a / b; }\n"
    "static inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }\n"
    "static inline int __clz(unsigned x) { return x ? __builtin_clz(x) : 32; }\n"
    "static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }\n"
    "static inline float atomicAdd(float *p, float v) { float o = *p; *p = o + v; return o; }\n"
    /* one thread: never a full warp, so fa4_aux_grad_add takes its plain atomicAdd path */
    "static struct { unsigned x; } threadIdx;\n"
    "static inline unsigned __activemask(void) { return 1u; }\n"
    "static inline unsigned __match_all_sync(unsigned m, unsigned long long v, int *p) { (void)m; (void)v; *p = 1; "
    "return 1u; }\n"
    "static inline float __shfl_xor_sync(unsigned m, float v, int o) { (void)m; (void)o; return v; }\n"
    "static inline void __trap(void) { abort(); }\n"
    "static inline float fa4_host_half(unsigned short h)\n{\n"
    "    int e = (h >> 10) & 31, m = h & 1023;\n"
    "    float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY) : "
    "ldexpf((float)(m | 1024), e - 25);\n"
    "    return (h & 0x8000) ? -v : v;\n}\n";

/* the PTX the emitted prelude holds, and what the host runs instead */
static const struct {
    const char *from, *to;
} ptx[] = {
    {"asm(\"rcp.approx.ftz.f32 %0, %1;\" : \"=f\"(y) : \"f\"(x));", "y = 1.0f / x;"},
    {"asm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(y) : \"f\"(x));", "y = exp2f(x);"},
    {"asm(\"lg2.approx.ftz.f32 %0, %1;\" : \"=f\"(y) : \"f\"(x));", "y = log2f(x);"},
    {"asm(\"tanh.approx.f32 %0, %1;\" : \"=f\"(y) : \"f\"(x));", "y = tanhf(x);"},
    {"asm(\"min.NaN.xorsign.abs.f32 %0, %1, %2;\" : \"=f\"(y) : \"f\"(x), \"f\"(c));",
     "y = x != x ? x : copysignf(fminf(fabsf(x), c), x);"},
    {"asm(\"min.NaN.f32 %0, %1, %2;\" : \"=f\"(y) : \"f\"(fabsf(x)), \"f\"(c));",
     "y = x != x ? x : fminf(fabsf(x), c);"},
    {"asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h));", "f = fa4_host_half(h);"},
    {"asm volatile(\"\" : \"+f\"(x));", ""}, /* the opaque reads of the dual form */
    {"asm volatile(\"\" : \"+r\"(x));", ""},
};

/* text with every PTX statement replaced (malloc'd) */
static char *host_text(const char *cu)
{
    size_t cap = strlen(cu) + 1;
    char *s = malloc(cap);
    assert_non_null(s);
    memcpy(s, cu, cap);
    for (size_t i = 0; i < sizeof ptx / sizeof ptx[0]; i++) {
        char *p;
        while ((p = strstr(s, ptx[i].from))) {
            size_t fl = strlen(ptx[i].from), tl = strlen(ptx[i].to);
            memcpy(p, ptx[i].to, tl); /* tl < fl: shift the rest left */
            memmove(p + tl, p + fl, strlen(p + fl) + 1);
        }
    }
    assert_null(strstr(s, "asm("));
    assert_null(strstr(s, "asm volatile("));
    return s;
}

static const char *member_type(fa4_dtype t)
{
    switch (t) {
    case FA4_DTYPE_FP32: return "float";
    case FA4_DTYPE_BF16:
    case FA4_DTYPE_FP16: return "unsigned short";
    case FA4_DTYPE_INT8: return "signed char";
    case FA4_DTYPE_INT16: return "short";
    case FA4_DTYPE_INT32: return "int";
    case FA4_DTYPE_INT64: return "long long";
    default: return "unsigned char";
    }
}

static size_t elem_size(fa4_dtype t)
{
    return t == FA4_DTYPE_FP32 || t == FA4_DTYPE_INT32 ? 4
           : t == FA4_DTYPE_INT64                      ? 8
           : t == FA4_DTYPE_BF16 || t == FA4_DTYPE_FP16 || t == FA4_DTYPE_INT16 ? 2
                                                                                 : 1;
}

/* Skips the test (cmocka) where there is no C++ compiler to build the host programs. */
static void skip_without_cxx(void)
{
    if (system("c++ --version > /dev/null 2>&1") != 0) {
        fprintf(stderr, "skipped: no C++ compiler (c++) on this machine\n");
        skip();
    }
}

/* A fresh directory under the build directory for one test's host programs; host_dir_done
 * removes it unless FA4_MOD_HOST_KEEP is set. */
static void host_dir(char *dir, size_t size, const char *name)
{
    snprintf(dir, size, "%s/%s_XXXXXX", FA4_TEST_BINARY_DIR, name);
    assert_non_null(mkdtemp(dir));
}

/* Builds host program src into exe and runs it: the exit status of the two (system()'s). */
static int compile_and_run(const char *src, const char *exe)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "c++ -std=c++17 -O1 -w -o '%s' '%s' -lm && '%s'", exe, src, exe);
    return system(cmd);
}

static void host_dir_done(const char *dir)
{
    if (!getenv("FA4_MOD_HOST_KEEP")) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        assert_int_equal(system(cmd), 0);
    }
}

typedef struct {
    float score;
    int c[4];
    int box[4]; /* q_lo, q_hi, kv_lo, kv_hi around (c[2], c[3]), for the tile form */
} point;

/* The aux tensors' bytes as static arrays fa4_t<i> */
static void write_aux_data(FILE *f, const fa4__mod *m, const fa4_aux_value *aux)
{
    int n = fa4__mod_num_aux(m);
    for (int i = 0; i < n; i++) {
        const fa4__aux_decl *a = fa4__mod_aux(m, i);
        if (!a->is_tensor)
            continue;
        size_t bytes = (size_t)aux[i].numel * elem_size(a->dtype);
        fprintf(f, "alignas(8) static const unsigned char fa4_t%d[] = {", i);
        for (size_t k = 0; k < bytes; k++)
            fprintf(f, "%s%u", k ? "," : "", ((const unsigned char *)aux[i].data)[k]);
        fprintf(f, "};\n");
    }
}

/* main's `fa4_aux a` set up from the arrays and scalars */
static void write_aux_setup(FILE *f, const fa4__mod *m, const fa4_aux_value *aux)
{
    int n = fa4__mod_num_aux(m);
    fprintf(f, "    fa4_aux a;\n    memset(&a, 0, sizeof a);\n");
    for (int i = 0; i < n; i++) {
        const fa4__aux_decl *a = fa4__mod_aux(m, i);
        if (a->is_tensor)
            fprintf(f, "    a.%s = (const %s *)fa4_t%d;\n    a.%s_len = %lld;\n", a->name,
                    member_type(a->dtype), i, a->name, (long long)aux[i].numel);
        else if (a->dtype == FA4_DTYPE_FP32)
            fprintf(f, "    a.%s = %af;\n", a->name, (double)(float)aux[i].f);
        else if (a->dtype == FA4_DTYPE_BOOL)
            fprintf(f, "    a.%s = %s;\n", a->name, aux[i].i ? "true" : "false");
        else
            fprintf(f, "    a.%s = %lld;\n", a->name, (long long)aux[i].i);
    }
}

/* The driver: aux values and points as static data, one output line per point. */
static void write_driver(FILE *f, const fa4__mod *m, const fa4_aux_value *aux, const point *pts)
{
    write_aux_data(f, m, aux);
    fprintf(f, "static const float fa4_s[%d] = {", NPOINTS);
    for (int p = 0; p < NPOINTS; p++)
        fprintf(f, "%s%af", p ? "," : "", (double)pts[p].score);
    fprintf(f, "};\nstatic const int fa4_c[%d][4] = {", NPOINTS);
    for (int p = 0; p < NPOINTS; p++)
        fprintf(f, "%s{%d,%d,%d,%d}", p ? "," : "", pts[p].c[0], pts[p].c[1], pts[p].c[2],
                pts[p].c[3]);
    fprintf(f, "};\nstatic const int fa4_box[%d][4] = {", NPOINTS);
    for (int p = 0; p < NPOINTS; p++)
        fprintf(f, "%s{%d,%d,%d,%d}", p ? "," : "", pts[p].box[0], pts[p].box[1], pts[p].box[2],
                pts[p].box[3]);
    fprintf(f, "};\nint main(void)\n{\n");
    write_aux_setup(f, m, aux);
    fprintf(f, "    for (int p = 0; p < %d; p++) {\n"
               "        const int *c = fa4_c[p];\n"
               "        float d = 0.0f;\n"
               "        const float v = fa4_score_mod(fa4_s[p], c[0], c[1], c[2], c[3], a);\n"
               "        const float w = fa4_score_mod_fwd_deriv(fa4_s[p], c[0], c[1], c[2], c[3], "
               "a, &d);\n"
               "        const int ok = fa4_mask_mod(c[0], c[1], c[2], c[3], a);\n"
               "        printf(\"%%a %%a %%a %%d\\n\", v, w, d, ok);\n"
               "    }\n"
               /* release builds: the forward's hoisted form, and the tile form where it applies to
                * the point's box (taken 1), after a separator */
               "#if !FA4_CHECKED\n"
               "    printf(\"--\\n\");\n"
               "    for (int p = 0; p < %d; p++) {\n"
               "        const int *c = fa4_c[p], *x = fa4_box[p];\n"
               "        const float u = fa4_score_mod_u(fa4_s[p], c[0], c[1], c[2], c[3], a, "
               "fa4_score_mod_uniform(c[0], c[1], a));\n"
               "        int taken = 0;\n        float t = 0.0f;\n"
               "#if FA4_SCORE_MOD_TILE\n"
               "        fa4_score_tile tl;\n"
               "        if (fa4_score_mod_tile(c[0], c[1], x[0], x[1], x[2], x[3], a, tl)) {\n"
               "            taken = 1;\n"
               "            t = fa4_score_mod_t(fa4_s[p], c[0], c[1], c[2], c[3], a, tl);\n"
               "        }\n"
               "#endif\n"
               "        int aff = 0;\n        float av = 0.0f;\n"
               "#if FA4_SCORE_MOD_AFFINE\n"
               "        fa4_score_aff af;\n"
               "        if (fa4_score_mod_affine(c[0], c[1], x[0], x[1], x[2], x[3], a, af)) {\n"
               "            aff = 1;\n"
               "            av = af.ds * fa4_s[p] + af.c + af.dq * (float)(c[2] - x[0]) + af.dk * (float)(c[3] - x[2]);\n"
               "#if FA4_SCORE_MOD_AFFINE_DS1\n"
               "            if (af.ds != 1.0f) /* the kernels then take ds as 1 */\n"
               "                av = NAN;\n"
               "#endif\n"
               "        }\n"
               "#endif\n"
               /* the relative form: score + g is the hoisted form bit for bit, and g is the
                * same where both positions shift (by 8: the forward's reuse; and by -37) */
               "        int rl = 0, shift_ok = 1;\n        float rv = 0.0f;\n"
               "#if FA4_SCORE_MOD_REL\n"
               "        {\n"
               "            const fa4_score_uniform su = fa4_score_mod_uniform(c[0], c[1], a);\n"
               "            const float g = fa4_score_mod_rel(c[0], c[1], c[2], c[3], a, su);\n"
               "            const float g8 = fa4_score_mod_rel(c[0], c[1], c[2] + 8, c[3] + 8, a, su);\n"
               "            const float gm = fa4_score_mod_rel(c[0], c[1], c[2] - 37, c[3] - 37, a, su);\n"
               "            rl = 1;\n"
               "            rv = fa4_s[p] + g;\n"
               "            shift_ok = __float_as_int(g) == __float_as_int(g8) && __float_as_int(g) == __float_as_int(gm);\n"
               "        }\n"
               "#endif\n"
               "        printf(\"%%a %%d %%a %%d %%a %%d %%a %%d\\n\", u, taken, t, aff, av, rl, rv, shift_ok);\n"
               "    }\n"
               "#endif\n"
               "    return 0;\n}\n",
            NPOINTS, NPOINTS);
}

/* Compile and run one build; its output lines (malloc'd), or NULL when the build failed. */
static char *build_and_run(const char *dir, const char *tag, const char *cu, const fa4__mod *m,
                           const fa4_aux_value *aux, const point *pts, const char *defines)
{
    char src[600], exe[600], cmd[2048];
    snprintf(src, sizeof src, "%s/%s.cpp", dir, tag);
    snprintf(exe, sizeof exe, "%s/%s", dir, tag);
    FILE *f = fopen(src, "w");
    assert_non_null(f);
    char *text = host_text(cu);
    fprintf(f, "%s%s\n%s\n", defines, shim, text);
    free(text);
    write_driver(f, m, aux, pts);
    fclose(f);
    snprintf(cmd, sizeof cmd, "c++ -std=c++17 -O0 -w -o '%s' '%s' -lm", exe, src);
    if (system(cmd) != 0) {
        fprintf(stderr, "host compile of %s failed: %s\n", tag, cmd);
        return NULL;
    }
    snprintf(cmd, sizeof cmd, "'%s'", exe);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 1 << 16, len = 0;
    char *out = malloc(cap);
    assert_non_null(out);
    size_t got;
    while ((got = fread(out + len, 1, cap - len - 1, p)) > 0) {
        len += got;
        if (len + 1 >= cap) {
            cap *= 2;
            out = realloc(out, cap);
            assert_non_null(out);
        }
    }
    out[len] = '\0';
    assert_int_equal(pclose(p), 0);
    return out;
}

static int close_to(double got, double want)
{
    if (isnan(want) || isnan(got))
        return isnan(want) && isnan(got);
    if (isinf(want) || isinf(got))
        return got == want;
    return fabs(got - want) <= 1e-4 * (1.0 + fabs(want));
}

/* One mod: release and checked builds agree bit for bit, and with the evaluator. */
static int check_mod(const char *dir, const char *name, const char *src, size_t len,
                     uint64_t seed, int *taken_count, int *affine_count, int *rel_count)
{
    fa4__mod *m = mt_parse(src, len, name);
    assert_non_null(m);
    int n = fa4__mod_num_aux(m);
    fa4_aux_value aux[FA4__MOD_MAX_AUX];
    mt_make_aux(m, &seed, NUMEL, aux);
    point pts[NPOINTS];
    for (int p = 0; p < NPOINTS; p++) {
        pts[p].score = (float)mt_uniform(&seed, -12.0, 12.0);
        pts[p].c[0] = (int)(mt_next(&seed) % 4);
        pts[p].c[1] = (int)(mt_next(&seed) % 8);
        pts[p].c[2] = (int)(mt_next(&seed) % 300);
        /* keys near the query half the time: windows, buckets, causal edges */
        pts[p].c[3] = p % 2 ? (int)(mt_next(&seed) % 300)
                            : pts[p].c[2] + (int)(mt_next(&seed) % 41) - 20;
        /* a box around the point: narrow or kernel-sized (16 x 128), or a single position */
        static const int wq[4] = {0, 15, 3, 40}, wk[4] = {0, 127, 7, 200};
        const int sz = (int)(mt_next(&seed) % 4);
        const int dq = wq[sz] ? (int)(mt_next(&seed) % (unsigned)(wq[sz] + 1)) : 0;
        const int dk = wk[sz] ? (int)(mt_next(&seed) % (unsigned)(wk[sz] + 1)) : 0;
        pts[p].box[0] = pts[p].c[2] - dq;
        pts[p].box[1] = pts[p].box[0] + wq[sz];
        pts[p].box[2] = pts[p].c[3] - dk;
        pts[p].box[3] = pts[p].box[2] + wk[sz];
    }
    char *cu = fa4__mod_emit_cuda(m, name, 0);
    assert_non_null(cu);
    char tag[160];
    snprintf(tag, sizeof tag, "%s.release", name);
    char *rel = build_and_run(dir, tag, cu, m, aux, pts, "#define FA4_CHECKED 0\n");
    snprintf(tag, sizeof tag, "%s.checked", name);
    char *chk = build_and_run(dir, tag, cu, m, aux, pts,
                              "#define FA4_CHECKED 1\n#define FA4_CHECKED_DEFERRED 1\n");
    int bad = !rel || !chk;
    char *extra = rel ? strstr(rel, "--\n") : NULL;
    if (rel && !extra) {
        fprintf(stderr, "%s: the release build printed no hoisted / tile values\n", name);
        bad = 1;
    }
    if (extra) {
        *extra = '\0';
        extra += 3;
    }
    if (!bad && strcmp(rel, chk) != 0) {
        fprintf(stderr, "%s: the straight-line form differs from the branches\n", name);
        bad = 1;
    }
    const char *line = rel;
    for (int p = 0; !bad && p < NPOINTS; p++) {
        float v, w, d;
        int ok;
        char *end;
        v = strtof(line, &end);
        w = strtof(end, &end);
        d = strtof(end, &end);
        ok = (int)strtol(end, &end, 10);
        line = end;
        double want = 0, dwant = 0;
        int okwant = 0;
        fa4__diag dg;
        const int *c = pts[p].c;
        assert_int_equal(fa4__mod_eval_score(m, (double)pts[p].score, c[0], c[1], c[2], c[3], aux,
                                             n, &want, &dwant, &dg),
                         FA4_OK);
        assert_int_equal(fa4__mod_eval_mask(m, c[0], c[1], c[2], c[3], aux, n, &okwant, &dg),
                         FA4_OK);
        if (!close_to(v, want) || !close_to(w, want) || !close_to(d, dwant) || ok != okwant) {
            fprintf(stderr,
                    "%s: point %d (score %a; %d %d %d %d): value %a want %a, deriv %a want %a, "
                    "mask %d want %d\n",
                    name, p, (double)pts[p].score, c[0], c[1], c[2], c[3], (double)v, want,
                    (double)d, dwant, ok, okwant);
            bad = 1;
        }
        /* the hoisted form and, where taken, the tile form against the evaluator */
        if (!extra)
            continue;
        char *e2;
        const float u = strtof(extra, &e2);
        const int taken = (int)strtol(e2, &e2, 10);
        const float tv = strtof(e2, &e2);
        const int aff = (int)strtol(e2, &e2, 10);
        const float av = strtof(e2, &e2);
        const int rl = (int)strtol(e2, &e2, 10);
        const float rv = strtof(e2, &e2);
        const int shift_ok = (int)strtol(e2, &e2, 10);
        extra = e2;
        *rel_count += rl;
        if (rl && (memcmp(&rv, &u, sizeof rv) != 0 || !shift_ok)) {
            fprintf(stderr, "%s: point %d (%d %d %d %d): relative form score + g = %a, hoisted %a; "
                            "g unchanged under a shift of both positions: %d\n",
                    name, p, c[0], c[1], c[2], c[3], (double)rv, (double)u, shift_ok);
            bad = 1;
        }
        *taken_count += taken;
        *affine_count += aff;
        if (!close_to(u, want) || (taken && !close_to(tv, want)) || (aff && !close_to(av, want))) {
            fprintf(stderr, "%s: point %d (%d %d %d %d, box q %d..%d kv %d..%d): hoisted %a, tile %d %a, "
                            "affine %d %a, want %a\n",
                    name, p, c[0], c[1], c[2], c[3], pts[p].box[0], pts[p].box[1], pts[p].box[2],
                    pts[p].box[3], (double)u, taken, (double)tv, aff, (double)av, want);
            bad = 1;
        }
    }
    free(rel);
    free(chk);
    free(cu);
    mt_free_aux(aux, n);
    fa4__mod_free(m);
    return bad;
}

static void emitted_matches_evaluator(void **state)
{
    (void)state;
    skip_without_cxx();
    char dir[512];
    host_dir(dir, sizeof dir, "mod_host");
    int bad = 0, count = 0, rel_taken = -1, tiles_taken = -1, alibi_affine = -1, affine_affine = -1,
        softcap_affine = -1, relative_mods = 0, relative_want = 0;
    char *names[MT_MAX_MODS];
    int n = mt_list_mods(names);
    assert_true(n >= 10);
    for (int i = 0; i < n; i++) {
        size_t len = 0;
        char *src = mt_read_mod(names[i], &len);
        assert_non_null(src);
        int taken = 0, affine = 0, relative = 0;
        bad += check_mod(dir, names[i], src, len, 1000u + (uint64_t)i, &taken, &affine, &relative);
        /* the shipped mods that are score + g(kv_idx - q_idx) take the relative form everywhere,
         * the others nowhere */
        const int want_rel = !strcmp(names[i], "rel_bias") || !strcmp(names[i], "t5_bias") ||
                             !strcmp(names[i], "alibi");
        relative_want += want_rel;
        if (relative != (want_rel ? NPOINTS : 0)) {
            fprintf(stderr, "%s: the relative form at %d points, want %d\n", names[i], relative,
                    want_rel ? NPOINTS : 0);
            bad++;
        }
        relative_mods += relative == NPOINTS;
        if (!strcmp(names[i], "rel_bias")) /* the shipped mod with a tile form */
            rel_taken = taken;
        if (!strcmp(names[i], "alibi")) /* and the one with an affine form */
            alibi_affine = affine;
        if (!strcmp(names[i], "softcap")) /* not affine in the score */
            softcap_affine = affine;
        count++;
        free(src);
        free(names[i]);
    }
    static const char *const cases[] = {"branches", "builtins", "dtypes", "tiles", "affine"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[512];
        size_t len = 0;
        snprintf(path, sizeof path, "%s/tests/mod/cases/%s.mod", FA4_TEST_SOURCE_DIR, cases[i]);
        char *src = mt_read_file(path, &len);
        assert_non_null(src);
        int taken = 0, affine = 0, relative = 0;
        bad += check_mod(dir, cases[i], src, len, 2000u + (uint64_t)i, &taken, &affine, &relative);
        if (!strcmp(cases[i], "tiles"))
            tiles_taken = taken;
        if (!strcmp(cases[i], "affine"))
            affine_affine = affine;
        count++;
        free(src);
    }
    printf("%d mods, %d points each, release and checked builds: %d failed; tile forms taken at "
           "%d points (rel_bias), %d (tiles); affine forms at %d (alibi), %d (affine), %d (softcap); "
           "relative forms in %d shipped mods (want %d)\n",
           count, NPOINTS, bad, rel_taken, tiles_taken, alibi_affine, affine_affine, softcap_affine,
           relative_mods, relative_want);
    host_dir_done(dir);
    assert_int_equal(bad, 0);
    assert_true(rel_taken > 0 && tiles_taken > 0);
    /* alibi's form is taken in every box (its positions are small); the test mod's where its
     * scalars keep the int parts in range and the numbers finite; soft-cap has none */
    assert_int_equal(alibi_affine, NPOINTS);
    assert_true(affine_affine > 0);
    assert_int_equal(softcap_affine, 0);
    assert_int_equal(relative_mods, 3);
}

/* fa4_idiv_u / fa4_imod_u (the magic-number forms for divisors the same at every position) give
 * the results of fa4_idiv / fa4_imod, which the evaluator defines, at the edges (0, +-1, INT_MIN,
 * INT_MAX, powers of 2 and their neighbours), at every divisor up to 2^16 in magnitude and at
 * random pairs, with dividends near multiples of the divisor (the quotient's corner cases). */
static void uniform_int_division(void **state)
{
    (void)state;
    skip_without_cxx();
    static const char mod[] = "bool mask_mod(int b, int h, int q, int kv, int d) { return q / d == kv % d; }";
    fa4__mod *m = mt_parse(mod, strlen(mod), "u");
    assert_non_null(m);
    char *cu = fa4__mod_emit_cuda(m, "u", 0);
    assert_non_null(cu);
    assert_non_null(strstr(cu, "fa4_idiv_u(q, fa4_a.d)"));
    assert_non_null(strstr(cu, "fa4_imod_u(kv, fa4_a.d)"));
    char dir[512], src[600], exe[600];
    host_dir(dir, sizeof dir, "mod_idiv");
    snprintf(src, sizeof src, "%s/idiv.cpp", dir);
    snprintf(exe, sizeof exe, "%s/idiv", dir);
    FILE *f = fopen(src, "w");
    assert_non_null(f);
    char *text = host_text(cu);
    fprintf(f, "#define FA4_CHECKED 0\n%s\n%s\n", shim, text);
    free(text);
    fputs("static unsigned long long st = 88172645463325252ull;\n"
          "static unsigned rnd(void) { st ^= st << 13; st ^= st >> 7; st ^= st << 17; return (unsigned)st; }\n"
          "static long bad, n;\n"
          "static void one(int a, int b)\n{\n"
          "    n++;\n"
          "    if (fa4_idiv_u(a, b) != fa4_idiv(a, b) || fa4_imod_u(a, b) != fa4_imod(a, b)) {\n"
          "        if (bad++ < 5) printf(\"mismatch %d / %d: %d %d, want %d %d\\n\", a, b, fa4_idiv_u(a, b), "
          "fa4_imod_u(a, b), fa4_idiv(a, b), fa4_imod(a, b));\n    }\n}\n"
          "static void near(int a, int b) { for (int k = -2; k <= 2; k++) one((int)((unsigned)a + (unsigned)k), b); }\n"
          "int main(void)\n{\n"
          "    int e[72], ne = 0;\n"
          "    for (int k = 0; k < 31; k++) { e[ne++] = 1 << k; e[ne++] = -(1 << k); }\n"
          "    e[ne++] = 0; e[ne++] = 3; e[ne++] = -3; e[ne++] = 7; e[ne++] = 641; e[ne++] = 6700417;\n"
          "    e[ne++] = 2147483647; e[ne++] = -2147483647; e[ne++] = -2147483647 - 1; e[ne++] = 1000003;\n"
          "    for (int i = 0; i < ne; i++)\n"
          "        for (int j = 0; j < ne; j++) { near(e[i], e[j]); near(e[i], e[j] + 1); near(e[i], e[j] - 1); }\n"
          "    for (int b = -65536; b <= 65536; b++)\n"
          "        for (int k = 0; k < 24; k++) {\n"
          "            const int q = (int)rnd() % (b ? 2147483647 / (b < 0 ? -b : b) + 1 : 7);\n"
          "            near((int)((unsigned)q * (unsigned)b), b);\n"
          "            one((int)rnd(), b);\n"
          "        }\n"
          "    for (int k = 0; k < 2000000; k++) {\n"
          "        int b = (int)rnd() >> (rnd() % 32);\n"
          "        one((int)rnd(), b);\n"
          "        const int q = (int)rnd() % (b ? 2147483647 / (b < 0 ? -(unsigned)b : (unsigned)b) + 1 : 7);\n"
          "        near((int)((unsigned)q * (unsigned)b), b);\n"
          "    }\n"
          "    printf(\"%ld pairs, %ld mismatches\\n\", n, bad);\n"
          "    return bad != 0;\n}\n",
          f);
    fclose(f);
    const int rc = compile_and_run(src, exe);
    host_dir_done(dir);
    free(cu);
    fa4__mod_free(m);
    assert_int_equal(rc, 0);
}

/* Where fa4_score_mod_tile takes a box, score_mod is what the tile form gives at every position of
 * it, bit for bit (and score + fa4_score_mod_tile_add where the backward's add form exists): the
 * whole box checked, not one point, for every mod with a tile form (the shipped ones, the test
 * cases and helper-call mods below, whose tests the abstract evaluation runs through the helper:
 * ifs, returns, int and float bounds, log2f, sqrtf, floorf, a bool helper), at random aux values
 * and at named ones (t5_bias with 32 buckets and max distance 128, as the benchmarks), over boxes
 * of the kernels' sizes (and the backward's runs of query tiles, up to 512 x 16) at random
 * distances from the diagonal, up to 5000 away; and over the backward's long boxes (16 keys
 * against up to 2^20 queries, all at least d before or after them: FA4_SM90_BWD_TILE_SAT), checked
 * at their nearest rows, far end and random rows between. */
static const char *const box_mods[][2] = {
    {"ramp", "float ramp(int d) {\n    if (d > 100) { return 1.5f; }\n    if (d < -100) { return -1.5f; }\n"
             "    return (float)d * 0.015f;\n}\n"
             "float score_mod(float s, int b, int h, int q, int kv) { return s + ramp(kv - q); }\n"},
    {"logbucket", "int lb(int d, int cap) {\n    int n = abs(d);\n    if (n < 4) { return n; }\n"
                  "    int v = 4 + (int)(log2f((float)n) * 2.0f);\n    return min(v, cap);\n}\n"
                  "float score_mod(float s, int b, int h, int q, int kv, const float *t, int cap) {\n"
                  "    return s + t[lb(kv - q, cap)];\n}\n"},
    {"sqrtbucket", "int sb(int d) {\n    float x = sqrtf((float)abs(d));\n    int k = (int)floorf(x);\n"
                   "    if (d < 0) { k = -k; }\n    return clamp(k, -12, 12) + 12;\n}\n"
                   "float score_mod(float s, int b, int h, int q, int kv, const float *t) { return s + t[sb(kv - q)]; }\n"},
    {"farnear", "bool far(int d, int w) { return d > w || d < -w; }\n"
                "float pick(int d, float a, float c) {\n    float r = c;\n    if (far(d, 64)) { r = a; } else { r = c * 0.5f; }\n"
                "    return r;\n}\n"
                "float score_mod(float s, int b, int h, int q, int kv, float a, float c) { return s + pick(kv - q, a, c); }\n"},
    {"expdecay", "float dec(int d) {\n    float x = expf(-0.05f * (float)abs(d));\n    if (x < 0.001f) { return 0.0f; }\n"
                 "    return x;\n}\n"
                 "float score_mod(float s, int b, int h, int q, int kv) { return s + dec(kv - q); }\n"},
};

static int check_boxes(const char *dir, const char *name, const char *src, size_t len, uint64_t seed,
                       const char *const *set, int *boxes_taken, int *long_taken)
{
    fa4__mod *m = mt_parse(src, len, name);
    assert_non_null(m);
    const int n = fa4__mod_num_aux(m);
    fa4_aux_value aux[FA4__MOD_MAX_AUX];
    mt_make_aux(m, &seed, 4096, aux);
    for (int k = 0; set && set[k]; k += 2) /* named scalars: "name", "value" */
        for (int i = 0; i < n; i++)
            if (!strcmp(aux[i].name, set[k]))
                aux[i].i = atoi(set[k + 1]);
    char *cu = fa4__mod_emit_cuda(m, name, 0);
    assert_non_null(cu);
    if (!strstr(cu, "#define FA4_SCORE_MOD_TILE 1") && !strstr(cu, "#define FA4_SCORE_MOD_TILE 2")) {
        free(cu);
        mt_free_aux(aux, n);
        fa4__mod_free(m);
        *boxes_taken = -1;
        return 0;
    }
    char srcp[600], exe[600], cmd[2048];
    snprintf(srcp, sizeof srcp, "%s/%s.box.cpp", dir, name);
    snprintf(exe, sizeof exe, "%s/%s.box", dir, name);
    FILE *f = fopen(srcp, "w");
    assert_non_null(f);
    char *text = host_text(cu);
    fprintf(f, "#define FA4_CHECKED 0\n%s\n%s\n", shim, text);
    free(text);
    write_aux_data(f, m, aux);
    fprintf(f, "static unsigned long long st = %lluull;\n"
               "static unsigned rnd(void) { st ^= st << 13; st ^= st >> 7; st ^= st << 17; return (unsigned)st; }\n",
            (unsigned long long)(seed | 1u));
    /* one position (q, kv) of a box that took the tile form tl, at a random score */
    fputs("static long pos = 0, bad = 0;\n"
          "static void check_at(const fa4_aux &a, const fa4_score_tile &tl, int bb, int h, int q, int kv, const char *box,\n"
          "                     int q0, int q1, int k0, int k1)\n"
          "{\n"
          "    const float sc = (float)((int)(rnd() % 2001) - 1000) * 0.01f;\n"
          "    const float want = fa4_score_mod(sc, bb, h, q, kv, a);\n"
          "    const float got = fa4_score_mod_t(sc, bb, h, q, kv, a, tl);\n"
          "    int ok = __float_as_int(want) == __float_as_int(got) || (want != want && got != got);\n"
          "#if FA4_SCORE_MOD_TILE_ADD\n"
          "    const float add = sc + fa4_score_mod_tile_add(tl);\n"
          "    ok = ok && (__float_as_int(want) == __float_as_int(add) || (want != want && add != add));\n"
          "#endif\n"
          "    pos++;\n"
          "    if (!ok && bad++ < 5)\n"
          "        printf(\"mismatch b %d h %d %s q %d..%d kv %d..%d at (%d, %d): %a, tile form %a\\n\", bb, h, box, q0, q1,\n"
          "               k0, k1, q, kv, want, got);\n"
          "}\n"
          "int main(void)\n{\n",
          f);
    write_aux_setup(f, m, aux);
    /* the forward's and backward's boxes, and the backward's runs of 4 and 8 query tiles
     * (FA4_SM90_BWD_TILE_RUN: 256 x 16, 512 x 16) */
    fputs("    static const int bq[7] = {64, 16, 64, 128, 1, 256, 512}, bk[7] = {16, 176, 128, 176, 1, 16, 16};\n"
          "    long taken = 0;\n"
          "    for (int i = 0; i < 600; i++) {\n"
          "        const int sz = (int)(rnd() % 7), bb = (int)(rnd() % 2), h = (int)(rnd() % 8);\n"
          "        const int q0 = (int)(rnd() % 8192);\n"
          "        const int dist = i % 3 == 0 ? (int)(rnd() % 10001) - 5000 : (int)(rnd() % 601) - 300;\n"
          "        const int k0 = q0 + dist;\n"
          "        fa4_score_tile tl;\n"
          "        if (!fa4_score_mod_tile(bb, h, q0, q0 + bq[sz] - 1, k0, k0 + bk[sz] - 1, a, tl))\n"
          "            continue;\n"
          "        taken++;\n"
          "        for (int q = q0; q < q0 + bq[sz]; q++)\n"
          "            for (int kv = k0; kv < k0 + bk[sz]; kv++)\n"
          "                check_at(a, tl, bb, h, q, kv, \"box\", q0, q0 + bq[sz] - 1, k0, k0 + bk[sz] - 1);\n"
          "    }\n"
          /* the backward's two boxes per warp and head (FA4_SM90_BWD_TILE_SAT): 16 keys against
           * every query at least d before or after them, up to 2^20 rows long; checked at the 64
           * rows nearest the keys, the far end and 1024 random rows between, every key */
          "    long ltaken = 0;\n"
          "    for (int i = 0; i < 80; i++) {\n"
          "        const int j = (int)(rnd() % 16), d = (8 << (j >> 1)) + (j & 1) * (4 << (j >> 1));\n"
          "        const int bb = (int)(rnd() % 2), h = (int)(rnd() % 8), k0 = (int)(rnd() % (1 << 21)) - (1 << 20);\n"
          "        const int len = 64 + (int)(rnd() % (1 << 20)), before = i % 2;\n"
          "        const int qlo = before ? k0 - d - len + 1 : k0 + 15 + d, qhi = qlo + len - 1;\n"
          "        fa4_score_tile tl;\n"
          "        if (!fa4_score_mod_tile(bb, h, qlo, qhi, k0, k0 + 15, a, tl))\n"
          "            continue;\n"
          "        ltaken++;\n"
          "        for (int r = 0; r < 64 + 1 + 1024; r++) {\n"
          "            const int q = r < 64 ? (before ? qhi - r : qlo + r) : r == 64 ? (before ? qlo : qhi)\n"
          "                                                           : qlo + (int)(rnd() % (unsigned)len);\n"
          "            for (int kv = k0; kv < k0 + 16; kv++)\n"
          "                check_at(a, tl, bb, h, q, kv, \"long box\", qlo, qhi, k0, k0 + 15);\n"
          "        }\n"
          "    }\n"
          "    printf(\"%ld %ld %ld %ld\\n\", taken, pos, bad, ltaken);\n"
          "    return 0;\n}\n",
          f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "c++ -std=c++17 -O1 -w -o '%s' '%s' -lm && '%s'", exe, srcp, exe);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char line[512], last[512] = "";
    while (fgets(line, sizeof line, p)) {
        if (!strncmp(line, "mismatch", 8))
            fprintf(stderr, "%s: %s", name, line);
        snprintf(last, sizeof last, "%s", line);
    }
    const int rc = pclose(p);
    long taken = -1, pos = 0, bad = 1, ltaken = 0;
    if (rc != 0 || sscanf(last, "%ld %ld %ld %ld", &taken, &pos, &bad, &ltaken) != 4) {
        fprintf(stderr, "%s: the box check did not build or run (rc %d)\n", name, rc);
        bad = 1;
    }
    printf("%s: tile form taken in %ld of 600 boxes and %ld of 80 long ones, %ld positions checked, %ld mismatches\n",
           name, taken, ltaken, pos, bad);
    *boxes_taken = (int)taken;
    if (long_taken)
        *long_taken = (int)ltaken;
    free(cu);
    mt_free_aux(aux, n);
    fa4__mod_free(m);
    return bad != 0;
}

static void tile_form_holds_over_box(void **state)
{
    (void)state;
    skip_without_cxx();
    char dir[512];
    host_dir(dir, sizeof dir, "mod_box");
    int bad = 0, taken = 0;
    char *names[MT_MAX_MODS];
    const int n = mt_list_mods(names);
    for (int i = 0; i < n; i++) {
        size_t len = 0;
        char *src = mt_read_mod(names[i], &len);
        assert_non_null(src);
        bad += check_boxes(dir, names[i], src, len, 3000u + (uint64_t)i, NULL, &taken, NULL);
        if (!strcmp(names[i], "t5_bias") || !strcmp(names[i], "rel_bias")) {
            if (taken <= 0)
                fprintf(stderr, "%s: no box took the tile form\n", names[i]);
            bad += taken <= 0;
        }
        if (!strcmp(names[i], "t5_bias")) {
            static const char *const bench[] = {"num_buckets", "32", "max_distance", "128", NULL};
            static const char *const small[] = {"num_buckets", "8", "max_distance", "16", NULL};
            int lt = 0;
            bad += check_boxes(dir, "t5_bias_32_128", src, len, 3100u, bench, &taken, &lt);
            bad += taken < 100; /* the far boxes (a third of them at up to 5000) */
            bad += lt < 20;     /* the long boxes at d >= 96 (half of the d) */
            bad += check_boxes(dir, "t5_bias_8_16", src, len, 3101u, small, &taken, NULL);
            bad += taken <= 0;
        }
        free(src);
        free(names[i]);
    }
    for (size_t i = 0; i < sizeof box_mods / sizeof box_mods[0]; i++) {
        bad += check_boxes(dir, box_mods[i][0], box_mods[i][1], strlen(box_mods[i][1]), 3200u + (uint64_t)i, NULL,
                           &taken, NULL);
        if (taken <= 0)
            fprintf(stderr, "%s: no tile form taken (expected one)\n", box_mods[i][0]);
        bad += taken <= 0;
    }
    static const char *const cases[] = {"tiles"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[512];
        size_t len = 0;
        snprintf(path, sizeof path, "%s/tests/mod/cases/%s.mod", FA4_TEST_SOURCE_DIR, cases[i]);
        char *src = mt_read_file(path, &len);
        assert_non_null(src);
        bad += check_boxes(dir, cases[i], src, len, 3300u + (uint64_t)i, NULL, &taken, NULL);
        free(src);
    }
    host_dir_done(dir);
    assert_int_equal(bad, 0);
}

/* The relative form's backward entry points (emit_deriv.c: fa4_score_mod_rel_sites and
 * fa4_score_mod_rel_grad_acc, which the sm90 backward's grads_rel runs once per offset of a
 * fragment): with every float tensor trainable, at random points g is score_mod's value less the
 * score, the index and coefficient of each trainable site are what fa4_score_mod_aux_grad_terms
 * gives there, bit for bit, and all three are unchanged where both positions shift (by 8: the
 * kernel's reuse; by -37); terms fed through the runs and flushed add up to the direct sums. */
static const char rel_two_tensors[] =
    "float score_mod(float score, int b, int h, int q, int kv, const float *w, const float *u) {\n"
    "    int r = kv - q;\n"
    "    return score + (w[clamp(r, -4, 4) + 4] * u[h] + u[clamp(r, 0, 7)]);\n"
    "}\n";

static int check_rel_sites(const char *dir, const char *name, const char *src, size_t len, uint64_t seed)
{
    fa4__mod *m = mt_parse(src, len, name);
    assert_non_null(m);
    const int n = fa4__mod_num_aux(m);
    const char *names[FA4__MOD_MAX_AUX];
    int nt = 0;
    for (int i = 0; i < n; i++) {
        const fa4__aux_decl *a = fa4__mod_aux(m, i);
        if (a->is_tensor && a->dtype == FA4_DTYPE_FP32)
            names[nt++] = a->name;
    }
    assert_true(nt > 0);
    fa4__diag dg;
    assert_int_equal(fa4__mod_set_trainable(m, names, nt, &dg), FA4_OK);
    fa4_aux_value aux[FA4__MOD_MAX_AUX];
    mt_make_aux(m, &seed, NUMEL, aux);
    char *cu = fa4__mod_emit_cuda(m, name, 0);
    assert_non_null(cu);
    assert_non_null(strstr(cu, "#define FA4_SCORE_MOD_REL_SITES 1"));
    char srcf[600], exe[600];
    snprintf(srcf, sizeof srcf, "%s/%s.relsites.cpp", dir, name);
    snprintf(exe, sizeof exe, "%s/%s.relsites", dir, name);
    FILE *f = fopen(srcf, "w");
    assert_non_null(f);
    char *text = host_text(cu);
    fprintf(f, "#define FA4_CHECKED 0\n%s\n%s\n", shim, text);
    free(text);
    write_aux_data(f, m, aux);
    for (int i = 0; i < nt; i++)
        fprintf(f, "static float fa4_g%d[%d], fa4_r%d[%d];\n", i, NUMEL, i, NUMEL);
    fprintf(f, "static unsigned long long st = %lluull;\n"
               "static unsigned rnd(void) { st ^= st << 13; st ^= st >> 7; st ^= st << 17; return (unsigned)st; }\n"
               "static int same(float x, float y) { return __float_as_int(x) == __float_as_int(y); }\n"
               "int main(void)\n{\n",
            (unsigned long long)seed | 1ull);
    write_aux_setup(f, m, aux);
    for (int i = 0; i < nt; i++)
        fprintf(f, "    a.%s_grad = fa4_g%d;\n", names[i], i);
    fprintf(f,
            "    const int S = FA4_NUM_AUX_GRAD_SITES;\n"
            "    float *ref[%d] = {", nt);
    for (int i = 0; i < nt; i++)
        fprintf(f, "%sfa4_r%d", i ? ", " : "", i);
    fprintf(f, "};\n    float *grads[%d] = {", nt);
    for (int i = 0; i < nt; i++)
        fprintf(f, "%sfa4_g%d", i ? ", " : "", i);
    fprintf(f,
            "};\n"
            "    long bad = 0, runs_at = 0;\n"
            "    fa4_aux_grad_acc acc;\n"
            "    fa4_aux_grad_begin(acc);\n"
            "    for (int p = 0; p < 4000; p++) {\n"
            "        const int b = (int)(rnd() %% 4), h = (int)(rnd() %% 8), q = (int)(rnd() %% 400);\n"
            "        const int kv = p %% 2 ? (int)(rnd() %% 400) : q + (int)(rnd() %% 61) - 30;\n"
            "        const float sc = (float)((int)(rnd() %% 2001) - 1000) / 64.0f;\n"
            "        int at[S], at8[S], atm[S];\n"
            "        float cf[S], cf8[S], cfm[S], what[S];\n"
            "        float *where[S];\n"
            "        const float g = fa4_score_mod_rel_sites(b, h, q, kv, a, at, cf);\n"
            "        const float g8 = fa4_score_mod_rel_sites(b, h, q + 8, kv + 8, a, at8, cf8);\n"
            "        const float gm = fa4_score_mod_rel_sites(b, h, q - 37, kv - 37, a, atm, cfm);\n"
            "        fa4_score_mod_aux_grad_terms(sc, b, h, q, kv, a, 1.0f, where, what);\n"
            "        if (!(sc + g == fa4_score_mod(sc, b, h, q, kv, a)) || !same(g, g8) || !same(g, gm)) {\n"
            "            if (bad++ < 5) printf(\"point %%d (%%d %%d %%d %%d): g %%a (+8: %%a, -37: %%a), score %%a, mod %%a\\n\",\n"
            "                                  p, b, h, q, kv, g, g8, gm, sc, fa4_score_mod(sc, b, h, q, kv, a));\n"
            "        }\n"
            "        for (int k = 0; k < S; k++) {\n"
            "            float *base = fa4_aux_grad_site_grad(k, a);\n"
            "            const int idx = where[k] ? (int)(where[k] - base) : -1;\n"
            "            if (at[k] != idx || !same(cf[k], what[k]) || at8[k] != at[k] || atm[k] != at[k] ||\n"
            "                !same(cf8[k], cf[k]) || !same(cfm[k], cf[k])) {\n"
            "                if (bad++ < 5) printf(\"point %%d (%%d %%d %%d %%d) site %%d: index %%d coef %%a, terms %%d %%a, \"\n"
            "                                      \"+8: %%d %%a, -37: %%d %%a\\n\", p, b, h, q, kv, k, at[k], cf[k], idx,\n"
            "                                      what[k], at8[k], cf8[k], atm[k], cfm[k]);\n"
            "            }\n"
            "        }\n"
            "        /* a term (zero one time in eight) through the runs, and the same added directly */\n"
            "        const float d = rnd() %% 8 ? (float)((int)(rnd() %% 2001) - 1000) / 512.0f : 0.0f;\n"
            "        runs_at += S;\n"
            "        fa4_score_mod_rel_grad_acc(a, at, cf, d, acc);\n"
            "        for (int k = 0; k < S; k++)\n"
            "            for (int t = 0; t < %d; t++)\n"
            "                if (fa4_aux_grad_site_grad(k, a) == grads[t] && at[k] >= 0 && d != 0.0f)\n"
            "                    ref[t][at[k]] += d * cf[k];\n"
            "    }\n"
            "    fa4_aux_grad_flush(a, acc);\n"
            "    for (int t = 0; t < %d; t++)\n"
            "        for (int i = 0; i < %d; i++)\n"
            "            if (fabsf(grads[t][i] - ref[t][i]) > 1e-4f * (1.0f + fabsf(ref[t][i]))) {\n"
            "                if (bad++ < 5) printf(\"tensor %%d entry %%d: runs %%a, direct %%a\\n\", t, i, grads[t][i], ref[t][i]);\n"
            "            }\n"
            "    printf(\"%s: 4000 points, %%ld site terms, %%ld mismatches\\n\", runs_at, bad);\n"
            "    return bad != 0;\n}\n",
            nt, nt, NUMEL, name);
    fclose(f);
    const int rc = compile_and_run(srcf, exe);
    free(cu);
    mt_free_aux(aux, n);
    fa4__mod_free(m);
    return rc != 0;
}

static void relative_sites_match_terms(void **state)
{
    (void)state;
    skip_without_cxx();
    char dir[512];
    host_dir(dir, sizeof dir, "mod_relsites");
    int bad = 0;
    static const char *const shipped[] = {"rel_bias", "t5_bias", "alibi"};
    for (size_t i = 0; i < sizeof shipped / sizeof shipped[0]; i++) {
        char path[512];
        size_t len = 0;
        snprintf(path, sizeof path, "%s/mods/%s.mod", FA4_TEST_SOURCE_DIR, shipped[i]);
        char *src = mt_read_file(path, &len);
        assert_non_null(src);
        bad += check_rel_sites(dir, shipped[i], src, len, 3000u + (uint64_t)i);
        free(src);
    }
    bad += check_rel_sites(dir, "rel_two_tensors", rel_two_tensors, strlen(rel_two_tensors), 3100u);
    host_dir_done(dir);
    assert_int_equal(bad, 0);
}

/* The deterministic mode's fixed-point aux-gradient terms (emit_deriv.c, FA4_AUX_FX:
 * fa4_aux_grad_global and fa4_aux_fx_split) on the host: 20000 terms from 2^-60 to 2^30 in
 * magnitude, both signs, into 8 entries in three orders; every order must give the same words,
 * and hi 2^36 + lo must be exactly the sum of round(v 2^56) (computed here in 128-bit integers);
 * NaN, +inf and a term over 2^40 set the flags 1, 2, 4. */
static void fixed_point_aux_terms(void **state)
{
    (void)state;
    skip_without_cxx();
    char dir[512];
    host_dir(dir, sizeof dir, "mod_fx");
    char path[512];
    size_t len = 0;
    snprintf(path, sizeof path, "%s/mods/rel_bias.mod", FA4_TEST_SOURCE_DIR);
    char *src = mt_read_file(path, &len);
    assert_non_null(src);
    fa4__mod *m = mt_parse(src, len, "rel_bias");
    assert_non_null(m);
    const char *names[1] = {"bias"};
    fa4__diag dg;
    assert_int_equal(fa4__mod_set_trainable(m, names, 1, &dg), FA4_OK);
    char *cu = fa4__mod_emit_cuda(m, "rel_bias", 0);
    assert_non_null(cu);
    assert_non_null(strstr(cu, "fa4_aux_fx_split"));
    char srcf[600], exe[600];
    snprintf(srcf, sizeof srcf, "%s/fx.cpp", dir);
    snprintf(exe, sizeof exe, "%s/fx", dir);
    FILE *f = fopen(srcf, "w");
    assert_non_null(f);
    char *text = host_text(cu);
    fprintf(f, "#define FA4_CHECKED 0\n#define FA4_AUX_FX 1\n%s\n"
               "static inline float __fmul_rn(float a, float b) { return a * b; }\n"
               "static inline float __fsub_rn(float a, float b) { return a - b; }\n"
               "static inline long long __float2ll_rn(float x) { return llrintf(x); }\n"
               "static inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v)\n"
               "{ unsigned long long o = *p; *p = o + v; return o; }\n"
               "static inline unsigned long long atomicOr(unsigned long long *p, unsigned long long v)\n"
               "{ unsigned long long o = *p; *p = o | v; return o; }\n"
               "%s\n",
            shim, text);
    free(text);
    fputs("static unsigned long long st = 88172645463325252ull;\n"
          "static unsigned rnd(void) { st ^= st << 13; st ^= st >> 7; st ^= st << 17; return (unsigned)st; }\n"
          "enum { N = 20000, E = 8 };\n"
          "static float v[N];\n"
          "static unsigned long long acc[3][3 * E];\n"
          "int main(void)\n{\n"
          "    __int128 want[E] = {0};\n"
          "    for (int i = 0; i < N; i++) {\n"
          "        const float m = 1.0f + (float)(rnd() % 8388608u) / 8388608.0f;\n"
          "        v[i] = (rnd() & 1 ? -1.0f : 1.0f) * ldexpf(m, (int)(rnd() % 91) - 60);\n"
          "        if (i % 97 == 0) v[i] = 0.0f;\n"
          "        want[i % E] += (__int128)nearbyint(ldexp((double)v[i], 56));\n"
          "    }\n"
          "    int perm[N];\n"
          "    for (int i = 0; i < N; i++) perm[i] = i;\n"
          "    for (int i = N - 1; i > 0; i--) { const int j = (int)(rnd() % (unsigned)(i + 1)), t = perm[i]; perm[i] = perm[j]; perm[j] = t; }\n"
          "    for (int i = 0; i < N; i++) {\n"
          "        fa4_aux_grad_global((float *)acc[0], i % E, v[i]);\n"
          "        fa4_aux_grad_global((float *)acc[1], (N - 1 - i) % E, v[N - 1 - i]);\n"
          "        fa4_aux_grad_global((float *)acc[2], perm[i] % E, v[perm[i]]);\n"
          "    }\n"
          "    long bad = 0;\n"
          "    for (int k = 0; k < E; k++) {\n"
          "        const __int128 got = (__int128)(long long)acc[0][3 * k] * ((__int128)1 << 36) + (long long)acc[0][3 * k + 1];\n"
          "        if (got != want[k] || acc[0][3 * k + 2]) { if (bad++ < 5) printf(\"entry %d: %.17g, want %.17g\\n\", k, (double)got, (double)want[k]); }\n"
          "        for (int o = 1; o < 3; o++)\n"
          "            for (int w = 0; w < 3; w++)\n"
          "                if (acc[o][3 * k + w] != acc[0][3 * k + w]) { if (bad++ < 5) printf(\"entry %d word %d differs in order %d\\n\", k, w, o); }\n"
          "    }\n"
          "    unsigned long long sp[9] = {0};\n"
          "    fa4_aux_grad_global((float *)sp, 0, NAN);\n"
          "    fa4_aux_grad_global((float *)sp, 1, INFINITY);\n"
          "    fa4_aux_grad_global((float *)sp, 2, -0x1p41f);\n"
          "    if (sp[2] != 1 || sp[5] != 2 || sp[8] != 4 || sp[0] | sp[1] | sp[3] | sp[4] | sp[6] | sp[7]) {\n"
          "        bad++;\n"
          "        printf(\"special terms: flags %llu %llu %llu\\n\", sp[2], sp[5], sp[8]);\n"
          "    }\n"
          "    printf(\"fixed point: %d terms into %d entries, 3 orders, %ld mismatches\\n\", N, E, bad);\n"
          "    return bad != 0;\n}\n", f);
    fclose(f);
    const int rc = compile_and_run(srcf, exe);
    free(cu);
    free(src);
    fa4__mod_free(m);
    host_dir_done(dir);
    assert_int_equal(rc, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(emitted_matches_evaluator),
        cmocka_unit_test(uniform_int_division),
        cmocka_unit_test(tile_form_holds_over_box),
        cmocka_unit_test(relative_sites_match_terms),
        cmocka_unit_test(fixed_point_aux_terms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
