/*
 * mask.cuh - the mask stage: whether (q_idx, kv_idx) may attend. Positions outside the sequence are
 * always masked (and the mods are never called there, so checked builds do not trap on them);
 * mask_mod runs on partial and dense tiles, never on full blocks of a block mask. The mods see
 * indices inside the sequence plus the global offsets given at launch.
 */
#ifndef FA4_SM80_MASK_CUH
#define FA4_SM80_MASK_CUH

__device__ __forceinline__ bool fa4_allowed(const fa4_params &p, const fa4_aux &aux, int b, int h,
                                            int qi, int ki, int len_q, int len_k, bool full)
{
    if (qi >= len_q || ki >= len_k)
        return false;
#if FA4_HAS_MASK_MOD
    if (!full)
        return fa4_mask_mod(b, h, (int)(qi + p.q_offset), (int)(ki + p.kv_offset), aux);
#endif
    return true;
}

/* Checked builds of kernels that define FA4_CHECKED_DEFERRED before the mod header: an
 * out-of-range aux read only set a flag; each thread calls this once at its end, and traps there
 * if the flag is set. (The header without a mod, which has no aux to read, has no flag.) */
__device__ __forceinline__ void fa4_checked_finish(void)
{
#if defined(FA4_CHECKED) && FA4_CHECKED && defined(FA4_CHECKED_DEFERRED) && FA4_CHECKED_DEFERRED && FA4_NUM_AUX > 0
    fa4_mod_checked_finish();
#endif
}

#endif /* FA4_SM80_MASK_CUH */
