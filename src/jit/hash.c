/*
 * hash.c - the only place xxHash is compiled (header-only, inlined), so that libfa4jit needs no
 * libxxhash at run time: the GPU machines and users' machines may not have it.
 */
#include "hash.h"

#include <stdlib.h>

#define XXH_INLINE_ALL
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

struct fa4__hasher {
    XXH3_state_t *state;
};

void fa4__hex(const uint8_t *bytes, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[bytes[i] >> 4];
        out[2 * i + 1] = digits[bytes[i] & 15];
    }
    out[2 * n] = '\0';
}

void fa4__hash128(const void *data, size_t len, uint8_t out[16])
{
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(data, len));
    for (int i = 0; i < 16; i++)
        out[i] = c.digest[i];
}

void fa4__hash128_hex(const void *data, size_t len, char out[33])
{
    uint8_t h[16];
    fa4__hash128(data, len, h);
    fa4__hex(h, 16, out);
}

fa4__hasher *fa4__hasher_new(void)
{
    fa4__hasher *h = malloc(sizeof *h);
    if (!h)
        return NULL;
    h->state = XXH3_createState();
    if (!h->state) {
        free(h);
        return NULL;
    }
    XXH3_128bits_reset(h->state);
    return h;
}

void fa4__hasher_update(fa4__hasher *h, const void *data, size_t len)
{
    XXH3_128bits_update(h->state, data, len);
}

void fa4__hasher_digest(const fa4__hasher *h, uint8_t out[16])
{
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits_digest(h->state));
    for (int i = 0; i < 16; i++)
        out[i] = c.digest[i];
}

void fa4__hasher_free(fa4__hasher *h)
{
    if (!h)
        return;
    XXH3_freeState(h->state);
    free(h);
}
