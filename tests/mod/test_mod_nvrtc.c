/*
 * test_mod_nvrtc.c - every shipped mod (and the test mods in tests/mod/cases) emits a header that
 * NVRTC compiles for sm_90a and sm_80 with no warnings: the header is wrapped in a small kernel
 * that calls all four entry points (fa4_score_mod, fa4_mask_mod, fa4_score_mod_fwd_deriv,
 * fa4_score_mod_aux_grad) and, where a mod has trainable read sites, the kernels' run-combining
 * accumulator (fa4_aux_grad_acc), in release and checked builds, with every float aux tensor trainable.
 * NVRTC needs no GPU. Skips (with the reason) where NVRTC cannot be loaded. With
 * FA4_MOD_DUMP_DIR set, the headers are also written there (tests/mod/gpu/run_emitted.py runs them).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <nvrtc.h>

#include "mod_test_util.h"

static const char wrapper[] =
    "\nextern \"C\" __global__ void fa4_mod_test_kernel(const float *scores, const int *coords,\n"
    "                                                 float *out, fa4_aux aux)\n"
    "{\n"
    "    const int t = threadIdx.x;\n"
    "    const float s = scores[t];\n"
    "    const int b = coords[4 * t], h = coords[4 * t + 1];\n"
    "    const int q = coords[4 * t + 2], kv = coords[4 * t + 3];\n"
    "    float d = 0.0f;\n"
    "    const float v = fa4_score_mod(s, b, h, q, kv, aux);\n"
    "    const float w = fa4_score_mod_fwd_deriv(s, b, h, q, kv, aux, &d);\n"
    "    const bool ok = fa4_mask_mod(b, h, q, kv, aux);\n"
    "    fa4_score_mod_aux_grad(s, b, h, q, kv, aux, out[4 * t + 3]);\n"
    "    float *where[FA4_NUM_AUX_GRAD_SITES > 0 ? FA4_NUM_AUX_GRAD_SITES : 1];\n"
    "    float what[FA4_NUM_AUX_GRAD_SITES > 0 ? FA4_NUM_AUX_GRAD_SITES : 1];\n"
    "    fa4_score_mod_aux_grad_terms(s, b, h, q, kv, aux, 0.5f, where, what);\n"
    "    for (int k = 0; k < FA4_NUM_AUX_GRAD_SITES; k++)\n"
    "        if (where[k])\n"
    "            *where[k] += what[k];\n"
    "#if FA4_NUM_AUX_GRAD_SITES > 0\n"
    "    fa4_aux_grad_acc acc;\n"
    "    fa4_aux_grad_begin(acc);\n"
    "    int at[FA4_NUM_AUX_GRAD_SITES];\n"
    "    float d2 = 0.0f;\n"
    "    out[4 * t] = fa4_score_mod_fwd_deriv_sites(s, b, h, q, kv, aux, &d2, at);\n"
    "    fa4_score_mod_aux_grad_acc(s, b, h, q, kv, aux, 0.25f, at, acc);\n"
    "    fa4_score_mod_aux_grad_acc(s, b, h, q, kv, aux, d2, at, acc);\n"
    "    fa4_aux_grad_flush(aux, acc);\n"
    "#endif\n"
    "    fa4_mod_checked_finish();\n"
    "    out[4 * t] = v;\n"
    "    out[4 * t + 1] = w;\n"
    "    out[4 * t + 2] = ok ? d : -d;\n"
    "}\n";

/* Compile; returns 0 on a clean compile, else prints the log. */
static int compile(const char *what, const char *text, const char *arch)
{
    nvrtcProgram prog;
    nvrtcResult r = nvrtcCreateProgram(&prog, text, "fa4_mod_test.cu", 0, NULL, NULL);
    if (r != NVRTC_SUCCESS) {
        fprintf(stderr, "%s: nvrtcCreateProgram: %s\n", what, nvrtcGetErrorString(r));
        return -1;
    }
    char archopt[64];
    snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", arch);
    const char *opts[] = {archopt, "-std=c++17"};
    r = nvrtcCompileProgram(prog, 2, opts);
    size_t loglen = 0;
    nvrtcGetProgramLogSize(prog, &loglen);
    char *log = calloc(1, loglen + 1);
    nvrtcGetProgramLog(prog, log);
    int bad = r != NVRTC_SUCCESS || strstr(log, "warning") != NULL;
    if (bad) {
        fprintf(stderr, "%s for %s: %s\n%s\n---- source ----\n%s\n", what, arch,
                nvrtcGetErrorString(r), log, text);
    }
    free(log);
    nvrtcDestroyProgram(&prog);
    return bad ? -1 : 0;
}

