/* longformer: global tokens plus a sliding window. Tokens flagged in is_global (one bool per
 * position, e.g. [CLS] and question tokens) attend everywhere and are attended by all; the rest
 * see a symmetric window. Longformer (Beltagy et al., 2020), also BigBird's global + window parts
 * (Zaheer et al., 2020). */
bool mask_mod(int b, int h, int q_idx, int kv_idx, const bool *is_global, int window) {
    if (is_global[q_idx] || is_global[kv_idx]) {
        return true;
    }
    return abs(q_idx - kv_idx) <= window;
}
