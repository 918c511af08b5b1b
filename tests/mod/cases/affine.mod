/* Test mod: a score_mod affine in the positions and the score, for the affine form
 * (emit_affine.c): int parts built by + - and a multiply by a position-free int (a scalar aux,
 * the head), (float) of them, float + - unary minus, multiplies by position-free factors (an aux
 * read, expf of a scalar), a division by a position-free divisor, the score scaled, locals on the
 * way. test_mod_host checks the form against the evaluator wherever fa4_score_mod_affine takes a
 * box; where the scalars push an int part past +-2^24 or a number is not finite it must decline. */
float score_mod(float score, int b, int h, int q_idx, int kv_idx, const float *slopes, int stride,
                float t) {
    const int rel = (kv_idx - q_idx) * stride - 3 * q_idx + h;
    const float base = slopes[h] * (float)(kv_idx - q_idx);
    const float s2 = score * expf(t) / 2.0f;
    return s2 - base / t + (float)rel * 0.125f - (-(float)kv_idx * slopes[b]) + slopes[h + 1];
}
