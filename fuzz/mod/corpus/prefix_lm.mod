/* prefix_lm: the first prefix_len[b] tokens of each sequence attend to each other in both
 * directions; the rest is causal. The prefix language model of T5 / UniLM (Raffel et al., 2020;
 * Dong et al., 2019); FlexAttention's prefix_lm_causal example with a per-batch prefix length. */
bool mask_mod(int b, int h, int q_idx, int kv_idx, const int32 *prefix_len) {
    return kv_idx < prefix_len[b] || q_idx >= kv_idx;
}
