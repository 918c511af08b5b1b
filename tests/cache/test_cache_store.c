/*
 * test_cache_store.c - the cache as the jit layer uses it: round trip through tiers (T1), keys
 * (T2), faults at every file-system call of a put and a get (T5), read-only tiers (T10), refused
 * roots and planted files (T11), HMAC through files (T12), mode off (T15), a loader rejection
 * (T16), and the configuration rules (tier lists, environment, defaults, G10).
 */
#include "cache_test_util.h"

#include <sys/types.h>
#include <time.h>

#include "hash.h"

static void reset_env(void)
{
    unsetenv("FA4JIT_CACHE_DIR");
    unsetenv("FA4JIT_CACHE_PATH");
    unsetenv("FA4JIT_CACHE_MODE");
    unsetenv("FA4JIT_CACHE_MAX_SIZE");
    unsetenv("FA4JIT_CACHE_HMAC_KEY_FILE");
    unsetenv("FA4JIT_CACHE_REQUIRE_HMAC");
    unsetenv("FA4JIT_CACHE_SHARED");
    unsetenv("FA4JIT_CACHE_DURABLE");
}

static int setup(void **state)
{
    (void)state;
    reset_env();
    scratch_new();
    fa4__cache_fs_fault_clear();
    fa4__cache_fs_hook(NULL, NULL);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fa4__cache_fs_fault_clear();
    scratch_free();
    return 0;
}

static const char *sub(const char *name)
{
    static char buf[8][512];
    static int next;
    char *b = buf[next++ % 8];
    fmt_path(b, 512, "%s/%s", scratch_root, name);
    return b;
}

/* ------------------------------------------------------------------------------- T1, T2 */

