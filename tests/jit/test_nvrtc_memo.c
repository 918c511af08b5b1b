/*
 * test_nvrtc_memo.c - the test runs' NVRTC memo (compiler.c, FA4JIT_TEST_NVRTC_MEMO): every test
 * that builds kernels trusts it to hand back what NVRTC would, so its key must change with every
 * byte NVRTC reads. Here: a program compiled twice is taken from the memo the second time with the
 * same cubin and ptxas report; a change to an included header (directly or through another) or to
 * an option is a miss; a change to a header nothing includes is a hit; a program that includes by
 * macro or names a file that is none of ours counts every header; a failed compile leaves nothing.
 * Runs with the helper where ctest sets FA4JIT_TEST_NVRTC_HELPER, in-process otherwise. Skips
 * where NVRTC cannot be loaded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "compiler.h"

static char dir[64];

/* The headers every program may read: a.cuh includes b.cuh; c.cuh is included by no one. */
static const char *names[] = {"sub/a.cuh", "sub/b.cuh", "c.cuh"};
static const char *srcs[3];

static const char MAIN[] = "#include \"sub/a.cuh\"\n"
                           "extern \"C\" __global__ void k(int *o) { o[threadIdx.x] = A + B; }\n";

typedef struct outcome {
    fa4_status st;
    int hit;                 /* the memo served it */
    uint8_t *cubin;
    size_t size;
    int registers;
} outcome;

static int lines(const char *what)
{
    char path[128], line[256];
    snprintf(path, sizeof path, "%s/memo.log", dir);
    FILE *f = fopen(path, "r");
    int n = 0;
    while (f && fgets(line, sizeof line, f))
        n += !strncmp(line, what, strlen(what));
    if (f)
        fclose(f);
    return n;
}

static outcome run(const char *main_src, const char *opt)
{
    fa4__nvrtc_job job;
    memset(&job, 0, sizeof job);
    job.name = "k";
    job.main_name = "main.cu";
    job.main_src = main_src;
    job.header_src = srcs;
    job.header_names = names;
    job.num_headers = 3;
    job.function = "k";
    job.opts[job.num_opts++] = "--gpu-architecture=sm_80";
    job.opts[job.num_opts++] = "--ptxas-options=-v";
    if (opt)
        job.opts[job.num_opts++] = opt;
    const int hits = lines("hit");
    outcome o = {fa4__nvrtc_run(&job, 1), 0, NULL, 0, job.info.registers};
    if (o.st == FA4_ERR_NVRTC_UNAVAILABLE) {
        fa4__nvrtc_job_release(&job);
        skip();
    }
    o.hit = lines("hit") > hits;
    if (job.cubin) {
        o.cubin = job.cubin;
        o.size = job.cubin_size;
        job.cubin = NULL;
    }
    fa4__nvrtc_job_release(&job);
    return o;
}

static int same(const outcome *a, const outcome *b)
{
    return a->size == b->size && a->size && !memcmp(a->cubin, b->cubin, a->size);
}

static void set_headers(const char *b_val, const char *c_text)
{
    static char b[64];
    snprintf(b, sizeof b, "#define B %s\n", b_val);
    srcs[0] = "#pragma once\n#include \"sub/b.cuh\"\n#define A 1\n";
    srcs[1] = b;
    srcs[2] = c_text;
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/fa4-memo-test.XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    return setenv("FA4JIT_TEST_NVRTC_MEMO", dir, 1);
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void memo_hits_and_misses(void **state)
{
    (void)state;
    set_headers("2", "#define C 1\n");
    outcome first = run(MAIN, NULL);
    assert_int_equal(first.st, FA4_OK);
    assert_false(first.hit);
    assert_true(first.registers > 0);
    /* the same bytes again: the memo's cubin and report */
    outcome again = run(MAIN, NULL);
    assert_int_equal(again.st, FA4_OK);
    assert_true(again.hit);
    assert_true(same(&first, &again));
    assert_int_equal(again.registers, first.registers);
    /* a header nothing includes: still a hit */
    set_headers("2", "#define C 2\n");
    outcome unread = run(MAIN, NULL);
    assert_true(unread.hit);
    /* a header included through another: a miss, and another cubin */
    set_headers("7", "#define C 2\n");
    outcome changed = run(MAIN, NULL);
    assert_int_equal(changed.st, FA4_OK);
    assert_false(changed.hit);
    assert_false(same(&first, &changed));
    /* an option: a miss */
    outcome opt = run(MAIN, "-DUNUSED=1");
    assert_false(opt.hit);
    /* an include by macro or of a file that is none of ours counts every header, the unread one
     * too */
    static const char BY_MACRO[] = "#define H \"sub/a.cuh\"\n#include H\n"
                                   "extern \"C\" __global__ void k(int *o) { o[0] = A + B; }\n";
    static const char FOREIGN[] = "#include \"sub/a.cuh\"\n#if 0\n#include \"../x.cuh\"\n#endif\n"
                                  "extern \"C\" __global__ void k(int *o) { o[0] = A + B; }\n";
    const char *progs[] = {BY_MACRO, FOREIGN};
    for (int i = 0; i < 2; i++) {
        set_headers("7", "#define C 2\n");
        outcome a = run(progs[i], NULL);
        assert_int_equal(a.st, FA4_OK);
        assert_true(run(progs[i], NULL).hit);
        set_headers("7", "#define C 3\n");
        outcome b = run(progs[i], NULL);
        assert_false(b.hit);
        free(a.cubin);
        free(b.cubin);
    }
    /* a failed compile leaves no entry: the second one fails (and compiles) again */
    outcome bad = run("extern \"C\" __global__ void k(int *o) { o[0] = nope; }\n", NULL);
    assert_int_equal(bad.st, FA4_ERR_NVRTC);
    outcome bad2 = run("extern \"C\" __global__ void k(int *o) { o[0] = nope; }\n", NULL);
    assert_int_equal(bad2.st, FA4_ERR_NVRTC);
    assert_false(bad2.hit);
    free(first.cubin);
    free(again.cubin);
    free(unread.cubin);
    free(changed.cubin);
    free(opt.cubin);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(memo_hits_and_misses, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
