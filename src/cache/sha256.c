/*
 * sha256.c - SHA-256 and HMAC-SHA256, written from FIPS 180-4 section 6.2 and RFC 2104. The cache
 * signs whole entries with it, so only the streaming interface and one HMAC call are needed.
 */
#include "cache/sha256.h"

#include <string.h>

static const uint32_t round_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t rotr(uint32_t x, int n)
{
    return (x >> n) | (x << (32 - n));
}

static void compress(uint32_t h[8], const uint8_t block[64])
{
    uint32_t w[64];
    for (int t = 0; t < 16; t++)
        w[t] = (uint32_t)block[4 * t] << 24 | (uint32_t)block[4 * t + 1] << 16 |
               (uint32_t)block[4 * t + 2] << 8 | (uint32_t)block[4 * t + 3];
    for (int t = 16; t < 64; t++) {
        uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
        uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
        w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int t = 0; t < 64; t++) {
        uint32_t t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) +
                      round_k[t] + w[t];
        uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        hh = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += hh;
}

void fa4__sha256_init(fa4__sha256_ctx *s)
{
    static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, iv, sizeof iv);
    s->total = 0;
    s->used = 0;
}

void fa4__sha256_update(fa4__sha256_ctx *s, const void *data, size_t len)
{
    const uint8_t *p = data;
    if (len == 0)
        return;
    s->total += len;
    if (s->used > 0) {
        size_t take = 64 - s->used < len ? 64 - s->used : len;
        memcpy(s->buf + s->used, p, take);
        s->used += take;
        p += take;
        len -= take;
        if (s->used < 64)
            return;
        compress(s->h, s->buf);
        s->used = 0;
    }
    while (len >= 64) {
        compress(s->h, p);
        p += 64;
        len -= 64;
    }
    memcpy(s->buf, p, len);
    s->used = len;
}

void fa4__sha256_final(fa4__sha256_ctx *s, uint8_t out[32])
{
    uint64_t bits = s->total * 8;
    s->buf[s->used++] = 0x80;
    if (s->used > 56) {
        memset(s->buf + s->used, 0, 64 - s->used);
        compress(s->h, s->buf);
        s->used = 0;
    }
    memset(s->buf + s->used, 0, 56 - s->used);
    for (int i = 0; i < 8; i++)
        s->buf[56 + i] = (uint8_t)(bits >> (56 - 8 * i));
    compress(s->h, s->buf);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)(s->h[i] >> 24);
        out[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
        out[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
        out[4 * i + 3] = (uint8_t)s->h[i];
    }
    memset(s, 0, sizeof *s);
}

void fa4__sha256(const void *data, size_t len, uint8_t out[32])
{
    fa4__sha256_ctx s;
    fa4__sha256_init(&s);
    fa4__sha256_update(&s, data, len);
    fa4__sha256_final(&s, out);
}

void fa4__hmac_sha256(const uint8_t *key, size_t key_len, const void *data, size_t len,
                      uint8_t out[32])
{
    uint8_t k0[64] = {0}, pad[64], inner[32];
    /* RFC 2104: keys longer than the block are hashed first, shorter ones zero-padded */
    if (key_len > 64)
        fa4__sha256(key, key_len, k0);
    else if (key_len > 0)
        memcpy(k0, key, key_len);

    fa4__sha256_ctx s;
    for (int i = 0; i < 64; i++)
        pad[i] = k0[i] ^ 0x36;
    fa4__sha256_init(&s);
    fa4__sha256_update(&s, pad, 64);
    fa4__sha256_update(&s, data, len);
    fa4__sha256_final(&s, inner);

    for (int i = 0; i < 64; i++)
        pad[i] = k0[i] ^ 0x5c;
    fa4__sha256_init(&s);
    fa4__sha256_update(&s, pad, 64);
    fa4__sha256_update(&s, inner, 32);
    fa4__sha256_final(&s, out);
    memset(k0, 0, sizeof k0);
    memset(pad, 0, sizeof pad);
}

int fa4__ct_equal(const uint8_t *a, const uint8_t *b, size_t n)
{
    uint8_t diff = 0;
    for (size_t i = 0; i < n; i++)
        diff |= a[i] ^ b[i];
    return diff == 0;
}
