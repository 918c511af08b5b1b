/*
 * test_cache_concurrency.c - processes racing on one directory. T6: a child is SIGKILLed just
 * before its k-th file-system call, for every k of a put/overwrite/quarantine/prune sequence; every
 * entry file left behind is whole and valid, and the next put heals what is missing. T7: 8
 * processes x 2 threads compile (get, lock, get, "compile", put, unlock) shared and per-process
 * keys while a ninth process keeps evicting; no reader ever sees a torn or foreign entry, and each
 * key is compiled once plus at most once per eviction.
 */
#include "cache_test_util.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
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

typedef struct validate {
    fa4__cache *c;
    int entries, bad;
} validate;

static int validate_item(const fa4__cache_item *it, void *ud)
{
    validate *v = ud;
    if (it->kind != FA4__ITEM_ENTRY)
        return 0;
    v->entries++;
    fa4__cache_check chk;
    fa4__cache_check_file(v->c, it->path, it->key, &chk);
    if (chk.result != FA4__ENTRY_OK)
        v->bad++;
    fa4__cache_check_free(&chk);
    return 0;
}

/* ---------------------------------------------------------------------------------- T6 */

static uint64_t kill_at;
static void kill_hook(fa4__fs_op op, uint64_t call, void *ud)
{
    (void)op;
    (void)ud;
    if (call == kill_at)
        raise(SIGKILL);
}

/* The child's work: overwrite A, write B, quarantine A and write it again, prune. */
static void crash_sequence(const char *dir, test_entry *a, test_entry *a2, test_entry *b)
{
    fa4__cache *c = open_dir(dir, FA4_CACHE_MODE_RW);
    fa4__cache_put(c, a2->key_inputs, a2->key_len, &a2->e);
    fa4__cache_put(c, b->key_inputs, b->key_len, &b->e);
    fa4__cache_quarantine(c, a->key_inputs, a->key_len);
    fa4__cache_put(c, a->key_inputs, a->key_len, &a->e);
    fa4__cache_prune(c, 0, 1, NULL);
    fa4__cache_put(c, b->key_inputs, b->key_len, &b->e);
    fa4__cache_close(c);
}

static void test_crash_at_every_call(void **state)
{
    (void)state;
    test_entry a, a2, b;
    test_entry_make(&a, 500, 50000);
    test_entry_make(&a2, 500, 50000); /* same key inputs as a, other bytes */
    fill_bytes(a2.fwd, 50000, 9999);
    test_entry_make(&b, 501, 70000);
    const char *dir = sub("crash");

    /* how many calls does the sequence make? */
    fa4__cache *c = open_dir(dir, FA4_CACHE_MODE_RW);
    assert_int_equal(fa4__cache_put(c, a.key_inputs, a.key_len, &a.e), 1);
    fa4__cache_close(c);
    fa4__cache_fs_reset_counts();
    crash_sequence(dir, &a, &a2, &b);
    uint64_t calls = fa4__cache_fs_calls();
    assert_true(calls > 20);

    int killed = 0;
    for (uint64_t k = 1; k <= calls + 1; k++) {
        rm_rf(dir);
        c = open_dir(dir, FA4_CACHE_MODE_RW);
        assert_int_equal(fa4__cache_put(c, a.key_inputs, a.key_len, &a.e), 1);
        fa4__cache_close(c);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            kill_at = k;
            fa4__cache_fs_hook(kill_hook, NULL);
            crash_sequence(dir, &a, &a2, &b);
            _exit(0);
        }
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (k <= calls) {
            assert_true(WIFSIGNALED(status));
            killed++;
        } else {
            assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        }

        /* every published entry is valid, and a get returns one of the versions put */
        c = open_dir(dir, FA4_CACHE_MODE_RW);
        validate v = {c, 0, 0};
        assert_int_equal(fa4__cache_foreach(c, 0, validate_item, &v), 0);
        assert_int_equal(v.bad, 0);
        fa4__cache_entry got;
        if (fa4__cache_get(c, a.key_inputs, a.key_len, &got, NULL)) {
            assert_true(entry_equal(&got, &a.e) || entry_equal(&got, &a2.e));
            fa4__cache_entry_free(&got);
        }
        if (fa4__cache_get(c, b.key_inputs, b.key_len, &got, NULL)) {
            assert_true(entry_equal(&got, &b.e));
            fa4__cache_entry_free(&got);
        }
        /* heals: the next put makes it whole */
        assert_int_equal(fa4__cache_put(c, b.key_inputs, b.key_len, &b.e), 1);
        assert_int_equal(fa4__cache_get(c, b.key_inputs, b.key_len, &got, NULL), 1);
        assert_true(entry_equal(&got, &b.e));
        fa4__cache_entry_free(&got);
        fa4__cache_close(c);
    }
    assert_int_equal(killed, (int)calls);
    test_entry_free(&a);
    test_entry_free(&a2);
    test_entry_free(&b);
}

