/*
 * attention.c - a small host program using fa4jit from C: compile an ALiBi + causal mod with
 * fa4_jit_compile, run the forward and backward passes on random bf16 data, and check O, LSE, dQ,
 * dK and dV against a float64 reference computed on the CPU. Without a GPU it says so and exits 0.
 *
 *   fa4jit_example [B H S D]
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fa4jit.h"

static const char *MOD =
    "/* ALiBi bias, causal mask */\n"
    "float score_mod(float score, int b, int h, int q_idx, int kv_idx, const float *slopes) {\n"
    "    return score + slopes[h] * (float)(kv_idx - q_idx);\n"
    "}\n"
    "bool mask_mod(int b, int h, int q_idx, int kv_idx) {\n"
    "    return q_idx >= kv_idx;\n"
    "}\n";

static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fff + ((u >> 16) & 1); /* round to nearest even */
    return (uint16_t)(u >> 16);
}

static float from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float frand(void) /* uniform in [-1, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

#define CHECK_CUDA(x)                                                                              \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));    \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

static fa4_tensor tensor(void *p, fa4_dtype t, int64_t b, int64_t h, int64_t s, int64_t d)
{
    fa4_tensor x;
    memset(&x, 0, sizeof x);
    x.data = p;
    x.dtype = t;
    x.ndim = 4;
    x.shape[0] = b, x.shape[1] = h, x.shape[2] = s, x.shape[3] = d;
    x.strides[3] = 1, x.strides[2] = d, x.strides[1] = s * d, x.strides[0] = h * s * d;
    return x;
}

/* relative L2 error of got against ref */
static double rel_err(const float *got, const double *ref, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)got[i] - ref[i];
        if (isnan(got[i]))
            return INFINITY;
        num += d * d;
        den += ref[i] * ref[i];
    }
    return sqrt(num / (den > 0 ? den : 1));
}

