/* Test mod: branches, casts, integer sub-expressions, helpers with float arguments, locals,
 * compound assignment, ternaries and logic. Used by the derivative and NVRTC tests. */
float smooth(float x, float k) {
    if (x > k) {
        return k + logf(1.0f + x - k);
    } else if (x < -k) {
        return -k - logf(1.0f - x - k);
    }
    return x;
}

int bucket(int d) {
    int s = d < 0 ? -1 : 1;
    return s * min(abs(d) / 3, 5) + (d << 1 >> 1) % 7;
}

float score_mod(float score, int b, int h, int q_idx, int kv_idx, const float *w, int n) {
    float y = smooth(score, 2.0f);
    int k = bucket(kv_idx - q_idx) + n;
    y += w[h] * (float)k;
    y *= 1.0f + 0.125f * (float)(b % 3);
    if (!(q_idx >= kv_idx) || (k & 1) == 1) {
        y = y - 0.5f * score;
    }
    float t = (int)(score * 4.0f) > 2 ? y * y * 0.1f : y / 3.0f;
    bool flip = (float)h * 0.5f > 1.0f && kv_idx != 0;
    t = flip ? -t : t;
    y -= (float)(int)score;
    return t + y + (float)((int)flip + (int)true);
}

bool mask_mod(int b, int h, int q_idx, int kv_idx, int n) {
    return (q_idx ^ kv_idx) >= 0 && (q_idx - kv_idx) / 2 < n * 100;
}
