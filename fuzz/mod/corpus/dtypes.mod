/* Test mod: one aux tensor of every element type, plus float/int/bool scalars, so the emitted
 * loads (bf16 bit shift, half cvt.f32.f16, int64 truncation, bool) are compiled and evaluated. */
float score_mod(float score, int b, int h, int q_idx, int kv_idx, const float *f32,
                const half *f16, const bf16 *b16, const int8 *i8, const uint8 *u8,
                const int16 *i16, const int32 *i32, const int64 *i64, const bool *flags,
                float fs, int is, bool bs) {
    float s = score * f32[h] + f16[q_idx] - b16[kv_idx];
    int k = i8[h] + u8[b] + i16[q_idx] + i32[kv_idx] + i64[h];
    if (flags[kv_idx] && bs) {
        s = s + fs;
    }
    return s + (float)(k + is);
}

bool mask_mod(int b, int h, int q_idx, int kv_idx, const bool *flags, int is) {
    return !flags[q_idx] || kv_idx <= q_idx + is;
}
