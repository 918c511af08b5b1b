/* document: packed sequences; a token attends only to tokens of its own document, given a
 * document id per token position (causal within the document). The document / packed-sequence
 * masking of FlexAttention's examples (sequence packing as in Krell et al., 2021). */
bool mask_mod(int b, int h, int q_idx, int kv_idx, const int32 *doc_id) {
    return doc_id[q_idx] == doc_id[kv_idx] && q_idx >= kv_idx;
}
