/* dilated_window: a causal window with gaps: a query sees every dilation-th earlier key, up to
 * `window` of them. The dilated sliding window of Longformer (Beltagy et al., 2020), as in
 * sparse-transformer strided patterns (Child et al., 2019). */
bool mask_mod(int b, int h, int q_idx, int kv_idx, int window, int dilation) {
    int dist = q_idx - kv_idx;
    return dist >= 0 && dist % dilation == 0 && dist / dilation < window;
}
