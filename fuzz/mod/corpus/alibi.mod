/* alibi: a per-head linear bias on the distance between key and query.
 * "Train Short, Test Long: Attention with Linear Biases" (Press et al., 2022); the head slopes
 * are usually 2^(-8 (h+1) / H). FlexAttention's alibi example. */
float score_mod(float score, int b, int h, int q_idx, int kv_idx, const float *slopes) {
    return score + slopes[h] * (float)(kv_idx - q_idx);
}
