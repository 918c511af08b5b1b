/*
 * test_api.c - the public API without a GPU: statuses and their table, versions, dtypes, misuse
 * (NULL handles, wrong struct_size, destroyed handles) returning codes, spec checking, deviceless
 * compiles of real kernels for sm_90a and sm_80 through NVRTC with the resource report as a guard
 * (no spills, no serialized wgmma), the in-process table, errors at the user's line and column,
 * and the generated-source and cubin queries.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "compiler.h"
#include "fa4jit.h"
#include "internal.h"

static const char *ALIBI =
    "float score_mod(float score, int b, int h, int q_idx, int kv_idx, const float *slopes) {\n"
    "    return score + slopes[h] * (float)(kv_idx - q_idx);\n"
    "}\n";

static fa4_ctx *deviceless(void)
{
    fa4_ctx_options o;
    fa4_ctx_options_init(&o);
    o.device = FA4_DEVICE_NONE;
    o.cache_mode = FA4_CACHE_MODE_OFF;
    fa4_ctx *ctx = NULL;
    assert_int_equal(fa4_ctx_create(&o, &ctx), FA4_OK);
    assert_non_null(ctx);
    return ctx;
}

static void test_status_table(void **state)
{
    (void)state;
    for (int s = 0; s < FA4_STATUS_COUNT_; s++) {
        const char *name = fa4_status_name((fa4_status)s);
        const char *msg = fa4_status_message((fa4_status)s);
        assert_non_null(name);
        assert_non_null(msg);
        assert_true(strncmp(name, "FA4_", 4) == 0);
        assert_true(strlen(msg) > 4);
        for (int t = 0; t < s; t++)
            assert_string_not_equal(name, fa4_status_name((fa4_status)t));
    }
    assert_string_equal(fa4_status_name(FA4_OK), "FA4_OK");
    assert_string_equal(fa4_status_name(FA4_ERR_SHAPE), "FA4_ERR_SHAPE");
    assert_string_equal(fa4_status_name((fa4_status)9999), "FA4_UNKNOWN_STATUS");
    assert_string_equal(fa4_status_message((fa4_status)-3), "unknown status");
}

static void test_versions_and_dtypes(void **state)
{
    (void)state;
    assert_int_equal(fa4_version_number(), FA4_VERSION_NUMBER);
    assert_string_equal(fa4_version_string(), FA4_VERSION_STRING);
    assert_true(strlen(fa4_kernel_fingerprint()) >= 16);
    int ma = 0, mi = 0;
    assert_int_equal(fa4_nvrtc_version(&ma, &mi), FA4_OK);
    assert_true(ma >= 12);
    assert_int_equal(fa4_dtype_size(FA4_DTYPE_BF16), 2);
    assert_int_equal(fa4_dtype_size(FA4_DTYPE_INT64), 8);
    assert_int_equal(fa4_dtype_size((fa4_dtype)77), 0);
    assert_string_equal(fa4_dtype_name(FA4_DTYPE_FP16), "fp16");
    assert_string_equal(fa4_dtype_name((fa4_dtype)77), "invalid");
}

static void test_arch_parse(void **state)
{
    (void)state;
    int ma, mi, a;
    assert_int_equal(fa4__arch_parse("sm_90a", &ma, &mi, &a), 0);
    assert_int_equal(ma, 9);
    assert_int_equal(mi, 0);
    assert_int_equal(a, 1);
    assert_int_equal(fa4__arch_parse("sm_80", &ma, &mi, &a), 0);
    assert_int_equal(a, 0);
    assert_int_equal(fa4__arch_parse("sm_100a", &ma, &mi, &a), 0);
    assert_int_equal(ma, 10);
    assert_int_equal(fa4__arch_parse("compute_90", &ma, &mi, &a), -1);
    assert_int_equal(fa4__arch_parse("sm_9", &ma, &mi, &a), -1);
    assert_int_equal(fa4__arch_parse("sm_90ab", &ma, &mi, &a), -1);
    assert_int_equal(fa4__arch_parse(NULL, &ma, &mi, &a), -1);
}

static void test_ctx_misuse(void **state)
{
    (void)state;
    assert_int_equal(fa4_ctx_create(NULL, NULL), FA4_ERR_INVALID_ARGUMENT);
    fa4_ctx_options o;
    fa4_ctx_options_init(&o);
    o.struct_size = 8;
    fa4_ctx *ctx = (fa4_ctx *)0x1;
    assert_int_equal(fa4_ctx_create(&o, &ctx), FA4_ERR_STRUCT_SIZE);
    assert_null(ctx);
    assert_non_null(strstr(fa4_ctx_create_errmsg(), "struct_size"));
    fa4_ctx_options_init(&o);
    o.device = -7;
    assert_int_equal(fa4_ctx_create(&o, &ctx), FA4_ERR_INVALID_ARGUMENT);

    fa4_ctx_destroy(NULL); /* no-op */
    assert_string_equal(fa4_ctx_errmsg(NULL), "NULL or destroyed fa4_ctx");
    assert_int_equal(fa4_ctx_errcode(NULL), FA4_ERR_NULL_HANDLE);
    assert_int_equal(fa4_ctx_error_line(NULL), 0);
    assert_string_equal(fa4_ctx_compile_log(NULL), "");

    ctx = deviceless();
    assert_string_equal(fa4_ctx_arch(ctx), "");
    fa4_ctx_destroy(ctx);
    /* a destroyed handle is recognised without touching its memory */
    fa4_kernel_spec spec;
    fa4_kernel_spec_init(&spec);
    fa4_kernel *k = NULL;
    assert_int_equal(fa4_jit_compile(ctx, &spec, &k), FA4_ERR_NULL_HANDLE);
    assert_int_equal(fa4_spec_check(ctx, &spec), FA4_ERR_NULL_HANDLE);
    assert_int_equal(fa4_ctx_errcode(ctx), FA4_ERR_NULL_HANDLE);
    fa4_ctx_destroy(ctx); /* twice: a no-op */
}