static void test_round_trip(void **state)
{
    (void)state;
    fa4__cache *c = open_dir(sub("c"), FA4_CACHE_MODE_RW);
    assert_int_equal(fa4__cache_num_tiers(c), 1);
    test_entry a, b;
    test_entry_make(&a, 10, 5000);
    test_entry_make(&b, 11, 7000);
    fa4__cache_entry got;
    int tier = 7;
    assert_int_equal(fa4__cache_get(c, a.key_inputs, a.key_len, &got, &tier), 0);
    assert_int_equal(tier, -1);
    assert_int_equal(fa4__cache_put(c, a.key_inputs, a.key_len, &a.e), 1);
    assert_int_equal(fa4__cache_put(c, b.key_inputs, b.key_len, &b.e), 1);
    assert_int_equal(fa4__cache_get(c, a.key_inputs, a.key_len, &got, &tier), 1);
    assert_int_equal(tier, 0);
    assert_true(entry_equal(&got, &a.e));
    fa4__cache_entry_free(&got);
    assert_null(got.storage_);
    assert_int_equal(fa4__cache_get(c, b.key_inputs, b.key_len, &got, NULL), 1);
    assert_true(entry_equal(&got, &b.e));
    fa4__cache_entry_free(&got);
    fa4__cache_entry_free(NULL);

    /* a second cache on the same directory (another process) sees them; the file is 0600 */
    fa4__cache *c2 = open_dir(sub("c"), FA4_CACHE_MODE_RW);
    assert_int_equal(fa4__cache_get(c2, a.key_inputs, a.key_len, &got, NULL), 1);
    assert_true(entry_equal(&got, &a.e));
    fa4__cache_entry_free(&got);
    char path[1024];
    entry_path_of(c2, &a, path, sizeof path);
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(lstat(sub("c"), &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);

    fa4__cache_stats s;
    fa4__cache_get_stats(c, &s);
    assert_int_equal(s.hits, 2);
    assert_int_equal(s.misses, 1);
    assert_int_equal(s.puts, 2);
    assert_int_equal(s.corrupt + s.io_errors + s.put_failures, 0);
    /* the entry format directory is versioned so formats coexist (G8) */
    assert_non_null(strstr(path, "/v1/"));
    fa4__cache_close(c2);
    fa4__cache_close(c);
    fa4__cache_close(NULL);
    test_entry_free(&a);
    test_entry_free(&b);
}

static void test_keys(void **state)
{
    (void)state;
    /* golden keys: XXH3-128 in canonical order; a change here orphans every cache out there */
    char k[33];
    fa4__cache_key("", 0, k);
    assert_string_equal(k, "99aa06d3014798d86001c324468d497f");
    fa4__cache_key("a", 1, k);
    assert_string_equal(k, "a96faf705af16834e6c632b61e964e1f");
    const char *ki = "fa4jit-key v1\narch=sm_90a\n";
    fa4__cache_key(ki, strlen(ki), k);
    assert_string_equal(k, "13d087f92375b908f468a6b14f0c9a96");

    /* every byte of the key inputs is in the key */
    test_entry t;
    test_entry_make(&t, 12, 10);
    char base[33];
    fa4__cache_key(t.key_inputs, t.key_len, base);
    for (size_t i = 0; i < t.key_len; i++) {
        for (int bit = 0; bit < 8; bit++) {
            t.key_inputs[i] ^= (char)(1 << bit);
            fa4__cache_key(t.key_inputs, t.key_len, k);
            assert_string_not_equal(k, base);
            t.key_inputs[i] ^= (char)(1 << bit);
        }
    }
    fa4__cache_key(t.key_inputs, t.key_len - 1, k);
    assert_string_not_equal(k, base);
    test_entry_free(&t);
}

/* ----------------------------------------------------------------------------------- T5 */

/* Run a put with the fault at call k; check that it left a valid entry or none, no temp file,
 * no descriptor. Returns 1 when the fault fired. */
static int put_with_fault(uint64_t k, int err, int kind, int only_op, int *wrote)
{
    rm_rf(sub("f"));
    fa4__cache *c = open_dir(sub("f"), FA4_CACHE_MODE_RW);
    test_entry t;
    test_entry_make(&t, 13, 20000);
    int fds = count_fds();
    fa4__cache_fs_fault(k, err, kind, only_op);
    int ok = fa4__cache_put(c, t.key_inputs, t.key_len, &t.e);
    int fired = fa4__cache_fs_fault_fired();
    fa4__cache_fs_fault_clear();
    assert_int_equal(count_fds(), fds);
    assert_int_equal(count_files(sub("f"), ".tmp."), 0);
    fa4__cache_stats s;
    fa4__cache_get_stats(c, &s);
    assert_int_equal(s.puts + s.put_failures, 1);
    assert_int_equal(s.puts, (uint64_t)ok);
    fa4__cache_entry got;
    char path[1024];
    entry_path_of(c, &t, path, sizeof path);
    int hit = fa4__cache_get(c, t.key_inputs, t.key_len, &got, NULL);
    if (hit) {
        assert_true(entry_equal(&got, &t.e));
        fa4__cache_entry_free(&got);
    } else {
        struct stat st;
        assert_int_not_equal(lstat(path, &st), 0); /* no partial entry is published */
        assert_int_equal(ok, 0);
    }
    *wrote = hit;
    fa4__cache_close(c);
    test_entry_free(&t);
    return fired;
}

static void test_put_faults(void **state)
{
    (void)state;
    /* how many calls does a clean put make? */
    rm_rf(sub("f"));
    fa4__cache *c = open_dir(sub("f"), FA4_CACHE_MODE_RW);
    test_entry t;
    test_entry_make(&t, 13, 20000);
    fa4__cache_fs_reset_counts();
    assert_int_equal(fa4__cache_put(c, t.key_inputs, t.key_len, &t.e), 1);
    uint64_t calls = fa4__cache_fs_calls();
    fa4__cache_close(c);
    test_entry_free(&t);
    assert_true(calls >= 5);

    const int errs[] = {ENOSPC, EDQUOT, EIO, EINTR, EROFS};
    for (size_t e = 0; e < sizeof errs / sizeof errs[0]; e++) {
        int failed = 0;
        for (uint64_t k = 1; k <= calls; k++) {
            int wrote;
            assert_true(put_with_fault(k, errs[e], FA4__FAULT_FAIL, -1, &wrote));
            failed += !wrote;
        }
        assert_true(failed > 0); /* some call of a put matters */
    }
    /* a short write at each write call: continued, the entry is complete */
    for (uint64_t k = 1; k <= 3; k++) {
        int wrote;
        if (put_with_fault(k, 0, FA4__FAULT_SHORT, FA4__FS_WRITE, &wrote))
            assert_true(wrote);
    }
    /* close() failing (NFS write-back error): nothing published */
    {
        int wrote;
        assert_true(put_with_fault(1, EIO, FA4__FAULT_CLOSE_FAIL, FA4__FS_OPEN, &wrote));
        assert_false(wrote);
    }
}

static void test_get_faults(void **state)
{
    (void)state;
    fa4__cache *c = open_dir(sub("g"), FA4_CACHE_MODE_RW);
    test_entry t;
    test_entry_make(&t, 14, 3000);
    assert_int_equal(fa4__cache_put(c, t.key_inputs, t.key_len, &t.e), 1);
    fa4__cache_entry got;
    fa4__cache_fs_reset_counts();
    assert_int_equal(fa4__cache_get(c, t.key_inputs, t.key_len, &got, NULL), 1);
    fa4__cache_entry_free(&got);
    uint64_t calls = fa4__cache_fs_calls();
    const int errs[] = {EIO, EINTR, ENOMEM, ESTALE};
    for (size_t e = 0; e < sizeof errs / sizeof errs[0]; e++) {
        for (uint64_t k = 1; k <= calls; k++) {
            int fds = count_fds();
            fa4__cache_fs_fault(k, errs[e], FA4__FAULT_FAIL, -1);
            int hit = fa4__cache_get(c, t.key_inputs, t.key_len, &got, NULL);
            assert_true(fa4__cache_fs_fault_fired());
            fa4__cache_fs_fault_clear();
            if (hit) {
                assert_true(entry_equal(&got, &t.e));
                fa4__cache_entry_free(&got);
            }
            assert_int_equal(count_fds(), fds);
        }
    }
    fa4__cache_stats s;
    fa4__cache_get_stats(c, &s);
    assert_true(s.io_errors > 0);
    fa4__cache_close(c);
    test_entry_free(&t);
}

/* Every operation under a fault at every call: nothing crashes, leaks a descriptor or a temp
 * file, and whatever is published is valid. */
static int sequence_valid_bad;
static int check_valid(const fa4__cache_item *it, void *ud)
{
    fa4__cache *c = ud;
    if (it->kind != FA4__ITEM_ENTRY)
        return 0;
    fa4__cache_check chk;
    fa4__cache_check_file(c, it->path, it->key, &chk);
    sequence_valid_bad += chk.result != FA4__ENTRY_OK;
    fa4__cache_check_free(&chk);
    return 0;
}

static void fault_sequence(fa4__cache *c, test_entry *t, test_entry *u)
{
    fa4__cache_entry got;
    char key[33];
    fa4__cache_key(t->key_inputs, t->key_len, key);
    fa4__cache_put(c, t->key_inputs, t->key_len, &t->e);
    if (fa4__cache_get(c, t->key_inputs, t->key_len, &got, NULL)) {
        assert_true(entry_equal(&got, &t->e));
        fa4__cache_entry_free(&got);
    }
    int tok = fa4__cache_lock(c, key, 50);
    fa4__cache_put(c, u->key_inputs, u->key_len, &u->e);
    fa4__cache_unlock(c, tok);
    fa4__cache_quarantine(c, t->key_inputs, t->key_len);
    fa4__cache_put(c, t->key_inputs, t->key_len, &t->e);
    fa4__cache_prune(c, 0, 1 << 20, NULL);
    if (fa4__cache_get(c, u->key_inputs, u->key_len, &got, NULL)) {
        assert_true(entry_equal(&got, &u->e));
        fa4__cache_entry_free(&got);
    }
}

static void test_faults_everywhere(void **state)
{
    (void)state;
    fa4__cache_config cfg = {0};
    cfg.mode = FA4_CACHE_MODE_RW;
    cfg.cache_dir = sub("fe");
    cfg.use_lock = 1;
    test_entry t, u;
    test_entry_make(&t, 30, 4000);
    test_entry_make(&u, 31, 6000);
    fa4__cache *c = open_cfg(&cfg);
    fa4__cache_fs_reset_counts();
    fault_sequence(c, &t, &u);
    uint64_t calls = fa4__cache_fs_calls();
    fa4__cache_close(c);
    const int errs[] = {EIO, ENOSPC, EINTR};
    for (size_t e = 0; e < 3; e++) {
        for (uint64_t k = 1; k <= calls; k++) {
            rm_rf(sub("fe"));
            c = open_cfg(&cfg);
            int fds = count_fds();
            fa4__cache_fs_fault(k, errs[e], FA4__FAULT_FAIL, -1);
            fault_sequence(c, &t, &u);
            fa4__cache_fs_fault_clear();
            assert_int_equal(count_fds(), fds);
            assert_int_equal(count_files(sub("fe"), ".tmp."), 0);
            sequence_valid_bad = 0;
            assert_int_equal(fa4__cache_foreach(c, 0, check_valid, c), 0);
            assert_int_equal(sequence_valid_bad, 0);
            fa4__cache_close(c);
        }
    }

    /* durable mode: a failing fsync of the file or the directory at each call of one put */
    cfg.durable = 1;
    rm_rf(sub("fe"));
    c = open_cfg(&cfg);
    fa4__cache_fs_reset_counts();
    assert_int_equal(fa4__cache_put(c, t.key_inputs, t.key_len, &t.e), 1);
    calls = fa4__cache_fs_calls();
    fa4__cache_close(c);
    for (uint64_t k = 1; k <= calls; k++) {
        rm_rf(sub("fe"));
        c = open_cfg(&cfg);
        int fds = count_fds();
        fa4__cache_fs_fault(k, EIO, FA4__FAULT_FAIL, -1);
        int ok = fa4__cache_put(c, t.key_inputs, t.key_len, &t.e);
        fa4__cache_fs_fault_clear();
        assert_int_equal(count_fds(), fds);
        assert_int_equal(count_files(sub("fe"), ".tmp."), 0);
        fa4__cache_entry got;
        int hit = fa4__cache_get(c, t.key_inputs, t.key_len, &got, NULL);
        if (hit)
            fa4__cache_entry_free(&got);
        assert_true(hit || !ok);
        fa4__cache_close(c);
    }
    test_entry_free(&t);
    test_entry_free(&u);
}

/* ---------------------------------------------------------------------------------- T10 */

static void test_read_only(void **state)
{
    (void)state;
    fa4__cache *w = open_dir(sub("ro"), FA4_CACHE_MODE_RW);
    test_entry t, u;
    test_entry_make(&t, 15, 1000);
    test_entry_make(&u, 16, 1000);
    assert_int_equal(fa4__cache_put(w, t.key_inputs, t.key_len, &t.e), 1);
    char path[1024], key[33];
    entry_path_of(w, &t, path, sizeof path);
    fa4__cache_close(w);
    /* an old entry: a writable tier would refresh its mtime on a hit */
    struct timespec old[2] = {{time(NULL) - 7200, 0}, {time(NULL) - 7200, 0}};
    assert_int_equal(utimensat(AT_FDCWD, path, old, 0), 0);

    /* mode ro, and a tier list whose only tier is ro, and an ro tier ahead of a missing one */
    fa4__cache_config cfgs[3];
    memset(cfgs, 0, sizeof cfgs);
    cfgs[0].mode = FA4_CACHE_MODE_RO;
    cfgs[0].cache_dir = sub("ro");
    char list1[600], list2[1200];
    fmt_path(list1, sizeof list1, "ro:%s", sub("ro"));
    cfgs[1].mode = FA4_CACHE_MODE_RW;
    cfgs[1].cache_path = list1;
    fmt_path(list2, sizeof list2, "ro:%s:ro:%s", sub("ro"), sub("absent"));
    cfgs[2].mode = FA4_CACHE_MODE_RW;
    cfgs[2].cache_path = list2;
    for (int i = 0; i < 3; i++) {
        fa4__cache_fs_reset_counts();
        fa4__cache *c = open_cfg(&cfgs[i]);
        fa4__cache_entry got;
        int tier;
        assert_int_equal(fa4__cache_get(c, t.key_inputs, t.key_len, &got, &tier), 1);
        assert_int_equal(tier, 0);
        assert_true(entry_equal(&got, &t.e));
        fa4__cache_entry_free(&got);
        assert_int_equal(fa4__cache_get(c, u.key_inputs, u.key_len, &got, NULL), 0);
        assert_int_equal(fa4__cache_put(c, u.key_inputs, u.key_len, &u.e), 0);
        fa4__cache_key(t.key_inputs, t.key_len, key);
        assert_int_equal(fa4__cache_lock(c, key, 100), -1);
        fa4__cache_quarantine(c, t.key_inputs, t.key_len);
        assert_int_equal(fa4__cache_get(c, t.key_inputs, t.key_len, &got, NULL), 0);
        assert_int_equal(fa4__cache_prune(c, 0, 1, NULL), -1);
        assert_int_equal(fa4__cache_clear(c, 0, NULL), -1);
        assert_int_equal(fa4__cache_fs_write_calls(), 0);
        fa4__cache_stats s;
        fa4__cache_get_stats(c, &s);
        assert_int_equal(s.io_errors + s.put_failures + s.corrupt, 0);
        fa4__cache_close(c);
        assert_int_equal(fa4__cache_fs_write_calls(), 0);
        struct stat st;
        assert_int_equal(lstat(path, &st), 0); /* still there: quarantine did not touch it */
        assert_int_equal(st.st_mtime, old[1].tv_sec);
    }
    struct stat st;
    assert_int_not_equal(lstat(sub("absent"), &st), 0);
    test_entry_free(&t);
    test_entry_free(&u);
}

/* A read-only tier ahead of the user's writable tier: hits in tier 0, puts land in tier 1. */
static void test_tier_order(void **state)
{
    (void)state;
    fa4__cache *w = open_dir(sub("app"), FA4_CACHE_MODE_RW);
    test_entry t, u;
    test_entry_make(&t, 17, 500);
    test_entry_make(&u, 18, 500);
    assert_int_equal(fa4__cache_put(w, t.key_inputs, t.key_len, &t.e), 1);
    fa4__cache_close(w);
    char list[1200];
    fmt_path(list, sizeof list, "ro:%s:rw:%s", sub("app"), sub("user"));
    fa4__cache_config cfg = {0};
    cfg.cache_path = list;
    cfg.mode = FA4_CACHE_MODE_RW;
    fa4__cache *c = open_cfg(&cfg);
    assert_int_equal(fa4__cache_num_tiers(c), 2);
    fa4__cache_entry got;
    int tier;
    assert_int_equal(fa4__cache_get(c, t.key_inputs, t.key_len, &got, &tier), 1);
    assert_int_equal(tier, 0);
    fa4__cache_entry_free(&got);
    assert_int_equal(fa4__cache_put(c, u.key_inputs, u.key_len, &u.e), 1);
    assert_int_equal(fa4__cache_get(c, u.key_inputs, u.key_len, &got, &tier), 1);
    assert_int_equal(tier, 1);
    fa4__cache_entry_free(&got);
    char desc[2048];
    fa4__cache_describe(c, desc, sizeof desc);
    assert_non_null(strstr(desc, "ro "));
    assert_non_null(strstr(desc, "rw "));
    assert_non_null(strstr(desc, "/app/v1 (ok)"));
    fa4__cache_close(c);
    test_entry_free(&t);
    test_entry_free(&u);
}

/* ---------------------------------------------------------------------------------- T11 */

static void test_refused_roots(void **state)
{
    (void)state;
    assert_int_equal(mkdir(sub("real"), 0700), 0);
    assert_int_equal(symlink(sub("real"), sub("link")), 0);
    test_entry t;
    test_entry_make(&t, 19, 100);
    fa4__cache_entry got;
    char desc[2048];

    fa4__cache *c = open_dir(sub("link"), FA4_CACHE_MODE_RW);
    assert_int_equal(fa4__cache_put(c, t.key_inputs, t.key_len, &t.e), 0);
    assert_int_equal(fa4__cache_get(c, t.key_inputs, t.key_len, &got, NULL), 0);
    fa4__cache_describe(c, desc, sizeof desc);
    assert_non_null(strstr(desc, "refused: the root is a symlink"));
    fa4__cache_close(c);

    const mode_t modes[] = {0777, 0770, 0720};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(chmod(sub("real"), modes[i]), 0);
        c = open_dir(sub("real"), FA4_CACHE_MODE_RW);
        assert_int_equal(fa4__cache_put(c, t.key_inputs, t.key_len, &t.e), 0);
        fa4__cache_describe(c, desc, sizeof desc);
        assert_non_null(strstr(desc, "refused:"));
        assert_non_null(strstr(desc, modes[i] & 2 ? "world-writable" : "group-writable"));
        fa4__cache_close(c);

        /* named a shared tier, it is accepted, and its directories are group-writable */
        fa4__cache_config cfg = {0};
        cfg.mode = FA4_CACHE_MODE_RW;
        cfg.cache_dir = sub("real");
        cfg.shared = 1;
        c = open_cfg(&cfg);
        assert_int_equal(fa4__cache_put(c, t.key_inputs, t.key_len, &t.e), 1);
        assert_int_equal(fa4__cache_get(c, t.key_inputs, t.key_len, &got, NULL), 1);
        fa4__cache_entry_free(&got);
        char bucket[1024], key[33];
        fa4__cache_key(t.key_inputs, t.key_len, key);
        struct stat st;
        assert_int_equal(lstat(fmt_path(bucket, sizeof bucket, "%s/v1/%.2s", sub("real"), key), &st), 0);
        assert_int_equal(st.st_mode & 02070, 02070);
        fa4__cache_close(c);
    }
    /* a file where the root should be */
    spit(sub("file"), "x", 1);
    c = open_dir(sub("file"), FA4_CACHE_MODE_RW);
    fa4__cache_describe(c, desc, sizeof desc);
    assert_non_null(strstr(desc, "not a directory"));
    fa4__cache_close(c);
    test_entry_free(&t);
}

