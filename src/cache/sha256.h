/*
 * sha256.h - SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104) for authenticated cache entries
 * (CACHE.md G11). Small and dependency-free; checked against the FIPS and RFC 4231 vectors in
 * tests/cache/test_cache_hmac.c. Not constant-time against cache-timing attackers on the same core;
 * it only has to resist someone who can write the cache directory.
 */
#ifndef FA4_CACHE_SHA256_H
#define FA4_CACHE_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct fa4__sha256 {
    uint32_t h[8];
    uint64_t total;   /* bytes hashed so far */
    uint8_t buf[64];
    size_t used;      /* bytes waiting in buf */
} fa4__sha256_ctx;

void fa4__sha256_init(fa4__sha256_ctx *s);
void fa4__sha256_update(fa4__sha256_ctx *s, const void *data, size_t len);
void fa4__sha256_final(fa4__sha256_ctx *s, uint8_t out[32]);
void fa4__sha256(const void *data, size_t len, uint8_t out[32]);

void fa4__hmac_sha256(const uint8_t *key, size_t key_len, const void *data, size_t len,
                      uint8_t out[32]);

/* Compare n bytes without an early exit; 1 when equal. */
int fa4__ct_equal(const uint8_t *a, const uint8_t *b, size_t n);

#endif /* FA4_CACHE_SHA256_H */