static void test_spec_check(void **state)
{
    (void)state;
    fa4_ctx *ctx = deviceless();
    fa4_kernel_spec spec;
    fa4_kernel_spec_init(&spec);
    spec.arch = "sm_90a";
    assert_int_equal(fa4_spec_check(ctx, &spec), FA4_OK);

    spec.struct_size = 12;
    assert_int_equal(fa4_spec_check(ctx, &spec), FA4_ERR_STRUCT_SIZE);
    assert_non_null(strstr(fa4_ctx_errmsg(ctx), "struct_size"));
    fa4_kernel_spec_init(&spec);
    spec.arch = "sm_90a";
    spec.dtype = FA4_DTYPE_FP32;
    assert_int_equal(fa4_spec_check(ctx, &spec), FA4_ERR_DTYPE);
    assert_non_null(strstr(fa4_ctx_errmsg(ctx), "bf16 or fp16"));
    spec.dtype = FA4_DTYPE_BF16;
    spec.head_dim = 100;
    assert_int_equal(fa4_spec_check(ctx, &spec), FA4_ERR_UNSUPPORTED);
    assert_non_null(strstr(fa4_ctx_errmsg(ctx), "head_dim 100"));
    spec.head_dim = 128;
    spec.head_dim_v = 256;
    assert_int_equal(fa4_spec_check(ctx, &spec), FA4_ERR_UNSUPPORTED);
    spec.head_dim_v = 0;
    spec.arch = "sm_75";
    assert_int_equal(fa4_spec_check(ctx, &spec), FA4_ERR_ARCH);
    assert_non_null(strstr(fa4_ctx_errmsg(ctx), "sm_80"));
    spec.arch = "hopper";
    assert_int_equal(fa4_spec_check(ctx, &spec), FA4_ERR_ARCH);
    spec.arch = NULL; /* deviceless ctx and no arch */
    assert_int_equal(fa4_spec_check(ctx, &spec), FA4_ERR_ARCH);
    assert_non_null(strstr(fa4_ctx_errmsg(ctx), "no device"));
    spec.arch = "sm_80";
    spec.flags = 1u << 20;
    assert_int_equal(fa4_spec_check(ctx, &spec), FA4_ERR_INVALID_ARGUMENT);
    spec.flags = 0;
    spec.path = FA4_PATH_SM90;
    assert_int_equal(fa4_spec_check(ctx, &spec), FA4_ERR_ARCH);
    spec.path = 17;
    assert_int_equal(fa4_spec_check(ctx, &spec), FA4_ERR_INVALID_ARGUMENT);
    spec.path = FA4_PATH_AUTO;

    /* mod errors carry the user's line and column */
    spec.source = "float score_mod(float score, int b, int h, int q_idx, int kv_idx) {\n"
                  "    return score + bogus;\n"
                  "}\n";
    fa4_status st = fa4_spec_check(ctx, &spec);
    assert_true(st == FA4_ERR_MOD_CHECK || st == FA4_ERR_MOD_SYNTAX);
    assert_int_equal(fa4_ctx_error_line(ctx), 2);
    assert_int_equal(fa4_ctx_error_column(ctx), 20);
    assert_non_null(strstr(fa4_ctx_errmsg(ctx), "bogus"));

    /* trainable names are checked */
    spec.source = ALIBI;
    const char *tr[] = {"nope"};
    spec.trainable_aux = tr;
    spec.num_trainable_aux = 1;
    assert_int_equal(fa4_spec_check(ctx, &spec), FA4_ERR_AUX);
    assert_non_null(strstr(fa4_ctx_errmsg(ctx), "nope"));
    spec.num_trainable_aux = 0;
    assert_int_equal(fa4_spec_check(ctx, &spec), FA4_OK);
    assert_string_equal(fa4_ctx_errmsg(ctx), "");
    fa4_ctx_destroy(ctx);
}

