/*
 * bwd_main80.cu - the bwd_main90m80 program: the sm90 backward main (bwd_main.cu) with 80-query
 * steps (FA4_SM90_BWD_BM 80; bwd_config.cuh, bwd_consumer.cuh). The launcher (path_sm90.c) compiles
 * it only where it applies (padded D = Dv = 128, no score_mod, not checked; where a mod's build
 * spills, its fallback is a stub, FA4_SM90_BWD80_OFF) and runs it for dense calls without a
 * mask_mod and block-masked ones through the step table of bwd_steps80.cuh (launched before it;
 * session 9), deterministic ones too (block masks with the turn byte of fa4_sm90_bwd_turns80 where
 * path_sm90.c bwd80_table_bytes allows; session 18); everything else runs bwd_main90 (64-query
 * steps).
 * Why 80: the S^T, dP^T wgmmas become m64n80 (their fixed cost per step spread over 25% more
 * queries, and fewer shared-memory operand bytes per FLOP), dQ is swapped (dQ^T = K^T dS^T,
 * m64n80), dV, dK take k = 80 (5 RS wgmmas each); 2 stages of Q / dO fit the 227 KB.
 */
#define FA4_SM90_BWD_BM 80
#include "sm90/bwd_main.cu"