/* ---------------------------------------------------------------------------------- T7 */

enum { PROCS = 8, THREADS = 2, SHARED_KEYS = 8, OWN_KEYS = 3, ROUNDS = 12 };
#define NKEYS (SHARED_KEYS + PROCS * OWN_KEYS)

typedef struct shared_state {
    atomic_int compiles[NKEYS];
    atomic_int hits, torn, put_fail, lock_timeouts, stop;
    atomic_long evictions;
} shared_state;

static shared_state *sh;

/* Deterministic entry of key index i, 20-80 KB so that a torn read would show. */
static void key_entry(test_entry *t, int i)
{
    test_entry_make(t, 7000 + (uint32_t)i, 20000 + (size_t)i * 1700 % 60000);
}

typedef struct worker {
    fa4__cache *c;
    int proc, thread;
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    int keys[SHARED_KEYS + OWN_KEYS];
    for (int i = 0; i < SHARED_KEYS; i++)
        keys[i] = i;
    for (int i = 0; i < OWN_KEYS; i++)
        keys[SHARED_KEYS + i] = SHARED_KEYS + w->proc * OWN_KEYS + i;
    uint32_t rs = (uint32_t)(w->proc * 31 + w->thread * 7 + 1);
    for (int round = 0; round < ROUNDS; round++) {
        for (int j = 0; j < SHARED_KEYS + OWN_KEYS; j++) {
            rs = rs * 1103515245u + 12345u;
            int i = keys[(rs >> 8) % (SHARED_KEYS + OWN_KEYS)];
            test_entry t;
            key_entry(&t, i);
            fa4__cache_entry got;
            int hit = fa4__cache_get(w->c, t.key_inputs, t.key_len, &got, NULL);
            if (!hit) {
                char key[33];
                fa4__cache_key(t.key_inputs, t.key_len, key);
                int tok = fa4__cache_lock(w->c, key, 20000);
                if (tok < 0)
                    atomic_fetch_add(&sh->lock_timeouts, 1);
                hit = fa4__cache_get(w->c, t.key_inputs, t.key_len, &got, NULL);
                if (!hit) {
                    atomic_fetch_add(&sh->compiles[i], 1);
                    if (!fa4__cache_put(w->c, t.key_inputs, t.key_len, &t.e))
                        atomic_fetch_add(&sh->put_fail, 1);
                }
                fa4__cache_unlock(w->c, tok);
            }
            if (hit) {
                atomic_fetch_add(&sh->hits, 1);
                if (!entry_equal(&got, &t.e))
                    atomic_fetch_add(&sh->torn, 1);
                fa4__cache_entry_free(&got);
            }
            test_entry_free(&t);
        }
    }
    return NULL;
}

static fa4__cache *open_shared(const char *dir, int64_t max)
{
    fa4__cache_config cfg = {0};
    cfg.mode = FA4_CACHE_MODE_RW;
    cfg.cache_dir = dir;
    cfg.use_lock = 1;
    cfg.max_size = max;
    fa4__cache *c = NULL;
    char err[256];
    if (fa4__cache_open(&cfg, &c, err, sizeof err) != FA4_OK)
        _exit(10);
    return c;
}

