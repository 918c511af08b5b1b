/*
 * test_launch.c - launch argument validation without a GPU. A kernel compiled on a deviceless ctx
 * is not launchable, so fully valid arguments end in FA4_ERR_NO_DEVICE; every broken argument must
 * be caught before that with its own status and a message that names it. Pointers are never
 * dereferenced by validation, so fake device addresses suffice.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fa4jit.h"

static const char *MOD =
    "float score_mod(float score, int b, int h, int q_idx, int kv_idx, const float *slopes,\n"
    "                int window) {\n"
    "    return score + slopes[h] * (float)(kv_idx - q_idx);\n"
    "}\n"
    "bool mask_mod(int b, int h, int q_idx, int kv_idx, int window) {\n"
    "    return q_idx - kv_idx < window;\n"
    "}\n";

enum { B = 2, HQ = 8, HKV = 2, SQ = 300, SKV = 257, D = 128 };

typedef struct fixture {
    fa4_ctx *ctx;
    fa4_kernel *k;
    fa4_fwd_args a;
    fa4_aux_value aux[2];
} fixture;

#define FAKE(n) ((void *)(uintptr_t)(0x7f0000000000ull + (uint64_t)(n) * 0x100000000ull))

static fa4_tensor bhsd(void *p, int64_t b, int64_t h, int64_t s, int64_t d)
{
    fa4_tensor t;
    memset(&t, 0, sizeof t);
    t.data = p;
    t.dtype = FA4_DTYPE_BF16;
    t.ndim = 4;
    t.shape[0] = b, t.shape[1] = h, t.shape[2] = s, t.shape[3] = d;
    t.strides[3] = 1, t.strides[2] = d, t.strides[1] = s * d, t.strides[0] = h * s * d;
    return t;
}

static void valid_args(fixture *f)
{
    fa4_fwd_args_init(&f->a);
    f->a.q = bhsd(FAKE(1), B, HQ, SQ, D);
    f->a.k = bhsd(FAKE(2), B, HKV, SKV, D);
    f->a.v = bhsd(FAKE(3), B, HKV, SKV, D);
    f->a.o = bhsd(FAKE(4), B, HQ, SQ, D);
    memset(f->aux, 0, sizeof f->aux);
    f->aux[0].name = "slopes";
    f->aux[0].dtype = FA4_DTYPE_FP32;
    f->aux[0].data = FAKE(5);
    f->aux[0].numel = HQ;
    f->aux[1].name = "window";
    f->aux[1].dtype = FA4_DTYPE_INT32;
    f->aux[1].i = 64;
    f->a.aux = f->aux;
    f->a.num_aux = 2;
}

static int setup(void **state)
{
    static fixture f;
    fa4_ctx_options o;
    fa4_ctx_options_init(&o);
    o.device = FA4_DEVICE_NONE;
    o.cache_mode = FA4_CACHE_MODE_OFF;
    if (fa4_ctx_create(&o, &f.ctx) != FA4_OK)
        return -1;
    fa4_kernel_spec spec;
    fa4_kernel_spec_init(&spec);
    spec.source = MOD;
    spec.arch = "sm_80";
    spec.flags = FA4_COMPILE_FWD;
    if (fa4_jit_compile(f.ctx, &spec, &f.k) != FA4_OK) {
        fprintf(stderr, "setup compile: %s\n", fa4_ctx_errmsg(f.ctx));
        return -1;
    }
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    fa4_kernel_destroy(f->k);
    fa4_ctx_destroy(f->ctx);
    return 0;
}

/* Launch f->a and expect `want` with `needle` in the message. */
static void expect(fixture *f, fa4_status want, const char *needle)
{
    fa4_status got = fa4_launch_fwd(f->k, &f->a);
    const char *msg = fa4_ctx_errmsg(f->ctx);
    if (got != want || (needle && !strstr(msg, needle)))
        fail_msg("expected %s containing '%s', got %s: '%s'", fa4_status_name(want),
                 needle ? needle : "", fa4_status_name(got), msg);
    valid_args(f); /* restore for the next case */
}

static void test_valid_reaches_device_check(void **state)
{
    fixture *f = *state;
    valid_args(f);
    expect(f, FA4_ERR_NO_DEVICE, "not loaded on a device");
}

