/*
 * bench_cache_get.c - time of fa4__cache_get on a disk hit: one entry of a ~300 KB cubin plus
 * small blobs, read back N times (open, fstat, read, checksum, key compare, close). The page cache
 * is warm after the first read, which is the common case of a second process starting.
 * Usage: bench_cache_get [cubin bytes (300000)] [iterations (2000)] [dir (a new one in $TMPDIR)]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache/admin.h"
#include "cache/cache.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    size_t size = argc > 1 ? (size_t)atol(argv[1]) : 300000;
    int iters = argc > 2 ? atoi(argv[2]) : 2000;
    char dir[256];
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    if (argc > 3)
        snprintf(dir, sizeof dir, "%s", argv[3]);
    else {
        snprintf(dir, sizeof dir, "%s/fa4bench-XXXXXX", tmp);
        if (!mkdtemp(dir)) {
            perror("mkdtemp");
            return 2;
        }
    }
    fa4__cache_config cfg = {0};
    cfg.mode = FA4_CACHE_MODE_RW;
    cfg.cache_dir = dir;
    fa4__cache *c;
    char err[256];
    if (fa4__cache_open(&cfg, &c, err, sizeof err) != FA4_OK) {
        fprintf(stderr, "open: %s\n", err);
        return 2;
    }
    uint8_t *cubin = malloc(size), meta[512], spec[2048];
    for (size_t i = 0; i < size; i++)
        cubin[i] = (uint8_t)(i * 2654435761u >> 13);
    memset(meta, 1, sizeof meta);
    memset(spec, 'x', sizeof spec);
    const char *ki = "fa4jit-key v1\nmod=0123456789abcdef0123456789abcdef\ndtype=bf16\nhead_dim=128\n"
                     "head_dim_v=128\nflags=7\npath=2\narch=sm_90a\nfingerprint=deadbeef\nnvrtc=13.0\n";
    fa4__cache_entry e = {0};
    e.num_blobs = 3;
    strcpy(e.blobs[0].name, "fwd");
    e.blobs[0].data = cubin;
    e.blobs[0].size = size;
    strcpy(e.blobs[1].name, "meta");
    e.blobs[1].data = meta;
    e.blobs[1].size = sizeof meta;
    strcpy(e.blobs[2].name, "spec");
    e.blobs[2].data = spec;
    e.blobs[2].size = sizeof spec;
    if (!fa4__cache_put(c, ki, strlen(ki), &e)) {
        fprintf(stderr, "put failed\n");
        return 2;
    }
    double *t = malloc((size_t)iters * sizeof *t);
    for (int i = 0; i < iters; i++) {
        fa4__cache_entry got;
        double t0 = now_us();
        int hit = fa4__cache_get(c, ki, strlen(ki), &got, NULL);
        t[i] = now_us() - t0;
        if (!hit || got.blobs[0].size != size) {
            fprintf(stderr, "miss at iteration %d\n", i);
            return 1;
        }
        fa4__cache_entry_free(&got);
    }
    double first = t[0];
    qsort(t, (size_t)iters, sizeof *t, cmp_double);
    printf("fa4__cache_get disk hit, entry with a %zu-byte cubin, %d reads: first %.1f us, "
           "min %.1f us, median %.1f us, p99 %.1f us, max %.1f us\n",
           size, iters, first, t[0], t[iters / 2], t[iters * 99 / 100], t[iters - 1]);
    fa4__cache_prune_result r;
    fa4__cache_clear(c, 0, &r);
    fa4__cache_close(c);
    if (argc <= 3) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir); /* the v1 directory and its buckets */
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", dir);
    }
    free(t);
    free(cubin);
    return 0;
}