static void test_planted_files(void **state)
{
    (void)state;
    fa4__cache *c = open_dir(sub("p"), FA4_CACHE_MODE_RW);
    test_entry t;
    test_entry_make(&t, 20, 100);
    fa4__cache_entry got;
    char path[1024], elsewhere[1024];
    assert_int_equal(fa4__cache_put(c, t.key_inputs, t.key_len, &t.e), 1);
    entry_path_of(c, &t, path, sizeof path);
    /* a symlink to a perfectly valid entry is still a miss: nobody links into a cache */
    fmt_path(elsewhere, sizeof elsewhere, "%s/valid.fa4", scratch_root);
    assert_int_equal(rename(path, elsewhere), 0);
    assert_int_equal(symlink(elsewhere, path), 0);
    assert_int_equal(fa4__cache_get(c, t.key_inputs, t.key_len, &got, NULL), 0);
    /* the next put replaces the link itself, not its target */
    assert_int_equal(fa4__cache_put(c, t.key_inputs, t.key_len, &t.e), 1);
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(fa4__cache_get(c, t.key_inputs, t.key_len, &got, NULL), 1);
    fa4__cache_entry_free(&got);
    /* a FIFO must not block the reader; a directory is no entry either */
    assert_int_equal(unlink(path), 0);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_int_equal(fa4__cache_get(c, t.key_inputs, t.key_len, &got, NULL), 0);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(mkdir(path, 0700), 0);
    assert_int_equal(fa4__cache_get(c, t.key_inputs, t.key_len, &got, NULL), 0);
    fa4__cache_stats s;
    fa4__cache_get_stats(c, &s);
    assert_int_equal(s.corrupt, 3);
    assert_int_equal(s.hits, 1);
    fa4__cache_close(c);
    test_entry_free(&t);
}