static void test_shapes(void **state)
{
    fixture *f = *state;
    valid_args(f);
    f->a.q.shape[3] = 64;
    expect(f, FA4_ERR_SHAPE, "q.shape[3] (head_dim) is 64, expected 128");
    f->a.k.shape[0] = 3;
    expect(f, FA4_ERR_SHAPE, "k.shape[0] (batch) is 3, expected 2");
    f->a.v.shape[2] = 256;
    expect(f, FA4_ERR_SHAPE, "v.shape[2] (seqlen) is 256, expected 257");
    f->a.o.shape[1] = 4;
    expect(f, FA4_ERR_SHAPE, "o.shape[1] (heads) is 4, expected 8");
    f->a.k = bhsd(FAKE(2), B, 3, SKV, D);
    f->a.v = bhsd(FAKE(3), B, 3, SKV, D);
    expect(f, FA4_ERR_SHAPE, "multiple of the key/value heads");
    f->a.q.ndim = 3;
    expect(f, FA4_ERR_SHAPE, "q.ndim is 3");
    f->a.q.shape[2] = 0;
    f->a.o.shape[2] = 0;
    expect(f, FA4_ERR_SHAPE, "must be >= 1");
}

static void test_dtypes_pointers_strides(void **state)
{
    fixture *f = *state;
    valid_args(f);
    f->a.v.dtype = FA4_DTYPE_FP16;
    expect(f, FA4_ERR_DTYPE, "v.dtype is fp16 but the kernel was compiled for bf16");
    f->a.q.data = NULL;
    expect(f, FA4_ERR_INVALID_ARGUMENT, "q.data is NULL");
    f->a.o.data = (char *)FAKE(4) + 2;
    expect(f, FA4_ERR_ALIGNMENT, "o.data");
    f->a.k.strides[3] = 2;
    expect(f, FA4_ERR_STRIDE, "k.strides[3] is 2");
    f->a.q.strides[2] = 129;
    expect(f, FA4_ERR_ALIGNMENT, "q.strides[2] is 129 elements");
    f->a.q.strides[1] = -128;
    expect(f, FA4_ERR_STRIDE, "q.strides[1] is negative");
    /* BSHD strides are fine */
    f->a.q.strides[0] = (int64_t)SQ * HQ * D, f->a.q.strides[1] = D, f->a.q.strides[2] = HQ * D;
    expect(f, FA4_ERR_NO_DEVICE, NULL);
}

static void test_lse(void **state)
{
    fixture *f = *state;
    valid_args(f);
    f->a.lse.data = FAKE(6);
    f->a.lse.dtype = FA4_DTYPE_BF16;
    f->a.lse.ndim = 3;
    f->a.lse.shape[0] = B, f->a.lse.shape[1] = HQ, f->a.lse.shape[2] = SQ;
    expect(f, FA4_ERR_DTYPE, "LSE is float");
    f->a.lse.data = FAKE(6);
    f->a.lse.dtype = FA4_DTYPE_FP32;
    f->a.lse.ndim = 3;
    f->a.lse.shape[0] = B, f->a.lse.shape[1] = HQ, f->a.lse.shape[2] = SQ + 1;
    expect(f, FA4_ERR_SHAPE, "lse.shape[2] is 301, expected 300");
}

static void test_aux(void **state)
{
    fixture *f = *state;
    valid_args(f);
    f->a.num_aux = 1;
    expect(f, FA4_ERR_AUX, "declares 2 aux parameters but 1 was given");
    f->aux[0].name = "slope";
    expect(f, FA4_ERR_AUX, "named 'slope' but the mod's parameter 0 is 'slopes'");
    f->aux[0].dtype = FA4_DTYPE_BF16;
    expect(f, FA4_ERR_AUX, "declared const float * tensor but was given dtype bf16");
    f->aux[0].numel = 0;
    expect(f, FA4_ERR_AUX, "numel 0");
    f->aux[0].data = NULL;
    expect(f, FA4_ERR_AUX, "NULL data pointer");
    f->aux[1].dtype = FA4_DTYPE_FP32;
    expect(f, FA4_ERR_AUX, "'window' is declared int scalar");
    f->aux[1].i = (int64_t)1 << 40;
    expect(f, FA4_ERR_AUX, "does not fit in 32 bits");
    f->a.aux = NULL;
    expect(f, FA4_ERR_AUX, "aux is NULL");
    /* positional (unnamed) values are accepted */
    f->aux[0].name = NULL;
    f->aux[1].name = NULL;
    expect(f, FA4_ERR_NO_DEVICE, NULL);
}