/* Compile for real with NVRTC; the resource report guards the kernels. */
static void compile_and_guard(const char *arch, const char *source, int head_dim)
{
    fa4_ctx *ctx = deviceless();
    fa4_kernel_spec spec;
    fa4_kernel_spec_init(&spec);
    spec.arch = arch;
    spec.source = source;
    spec.head_dim = head_dim;
    fa4_kernel *k = NULL;
    fa4_status st = fa4_jit_compile(ctx, &spec, &k);
    if (st != FA4_OK)
        fail_msg("compile %s d%d: %s: %s\n%s", arch, head_dim, fa4_status_name(st),
                 fa4_ctx_errmsg(ctx), fa4_ctx_compile_log(ctx));
    fa4_kernel_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    assert_int_equal(fa4_kernel_get_info(k, &info), FA4_OK);
    assert_int_equal(info.cache_result, FA4_CACHE_MISS);
    assert_int_equal(info.launchable, 0);
    assert_string_equal(info.arch, arch);
    assert_int_equal(strlen(info.key), 32);
    assert_true(info.num_programs >= 4);
    for (int i = 0; i < info.num_programs; i++) {
        const fa4_program_info *p = &info.programs[i];
        /* the path's frame_tolerance (path_sm90.c: bwd_main90 keeps level 0 up to a 192-byte frame) */
        const int spilled = p->spill_stores + p->spill_loads;
        const int tolerated = fa4__frame_tolerance(k->path, p->name);
        if (p->registers <= 0 || (spilled > 0 && p->stack_frame > tolerated) || p->wgmma_serialized)
            fail_msg("%s d%d program %s: %d registers, spills %d/%d, %d serialized wgmma\n%s",
                     arch, head_dim, p->name, p->registers, p->spill_stores, p->spill_loads,
                     p->wgmma_serialized, fa4_ctx_compile_log(ctx));
        assert_true(p->cubin_size > 0);
        size_t n = 0;
        assert_int_equal(fa4_kernel_get_cubin(k, i, NULL, &n), FA4_OK);
        assert_int_equal(n, p->cubin_size);
        unsigned char *buf = malloc(n);
        assert_int_equal(fa4_kernel_get_cubin(k, i, buf, &n), FA4_OK);
        assert_memory_equal(buf, "\x7f" "ELF", 4);
        /* the cubin's own record of the entry (what the spill fallback decides on) agrees with
         * ptxas' report: registers, and a frame exactly where the report has one */
        int frame = -2, regs = -2;
        assert_int_equal(fa4__cubin_resources(buf, n, k->programs[i].function, &frame, &regs), 0);
        assert_int_equal(regs, p->registers);
        assert_true(frame >= 0 && frame <= p->stack_frame && (frame == 0) == (p->stack_frame == 0));
        assert_int_equal(fa4__cubin_resources(buf, n, "no_such_function", &frame, &regs), -1);
        /* what fa4__kernel_function asks before the driver: the entry is there, others are not
         * (a prefix of the entry's name is not the entry), a truncated cubin is not readable */
        assert_int_equal(fa4__cubin_has_function(buf, n, k->programs[i].function), 1);
        assert_int_equal(fa4__cubin_has_function(buf, n, "no_such_function"), 0);
        char prefix[64];
        snprintf(prefix, sizeof prefix, "%.*s", (int)strlen(k->programs[i].function) - 1, k->programs[i].function);
        assert_int_equal(fa4__cubin_has_function(buf, n, prefix), 0);
        assert_int_equal(fa4__cubin_has_function(buf, 40, k->programs[i].function), -1);
        /* the function names fa4__kernel_load keeps: the entry among them, none absent above */
        const char *fns[16];
        const int nf = fa4__cubin_functions(buf, n, fns, 16);
        assert_true(nf >= 1 && nf <= 16);
        int entry = 0;
        for (int j = 0; j < nf; j++) {
            entry |= !strcmp(fns[j], k->programs[i].function);
            assert_int_equal(fa4__cubin_has_function(buf, n, fns[j]), 1);
        }
        assert_true(entry);
        assert_int_equal(fa4__cubin_functions(buf, 40, fns, 16), -1);
        assert_int_equal(fa4__cubin_resources(buf, 40, k->programs[i].function, &frame, &regs), -1);
        assert_int_equal(frame, -1);
        free(buf);
        const char *text = NULL;
        assert_int_equal(fa4_kernel_get_source(k, i, &text), FA4_OK);
        assert_non_null(strstr(text, "fa4_mod.cuh"));
    }
    /* the same spec again: the in-process table shares the kernel */
    fa4_kernel *k2 = NULL;
    assert_int_equal(fa4_jit_compile(ctx, &spec, &k2), FA4_OK);
    assert_ptr_equal(k, k2);
    assert_int_equal(fa4_kernel_get_info(k2, &info), FA4_OK);
    assert_int_equal(info.cache_result, FA4_CACHE_HIT_MEMORY);
    fa4_kernel_destroy(k2);
    assert_int_equal(fa4_kernel_get_info(k, &info), FA4_OK); /* still alive: one ref left */
    fa4_kernel_destroy(k);
    assert_int_equal(fa4_kernel_get_info(k, &info), FA4_ERR_NULL_HANDLE);
    fa4_ctx_destroy(ctx);
}

