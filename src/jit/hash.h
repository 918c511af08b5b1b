/*
 * hash.h - XXH3-128 for cache keys, entry checksums, the mod token hash and the kernel fingerprint.
 * One wrapper so that xxHash is compiled in (XXH_INLINE_ALL) in one place and the library carries
 * no run-time dependency on libxxhash.
 */
#ifndef FA4_JIT_HASH_H
#define FA4_JIT_HASH_H

#include <stddef.h>
#include <stdint.h>

/* XXH3-128 of data in canonical (big-endian) byte order. */
void fa4__hash128(const void *data, size_t len, uint8_t out[16]);
/* The same as 32 lower-case hex digits and a NUL. */
void fa4__hash128_hex(const void *data, size_t len, char out[33]);
void fa4__hex(const uint8_t *bytes, size_t n, char *out); /* 2n digits + NUL */

/* Streaming form. fa4__hasher_new returns NULL when out of memory. */
typedef struct fa4__hasher fa4__hasher;
fa4__hasher *fa4__hasher_new(void);
void fa4__hasher_update(fa4__hasher *h, const void *data, size_t len);
void fa4__hasher_digest(const fa4__hasher *h, uint8_t out[16]);
void fa4__hasher_free(fa4__hasher *h);

#endif /* FA4_JIT_HASH_H */
