/*
 * test_cache_evict.c - bounded size and locks: LRU eviction order, the hourly mtime refresh,
 * temp and lock files aged out after an hour while young ones stay (T9), automatic eviction
 * keeping a tier under its limit, clear and the tier walk, and the compile lock: mutual exclusion
 * between threads, a killed holder, a hung holder (timeout) and a stale lock file (broken) (T8).
 */
#include "cache_test_util.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>

static int setup(void **state)
{
    (void)state;
    scratch_new();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    scratch_free();
    return 0;
}

static const char *sub(const char *name)
{
    static char buf[4][512];
    static int next;
    char *b = buf[next++ % 4];
    fmt_path(b, 512, "%s/%s", scratch_root, name);
    return b;
}

static void set_age(const char *path, time_t age)
{
    struct timespec ts[2] = {{time(NULL) - age, 0}, {time(NULL) - age, 0}};
    assert_int_equal(utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW), 0);
}

static time_t mtime_of(const char *path)
{
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    return st.st_mtime;
}

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

typedef struct tally {
    int kinds[5];
    int64_t entry_bytes;
} tally;

static int tally_item(const fa4__cache_item *it, void *ud)
{
    tally *t = ud;
    t->kinds[it->kind]++;
    if (it->kind == FA4__ITEM_ENTRY)
        t->entry_bytes += it->size;
    return 0;
}

static fa4__cache *open_limited(const char *dir, int64_t max)
{
    fa4__cache_config cfg = {0};
    cfg.mode = FA4_CACHE_MODE_RW;
    cfg.cache_dir = dir;
    cfg.max_size = max;
    return open_cfg(&cfg);
}

/* --------------------------------------------------------------------------------- T9 */

static void test_eviction_order(void **state)
{
    (void)state;
    fa4__cache *c = open_limited(sub("e"), (int64_t)1 << 30);
    enum { N = 10 };
    test_entry t[N];
    char paths[N][1024];
    for (int i = 0; i < N; i++) {
        test_entry_make(&t[i], 100 + (uint32_t)i, 4000);
        assert_int_equal(fa4__cache_put(c, t[i].key_inputs, t[i].key_len, &t[i].e), 1);
        entry_path_of(c, &t[i], paths[i], sizeof paths[i]);
        set_age(paths[i], 100000 - 1000 * i); /* entry 0 is the least recently used */
    }
    /* entry 2 was used within the hour: a get does not touch it again; entry 1 is older and
     * gets refreshed, which saves it from eviction */
    set_age(paths[2], 1800);
    time_t before = mtime_of(paths[2]);
    fa4__cache_entry got;
    assert_int_equal(fa4__cache_get(c, t[2].key_inputs, t[2].key_len, &got, NULL), 1);
    fa4__cache_entry_free(&got);
    assert_int_equal(mtime_of(paths[2]), before);
    assert_int_equal(fa4__cache_get(c, t[1].key_inputs, t[1].key_len, &got, NULL), 1);
    fa4__cache_entry_free(&got);
    assert_true(mtime_of(paths[1]) >= time(NULL) - 5);

    tally before_t = {0};
    assert_int_equal(fa4__cache_foreach(c, 0, tally_item, &before_t), 0);
    assert_int_equal(before_t.kinds[FA4__ITEM_ENTRY], N);
    int64_t each = before_t.entry_bytes / N;

    /* keep 6 entries: the 4 least recently used go (0, 3, 4, 5 - not 1, refreshed, nor 2) */
    fa4__cache_prune_result r;
    assert_int_equal(fa4__cache_prune(c, 0, each * 6, &r), 0);
    assert_int_equal(r.entries, N);
    assert_int_equal(r.removed_entries, 4);
    assert_int_equal(r.removed_bytes, (uint64_t)(each * 4));
    const int gone[N] = {1, 0, 0, 1, 1, 1, 0, 0, 0, 0};
    for (int i = 0; i < N; i++)
        assert_int_equal(exists(paths[i]), !gone[i]);
    fa4__cache_stats s;
    fa4__cache_get_stats(c, &s);
    assert_int_equal(s.evictions, 4);
    for (int i = 0; i < N; i++)
        test_entry_free(&t[i]);
    fa4__cache_close(c);
}