static void test_compile_sm90a_plain(void **state)
{
    (void)state;
    compile_and_guard("sm_90a", NULL, 128);
}

static void test_compile_sm90a_mod(void **state)
{
    (void)state;
    compile_and_guard("sm_90a", ALIBI, 128);
}

static void test_compile_sm80_mod(void **state)
{
    (void)state;
    compile_and_guard("sm_80", ALIBI, 64);
}

static void test_kernel_queries_misuse(void **state)
{
    (void)state;
    fa4_kernel_info info;
    info.struct_size = sizeof info;
    assert_int_equal(fa4_kernel_get_info(NULL, &info), FA4_ERR_NULL_HANDLE);
    fa4_kernel_destroy(NULL);
    size_t n = 0;
    assert_int_equal(fa4_kernel_get_cubin(NULL, 0, NULL, &n), FA4_ERR_NULL_HANDLE);
    fa4_aux_info ai;
    ai.struct_size = sizeof ai;
    assert_int_equal(fa4_kernel_aux_info(NULL, 0, &ai), FA4_ERR_NULL_HANDLE);
    fa4_fwd_args fa;
    fa4_fwd_args_init(&fa);
    assert_int_equal(fa4_launch_fwd(NULL, &fa), FA4_ERR_NULL_HANDLE);
    fa4_bwd_args ba;
    fa4_bwd_args_init(&ba);
    assert_int_equal(fa4_launch_bwd((fa4_kernel *)&ba, &ba), FA4_ERR_NULL_HANDLE);
    assert_int_equal(fa4_bwd_workspace_size(NULL, &ba, &n), FA4_ERR_NULL_HANDLE);
}

