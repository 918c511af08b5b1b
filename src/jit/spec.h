/*
 * spec.h - a kernel spec as text, stored in every cache entry (blob "spec") so that
 * `fa4jit cache verify --recompile` can compile an entry again and compare the cubins.
 * Format: "key=value" lines (dtype, head_dim, head_dim_v, arch, flags, path, trainable,
 * sw_exp2_percent, rescale_threshold, source_name), then a line "source=<length>" followed by
 * exactly that many bytes of mod source.
 */
#ifndef FA4_JIT_SPEC_H
#define FA4_JIT_SPEC_H

#include <stddef.h>

#include "fa4jit.h"

/* Malloc'd text, NUL-terminated; NULL when out of memory. arch is the resolved architecture. */
char *fa4__spec_serialize(const fa4_kernel_spec *spec, const char *arch, size_t *len);

/* Parse text back; the spec's strings point into *storage (free it with fa4__spec_storage_free).
 * Returns FA4_OK or FA4_ERR_INVALID_ARGUMENT for malformed text. */
typedef struct fa4__spec_storage fa4__spec_storage;
fa4_status fa4__spec_deserialize(const char *text, size_t len, fa4_kernel_spec *spec,
                                 fa4__spec_storage **storage);
void fa4__spec_storage_free(fa4__spec_storage *storage);

#endif /* FA4_JIT_SPEC_H */
