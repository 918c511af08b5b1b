/* softcap_causal: tanh soft-capping together with the causal mask, as a decoder like Gemma 2
 * uses it (Gemma Team, 2024). */
float score_mod(float score, int b, int h, int q_idx, int kv_idx, float cap) {
    return cap * tanhf(score / cap);
}

bool mask_mod(int b, int h, int q_idx, int kv_idx) {
    return q_idx >= kv_idx;
}