/* ---------------------------------------------------------------------------------- T12 */

static fa4__cache *open_auth(const char *dir, const char *key_file, int require)
{
    fa4__cache_config cfg = {0};
    cfg.mode = FA4_CACHE_MODE_RW;
    cfg.cache_dir = dir;
    cfg.hmac_key_file = key_file;
    cfg.require_hmac = require;
    return open_cfg(&cfg);
}

static void test_hmac_entries(void **state)
{
    (void)state;
    spit(sub("team.key"), "correct horse battery staple\n", 29);
    spit(sub("other.key"), "some other team's key", 21);
    test_entry t, u;
    test_entry_make(&t, 21, 2000);
    test_entry_make(&u, 22, 2000);
    fa4__cache_entry got;

    fa4__cache *signer = open_auth(sub("h"), sub("team.key"), 0);
    assert_int_equal(fa4__cache_auth_level(signer), 1);
    assert_int_equal(fa4__cache_put(signer, t.key_inputs, t.key_len, &t.e), 1);
    fa4__cache_close(signer);
    fa4__cache *plain = open_auth(sub("h"), NULL, 0);
    assert_int_equal(fa4__cache_put(plain, u.key_inputs, u.key_len, &u.e), 1); /* unsigned */

    fa4__cache *strict = open_auth(sub("h"), sub("team.key"), 1);
    assert_int_equal(fa4__cache_auth_level(strict), 3);
    assert_int_equal(fa4__cache_get(strict, t.key_inputs, t.key_len, &got, NULL), 1);
    assert_true(entry_equal(&got, &t.e));
    fa4__cache_entry_free(&got);
    assert_int_equal(fa4__cache_get(strict, u.key_inputs, u.key_len, &got, NULL), 0);
    /* without the switch an unsigned entry is fine, and a reader without the key accepts both */
    assert_int_equal(fa4__cache_get(plain, t.key_inputs, t.key_len, &got, NULL), 1);
    fa4__cache_entry_free(&got);
    assert_int_equal(fa4__cache_get(plain, u.key_inputs, u.key_len, &got, NULL), 1);
    fa4__cache_entry_free(&got);
    /* the wrong key rejects even without the switch */
    fa4__cache *wrong = open_auth(sub("h"), sub("other.key"), 0);
    assert_int_equal(fa4__cache_get(wrong, t.key_inputs, t.key_len, &got, NULL), 0);
    fa4__cache_close(wrong);
    /* required, but no key could be loaded: every entry is a miss, and describe says why */
    fa4__cache *nokey = open_auth(sub("h"), sub("missing.key"), 1);
    assert_int_equal(fa4__cache_get(nokey, t.key_inputs, t.key_len, &got, NULL), 0);
    char desc[2048];
    fa4__cache_describe(nokey, desc, sizeof desc);
    assert_non_null(strstr(desc, "HMAC key file unreadable"));
    fa4__cache_close(nokey);

    /* an attacker who can write the directory changes a byte and fixes the checksum */
    char path[1024];
    entry_path_of(strict, &t, path, sizeof path);
    size_t n = 0;
    uint8_t *b = slurp(path, &n);
    assert_non_null(b);
    b[n - 32 - 16 - 1] ^= 1; /* last byte of the payload */
    fa4__hash128(b, n - 48, b + n - 48);
    spit(path, b, n);
    assert_int_equal(fa4__cache_get(strict, t.key_inputs, t.key_len, &got, NULL), 0);
    /* or strips the signature and the flag */
    b[n - 32 - 16 - 1] ^= 1;
    b[12] = 0;
    fa4__hash128(b, n - 48, b + n - 48);
    spit(path, b, n - 32);
    assert_int_equal(fa4__cache_get(strict, t.key_inputs, t.key_len, &got, NULL), 0);
    assert_int_equal(fa4__cache_get(plain, t.key_inputs, t.key_len, &got, NULL), 1);
    fa4__cache_entry_free(&got);
    free(b);
    fa4__cache_close(strict);
    fa4__cache_close(plain);
    test_entry_free(&t);
    test_entry_free(&u);
}

