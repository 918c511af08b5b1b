/* sliding_window: bidirectional local attention; a query sees keys at most `window` positions
 * away on either side. Local attention of Longformer (Beltagy et al., 2020) and of
 * encoder-style "local" layers; FlexAttention's sliding-window example without causality. */
bool mask_mod(int b, int h, int q_idx, int kv_idx, int window) {
    return abs(q_idx - kv_idx) <= window;
}
