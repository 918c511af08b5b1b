/*
 * bench_fwd.c - forward timings of the sm90 path on the benchmark shape (bf16, B=4, H=16,
 * S=4096, D=128 unless told otherwise), side by side with the sm80 path, and the effect of the two
 * JIT knobs (conditional rescaling, software exp2). Each variant's O and LSE are compared with the
 * sm80 path's on the same inputs (max abs difference), so a fast wrong kernel does not pass
 * unnoticed. Timing: 3 warm-up launches, then 7 rounds of 10 back-to-back launches timed on the
 * host around a synchronize; the median round gives ms per launch. FLOPs = 4 B H S^2 D (causal
 * halved). Exits 0 with "SKIP: <why>" where there is no GPU.
 *
 * Usage: bench_sm90 [--s N] [--b N] [--h N] [--d N] [--filter A,=B,...] [--no-ref]
 *        (--no-ref: sm90 only, no sm80 timing or comparison; FA4_SM90_EXTRA in the environment adds
 *        NVRTC options to the sm90 programs, see tests/gpu/sm90/path_shim.c)
 *        bench_sm90 --compile-only [D [MOD]]   (no GPU needed: NVRTC for sm_90a, every head dim, dtype and
 *        shipped mod; prints registers, spills and C7520 counts; exits 1 on a spill or a
 *        serialized wgmma in the forward, and reports the cold compile time of each forward;
 *        checked builds, whose aux reads trap, are reported as "warn")
 *        bench_sm90 --compile-quick  (the same check on 6 forwards: bf16, D 64/128, mods none,
 *        softcap, alibi+causal; about a minute on a 2-core machine, for CI)
 *        bench_sm90 --compile-checked [MODS_DIR [D]]  (no GPU: every shipped mod (the .mod files in mods/) as a
 *        checked build (FA4_COMPILE_CHECKED), bf16, D 64 and 128, all programs (forward,
 *        backward, block mask) of the sm90 path for sm_90a and of the sm80 path for sm_80; exits 1
 *        on a spill, a stack frame or C7520 in any program)
 * Built by tests/gpu/sm90/build.sh (it needs the path shim until compile.c lists the sm90 path).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu_util.h"

const fa4__cu *g_cu;
static fa4_ctx *g_ctx;

static const char *causal_src = "bool mask_mod(int b, int h, int q_idx, int kv_idx) {\n"
                                "    return q_idx >= kv_idx;\n}\n";
static const char *alibi_src =
    "float score_mod(float score, int b, int h, int q_idx, int kv_idx, const float *slopes) {\n"
    "    return score + slopes[h] * (float)(kv_idx - q_idx);\n}\n";
static const char *softcap_src = "float score_mod(float score, int b, int h, int q_idx, int kv_idx, float cap) {\n"
                                 "    return cap * tanhf(score / cap);\n}\n";
static const char *window_src = "bool mask_mod(int b, int h, int q_idx, int kv_idx) {\n"
                                "    return q_idx >= kv_idx && q_idx - kv_idx < 1024;\n}\n";

typedef struct variant {
    const char *name;
    const char *src;
    int block_mask; /* 1: GPU block mask from mask_mod */
    float rescale;
    int sw_exp2;
    int aux; /* 0 none, 1 slopes, 2 cap */
} variant;

static const variant variants[] = {
    {"plain", NULL, 0, 0, 0, 0},
    {"plain rescale>8", NULL, 0, 8.f, 0, 0},
    {"plain sw-exp2 25%", NULL, 0, 0, 25, 0},
    {"causal (block mask)", NULL, 1, 0, 0, 0},
    {"causal rescale>8", NULL, 1, 8.f, 0, 0},
    {"alibi", NULL, 0, 0, 0, 1},
    {"softcap", NULL, 0, 0, 0, 2},
    {"softcap rescale>8", NULL, 0, 8.f, 0, 2},
    {"softcap sw-exp2 25%", NULL, 0, 0, 25, 2},
    {"softcap sw-exp2 50%", NULL, 0, 0, 50, 2},
    {"window 1024 (block mask)", NULL, 1, 0, 0, 0},
};

