/*
 * entry.c - encoding and decoding of the entry format described in entry.h. The decoder is the
 * cache's attack surface (a shared directory may hold anything), so it checks every length against
 * the bytes it was given before using it, in 64-bit arithmetic that cannot overflow, and allocates
 * nothing.
 */
#include "cache/entry.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cache/sha256.h"
#include "hash.h"

static const char *const result_names[FA4__ENTRY_RESULT_COUNT_] = {
    [FA4__ENTRY_OK] = "ok",
    [FA4__ENTRY_TRUNCATED] = "truncated",
    [FA4__ENTRY_BAD_MAGIC] = "bad magic",
    [FA4__ENTRY_BAD_FORMAT] = "unknown format version",
    [FA4__ENTRY_BAD_LAYOUT] = "bad layout",
    [FA4__ENTRY_BAD_CHECKSUM] = "checksum mismatch",
    [FA4__ENTRY_UNSIGNED] = "unsigned (authentication required)",
    [FA4__ENTRY_BAD_HMAC] = "HMAC mismatch",
    [FA4__ENTRY_KEY_MISMATCH] = "key inputs differ",
    [FA4__ENTRY_LIBVER_MISMATCH] = "other library version",
};

const char *fa4__entry_result_name(fa4__entry_result r)
{
    if ((int)r < 0 || r >= FA4__ENTRY_RESULT_COUNT_)
        return "unknown";
    return result_names[r];
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

static uint64_t align16(uint64_t x)
{
    return (x + 15) & ~(uint64_t)15;
}

static int all_zero(const uint8_t *p, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

/* A blob name: 1..31 printable ASCII characters, NUL-padded to 32 bytes. */
static int name_ok(const uint8_t name[32])
{
    int n = 0;
    while (n < 32 && name[n])
        n++;
    if (n == 0 || n == 32)
        return 0;
    for (int i = 0; i < n; i++)
        if (name[i] < 0x21 || name[i] > 0x7e)
            return 0;
    return all_zero(name + n, (uint64_t)(32 - n));
}

fa4__entry_result fa4__entry_decode(const uint8_t *buf, size_t len, const fa4__entry_auth *auth,
                                    fa4__entry_view *out)
{
    memset(out, 0, sizeof *out);
    if (len < 8)
        return len > 0 && memcmp(buf, FA4__ENTRY_MAGIC, len) != 0 ? FA4__ENTRY_BAD_MAGIC
                                                                  : FA4__ENTRY_TRUNCATED;
    if (memcmp(buf, FA4__ENTRY_MAGIC, 8) != 0)
        return FA4__ENTRY_BAD_MAGIC;
    if (len < FA4__ENTRY_HEADER_SIZE)
        return FA4__ENTRY_TRUNCATED;
    uint32_t format = get32(buf + 8), flags = get32(buf + 12), hsize = get32(buf + 16);
    uint32_t libver_len = get32(buf + 20), key_len = get32(buf + 24), nblobs = get32(buf + 28);
    uint64_t payload_len = get64(buf + 32);
    if (format != FA4__ENTRY_FORMAT)
        return FA4__ENTRY_BAD_FORMAT;
    if (hsize != FA4__ENTRY_HEADER_SIZE || (flags & ~FA4__ENTRY_FLAG_HMAC) || libver_len == 0 ||
        libver_len > FA4__ENTRY_MAX_LIBVER || key_len == 0 || key_len > FA4__ENTRY_MAX_KEY_INPUTS ||
        nblobs > FA4__CACHE_MAX_BLOBS || payload_len > (uint64_t)FA4__ENTRY_MAX_FILE)
        return FA4__ENTRY_BAD_LAYOUT;

    /* every quantity below is < 2^31, so the sums cannot overflow 64 bits */
    uint64_t strings_end = FA4__ENTRY_HEADER_SIZE + (uint64_t)libver_len + key_len;
    uint64_t payload = align16(strings_end);
    uint64_t checksum_off = payload + payload_len;
    uint64_t total = checksum_off + FA4__ENTRY_CHECKSUM_SIZE +
                     ((flags & FA4__ENTRY_FLAG_HMAC) ? FA4__ENTRY_HMAC_SIZE : 0);
    if ((uint64_t)len < total)
        return FA4__ENTRY_TRUNCATED;
    if ((uint64_t)len > total)
        return FA4__ENTRY_BAD_LAYOUT;
    uint64_t table_end = payload + (uint64_t)nblobs * FA4__ENTRY_BLOB_RECORD;
    if (table_end > checksum_off)
        return FA4__ENTRY_BAD_LAYOUT;

    /* checksum before the structure: random damage is reported as what it is */
    uint8_t sum[16];
    fa4__hash128(buf, (size_t)checksum_off, sum);
    if (memcmp(sum, buf + checksum_off, 16) != 0)
        return FA4__ENTRY_BAD_CHECKSUM;

    if (!all_zero(buf + strings_end, payload - strings_end))
        return FA4__ENTRY_BAD_LAYOUT;
    uint64_t prev_end = table_end;
    for (uint32_t i = 0; i < nblobs; i++) {
        const uint8_t *rec = buf + payload + (uint64_t)i * FA4__ENTRY_BLOB_RECORD;
        uint64_t off = get64(rec + 32), size = get64(rec + 40);
        if (!name_ok(rec) || off % 16 != 0 || off < align16(prev_end) || off > checksum_off ||
            size > checksum_off - off)
            return FA4__ENTRY_BAD_LAYOUT;
        if (!all_zero(buf + prev_end, off - prev_end))
            return FA4__ENTRY_BAD_LAYOUT;
        for (uint32_t j = 0; j < i; j++)
            if (memcmp(out->blobs[j].name, rec, 32) == 0)
                return FA4__ENTRY_BAD_LAYOUT;
        memcpy(out->blobs[i].name, rec, 32);
        out->blobs[i].data = buf + off;
        out->blobs[i].size = (size_t)size;
        prev_end = off + size;
    }
    if (!all_zero(buf + prev_end, checksum_off - prev_end))
        return FA4__ENTRY_BAD_LAYOUT;

    out->format = format;
    out->flags = flags;
    out->libver = (const char *)buf + FA4__ENTRY_HEADER_SIZE;
    out->libver_len = libver_len;
    out->key_inputs = out->libver + libver_len;
    out->key_inputs_len = key_len;
    out->created = (int64_t)get64(buf + 40);
    out->num_blobs = (int)nblobs;
    out->is_signed = (flags & FA4__ENTRY_FLAG_HMAC) != 0;

    if (auth && auth->key && out->is_signed) {
        uint8_t mac[32];
        uint64_t signed_len = checksum_off + FA4__ENTRY_CHECKSUM_SIZE;
        fa4__hmac_sha256(auth->key, auth->key_len, buf, (size_t)signed_len, mac);
        if (!fa4__ct_equal(mac, buf + signed_len, 32))
            return FA4__ENTRY_BAD_HMAC;
        out->hmac_checked = 1;
    }
    if (auth && auth->require && !out->hmac_checked)
        return out->is_signed ? FA4__ENTRY_BAD_HMAC : FA4__ENTRY_UNSIGNED;
    return FA4__ENTRY_OK;
}

/* Layout of an entry about to be written; 0 in total when a limit is broken. */
typedef struct layout {
    uint64_t payload, table_end, blob_off[FA4__CACHE_MAX_BLOBS], checksum_off, total;
} layout;

static void plan(layout *l, size_t key_len, const fa4__cache_entry *e, size_t libver_len,
                 int signed_)
{
    memset(l, 0, sizeof *l);
    if (key_len == 0 || key_len > FA4__ENTRY_MAX_KEY_INPUTS || libver_len == 0 ||
        libver_len > FA4__ENTRY_MAX_LIBVER || e->num_blobs < 0 || e->num_blobs > FA4__CACHE_MAX_BLOBS)
        return;
    for (int i = 0; i < e->num_blobs; i++) {
        uint8_t name[32] = {0};
        size_t n = strnlen(e->blobs[i].name, sizeof e->blobs[i].name);
        memcpy(name, e->blobs[i].name, n);
        if (!name_ok(name) || (e->blobs[i].size > 0 && !e->blobs[i].data) ||
            e->blobs[i].size > (uint64_t)FA4__ENTRY_MAX_FILE)
            return;
        for (int j = 0; j < i; j++)
            if (strncmp(e->blobs[i].name, e->blobs[j].name, 32) == 0)
                return;
    }
    l->payload = align16(FA4__ENTRY_HEADER_SIZE + (uint64_t)libver_len + key_len);
    l->table_end = l->payload + (uint64_t)e->num_blobs * FA4__ENTRY_BLOB_RECORD;
    uint64_t at = align16(l->table_end);
    for (int i = 0; i < e->num_blobs; i++) {
        l->blob_off[i] = at;
        at = align16(at + e->blobs[i].size);
        if (at > (uint64_t)FA4__ENTRY_MAX_FILE)
            return;
    }
    l->checksum_off = at;
    l->total = at + FA4__ENTRY_CHECKSUM_SIZE + (signed_ ? FA4__ENTRY_HMAC_SIZE : 0);
    if (l->total > (uint64_t)FA4__ENTRY_MAX_FILE)
        l->total = 0;
}

size_t fa4__entry_encoded_size(size_t key_len, const fa4__cache_entry *e, const char *libver,
                               int signed_)
{
    layout l;
    plan(&l, key_len, e, strlen(libver), signed_);
    return (size_t)l.total;
}

int fa4__entry_encode(const char *key_inputs, size_t key_len, const fa4__cache_entry *e,
                      const char *libver, int64_t created, const uint8_t *hmac_key,
                      size_t hmac_key_len, uint8_t **out, size_t *out_len)
{
    layout l;
    size_t libver_len = strlen(libver);
    int signed_ = hmac_key != NULL;
    plan(&l, key_len, e, libver_len, signed_);
    *out = NULL;
    *out_len = 0;
    if (l.total == 0) {
        errno = EINVAL;
        return -1;
    }
    uint8_t *b = calloc(1, (size_t)l.total);
    if (!b) {
        errno = ENOMEM;
        return -1;
    }
    memcpy(b, FA4__ENTRY_MAGIC, 8);
    put32(b + 8, FA4__ENTRY_FORMAT);
    put32(b + 12, signed_ ? FA4__ENTRY_FLAG_HMAC : 0);
    put32(b + 16, FA4__ENTRY_HEADER_SIZE);
    put32(b + 20, (uint32_t)libver_len);
    put32(b + 24, (uint32_t)key_len);
    put32(b + 28, (uint32_t)e->num_blobs);
    put64(b + 32, l.checksum_off - l.payload);
    put64(b + 40, (uint64_t)created);
    memcpy(b + FA4__ENTRY_HEADER_SIZE, libver, libver_len);
    memcpy(b + FA4__ENTRY_HEADER_SIZE + libver_len, key_inputs, key_len);
    for (int i = 0; i < e->num_blobs; i++) {
        uint8_t *rec = b + l.payload + (uint64_t)i * FA4__ENTRY_BLOB_RECORD;
        memcpy(rec, e->blobs[i].name, strnlen(e->blobs[i].name, 32));
        put64(rec + 32, l.blob_off[i]);
        put64(rec + 40, e->blobs[i].size);
        if (e->blobs[i].size)
            memcpy(b + l.blob_off[i], e->blobs[i].data, e->blobs[i].size);
    }
    fa4__hash128(b, (size_t)l.checksum_off, b + l.checksum_off);
    if (signed_)
        fa4__hmac_sha256(hmac_key, hmac_key_len, b, (size_t)l.checksum_off + 16,
                         b + l.checksum_off + 16);
    *out = b;
    *out_len = (size_t)l.total;
    return 0;
}
