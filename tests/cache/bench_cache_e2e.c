/*
 * bench_cache_e2e.c - fa4_jit_compile to a usable (loaded) kernel on a disk hit and on a memory
 * hit, on a real GPU. A first ctx compiles the spec (a miss, written to the cache); then, N times,
 * a fresh ctx (empty in-process table) compiles it again: a disk hit whose time includes reading
 * and checking the entry and cuModuleLoadData of every program. Usage:
 *   bench_cache_e2e [iterations (20)] [flags: all|fwd (all)]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fa4jit.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static fa4_ctx *make_ctx(const char *dir)
{
    fa4_ctx_options o;
    fa4_ctx_options_init(&o);
    o.device = 0;
    o.cache_mode = FA4_CACHE_MODE_RW;
    o.cache_dir = dir;
    o.cache_path = "";
    fa4_ctx *ctx = NULL;
    if (fa4_ctx_create(&o, &ctx) != FA4_OK) {
        fprintf(stderr, "ctx: %s\n", fa4_ctx_create_errmsg());
        exit(2);
    }
    return ctx;
}

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 20;
    int fwd_only = argc > 2 && !strcmp(argv[2], "fwd");
    char dir[] = "/tmp/fa4e2e-XXXXXX";
    if (!mkdtemp(dir))
        return 2;
    fa4_kernel_spec spec;
    fa4_kernel_spec_init(&spec);
    spec.source = "float score_mod(float score, int b, int h, int q_idx, int kv_idx) {\n"
                  "    return score + (float)(kv_idx - q_idx) * 0.01f;\n}\n";
    if (fwd_only)
        spec.flags = FA4_COMPILE_FWD;

    fa4_ctx *ctx = make_ctx(dir);
    fa4_kernel *k;
    double t0 = now_ms();
    if (fa4_jit_compile(ctx, &spec, &k) != FA4_OK) {
        fprintf(stderr, "compile: %s\n", fa4_ctx_errmsg(ctx));
        return 1;
    }
    double miss = now_ms() - t0;
    fa4_kernel_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    fa4_kernel_get_info(k, &info);
    size_t bytes = 0;
    for (int i = 0; i < info.num_programs; i++)
        bytes += info.programs[i].cubin_size;
    printf("miss: %.1f ms (compile %.1f ms), %d programs, %zu cubin bytes, arch %s, launchable %d\n",
           miss, info.compile_ms, info.num_programs, bytes, info.arch, info.launchable);
    fa4_ctx_destroy(ctx);

    double *disk = malloc(sizeof(double) * (size_t)iters), *lookup = malloc(sizeof(double) * (size_t)iters);
    double *mem = malloc(sizeof(double) * (size_t)iters);
    for (int i = 0; i < iters; i++) {
        ctx = make_ctx(dir);
        t0 = now_ms();
        if (fa4_jit_compile(ctx, &spec, &k) != FA4_OK) {
            fprintf(stderr, "compile: %s\n", fa4_ctx_errmsg(ctx));
            return 1;
        }
        disk[i] = now_ms() - t0;
        fa4_kernel_get_info(k, &info);
        lookup[i] = info.lookup_ms;
        if (info.cache_result != FA4_CACHE_HIT_DISK || !info.launchable) {
            fprintf(stderr, "expected a launchable disk hit, got result %d\n", info.cache_result);
            return 1;
        }
        fa4_kernel *k2;
        t0 = now_ms();
        fa4_jit_compile(ctx, &spec, &k2);
        mem[i] = (now_ms() - t0) * 1000.0;
        fa4_kernel_destroy(k2);
        fa4_kernel_destroy(k);
        fa4_ctx_destroy(ctx);
    }
    qsort(disk, (size_t)iters, sizeof *disk, cmp);
    qsort(lookup, (size_t)iters, sizeof *lookup, cmp);
    qsort(mem, (size_t)iters, sizeof *mem, cmp);
    printf("disk hit to a loaded kernel (%d fresh ctxs): min %.2f ms, median %.2f ms, max %.2f ms "
           "(lookup_ms median %.2f)\n",
           iters, disk[0], disk[iters / 2], disk[iters - 1], lookup[iters / 2]);
    printf("memory hit: min %.1f us, median %.1f us, max %.1f us\n", mem[0], mem[iters / 2],
           mem[iters - 1]);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        return 1;
    return 0;
}
