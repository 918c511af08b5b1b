/*
 * bwd_main_fx.cu - the sm90 backward main for the deterministic mode with trainable aux tensors:
 * their gradients as fixed-point integer adds (FA4_AUX_FX, the mod header's fa4_aux_grad_global;
 * launch.c lays out the accumulators), so bitwise reproducible. Everything else is bwd_main.cu.
 */
#define FA4_AUX_FX 1
#include "sm90/bwd_main.cu"
