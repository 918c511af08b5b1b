/* Test mod: every math builtin, under both spellings, on the score path (so each has a dual
 * form), with arguments kept inside the functions' domains. Used by the NVRTC and derivative
 * tests; test_mod_eval.c also checks each builtin on its own. */
float pos(float x) {
    return 1.5f + 0.5f * sinf(x);
}

float score_mod(float score, int b, int h, int q_idx, int kv_idx, float t) {
    float x = score * 0.25f;
    float p = pos(x);
    float y = 0.6f + 0.3f * cos(x * 0.7f);
    float a = expf(x) + exp(y) + exp2f(x) + exp2(y) + logf(p) + log(y) + log2f(p) + log2(y);
    a += log1pf(p) + log1p(y) + expm1f(x) + expm1(y) + sqrtf(p) + sqrt(y) + rsqrtf(p) + rsqrt(y);
    float c = tanhf(x) + tanh(y) + sinf(x) + sin(y) + cosf(x) + cos(y) + fabsf(x) + fabs(y);
    c += fminf(x, y) + fmin(y, x) + fmaxf(x, y) + fmax(y, x);
    float d = floorf(x) + floor(y) + ceilf(x) + ceil(y) + roundf(x) + round(y) + truncf(x) + trunc(y);
    float e = powf(p, x) + pow(y, p) + fmodf(score, p) + fmod(x, y) + copysignf(x, y - 0.6f);
    e += copysign(y, x) + erff(x) + erf(y);
    float g = abs(x) + min(x, t) + max(x, -t) + clamp(x, -y, y) + clamp(score, -t, t);
    int k = abs(q_idx - kv_idx) + min(q_idx, kv_idx) - max(b, h) + clamp(q_idx, 0, 7);
    return a + c + d + e + g + (float)k * 0.01f;
}
