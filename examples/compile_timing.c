/*
 * compile_timing.c - how long fa4_jit_compile takes to hand back a usable kernel: cold (NVRTC),
 * from the disk cache (a fresh ctx each time, so the in-process table is empty), and from the
 * in-process table (the same ctx, kernel still held). Medians over repeated runs.
 *
 *   fa4jit_compile_timing FILE.mod [--arch sm_90a] [--runs N]
 *
 * With --arch the ctx is deviceless (no module load); without it the current GPU is used and the
 * disk-hit time includes cuModuleLoadData.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fa4jit.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static fa4_ctx *make_ctx(const char *arch, const char *dir)
{
    fa4_ctx_options o;
    fa4_ctx_options_init(&o);
    o.device = arch ? FA4_DEVICE_NONE : FA4_DEVICE_CURRENT;
    o.cache_dir = dir;
    o.cache_mode = FA4_CACHE_MODE_RW;
    fa4_ctx *ctx = NULL;
    if (fa4_ctx_create(&o, &ctx) != FA4_OK) {
        fprintf(stderr, "fa4_ctx_create: %s\n", fa4_ctx_create_errmsg());
        exit(1);
    }
    return ctx;
}

int main(int argc, char **argv)
{
    const char *file = NULL, *arch = NULL;
    int runs = 20;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--arch") && i + 1 < argc)
            arch = argv[++i];
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else
            file = argv[i];
    }
    if (!file || runs < 1 || runs > 10000) {
        fprintf(stderr, "usage: fa4jit_compile_timing FILE.mod [--arch sm_90a] [--runs N]\n");
        return 2;
    }
    FILE *f = fopen(file, "rb");
    if (!f) {
        perror(file);
        return 1;
    }
    static char src[1 << 16];
    size_t n = fread(src, 1, sizeof src - 1, f);
    fclose(f);
    src[n] = '\0';

    char dir[] = "/tmp/fa4jit-timing-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    fa4_kernel_spec spec;
    fa4_kernel_spec_init(&spec);
    spec.source = src;
    spec.arch = arch;

    /* cold: an empty cache directory */
    fa4_ctx *ctx = make_ctx(arch, dir);
    fa4_kernel *k = NULL;
    double t0 = now_ms();
    if (fa4_jit_compile(ctx, &spec, &k) != FA4_OK) {
        fprintf(stderr, "compile: %s\n", fa4_ctx_errmsg(ctx));
        return 1;
    }
    double cold = now_ms() - t0;
    fa4_kernel_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    fa4_kernel_get_info(k, &info);
    /* memory hits: same ctx, first kernel still held */
    double *mem = malloc(sizeof(double) * (size_t)runs), *disk = malloc(sizeof(double) * (size_t)runs);
    for (int i = 0; i < runs; i++) {
        fa4_kernel *k2 = NULL;
        t0 = now_ms();
        fa4_jit_compile(ctx, &spec, &k2);
        mem[i] = now_ms() - t0;
        fa4_kernel_destroy(k2);
    }
    fa4_kernel_destroy(k);
    fa4_ctx_destroy(ctx);
    /* disk hits: a fresh ctx each time */
    for (int i = 0; i < runs; i++) {
        ctx = make_ctx(arch, dir);
        fa4_kernel *k3 = NULL;
        t0 = now_ms();
        if (fa4_jit_compile(ctx, &spec, &k3) != FA4_OK) {
            fprintf(stderr, "compile: %s\n", fa4_ctx_errmsg(ctx));
            return 1;
        }
        disk[i] = now_ms() - t0;
        fa4_kernel_info i3;
        memset(&i3, 0, sizeof i3);
        i3.struct_size = sizeof i3;
        fa4_kernel_get_info(k3, &i3);
        if (i3.cache_result != FA4_CACHE_HIT_DISK) {
            fprintf(stderr, "expected a disk hit, got %d\n", i3.cache_result);
            return 1;
        }
        fa4_kernel_destroy(k3);
        fa4_ctx_destroy(ctx);
    }
    printf("%s for %s (%d programs)\n", file, info.arch, info.num_programs);
    printf("cold compile (parallel programs)  %10.1f ms\n", cold);
    for (int i = 0; i < info.num_programs; i++)
        printf("  %-12s                     %10.1f ms\n", info.programs[i].name,
               info.programs[i].compile_ms);
    printf("disk hit to usable kernel, median %10.3f ms  (%d runs%s)\n", median(disk, runs), runs,
           arch ? ", deviceless: no module load" : ", module load included");
    printf("memory hit, median                %10.4f ms  (%d runs)\n", median(mem, runs), runs);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    free(mem);
    free(disk);
    return 0;
}