static void test_litter_age(void **state)
{
    (void)state;
    fa4__cache *c = open_limited(sub("l"), (int64_t)1 << 30);
    test_entry t;
    test_entry_make(&t, 200, 100);
    assert_int_equal(fa4__cache_put(c, t.key_inputs, t.key_len, &t.e), 1);
    char path[1024], dir[1024], f[1200];
    entry_path_of(c, &t, path, sizeof path);
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = '\0';
    const char *names[] = {".tmp.old", ".tmp.young", "0123456789abcdef0123456789abcdef.lock",
                           "fedcba9876543210fedcba9876543210.lock", "README"};
    const time_t ages[] = {7200, 600, 7200, 600, 7200};
    const int removed[] = {1, 0, 1, 0, 0};
    for (int i = 0; i < 5; i++) {
        spit(fmt_path(f, sizeof f, "%s/%s", dir, names[i]), "x", 1);
        set_age(f, ages[i]);
    }
    tally k = {0};
    assert_int_equal(fa4__cache_foreach(c, 0, tally_item, &k), 0);
    assert_int_equal(k.kinds[FA4__ITEM_ENTRY], 1);
    assert_int_equal(k.kinds[FA4__ITEM_TEMP], 2);
    assert_int_equal(k.kinds[FA4__ITEM_LOCK], 2);
    assert_int_equal(k.kinds[FA4__ITEM_OTHER], 1);
    fa4__cache_prune_result r;
    assert_int_equal(fa4__cache_prune(c, 0, 0, &r), 0);
    assert_int_equal(r.removed_temp, 1);
    assert_int_equal(r.removed_locks, 1);
    assert_int_equal(r.removed_entries, 0);
    for (int i = 0; i < 5; i++)
        assert_int_equal(exists(fmt_path(f, sizeof f, "%s/%s", dir, names[i])), !removed[i]);
    assert_true(exists(path));

    /* a put also sweeps its own bucket of temp files a crashed writer left */
    spit(fmt_path(f, sizeof f, "%s/.tmp.crashed", dir), "x", 1);
    set_age(f, 7200);
    assert_int_equal(fa4__cache_put(c, t.key_inputs, t.key_len, &t.e), 1);
    assert_false(exists(f));

    /* clear takes everything of ours, leaves foreign files */
    fa4__cache_quarantine(c, t.key_inputs, t.key_len);
    assert_int_equal(fa4__cache_put(c, t.key_inputs, t.key_len, &t.e), 1);
    assert_int_equal(fa4__cache_clear(c, 0, &r), 0);
    assert_int_equal(r.removed_entries, 2); /* the entry and the quarantined one */
    memset(&k, 0, sizeof k);
    assert_int_equal(fa4__cache_foreach(c, 0, tally_item, &k), 0);
    assert_int_equal(k.kinds[FA4__ITEM_ENTRY] + k.kinds[FA4__ITEM_TEMP] + k.kinds[FA4__ITEM_LOCK] +
                         k.kinds[FA4__ITEM_QUARANTINE],
                     0);
    assert_int_equal(k.kinds[FA4__ITEM_OTHER], 1);
    fa4__cache_entry got;
    assert_int_equal(fa4__cache_get(c, t.key_inputs, t.key_len, &got, NULL), 0);
    test_entry_free(&t);
    fa4__cache_close(c);
}

static void test_automatic_eviction(void **state)
{
    (void)state;
    const int64_t max = 64 << 10;
    fa4__cache *c = open_limited(sub("a"), max);
    test_entry last;
    for (int i = 0; i < 60; i++) {
        test_entry t;
        test_entry_make(&t, 300 + (uint32_t)i, 4000);
        assert_int_equal(fa4__cache_put(c, t.key_inputs, t.key_len, &t.e), 1);
        tally k = {0};
        assert_int_equal(fa4__cache_foreach(c, 0, tally_item, &k), 0);
        assert_true(k.entry_bytes <= max);
        if (i == 59)
            last = t;
        else
            test_entry_free(&t);
    }
    fa4__cache_entry got;
    assert_int_equal(fa4__cache_get(c, last.key_inputs, last.key_len, &got, NULL), 1);
    fa4__cache_entry_free(&got);
    fa4__cache_stats s;
    fa4__cache_get_stats(c, &s);
    assert_true(s.evictions >= 60 - (uint64_t)(max / 4000));
    test_entry_free(&last);
    fa4__cache_close(c);
}

/* --------------------------------------------------------------------------------- T8 */

