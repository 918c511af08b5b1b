/* t5_bias: T5's bucketed relative position bias (Raffel et al., "Exploring the Limits of Transfer
 * Learning with a Unified Text-to-Text Transformer", 2020; bidirectional buckets). Half of the
 * buckets are exact small distances, the rest grow logarithmically up to max_distance; the table
 * has H * num_buckets learnable entries. */
int t5_bucket(int rel, int num_buckets, int max_distance) {
    int half_buckets = num_buckets / 2;
    int bucket = 0;
    if (rel > 0) {
        bucket = half_buckets;
    }
    int n = abs(rel);
    int max_exact = half_buckets / 2;
    if (n < max_exact) {
        return bucket + n;
    }
    float scaled = logf((float)n / (float)max_exact) / logf((float)max_distance / (float)max_exact);
    int large = max_exact + (int)(scaled * (float)(half_buckets - max_exact));
    return bucket + min(large, half_buckets - 1);
}

float score_mod(float score, int b, int h, int q_idx, int kv_idx, const float *bias,
                int num_buckets, int max_distance) {
    return score + bias[h * num_buckets + t5_bucket(kv_idx - q_idx, num_buckets, max_distance)];
}
