/*
 * cache_test_util.h - helpers shared by the cache tests: scratch directories, opening a cache on
 * one private tier, deterministic entries whose blobs can be checked byte for byte, and file
 * pokes. Header-only (static functions) because the test build compiles one file per test.
 */
#ifndef FA4_CACHE_TEST_UTIL_H
#define FA4_CACHE_TEST_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cache/admin.h"
#include "cache/cache.h"
#include "cache/entry.h"
#include "cache/fs.h"

static char scratch_root[256];

static __attribute__((unused)) int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    chmod(path, 0700);
    return remove(path);
}

static __attribute__((unused)) void rm_rf(const char *path)
{
    nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* A fresh private scratch directory per test (mkdtemp makes it 0700). */
static __attribute__((unused)) const char *scratch_new(void)
{
    snprintf(scratch_root, sizeof scratch_root, "/tmp/fa4cache-test-XXXXXX");
    if (!mkdtemp(scratch_root))
        fail_msg("mkdtemp: %s", strerror(errno));
    return scratch_root;
}

static __attribute__((unused)) void scratch_free(void)
{
    if (scratch_root[0])
        rm_rf(scratch_root);
    scratch_root[0] = '\0';
}

static __attribute__((unused)) char *fmt_path(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static __attribute__((unused)) char *fmt_path(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, len, fmt, ap);
    va_end(ap);
    assert_true(n > 0 && (size_t)n < len);
    return buf;
}

static __attribute__((unused)) fa4__cache *open_dir(const char *dir, int mode)
{
    fa4__cache_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.mode = mode;
    cfg.cache_dir = dir;
    fa4__cache *c = NULL;
    char err[256];
    assert_int_equal(fa4__cache_open(&cfg, &c, err, sizeof err), FA4_OK);
    assert_non_null(c);
    return c;
}

static __attribute__((unused)) fa4__cache *open_cfg(const fa4__cache_config *cfg)
{
    fa4__cache *c = NULL;
    char err[256];
    fa4_status st = fa4__cache_open(cfg, &c, err, sizeof err);
    if (st != FA4_OK)
        fail_msg("fa4__cache_open: %s", err);
    return c;
}

/* A test entry: blobs "fwd" and "meta" whose bytes derive from a seed, so that a reader can
 * check every byte it got. */
typedef struct test_entry {
    fa4__cache_entry e;
    uint8_t *fwd, *meta;
    char key_inputs[256];
    size_t key_len;
} test_entry;

static __attribute__((unused)) void fill_bytes(uint8_t *p, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (uint8_t)x;
    }
}

static __attribute__((unused)) void test_entry_make(test_entry *t, uint32_t seed, size_t fwd_size)
{
    memset(t, 0, sizeof *t);
    t->key_len = (size_t)snprintf(t->key_inputs, sizeof t->key_inputs,
                                  "fa4jit-key v1\nmod=%08x\ndtype=bf16\nhead_dim=128\narch=sm_90a\n"
                                  "fingerprint=0123456789abcdef\nnvrtc=13.0\n",
                                  seed);
    t->fwd = malloc(fwd_size ? fwd_size : 1);
    t->meta = malloc(64);
    assert_non_null(t->fwd);
    assert_non_null(t->meta);
    fill_bytes(t->fwd, fwd_size, seed);
    fill_bytes(t->meta, 64, seed ^ 0x5a5a5a5au);
    t->e.num_blobs = 2;
    strcpy(t->e.blobs[0].name, "fwd");
    t->e.blobs[0].data = t->fwd;
    t->e.blobs[0].size = fwd_size;
    strcpy(t->e.blobs[1].name, "meta");
    t->e.blobs[1].data = t->meta;
    t->e.blobs[1].size = 64;
}

static __attribute__((unused)) void test_entry_free(test_entry *t)
{
    free(t->fwd);
    free(t->meta);
}

/* 1 when got holds exactly the blobs of want. */
static __attribute__((unused)) int entry_equal(const fa4__cache_entry *got, const fa4__cache_entry *want)
{
    if (got->num_blobs != want->num_blobs)
        return 0;
    for (int i = 0; i < got->num_blobs; i++)
        if (strcmp(got->blobs[i].name, want->blobs[i].name) || got->blobs[i].size != want->blobs[i].size ||
            memcmp(got->blobs[i].data, want->blobs[i].data, got->blobs[i].size))
            return 0;
    return 1;
}

static __attribute__((unused)) uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

static __attribute__((unused)) void spit(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    if (len)
        assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

/* Path of the entry of t in the cache's first tier. */
static __attribute__((unused)) void entry_path_of(fa4__cache *c, const test_entry *t, char *out, size_t len)
{
    fa4__cache_tier_info ti;
    char key[33];
    assert_int_equal(fa4__cache_tier_info_get(c, 0, &ti), 0);
    fa4__cache_key(t->key_inputs, t->key_len, key);
    fmt_path(out, len, "%s/%.2s/%s.fa4", ti.dir, key, key);
}

/* Count files under dir whose name starts with prefix (recursively). */
static int count_prefix_n;
static const char *count_prefix_p;
static __attribute__((unused)) int count_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    if (flag == FTW_F || flag == FTW_SL) {
        const char *base = path + ftw->base;
        if (!strncmp(base, count_prefix_p, strlen(count_prefix_p)))
            count_prefix_n++;
    }
    return 0;
}

static __attribute__((unused)) int count_files(const char *dir, const char *prefix)
{
    count_prefix_n = 0;
    count_prefix_p = prefix;
    nftw(dir, count_one, 16, FTW_PHYS);
    return count_prefix_n;
}

/* Open file descriptors of this process (to catch leaks). */
static __attribute__((unused)) int count_fds(void)
{
    int n = 0;
    for (int fd = 0; fd < 1024; fd++)
        if (fcntl(fd, F_GETFD) != -1)
            n++;
    return n;
}

#endif /* FA4_CACHE_TEST_UTIL_H */
