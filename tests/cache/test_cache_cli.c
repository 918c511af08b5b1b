/*
 * test_cache_cli.c - `fa4jit cache ls|stats|verify|prune|clear` run in-process (cmake/cache.cmake
 * links src/cli/cmd_cache.c into this test): output for people and --json, exit statuses, a
 * damaged entry failing verify, prune and clear, and verify --recompile on an entry compiled for
 * real (deviceless, sm_90a) and on one whose cubin was swapped with a valid checksum.
 */
#include "cache_test_util.h"

#include <time.h>

#include "cli.h"
#include "hash.h"

static int setup(void **state)
{
    (void)state;
    scratch_new();
    unsetenv("FA4JIT_CACHE_PATH");
    unsetenv("FA4JIT_CACHE_HMAC_KEY_FILE");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    scratch_free();
    return 0;
}

static char out_text[1 << 16];

/* Run `fa4jit cache <args...>` with stdout captured into out_text; returns the exit status. */
static int run_cli(const char *a0, ...)
{
    char *argv[16];
    int argc = 0;
    argv[argc++] = (char *)"cache";
    va_list ap;
    va_start(ap, a0);
    for (const char *a = a0; a && argc < 15; a = va_arg(ap, const char *))
        argv[argc++] = (char *)a;
    va_end(ap);
    argv[argc] = NULL;
    char path[512];
    fmt_path(path, sizeof path, "%s/stdout.txt", scratch_root);
    fflush(stdout);
    int saved = dup(1);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(saved >= 0 && fd >= 0);
    dup2(fd, 1);
    close(fd);
    int rc = fa4__cli_cache(argc, argv);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    size_t n;
    uint8_t *b = slurp(path, &n);
    assert_non_null(b);
    if (n >= sizeof out_text)
        n = sizeof out_text - 1;
    memcpy(out_text, b, n);
    out_text[n] = '\0';
    free(b);
    return rc;
}

