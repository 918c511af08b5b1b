/*
 * bwd_main80s.cu - the bwd_main90m80s program: the 80-query backward main (bwd_main80.cu) for GQA
 * split by query head (path_sm90.c bwd_split; params.h kv_split): each CTA walks one query head's
 * steps, loads K and V of its kv head, and adds its dK, dV (fp32, unscaled) into dkv_accum, which
 * bwd_post's fa4_bwd_post_dkv converts. A program of its own so that every other main's code is
 * not touched by the adds (one kernel with both epilogues measured 2-5% slower on attention
 * without groups: H100 2026-12-06 08:58-08:59 UTC, B4 H16 S4096 D128 bwd ms, plain 2.530 / 2.517
 * -> 2.611 / 2.605, causal 1.488 / 1.488 -> 1.525 / 1.509, document B8 1.831 / 1.825 -> 1.925 /
 * 1.929).
 */
#define FA4_SM90_BWD_GQA_PROG 1
#include "sm90/bwd_main80.cu"
