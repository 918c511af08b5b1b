/*
 * test_aux.c - the aux parameter block: the libffi layout must equal the natural C layout of the
 * struct fa4_aux the emitter declares (checked against the same struct compiled here), and launch
 * values must land at those offsets with scalars converted and trainable grads only in backward.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "internal.h"

/* What the emitter declares for MOD below (mod.h): tensor -> pointer + int64 length (+ grad if
 * trainable), scalars as themselves, in declaration order. */
struct expected_aux {
    unsigned char flag;
    const float *bias;
    long long bias_len;
    float *bias_grad;
    int window;
    const unsigned short *table;
    long long table_len;
    float temp;
};

static const char *MOD =
    "float score_mod(float score, int b, int h, int q_idx, int kv_idx, bool flag,\n"
    "                const float *bias, int window, const bf16 *table, float temp) {\n"
    "    float s = flag ? score / temp : score;\n"
    "    return s + bias[h] + (float)table[kv_idx % 7] + (float)window;\n"
    "}\n";

static fa4_kernel *make_kernel(fa4_ctx **ctx_out)
{
    fa4_ctx_options o;
    fa4_ctx_options_init(&o);
    o.device = FA4_DEVICE_NONE;
    o.cache_mode = FA4_CACHE_MODE_OFF;
    fa4_ctx *ctx = NULL;
    assert_int_equal(fa4_ctx_create(&o, &ctx), FA4_OK);
    fa4_kernel *k = calloc(1, sizeof *k);
    assert_non_null(k);
    k->ctx = ctx;
    fa4__diag diag;
    memset(&diag, 0, sizeof diag);
    fa4_status st = fa4__mod_parse(MOD, strlen(MOD), "aux", &k->mod, &diag);
    if (st != FA4_OK)
        fail_msg("parse: %s", diag.rendered);
    const char *tr[] = {"bias"};
    assert_int_equal(fa4__mod_set_trainable(k->mod, tr, 1, &diag), FA4_OK);
    assert_int_equal(fa4__aux_layout(k), FA4_OK);
    *ctx_out = ctx;
    return k;
}

static void test_layout_matches_c(void **state)
{
    (void)state;
    fa4_ctx *ctx;
    fa4_kernel *k = make_kernel(&ctx);
    assert_int_equal(k->aux_members, 8);
    const size_t want[8] = {
        offsetof(struct expected_aux, flag),  offsetof(struct expected_aux, bias),
        offsetof(struct expected_aux, bias_len), offsetof(struct expected_aux, bias_grad),
        offsetof(struct expected_aux, window), offsetof(struct expected_aux, table),
        offsetof(struct expected_aux, table_len), offsetof(struct expected_aux, temp)};
    for (int i = 0; i < 8; i++)
        assert_int_equal(k->aux_offset[i], want[i]);
    assert_int_equal(k->aux_size, sizeof(struct expected_aux));
    assert_int_equal(k->aux_align, _Alignof(struct expected_aux));
    fa4__mod_free(k->mod);
    free(k);
    fa4_ctx_destroy(ctx);
}

static void test_fill(void **state)
{
    (void)state;
    fa4_ctx *ctx;
    fa4_kernel *k = make_kernel(&ctx);
    fa4_aux_value v[5];
    memset(v, 0, sizeof v);
    v[0].dtype = FA4_DTYPE_BOOL, v[0].i = 5;
    v[1].dtype = FA4_DTYPE_FP32, v[1].data = (void *)0x1000, v[1].numel = 16,
    v[1].grad = (void *)0x2000;
    v[2].dtype = FA4_DTYPE_INT32, v[2].i = -3;
    v[3].dtype = FA4_DTYPE_BF16, v[3].data = (void *)0x3000, v[3].numel = 7;
    v[4].dtype = FA4_DTYPE_FP32, v[4].f = 0.5;
    uint8_t block[FA4__AUX_BLOCK_MAX];
    struct expected_aux e;

    assert_int_equal(fa4__aux_fill(ctx, k, v, 5, 1, block, sizeof block), FA4_OK);
    memcpy(&e, block, sizeof e);
    assert_int_equal(e.flag, 1);
    assert_ptr_equal(e.bias, (void *)0x1000);
    assert_int_equal(e.bias_len, 16);
    assert_ptr_equal(e.bias_grad, (void *)0x2000);
    assert_int_equal(e.window, -3);
    assert_ptr_equal(e.table, (void *)0x3000);
    assert_int_equal(e.table_len, 7);
    assert_true(e.temp == 0.5f);

    /* forward: no grad pointer is passed even when given */
    assert_int_equal(fa4__aux_fill(ctx, k, v, 5, 0, block, sizeof block), FA4_OK);
    memcpy(&e, block, sizeof e);
    assert_null(e.bias_grad);

    /* backward without the trainable's grad buffer */
    v[1].grad = NULL;
    assert_int_equal(fa4__aux_fill(ctx, k, v, 5, 1, block, sizeof block), FA4_ERR_AUX);
    assert_non_null(strstr(fa4_ctx_errmsg(ctx), "'bias' is trainable"));
    v[1].grad = (void *)0x2000;
    /* misaligned bf16 tensor */
    v[3].data = (void *)0x3001;
    assert_int_equal(fa4__aux_fill(ctx, k, v, 5, 1, block, sizeof block), FA4_ERR_ALIGNMENT);
    fa4__mod_free(k->mod);
    free(k);
    fa4_ctx_destroy(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_matches_c),
        cmocka_unit_test(test_fill),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