static void test_ptxas_report_parse(void **state)
{
    (void)state;
    const char *log =
        "ptxas info    : 0 bytes gmem\n"
        "ptxas info    : Compiling entry function 'other' for 'sm_90a'\n"
        "ptxas info    : Used 12 registers, used 1 barriers, 64 bytes smem\n"
        "ptxas info    : Compiling entry function 'fa4_fwd' for 'sm_90a'\n"
        "ptxas info    : Function properties for fa4_fwd\n"
        "ptxas         .     16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
        "ptxas info    : Used 168 registers, used 1 barriers, 1024 bytes smem\n"
        "ptxas warning : (C7520) wgmma.mma_async instructions are serialized due to x\n";
    fa4_program_info info;
    memset(&info, 0, sizeof info);
    fa4__ptxas_parse(log, "fa4_fwd", &info);
    assert_int_equal(info.registers, 168);
    assert_int_equal(info.stack_frame, 16);
    assert_int_equal(info.spill_stores, 8);
    assert_int_equal(info.spill_loads, 4);
    assert_int_equal(info.shared_static, 1024);
    assert_int_equal(info.wgmma_serialized, 1);
    memset(&info, 0, sizeof info);
    fa4__ptxas_parse(log, "other", &info);
    assert_int_equal(info.registers, 12);
    assert_int_equal(info.shared_static, 64);
    /* a non-inlined callee's properties follow the entry's "Used" line (NVRTC 13): they add to
     * the entry's, they do not replace them. The log is NVRTC 13's for plain D 128 bf16
     * bwd_main90 at a7e2cbe (bwd_compile_check --no-fallback --verbose): the entry spills in its
     * producer, the turn agent (the callee, listed last) does not, and the last figures of the
     * entry's section are the callee's zeros. */
    const char *call_log =
        "ptxas info    : 184 bytes gmem\n"
        "ptxas info    : Compiling entry function 'fa4_sm90_bwd_main' for 'sm_90a'\n"
        "ptxas info    : Function properties for fa4_sm90_bwd_main\n"
        "ptxas         .     24 bytes stack frame, 28 bytes spill stores, 24 bytes spill loads\n"
        "ptxas info    : Used 168 registers, used 16 barriers, 24 bytes cumulative stack size\n"
        "ptxas info    : Compile time = 546.623 ms\n"
        "ptxas info    : Function properties for _Z18fa4_bwd_turn_agentI12fa4_bwd_smemEvT_i\n"
        "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
        "ptxas info    : Compiling entry function 'fa4_sm90_bwd_rank' for 'sm_90a'\n"
        "ptxas info    : Function properties for fa4_sm90_bwd_rank\n"
        "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
        "ptxas info    : Used 52 registers, used 0 barriers\n"
        "ptxas info    : Compile time = 47.520 ms\n";
    memset(&info, 0, sizeof info);
    fa4__ptxas_parse(call_log, "fa4_sm90_bwd_main", &info);
    assert_int_equal(info.registers, 168);
    assert_int_equal(info.stack_frame, 24);
    assert_int_equal(info.spill_stores, 28);
    assert_int_equal(info.spill_loads, 24);
    /* a spilling callee adds to a clean entry */
    const char *callee_log =
        "ptxas info    : Compiling entry function 'fa4_sm90_bwd_main' for 'sm_90a'\n"
        "ptxas info    : Function properties for fa4_sm90_bwd_main\n"
        "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
        "ptxas info    : Used 168 registers, used 16 barriers\n"
        "ptxas info    : Function properties for _Z18fa4_bwd_turn_agentI12fa4_bwd_smemEvT_i\n"
        "ptxas         .     8 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n";
    memset(&info, 0, sizeof info);
    fa4__ptxas_parse(callee_log, "fa4_sm90_bwd_main", &info);
    assert_int_equal(info.stack_frame, 8);
    assert_int_equal(info.spill_stores, 8);
    assert_int_equal(info.spill_loads, 4);
    /* the next entry's figures are its own */
    memset(&info, 0, sizeof info);
    fa4__ptxas_parse(call_log, "fa4_sm90_bwd_rank", &info);
    assert_int_equal(info.registers, 52);
    assert_int_equal(info.stack_frame, 0);
    assert_int_equal(info.spill_loads, 0);
    assert_int_equal(info.spill_stores, 0);
}

