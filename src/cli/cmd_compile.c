/*
 * cmd_compile.c - `fa4jit compile`: deviceless ahead-of-time compilation of mods for a GPU
 * architecture into the kernel cache (so a shared cache can be filled on a build machine without a
 * GPU), with the resource report of every program; --out also writes the cubins.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "fa4jit.h"

static void help(FILE *f)
{
    fprintf(f,
            "usage: fa4jit compile [FILE.mod ...] [--plain] --arch ARCH [options]\n\n"
            "Compile each mod (and/or plain attention with --plain) for ARCH into the kernel\n"
            "cache, without a GPU. Prints the cache key and, per program, registers, spills,\n"
            "shared memory and compile time.\n\n"
            "  --arch ARCH          sm_90a, sm_80, sm_86, ... (default: the GPU's, if any)\n"
            "  --head-dim D         64, 96, 128, 192, 256 (default 128)\n"
            "  --head-dim-v D       head dim of V and O (default: --head-dim)\n"
            "  --dtype T            bf16 (default) or fp16\n"
            "  --kernels LIST       comma list of fwd,bwd,block_mask (default: all)\n"
            "  --trainable NAME     mark an aux tensor trainable (repeatable)\n"
            "  --checked            aux reads out of range trap instead of clamping\n"
            "  --fast-math          approximate tanh/exp/division in mods (faster soft-capping)\n"
            "  --deterministic      with --trainable: also the deterministic backward's programs\n"
            "                       (bitwise reproducible aux gradients; a deterministic launch\n"
            "                       with trainable aux needs them)\n"
            "  --gqa                with the backward: also the Hopper backward's program for\n"
            "                       grouped-query attention (more query heads than kv heads);\n"
            "                       without it their backward is correct but slower\n"
            "  --path P             auto (default), sm80 or sm90\n"
            "  --cache-dir DIR      the writable cache tier (default: FA4JIT_CACHE_DIR or\n"
            "                       $XDG_CACHE_HOME/fa4jit)\n"
            "  --no-cache           compile without reading or writing any cache\n"
            "  --out DIR            also write DIR/<mod>.<program>.<arch>.cubin\n"
            "  --dump-source        print the generated CUDA of each program (to DIR with --out)\n"
            "  --json               one JSON object per mod on stdout, in an array\n"
            "  --quiet              no progress lines\n");
}

typedef struct opts {
    const char *arch, *cache_dir, *out_dir;
    int head_dim, head_dim_v, dtype, json, dump, quiet, checked, fast_math, deterministic, gqa, plain, no_cache, path;
    uint32_t flags;
    const char *trainable[16];
    int num_trainable;
} opts;

static const char *cache_name(int r)
{
    return r == FA4_CACHE_HIT_MEMORY ? "memory-hit" : r == FA4_CACHE_HIT_DISK ? "disk-hit" : "miss";
}

static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c == '\n')
            printf("\\n");
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static int write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t w = fwrite(data, 1, n, f);
    return (fclose(f) == 0 && w == n) ? 0 : -1;
}

/* Compile one mod (path NULL: plain attention). Returns 0 or 1. */
static int compile_one(fa4_ctx *ctx, const opts *o, const char *path, int first)
{
    char *src = NULL;
    size_t len = 0;
    char err[512];
    const char *label = path ? path : "(plain attention)";
    char stem[256];
    snprintf(stem, sizeof stem, "%s", path ? base_name(path) : "plain");
    char *dot = strrchr(stem, '.');
    if (dot)
        *dot = '\0';
    if (path && fa4__cli_read_file(path, 1 << 20, &src, &len, err, sizeof err) != 0) {
        fprintf(stderr, "fa4jit compile: %s\n", err);
        return 1;
    }
    fa4_kernel_spec spec;
    fa4_kernel_spec_init(&spec);
    spec.source = src;
    spec.source_len = len;
    spec.source_name = path ? base_name(path) : NULL;
    spec.arch = o->arch;
    spec.head_dim = o->head_dim;
    spec.head_dim_v = o->head_dim_v;
    spec.dtype = o->dtype;
    spec.flags = o->flags | (o->checked ? FA4_COMPILE_CHECKED : 0) |
                 (o->fast_math ? FA4_COMPILE_FAST_MATH : 0) | (o->deterministic ? FA4_COMPILE_DETERMINISTIC : 0) |
                 (o->gqa ? FA4_COMPILE_GQA : 0);
    spec.path = o->path;
    spec.trainable_aux = o->trainable;
    spec.num_trainable_aux = o->num_trainable;
    fa4_kernel *k = NULL;
    fa4_status st = fa4_jit_compile(ctx, &spec, &k);
    if (st != FA4_OK) {
        const char *msg = fa4_ctx_errmsg(ctx);
        if (o->json) {
            printf("%s{\"mod\":", first ? "" : ",\n");
            json_string(label);
            printf(",\"ok\":false,\"status\":\"%s\",\"line\":%d,\"column\":%d,\"error\":",
                   fa4_status_name(st), fa4_ctx_error_line(ctx), fa4_ctx_error_column(ctx));
            json_string(msg);
            printf("}");
        }
        /* a front-end message already starts with "name:line:col: error:" */
        if (strstr(msg, ": error: "))
            fprintf(stderr, "%s\n", msg);
        else
            fprintf(stderr, "%s: error: %s (%s)\n", label, msg, fa4_status_name(st));
        if (st == FA4_ERR_NVRTC)
            fprintf(stderr, "%s\n", fa4_ctx_compile_log(ctx));
        free(src);
        return 1;
    }
    fa4_kernel_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    fa4_kernel_get_info(k, &info);
    int rc = 0;
    if (o->json) {
        printf("%s{\"mod\":", first ? "" : ",\n");
        json_string(label);
        printf(",\"ok\":true,\"key\":\"%s\",\"arch\":\"%s\",\"dtype\":\"%s\",\"head_dim\":%d,"
               "\"head_dim_v\":%d,\"cache\":\"%s\",\"compile_ms\":%.1f,\"lookup_ms\":%.3f,"
               "\"programs\":[",
               info.key, info.arch, fa4_dtype_name((fa4_dtype)info.dtype), info.head_dim,
               info.head_dim_v, cache_name(info.cache_result), info.compile_ms, info.lookup_ms);
        for (int i = 0; i < info.num_programs; i++) {
            const fa4_program_info *p = &info.programs[i];
            printf("%s{\"name\":\"%s\",\"registers\":%d,\"spill_stores\":%d,\"spill_loads\":%d,"
                   "\"stack_frame\":%d,\"shared_static\":%d,\"shared_dynamic\":%d,"
                   "\"wgmma_serialized\":%d,\"compile_ms\":%.1f,\"cubin_bytes\":%zu}",
                   i ? "," : "", p->name, p->registers, p->spill_stores, p->spill_loads,
                   p->stack_frame, p->shared_static, p->shared_dynamic, p->wgmma_serialized,
                   p->compile_ms, p->cubin_size);
        }
        /* the spill fallbacks kept (compile.c's keep_cleaner marks each in the log): the option
         * each program was compiled again with, in order */
        printf("],\"fallbacks\":[");
        const char *log = fa4_ctx_compile_log(ctx);
        static const char mark[] = "==== spilled: compiled again with ";
        int nf = 0;
        for (const char *q = log ? strstr(log, mark) : NULL; q; q = strstr(q, mark)) {
            q += sizeof mark - 1;
            const char *e = strstr(q, " ====");
            if (!e)
                break;
            char opt[128];
            snprintf(opt, sizeof opt, "%.*s", (int)(e - q < 127 ? e - q : 127), q);
            printf("%s", nf++ ? "," : "");
            json_string(opt);
            q = e;
        }
        printf("]}");
    } else {
        printf("%s  key %s  %s %s d%d/%d  %s", label, info.key, info.arch,
               fa4_dtype_name((fa4_dtype)info.dtype), info.head_dim, info.head_dim_v,
               cache_name(info.cache_result));
        if (info.cache_result == FA4_CACHE_MISS)
            printf("  %.0f ms", info.compile_ms);
        printf("\n    %-12s %5s %12s %18s %11s\n", "program", "regs", "spill st/ld",
               "smem static/dyn", "compile ms");
        for (int i = 0; i < info.num_programs; i++) {
            const fa4_program_info *p = &info.programs[i];
            char spill[32], smem[40];
            snprintf(spill, sizeof spill, "%d/%d", p->spill_stores, p->spill_loads);
            snprintf(smem, sizeof smem, "%d/%d", p->shared_static, p->shared_dynamic);
            char regs[16];
            if (p->registers >= 0)
                snprintf(regs, sizeof regs, "%d", p->registers);
            else
                snprintf(regs, sizeof regs, "?");
            if (p->spill_stores < 0)
                snprintf(spill, sizeof spill, "?");
            printf("    %-12s %5s %12s %18s %11.1f%s\n", p->name, regs, spill, smem,
                   p->compile_ms, p->wgmma_serialized ? "  WGMMA SERIALIZED" : "");
        }
    }
    int unknown = 0;
    for (int i = 0; i < info.num_programs; i++)
        unknown |= info.programs[i].spill_stores < 0;
    if (unknown && !o->json)
        printf("    ?: NVRTC took these programs from the CUDA compute cache, so ptxas gave no "
               "report;\n       run with CUDA_CACHE_DISABLE=1 for registers and spills\n");
    for (int i = 0; i < info.num_programs && (o->out_dir || o->dump); i++) {
        char file[1024];
        if (o->out_dir) {
            size_t n = 0;
            fa4_kernel_get_cubin(k, i, NULL, &n);
            void *buf = malloc(n);
            snprintf(file, sizeof file, "%s/%s.%s.%s.cubin", o->out_dir, stem,
                     info.programs[i].name, info.arch);
            if (!buf || fa4_kernel_get_cubin(k, i, buf, &n) != FA4_OK ||
                write_file(file, buf, n) != 0) {
                fprintf(stderr, "fa4jit compile: cannot write '%s': %s\n", file, strerror(errno));
                rc = 1;
            }
            free(buf);
        }
        if (o->dump) {
            const char *text = NULL;
            fa4_kernel_get_source(k, i, &text);
            if (!text) {
                fprintf(stderr, "fa4jit compile: %s: no source to dump (a cache hit carries "
                        "none; add --no-cache)\n", label);
                continue;
            }
            if (o->out_dir) {
                snprintf(file, sizeof file, "%s/%s.%s.cu", o->out_dir, stem, info.programs[i].name);
                if (write_file(file, text, strlen(text)) != 0) {
                    fprintf(stderr, "fa4jit compile: cannot write '%s'\n", file);
                    rc = 1;
                }
            } else if (!o->json) {
                printf("/* ==== %s: program %s ==== */\n%s\n", label, info.programs[i].name, text);
            }
        }
    }
    fa4_kernel_destroy(k);
    free(src);
    return rc;
}