static int compile_mod_text(const char *name, const char *src, size_t len)
{
    fa4__mod *m = mt_parse(src, len, name);
    if (!m)
        return -1;
    /* every float aux tensor that score_mod reads becomes trainable (others are rejected) */
    const char *names[FA4__MOD_MAX_AUX];
    int nt = 0;
    for (int i = 0; i < fa4__mod_num_aux(m); i++) {
        const char *one[1] = {fa4__mod_aux(m, i)->name};
        fa4__diag d;
        if (fa4__mod_set_trainable(m, one, 1, &d) == FA4_OK)
            names[nt++] = one[0];
    }
    fa4__diag d;
    if (fa4__mod_set_trainable(m, names, nt, &d) != FA4_OK) {
        fprintf(stderr, "%s: set_trainable: %s\n", name, d.rendered);
        fa4__mod_free(m);
        return -1;
    }
    int fails = 0;
    for (int checked = 0; checked <= 1; checked++) {
        char *hdr = fa4__mod_emit_cuda(m, name, checked);
        if (!hdr) {
            fa4__mod_free(m);
            return -1;
        }
        /* FA4_MOD_DUMP_DIR=dir keeps the headers, e.g. for tests/mod/gpu/run_emitted.py */
        const char *dump = getenv("FA4_MOD_DUMP_DIR");
        if (dump && dump[0]) {
            char path[1024];
            snprintf(path, sizeof path, "%s/%s%s.cuh", dump, name, checked ? ".checked" : "");
            FILE *f = fopen(path, "wb");
            if (f) {
                fputs(hdr, f);
                fclose(f);
            }
        }
        size_t n = strlen(hdr) + sizeof wrapper;
        char *text = malloc(n);
        snprintf(text, n, "%s%s", hdr, wrapper);
        /* sm_80 in release only: the checked variant differs by __trap alone */
        fails += compile(name, text, "sm_90a") != 0;
        if (!checked)
            fails += compile(name, text, "sm_80") != 0;
        /* the knobs a program may set: fast math, deferred checks */
        if (checked) {
            size_t n2 = n + 128;
            char *knobs = malloc(n2);
            snprintf(knobs, n2, "#define FA4_FAST_MATH 1\n#define FA4_CHECKED_DEFERRED 1\n%s",
                     text);
            fails += compile(name, knobs, "sm_90a") != 0;
            fails += compile(name, knobs, "sm_80") != 0;
            free(knobs);
        }
        free(text);
        free(hdr);
    }
    fa4__mod_free(m);
    return fails ? -1 : 0;
}

static void nvrtc_shipped_mods(void **state)
{
    (void)state;
    int major = 0, minor = 0;
    if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
        skip();
    char *names[MT_MAX_MODS];
    int n = mt_list_mods(names);
    assert_true(n >= 14);
    int fails = 0;
    for (int i = 0; i < n; i++) {
        size_t len;
        char *src = mt_read_mod(names[i], &len);
        assert_non_null(src);
        if (compile_mod_text(names[i], src, len) != 0) {
            fprintf(stderr, "FAILED: %s\n", names[i]);
            fails++;
        }
        free(src);
        free(names[i]);
    }
    assert_int_equal(fails, 0);
}

static void nvrtc_test_cases(void **state)
{
    (void)state;
    static const char *const cases[] = {"branches", "dtypes", "builtins", "tiles"};
    int fails = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/tests/mod/cases/%s.mod", FA4_TEST_SOURCE_DIR, cases[i]);
        size_t len;
        char *src = mt_read_file(path, &len);
        assert_non_null(src);
        fails += compile_mod_text(cases[i], src, len) != 0;
        free(src);
    }
    assert_int_equal(fails, 0);
}

/* A mask-only source, a score-only source, and helpers that use every builtin on the dual path. */
static void nvrtc_inline_sources(void **state)
{
    (void)state;
    static const char mask_only[] =
        "bool mask_mod(int b, int h, int q, int kv) { return q >= kv; }";
    static const char score_only_const[] =
        "float score_mod(float s, int b, int h, int q, int kv) {\n"
        "  const float big = 0x7fffffff;\n"
        "  return q >= kv ? s : -INFINITY + big * 0.0f + NAN * 0.0f;\n}";
    static const char unused_local[] =
        "float score_mod(float s, int b, int h, int q, int kv) {\n"
        "  float never = 1.0f;\n  int set_only = 2;\n  set_only = 3;\n  bool z;\n  return s;\n}";
    assert_int_equal(compile_mod_text("mask_only", mask_only, sizeof mask_only - 1), 0);
    assert_int_equal(compile_mod_text("unused_local", unused_local, sizeof unused_local - 1), 0);
    assert_int_equal(compile_mod_text("score_only", score_only_const,
                                      sizeof score_only_const - 1), 0);
}

/* The test itself can fail: a header with a type error must be reported. */
static void nvrtc_detects_warnings(void **state)
{
    (void)state;
    static const char bad[] = "__device__ int f() { int unused_var = 3; return 1; }\n"
                              "extern \"C\" __global__ void k(int *o) { o[0] = f(); }\n";
    assert_int_not_equal(compile("self-check", bad, "sm_80"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(nvrtc_shipped_mods),
        cmocka_unit_test(nvrtc_test_cases),
        cmocka_unit_test(nvrtc_inline_sources),
        cmocka_unit_test(nvrtc_detects_warnings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
