/*
 * path_shim.c - lets the GPU tests reach the sm90 path before src/jit/compile.c lists it, and lets
 * the portable path's whole GPU suite (tests/gpu/test_sm80.c, unchanged) run against the sm90
 * path. patch_compile.sh makes a copy of compile.c whose fa4__path_for asks fa4__sm90_shim_for():
 *   FA4_PATH_SM90                          -> the sm90 ops
 *   FA4_PATH_SM80 with FA4_SM90_AS_SM80=1  -> the sm90 ops (the sm80 suite then tests sm90)
 * FA4_SM90_EXTRA="-DX=1 -DY=0" appends NVRTC options to the sm90 programs (schedule A/B tests);
 * FA4_SM90_CTAS=n launches the forward with at most n CTAs (0: one CTA per tile, not persistent).
 * Test builds only; the library never contains this file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

extern const fa4__path_ops fa4__sm90_ops;
const fa4__path_ops *fa4__sm90_shim_for(int path);
fa4_status fa4__sm90_launch_fwd_ctas(fa4_kernel *k, const fa4__problem *p, int max_ctas);

static fa4__path_ops shim_ops;

static int shim_options(const fa4_kernel_spec *spec, const char *arch, char opts[][64], int max)
{
    int n = fa4__sm90_ops.options(spec, arch, opts, max);
    const char *e = getenv("FA4_SM90_EXTRA");
    char buf[512];
    if (!e || !e[0])
        return n;
    snprintf(buf, sizeof buf, "%s", e);
    for (char *save = NULL, *t = strtok_r(buf, " ", &save); t && n < max; t = strtok_r(NULL, " ", &save))
        snprintf(opts[n++], 64, "%s", t);
    return n;
}

static fa4_status shim_launch_fwd(fa4_kernel *k, const fa4__problem *p)
{
    const char *e = getenv("FA4_SM90_CTAS");
    if (!e || !e[0])
        return fa4__sm90_ops.launch_fwd(k, p);
    return fa4__sm90_launch_fwd_ctas(k, p, atoi(e));
}

const fa4__path_ops *fa4__sm90_shim_for(int path)
{
    const char *e = getenv("FA4_SM90_AS_SM80");
    if (path == FA4_PATH_SM90 || (path == FA4_PATH_SM80 && e && e[0] == '1')) {
        shim_ops = fa4__sm90_ops;
        shim_ops.options = shim_options;
        shim_ops.launch_fwd = shim_launch_fwd;
        return &shim_ops;
    }
    return NULL;
}
