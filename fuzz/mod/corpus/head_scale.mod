/* head_scale: a learnable per-head temperature stored in half precision, applied to the scaled
 * score before the softmax: score * exp(log_temp[h]). As in learnable-temperature attention
 * (e.g. "Query-Key Normalization for Transformers", Henry et al., 2020, which learns the softmax
 * scale); the exp keeps the temperature positive. Trainable. */
float score_mod(float score, int b, int h, int q_idx, int kv_idx, const half *log_temp) {
    return score * expf(log_temp[h]);
}