static const char *variant_src(int i)
{
    const char *n = variants[i].name;
    if (!strncmp(n, "causal", 6))
        return causal_src;
    if (!strncmp(n, "alibi", 5))
        return alibi_src;
    if (!strncmp(n, "softcap", 7))
        return softcap_src;
    if (!strncmp(n, "window", 6))
        return window_src;
    return NULL;
}

/* filter: comma-separated names; "=name" matches exactly, anything else as a substring. */
static int name_matches(const char *name, const char *filter)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", filter);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
        if (t[0] == '=' ? !strcmp(name, t + 1) : strstr(name, t) != NULL)
            return 1;
    return 0;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static const char *g_arch; /* NULL: the ctx's device */

static fa4_kernel *compile(int path, const char *src, int mask, float rescale, int sw, int d)
{
    fa4_kernel_spec spec;
    fa4_kernel *k = NULL;
    fa4_kernel_spec_init(&spec);
    spec.source = src;
    spec.source_name = "bench";
    spec.dtype = FA4_DTYPE_BF16;
    spec.head_dim = d;
    spec.path = path;
    spec.flags = FA4_COMPILE_FWD | (mask ? FA4_COMPILE_BLOCK_MASK : 0);
    spec.rescale_threshold = rescale;
    spec.sw_exp2_percent = sw;
    spec.arch = g_arch;
    const double t0 = now_ms();
    fa4_status st = fa4_jit_compile(g_ctx, &spec, &k);
    if (st != FA4_OK) {
        printf("compile failed (path %d): %s %s\n%.2000s\n", path, fa4_status_name(st), fa4_ctx_errmsg(g_ctx),
               fa4_ctx_compile_log(g_ctx) ? fa4_ctx_compile_log(g_ctx) : "");
        return NULL;
    }
    fa4_kernel_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    printf("  compiled path %d in %.0f ms:", path, now_ms() - t0);
    if (fa4_kernel_get_info(k, &info) == FA4_OK)
        for (int p = 0; p < info.num_programs; p++)
            printf(" %s regs %d spill %d/%d smem %d;", info.programs[p].name, info.programs[p].registers,
                   info.programs[p].spill_stores, info.programs[p].spill_loads,
                   info.programs[p].shared_dynamic);
    printf("\n");
    return k;
}

static fa4_tensor tensor4(CUdeviceptr p, int b, int h, int s, int d)
{
    fa4_tensor t;
    memset(&t, 0, sizeof t);
    t.data = (void *)(uintptr_t)p;
    t.dtype = FA4_DTYPE_BF16;
    t.ndim = 4;
    t.shape[0] = b, t.shape[1] = h, t.shape[2] = s, t.shape[3] = d;
    t.strides[0] = (int64_t)h * s * d, t.strides[1] = (int64_t)s * d, t.strides[2] = d, t.strides[3] = 1;
    return t;
}

static fa4_tensor tensor_lse(CUdeviceptr p, int b, int h, int s)
{
    fa4_tensor t;
    memset(&t, 0, sizeof t);
    t.data = (void *)(uintptr_t)p;
    t.dtype = FA4_DTYPE_FP32;
    t.ndim = 3;
    t.shape[0] = b, t.shape[1] = h, t.shape[2] = s;
    t.strides[0] = (int64_t)h * s, t.strides[1] = s, t.strides[2] = 1;
    return t;
}

typedef struct bmask {
    fa4_block_mask bm;
    CUdeviceptr buf[8];
} bmask;

