/*
 * cmd_check.c - `fa4jit check FILE.mod`: parse and check a mod file the way fa4_jit_compile would,
 * print compiler-style errors (name:line:col, the source line, a caret), or a one-line summary;
 * with --eval, run the CPU evaluator at one (b, h, q_idx, kv_idx[, score]) and print the value of
 * score_mod, its derivative d/dscore, and mask_mod. Aux values come from --aux NAME=V[,V...].
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mod/mod.h"

#define MAX_AUX_ELEMS 65536

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: fa4jit check FILE.mod [--eval b,h,q_idx,kv_idx[,score]] [--aux NAME=V[,V...]]...\n"
        "\n"
        "Parse and check a mod file (score_mod and/or mask_mod, see MODS.md). Errors are\n"
        "printed compiler-style with the line, column and a caret; the exit status is 1.\n"
        "On success a one-line summary names the mods present and their aux parameters.\n"
        "\n"
        "  --eval b,h,q_idx,kv_idx[,score]  evaluate on the CPU (double precision) and print\n"
        "                                   score_mod's value, d score_mod / d score, and\n"
        "                                   mask_mod (score defaults to 0)\n"
        "  --aux NAME=V[,V...]              value of an aux parameter for --eval: one number\n"
        "                                   for a scalar, the elements of a tensor otherwise\n"
        "  --help                           this text\n");
}

static const char *dtype_word(fa4_dtype t)
{
    switch (t) {
    case FA4_DTYPE_FP32: return "float";
    case FA4_DTYPE_BF16: return "bf16";
    case FA4_DTYPE_FP16: return "half";
    case FA4_DTYPE_INT8: return "int8";
    case FA4_DTYPE_UINT8: return "uint8";
    case FA4_DTYPE_INT16: return "int16";
    case FA4_DTYPE_INT32: return "int32";
    case FA4_DTYPE_INT64: return "int64";
    case FA4_DTYPE_BOOL: return "bool";
    default: return "?";
    }
}

/* Parse "a,b,c" into up to max doubles; returns the count or -1. */
static int parse_numbers(const char *s, double *out, int max)
{
    int n = 0;
    while (*s) {
        if (n == max)
            return -1;
        char *end;
        errno = 0;
        double v = strtod(s, &end);
        if (end == s || errno == ERANGE)
            return -1;
        out[n++] = v;
        s = end;
        if (*s == ',')
            s++;
        else if (*s)
            return -1;
    }
    return n;
}

/* Store v as element i of a tensor of type t. */
static void store_elem(unsigned char *p, fa4_dtype t, int64_t i, double v)
{
    switch (t) {
    case FA4_DTYPE_FP32: {
        float f = (float)v;
        memcpy(p + i * 4, &f, 4);
        break;
    }
    case FA4_DTYPE_BF16: {
        float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, 4);
        u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
        uint16_t h = (uint16_t)(u >> 16);
        memcpy(p + i * 2, &h, 2);
        break;
    }
    case FA4_DTYPE_FP16: {
        /* normal and subnormal halves by rounding through frexp; overflow saturates to inf */
        uint16_t sign = v < 0 ? 0x8000 : 0;
        double a = fabs(v);
        uint16_t h;
        if (a >= 65520.0) {
            h = 0x7c00;
        } else if (a < ldexp(1.0, -14)) {
            h = (uint16_t)lrint(a / ldexp(1.0, -24));
        } else {
            int e;
            double fr = frexp(a, &e); /* a = fr * 2^e, fr in [0.5, 1) */
            long mant = lrint((fr * 2.0 - 1.0) * 1024.0);
            if (mant == 1024) {
                mant = 0;
                e++;
            }
            h = (uint16_t)(((e - 1 + 15) << 10) | mant);
        }
        h |= sign;
        memcpy(p + i * 2, &h, 2);
        break;
    }
    case FA4_DTYPE_INT8: p[i] = (unsigned char)(int8_t)v; break;
    case FA4_DTYPE_UINT8: p[i] = (unsigned char)v; break;
    case FA4_DTYPE_BOOL: p[i] = v != 0; break;
    case FA4_DTYPE_INT16: {
        int16_t x = (int16_t)v;
        memcpy(p + i * 2, &x, 2);
        break;
    }
    case FA4_DTYPE_INT32: {
        int32_t x = (int32_t)v;
        memcpy(p + i * 4, &x, 4);
        break;
    }
    case FA4_DTYPE_INT64: {
        int64_t x = (int64_t)v;
        memcpy(p + i * 8, &x, 8);
        break;
    }
    default: break;
    }
}

static size_t elem_size(fa4_dtype t)
{
    switch (t) {
    case FA4_DTYPE_FP32:
    case FA4_DTYPE_INT32: return 4;
    case FA4_DTYPE_INT64: return 8;
    case FA4_DTYPE_BF16:
    case FA4_DTYPE_FP16:
    case FA4_DTYPE_INT16: return 2;
    default: return 1;
    }
}