int main(int argc, char **argv)
{
    int B = 2, H = 4, S = 300, D = 64;
    if (argc == 5) {
        B = atoi(argv[1]), H = atoi(argv[2]), S = atoi(argv[3]), D = atoi(argv[4]);
    }
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("fa4jit_example: skipped: no CUDA device on this machine\n");
        return 0;
    }

    /* 1. a context on the current device, and the kernel */
    fa4_ctx *ctx = NULL;
    fa4_status st = fa4_ctx_create(NULL, &ctx);
    if (st != FA4_OK) {
        printf("fa4jit_example: skipped: %s\n", fa4_ctx_create_errmsg());
        return 0;
    }
    fa4_kernel_spec spec;
    fa4_kernel_spec_init(&spec);
    spec.source = MOD;
    spec.source_name = "alibi_causal";
    spec.head_dim = D;
    fa4_kernel *kernel = NULL;
    st = fa4_jit_compile(ctx, &spec, &kernel);
    if (st != FA4_OK) {
        fprintf(stderr, "compile failed: %s: %s\n%s\n", fa4_status_name(st), fa4_ctx_errmsg(ctx),
                fa4_ctx_compile_log(ctx));
        return 1;
    }
    fa4_kernel_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    fa4_kernel_get_info(kernel, &info);
    printf("kernel %s for %s: %s, %.0f ms\n", info.key, info.arch,
           info.cache_result == FA4_CACHE_MISS ? "compiled" : "from cache", info.lookup_ms);

    /* 2. random inputs */
    size_t n = (size_t)B * H * S * D, nl = (size_t)B * H * S;
    uint16_t *hq = malloc(n * 2), *hk = malloc(n * 2), *hv = malloc(n * 2), *hdo = malloc(n * 2);
    float slopes[64];
    for (size_t i = 0; i < n; i++) {
        hq[i] = to_bf16(frand()), hk[i] = to_bf16(frand());
        hv[i] = to_bf16(frand()), hdo[i] = to_bf16(frand());
    }
    for (int h = 0; h < H && h < 64; h++)
        slopes[h] = powf(2.0f, -8.0f * (float)(h + 1) / (float)H);
    void *dq, *dk, *dv, *dout, *o, *gq, *gk, *gv, *dslopes;
    float *lse;
    CHECK_CUDA(cudaMalloc(&dq, n * 2));
    CHECK_CUDA(cudaMalloc(&dk, n * 2));
    CHECK_CUDA(cudaMalloc(&dv, n * 2));
    CHECK_CUDA(cudaMalloc(&dout, n * 2));
    CHECK_CUDA(cudaMalloc(&o, n * 2));
    CHECK_CUDA(cudaMalloc(&gq, n * 2));
    CHECK_CUDA(cudaMalloc(&gk, n * 2));
    CHECK_CUDA(cudaMalloc(&gv, n * 2));
    CHECK_CUDA(cudaMalloc((void **)&lse, nl * 4));
    CHECK_CUDA(cudaMalloc(&dslopes, (size_t)H * 4));
    CHECK_CUDA(cudaMemcpy(dq, hq, n * 2, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(dk, hk, n * 2, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(dv, hv, n * 2, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(dout, hdo, n * 2, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(dslopes, slopes, (size_t)H * 4, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemset(o, 0xff, n * 2)); /* poison: NaN until written */

    /* 3. forward */
    fa4_aux_value aux;
    memset(&aux, 0, sizeof aux);
    aux.name = "slopes";
    aux.dtype = FA4_DTYPE_FP32;
    aux.data = dslopes;
    aux.numel = H;
    fa4_fwd_args fa;
    fa4_fwd_args_init(&fa);
    fa.q = tensor(dq, FA4_DTYPE_BF16, B, H, S, D);
    fa.k = tensor(dk, FA4_DTYPE_BF16, B, H, S, D);
    fa.v = tensor(dv, FA4_DTYPE_BF16, B, H, S, D);
    fa.o = tensor(o, FA4_DTYPE_BF16, B, H, S, D);
    fa.lse.data = lse, fa.lse.dtype = FA4_DTYPE_FP32, fa.lse.ndim = 3;
    fa.lse.shape[0] = B, fa.lse.shape[1] = H, fa.lse.shape[2] = S;
    fa.lse.strides[0] = (int64_t)H * S, fa.lse.strides[1] = S, fa.lse.strides[2] = 1;
    fa.aux = &aux;
    fa.num_aux = 1;
    st = fa4_launch_fwd(kernel, &fa);
    if (st != FA4_OK) {
        fprintf(stderr, "forward: %s: %s\n", fa4_status_name(st), fa4_ctx_errmsg(ctx));
        return 1;
    }

    /* 4. backward */
    fa4_bwd_args ba;
    fa4_bwd_args_init(&ba);
    ba.q = fa.q, ba.k = fa.k, ba.v = fa.v, ba.o = fa.o, ba.lse = fa.lse;
    ba.dout = tensor(dout, FA4_DTYPE_BF16, B, H, S, D);
    ba.dq = tensor(gq, FA4_DTYPE_BF16, B, H, S, D);
    ba.dk = tensor(gk, FA4_DTYPE_BF16, B, H, S, D);
    ba.dv = tensor(gv, FA4_DTYPE_BF16, B, H, S, D);
    ba.aux = &aux;
    ba.num_aux = 1;
    size_t ws = 0;
    st = fa4_bwd_workspace_size(kernel, &ba, &ws);
    if (st != FA4_OK) {
        fprintf(stderr, "workspace: %s: %s\n", fa4_status_name(st), fa4_ctx_errmsg(ctx));
        return 1;
    }
    if (ws)
        CHECK_CUDA(cudaMalloc(&ba.workspace, ws));
    ba.workspace_size = ws;
    st = fa4_launch_bwd(kernel, &ba);
    if (st != FA4_OK) {
        fprintf(stderr, "backward: %s: %s\n", fa4_status_name(st), fa4_ctx_errmsg(ctx));
        return 1;
    }
    CHECK_CUDA(cudaDeviceSynchronize());

    /* 5. float64 reference on the CPU, per (b, h): P = softmax(scale QK^T + bias, causal) */
    uint16_t *ho = malloc(n * 2), *hgq = malloc(n * 2), *hgk = malloc(n * 2), *hgv = malloc(n * 2);
    float *hlse = malloc(nl * 4);
    CHECK_CUDA(cudaMemcpy(ho, o, n * 2, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(hgq, gq, n * 2, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(hgk, gk, n * 2, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(hgv, gv, n * 2, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(hlse, lse, nl * 4, cudaMemcpyDeviceToHost));
    double *ro = calloc(n, 8), *rgq = calloc(n, 8), *rgk = calloc(n, 8), *rgv = calloc(n, 8);
    double *rlse = calloc(nl, 8), *P = malloc((size_t)S * S * 8), *dP = malloc((size_t)S * 8);
    double scale = 1.0 / sqrt((double)D);
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            size_t base = ((size_t)b * H + h) * S * D;
#define X(a, i, d) ((double)from_bf16((a)[base + (size_t)(i) * D + (d)]))
            for (int i = 0; i < S; i++) {
                double m = -INFINITY, sum = 0;
                for (int j = 0; j <= i; j++) {
                    double s = 0;
                    for (int d = 0; d < D; d++)
                        s += X(hq, i, d) * X(hk, j, d);
                    s = s * scale + (double)slopes[h] * (double)(j - i);
                    P[(size_t)i * S + j] = s;
                    m = s > m ? s : m;
                }
                for (int j = 0; j <= i; j++)
                    sum += exp(P[(size_t)i * S + j] - m);
                rlse[((size_t)b * H + h) * S + i] = m + log(sum);
                for (int j = 0; j <= i; j++)
                    P[(size_t)i * S + j] = exp(P[(size_t)i * S + j] - m) / sum;
                for (int d = 0; d < D; d++) {
                    double acc = 0;
                    for (int j = 0; j <= i; j++)
                        acc += P[(size_t)i * S + j] * X(hv, j, d);
                    ro[base + (size_t)i * D + d] = acc;
                }
            }
            /* backward: dV = P^T dO; dP = dO V^T; dS = P (dP - rowsum(dO*O)); dQ = dS K scale ... */
            for (int i = 0; i < S; i++) {
                double delta = 0;
                for (int d = 0; d < D; d++)
                    delta += X(hdo, i, d) * ro[base + (size_t)i * D + d];
                for (int j = 0; j <= i; j++) {
                    double dp = 0;
                    for (int d = 0; d < D; d++)
                        dp += X(hdo, i, d) * X(hv, j, d);
                    dP[j] = P[(size_t)i * S + j] * (dp - delta); /* dS (d score_mod/d s = 1) */
                }
                for (int j = 0; j <= i; j++) {
                    double p = P[(size_t)i * S + j], ds = dP[j] * scale;
                    for (int d = 0; d < D; d++) {
                        rgv[base + (size_t)j * D + d] += p * X(hdo, i, d);
                        rgq[base + (size_t)i * D + d] += ds * X(hk, j, d);
                        rgk[base + (size_t)j * D + d] += ds * X(hq, i, d);
                    }
                }
            }
#undef X
        }
    }
    float *f = malloc(n * 4);
    double worst = 0;
    const struct {
        const char *name;
        const uint16_t *got;
        const double *ref;
    } outs[] = {{"O", ho, ro}, {"dQ", hgq, rgq}, {"dK", hgk, rgk}, {"dV", hgv, rgv}};
    for (int t = 0; t < 4; t++) {
        for (size_t i = 0; i < n; i++)
            f[i] = from_bf16(outs[t].got[i]);
        double e = rel_err(f, outs[t].ref, n);
        printf("%-4s relative L2 error %.2e\n", outs[t].name, e);
        worst = e > worst ? e : worst;
    }
    double e_lse = rel_err(hlse, rlse, nl);
    printf("%-4s relative L2 error %.2e\n", "LSE", e_lse);
    worst = e_lse > worst ? e_lse : worst;
    int ok = worst < 2e-2;
    printf("%s: B=%d H=%d S=%d D=%d, worst relative error %.2e (bound 2e-2)\n", ok ? "PASS" : "FAIL",
           B, H, S, D, worst);
    fa4_kernel_destroy(kernel);
    fa4_ctx_destroy(ctx);
    return ok ? 0 : 1;
}