/* ---------------------------------------------------------------------------------- T15 */

static void test_mode_off(void **state)
{
    (void)state;
    test_entry t;
    test_entry_make(&t, 23, 100);
    fa4__cache_entry got;
    char key[33], desc[512];
    fa4__cache_key(t.key_inputs, t.key_len, key);
    for (int variant = 0; variant < 2; variant++) {
        fa4__cache_config cfg = {0};
        cfg.cache_dir = sub("off");
        cfg.hmac_key_file = sub("team.key");
        cfg.use_lock = 1;
        if (variant == 0)
            cfg.mode = FA4_CACHE_MODE_OFF;
        else
            setenv("FA4JIT_CACHE_MODE", "off", 1);
        fa4__cache_fs_reset_counts();
        fa4__cache *c = open_cfg(&cfg);
        assert_int_equal(fa4__cache_get(c, t.key_inputs, t.key_len, &got, NULL), 0);
        assert_int_equal(fa4__cache_put(c, t.key_inputs, t.key_len, &t.e), 0);
        fa4__cache_quarantine(c, t.key_inputs, t.key_len);
        int tok = fa4__cache_lock(c, key, 100);
        assert_int_equal(tok, -1);
        fa4__cache_unlock(c, tok);
        assert_int_equal(fa4__cache_num_tiers(c), 0);
        fa4__cache_describe(c, desc, sizeof desc);
        assert_non_null(strstr(desc, "off"));
        fa4__cache_close(c);
        assert_int_equal(fa4__cache_fs_calls(), 0);
        unsetenv("FA4JIT_CACHE_MODE");
    }
    struct stat st;
    assert_int_not_equal(lstat(sub("off"), &st), 0);
    test_entry_free(&t);
}