static int make_bm(bmask *m, fa4_kernel *k, int s)
{
    int64_t nq, nkv;
    memset(m, 0, sizeof *m);
    m->bm.struct_size = sizeof m->bm;
    m->bm.q_block = m->bm.kv_block = 128;
    if (fa4_block_mask_sizes(1, 1, s, s, 128, 128, &nq, &nkv) != FA4_OK)
        return -1;
    m->bm.batch = m->bm.heads = 1;
    m->bm.num_q_blocks = (int32_t)nq;
    m->bm.num_kv_blocks = (int32_t)nkv;
    const size_t sz[8] = {nq, nq * nkv, nq, nq * nkv, nkv, nkv * nq, nkv, nkv * nq};
    for (int i = 0; i < 8; i++)
        CK(g_cu->memAlloc(&m->buf[i], sz[i] * 4));
    m->bm.kv_num_blocks = (const int32_t *)(uintptr_t)m->buf[0];
    m->bm.kv_indices = (const int32_t *)(uintptr_t)m->buf[1];
    m->bm.full_kv_num_blocks = (const int32_t *)(uintptr_t)m->buf[2];
    m->bm.full_kv_indices = (const int32_t *)(uintptr_t)m->buf[3];
    m->bm.q_num_blocks = (const int32_t *)(uintptr_t)m->buf[4];
    m->bm.q_indices = (const int32_t *)(uintptr_t)m->buf[5];
    m->bm.full_q_num_blocks = (const int32_t *)(uintptr_t)m->buf[6];
    m->bm.full_q_indices = (const int32_t *)(uintptr_t)m->buf[7];
    if (fa4_block_mask_create(k, 1, 1, s, s, NULL, 0, &m->bm, NULL) != FA4_OK) {
        printf("block mask: %s\n", fa4_ctx_errmsg(g_ctx));
        return -1;
    }
    CK(g_cu->ctxSynchronize());
    return 0;
}

static double time_fwd(fa4_kernel *k, const fa4_fwd_args *a)
{
    double r[7];
    for (int i = 0; i < 3; i++)
        if (fa4_launch_fwd(k, a) != FA4_OK) {
            printf("launch: %s\n", fa4_ctx_errmsg(g_ctx));
            return -1;
        }
    CK(g_cu->ctxSynchronize());
    for (int i = 0; i < 7; i++) {
        const double t0 = now_ms();
        for (int j = 0; j < 10; j++)
            fa4_launch_fwd(k, a);
        CK(g_cu->ctxSynchronize());
        r[i] = (now_ms() - t0) / 10;
    }
    for (int i = 0; i < 7; i++)
        for (int j = i + 1; j < 7; j++)
            if (r[j] < r[i]) {
                double x = r[i];
                r[i] = r[j];
                r[j] = x;
            }
    return r[3];
}

static void diff(CUdeviceptr a, CUdeviceptr b, size_t n, int is_bf16, double *maxabs, int *nan)
{
    void *ha = malloc(n * 4), *hb = malloc(n * 4);
    CK(g_cu->memcpyDtoH(ha, a, n * (is_bf16 ? 2 : 4)));
    CK(g_cu->memcpyDtoH(hb, b, n * (is_bf16 ? 2 : 4)));
    *maxabs = 0;
    *nan = 0;
    for (size_t i = 0; i < n; i++) {
        double x = is_bf16 ? bf2f(((uint16_t *)ha)[i]) : ((float *)ha)[i];
        double y = is_bf16 ? bf2f(((uint16_t *)hb)[i]) : ((float *)hb)[i];
        if (isnan(x) || isnan(y)) {
            (*nan)++;
            continue;
        }
        if (isinf(x) && isinf(y) && x == y)
            continue;
        double e = fabs(x - y);
        if (e > *maxabs)
            *maxabs = e;
    }
    free(ha);
    free(hb);
}