static int occurrences(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static void test_cli_basics(void **state)
{
    (void)state;
    char dir[512];
    fmt_path(dir, sizeof dir, "%s/c", scratch_root);
    fa4__cache *c = open_dir(dir, FA4_CACHE_MODE_RW);
    test_entry t[3];
    char keys[3][33];
    for (int i = 0; i < 3; i++) {
        test_entry_make(&t[i], 900 + (uint32_t)i, 3000);
        assert_int_equal(fa4__cache_put(c, t[i].key_inputs, t[i].key_len, &t[i].e), 1);
        fa4__cache_key(t[i].key_inputs, t[i].key_len, keys[i]);
    }

    const char *cmds[] = {"ls", "stats", "verify", "prune", "clear"};
    for (int i = 0; i < 5; i++) {
        assert_int_equal(run_cli(cmds[i], "--help", NULL), 0);
        assert_non_null(strstr(out_text, "usage: fa4jit cache"));
    }
    assert_int_equal(run_cli(NULL), 2);
    assert_int_equal(run_cli("frobnicate", "--cache-dir", dir, NULL), 2);
    assert_int_equal(run_cli("ls", "--bogus", NULL), 2);
    assert_int_equal(run_cli("ls", "--recompile", NULL), 2);
    assert_int_equal(run_cli("prune", "--max-size", "lots", NULL), 2);
    assert_int_equal(run_cli("ls", "--cache-dir", NULL), 2);

    assert_int_equal(run_cli("ls", "--cache-dir", dir, NULL), 0);
    for (int i = 0; i < 3; i++)
        assert_non_null(strstr(out_text, keys[i]));
    assert_int_equal(occurrences(out_text, "sm_90a"), 3);
    assert_non_null(strstr(out_text, "fwd"));
    assert_int_equal(run_cli("ls", "--cache-dir", dir, "--json", NULL), 0);
    assert_int_equal(occurrences(out_text, "\"state\":\"ok\""), 3);
    assert_int_equal(occurrences(out_text, "\"programs\":[\"fwd\"]"), 3);

    assert_int_equal(run_cli("stats", "--cache-dir", dir, "--json", NULL), 0);
    assert_non_null(strstr(out_text, "\"entries\":3,"));
    assert_int_equal(run_cli("stats", "--cache-dir", dir, NULL), 0);
    assert_non_null(strstr(out_text, "entries      3"));

    assert_int_equal(run_cli("verify", "--cache-dir", dir, NULL), 0);
    assert_non_null(strstr(out_text, "3 ok, 0 bad"));
    /* damage one: verify fails and names it; a get would miss it */
    char path[1024];
    entry_path_of(c, &t[1], path, sizeof path);
    size_t n;
    uint8_t *b = slurp(path, &n);
    b[n / 2] ^= 0x10;
    spit(path, b, n);
    free(b);
    assert_int_equal(run_cli("verify", "--cache-dir", dir, NULL), 1);
    assert_non_null(strstr(out_text, "2 ok, 1 bad"));
    assert_non_null(strstr(out_text, keys[1]));
    assert_non_null(strstr(out_text, "checksum mismatch"));
    assert_int_equal(run_cli("verify", "--cache-dir", dir, "--json", NULL), 1);
    assert_non_null(strstr(out_text, "\"bad\":1"));

    /* the reading commands write nothing */
    fa4__cache_fs_reset_counts();
    assert_int_equal(run_cli("ls", "--cache-dir", dir, NULL), 0);
    assert_int_equal(run_cli("stats", "--cache-dir", dir, NULL), 0);
    assert_int_equal(run_cli("verify", "--cache-dir", dir, NULL), 1);
    assert_int_equal(fa4__cache_fs_write_calls(), 0);

    /* prune to one entry's worth keeps the most recently used one */
    struct timespec old[2] = {{time(NULL) - 9000, 0}, {time(NULL) - 9000, 0}};
    entry_path_of(c, &t[0], path, sizeof path);
    utimensat(AT_FDCWD, path, old, 0);
    entry_path_of(c, &t[1], path, sizeof path);
    utimensat(AT_FDCWD, path, old, 0);
    assert_int_equal(run_cli("prune", "--cache-dir", dir, "--max-size", "4k", "--json", NULL), 0);
    assert_non_null(strstr(out_text, "\"removed_entries\":2"));
    fa4__cache_entry got;
    assert_int_equal(fa4__cache_get(c, t[2].key_inputs, t[2].key_len, &got, NULL), 1);
    fa4__cache_entry_free(&got);
    assert_int_equal(run_cli("clear", "--cache-dir", dir, NULL), 0);
    assert_non_null(strstr(out_text, "removed 1 entries"));
    assert_int_equal(fa4__cache_get(c, t[2].key_inputs, t[2].key_len, &got, NULL), 0);
    assert_int_equal(run_cli("ls", "--cache-dir", dir, NULL), 0);
    assert_non_null(strstr(out_text, "(no entries)"));
    for (int i = 0; i < 3; i++)
        test_entry_free(&t[i]);
    fa4__cache_close(c);
}

static void test_cli_hmac(void **state)
{
    (void)state;
    char dir[512], key[512], other[512];
    fmt_path(dir, sizeof dir, "%s/h", scratch_root);
    fmt_path(key, sizeof key, "%s/team.key", scratch_root);
    fmt_path(other, sizeof other, "%s/other.key", scratch_root);
    spit(key, "team secret", 11);
    spit(other, "not the team secret", 19);
    fa4__cache_config cfg = {0};
    cfg.mode = FA4_CACHE_MODE_RW;
    cfg.cache_dir = dir;
    cfg.hmac_key_file = key;
    fa4__cache *signer = open_cfg(&cfg);
    fa4__cache *plain = open_dir(dir, FA4_CACHE_MODE_RW);
    test_entry s1, u1;
    test_entry_make(&s1, 950, 500);
    test_entry_make(&u1, 951, 500);
    assert_int_equal(fa4__cache_put(signer, s1.key_inputs, s1.key_len, &s1.e), 1);
    assert_int_equal(fa4__cache_put(plain, u1.key_inputs, u1.key_len, &u1.e), 1);

    assert_int_equal(run_cli("verify", "--cache-dir", dir, "--hmac-key", key, NULL), 0);
    assert_non_null(strstr(out_text, "2 ok, 0 bad"));
    assert_int_equal(run_cli("verify", "--cache-dir", dir, "--hmac-key", key, "--require-hmac", NULL), 1);
    assert_non_null(strstr(out_text, "1 ok, 1 bad"));
    assert_non_null(strstr(out_text, "unsigned"));
    assert_int_equal(run_cli("verify", "--cache-dir", dir, "--hmac-key", other, NULL), 1);
    assert_non_null(strstr(out_text, "HMAC mismatch"));
    assert_int_equal(run_cli("ls", "--cache-dir", dir, "--hmac-key", key, "--json", NULL), 0);
    assert_int_equal(occurrences(out_text, "\"signed\":true"), 1);
    assert_int_equal(run_cli("stats", "--cache-dir", dir, "--hmac-key", key, "--require-hmac",
                             "--json", NULL), 0);
    assert_non_null(strstr(out_text, "\"hmac\":true,\"require_hmac\":true"));
    fa4__cache_close(signer);
    fa4__cache_close(plain);
    test_entry_free(&s1);
    test_entry_free(&u1);
}

/* Swap the bytes of blob `name` of the entry at path (same size), checksum recomputed. */
static int swap_blob(const char *path, const char *name)
{
    size_t n;
    uint8_t *b = slurp(path, &n);
    fa4__entry_view v;
    int done = 0;
    if (fa4__entry_decode(b, n, NULL, &v) == FA4__ENTRY_OK && !v.is_signed) {
        for (int i = 0; i < v.num_blobs; i++)
            if (!strcmp(v.blobs[i].name, name) && v.blobs[i].size > 64) {
                uint8_t *p = b + (v.blobs[i].data - b);
                p[v.blobs[i].size - 1] ^= 0x5a;
                done = 1;
            }
        fa4__hash128(b, n - 16, b + n - 16);
        spit(path, b, n);
    }
    free(b);
    return done;
}

static void test_cli_recompile(void **state)
{
    (void)state;
    char dir[512];
    fmt_path(dir, sizeof dir, "%s/r", scratch_root);
    fa4_ctx_options o;
    fa4_ctx_options_init(&o);
    o.device = FA4_DEVICE_NONE;
    o.cache_mode = FA4_CACHE_MODE_RW;
    o.cache_dir = dir;
    fa4_ctx *ctx = NULL;
    if (fa4_ctx_create(&o, &ctx) != FA4_OK) {
        print_message("skipped: no deviceless ctx: %s\n", fa4_ctx_create_errmsg());
        skip();
    }
    fa4_kernel_spec spec;
    fa4_kernel_spec_init(&spec);
    spec.arch = "sm_90a";
    spec.flags = FA4_COMPILE_FWD;
    spec.path = FA4_PATH_SM80;
    spec.source = "float score_mod(float score, int b, int h, int q_idx, int kv_idx) {\n"
                  "    return score * 0.5f;\n}\n";
    fa4_kernel *k = NULL;
    fa4_status st = fa4_jit_compile(ctx, &spec, &k);
    if (st != FA4_OK) {
        print_message("skipped: the jit layer cannot compile here yet: %s: %s\n",
                      fa4_status_name(st), fa4_ctx_errmsg(ctx));
        fa4_ctx_destroy(ctx);
        skip();
    }
    fa4_kernel_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    assert_int_equal(fa4_kernel_get_info(k, &info), FA4_OK);
    fa4_kernel_destroy(k);
    fa4_ctx_destroy(ctx);

    assert_int_equal(run_cli("verify", "--cache-dir", dir, "--recompile", NULL), 0);
    assert_non_null(strstr(out_text, "1 identical, 0 differ"));
    char path[1024];
    fmt_path(path, sizeof path, "%s/v1/%.2s/%s.fa4", dir, info.key, info.key);
    assert_true(swap_blob(path, info.programs[0].name));
    assert_int_equal(run_cli("verify", "--cache-dir", dir, NULL), 0); /* the checksum is fine */
    assert_int_equal(run_cli("verify", "--cache-dir", dir, "--recompile", "--json", NULL), 1);
    assert_non_null(strstr(out_text, "\"differ\":1"));
    assert_non_null(strstr(out_text, "cubin differs"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_cli_basics, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cli_hmac, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cli_recompile, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
