/*
 * aux.c - the aux parameter block. A mod's aux parameters become one kernel parameter, struct
 * fa4_aux, whose members follow the declaration order (see mod/mod.h). Its layout is the natural C
 * layout of those members, computed here at run time with libffi so that the host and the
 * NVRTC-compiled kernel agree for any list of types; launch values are checked against the
 * declaration (count, names, kinds, dtypes, sizes) and written into a block of that layout.
 */
#include <ffi.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

fa4_status fa4__aux_layout(fa4_kernel *k)
{
    ffi_type *members[3 * FA4__MOD_MAX_AUX + 2];
    int n = 0;
    int naux = k->mod ? fa4__mod_num_aux(k->mod) : 0;
    for (int i = 0; i < naux; i++) {
        const fa4__aux_decl *d = fa4__mod_aux(k->mod, i);
        if (d->is_tensor) {
            members[n++] = &ffi_type_pointer;
            members[n++] = &ffi_type_sint64;
            if (d->trainable)
                members[n++] = &ffi_type_pointer;
        } else if (d->dtype == FA4_DTYPE_FP32) {
            members[n++] = &ffi_type_float;
        } else if (d->dtype == FA4_DTYPE_INT32) {
            members[n++] = &ffi_type_sint32;
        } else if (d->dtype == FA4_DTYPE_BOOL) {
            members[n++] = &ffi_type_uint8;
        } else {
            return FA4_ERR_INTERNAL;
        }
    }
    if (n == 0)
        members[n++] = &ffi_type_sint32; /* the `int fa4_unused_;` of an empty struct fa4_aux */
    members[n] = NULL;
    ffi_type st;
    memset(&st, 0, sizeof st);
    st.type = FFI_TYPE_STRUCT;
    st.elements = members;
    size_t offsets[3 * FA4__MOD_MAX_AUX + 2];
    if (ffi_get_struct_offsets(FFI_DEFAULT_ABI, &st, offsets) != FFI_OK)
        return FA4_ERR_INTERNAL;
    for (int i = 0; i < n; i++)
        k->aux_offset[i] = offsets[i];
    k->aux_members = n;
    k->aux_size = st.size;
    k->aux_align = st.alignment;
    return FA4_OK;
}

static const char *kind_name(const fa4__aux_decl *d)
{
    static __thread char buf[48];
    if (d->is_tensor)
        snprintf(buf, sizeof buf, "const %s * tensor", fa4_dtype_name(d->dtype));
    else
        snprintf(buf, sizeof buf, "%s scalar",
                 d->dtype == FA4_DTYPE_FP32 ? "float" : d->dtype == FA4_DTYPE_INT32 ? "int" : "bool");
    return buf;
}