static void test_varlen_offsets_mask_misc(void **state)
{
    fixture *f = *state;
    valid_args(f);
    f->a.cu_seqlens_q = FAKE(7);
    expect(f, FA4_ERR_INVALID_ARGUMENT, "give both cu_seqlens_q and cu_seqlens_k");
    f->a.cu_seqlens_q = FAKE(7);
    f->a.cu_seqlens_k = FAKE(8);
    f->a.num_seqs = 3, f->a.max_seqlen_q = 100, f->a.max_seqlen_k = 100;
    expect(f, FA4_ERR_SHAPE, "shape[0] must be 1");
    f->a.q_offset = -1;
    expect(f, FA4_ERR_INVALID_ARGUMENT, "q_offset (-1)");
    f->a.scale = 1.0f / 0.0f;
    expect(f, FA4_ERR_INVALID_ARGUMENT, "scale is not finite");
    f->a.struct_size = 16;
    expect(f, FA4_ERR_STRUCT_SIZE, "fa4_fwd_args.struct_size is 16");
    fa4_block_mask bm;
    memset(&bm, 0, sizeof bm);
    bm.struct_size = sizeof bm;
    bm.batch = 1, bm.heads = 1, bm.q_block = 128, bm.kv_block = 128;
    bm.num_q_blocks = 3, bm.num_kv_blocks = 3;
    bm.kv_num_blocks = FAKE(9);
    bm.kv_indices = FAKE(10);
    f->a.block_mask = &bm;
    expect(f, FA4_ERR_NO_DEVICE, NULL);
    f->a.block_mask = &bm;
    bm.num_kv_blocks = 2;
    expect(f, FA4_ERR_SHAPE, "need 3 x 3");
    bm.num_kv_blocks = 3;
    f->a.block_mask = &bm;
    bm.heads = 5;
    expect(f, FA4_ERR_SHAPE, "block_mask.heads is 5");
    bm.heads = 1;
    f->a.block_mask = &bm;
    bm.full_kv_indices = FAKE(11);
    expect(f, FA4_ERR_INVALID_ARGUMENT, "must be given together");
    bm.full_kv_indices = NULL;
    f->a.block_mask = &bm;
    bm.q_block = 100;
    expect(f, FA4_ERR_INVALID_ARGUMENT, "multiples of 16");
    assert_int_equal(fa4_launch_fwd(f->k, NULL), FA4_ERR_INVALID_ARGUMENT);
}

static void test_wrong_kernel(void **state)
{
    fixture *f = *state;
    fa4_bwd_args b;
    fa4_bwd_args_init(&b);
    size_t n;
    assert_int_equal(fa4_launch_bwd(f->k, &b), FA4_ERR_WRONG_KERNEL);
    assert_non_null(strstr(fa4_ctx_errmsg(f->ctx), "backward"));
    assert_int_equal(fa4_bwd_workspace_size(f->k, &b, &n), FA4_ERR_WRONG_KERNEL);
    fa4_block_mask bm;
    memset(&bm, 0, sizeof bm);
    bm.struct_size = sizeof bm;
    assert_int_equal(fa4_block_mask_create(f->k, 1, 1, 128, 128, NULL, 0, &bm, NULL),
                     FA4_ERR_WRONG_KERNEL);
    int64_t nq = 0, nk = 0;
    assert_int_equal(fa4_block_mask_sizes(2, 4, 1000, 300, 128, 64, &nq, &nk), FA4_OK);
    assert_int_equal(nq, 8);
    assert_int_equal(nk, 5);
    assert_int_equal(fa4_block_mask_sizes(2, 4, 1000, 300, 100, 64, &nq, &nk),
                     FA4_ERR_INVALID_ARGUMENT);
}

/* The forward's optional workspace: sizes per path, and a given one must be large enough and
 * 256-byte aligned (NULL keeps the static schedule). */