/* Deviceless: every forward variant the sm90 path ships, compiled for sm_90a. */
static int compile_only(int only_d, const char *only_mod, int quick)
{
    static const int dims[][2] = {{64, 64}, {96, 96}, {128, 128}, {192, 192}, {256, 256}, {192, 128}};
    static const char *alibi_causal_src =
        "float score_mod(float score, int b, int h, int q_idx, int kv_idx, const float *slopes) {\n"
        "    return score + slopes[h] * (float)(kv_idx - q_idx);\n}\n"
        "bool mask_mod(int b, int h, int q_idx, int kv_idx) {\n    return q_idx >= kv_idx;\n}\n";
    static const char *relbias_src =
        "float score_mod(float score, int b, int h, int q_idx, int kv_idx, const float *bias) {\n"
        "    return score + bias[clamp(kv_idx - q_idx + 256, 0, 511)];\n}\n";
    static const char *names[8] = {"none",         "causal",  "alibi",          "softcap",
                                   "window",       "alibi+causal", "relbias", "relbias-checked"};
    const char *srcs[8] = {NULL,       causal_src,       alibi_src,   softcap_src,
                           window_src, alibi_causal_src, relbias_src, relbias_src};
    fa4_ctx_options opts;
    int bad = 0;
    fa4_ctx_options_init(&opts);
    opts.device = FA4_DEVICE_NONE;
    opts.cache_mode = FA4_CACHE_MODE_OFF;
    if (fa4_ctx_create(&opts, &g_ctx) != FA4_OK) {
        printf("FAIL: deviceless ctx: %s\n", fa4_ctx_create_errmsg());
        return 1;
    }
    g_arch = "sm_90a";
    for (int t = 0; t < 2; t++)
        for (int di = 0; di < 6; di++)
            for (int m = 0; m < 8; m++) {
                if ((only_d && dims[di][0] != only_d) || (only_mod && strcmp(only_mod, names[m])))
                    continue;
                /* --quick: bf16, D 64 and 128, no mod / score+mask mod / the longest score_mod */
                if (quick && (t || dims[di][0] > 128 || dims[di][0] == 96 || (m != 0 && m != 3 && m != 5)))
                    continue;
                fa4_kernel_spec spec;
                fa4_kernel *k = NULL;
                fa4_kernel_spec_init(&spec);
                spec.source = srcs[m];
                spec.dtype = t ? FA4_DTYPE_FP16 : FA4_DTYPE_BF16;
                spec.head_dim = dims[di][0];
                spec.head_dim_v = dims[di][1];
                spec.path = FA4_PATH_SM90;
                spec.arch = g_arch;
                spec.flags = FA4_COMPILE_FWD;
                const char *tr[1] = {"bias"};
                if (m == 7)
                    spec.flags |= FA4_COMPILE_CHECKED;
                if (m >= 6) { /* as the GPU suite compiles it: the table is trainable */
                    spec.trainable_aux = tr;
                    spec.num_trainable_aux = 1;
                }
                if (fa4_jit_compile(g_ctx, &spec, &k) != FA4_OK) {
                    printf("FAIL %s d=%d/%d mod %d: %s\n%.3000s\n", t ? "fp16" : "bf16", dims[di][0], dims[di][1],
                           m, fa4_ctx_errmsg(g_ctx), fa4_ctx_compile_log(g_ctx) ? fa4_ctx_compile_log(g_ctx) : "");
                    bad = 1;
                    continue;
                }
                fa4_kernel_info info;
                memset(&info, 0, sizeof info);
                info.struct_size = sizeof info;
                fa4_kernel_get_info(k, &info);
                const fa4_program_info *pi = &info.programs[0];
                const int fail = pi->spill_stores || pi->spill_loads || pi->stack_frame || pi->wgmma_serialized;
                printf("%s %s d=%3d/%-3d mod=%-12s regs %3d spill %d/%d stack %d C7520 %d smem %6d compile %6.0f ms\n",
                       fail ? (m == 7 ? "warn" : "FAIL") : "ok  ", t ? "fp16" : "bf16", dims[di][0], dims[di][1],
                       names[m],
                       pi->registers, pi->spill_stores, pi->spill_loads, pi->stack_frame, pi->wgmma_serialized,
                       pi->shared_dynamic, pi->compile_ms);
                bad |= fail && m != 7; /* checked builds: known, see notes/sm90-requests.md */
                fa4_kernel_destroy(k);
            }
    fa4_ctx_destroy(g_ctx);
    return bad;
}

