/*
 * mod_exercise.h - drive every back end of the front end over one source: parse, and on success
 * hash, mark trainable, emit CUDA (release and checked) and evaluate score_mod, its derivatives and
 * mask_mod on small and extreme inputs with aux tensors of random (also zero) length. Shared by the
 * seeded mutation test and the libFuzzer target; it returns nonzero when an invariant breaks
 * (a crash or a sanitizer report is the other way to fail).
 */
#ifndef FA4_TESTS_MOD_EXERCISE_H
#define FA4_TESTS_MOD_EXERCISE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mod/mod.h"

static inline uint64_t mx_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Returns 0 when every invariant held. */
static inline int mx_exercise(const char *src, size_t len, uint64_t seed)
{
    fa4__mod *m = (fa4__mod *)&seed; /* must be overwritten */
    fa4__diag d;
    fa4_status st = fa4__mod_parse(src, len, "fuzz", &m, &d);
    if (st != FA4_OK) {
        /* a failure: no mod, a known status, a message, a rendering that names the error */
        if (m != NULL || d.status != st || !d.message[0] || !strstr(d.rendered, "error: "))
            return 1;
        if (st != FA4_ERR_MOD_SYNTAX && st != FA4_ERR_MOD_CHECK && st != FA4_ERR_MOD_LIMIT)
            return 2;
        if (d.line < 0 || d.col < 0)
            return 3;
        return 0;
    }
    int fails = 0;
    uint8_t h[16];
    fa4__mod_hash(m, h);
    int n = fa4__mod_num_aux(m);
    if (n < 0 || n > FA4__MOD_MAX_AUX)
        fails++;
    /* every tensor that accepts it becomes trainable */
    const char *tn[FA4__MOD_MAX_AUX];
    int nt = 0;
    for (int i = 0; i < n; i++) {
        const char *one = fa4__mod_aux(m, i)->name;
        if (fa4__mod_set_trainable(m, &one, 1, &d) == FA4_OK)
            tn[nt++] = one;
    }
    if (fa4__mod_set_trainable(m, tn, nt, &d) != FA4_OK)
        fails++;
    for (int checked = 0; checked <= 1; checked++) {
        char *cu = fa4__mod_emit_cuda(m, "fuzz", checked);
        if (!cu)
            fails++;
        free(cu);
    }
    /* aux values: tensors of 0..8 elements with arbitrary bytes, scalars arbitrary */
    fa4_aux_value aux[FA4__MOD_MAX_AUX];
    unsigned char store[FA4__MOD_MAX_AUX][64];
    for (int i = 0; i < n; i++) {
        const fa4__aux_decl *a = fa4__mod_aux(m, i);
        memset(&aux[i], 0, sizeof aux[i]);
        aux[i].dtype = a->dtype;
        for (size_t k = 0; k < sizeof store[i]; k++)
            store[i][k] = (unsigned char)mx_next(&seed);
        if (a->is_tensor) {
            aux[i].data = store[i];
            aux[i].numel = (int64_t)(mx_next(&seed) % 9);
        } else {
            aux[i].f = (double)(int64_t)mx_next(&seed) / 1e15;
            aux[i].i = (int32_t)mx_next(&seed);
        }
    }
    static const int extremes[] = {0, 1, -1, 7, 2147483647, -2147483647 - 1, 65536};
    for (int k = 0; k < 4; k++) {
        int c[4];
        for (int j = 0; j < 4; j++)
            c[j] = k == 0 ? (int)(mx_next(&seed) % 16)
                          : extremes[mx_next(&seed) % (sizeof extremes / sizeof extremes[0])];
        double score = k == 3 ? 1e30 : (double)(int64_t)(mx_next(&seed) % 2001 - 1000) / 100.0;
        double v, dv;
        int ok;
        if (fa4__mod_eval_score(m, score, c[0], c[1], c[2], c[3], aux, n, &v, &dv, &d) != FA4_OK)
            fails++;
        if (fa4__mod_eval_mask(m, c[0], c[1], c[2], c[3], aux, n, &ok, &d) != FA4_OK)
            fails++;
        for (int i = 0; i < n; i++)
            if (fa4__mod_aux(m, i)->is_tensor &&
                fa4__mod_eval_score_daux(m, score, c[0], c[1], c[2], c[3], aux, n, i,
                                         (int64_t)(mx_next(&seed) % 8), &dv, &d) != FA4_OK)
                fails++;
    }
    fa4__mod_free(m);
    return fails;
}

#endif
