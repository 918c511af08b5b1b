/*
 * params_fill.h - the validated problem (internal.h) as the kernels' params (common/params.h).
 */
#ifndef FA4_JIT_PARAMS_FILL_H
#define FA4_JIT_PARAMS_FILL_H

#include "internal.h"
#include "params.h"

/* Fill every field of pr that the problem decides (views, sizes, varlen, offsets, block-mask
 * lists, determinism); path-specific fields (tiles, workspace pointers) are left zero. */
void fa4__params_fill(fa4_params *pr, const fa4__problem *p);

#endif /* FA4_JIT_PARAMS_FILL_H */