static void test_fwd_workspace(void **state)
{
    fixture *f = *state;
    size_t n = 1;
    valid_args(f);
    /* sm80: no workspace; one given is ignored */
    assert_int_equal(fa4_fwd_workspace_size(f->k, &f->a, &n), FA4_OK);
    assert_int_equal(n, 0);
    f->a.workspace = (char *)FAKE(12) + 4;
    f->a.workspace_size = 1;
    expect(f, FA4_ERR_NO_DEVICE, NULL);
    assert_int_equal(fa4_fwd_workspace_size(f->k, &f->a, NULL), FA4_ERR_INVALID_ARGUMENT);
    assert_int_equal(fa4_fwd_workspace_size(NULL, &f->a, &n), FA4_ERR_NULL_HANDLE);

    fa4_kernel_spec spec;
    fa4_kernel_spec_init(&spec);
    spec.source = MOD;
    spec.arch = "sm_90a";
    spec.path = FA4_PATH_SM90;
    spec.flags = FA4_COMPILE_FWD;
    fa4_kernel *k90 = NULL;
    if (fa4_jit_compile(f->ctx, &spec, &k90) != FA4_OK)
        fail_msg("sm_90a compile: %s", fa4_ctx_errmsg(f->ctx));
    fa4_kernel *k80 = f->k;
    f->k = k90;
    valid_args(f);
    /* dense: the counter's 256 bytes, then the relative form's bounds (B x HQ x 4 int32, rounded up
     * to 256 bytes; reserved for every call) */
    const size_t bounds = (B * HQ * 16 + 255) / 256 * 256;
    assert_int_equal(fa4_fwd_workspace_size(k90, &f->a, &n), FA4_OK);
    assert_int_equal(n, 256 + bounds);
    /* block mask: plus the ranking of each mask row's query tiles (B x HQ rows, 3 tiles of 128 of
     * SQ 300, int32, rounded up to 256 bytes) */
    fa4_block_mask bm;
    memset(&bm, 0, sizeof bm);
    bm.struct_size = sizeof bm;
    bm.batch = B, bm.heads = HQ, bm.q_block = 128, bm.kv_block = 128;
    bm.num_q_blocks = 3, bm.num_kv_blocks = 3;
    bm.kv_num_blocks = FAKE(9);
    bm.kv_indices = FAKE(10);
    f->a.block_mask = &bm;
    assert_int_equal(fa4_fwd_workspace_size(k90, &f->a, &n), FA4_OK);
    assert_int_equal(n, 256 + (B * HQ * 3 * 4 + 255) / 256 * 256 + bounds);
    bm.batch = 1, bm.heads = 1;
    assert_int_equal(fa4_fwd_workspace_size(k90, &f->a, &n), FA4_OK);
    assert_int_equal(n, 512 + bounds);
    /* the size query checks the arguments like the launch */
    f->a.q.data = NULL;
    assert_int_equal(fa4_fwd_workspace_size(k90, &f->a, &n), FA4_ERR_INVALID_ARGUMENT);
    valid_args(f);
    f->a.workspace = FAKE(12);
    f->a.workspace_size = 255 + bounds;
    expect(f, FA4_ERR_WORKSPACE, bounds == 256 ? "must hold 512 bytes" : "must hold");
    f->a.block_mask = &bm;
    f->a.workspace = FAKE(12);
    f->a.workspace_size = 511 + bounds;
    expect(f, FA4_ERR_WORKSPACE, bounds == 256 ? "must hold 768 bytes" : "must hold");
    f->a.workspace = (char *)FAKE(12) + 128;
    f->a.workspace_size = 4096;
    expect(f, FA4_ERR_ALIGNMENT, "256-byte aligned");
    f->a.workspace = FAKE(12);
    f->a.workspace_size = 256 + bounds;
    expect(f, FA4_ERR_NO_DEVICE, "not loaded on a device");
    f->a.workspace = NULL; /* the static schedule: the size is not looked at */
    f->a.workspace_size = 1;
    expect(f, FA4_ERR_NO_DEVICE, "not loaded on a device");
    f->k = k80;
    fa4_kernel_destroy(k90);
}

/* Deterministic backward with a trainable aux tensor: the workspace grows by the tensor's
 * fixed-point accumulator (24 bytes an element, rounded up to 256), after the path's part rounded
 * up to 256 (launch.c aux_fx_layout); FA4JIT_DET_AUX_FIXED=0 drops it; too small a workspace names
 * the accumulators; the fixed-point main is among the programs. */
