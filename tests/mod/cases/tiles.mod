/* Test mod: index-dependent parts that can be one value over a box of positions, for the tile
 * form (emit_tile.c): a clamped relative position, an abs against a bound, int divisions that
 * quantise, min / max of quotients, comparisons and ?: on the indices, an int table read, a
 * unary minus and a multiply on intervals. test_mod_host checks fa4_score_mod_t against the
 * evaluator wherever fa4_score_mod_tile takes a box. */
float score_mod(float score, int b, int h, int q_idx, int kv_idx, const float *bias, const int32 *tab,
                int d, float c) {
    const int rel = clamp(kv_idx - q_idx, -d, d);
    const int far = abs(kv_idx - q_idx) > 3 * d ? 1 : 0;
    const int blk = min(q_idx / 64, 3) - max(kv_idx / 64, 2);
    const float w = q_idx >= kv_idx ? c : -c;
    const int band = -(q_idx / 100) * 2 / 7;
    return score * (1.0f + 0.25f * (float)far) + bias[h * (2 * d + 1) + rel + d] + w +
           (float)tab[clamp(blk + 4, 0, 7)] * 0.5f + (float)band;
}
