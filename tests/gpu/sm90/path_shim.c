/*
 * path_shim.c - lets the GPU tests reach the sm90 path before src/jit/compile.c lists it, and lets
 * the portable path's whole GPU suite (tests/gpu/test_sm80.c, unchanged) run against the sm90
 * path. build.sh compiles a copy of compile.c whose fa4__path_for asks fa4__sm90_shim_for() first:
 *   FA4_PATH_SM90                          -> fa4__sm90_ops
 *   FA4_PATH_SM80 with FA4_SM90_AS_SM80=1  -> fa4__sm90_ops (the sm80 suite then tests sm90)
 * Test builds only; the library never contains this file.
 */
#include <stdlib.h>

#include "internal.h"

extern const fa4__path_ops fa4__sm90_ops;
const fa4__path_ops *fa4__sm90_shim_for(int path);

const fa4__path_ops *fa4__sm90_shim_for(int path)
{
    const char *e = getenv("FA4_SM90_AS_SM80");
    if (path == FA4_PATH_SM90 || (path == FA4_PATH_SM80 && e && e[0] == '1'))
        return &fa4__sm90_ops;
    return NULL;
}