fa4_status fa4__aux_fill(fa4_ctx *ctx, const fa4_kernel *k, const fa4_aux_value *aux, int num_aux,
                         int is_bwd, uint8_t *block, size_t block_cap)
{
    int naux = k->mod ? fa4__mod_num_aux(k->mod) : 0;
    if (k->aux_size > block_cap)
        return fa4__set_error(ctx, FA4_ERR_INTERNAL, "aux block of %zu bytes too large", k->aux_size);
    memset(block, 0, k->aux_size);
    if (num_aux != naux)
        return fa4__set_error(ctx, FA4_ERR_AUX,
                              "the mod declares %d aux parameter%s but %d %s given", naux,
                              naux == 1 ? "" : "s", num_aux, num_aux == 1 ? "was" : "were");
    if (naux > 0 && !aux)
        return fa4__set_error(ctx, FA4_ERR_AUX, "aux is NULL but the mod declares %d aux parameters",
                              naux);
    int m = 0;
    for (int i = 0; i < naux; i++) {
        const fa4__aux_decl *d = fa4__mod_aux(k->mod, i);
        const fa4_aux_value *v = &aux[i];
        if (v->name && strcmp(v->name, d->name) != 0)
            return fa4__set_error(ctx, FA4_ERR_AUX,
                                  "aux[%d] is named '%s' but the mod's parameter %d is '%s'", i,
                                  v->name, i, d->name);
        if (d->is_tensor) {
            if (v->dtype != (int32_t)d->dtype)
                return fa4__set_error(ctx, FA4_ERR_AUX,
                                      "aux '%s' is declared %s but was given dtype %s", d->name,
                                      kind_name(d), fa4_dtype_name((fa4_dtype)v->dtype));
            if (!v->data)
                return fa4__set_error(ctx, FA4_ERR_AUX, "aux tensor '%s' has a NULL data pointer",
                                      d->name);
            if (v->numel <= 0)
                return fa4__set_error(ctx, FA4_ERR_AUX,
                                      "aux tensor '%s' has numel %lld; it must hold at least one "
                                      "element",
                                      d->name, (long long)v->numel);
            if (((uintptr_t)v->data) % fa4_dtype_size(d->dtype) != 0)
                return fa4__set_error(ctx, FA4_ERR_ALIGNMENT,
                                      "aux tensor '%s' is not aligned to its %zu-byte elements",
                                      d->name, fa4_dtype_size(d->dtype));
            const void *p = v->data;
            int64_t len = v->numel;
            memcpy(block + k->aux_offset[m++], &p, sizeof p);
            memcpy(block + k->aux_offset[m++], &len, sizeof len);
            if (d->trainable) {
                void *g = is_bwd ? v->grad : NULL;
                if (is_bwd && !g)
                    return fa4__set_error(ctx, FA4_ERR_AUX,
                                          "aux tensor '%s' is trainable: the backward needs its "
                                          "grad buffer (fp32, %lld elements)",
                                          d->name, (long long)v->numel);
                if (g && ((uintptr_t)g) % 4 != 0)
                    return fa4__set_error(ctx, FA4_ERR_ALIGNMENT,
                                          "grad buffer of aux '%s' is not 4-byte aligned", d->name);
                memcpy(block + k->aux_offset[m++], &g, sizeof g);
            }
        } else {
            if (v->dtype != (int32_t)d->dtype)
                return fa4__set_error(ctx, FA4_ERR_AUX,
                                      "aux '%s' is declared %s but was given dtype %s", d->name,
                                      kind_name(d), fa4_dtype_name((fa4_dtype)v->dtype));
            if (d->dtype == FA4_DTYPE_FP32) {
                float f = (float)v->f;
                memcpy(block + k->aux_offset[m++], &f, sizeof f);
            } else if (d->dtype == FA4_DTYPE_INT32) {
                if (v->i < INT32_MIN || v->i > INT32_MAX)
                    return fa4__set_error(ctx, FA4_ERR_AUX,
                                          "aux '%s' is an int scalar but %lld does not fit in 32 "
                                          "bits",
                                          d->name, (long long)v->i);
                int32_t x = (int32_t)v->i;
                memcpy(block + k->aux_offset[m++], &x, sizeof x);
            } else {
                uint8_t b = v->i != 0;
                memcpy(block + k->aux_offset[m++], &b, 1);
            }
        }
    }
    return FA4_OK;
}

int fa4__aux_trainable(const fa4_kernel *k, const uint8_t *block, size_t grad_off[], int64_t numel[],
                       int cap)
{
    int naux = k->mod ? fa4__mod_num_aux(k->mod) : 0, m = 0, n = 0;
    for (int i = 0; i < naux; i++) {
        const fa4__aux_decl *d = fa4__mod_aux(k->mod, i);
        if (!d->is_tensor) {
            m++;
            continue;
        }
        if (d->trainable && n < cap) {
            int64_t len;
            memcpy(&len, block + k->aux_offset[m + 1], sizeof len);
            grad_off[n] = k->aux_offset[m + 2];
            numel[n++] = len;
        }
        m += d->trainable ? 3 : 2;
    }
    return n;
}

int fa4__aux_fx_wanted(const fa4_kernel_spec *spec, const fa4__mod *mod)
{
    (void)mod;
    return spec->num_trainable_aux > 0 && (spec->flags & FA4_COMPILE_DETERMINISTIC);
}
