/* block_diagonal: local attention within fixed blocks of `block` tokens (queries and keys in the
 * same block attend to each other, in both directions). Blockwise local attention
 * (Qiu et al., "Blockwise Self-Attention for Long Document Understanding", 2019) and the
 * local component of Sparse Transformers (Child et al., 2019). */
bool mask_mod(int b, int h, int q_idx, int kv_idx, int block) {
    return q_idx / block == kv_idx / block;
}
