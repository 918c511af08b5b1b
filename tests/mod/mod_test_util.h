/*
 * mod_test_util.h - shared pieces of the mod front-end tests: reading files, listing the shipped
 * mods (the .mod files of mods/, sorted), parsing with a readable failure, and building random aux values that
 * fit a mod's declaration. Header-only (static functions) because each test is its own program.
 */
#ifndef FA4_TESTS_MOD_UTIL_H
#define FA4_TESTS_MOD_UTIL_H

#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mod/mod.h"

#define MT_MAX_MODS 64

static inline char *mt_read_file(const char *path, size_t *len)
{
    if (len)
        *len = 0; /* set on every path (Release builds warned that len may be used uninitialized) */
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (n + 4096 > cap) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
        size_t r = fread(buf + n, 1, cap - n - 1, f);
        n += r;
        if (r == 0)
            break;
    }
    fclose(f);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

static inline int mt_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Names (without .mod) of the shipped mods, sorted; returns the count. */
static inline int mt_list_mods(char *names[MT_MAX_MODS])
{
    DIR *d = opendir(FA4_TEST_SOURCE_DIR "/mods");
    int n = 0;
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < MT_MAX_MODS) {
        size_t l = strlen(e->d_name);
        if (l > 4 && !strcmp(e->d_name + l - 4, ".mod")) {
            names[n] = strdup(e->d_name);
            names[n][l - 4] = '\0';
            n++;
        }
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], mt_cmp);
    return n;
}

static inline char *mt_read_mod(const char *name, size_t *len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/mods/%s.mod", FA4_TEST_SOURCE_DIR, name);
    return mt_read_file(path, len);
}

/* Parse or print the rendered error and return NULL. */
static inline fa4__mod *mt_parse(const char *src, size_t len, const char *name)
{
    fa4__mod *m = NULL;
    fa4__diag d;
    fa4_status st = fa4__mod_parse(src, len, name, &m, &d);
    if (st != FA4_OK) {
        fprintf(stderr, "parse of %s failed (%d):\n%s\n", name, (int)st, d.rendered);
        return NULL;
    }
    return m;
}

/* Deterministic PRNG (splitmix64). */
static inline uint64_t mt_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline double mt_uniform(uint64_t *s, double lo, double hi)
{
    return lo + (hi - lo) * (double)(mt_next(s) >> 11) / 9007199254740992.0;
}

/* Random aux values for a mod: tensors of `numel` elements with small values that make sense
 * for the shipped mods (slopes in (0,1), int tables in [0, 4), bools), ints in [1, 32), floats
 * in [5, 50). Storage for tensors lives in `store` (caller frees each data pointer). */
static inline void mt_make_aux(const fa4__mod *m, uint64_t *seed, int64_t numel, fa4_aux_value *vals)
{
    int n = fa4__mod_num_aux(m);
    for (int i = 0; i < n; i++) {
        const fa4__aux_decl *a = fa4__mod_aux(m, i);
        fa4_aux_value *v = &vals[i];
        memset(v, 0, sizeof *v);
        v->name = a->name;
        v->dtype = a->dtype;
        if (!a->is_tensor) {
            if (a->dtype == FA4_DTYPE_FP32)
                v->f = mt_uniform(seed, 5, 50);
            else if (a->dtype == FA4_DTYPE_INT32)
                v->i = 1 + (int64_t)(mt_next(seed) % 31);
            else
                v->i = (int64_t)(mt_next(seed) & 1);
            continue;
        }
        size_t es = a->dtype == FA4_DTYPE_FP32 || a->dtype == FA4_DTYPE_INT32 ? 4
                  : a->dtype == FA4_DTYPE_INT64 ? 8
                  : a->dtype == FA4_DTYPE_BF16 || a->dtype == FA4_DTYPE_FP16 ||
                            a->dtype == FA4_DTYPE_INT16 ? 2 : 1;
        unsigned char *p = calloc((size_t)numel, es);
        for (int64_t k = 0; k < numel; k++) {
            double x = mt_uniform(seed, 0.05, 1.0);
            switch (a->dtype) {
            case FA4_DTYPE_FP32: { float f = (float)x; memcpy(p + k * 4, &f, 4); break; }
            case FA4_DTYPE_BF16: { float f = (float)x; uint32_t u; memcpy(&u, &f, 4);
                                   uint16_t h = (uint16_t)(u >> 16); memcpy(p + k * 2, &h, 2); break; }
            case FA4_DTYPE_FP16: { /* x in (0,1): exponent -1..-5 range, normal halves */
                                   int e; double fr = frexp(x, &e); /* x = fr * 2^e, fr in [0.5,1) */
                                   uint16_t mant = (uint16_t)((fr * 2 - 1) * 1024);
                                   uint16_t h = (uint16_t)(((e - 1 + 15) << 10) | mant);
                                   memcpy(p + k * 2, &h, 2); break; }
            case FA4_DTYPE_INT32: { int32_t t = (int32_t)(mt_next(seed) % 4); memcpy(p + k * 4, &t, 4); break; }
            case FA4_DTYPE_INT64: { int64_t t = (int64_t)(mt_next(seed) % 4); memcpy(p + k * 8, &t, 8); break; }
            case FA4_DTYPE_INT16: { int16_t t = (int16_t)(mt_next(seed) % 4); memcpy(p + k * 2, &t, 2); break; }
            case FA4_DTYPE_BOOL: p[k] = (unsigned char)((mt_next(seed) % 8) == 0); break;
            default: p[k] = (unsigned char)(mt_next(seed) % 4); break;
            }
        }
        v->data = p;
        v->numel = numel;
    }
}

static inline void mt_free_aux(fa4_aux_value *vals, int n)
{
    for (int i = 0; i < n; i++)
        free((void *)vals[i].data);
}

#endif
