/* causal_sliding_window: causal attention limited to the last `window` keys (the query
 * included). Mistral 7B's sliding-window attention (Jiang et al., 2023); FlexAttention's
 * sliding_window_causal example. */
bool mask_mod(int b, int h, int q_idx, int kv_idx, int window) {
    return q_idx >= kv_idx && q_idx - kv_idx < window;
}
