/* attention_sink: causal attention to the first num_sink tokens (the "attention sinks") plus a
 * window of recent keys. StreamingLLM (Xiao et al., "Efficient Streaming Language Models with
 * Attention Sinks", 2023). */
bool mask_mod(int b, int h, int q_idx, int kv_idx, int num_sink, int window) {
    return q_idx >= kv_idx && (kv_idx < num_sink || q_idx - kv_idx < window);
}