static void print_summary(const char *path, const fa4__mod *m)
{
    printf("%s: ok: score_mod %s, mask_mod %s; aux:", path, fa4__mod_has_score(m) ? "yes" : "no",
           fa4__mod_has_mask(m) ? "yes" : "no");
    int n = fa4__mod_num_aux(m);
    if (!n)
        printf(" none");
    for (int i = 0; i < n; i++) {
        const fa4__aux_decl *a = fa4__mod_aux(m, i);
        if (a->is_tensor)
            printf("%s const %s *%s", i ? "," : "", dtype_word(a->dtype), a->name);
        else
            printf("%s %s %s", i ? "," : "",
                   a->dtype == FA4_DTYPE_FP32   ? "float"
                   : a->dtype == FA4_DTYPE_BOOL ? "bool"
                                                : "int",
                   a->name);
    }
    printf("\n");
    int hoisted = 0, tile = 0, add = 0, affine = 0, rel = 0, calls = 0, pre = 0;
    if (!fa4__mod_has_score(m) || fa4__mod_forward_forms(m, &hoisted, &tile, &add, &affine, &rel, &calls, &pre) != 0)
        return;
    /* a tile test through helper calls: the forward keeps the relative form's table instead */
    const int fwd_tile = tile && !(calls && rel && !affine);
    printf("  sm90 forward: %d position-independent part%s of score_mod computed once per "
           "fragment; %s\n",
           hoisted, hoisted == 1 ? "" : "s",
           fwd_tile ? (add ? "a tile form (score + c where its index-dependent parts are one value "
                             "over a tile; the backward's too)"
                           : "a tile form (where its index-dependent parts are one value over a tile)")
           : tile   ? "no tile form (its test would evaluate a helper over every tile; the table below instead)"
                    : "no tile form (every position evaluates score_mod)");
    if (tile && !fwd_tile)
        printf("  sm90 backward: a tile form (score + c where its index-dependent parts, helper calls "
               "included, are one value over a warp's 64 x 16 tile%s)\n",
               add ? "; there d score_mod / d score = 1 and a trainable read's gradient is the tile's dS sum" : "");
    if (affine)
        printf("  sm90: score_mod is affine (ds * score + c + dq * q_idx + dk * kv_idx, the numbers the same "
               "at every position of a head): one FMA a score in the forward, two in the backward (with no trainable aux)\n");
    else
        printf("  sm90: score_mod is not affine in the score and the positions\n");
    if (rel)
        printf("  sm90: score_mod is score + g(kv_idx - q_idx): the forward %s; the backward evaluates g once "
               "per offset, at 18 of a thread's 32 elements (10 of 16 at D 256)%s, and a trainable read's "
               "gradient sums a step's terms by offset before its adds (D up to 128)%s\n",
               fwd_tile ? "evaluates g at 34 of a fragment's 64 positions where the tile form does not hold"
                    : "reads g from a table filled once per key tile",
               affine ? "; the affine form comes first where it is used" : "",
               rel == 2 ? "; g is costly (a transcendental, a root or a float division), so with a trainable "
                          "read the backward evaluates it at 4 slots of 32 offsets a lane and step instead and "
                          "shares it by shuffles"
                        : "");
    if (pre)
        printf("  sm90: score_mod reads its score only as score / D with D the same at every position: the "
               "forward and the backward multiply q.k by scale / D once per fragment and drop the division "
               "(the argument rounded once)\n");
}

/* Build aux values from the --aux arguments; returns 0 or prints why not and returns -1. */
static int build_aux(const fa4__mod *m, char **specs, int nspecs, fa4_aux_value *vals, double *buf)
{
    int n = fa4__mod_num_aux(m);
    for (int i = 0; i < n; i++) {
        const fa4__aux_decl *a = fa4__mod_aux(m, i);
        memset(&vals[i], 0, sizeof vals[i]);
        vals[i].name = a->name;
        vals[i].dtype = a->dtype;
        const char *spec = NULL;
        size_t nl = strlen(a->name);
        for (int k = 0; k < nspecs; k++)
            if (!strncmp(specs[k], a->name, nl) && specs[k][nl] == '=')
                spec = specs[k] + nl + 1;
        if (!spec) {
            fprintf(stderr, "fa4jit check: --eval needs a value for aux '%s': --aux %s=%s\n",
                    a->name, a->name, a->is_tensor ? "V,V,..." : "V");
            return -1;
        }
        int cnt = parse_numbers(spec, buf, MAX_AUX_ELEMS);
        if (cnt < 0 || (!a->is_tensor && cnt != 1)) {
            fprintf(stderr, "fa4jit check: bad value for aux '%s': '%s' (%s)\n", a->name, spec,
                    a->is_tensor ? "comma-separated numbers" : "one number");
            return -1;
        }
        if (!a->is_tensor) {
            vals[i].f = buf[0];
            vals[i].i = a->dtype == FA4_DTYPE_BOOL ? buf[0] != 0 : (int64_t)buf[0];
            continue;
        }
        unsigned char *p = calloc((size_t)(cnt ? cnt : 1), elem_size(a->dtype));
        if (!p) {
            fprintf(stderr, "fa4jit check: out of memory\n");
            return -1;
        }
        for (int k = 0; k < cnt; k++)
            store_elem(p, a->dtype, k, buf[k]);
        vals[i].data = p;
        vals[i].numel = cnt;
    }
    for (int k = 0; k < nspecs; k++) {
        int known = 0;
        for (int i = 0; i < n; i++) {
            size_t nl = strlen(fa4__mod_aux(m, i)->name);
            known |= !strncmp(specs[k], fa4__mod_aux(m, i)->name, nl) && specs[k][nl] == '=';
        }
        if (!known) {
            fprintf(stderr, "fa4jit check: --aux %s names no aux parameter of the mod\n", specs[k]);
            return -1;
        }
    }
    return 0;
}

