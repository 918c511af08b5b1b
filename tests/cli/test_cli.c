/*
 * test_cli.c - the `fa4jit` command as a user runs it: --help everywhere, `check` on good and bad
 * mods (compiler-style message with line, column and caret; exit 1), deviceless `compile` for
 * sm_80/sm_90a with the resource table, --json, --out cubins, --dump-source, a disk-cache hit on the
 * second compile, `info`, and usage errors (exit 2).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

static char tmpdir[256];

/* Run `fa4jit ARGS` with a private cache dir; capture stdout+stderr; return the exit status. */
static int run(const char *args, char **out)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && FA4JIT_CACHE_MODE=rw FA4JIT_CACHE_DIR='%s/cache' NO_COLOR=1 "
             "'%s/fa4jit' %s 2>&1",
             tmpdir, tmpdir, FA4_TEST_BINARY_DIR, args);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    size_t n;
    while ((n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
        len += n;
        if (len + 1 == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
    }
    buf[len] = '\0';
    int st = pclose(p);
    *out = buf;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void write_text(const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/fa4jit-cli-test-XXXXXX");
    if (!mkdtemp(tmpdir))
        return -1;
    write_text("good.mod",
               "/* ALiBi */\n"
               "float score_mod(float score, int b, int h, int q_idx, int kv_idx,\n"
               "                const float *slopes) {\n"
               "    return score + slopes[h] * (float)(kv_idx - q_idx);\n"
               "}\n");
    write_text("bad.mod",
               "float score_mod(float score, int b, int h, int q_idx, int kv_idx,\n"
               "                const float *slopes) {\n"
               "    return score + slope[h] * (float)(kv_idx - q_idx);\n"
               "}\n");
    write_text("causal.mod", "bool mask_mod(int b, int h, int q_idx, int kv_idx) {\n"
                             "    return q_idx >= kv_idx;\n"
                             "}\n");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_help_everywhere(void **state)
{
    (void)state;
    const char *cmds[] = {"--help", "check --help", "compile --help", "info --help",
                          "cache --help"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        char *out;
        int rc = run(cmds[i], &out);
        if (rc != 0 || !strstr(out, "usage"))
            fail_msg("'fa4jit %s' exited %d: %s", cmds[i], rc, out);
        free(out);
    }
}

static void test_usage_errors(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(run("frobnicate", &out), 2);
    assert_non_null(strstr(out, "unknown command 'frobnicate'"));
    free(out);
    assert_int_equal(run("compile good.mod --arch sm_90a --head-dim", &out), 2);
    assert_non_null(strstr(out, "--head-dim needs a value"));
    free(out);
    assert_int_equal(run("compile good.mod --arch sm_90a --dtype fp8", &out), 2);
    free(out);
    assert_int_equal(run("compile", &out), 2);
    free(out);
    assert_int_equal(run("compile missing.mod --arch sm_90a", &out), 1);
    assert_non_null(strstr(out, "cannot open 'missing.mod'"));
    free(out);
}

static void test_check_points_at_the_error(void **state)
{
    (void)state;
    char *out;
    int rc = run("check good.mod", &out);
    if (rc != 0)
        fail_msg("check good.mod: %d: %s", rc, out);
    /* what the sm90 forward makes of it: slopes[h] once per fragment, no tile form */
    if (!strstr(out, "sm90 forward: 1 position-independent part of score_mod computed once per "
                     "fragment; no tile form"))
        fail_msg("check good.mod: no forward summary:\n%s", out);
    if (!strstr(out, "sm90: score_mod is affine"))
        fail_msg("check good.mod: no affine form:\n%s", out);
    if (strstr(out, "reads its score only as score / D"))
        fail_msg("check good.mod: prescaled:\n%s", out);
    free(out);
    write_text("capped.mod", "float score_mod(float score, int b, int h, int q_idx, int kv_idx, float cap) {\n"
                             "    return cap * tanhf(score / cap);\n}\n");
    rc = run("check capped.mod", &out);
    if (rc != 0 || !strstr(out, "score_mod reads its score only as score / D"))
        fail_msg("check capped.mod: %d: %s", rc, out);
    free(out);
    write_text("relpos.mod", "float score_mod(float score, int b, int h, int q_idx, int kv_idx,\n"
                             "                const float *bias) {\n"
                             "    return score + bias[clamp(kv_idx - q_idx, -8, 8) + 8];\n}\n");
    rc = run("check relpos.mod", &out);
    if (rc != 0 || !strstr(out, "a tile form (score + c") || !strstr(out, "score_mod is not affine") ||
        !strstr(out, "score_mod is score + g(kv_idx - q_idx)") || strstr(out, "g is costly"))
        fail_msg("check relpos.mod: %d: %s", rc, out);
    free(out);
    /* a log in g (t5_bias's buckets): shared by shuffles in the trainable backward */
    write_text("logpos.mod", "float score_mod(float score, int b, int h, int q_idx, int kv_idx,\n"
                             "                const float *bias) {\n"
                             "    return score + bias[clamp((int)logf((float)abs(kv_idx - q_idx) + 1.0f), 0, 7)];\n}\n");
    rc = run("check logpos.mod", &out);
    if (rc != 0 || !strstr(out, "score_mod is score + g(kv_idx - q_idx)") || !strstr(out, "g is costly"))
        fail_msg("check logpos.mod: %d: %s", rc, out);
    free(out);
    /* a bucket helper (t5_bias's shape): the tile test runs the helper over the box, which only the
     * backward asks; the forward keeps the relative form's table */
    write_text("bucket.mod", "int bk(int r) {\n    int n = abs(r);\n    if (n < 4) { return n; }\n"
                             "    return min(4 + (int)(logf((float)n) * 2.0f), 15);\n}\n"
                             "float score_mod(float score, int b, int h, int q_idx, int kv_idx,\n"
                             "                const float *bias) {\n"
                             "    return score + bias[bk(kv_idx - q_idx)];\n}\n");
    rc = run("check bucket.mod", &out);
    if (rc != 0 || !strstr(out, "no tile form (its test would evaluate a helper over every tile") ||
        !strstr(out, "sm90 backward: a tile form (score + c where its index-dependent parts, helper calls "
                     "included") ||
        !strstr(out, "the forward reads g from a table"))
        fail_msg("check bucket.mod: %d: %s", rc, out);
    free(out);
    rc = run("check bad.mod", &out);
    assert_int_equal(rc, 1);
    /* line 3, column 20: the 's' of "slope" */
    if (!strstr(out, ":3:20: error: ") || !strstr(out, "slope") || !strstr(out, "slopes") ||
        !strstr(out, "    return score + slope[h] * (float)(kv_idx - q_idx);\n") ||
        !strstr(out, "\n                   ^"))
        fail_msg("unexpected check output:\n%s", out);
    free(out);
}

static void test_compile_json_out_and_cache_hit(void **state)
{
    (void)state;
    char *out;
    int rc = run("compile good.mod causal.mod --arch sm_80 --head-dim 64 --kernels fwd --json "
                 "--out cubins --quiet",
                 &out);
    if (rc != 0)
        fail_msg("compile: %d: %s", rc, out);
    assert_non_null(strstr(out, "\"ok\":true"));
    assert_non_null(strstr(out, "\"arch\":\"sm_80\""));
    assert_non_null(strstr(out, "\"cache\":\"miss\""));
    assert_non_null(strstr(out, "\"name\":\"fwd\""));
    assert_null(strstr(out, "\"ok\":false"));
    free(out);
    char path[512];
    struct stat st;
    snprintf(path, sizeof path, "%s/cubins/good.fwd.sm_80.cubin", tmpdir);
    assert_int_equal(stat(path, &st), 0);
    assert_true(st.st_size > 1000);
    /* the same compile again comes from the disk cache */
    rc = run("compile good.mod --arch sm_80 --head-dim 64 --kernels fwd", &out);
    if (rc != 0 || !strstr(out, "disk-hit"))
        fail_msg("second compile: %d: %s", rc, out);
    assert_non_null(strstr(out, "regs"));
    free(out);
}

/* --deterministic with a trainable aux tensor adds the fixed-point backward main (bwd_main_fx);
 * without it the backward has none */
static void test_compile_deterministic_trainable(void **state)
{
    (void)state;
    char *out;
    int rc = run("compile good.mod --arch sm_80 --head-dim 64 --kernels bwd --trainable slopes "
                 "--deterministic --no-cache --json --quiet",
                 &out);
    if (rc != 0 || !strstr(out, "\"name\":\"bwd_main_fx\"") || !strstr(out, "\"name\":\"bwd_main\""))
        fail_msg("compile --deterministic: %d: %.2000s", rc, out);
    free(out);
    rc = run("compile good.mod --arch sm_80 --head-dim 64 --kernels bwd --trainable slopes --no-cache "
             "--json --quiet",
             &out);
    if (rc != 0 || strstr(out, "bwd_main_fx") || !strstr(out, "\"name\":\"bwd_main\""))
        fail_msg("compile without --deterministic: %d: %.2000s", rc, out);
    free(out);
}

/* The JSON's cache key (the 32 hex digits after "key":"), or "" */
static void json_key(const char *out, char key[33])
{
    const char *k = strstr(out, "\"key\":\"");
    key[0] = '\0';
    if (k && strlen(k + 7) >= 32) {
        memcpy(key, k + 7, 32);
        key[32] = '\0';
    }
}

/* --gqa: the Hopper backward's GQA program (bwd_main90m80s) only with it; where it changes no
 * program (the sm80 path here) the flag is dropped, so the kernel is the one without it (same key,
 * a disk hit) */
static void test_compile_gqa(void **state)
{
    (void)state;
    char *out;
    int rc = run("compile --plain --arch sm_90a --path sm90 --kernels bwd --no-cache --json --quiet", &out);
    if (rc != 0 || strstr(out, "bwd_main90m80s") || !strstr(out, "\"name\":\"bwd_main90m80\""))
        fail_msg("sm90 bwd without --gqa: %d: %.2000s", rc, out);
    free(out);
    rc = run("compile good.mod --arch sm_80 --head-dim 64 --kernels bwd --json --quiet", &out);
    char k1[33], k2[33];
    json_key(out, k1);
    if (rc != 0 || !k1[0])
        fail_msg("sm80 bwd: %d: %.2000s", rc, out);
    free(out);
    rc = run("compile good.mod --arch sm_80 --head-dim 64 --kernels bwd --gqa --json --quiet", &out);
    json_key(out, k2);
    if (rc != 0 || strcmp(k1, k2) || !strstr(out, "disk-hit"))
        fail_msg("sm80 bwd --gqa: key %s against %s: %d: %.2000s", k2, k1, rc, out);
    free(out);
}

static void test_compile_bad_mod_and_dump(void **state)
{
    (void)state;
    char *out;
    int rc = run("compile bad.mod --arch sm_90a --kernels fwd", &out);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, ":3:20: error: "));
    free(out);
    rc = run("compile causal.mod --arch sm_90a --kernels fwd --no-cache --dump-source", &out);
    if (rc != 0 || !strstr(out, "fa4_mask_mod") || !strstr(out, "#line"))
        fail_msg("dump-source: %d: %.2000s", rc, out);
    free(out);
}

static void test_info(void **state)
{
    (void)state;
    char *out;
    int rc = run("info", &out);
    if (rc != 0 || !strstr(out, "kernel fingerprint") || !strstr(out, "NVRTC"))
        fail_msg("info: %d: %s", rc, out);
    free(out);
    rc = run("info --json", &out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "\"kernel_fingerprint\":"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help_everywhere),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_check_points_at_the_error),
        cmocka_unit_test(test_compile_json_out_and_cache_hit),
        cmocka_unit_test(test_compile_deterministic_trainable),
        cmocka_unit_test(test_compile_gqa),
        cmocka_unit_test(test_compile_bad_mod_and_dump),
        cmocka_unit_test(test_info),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