static void run_workers(const char *dir, int64_t max, int evict_to)
{
    memset(sh, 0, sizeof *sh);
    pid_t evictor = -1;
    if (evict_to > 0) {
        evictor = fork();
        assert_true(evictor >= 0);
        if (evictor == 0) {
            fa4__cache *c = open_shared(dir, max);
            while (!atomic_load(&sh->stop)) {
                fa4__cache_prune(c, 0, evict_to, NULL);
                struct timespec ts = {0, 2000000};
                nanosleep(&ts, NULL);
            }
            fa4__cache_stats s;
            fa4__cache_get_stats(c, &s);
            atomic_fetch_add(&sh->evictions, (long)s.evictions);
            fa4__cache_close(c);
            _exit(0);
        }
    }
    pid_t pids[PROCS];
    for (int p = 0; p < PROCS; p++) {
        pids[p] = fork();
        assert_true(pids[p] >= 0);
        if (pids[p] == 0) {
            fa4__cache *c = open_shared(dir, max);
            pthread_t th[THREADS];
            worker w[THREADS];
            for (int t = 0; t < THREADS; t++) {
                w[t] = (worker){c, p, t};
                if (pthread_create(&th[t], NULL, worker_main, &w[t]) != 0)
                    _exit(11);
            }
            for (int t = 0; t < THREADS; t++)
                pthread_join(th[t], NULL);
            fa4__cache_stats s;
            fa4__cache_get_stats(c, &s);
            atomic_fetch_add(&sh->evictions, (long)s.evictions);
            fa4__cache_close(c);
            _exit(0);
        }
    }
    for (int p = 0; p < PROCS; p++) {
        int status;
        assert_int_equal(waitpid(pids[p], &status, 0), pids[p]);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    atomic_store(&sh->stop, 1);
    if (evictor > 0) {
        int status;
        assert_int_equal(waitpid(evictor, &status, 0), evictor);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
}

static void test_many_writers(void **state)
{
    (void)state;
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(sh != MAP_FAILED);

    /* without eviction: every key compiled exactly once by 16 racing compilers */
    run_workers(sub("w1"), (int64_t)1 << 30, 0);
    assert_int_equal(atomic_load(&sh->torn), 0);
    assert_int_equal(atomic_load(&sh->lock_timeouts), 0);
    assert_int_equal(atomic_load(&sh->put_fail), 0);
    for (int i = 0; i < NKEYS; i++)
        assert_int_equal(atomic_load(&sh->compiles[i]), 1);
    int total_gets = PROCS * THREADS * ROUNDS * (SHARED_KEYS + OWN_KEYS);
    assert_int_equal(atomic_load(&sh->hits), total_gets - NKEYS);
    print_message("T7 no eviction: %d processes x %d threads, %d gets, %d keys, %d compiles\n",
                  PROCS, THREADS, total_gets, NKEYS, NKEYS);

    /* with a process evicting down to ~6 entries all the time, and a small tier limit */
    run_workers(sub("w2"), 2 << 20, 6 * 50000);
    assert_int_equal(atomic_load(&sh->torn), 0);
    assert_int_equal(atomic_load(&sh->put_fail), 0);
    long compiles = 0;
    for (int i = 0; i < NKEYS; i++) {
        assert_true(atomic_load(&sh->compiles[i]) >= 1);
        compiles += atomic_load(&sh->compiles[i]);
    }
    long ev = atomic_load(&sh->evictions);
    print_message("T7 with eviction: %d compiles of %d keys, %ld evictions, %d lock timeouts\n",
                  (int)compiles, NKEYS, ev, atomic_load(&sh->lock_timeouts));
    /* a key is compiled again only after it was evicted (or a lock wait timed out) */
    assert_true(compiles <= NKEYS + ev + atomic_load(&sh->lock_timeouts));
    assert_true(ev > 0);

    fa4__cache *c = open_dir(sub("w2"), FA4_CACHE_MODE_RW);
    validate v = {c, 0, 0};
    assert_int_equal(fa4__cache_foreach(c, 0, validate_item, &v), 0);
    assert_int_equal(v.bad, 0);
    assert_int_equal(count_files(sub("w2"), ".tmp."), 0);
    fa4__cache_close(c);
    munmap(sh, sizeof *sh);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_crash_at_every_call, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_writers, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