static int parse_flags(const char *list, uint32_t *flags)
{
    *flags = 0;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", list);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!strcmp(t, "fwd"))
            *flags |= FA4_COMPILE_FWD;
        else if (!strcmp(t, "bwd"))
            *flags |= FA4_COMPILE_BWD;
        else if (!strcmp(t, "block_mask"))
            *flags |= FA4_COMPILE_BLOCK_MASK;
        else
            return -1;
    }
    return *flags ? 0 : -1;
}

int fa4__cli_compile(int argc, char **argv)
{
    opts o;
    memset(&o, 0, sizeof o);
    o.head_dim = 128;
    o.dtype = FA4_DTYPE_BF16;
    o.flags = FA4_COMPILE_ALL;
    const char *files[512];
    int nfiles = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED_VALUE()                                                                               \
    do {                                                                                           \
        if (!val) {                                                                                \
            fprintf(stderr, "fa4jit compile: %s needs a value\n", a);                              \
            return 2;                                                                              \
        }                                                                                          \
        i++;                                                                                       \
    } while (0)
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            help(stdout);
            return 0;
        } else if (!strcmp(a, "--arch")) {
            NEED_VALUE();
            o.arch = val;
        } else if (!strcmp(a, "--head-dim") || !strcmp(a, "--head-dim-v")) {
            NEED_VALUE();
            char *end;
            long d = strtol(val, &end, 10);
            if (*end || d <= 0 || d > 1024) {
                fprintf(stderr, "fa4jit compile: %s '%s' is not a head dim\n", a, val);
                return 2;
            }
            if (!strcmp(a, "--head-dim"))
                o.head_dim = (int)d;
            else
                o.head_dim_v = (int)d;
        } else if (!strcmp(a, "--dtype")) {
            NEED_VALUE();
            if (!strcmp(val, "bf16") || !strcmp(val, "bfloat16"))
                o.dtype = FA4_DTYPE_BF16;
            else if (!strcmp(val, "fp16") || !strcmp(val, "float16") || !strcmp(val, "half"))
                o.dtype = FA4_DTYPE_FP16;
            else {
                fprintf(stderr, "fa4jit compile: --dtype '%s': use bf16 or fp16\n", val);
                return 2;
            }
        } else if (!strcmp(a, "--kernels")) {
            NEED_VALUE();
            if (parse_flags(val, &o.flags) != 0) {
                fprintf(stderr, "fa4jit compile: --kernels '%s': a comma list of fwd, bwd, "
                        "block_mask\n", val);
                return 2;
            }
        } else if (!strcmp(a, "--trainable")) {
            NEED_VALUE();
            if (o.num_trainable == 16) {
                fprintf(stderr, "fa4jit compile: too many --trainable\n");
                return 2;
            }
            o.trainable[o.num_trainable++] = val;
        } else if (!strcmp(a, "--path")) {
            NEED_VALUE();
            if (!strcmp(val, "auto"))
                o.path = FA4_PATH_AUTO;
            else if (!strcmp(val, "sm80"))
                o.path = FA4_PATH_SM80;
            else if (!strcmp(val, "sm90"))
                o.path = FA4_PATH_SM90;
            else {
                fprintf(stderr, "fa4jit compile: --path '%s': use auto, sm80 or sm90\n", val);
                return 2;
            }
        } else if (!strcmp(a, "--cache-dir")) {
            NEED_VALUE();
            o.cache_dir = val;
        } else if (!strcmp(a, "--out")) {
            NEED_VALUE();
            o.out_dir = val;
        } else if (!strcmp(a, "--checked")) {
            o.checked = 1;
        } else if (!strcmp(a, "--fast-math")) {
            o.fast_math = 1;
        } else if (!strcmp(a, "--deterministic")) {
            o.deterministic = 1;
        } else if (!strcmp(a, "--gqa")) {
            o.gqa = 1;
        } else if (!strcmp(a, "--plain")) {
            o.plain = 1;
        } else if (!strcmp(a, "--no-cache")) {
            o.no_cache = 1;
        } else if (!strcmp(a, "--dump-source")) {
            o.dump = 1;
        } else if (!strcmp(a, "--json")) {
            o.json = 1;
        } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
            o.quiet = 1;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "fa4jit compile: unknown option '%s' (see --help)\n", a);
            return 2;
        } else {
            if (nfiles == 512) {
                fprintf(stderr, "fa4jit compile: too many files (512 at most)\n");
                return 2;
            }
            files[nfiles++] = a;
        }