/* Reads a whole file; NULL on failure. */
static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;
    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)n + 1)) != NULL) {
        if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
            free(buf);
            buf = NULL;
        } else {
            buf[n] = 0;
        }
    }
    fclose(f);
    return buf;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Deviceless: checked builds of every shipped mod, every program of both paths. The trainable
 * tables are declared as the GPU suite and the Python front end declare them. */
static int compile_checked(const char *dir, int only_d)
{
    static const struct {
        const char *mod, *aux;
    } trainable[] = {{"rel_bias.mod", "bias"}, {"t5_bias.mod", "bias"}, {"head_scale.mod", "log_temp"}};
    static const struct {
        int path;
        const char *arch;
    } targets[] = {{FA4_PATH_SM90, "sm_90a"}, {FA4_PATH_SM80, "sm_80"}};
    char *names[64];
    int nn = 0, bad = 0;
    DIR *d = opendir(dir);
    if (!d) {
        printf("FAIL: cannot open %s\n", dir);
        return 1;
    }
    for (struct dirent *e; (e = readdir(d)) != NULL && nn < 64;) {
        const size_t l = strlen(e->d_name);
        if (l > 4 && !strcmp(e->d_name + l - 4, ".mod"))
            names[nn++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)nn, sizeof names[0], cmp_str);
    fa4_ctx_options opts;
    fa4_ctx_options_init(&opts);
    opts.device = FA4_DEVICE_NONE;
    opts.cache_mode = FA4_CACHE_MODE_OFF;
    if (fa4_ctx_create(&opts, &g_ctx) != FA4_OK) {
        printf("FAIL: deviceless ctx: %s\n", fa4_ctx_create_errmsg());
        return 1;
    }
    for (int i = 0; i < nn; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        char *src = read_text(path);
        if (!src) {
            printf("FAIL: cannot read %s\n", path);
            bad = 1;
            continue;
        }
        const char *tr[1] = {NULL};
        for (size_t t = 0; t < sizeof trainable / sizeof trainable[0]; t++)
            if (!strcmp(names[i], trainable[t].mod))
                tr[0] = trainable[t].aux;
        for (int ti = 0; ti < 2; ti++)
            for (int dd = 64; dd <= 128; dd += 64) {
                if (only_d && dd != only_d)
                    continue;
                fa4_kernel_spec spec;
                fa4_kernel *k = NULL;
                fa4_kernel_spec_init(&spec);
                spec.source = src;
                spec.source_name = names[i];
                spec.dtype = FA4_DTYPE_BF16;
                spec.head_dim = dd;
                spec.path = targets[ti].path;
                spec.arch = targets[ti].arch;
                spec.flags = FA4_COMPILE_FWD | FA4_COMPILE_BWD | FA4_COMPILE_BLOCK_MASK | FA4_COMPILE_CHECKED;
                if (tr[0]) {
                    spec.trainable_aux = tr;
                    spec.num_trainable_aux = 1;
                }
                if (fa4_jit_compile(g_ctx, &spec, &k) != FA4_OK) {
                    printf("FAIL %-26s %-6s d=%3d: %s\n%.3000s\n", names[i], targets[ti].arch, dd,
                           fa4_ctx_errmsg(g_ctx), fa4_ctx_compile_log(g_ctx) ? fa4_ctx_compile_log(g_ctx) : "");
                    bad = 1;
                    continue;
                }
                fa4_kernel_info info;
                memset(&info, 0, sizeof info);
                info.struct_size = sizeof info;
                fa4_kernel_get_info(k, &info);
                int fail = 0;
                char line[1024];
                int len = 0;
                for (int pi = 0; pi < info.num_programs && len < (int)sizeof line - 96; pi++) {
                    const fa4_program_info *pr = &info.programs[pi];
                    const int f = pr->spill_stores || pr->spill_loads || pr->stack_frame || pr->wgmma_serialized;
                    fail |= f;
                    len += snprintf(line + len, sizeof line - (size_t)len, " %s %d/%d/%d/%d%s", pr->name,
                                    pr->registers, pr->spill_stores + pr->spill_loads, pr->stack_frame,
                                    pr->wgmma_serialized, f ? "!" : "");
                }
                printf("%s %-26s %-6s d=%3d%s\n", fail ? "FAIL" : "ok  ", names[i], targets[ti].arch, dd, line);
                bad |= fail;
                fa4_kernel_destroy(k);
            }
        free(src);
    }
    printf("(per program: registers/spill bytes/stack/C7520)\n");
    for (int i = 0; i < nn; i++)
        free(names[i]);
    fa4_ctx_destroy(g_ctx);
    return bad;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--compile-only"))
            return compile_only(i + 1 < argc ? atoi(argv[i + 1]) : 0, i + 2 < argc ? argv[i + 2] : NULL, 0);
        if (!strcmp(argv[i], "--compile-quick"))
            return compile_only(0, NULL, 1);
        if (!strcmp(argv[i], "--compile-checked"))
            return compile_checked(i + 1 < argc ? argv[i + 1] : "mods", i + 2 < argc ? atoi(argv[i + 2]) : 0);
    }
    int S = 4096, B = 4, H = 16, D = 128, ref = 1;
    const char *filter = NULL;
    for (int i = 1; i < argc; i++) {
        const int more = i + 1 < argc;
        if (!strcmp(argv[i], "--no-ref"))
            ref = 0;
        else if (more && !strcmp(argv[i], "--s"))
            S = atoi(argv[++i]);
        else if (more && !strcmp(argv[i], "--b"))
            B = atoi(argv[++i]);
        else if (more && !strcmp(argv[i], "--h"))
            H = atoi(argv[++i]);
        else if (more && !strcmp(argv[i], "--d"))
            D = atoi(argv[++i]);
        else if (more && !strcmp(argv[i], "--filter"))
            filter = argv[++i];
        else {
            fprintf(stderr, "bench_sm90: unknown argument '%s'\n", argv[i]);
            return 2;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *why = NULL;
    g_cu = fa4__cu_get(&why);
    int ndev = 0;
    if (!g_cu || g_cu->deviceGetCount(&ndev) != CUDA_SUCCESS || ndev == 0) {
        printf("SKIP: no CUDA device\n");
        return 0;
    }
    fa4_ctx_options opts;
    fa4_ctx_options_init(&opts);
    opts.device = 0;
    opts.cache_mode = FA4_CACHE_MODE_OFF;
    if (fa4_ctx_create(&opts, &g_ctx) != FA4_OK) {
        printf("SKIP: fa4_ctx_create: %s\n", fa4_ctx_create_errmsg());
        return 0;
    }
    CUdevice dev;
    CUcontext cctx;
    char name[128] = "";
    CK(g_cu->deviceGet(&dev, 0));
    CK(g_cu->devicePrimaryCtxRetain(&cctx, dev));
    CK(g_cu->ctxPushCurrent(cctx));
    g_cu->deviceGetName(name, sizeof name, dev);
    printf("device: %s (%s); B=%d H=%d S=%d D=%d bf16 BHSD\n", name, fa4_ctx_arch(g_ctx), B, H, S, D);

    const size_t n = (size_t)B * H * S * D, nl = (size_t)B * H * S;
    CUdeviceptr q, k, v, o, o80, lse, lse80, slopes;
    CK(g_cu->memAlloc(&q, n * 2));
    CK(g_cu->memAlloc(&k, n * 2));
    CK(g_cu->memAlloc(&v, n * 2));
    CK(g_cu->memAlloc(&o, n * 2));
    CK(g_cu->memAlloc(&o80, n * 2));
    CK(g_cu->memAlloc(&lse, nl * 4));
    CK(g_cu->memAlloc(&lse80, nl * 4));
    CK(g_cu->memAlloc(&slopes, (size_t)H * 4));
    {
        uint16_t *h = malloc(n * 2);
        rng r = {42};
        CUdeviceptr *t[3] = {&q, &k, &v};
        for (int i = 0; i < 3; i++) {
            for (size_t j = 0; j < n; j++)
                h[j] = f2bf((float)rng_normal(&r));
            CK(g_cu->memcpyHtoD(*t[i], h, n * 2));
        }
        free(h);
        float sl[256];
        for (int i = 0; i < H && i < 256; i++)
            sl[i] = (float)pow(2.0, -8.0 * (i + 1) / H);
        CK(g_cu->memcpyHtoD(slopes, sl, (size_t)H * 4));
    }

    printf("%-26s %9s %9s %9s %9s %10s %10s\n", "variant", "sm90 ms", "TFLOP/s", "sm80 ms", "TFLOP/s",
           "O maxdiff", "LSE maxdiff");
    for (int vi = 0; vi < (int)(sizeof variants / sizeof variants[0]); vi++) {
        const variant *va = &variants[vi];
        if (filter && !name_matches(va->name, filter))
            continue;
        const char *src = variant_src(vi);
        printf("%s:\n", va->name);
        fa4_kernel *k90 = compile(FA4_PATH_SM90, src, va->block_mask, va->rescale, va->sw_exp2, D);
        fa4_kernel *k80 = ref ? compile(FA4_PATH_SM80, src, va->block_mask, va->rescale, va->sw_exp2, D) : NULL;
        if (!k90 || (ref && !k80))
            continue;
        bmask bm;
        memset(&bm, 0, sizeof bm);
        if (va->block_mask && make_bm(&bm, ref ? k80 : k90, S) != 0)
            continue;
        fa4_aux_value aux[1];
        memset(aux, 0, sizeof aux);
        if (va->aux == 1) {
            aux[0].dtype = FA4_DTYPE_FP32;
            aux[0].data = (void *)(uintptr_t)slopes;
            aux[0].numel = H;
        } else if (va->aux == 2) {
            aux[0].dtype = FA4_DTYPE_FP32;
            aux[0].f = 20.0;
        }
        fa4_fwd_args a;
        fa4_fwd_args_init(&a);
        a.q = tensor4(q, B, H, S, D);
        a.k = tensor4(k, B, H, S, D);
        a.v = tensor4(v, B, H, S, D);
        a.o = tensor4(o, B, H, S, D);
        a.lse = tensor_lse(lse, B, H, S);
        a.aux = va->aux ? aux : NULL;
        a.num_aux = va->aux ? 1 : 0;
        a.block_mask = va->block_mask ? &bm.bm : NULL;
        fa4_fwd_args a80 = a;
        a80.o = tensor4(o80, B, H, S, D);
        a80.lse = tensor_lse(lse80, B, H, S);
        CK(g_cu->memsetD8Async(o, 0xff, n * 2, NULL)); /* NaN poison */
        CK(g_cu->memsetD8Async(lse, 0xff, nl * 4, NULL));
        const double ms90 = time_fwd(k90, &a);
        const double ms80 = ref ? time_fwd(k80, &a80) : 0;
        double flops = 4.0 * B * H * (double)S * S * D * (!strncmp(va->name, "causal", 6) ? 0.5 : 1.0);
        if (strstr(va->name, "window"))
            flops = 4.0 * B * H * (double)S * D * (1024.0 * S - 1024.0 * 1023 / 2) / S;
        double eo = 0, el = 0;
        int no = 0, nlse = 0;
        if (ref) {
            diff(o, o80, n, 1, &eo, &no);
            diff(lse, lse80, nl, 0, &el, &nlse);
        }
        printf("%-26s %9.3f %9.1f %9.3f %9.1f %10.2e %10.2e%s\n", va->name, ms90, flops / (ms90 * 1e-3) / 1e12,
               ms80, flops / (ms80 * 1e-3) / 1e12, eo, el, no || nlse ? " NaN!" : "");
        for (int i = 0; i < 8; i++)
            if (bm.buf[i])
                g_cu->memFree(bm.buf[i]);
        fa4_kernel_destroy(k90);
        if (k80)
            fa4_kernel_destroy(k80);
    }
    fa4_ctx_destroy(g_ctx);
    return 0;
}