static int run_eval(const fa4__mod *m, const double *c, int nc, char **specs, int nspecs)
{
    fa4_aux_value vals[FA4__MOD_MAX_AUX];
    int n = fa4__mod_num_aux(m), rc = 0;
    double *buf = malloc(sizeof(double) * MAX_AUX_ELEMS);
    memset(vals, 0, sizeof vals);
    if (!buf || build_aux(m, specs, nspecs, vals, buf) != 0) {
        rc = 2;
        goto out;
    }
    int b = (int)c[0], h = (int)c[1], q = (int)c[2], kv = (int)c[3];
    double score = nc > 4 ? c[4] : 0.0, v = 0, dv = 0;
    int allowed = 0;
    fa4__diag d;
    if (fa4__mod_eval_score(m, score, b, h, q, kv, vals, n, &v, &dv, &d) != FA4_OK ||
        fa4__mod_eval_mask(m, b, h, q, kv, vals, n, &allowed, &d) != FA4_OK) {
        fprintf(stderr, "fa4jit check: %s\n", d.message);
        rc = 1;
        goto out;
    }
    printf("score_mod(score=%.17g, b=%d, h=%d, q_idx=%d, kv_idx=%d) = %.17g%s\n", score, b, h, q,
           kv, v, fa4__mod_has_score(m) ? "" : "   (no score_mod: identity)");
    printf("d score_mod / d score = %.17g\n", dv);
    printf("mask_mod(b=%d, h=%d, q_idx=%d, kv_idx=%d) = %s%s\n", b, h, q, kv,
           allowed ? "true" : "false", fa4__mod_has_mask(m) ? "" : "   (no mask_mod)");

/* every path after vals may hold tensor buffers */
out:
    for (int i = 0; i < n; i++)
        free((void *)vals[i].data);
    free(buf);
    return rc;
}

int fa4__cli_check(int argc, char **argv)
{
    const char *path = NULL, *eval = NULL;
    char *specs[64];
    int nspecs = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--eval") && i + 1 < argc) {
            eval = argv[++i];
        } else if (!strcmp(argv[i], "--aux") && i + 1 < argc) {
            if (nspecs == 64) {
                fprintf(stderr, "fa4jit check: too many --aux options\n");
                return 2;
            }
            specs[nspecs++] = argv[++i];
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "fa4jit check: unknown or incomplete option '%s'\n\n", argv[i]);
            usage(stderr);
            return 2;
        } else if (!path) {
            path = argv[i];
        } else {
            fprintf(stderr, "fa4jit check: one FILE.mod at a time ('%s' and '%s')\n", path,
                    argv[i]);
            return 2;
        }
    }
    if (!path) {
        usage(stderr);
        return 2;
    }
    double coords[5];
    int nc = 0;
    if (eval) {
        nc = parse_numbers(eval, coords, 5);
        if (nc < 4) {
            fprintf(stderr, "fa4jit check: --eval wants b,h,q_idx,kv_idx[,score], got '%s'\n",
                    eval);
            return 2;
        }
        for (int k = 0; k < 4; k++)
            if (coords[k] != floor(coords[k]) || fabs(coords[k]) > 2147483647.0) {
                fprintf(stderr, "fa4jit check: --eval: '%g' is not an int32\n", coords[k]);
                return 2;
            }
    }
    char *src = NULL, err[512];
    size_t len = 0;
    /* read a little past the language's limit so the parser reports it in its own words */
    if (fa4__cli_read_file(path, 16u << 20, &src, &len, err, sizeof err) != 0) {
        fprintf(stderr, "fa4jit check: %s\n", err);
        return 1;
    }
    fa4__mod *m = NULL;
    fa4__diag d;
    fa4_status st = fa4__mod_parse(src, len, path, &m, &d);
    free(src);
    if (st == FA4_ERR_OUT_OF_MEMORY) {
        fprintf(stderr, "fa4jit check: %s\n", d.message);
        return 2;
    }
    if (st != FA4_OK) {
        fprintf(stderr, "%s\n", d.rendered);
        return 1;
    }
    print_summary(path, m);
    int rc = eval ? run_eval(m, coords, nc, specs, nspecs) : 0;
    fa4__mod_free(m);
    return rc;
}
