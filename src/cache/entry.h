/*
 * entry.h - the on-disk format of one cache entry, separate from any file-system code so that the
 * reader can be fuzzed on plain bytes (T13) and old formats tested from golden files (T14).
 *
 * Format 1, all integers little-endian:
 *
 *   0  magic "FA4JITC\n"                      8 bytes
 *   8  format version (1)                      u32
 *  12  flags (bit 0: HMAC trailer present)     u32
 *  16  fixed header size (48)                  u32
 *  20  library version length (1..64)          u32
 *  24  key inputs length (1..1 MiB)            u32
 *  28  number of blobs (0..16)                 u32
 *  32  payload length                          u64
 *  40  creation time, unix seconds             i64
 *  48  library version, key inputs (no NUL), zero padding to a multiple of 16
 *   P  payload: blob table (per blob: name[32] NUL-padded, u64 offset from file start, u64 size),
 *      zero padding, blob data (each blob starts at a multiple of 16), zero padding
 * P+L  XXH3-128 of every byte before it        16 bytes
 *      [HMAC-SHA256 of every byte before it    32 bytes, when flag bit 0]
 *
 * A reader accepts only a file whose length is exactly what the header says, every offset inside the
 * payload, blobs in order without overlap, names unique and printable, padding zero.
 */
#ifndef FA4_CACHE_ENTRY_H
#define FA4_CACHE_ENTRY_H

#include <stddef.h>
#include <stdint.h>

#include "cache/cache.h"

#define FA4__ENTRY_MAGIC "FA4JITC\n"
#define FA4__ENTRY_FORMAT 1
#define FA4__ENTRY_HEADER_SIZE 48
#define FA4__ENTRY_FLAG_HMAC 1u
#define FA4__ENTRY_MAX_LIBVER 64
#define FA4__ENTRY_MAX_KEY_INPUTS (1u << 20)
#define FA4__ENTRY_BLOB_RECORD 48
#define FA4__ENTRY_CHECKSUM_SIZE 16
#define FA4__ENTRY_HMAC_SIZE 32
/* Hard ceiling of an entry file, whatever the configuration says. */
#define FA4__ENTRY_MAX_FILE ((int64_t)256 << 20)

typedef enum fa4__entry_result {
    FA4__ENTRY_OK = 0,
    FA4__ENTRY_TRUNCATED,       /* shorter than its header says */
    FA4__ENTRY_BAD_MAGIC,
    FA4__ENTRY_BAD_FORMAT,      /* a format version this reader does not know */
    FA4__ENTRY_BAD_LAYOUT,      /* a length, offset, name or padding out of bounds */
    FA4__ENTRY_BAD_CHECKSUM,
    FA4__ENTRY_UNSIGNED,        /* authentication required but the entry carries no HMAC */
    FA4__ENTRY_BAD_HMAC,
    FA4__ENTRY_KEY_MISMATCH,    /* a valid entry, but for other key inputs */
    FA4__ENTRY_LIBVER_MISMATCH, /* a valid entry written by another library version */
    FA4__ENTRY_RESULT_COUNT_
} fa4__entry_result;

const char *fa4__entry_result_name(fa4__entry_result r);

/* What the reader checks signatures with. key NULL: signatures are not checked. */
typedef struct fa4__entry_auth {
    const uint8_t *key;
    size_t key_len;
    int require;                /* unsigned entries are FA4__ENTRY_UNSIGNED */
} fa4__entry_auth;

/* A decoded entry; every pointer points into the buffer given to fa4__entry_decode. */
typedef struct fa4__entry_view {
    uint32_t format, flags;
    const char *libver;
    size_t libver_len;
    const char *key_inputs;
    size_t key_inputs_len;
    int64_t created;
    int num_blobs;
    fa4__cache_blob blobs[FA4__CACHE_MAX_BLOBS];
    int is_signed;
    int hmac_checked;           /* 1 when the HMAC was verified with a key */
} fa4__entry_view;

/* Check and decode buf (the whole file). Never reads outside [buf, buf+len), never allocates. */
fa4__entry_result fa4__entry_decode(const uint8_t *buf, size_t len, const fa4__entry_auth *auth,
                                    fa4__entry_view *out);

/* Exact size of the encoded entry, or 0 when the inputs break a limit (too many blobs, a bad name,
 * key inputs too long). */
size_t fa4__entry_encoded_size(size_t key_len, const fa4__cache_entry *e, const char *libver,
                               int signed_);

/* Encode into a malloc'd buffer. hmac_key NULL: unsigned. Returns 0, or -1 with errno EINVAL (a
 * limit) or ENOMEM. */
int fa4__entry_encode(const char *key_inputs, size_t key_len, const fa4__cache_entry *e,
                      const char *libver, int64_t created, const uint8_t *hmac_key,
                      size_t hmac_key_len, uint8_t **out, size_t *out_len);

#endif /* FA4_CACHE_ENTRY_H */
