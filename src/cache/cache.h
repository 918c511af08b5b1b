/*
 * cache.h - the content-addressed disk cache of compiled kernels as the jit layer sees it
 * (CACHE.md holds the guarantees G1-G13 this implements).
 *
 * The jit layer hands the cache a key-inputs text (every input that decides the cubins: normalised
 * mod hash, dtype, head dims, flags, path, knobs, skeleton fingerprint, NVRTC version, arch, library
 * version) and a payload of named blobs (cubins, metadata). The key is XXH3-128 of the key inputs; an
 * entry stores the full key inputs and a reader compares them, so a collision or a foreign entry is
 * a miss, never a wrong kernel. Every I/O problem is a miss (get) or a silent, counted failure (put).
 * The in-process table of loaded kernels lives in the jit layer, not here.
 */
#ifndef FA4_CACHE_H
#define FA4_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "fa4jit.h"

typedef struct fa4__cache fa4__cache;

typedef struct fa4__cache_config {
    int mode;                   /* fa4_cache_mode; FA4_CACHE_MODE_DEFAULT resolved from env */
    const char *cache_dir;      /* NULL: FA4JIT_CACHE_DIR, else $XDG_CACHE_HOME/fa4jit, else ~/.cache/fa4jit */
    const char *cache_path;     /* "ro:DIR:rw:DIR..." tier list; NULL: FA4JIT_CACHE_PATH unless
                                 * cache_dir is given; "" or none: cache_dir alone */
    int64_t max_size;           /* 0: FA4JIT_CACHE_MAX_SIZE, else 2 GiB */
    const char *hmac_key_file;  /* NULL: FA4JIT_CACHE_HMAC_KEY_FILE */
    int require_hmac;           /* or FA4JIT_CACHE_REQUIRE_HMAC=1 */
    int durable;                /* fsync file and directory on put (tools that build caches to ship;
                                 * or FA4JIT_CACHE_DURABLE=1) */
    int use_lock;               /* take a per-key lock around compile to avoid duplicate work */
    int shared;                 /* cache_dir is a team directory: group/world-writable roots are
                                 * accepted, files group-readable (or FA4JIT_CACHE_SHARED=1) */
} fa4__cache_config;

typedef struct fa4__cache_blob {
    char name[32];              /* "fwd", "bwd_main", "meta", ... */
    const uint8_t *data;        /* owned by the entry for entries from get */
    size_t size;
} fa4__cache_blob;

#define FA4__CACHE_MAX_BLOBS 16

typedef struct fa4__cache_entry {
    int num_blobs;
    fa4__cache_blob blobs[FA4__CACHE_MAX_BLOBS];
    void *storage_;             /* private: backing memory of an entry returned by get */
} fa4__cache_entry;

typedef struct fa4__cache_stats {
    uint64_t hits, misses, corrupt, io_errors, puts, put_failures, evictions, lock_timeouts;
    uint64_t quarantined;       /* entries set aside by fa4__cache_quarantine */
} fa4__cache_stats;

/* Open the cache; never touches the file system in mode off. A refused root (symlink, group or
 * world writable without shared mode) is not an error: that tier is disabled and the reason is kept
 * for fa4__cache_describe. Returns FA4_ERR_OUT_OF_MEMORY or FA4_ERR_INVALID_ARGUMENT (bad tier list)
 * with detail in err. */
fa4_status fa4__cache_open(const fa4__cache_config *cfg, fa4__cache **out, char *err, size_t errlen);
void fa4__cache_close(fa4__cache *c);

/* key = XXH3-128(key_inputs) as 32 hex digits + NUL. */
void fa4__cache_key(const char *key_inputs, size_t len, char key_hex[33]);

/* Look an entry up in the tiers, in order. Returns 1 on a hit (entry filled; release it with
 * fa4__cache_entry_free; *tier = index of the tier), 0 on a miss of any kind. */
int fa4__cache_get(fa4__cache *c, const char *key_inputs, size_t len, fa4__cache_entry *entry,
                   int *tier);
void fa4__cache_entry_free(fa4__cache_entry *entry);

/* Publish an entry into the first writable tier (atomic: temp file + rename). Failures are counted,
 * never surfaced: returns 1 when written, 0 otherwise. */
int fa4__cache_put(fa4__cache *c, const char *key_inputs, size_t len, const fa4__cache_entry *entry);

/* G13: the driver rejected this entry's cubin: move it aside so the next get misses. */
void fa4__cache_quarantine(fa4__cache *c, const char *key_inputs, size_t len);

/* Optional duplicate-compile avoidance: returns a lock token (>= 0) or -1 when not locked;
 * waits at most timeout_ms for another holder; stale locks are broken. */
int fa4__cache_lock(fa4__cache *c, const char *key_hex, int timeout_ms);
void fa4__cache_unlock(fa4__cache *c, int token);

void fa4__cache_get_stats(const fa4__cache *c, fa4__cache_stats *out);
/* One line per tier: "rw /root/.cache/fa4jit/v1 (ok)" / "ro /opt/x (refused: world-writable)". */
void fa4__cache_describe(const fa4__cache *c, char *buf, size_t len);
int fa4__cache_num_tiers(const fa4__cache *c);

#endif /* FA4_CACHE_H */
