/*
 * evict.c - keeping a writable tier bounded (G9): walking a tier's buckets, approximate LRU by
 * mtime (get refreshes it at most hourly), removal of temp and lock files older than an hour, and
 * clearing. After each put only the entry's own bucket is scanned; when that bucket holds more
 * than its share (max size / 256) the whole tier is pruned to 90% by whichever process gets the
 * tier's eviction lock first. Removal re-checks inode and mtime just before unlink so that an
 * entry republished or refreshed meanwhile (by another host on NFS, say) is left alone; readers
 * that already opened a removed entry keep reading the old file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>

#include "cache/admin.h"
#include "cache/fs.h"
#include "cache/impl.h"

static int is_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return 1;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

static fa4__cache_item_kind classify(const char *name, int in_quarantine, char key[33])
{
    key[0] = '\0';
    if (!strncmp(name, FA4__CACHE_TEMP_PREFIX, strlen(FA4__CACHE_TEMP_PREFIX)))
        return FA4__ITEM_TEMP;
    if (strlen(name) >= 32 && is_hex(name, 32)) {
        memcpy(key, name, 32);
        key[32] = '\0';
        if (in_quarantine)
            return ends_with(name, FA4__CACHE_SUFFIX) ? FA4__ITEM_QUARANTINE : FA4__ITEM_OTHER;
        if (!strcmp(name + 32, FA4__CACHE_SUFFIX))
            return FA4__ITEM_ENTRY;
        if (!strcmp(name + 32, FA4__CACHE_LOCK_SUFFIX))
            return FA4__ITEM_LOCK;
    }
    key[0] = '\0';
    return FA4__ITEM_OTHER;
}

/* Walk one directory of the tier; bucket is its name ("3f" or "quarantine"). */
static int walk_dir(int tier, const char *dir, const char *bucket,
                    int (*fn)(const fa4__cache_item *, void *), void *ud, int *stop)
{
    DIR *d = fa4__fs_opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : -1;
    int in_q = !strcmp(bucket, FA4__CACHE_QDIR), rc = 0;
    struct dirent *de;
    char path[PATH_MAX];
    while (!*stop && (errno = 0, de = fa4__fs_readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        struct stat st;
        if (fa4__cache_path(path, sizeof path, "%s/%s", dir, de->d_name) != 0 ||
            fa4__fs_lstat(path, &st) != 0)
            continue; /* gone meanwhile (another process evicted it) */
        fa4__cache_item it;
        memset(&it, 0, sizeof it);
        it.tier = tier;
        it.path = path;
        it.name = de->d_name;
        it.kind = classify(de->d_name, in_q, it.key);
        it.size = (int64_t)st.st_size;
        it.mtime = (int64_t)st.st_mtime;
        it.mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
        it.is_regular = S_ISREG(st.st_mode);
        if (fn(&it, ud))
            *stop = 1;
    }
    if (errno != 0 && !*stop)
        rc = -1;
    fa4__fs_closedir(d);
    return rc;
}

int fa4__cache_foreach(fa4__cache *c, int tier, int (*fn)(const fa4__cache_item *, void *),
                       void *ud)
{
    if (!c || tier < 0 || tier >= c->num_tiers || !c->tiers[tier].enabled)
        return -1;
    fa4__tier *t = &c->tiers[tier];
    DIR *d = fa4__fs_opendir(t->vdir);
    if (!d)
        return errno == ENOENT ? 0 : -1;
    /* bucket names first: walking while the top directory is open would hold two streams */
    char (*names)[16] = NULL;
    int count = 0, cap = 0, rc = 0, stop = 0;
    struct dirent *de;
    while ((errno = 0, de = fa4__fs_readdir(d)) != NULL) {
        const char *nm = de->d_name;
        int bucket = strlen(nm) == 2 && is_hex(nm, 2);
        if (!bucket && strcmp(nm, FA4__CACHE_QDIR) != 0)
            continue;
        if (count == cap) {
            cap = cap ? 2 * cap : 64;
            void *p = realloc(names, (size_t)cap * sizeof *names);
            if (!p) {
                rc = -1;
                break;
            }
            names = p;
        }
        memcpy(names[count++], nm, strlen(nm) + 1); /* 2 hex digits or "quarantine" */
    }
    if (errno != 0)
        rc = -1;
    fa4__fs_closedir(d);
    char dir[PATH_MAX];
    for (int i = 0; i < count && !stop; i++) {
        if (fa4__cache_path(dir, sizeof dir, "%s/%s", t->vdir, names[i]) != 0 ||
            walk_dir(tier, dir, names[i], fn, ud, &stop) != 0)
            rc = -1;
    }
    free(names);
    return rc;
}

/* ------------------------------------------------------------------------------ pruning */

typedef struct victim {
    char *path;
    int64_t mtime, size;     /* mtime in nanoseconds */
} victim;

typedef struct scan {
    fa4__cache *c;
    time_t now;
    int all;                 /* clear: everything goes */
    victim *v;
    size_t n, cap;
    int oom;
    fa4__cache_prune_result *r;
} scan;

static int remove_file(const char *path)
{
    return fa4__fs_unlink(path) == 0 || errno == ENOENT ? 0 : -1;
}

static int scan_item(const fa4__cache_item *it, void *ud)
{
    scan *s = ud;
    int litter = it->kind == FA4__ITEM_TEMP || it->kind == FA4__ITEM_LOCK;
    if (it->kind == FA4__ITEM_OTHER)
        return 0;
    if (litter) {
        /* a writer's temp file or a lock younger than an hour may be in use */
        if (s->all || s->now - it->mtime > FA4__CACHE_TEMP_AGE) {
            if (remove_file(it->path) != 0)
                s->r->errors++;
            else if (it->kind == FA4__ITEM_TEMP)
                s->r->removed_temp++;
            else
                s->r->removed_locks++;
        }
        return 0;
    }
    s->r->entries++;
    s->r->bytes += (uint64_t)it->size;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 256;
        victim *p = realloc(s->v, cap * sizeof *p);
        if (!p) {
            s->oom = 1;
            return 1;
        }
        s->v = p;
        s->cap = cap;
    }
    char *copy = strdup(it->path);
    if (!copy) {
        s->oom = 1;
        return 1;
    }
    s->v[s->n].path = copy;
    s->v[s->n].mtime = it->mtime_ns;
    s->v[s->n].size = it->size;
    s->n++;
    return 0;
}

