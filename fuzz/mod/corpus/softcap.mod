/* softcap: tanh soft-capping of the logits, cap * tanh(score / cap), which keeps them in
 * (-cap, cap). Gemma 2 (Gemma Team, 2024; cap 50) and Grok-1 (cap 30); FlexAttention's
 * tanh_softcap example. */
float score_mod(float score, int b, int h, int q_idx, int kv_idx, float cap) {
    return cap * tanhf(score / cap);
}