/* ---------------------------------------------------------------------------------- T16 */

/* What the jit layer does: get, load (the "driver" rejects blobs starting with "BAD"),
 * quarantine and compile on a rejection, put, load. Returns compiles done. */
static int jit_compile(fa4__cache *c, test_entry *good)
{
    fa4__cache_entry got;
    if (fa4__cache_get(c, good->key_inputs, good->key_len, &got, NULL)) {
        int rejected = got.blobs[0].size >= 3 && !memcmp(got.blobs[0].data, "BAD", 3);
        if (!rejected)
            assert_true(entry_equal(&got, &good->e));
        fa4__cache_entry_free(&got);
        if (!rejected)
            return 0;
        fa4__cache_quarantine(c, good->key_inputs, good->key_len);
    }
    fa4__cache_put(c, good->key_inputs, good->key_len, &good->e);
    return 1;
}

static void test_loader_rejection(void **state)
{
    (void)state;
    test_entry good;
    test_entry_make(&good, 24, 1000);
    /* a bad cubin with a perfect checksum: the driver is the only one who can tell */
    test_entry bad;
    test_entry_make(&bad, 24, 1000);
    memcpy(bad.fwd, "BAD", 3);

    /* writable tier: the entry moves to quarantine/, one compile, then hits */
    fa4__cache *c = open_dir(sub("q"), FA4_CACHE_MODE_RW);
    assert_int_equal(fa4__cache_put(c, bad.key_inputs, bad.key_len, &bad.e), 1);
    int compiles = 0;
    for (int i = 0; i < 5; i++)
        compiles += jit_compile(c, &good);
    assert_int_equal(compiles, 1);
    assert_int_equal(count_files(sub("q/v1/quarantine"), ""), 1);
    fa4__cache_stats s;
    fa4__cache_get_stats(c, &s);
    assert_int_equal(s.quarantined, 1);
    fa4__cache_close(c);
    /* another process does not see the bad entry either */
    c = open_dir(sub("q"), FA4_CACHE_MODE_RW);
    assert_int_equal(jit_compile(c, &good), 0);
    fa4__cache_close(c);

    /* read-only tier ahead of a writable one: the bad file stays, this process skips it */
    fa4__cache *w = open_dir(sub("qa"), FA4_CACHE_MODE_RW);
    assert_int_equal(fa4__cache_put(w, bad.key_inputs, bad.key_len, &bad.e), 1);
    fa4__cache_close(w);
    char list[1200];
    fmt_path(list, sizeof list, "ro:%s:rw:%s", sub("qa"), sub("qu"));
    fa4__cache_config cfg = {0};
    cfg.mode = FA4_CACHE_MODE_RW;
    cfg.cache_path = list;
    c = open_cfg(&cfg);
    compiles = 0;
    for (int i = 0; i < 5; i++)
        compiles += jit_compile(c, &good);
    assert_int_equal(compiles, 1);
    fa4__cache_entry got;
    int tier;
    assert_int_equal(fa4__cache_get(c, good.key_inputs, good.key_len, &got, &tier), 1);
    assert_int_equal(tier, 1);
    fa4__cache_entry_free(&got);
    fa4__cache_close(c);
    test_entry_free(&good);
    test_entry_free(&bad);
}