static int by_age(const void *a, const void *b)
{
    const victim *x = a, *y = b;
    if (x->mtime != y->mtime)
        return x->mtime < y->mtime ? -1 : 1;
    return strcmp(x->path, y->path); /* deterministic order for equal mtimes */
}

static int prune_tier(fa4__cache *c, int tier, int64_t target, int all, fa4__cache_prune_result *r)
{
    fa4__cache_prune_result local;
    if (!r)
        r = &local;
    memset(r, 0, sizeof *r);
    if (!c || tier < 0 || tier >= c->num_tiers || !c->tiers[tier].enabled ||
        !c->tiers[tier].writable)
        return -1;
    scan s = {.c = c, .now = time(NULL), .all = all, .r = r};
    int rc = fa4__cache_foreach(c, tier, scan_item, &s);
    if (s.oom)
        rc = -1;
    if (s.n > 1)
        qsort(s.v, s.n, sizeof *s.v, by_age);
    int64_t total = (int64_t)r->bytes;
    for (size_t i = 0; i < s.n && (all || total > target); i++) {
        struct stat st;
        /* still the file we saw? a refreshed (recently used) or republished entry stays */
        if (!all && (fa4__fs_lstat(s.v[i].path, &st) != 0 ||
                     (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec != s.v[i].mtime))
            continue;
        if (remove_file(s.v[i].path) != 0) {
            r->errors++;
            continue;
        }
        total -= s.v[i].size;
        r->removed_entries++;
        r->removed_bytes += (uint64_t)s.v[i].size;
        FA4__COUNT(c, evictions);
    }
    for (size_t i = 0; i < s.n; i++)
        free(s.v[i].path);
    free(s.v);
    return rc;
}

int fa4__cache_prune(fa4__cache *c, int tier, int64_t max_size, fa4__cache_prune_result *r)
{
    if (c && max_size <= 0)
        max_size = c->max_size;
    return prune_tier(c, tier, max_size, 0, r);
}

int fa4__cache_clear(fa4__cache *c, int tier, fa4__cache_prune_result *r)
{
    int rc = prune_tier(c, tier, 0, 1, r);
    if (rc == 0) {
        /* empty buckets go too; a bucket another process just filled again stays (ENOTEMPTY) */
        char dir[PATH_MAX];
        for (int b = 0; b < FA4__CACHE_BUCKETS; b++) {
            if (fa4__cache_path(dir, sizeof dir, "%s/%02x", c->tiers[tier].vdir, b) == 0)
                fa4__fs_rmdir(dir);
        }
        if (fa4__cache_path(dir, sizeof dir, "%s/" FA4__CACHE_QDIR, c->tiers[tier].vdir) == 0)
            fa4__fs_rmdir(dir);
    }
    return rc;
}

/* --------------------------------------------------------------------- after each put */

typedef struct bucket_sum {
    time_t now;
    int64_t bytes;
} bucket_sum;

static int sum_item(const fa4__cache_item *it, void *ud)
{
    bucket_sum *b = ud;
    if (it->kind == FA4__ITEM_ENTRY)
        b->bytes += it->size;
    else if (it->kind == FA4__ITEM_TEMP && b->now - it->mtime > FA4__CACHE_TEMP_AGE)
        remove_file(it->path); /* left by a writer that crashed */
    return 0;
}

void fa4__cache_after_put(fa4__cache *c, int tier, const char *key_hex)
{
    fa4__tier *t = &c->tiers[tier];
    char dir[PATH_MAX], lock[PATH_MAX];
    if (fa4__cache_bucket_path(t, key_hex, dir, sizeof dir) != 0)
        return;
    bucket_sum b = {time(NULL), 0};
    int stop = 0;
    if (walk_dir(tier, dir, "", sum_item, &b, &stop) != 0)
        return;
    if (b.bytes <= c->max_size / FA4__CACHE_BUCKETS)
        return;
    /* one evictor per tier at a time; the others just carry on */
    if (fa4__cache_path(lock, sizeof lock, "%s/evict.lock", t->vdir) != 0)
        return;
    int fd = fa4__fs_open(lock, O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, fa4__cache_file_mode(t));
    if (fd < 0) {
        FA4__COUNT(c, io_errors);
        return;
    }
    if (fa4__fs_flock(fd, LOCK_EX | LOCK_NB) == 0) {
        prune_tier(c, tier, c->max_size / 10 * 9, 0, NULL);
        fa4__fs_flock(fd, LOCK_UN);
    }
    fa4__fs_close(fd);
}