static void test_nvrtc_user_line(void **state)
{
    (void)state;
    /* an error inside the user's mod (named by the #line directives) maps to its line */
    assert_int_equal(fa4__nvrtc_user_line("score_mod(7): error: identifier \"x\" is undefined\n"), 7);
    assert_int_equal(fa4__nvrtc_user_line("warning: a\nmask_mod(3): error: bad\n"), 3);
    /* an error in our own kernel sources is ours, not the user's */
    assert_int_equal(fa4__nvrtc_user_line("sm80/fwd.cu(12): error: bad\n"), 0);
    assert_int_equal(fa4__nvrtc_user_line("common/ptx.cuh(3): error: bad\n"), 0);
    assert_int_equal(fa4__nvrtc_user_line("no errors at all\n"), 0);
    assert_int_equal(fa4__nvrtc_user_line(NULL), 0);
}

static void test_mod_eval(void **state)
{
    (void)state;
    fa4_ctx *ctx = deviceless();
    float slopes[4] = {0.5f, 0.25f, 0.125f, 0.0625f};
    fa4_aux_value aux;
    memset(&aux, 0, sizeof aux);
    aux.dtype = FA4_DTYPE_FP32;
    aux.data = slopes;
    aux.numel = 4;
    double v = 0, dv = 0;
    int32_t ok = -1;
    assert_int_equal(fa4_mod_eval(ctx, ALIBI, 0, 1.5, 0, 1, 10, 4, &aux, 1, &v, &dv, &ok), FA4_OK);
    assert_true(v > 1.5 - 0.25 * 6 - 1e-12 && v < 1.5 - 0.25 * 6 + 1e-12);
    assert_true(dv == 1.0);
    assert_int_equal(ok, 1); /* no mask_mod */
    const char *causal = "bool mask_mod(int b, int h, int q_idx, int kv_idx) { return q_idx >= kv_idx; }";
    assert_int_equal(fa4_mod_eval(ctx, causal, 0, 2.0, 0, 0, 3, 5, NULL, 0, &v, &dv, &ok), FA4_OK);
    assert_int_equal(ok, 0);
    assert_true(v == 2.0 && dv == 1.0);
    /* errors as the compiler reports them, with the position */
    assert_int_not_equal(fa4_mod_eval(ctx, "bool mask_mod(int b, int h, int q_idx, int kv_idx) "
                                           "{ return q_idx >= kvidx; }", 0, 0, 0, 0, 0, 0, NULL,
                                      0, NULL, NULL, NULL), FA4_OK);
    assert_int_equal(fa4_ctx_error_line(ctx), 1);
    assert_non_null(strstr(fa4_ctx_errmsg(ctx), "kvidx"));
    /* aux count mismatch */
    assert_int_equal(fa4_mod_eval(ctx, ALIBI, 0, 1.0, 0, 0, 0, 0, NULL, 0, &v, NULL, NULL),
                     FA4_ERR_AUX);
    assert_int_equal(fa4_mod_eval(NULL, ALIBI, 0, 1.0, 0, 0, 0, 0, NULL, 0, &v, NULL, NULL),
                     FA4_ERR_NULL_HANDLE);
    fa4_ctx_destroy(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_table),
        cmocka_unit_test(test_versions_and_dtypes),
        cmocka_unit_test(test_arch_parse),
        cmocka_unit_test(test_ctx_misuse),
        cmocka_unit_test(test_spec_check),
        cmocka_unit_test(test_kernel_queries_misuse),
        cmocka_unit_test(test_ptxas_report_parse),
        cmocka_unit_test(test_nvrtc_user_line),
        cmocka_unit_test(test_mod_eval),
        cmocka_unit_test(test_compile_sm90a_plain),
        cmocka_unit_test(test_compile_sm90a_mod),
        cmocka_unit_test(test_compile_sm80_mod),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