/* ------------------------------------------------------------------------ configuration */

static void test_config(void **state)
{
    (void)state;
    fa4__cache_config cfg = {0};
    fa4__cache *c = NULL;
    char err[512], desc[4096];
    const char *bad[] = {
        "rw:relative/dir", "xx:/abs", "/no/kind", "ro:", "",
        "ro:/a:ro:/b:ro:/c:ro:/d:ro:/e:ro:/f:ro:/g:ro:/h:ro:/i",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cfg.mode = FA4_CACHE_MODE_RW;
        cfg.cache_path = bad[i];
        setenv("FA4JIT_CACHE_PATH", bad[i], 1); /* "" in cache_path: the environment is used */
        err[0] = '\0';
        fa4_status st = fa4__cache_open(&cfg, &c, err, sizeof err);
        if (bad[i][0] == '\0') {
            assert_int_equal(st, FA4_OK); /* empty: the default tier */
            fa4__cache_close(c);
            continue;
        }
        assert_int_equal(st, FA4_ERR_INVALID_ARGUMENT);
        assert_null(c);
        assert_true(strlen(err) > 0);
    }
    unsetenv("FA4JIT_CACHE_PATH");
    cfg.cache_path = NULL;
    cfg.mode = 99;
    assert_int_equal(fa4__cache_open(&cfg, &c, err, sizeof err), FA4_ERR_INVALID_ARGUMENT);
    cfg.mode = FA4_CACHE_MODE_RW;
    cfg.max_size = -1;
    assert_int_equal(fa4__cache_open(&cfg, &c, err, sizeof err), FA4_ERR_INVALID_ARGUMENT);
    cfg.max_size = 0;

    /* defaults: $XDG_CACHE_HOME/fa4jit, else ~/.cache/fa4jit, created 0700; never /tmp */
    char xdg[512], home[512];
    snprintf(xdg, sizeof xdg, "%s", sub("xdg"));
    snprintf(home, sizeof home, "%s", sub("home"));
    char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    char *old_xdg = getenv("XDG_CACHE_HOME") ? strdup(getenv("XDG_CACHE_HOME")) : NULL;
    setenv("XDG_CACHE_HOME", xdg, 1);
    setenv("HOME", home, 1);
    setenv("FA4JIT_CACHE_MAX_SIZE", "3M", 1);
    c = open_cfg(&cfg);
    fa4__cache_tier_info ti;
    assert_int_equal(fa4__cache_tier_info_get(c, 0, &ti), 0);
    char want[600];
    assert_string_equal(ti.root, fmt_path(want, sizeof want, "%s/fa4jit", xdg));
    assert_true(ti.enabled && ti.writable);
    assert_int_equal(fa4__cache_max_size(c), 3 << 20);
    struct stat st;
    assert_int_equal(lstat(ti.root, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_int_equal(lstat(xdg, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    fa4__cache_close(c);
    setenv("XDG_CACHE_HOME", "relative/ignored", 1);
    setenv("FA4JIT_CACHE_MAX_SIZE", "lots", 1);
    c = open_cfg(&cfg);
    assert_int_equal(fa4__cache_tier_info_get(c, 0, &ti), 0);
    assert_string_equal(ti.root, fmt_path(want, sizeof want, "%s/.cache/fa4jit", home));
    assert_int_equal(fa4__cache_max_size(c), (int64_t)2 << 30);
    fa4__cache_describe(c, desc, sizeof desc);
    assert_non_null(strstr(desc, "FA4JIT_CACHE_MAX_SIZE='lots'"));
    fa4__cache_close(c);
    unsetenv("XDG_CACHE_HOME");
    unsetenv("HOME");
    fa4__cache_fs_reset_counts();
    c = open_cfg(&cfg);
    assert_int_equal(fa4__cache_num_tiers(c), 0);
    assert_int_equal(fa4__cache_fs_calls(), 0);
    fa4__cache_describe(c, desc, sizeof desc);
    assert_non_null(strstr(desc, "no cache directory"));
    fa4__cache_close(c);

    /* "~" in a tier list; FA4JIT_CACHE_DIR; the mode from the environment */
    setenv("HOME", home, 1);
    setenv("FA4JIT_CACHE_PATH", "rw:~/tiered/", 1);
    c = open_cfg(&cfg);
    assert_int_equal(fa4__cache_tier_info_get(c, 0, &ti), 0);
    assert_string_equal(ti.root, fmt_path(want, sizeof want, "%s/tiered", home));
    fa4__cache_close(c);
    /* an explicit cache_dir beats the environment's tier list */
    cfg.cache_dir = sub("explicit");
    c = open_cfg(&cfg);
    assert_int_equal(fa4__cache_num_tiers(c), 1);
    assert_int_equal(fa4__cache_tier_info_get(c, 0, &ti), 0);
    assert_string_equal(ti.root, sub("explicit"));
    fa4__cache_close(c);
    cfg.cache_dir = NULL;
    unsetenv("FA4JIT_CACHE_PATH");
    setenv("FA4JIT_CACHE_DIR", sub("envdir"), 1);
    setenv("FA4JIT_CACHE_MODE", "ro", 1);
    cfg.mode = FA4_CACHE_MODE_DEFAULT;
    c = open_cfg(&cfg);
    assert_int_equal(fa4__cache_tier_info_get(c, 0, &ti), 0);
    assert_string_equal(ti.root, sub("envdir"));
    assert_false(ti.writable);
    assert_true(ti.declared_rw); /* rw by configuration, read-only by the mode */
    assert_false(ti.enabled); /* read-only and absent: not created */
    fa4__cache_close(c);
    setenv("FA4JIT_CACHE_MODE", "sideways", 1);
    c = open_cfg(&cfg);
    assert_int_equal(fa4__cache_tier_info_get(c, 0, &ti), 0);
    assert_true(ti.writable && ti.enabled);
    fa4__cache_close(c);
    assert_int_equal(fa4__cache_open(NULL, NULL, NULL, 0), FA4_ERR_INVALID_ARGUMENT);

    if (old_home)
        setenv("HOME", old_home, 1);
    if (old_xdg)
        setenv("XDG_CACHE_HOME", old_xdg, 1);
    free(old_home);
    free(old_xdg);
    reset_env();
    assert_int_equal(fa4__cache_parse_size("1k"), 1024);
    assert_int_equal(fa4__cache_parse_size("1.5G"), (int64_t)3 << 29);
    assert_int_equal(fa4__cache_parse_size("2MiB"), 2 << 20);
    assert_int_equal(fa4__cache_parse_size("x"), -1);
    assert_int_equal(fa4__cache_parse_size("-5"), -1);
}

/* Per-entry limit: a quarter of the total. */
static void test_entry_limit(void **state)
{
    (void)state;
    fa4__cache_config cfg = {0};
    cfg.mode = FA4_CACHE_MODE_RW;
    cfg.cache_dir = sub("lim");
    cfg.max_size = 64 << 10;
    fa4__cache *c = open_cfg(&cfg);
    assert_int_equal(fa4__cache_max_entry(c), 16 << 10);
    test_entry big, small;
    test_entry_make(&big, 25, 17 << 10);
    test_entry_make(&small, 26, 8 << 10);
    assert_int_equal(fa4__cache_put(c, big.key_inputs, big.key_len, &big.e), 0);
    assert_int_equal(fa4__cache_put(c, small.key_inputs, small.key_len, &small.e), 1);
    fa4__cache_stats s;
    fa4__cache_get_stats(c, &s);
    assert_int_equal(s.put_failures, 1);
    assert_int_equal(s.io_errors, 0);
    fa4__cache_close(c);
    test_entry_free(&big);
    test_entry_free(&small);
}

/* Durable mode fsyncs the file and its directory. */
static void test_durable(void **state)
{
    (void)state;
    fa4__cache_config cfg = {0};
    cfg.mode = FA4_CACHE_MODE_RW;
    cfg.cache_dir = sub("dur");
    cfg.durable = 1;
    fa4__cache *c = open_cfg(&cfg);
    test_entry t;
    test_entry_make(&t, 27, 100);
    fa4__cache_fs_reset_counts();
    assert_int_equal(fa4__cache_put(c, t.key_inputs, t.key_len, &t.e), 1);
    assert_int_equal(fa4__cache_fs_op_calls(FA4__FS_FSYNC), 2);
    fa4__cache_close(c);
    c = open_dir(sub("dur2"), FA4_CACHE_MODE_RW);
    fa4__cache_fs_reset_counts();
    assert_int_equal(fa4__cache_put(c, t.key_inputs, t.key_len, &t.e), 1);
    assert_int_equal(fa4__cache_fs_op_calls(FA4__FS_FSYNC), 0);
    fa4__cache_close(c);
    setenv("FA4JIT_CACHE_DURABLE", "1", 1); /* e.g. `fa4jit compile` filling a cache to ship */
    c = open_dir(sub("dur3"), FA4_CACHE_MODE_RW);
    unsetenv("FA4JIT_CACHE_DURABLE");
    fa4__cache_fs_reset_counts();
    assert_int_equal(fa4__cache_put(c, t.key_inputs, t.key_len, &t.e), 1);
    assert_int_equal(fa4__cache_fs_op_calls(FA4__FS_FSYNC), 2);
    fa4__cache_close(c);
    test_entry_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_put_faults, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_faults, setup, teardown),
        cmocka_unit_test_setup_teardown(test_faults_everywhere, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tier_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_roots, setup, teardown),
        cmocka_unit_test_setup_teardown(test_planted_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hmac_entries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mode_off, setup, teardown),
        cmocka_unit_test_setup_teardown(test_loader_rejection, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config, setup, teardown),
        cmocka_unit_test_setup_teardown(test_entry_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_durable, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
