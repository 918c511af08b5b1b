/*
 * test_key.c - the cache key (G8, T2 at the jit level): every input that decides the cubins
 * changes the key, formatting and comments of the mod do not, and the key-inputs text names the
 * kernel fingerprint, NVRTC version, arch and library version.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cache/cache.h"
#include "internal.h"

static const char *MOD =
    "float score_mod(float score, int b, int h, int q_idx, int kv_idx, const float *bias) {\n"
    "    return score + bias[h];\n"
    "}\n";
static const char *MOD_REFORMATTED =
    "/* the same mod, other spacing */ float score_mod(float score,int b,int h,int q_idx,\n"
    "   int kv_idx, const float *bias)\n{ return score  +  bias[ h ]; // bias per head\n}\n";
static const char *MOD_OTHER =
    "float score_mod(float score, int b, int h, int q_idx, int kv_idx, const float *bias) {\n"
    "    return score - bias[h];\n"
    "}\n";

static fa4_ctx *ctx;

static int setup(void **state)
{
    (void)state;
    fa4_ctx_options o;
    fa4_ctx_options_init(&o);
    o.device = FA4_DEVICE_NONE;
    o.cache_mode = FA4_CACHE_MODE_OFF;
    return fa4_ctx_create(&o, &ctx) == FA4_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    fa4_ctx_destroy(ctx);
    return 0;
}

static void base_spec(fa4_kernel_spec *s)
{
    fa4_kernel_spec_init(s);
    s->source = MOD;
    s->arch = "sm_90a";
}

static void key_of(const fa4_kernel_spec *s, char key[33])
{
    fa4_status st = fa4__spec_key(ctx, s, key, NULL);
    if (st != FA4_OK)
        fail_msg("key: %s: %s", fa4_status_name(st), fa4_ctx_errmsg(ctx));
}

static void test_every_input_changes_the_key(void **state)
{
    (void)state;
    enum { N = 13 };
    char keys[N][33];
    fa4_kernel_spec s;
    const char *tr[] = {"bias"};
    for (int i = 0; i < N; i++) {
        base_spec(&s);
        switch (i) {
        case 0: break;                                   /* the base */
        case 1: s.source = MOD_OTHER; break;             /* one token */
        case 2: s.dtype = FA4_DTYPE_FP16; break;
        case 3: s.head_dim = 64; break;
        case 4: s.head_dim_v = 64; break;
        case 5: s.arch = "sm_80"; break;
        case 6: s.flags = FA4_COMPILE_FWD; break;
        case 7: s.flags = FA4_COMPILE_ALL | FA4_COMPILE_CHECKED; break;
        case 8: s.path = FA4_PATH_SM80; break;          /* AUTO is sm90 on sm_90a */
        case 9: s.trainable_aux = tr, s.num_trainable_aux = 1; break;
        case 10: s.sw_exp2_percent = 25; break;
        case 11: s.rescale_threshold = 8.0f; break;
        case 12: s.flags = FA4_COMPILE_ALL | FA4_COMPILE_FAST_MATH; break;
        }
        key_of(&s, keys[i]);
        for (int j = 0; j < i; j++)
            if (!strcmp(keys[i], keys[j]))
                fail_msg("variant %d has the same key as variant %d", i, j);
    }
}

static void test_formatting_does_not(void **state)
{
    (void)state;
    fa4_kernel_spec s;
    char a[33], b[33], c[33];
    base_spec(&s);
    key_of(&s, a);
    s.source = MOD_REFORMATTED;
    key_of(&s, b);
    assert_string_equal(a, b);
    s.source_name = "another_name.mod"; /* names only appear in messages */
    key_of(&s, c);
    assert_string_equal(a, c);
    /* a sequence length or batch size is never an input: nothing in the spec carries one */
}

static void test_inputs_text(void **state)
{
    (void)state;
    fa4_kernel_spec s;
    base_spec(&s);
    char key[33], *text = NULL;
    assert_int_equal(fa4__spec_key(ctx, &s, key, &text), FA4_OK);
    int ma = 0, mi = 0;
    fa4_nvrtc_version(&ma, &mi);
    char nv[32];
    snprintf(nv, sizeof nv, "nvrtc=%d.%d\n", ma, mi);
    const char *needles[] = {"fa4jit-key-v1\n", "library=" FA4_VERSION_STRING "\n", nv,
                             "arch=sm_90a\n", "dtype=bf16\n", "head_dim=128\n", "head_dim_v=128\n",
                             "flags=0x7\n", "trainable=\n"};
    for (size_t i = 0; i < sizeof needles / sizeof needles[0]; i++)
        if (!strstr(text, needles[i]))
            fail_msg("key inputs lack '%s':\n%s", needles[i], text);
    char fp[64];
    snprintf(fp, sizeof fp, "fingerprint=%s\n", fa4_kernel_fingerprint());
    assert_non_null(strstr(text, fp));
    /* the mod emitter's sources too: fa4_mod.cuh is in every program */
    const char *em = strstr(text, "emitter=");
    assert_non_null(em);
    assert_int_equal(strspn(em + 8, "0123456789abcdef"), 32);
    char again[33];
    fa4__cache_key(text, strlen(text), again);
    assert_string_equal(key, again);
    free(text);
}

/* FA4JIT_SM90_BWD256_DQ (path_sm90.c, read at each compile): a compile option of the sm90 path's
 * padded-D 256 backward, so part of that key; other specs (D 128, forward only) keep their keys. */
static void test_bwd256_dq_switch(void **state)
{
    (void)state;
    fa4_kernel_spec s;
    char d256[33], d256_tma[33], d256_red[33], d128[33], d128_tma[33], f256[33], f256_tma[33];
    unsetenv("FA4JIT_SM90_BWD256_DQ");
    base_spec(&s);
    key_of(&s, d128);
    s.head_dim = 256;
    key_of(&s, d256);
    s.flags = FA4_COMPILE_FWD;
    key_of(&s, f256);
    setenv("FA4JIT_SM90_BWD256_DQ", "tma", 1);
    base_spec(&s);
    key_of(&s, d128_tma);
    s.head_dim = 256;
    key_of(&s, d256_tma);
    s.flags = FA4_COMPILE_FWD;
    key_of(&s, f256_tma);
    setenv("FA4JIT_SM90_BWD256_DQ", "red", 1);
    base_spec(&s);
    s.head_dim = 256;
    key_of(&s, d256_red);
    unsetenv("FA4JIT_SM90_BWD256_DQ");
    assert_string_equal(d128, d128_tma);
    assert_string_equal(f256, f256_tma);
    assert_string_not_equal(d256, d256_tma);
    assert_string_not_equal(d256_red, d256_tma);
}

/* fa4__kernel_built_with reads the key inputs' "option=" lines: whole options only */
static void test_built_with_reads_whole_option_lines(void **state)
{
    (void)state;
    fa4_kernel k;
    memset(&k, 0, sizeof k);
    assert_false(fa4__kernel_built_with(&k, "-DX=1")); /* no key inputs */
    char text[] = "fa4jit-key\npath=1\noption=-DA=1\noption=-DX=10\noption=-DX=1\nlineinfo=1\n";
    k.key_inputs = text;
    assert_true(fa4__kernel_built_with(&k, "-DX=1"));
    assert_true(fa4__kernel_built_with(&k, "-DA=1"));
    assert_false(fa4__kernel_built_with(&k, "-DX=2"));
    assert_false(fa4__kernel_built_with(&k, "-DA"));   /* a prefix of an option is not it */
    assert_false(fa4__kernel_built_with(&k, "path=1")); /* nor another kind of line */
    char one[] = "option=-DX=10\n";
    k.key_inputs = one;
    assert_false(fa4__kernel_built_with(&k, "-DX=1"));
    /* and the text compile.c writes: a path option read at each compile (FA4JIT_SM90_BWD256_DQ) */
    fa4_kernel_spec s;
    base_spec(&s);
    s.head_dim = 256;
    char key[33], *inputs = NULL;
    setenv("FA4JIT_SM90_BWD256_DQ", "tma", 1);
    fa4_status st = fa4__spec_key(ctx, &s, key, &inputs);
    unsetenv("FA4JIT_SM90_BWD256_DQ");
    assert_int_equal(st, FA4_OK);
    k.key_inputs = inputs;
    assert_true(fa4__kernel_built_with(&k, "-DFA4_SM90_BWD256_DQ_TMA=1"));
    assert_false(fa4__kernel_built_with(&k, "-DFA4_SM90_BWD256_DQ_TMA=0"));
    free(inputs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_input_changes_the_key),
        cmocka_unit_test(test_formatting_does_not),
        cmocka_unit_test(test_inputs_text),
        cmocka_unit_test(test_bwd256_dq_switch),
        cmocka_unit_test(test_built_with_reads_whole_option_lines),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