#undef NEED_VALUE
    }
    if (nfiles == 0 && !o.plain) {
        fprintf(stderr, "fa4jit compile: no mod file given (and no --plain)\n\n");
        help(stderr);
        return 2;
    }
    if (o.out_dir && mkdir(o.out_dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "fa4jit compile: cannot create '%s': %s\n", o.out_dir, strerror(errno));
        return 2;
    }
    fa4_ctx_options co;
    fa4_ctx_options_init(&co);
    co.device = o.arch ? FA4_DEVICE_NONE : FA4_DEVICE_CURRENT;
    co.cache_dir = o.cache_dir;
    if (o.no_cache)
        co.cache_mode = FA4_CACHE_MODE_OFF;
    fa4_ctx *ctx = NULL;
    fa4_status st = fa4_ctx_create(&co, &ctx);
    if (st != FA4_OK) {
        fprintf(stderr, "fa4jit compile: %s%s\n", fa4_ctx_create_errmsg(),
                o.arch ? "" : " (give --arch to compile without a GPU)");
        return 2;
    }
    int failed = 0, total = nfiles + o.plain;
    int progress = !o.quiet && total > 1;
    if (o.json)
        printf("[");
    for (int i = 0; i < total; i++) {
        const char *f = i < nfiles ? files[i] : NULL;
        if (progress)
            fprintf(stderr, "[%d/%d] compiling %s for %s ...\n", i + 1, total,
                    f ? f : "plain attention", o.arch ? o.arch : fa4_ctx_arch(ctx));
        failed += compile_one(ctx, &o, f, i == 0);
    }
    if (o.json)
        printf("]\n");
    if (!o.json && total > 1)
        printf("%d of %d compiled%s\n", total - failed, total, failed ? "; see the errors above" : "");
    fa4_ctx_destroy(ctx);
    return failed ? 1 : 0;
}
