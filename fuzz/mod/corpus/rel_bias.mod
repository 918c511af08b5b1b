/* rel_bias: a learnable relative positional bias, one value per head and clipped distance
 * kv_idx - q_idx in [-max_dist, max_dist]; the table has H * (2 * max_dist + 1) entries and is
 * meant to be trainable (its gradient is accumulated by the backward).
 * Shaw et al., "Self-Attention with Relative Position Representations" (2018), in the scalar
 * bias form of FlexAttention's relative_positional example. */
float score_mod(float score, int b, int h, int q_idx, int kv_idx, const float *bias,
                int max_dist) {
    const int span = 2 * max_dist + 1;
    int rel = clamp(kv_idx - q_idx, -max_dist, max_dist);
    return score + bias[h * span + rel + max_dist];
}