static void test_bwd_det_aux_workspace(void **state)
{
    fixture *f = *state;
    static const char *REL =
        "float score_mod(float score, int b, int h, int q_idx, int kv_idx, const float *bias) {\n"
        "    return score + bias[kv_idx - q_idx + 512];\n"
        "}\n";
    static const char *const trainable[1] = {"bias"};
    enum { NUMEL = 1025 };
    fa4_kernel_spec spec;
    fa4_kernel_spec_init(&spec);
    spec.source = REL;
    spec.arch = "sm_80";
    spec.flags = FA4_COMPILE_BWD | FA4_COMPILE_DETERMINISTIC;
    spec.trainable_aux = trainable;
    spec.num_trainable_aux = 1;
    fa4_kernel *k = NULL;
    if (fa4_jit_compile(f->ctx, &spec, &k) != FA4_OK)
        fail_msg("trainable compile: %s", fa4_ctx_errmsg(f->ctx));
    fa4_kernel_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    assert_int_equal(fa4_kernel_get_info(k, &info), FA4_OK);
    int fx = 0;
    for (int i = 0; i < info.num_programs; i++)
        fx += !strcmp(info.programs[i].name, "bwd_main_fx");
    assert_int_equal(fx, 1);

    fa4_aux_value aux;
    memset(&aux, 0, sizeof aux);
    aux.name = "bias";
    aux.dtype = FA4_DTYPE_FP32;
    aux.data = FAKE(5);
    aux.numel = NUMEL;
    aux.grad = FAKE(13);
    fa4_bwd_args b;
    fa4_bwd_args_init(&b);
    b.q = bhsd(FAKE(1), B, HQ, SQ, D);
    b.k = bhsd(FAKE(2), B, HKV, SKV, D);
    b.v = bhsd(FAKE(3), B, HKV, SKV, D);
    b.o = bhsd(FAKE(4), B, HQ, SQ, D);
    b.dout = bhsd(FAKE(6), B, HQ, SQ, D);
    b.dq = bhsd(FAKE(7), B, HQ, SQ, D);
    b.dk = bhsd(FAKE(8), B, HKV, SKV, D);
    b.dv = bhsd(FAKE(9), B, HKV, SKV, D);
    b.lse.data = FAKE(10);
    b.lse.dtype = FA4_DTYPE_FP32;
    b.lse.ndim = 3;
    b.lse.shape[0] = B, b.lse.shape[1] = HQ, b.lse.shape[2] = SQ;
    b.lse.strides[2] = 1, b.lse.strides[1] = SQ, b.lse.strides[0] = HQ * SQ;
    b.aux = &aux;
    b.num_aux = 1;
    size_t plain = 0, det = 0, det_float = 0;
    assert_int_equal(fa4_bwd_workspace_size(k, &b, &plain), FA4_OK);
    b.deterministic = 1;
    assert_int_equal(fa4_bwd_workspace_size(k, &b, &det), FA4_OK);
    setenv("FA4JIT_DET_AUX_FIXED", "0", 1);
    assert_int_equal(fa4_bwd_workspace_size(k, &b, &det_float), FA4_OK);
    unsetenv("FA4JIT_DET_AUX_FIXED");
    assert_true(det_float > plain); /* the per-key-tile dQ partials of the sm80 deterministic mode */
    assert_int_equal(det, (det_float + 255) / 256 * 256 + (NUMEL * 24 + 255) / 256 * 256);
    b.workspace = FAKE(12);
    b.workspace_size = det - 1;
    assert_int_equal(fa4_launch_bwd(k, &b), FA4_ERR_WORKSPACE);
    assert_non_null(strstr(fa4_ctx_errmsg(f->ctx), "aux gradient accumulators"));
    b.workspace_size = det;
    assert_int_equal(fa4_launch_bwd(k, &b), FA4_ERR_NO_DEVICE);
    b.deterministic = 0; /* the default mode needs no accumulators */
    b.workspace_size = plain;
    assert_int_equal(fa4_launch_bwd(k, &b), FA4_ERR_NO_DEVICE);
    fa4_kernel_destroy(k);
    /* compiled without FA4_COMPILE_DETERMINISTIC: the default mode launches, a deterministic call
     * says which flag it needs (and so does the size query) */
    spec.flags = FA4_COMPILE_BWD;
    if (fa4_jit_compile(f->ctx, &spec, &k) != FA4_OK)
        fail_msg("trainable compile: %s", fa4_ctx_errmsg(f->ctx));
    assert_int_equal(fa4_launch_bwd(k, &b), FA4_ERR_NO_DEVICE);
    b.deterministic = 1;
    b.workspace_size = det;
    assert_int_equal(fa4_launch_bwd(k, &b), FA4_ERR_WRONG_KERNEL);
    assert_non_null(strstr(fa4_ctx_errmsg(f->ctx), "FA4_COMPILE_DETERMINISTIC"));
    assert_int_equal(fa4_bwd_workspace_size(k, &b, &det), FA4_ERR_WRONG_KERNEL);
    fa4_kernel_destroy(k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_reaches_device_check),
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_dtypes_pointers_strides),
        cmocka_unit_test(test_lse),
        cmocka_unit_test(test_aux),
        cmocka_unit_test(test_varlen_offsets_mask_misc),
        cmocka_unit_test(test_wrong_kernel),
        cmocka_unit_test(test_fwd_workspace),
        cmocka_unit_test(test_bwd_det_aux_workspace),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
