/*
 * impl.h - the cache object behind fa4__cache and the helpers its parts share (configuration and
 * tiers in config.c, get/put/quarantine in store.c, eviction in evict.c, locks in lock.c; the
 * entry format is entry.c, every file-system call goes through fs.c). Only src/cache includes this.
 *
 * On disk, per tier root:
 *   <root>/v1/<k0k1>/<key>.fa4          an entry (format 1, see entry.h); key = 32 hex digits
 *   <root>/v1/<k0k1>/.tmp.<key>.<rand>  a put in progress (or a crashed one: removed after 1 h)
 *   <root>/v1/<k0k1>/<key>.lock         a compile lock (flock; unlinked by its holder)
 *   <root>/v1/quarantine/<key>.<rand>.fa4  entries the driver rejected, kept for inspection
 *   <root>/v1/evict.lock                one evicting process per tier at a time
 * A reader computes the path from the key and never lists a directory.
 */
#ifndef FA4_CACHE_IMPL_H
#define FA4_CACHE_IMPL_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/stat.h>

#include "cache/cache.h"

#define FA4__CACHE_MAX_TIERS 8
#define FA4__CACHE_VDIR "v1"                       /* entries of format 1 */
#define FA4__CACHE_DEFAULT_MAX_SIZE ((int64_t)2 << 30)
#define FA4__CACHE_TOUCH_AGE 3600                  /* refresh an entry's mtime at most hourly */
#define FA4__CACHE_TEMP_AGE 3600                   /* temp and lock files older than this are litter */
#define FA4__CACHE_BUCKETS 256
#define FA4__CACHE_TEMP_PREFIX ".tmp."
#define FA4__CACHE_SUFFIX ".fa4"
#define FA4__CACHE_LOCK_SUFFIX ".lock"
#define FA4__CACHE_QDIR "quarantine"

typedef struct fa4__tier {
    char root[PATH_MAX];     /* as configured, "~" expanded */
    char vdir[PATH_MAX];     /* root/v1 */
    int writable;            /* puts, touches and eviction allowed (rw tier, cache mode rw) */
    int declared_rw;         /* the tier list calls it rw/shared (even when the mode is ro) */
    int shared;              /* group/world-writable allowed, files group-readable, dirs setgid */
    int enabled;
    char state[160];         /* "ok", "refused: symlink", "missing", ... */
} fa4__tier;

typedef struct fa4__quarantined {
    char key[33];
    unsigned tiers;          /* bit i: skip tier i for this key */
} fa4__quarantined;

typedef struct fa4__held_lock {
    int fd;                  /* -1: free slot */
    char path[PATH_MAX];
} fa4__held_lock;

struct fa4__cache {
    int mode;                /* resolved: OFF, RO or RW */
    int num_tiers;
    fa4__tier tiers[FA4__CACHE_MAX_TIERS];
    int write_tier;          /* first enabled writable tier, or -1 */
    int64_t max_size;        /* per writable tier */
    int64_t max_entry;       /* largest entry put accepts */
    uint8_t *hmac_key;
    size_t hmac_key_len;
    int require_hmac, durable, use_lock;
    char note[256];          /* configuration remarks for describe (bad env value, key file) */

    atomic_uint_fast64_t hits, misses, corrupt, io_errors, puts, put_failures, evictions,
        lock_timeouts, quarantined;

    pthread_mutex_t mu;      /* guards quarantine and locks */
    fa4__quarantined *quarantine;
    int num_quarantine, cap_quarantine;
    fa4__held_lock *locks;
    int num_locks;
};

/* snprintf into a path buffer: 0, or -1 (errno ENAMETOOLONG) when it does not fit. */
int fa4__cache_path(char *out, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "<vdir>/<first two hex digits>" and "<vdir>/<xx>/<key>.fa4"; 0, or -1 when too long. */
int fa4__cache_bucket_path(const fa4__tier *t, const char *key_hex, char *out, size_t len);
int fa4__cache_entry_path(const fa4__tier *t, const char *key_hex, char *out, size_t len);
/* Create vdir and the bucket of key_hex as needed (mode by the tier's sharing). 0 or -1. */
int fa4__cache_make_bucket(const fa4__tier *t, const char *key_hex);
/* Create one directory (EEXIST is success), setgid and group-writable in shared tiers. */
int fa4__cache_mkdir(const fa4__tier *t, const char *path);
/* n random lower-case hex digits and a NUL. */
void fa4__cache_random_hex(char *out, int n);
/* File mode of new files in tier t. */
unsigned fa4__cache_file_mode(const fa4__tier *t);

/* After a put into bucket of key_hex: drop old temp files there and evict when over the limit. */
void fa4__cache_after_put(fa4__cache *c, int tier, const char *key_hex);

#define FA4__COUNT(c, field) atomic_fetch_add(&(c)->field, 1)

#endif /* FA4_CACHE_IMPL_H */