static fa4__cache *open_locking(const char *dir)
{
    fa4__cache_config cfg = {0};
    cfg.mode = FA4_CACHE_MODE_RW;
    cfg.cache_dir = dir;
    cfg.use_lock = 1;
    return open_cfg(&cfg);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static const char *const KEY = "0123456789abcdef0123456789abcdef";

typedef struct contend {
    fa4__cache *c;
    atomic_int inside, max_inside, rounds;
} contend;

static void *contender(void *arg)
{
    contend *s = arg;
    for (int i = 0; i < 50; i++) {
        int tok = fa4__cache_lock(s->c, KEY, 10000);
        assert_true(tok >= 0);
        int now = atomic_fetch_add(&s->inside, 1) + 1;
        if (now > atomic_load(&s->max_inside))
            atomic_store(&s->max_inside, now);
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
        atomic_fetch_sub(&s->inside, 1);
        atomic_fetch_add(&s->rounds, 1);
        fa4__cache_unlock(s->c, tok);
    }
    return NULL;
}

static void test_lock_threads(void **state)
{
    (void)state;
    contend s = {0};
    s.c = open_locking(sub("k"));
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&th[i], NULL, contender, &s), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(atomic_load(&s.rounds), 200);
    assert_int_equal(atomic_load(&s.max_inside), 1);
    assert_int_equal(count_files(sub("k"), "0123"), 0); /* no lock file left behind */
    fa4__cache_unlock(s.c, 12345);                       /* unknown tokens are ignored */
    fa4__cache_close(s.c);

    /* without use_lock nothing is locked and nothing touched */
    fa4__cache *c = open_dir(sub("k"), FA4_CACHE_MODE_RW);
    fa4__cache_fs_reset_counts();
    assert_int_equal(fa4__cache_lock(c, KEY, 100), -1);
    assert_int_equal(fa4__cache_fs_calls(), 0);
    fa4__cache_close(c);
    c = open_locking(sub("k"));
    assert_int_equal(fa4__cache_lock(c, "not-a-key", 100), -1);
    assert_int_equal(fa4__cache_lock(c, "0123456789ABCDEF0123456789abcdef", 100), -1);
    fa4__cache_close(c);
}

static void test_lock_holders(void **state)
{
    (void)state;
    fa4__cache *c = open_locking(sub("h"));
    char lockpath[1024];
    fmt_path(lockpath, sizeof lockpath, "%s/v1/%.2s/%s.lock", sub("h"), KEY, KEY);

    /* a holder killed while holding it blocks nobody */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        fa4__cache *cc = open_locking(sub("h"));
        if (fa4__cache_lock(cc, KEY, 1000) < 0)
            _exit(3);
        raise(SIGKILL);
        _exit(4);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    assert_true(exists(lockpath)); /* its lock file is still there, and means nothing */
    double t0 = now_ms();
    int tok = fa4__cache_lock(c, KEY, 5000);
    assert_true(tok >= 0);
    assert_true(now_ms() - t0 < 1000);
    fa4__cache_unlock(c, tok);

    /* a hung holder: waited for until the timeout, then the caller compiles anyway */
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        fa4__cache *cc = open_locking(sub("h"));
        char ok = fa4__cache_lock(cc, KEY, 1000) >= 0 ? 'y' : 'n';
        if (write(fds[1], &ok, 1) != 1)
            _exit(5);
        pause();
        _exit(0);
    }
    char ok;
    assert_int_equal(read(fds[0], &ok, 1), 1);
    assert_int_equal(ok, 'y');
    t0 = now_ms();
    assert_int_equal(fa4__cache_lock(c, KEY, 300), -1);
    double waited = now_ms() - t0;
    assert_true(waited >= 290 && waited < 3000);
    fa4__cache_stats s;
    fa4__cache_get_stats(c, &s);
    assert_int_equal(s.lock_timeouts, 1);
    /* once its lock file is older than any compile takes, it is broken */
    set_age(lockpath, 3600);
    t0 = now_ms();
    tok = fa4__cache_lock(c, KEY, 5000);
    assert_true(tok >= 0);
    assert_true(now_ms() - t0 < 1000);
    fa4__cache_unlock(c, tok);
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    close(fds[0]);
    close(fds[1]);
    fa4__cache_close(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_eviction_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_litter_age, setup, teardown),
        cmocka_unit_test_setup_teardown(test_automatic_eviction, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lock_threads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lock_holders, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
