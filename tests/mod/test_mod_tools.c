/*
 * test_mod_tools.c - the pieces around the front end: `fa4jit check` as a user runs it (summary,
 * caret errors, --eval with --aux, exit codes), and mods/twins.py agreeing with the .mod files (one twin
 * per shipped mod, the same aux names in declaration order, the same score/mask presence).
 * Skips a part (saying why) when the fa4jit binary or python3 is not there.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "mod_test_util.h"

/* Run a shell command, capture stdout+stderr; returns the exit status (or -1). */
static int run(const char *cmd, char **out)
{
    char full[4096];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    if (!p)
        return -1;
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    size_t r;
    while ((r = fread(buf + n, 1, cap - n - 1, p)) > 0) {
        n += r;
        if (n + 1 >= cap) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
    }
    buf[n] = '\0';
    int st = pclose(p);
    *out = buf;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char *cli(void)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/fa4jit", FA4_TEST_BINARY_DIR);
    return access(path, X_OK) == 0 ? path : NULL;
}

static void check_command(void **state)
{
    (void)state;
    if (!cli()) {
        fprintf(stderr, "skipped: %s/fa4jit is not built\n", FA4_TEST_BINARY_DIR);
        skip();
    }
    char cmd[2048], *out;
    snprintf(cmd, sizeof cmd, "%s check %s/mods/alibi.mod", cli(), FA4_TEST_SOURCE_DIR);
    assert_int_equal(run(cmd, &out), 0);
    assert_non_null(strstr(out, "ok: score_mod yes, mask_mod no; aux: const float *slopes"));
    free(out);
    snprintf(cmd, sizeof cmd,
             "%s check %s/mods/alibi.mod --eval 0,1,10,2,1.5 --aux slopes=0.5,0.25", cli(),
             FA4_TEST_SOURCE_DIR);
    assert_int_equal(run(cmd, &out), 0);
    assert_non_null(strstr(out, "kv_idx=2) = -0.5\n"));
    assert_non_null(strstr(out, "d score_mod / d score = 1\n"));
    free(out);
    snprintf(cmd, sizeof cmd,
             "%s check %s/mods/softcap_causal.mod --eval 0,0,3,4,45 --aux cap=30", cli(),
             FA4_TEST_SOURCE_DIR);
    assert_int_equal(run(cmd, &out), 0);
    char want[128];
    snprintf(want, sizeof want, "= %.17g\n", 30.0 * tanh(1.5));
    assert_non_null(strstr(out, want));
    assert_non_null(strstr(out, "mask_mod(b=0, h=0, q_idx=3, kv_idx=4) = false"));
    free(out);
    /* a missing aux value, a bad --eval, an unknown --aux: usage errors */
    snprintf(cmd, sizeof cmd, "%s check %s/mods/alibi.mod --eval 0,1,2,3", cli(),
             FA4_TEST_SOURCE_DIR);
    assert_int_equal(run(cmd, &out), 2);
    assert_non_null(strstr(out, "--aux slopes="));
    free(out);
    snprintf(cmd, sizeof cmd, "%s check %s/mods/causal.mod --eval 1,2", cli(),
             FA4_TEST_SOURCE_DIR);
    assert_int_equal(run(cmd, &out), 2);
    free(out);
    snprintf(cmd, sizeof cmd, "%s check %s/mods/causal.mod --eval 0,0,1,1 --aux nope=1", cli(),
             FA4_TEST_SOURCE_DIR);
    assert_int_equal(run(cmd, &out), 2);
    assert_non_null(strstr(out, "names no aux parameter"));
    free(out);
    /* a bad mod: exit 1, caret under the token */
    char path[256];
    snprintf(path, sizeof path, "/tmp/fa4jit-mod-tools-%d.mod", (int)getpid());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("bool mask_mod(int b, int h, int q_idx, int kv_idx, int window) {\n"
          "    return q_idx >= kv_idx && q_idx - kv_idx < windw;\n}\n", f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s check %s", cli(), path);
    assert_int_equal(run(cmd, &out), 1);
    assert_non_null(strstr(out, "mask_mod:2:48: error: unknown identifier 'windw'; did you mean "
                                "'window'?\n"
                                "    return q_idx >= kv_idx && q_idx - kv_idx < windw;\n"
                                "                                               ^~~~~"));
    free(out);
    unlink(path);
    snprintf(cmd, sizeof cmd, "%s check /nonexistent/x.mod", cli());
    assert_int_equal(run(cmd, &out), 1);
    free(out);
    snprintf(cmd, sizeof cmd, "%s check --help", cli());
    assert_int_equal(run(cmd, &out), 0);
    assert_non_null(strstr(out, "usage: fa4jit check"));
    free(out);
}

static void twins_match_mods(void **state)
{
    (void)state;
    char *out;
    if (run("python3 -c 'print(1)'", &out) != 0) {
        free(out);
        fprintf(stderr, "skipped: python3 is not available\n");
        skip();
    }
    free(out);
    char cmd[1024];
    /* torch is not needed to read the table */
    snprintf(cmd, sizeof cmd,
             "cd %s/mods && python3 -c \"import twins\nfor n, t in sorted(twins.TWINS.items()): "
             "print(n, int(t.score_mod is not None), int(t.mask_mod is not None), "
             "','.join(t.aux) or '-', ','.join(t.trainable) or '-')\"",
             FA4_TEST_SOURCE_DIR);
    assert_int_equal(run(cmd, &out), 0);
    char *names[MT_MAX_MODS];
    int n = mt_list_mods(names);
    int lines = 0;
    for (char *p = out; *p; p++)
        lines += *p == '\n';
    assert_int_equal(lines, n);
    for (int i = 0; i < n; i++) {
        size_t len;
        char *src = mt_read_mod(names[i], &len);
        fa4__mod *m = mt_parse(src, len, names[i]);
        assert_non_null(m);
        char want[512];
        int k = snprintf(want, sizeof want, "%s %d %d ", names[i], fa4__mod_has_score(m),
                         fa4__mod_has_mask(m));
        if (!fa4__mod_num_aux(m))
            k += snprintf(want + k, sizeof want - (size_t)k, "-");
        for (int a = 0; a < fa4__mod_num_aux(m); a++)
            k += snprintf(want + k, sizeof want - (size_t)k, "%s%s", a ? "," : "",
                          fa4__mod_aux(m, a)->name);
        snprintf(want + k, sizeof want - (size_t)k, " ");
        if (!strstr(out, want))
            fail_msg("twins.py does not match %s.mod: want '%s...' in\n%s", names[i], want, out);
        /* what the twin calls trainable, the mod accepts as trainable */
        const char *line = strstr(out, want) + strlen(want);
        char tr[256];
        sscanf(line, "%255s", tr);
        if (strcmp(tr, "-")) {
            const char *list[FA4__MOD_MAX_AUX];
            int nt = 0;
            for (char *tok = strtok(tr, ","); tok && nt < FA4__MOD_MAX_AUX; tok = strtok(NULL, ","))
                list[nt++] = tok;
            fa4__diag d;
            if (fa4__mod_set_trainable(m, list, nt, &d) != FA4_OK)
                fail_msg("%s: trainable %s rejected: %s", names[i], tr, d.message);
        }
        fa4__mod_free(m);
        free(src);
        free(names[i]);
    }
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(check_command),
        cmocka_unit_test(twins_match_mods),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
