/*
 * admin.h - the cache as tools see it (`fa4jit cache ...`, tests): tier details, walking the
 * entries and litter of a tier, checking one entry file, pruning and clearing. The jit layer needs
 * none of this; it codes against cache.h.
 */
#ifndef FA4_CACHE_ADMIN_H
#define FA4_CACHE_ADMIN_H

#include <stddef.h>
#include <stdint.h>

#include "cache/cache.h"

typedef struct fa4__cache_tier_info {
    const char *root;        /* as configured */
    const char *dir;         /* where format-1 entries live: root/v1 */
    int writable, shared, enabled;
    int declared_rw;         /* a writable tier by configuration, opened read-only by this cache */
    const char *state;       /* "ok" or why the tier is off */
} fa4__cache_tier_info;

/* 0, or -1 when i is out of range. */
int fa4__cache_tier_info_get(const fa4__cache *c, int i, fa4__cache_tier_info *out);
/* The configured limits (bytes). */
int64_t fa4__cache_max_size(const fa4__cache *c);
int64_t fa4__cache_max_entry(const fa4__cache *c);
/* Bit 0: the cache has an HMAC key; bit 1: it requires signatures. */
int fa4__cache_auth_level(const fa4__cache *c);
/* "2G", "500M", "64k", "1048576" -> bytes; -1 when malformed. */
int64_t fa4__cache_parse_size(const char *s);

typedef enum fa4__cache_item_kind {
    FA4__ITEM_ENTRY,         /* <key>.fa4 in a bucket */
    FA4__ITEM_TEMP,          /* .tmp.* left by a writer (in progress, or crashed) */
    FA4__ITEM_LOCK,          /* <key>.lock */
    FA4__ITEM_QUARANTINE,    /* an entry the driver rejected, kept for inspection */
    FA4__ITEM_OTHER          /* anything else (never removed by prune) */
} fa4__cache_item_kind;

typedef struct fa4__cache_item {
    int tier;
    fa4__cache_item_kind kind;
    const char *path;
    const char *name;        /* file name */
    char key[33];            /* entries, locks and quarantined entries; "" otherwise */
    int64_t size;
    int64_t mtime;           /* seconds */
    int64_t mtime_ns;        /* nanoseconds, for ordering entries written within a second */
    int is_regular;          /* 0 for symlinks, FIFOs, directories planted in a bucket */
} fa4__cache_item;

/* Call fn for every file under the tier's format directory (buckets and quarantine; never
 * following symlinks); fn returns non-zero to stop. Returns 0, or -1 when the tier is off or a
 * directory could not be read. */
int fa4__cache_foreach(fa4__cache *c, int tier, int (*fn)(const fa4__cache_item *, void *),
                       void *ud);

/* Check one entry file completely (size, checksum, layout, HMAC by the cache's settings, and that
 * its key inputs hash to key_hex when key_hex is given). result is an fa4__entry_result, or -1 when
 * the file could not be read (errno_ says why). On success, key_inputs and entry are filled and
 * must be released with fa4__cache_check_free. */
typedef struct fa4__cache_check {
    int result;
    int errno_;
    int is_signed, hmac_checked;
    int64_t created;
    char libver[65];
    const char *key_inputs;  /* points into the entry's storage, not NUL-terminated */
    size_t key_inputs_len;
    fa4__cache_entry entry;
} fa4__cache_check;
void fa4__cache_check_file(fa4__cache *c, const char *path, const char *key_hex,
                           fa4__cache_check *out);
void fa4__cache_check_free(fa4__cache_check *chk);
const char *fa4__cache_check_reason(const fa4__cache_check *chk);

typedef struct fa4__cache_prune_result {
    uint64_t entries, bytes;                 /* what the tier held before */
    uint64_t removed_entries, removed_bytes; /* entries (and quarantined files) evicted */
    uint64_t removed_temp, removed_locks;    /* litter older than an hour */
    uint64_t errors;                         /* files that could not be removed */
} fa4__cache_prune_result;

/* Evict the least recently used entries of a writable tier until it holds at most max_size bytes
 * (0: the configured limit), and remove temp and lock files older than an hour. 0, or -1 when the
 * tier is not writable or could not be read. */
int fa4__cache_prune(fa4__cache *c, int tier, int64_t max_size, fa4__cache_prune_result *r);
/* Remove every entry, temp, lock and quarantined file of a writable tier. */
int fa4__cache_clear(fa4__cache *c, int tier, fa4__cache_prune_result *r);

/* Read a whole entry file into a malloc'd buffer with the checks of a get (no symlink, regular
 * file, at most max bytes). 0, or -1 with errno (EFTYPE-like cases give EINVAL, too big E2BIG). */
int fa4__cache_read_file(const char *path, int64_t max, uint8_t **buf, size_t *len,
                         int64_t *mtime);

#endif /* FA4_CACHE_ADMIN_H */
