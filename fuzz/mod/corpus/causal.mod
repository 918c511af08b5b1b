/* causal: each query attends to itself and to earlier keys only.
 * The decoder mask of "Attention Is All You Need" (Vaswani et al., 2017); FlexAttention's
 * causal_mask. */
bool mask_mod(int b, int h, int q_idx, int kv_idx) {
    return q_idx >= kv_idx;
}
