/*
 * store.c - what the jit layer calls on every compile: get (tiers in order, every entry fully
 * checked, G1/G6), put (temp file O_EXCL|O_NOFOLLOW with a random name in the target directory,
 * every write and close checked, then rename: G3/G4), and quarantine of entries the driver
 * rejected (G13). Any I/O problem is a counted miss or a counted failed put, never an error (G2).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache/admin.h"
#include "cache/entry.h"
#include "cache/fs.h"
#include "cache/impl.h"
#include "hash.h"

void fa4__cache_key(const char *key_inputs, size_t len, char key_hex[33])
{
    fa4__hash128_hex(key_inputs, len, key_hex);
}

int fa4__cache_read_file(const char *path, int64_t max, uint8_t **buf, size_t *len,
                         int64_t *mtime)
{
    *buf = NULL;
    *len = 0;
    /* O_NONBLOCK: a FIFO planted at an entry's path must not block the reader */
    int fd = fa4__fs_open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct stat st;
    int err = 0;
    uint8_t *b = NULL;
    if (fa4__fs_fstat(fd, &st) != 0) {
        err = errno;
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        err = EINVAL;
        goto out;
    }
    /* the size is checked before anything is allocated (G6) */
    if (st.st_size < 0 || st.st_size > max) {
        err = E2BIG;
        goto out;
    }
    b = malloc(st.st_size > 0 ? (size_t)st.st_size : 1);
    if (!b) {
        err = ENOMEM;
        goto out;
    }
    if (st.st_size > 0 && fa4__fs_read_all(fd, b, (size_t)st.st_size) != 0) {
        err = errno;
        goto out;
    }
    if (mtime)
        *mtime = (int64_t)st.st_mtime;
    *buf = b;
    *len = (size_t)st.st_size;
    b = NULL;
out:
    free(b);
    fa4__fs_close(fd); /* closing a descriptor opened for reading cannot lose data */
    if (err) {
        errno = err;
        return -1;
    }
    return 0;
}

static int is_quarantined(fa4__cache *c, const char *key, int tier)
{
    int hit = 0;
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < c->num_quarantine; i++)
        if (!strcmp(c->quarantine[i].key, key)) {
            hit = (c->quarantine[i].tiers >> tier) & 1;
            break;
        }
    pthread_mutex_unlock(&c->mu);
    return hit;
}

/* Set (mask != 0: OR in) or clear (mask == 0: clear bit `tier`) quarantine bits of a key. */
static void mark_quarantine(fa4__cache *c, const char *key, unsigned mask, int clear_tier)
{
    pthread_mutex_lock(&c->mu);
    int i;
    for (i = 0; i < c->num_quarantine; i++)
        if (!strcmp(c->quarantine[i].key, key))
            break;
    if (i == c->num_quarantine) {
        if (!mask)
            goto out;
        if (c->num_quarantine == c->cap_quarantine) {
            int cap = c->cap_quarantine ? 2 * c->cap_quarantine : 8;
            fa4__quarantined *q = realloc(c->quarantine, (size_t)cap * sizeof *q);
            if (!q)
                goto out; /* the entry is also moved aside on disk where the tier is writable */
            c->quarantine = q;
            c->cap_quarantine = cap;
        }
        memcpy(c->quarantine[i].key, key, 33);
        c->quarantine[i].tiers = 0;
        c->num_quarantine++;
    }
    if (mask)
        c->quarantine[i].tiers |= mask;
    else
        c->quarantine[i].tiers &= ~(1u << clear_tier);
out:
    pthread_mutex_unlock(&c->mu);
}

static fa4__entry_auth auth_of(const fa4__cache *c)
{
    fa4__entry_auth a = {c->hmac_key, c->hmac_key_len, c->require_hmac};
    return a;
}

int fa4__cache_get(fa4__cache *c, const char *key_inputs, size_t len, fa4__cache_entry *entry,
                   int *tier)
{
    if (entry)
        memset(entry, 0, sizeof *entry);
    if (tier)
        *tier = -1;
    if (!c || !entry)
        return 0;
    if (c->mode == FA4_CACHE_MODE_OFF || !key_inputs || len == 0) {
        FA4__COUNT(c, misses);
        return 0;
    }
    char key[33], path[PATH_MAX];
    fa4__cache_key(key_inputs, len, key);
    fa4__entry_auth auth = auth_of(c);

    for (int i = 0; i < c->num_tiers; i++) {
        fa4__tier *t = &c->tiers[i];
        if (!t->enabled || is_quarantined(c, key, i) ||
            fa4__cache_entry_path(t, key, path, sizeof path) != 0)
            continue;
        uint8_t *buf;
        size_t n;
        int64_t mtime = 0;
        if (fa4__cache_read_file(path, FA4__ENTRY_MAX_FILE, &buf, &n, &mtime) != 0) {
            if (errno == ELOOP || errno == EINVAL || errno == E2BIG)
                FA4__COUNT(c, corrupt); /* something planted or damaged at the entry's path */
            else if (errno != ENOENT && errno != ENOTDIR)
                FA4__COUNT(c, io_errors);
            continue;
        }
        fa4__entry_view v;
        fa4__entry_result r = fa4__entry_decode(buf, n, &auth, &v);
        if (r == FA4__ENTRY_OK &&
            (v.key_inputs_len != len || memcmp(v.key_inputs, key_inputs, len) != 0))
            r = FA4__ENTRY_KEY_MISMATCH; /* a collision or a foreign file: never a wrong kernel */
        if (r == FA4__ENTRY_OK && (v.libver_len != strlen(FA4_VERSION_STRING) ||
                                   memcmp(v.libver, FA4_VERSION_STRING, v.libver_len) != 0))
            r = FA4__ENTRY_LIBVER_MISMATCH;
        if (r != FA4__ENTRY_OK) {
            free(buf);
            FA4__COUNT(c, corrupt);
            continue;
        }
        entry->num_blobs = v.num_blobs;
        memcpy(entry->blobs, v.blobs, sizeof v.blobs);
        entry->storage_ = buf;
        /* approximate LRU: refresh the mtime at most hourly, and never in a read-only tier */
        time_t now = time(NULL);
        if (t->writable && now - mtime > FA4__CACHE_TOUCH_AGE && fa4__fs_utimens(path, NULL) != 0 &&
            errno != EACCES && errno != EPERM && errno != EROFS && errno != ENOENT)
            FA4__COUNT(c, io_errors); /* a teammate's file in a shared tier just stays old */
        FA4__COUNT(c, hits);
        if (tier)
            *tier = i;
        return 1;
    }
    FA4__COUNT(c, misses);
    return 0;
}

void fa4__cache_entry_free(fa4__cache_entry *entry)
{
    if (!entry)
        return;
    free(entry->storage_);
    memset(entry, 0, sizeof *entry);
}

/* fsync the directory holding path, so that a rename survives a power cut (durable mode). */
static int sync_dir(const char *dir)
{
    int fd = fa4__fs_open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int rc = fa4__fs_fsync(fd);
    int e = errno;
    if (fa4__fs_close(fd) != 0 && rc == 0)
        return -1;
    errno = e;
    return rc;
}

int fa4__cache_put(fa4__cache *c, const char *key_inputs, size_t len, const fa4__cache_entry *entry)
{
    if (!c || c->mode != FA4_CACHE_MODE_RW || c->write_tier < 0)
        return 0;
    if (!key_inputs || !entry) {
        FA4__COUNT(c, put_failures);
        return 0;
    }
    int ti = c->write_tier;
    fa4__tier *t = &c->tiers[ti];
    char key[33], bucket[PATH_MAX], tmp[PATH_MAX], path[PATH_MAX];
    fa4__cache_key(key_inputs, len, key);

    uint8_t *buf = NULL;
    size_t n = 0;
    int fd = -1, have_tmp = 0, ok = 0;
    size_t size = fa4__entry_encoded_size(len, entry, FA4_VERSION_STRING, c->hmac_key != NULL);
    if (size == 0 || (int64_t)size > c->max_entry)
        goto out; /* over the per-entry limit (G9) or malformed: not an I/O error */
    if (fa4__entry_encode(key_inputs, len, entry, FA4_VERSION_STRING, (int64_t)time(NULL),
                          c->hmac_key, c->hmac_key_len, &buf, &n) != 0)
        goto out;
    if (fa4__cache_bucket_path(t, key, bucket, sizeof bucket) != 0 ||
        fa4__cache_entry_path(t, key, path, sizeof path) != 0)
        goto out;
    if (fa4__cache_make_bucket(t, key) != 0)
        goto io_error;

    for (int attempt = 0; attempt < 4 && fd < 0; attempt++) {
        char rnd[17];
        fa4__cache_random_hex(rnd, 16);
        if (fa4__cache_path(tmp, sizeof tmp, "%s/" FA4__CACHE_TEMP_PREFIX "%s.%s", bucket, key,
                            rnd) != 0)
            goto out;
        fd = fa4__fs_open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                          fa4__cache_file_mode(t));
        if (fd < 0 && errno != EEXIST)
            goto io_error;
    }
    if (fd < 0)
        goto io_error;
    have_tmp = 1;
    if (fa4__fs_write_all(fd, buf, n) != 0)
        goto io_error;
    if (c->durable && fa4__fs_fsync(fd) != 0)
        goto io_error;
    {
        int rc = fa4__fs_close(fd);
        fd = -1; /* closed even when close() reports an error */
        if (rc != 0)
            goto io_error; /* NFS reports write-back errors here: the data may not be there */
    }
    if (fa4__fs_rename(tmp, path) != 0)
        goto io_error;
    have_tmp = 0;
    if (c->durable && sync_dir(bucket) != 0)
        goto io_error; /* published but maybe not durable: counted, the entry itself is fine */
    ok = 1;
    goto out;

    /* an I/O call failed: undo what exists and count it */
io_error:
    FA4__COUNT(c, io_errors);
out:
    if (fd >= 0)
        fa4__fs_close(fd);
    if (have_tmp)
        fa4__fs_unlink(tmp);
    free(buf);
    if (!ok) {
        FA4__COUNT(c, put_failures);
        return 0;
    }
    FA4__COUNT(c, puts);
    mark_quarantine(c, key, 0, ti);
    fa4__cache_after_put(c, ti, key);
    return 1;
}

void fa4__cache_quarantine(fa4__cache *c, const char *key_inputs, size_t len)
{
    if (!c || c->mode == FA4_CACHE_MODE_OFF || !key_inputs)
        return;
    char key[33], path[PATH_MAX], qdir[PATH_MAX], dest[PATH_MAX];
    fa4__cache_key(key_inputs, len, key);
    /* in memory first: the next get of this process misses even where the file cannot move */
    mark_quarantine(c, key, (1u << c->num_tiers) - 1, 0);
    FA4__COUNT(c, quarantined);
    for (int i = 0; i < c->num_tiers; i++) {
        fa4__tier *t = &c->tiers[i];
        struct stat st;
        if (!t->enabled || !t->writable || fa4__cache_entry_path(t, key, path, sizeof path) != 0 ||
            fa4__fs_lstat(path, &st) != 0)
            continue;
        char rnd[9];
        fa4__cache_random_hex(rnd, 8);
        /* kept for inspection; where it cannot be moved it is removed */
        if (fa4__cache_path(qdir, sizeof qdir, "%s/" FA4__CACHE_QDIR, t->vdir) != 0 ||
            fa4__cache_path(dest, sizeof dest, "%s/%s.%s" FA4__CACHE_SUFFIX, qdir, key, rnd) != 0 ||
            fa4__cache_mkdir(t, qdir) != 0 || fa4__fs_rename(path, dest) != 0) {
            if (fa4__fs_unlink(path) != 0 && errno != ENOENT)
                FA4__COUNT(c, io_errors);
        }
    }
}

void fa4__cache_check_file(fa4__cache *c, const char *path, const char *key_hex,
                           fa4__cache_check *out)
{
    memset(out, 0, sizeof *out);
    uint8_t *buf;
    size_t n;
    if (fa4__cache_read_file(path, FA4__ENTRY_MAX_FILE, &buf, &n, NULL) != 0) {
        out->result = -1;
        out->errno_ = errno;
        return;
    }
    fa4__entry_auth auth = {0};
    if (c)
        auth = auth_of(c);
    fa4__entry_view v;
    fa4__entry_result r = fa4__entry_decode(buf, n, &auth, &v);
    if (r == FA4__ENTRY_OK && key_hex) {
        char k[33];
        fa4__cache_key(v.key_inputs, v.key_inputs_len, k);
        if (strcmp(k, key_hex) != 0)
            r = FA4__ENTRY_KEY_MISMATCH; /* stored under a name its key inputs do not hash to */
    }
    out->result = (int)r;
    if (r != FA4__ENTRY_OK) {
        free(buf);
        return;
    }
    out->is_signed = v.is_signed;
    out->hmac_checked = v.hmac_checked;
    out->created = v.created;
    snprintf(out->libver, sizeof out->libver, "%.*s", (int)v.libver_len, v.libver);
    out->key_inputs = v.key_inputs;
    out->key_inputs_len = v.key_inputs_len;
    out->entry.num_blobs = v.num_blobs;
    memcpy(out->entry.blobs, v.blobs, sizeof v.blobs);
    out->entry.storage_ = buf;
}

void fa4__cache_check_free(fa4__cache_check *chk)
{
    if (!chk)
        return;
    fa4__cache_entry_free(&chk->entry);
    chk->key_inputs = NULL;
}

const char *fa4__cache_check_reason(const fa4__cache_check *chk)
{
    if (chk->result < 0) {
        if (chk->errno_ == ELOOP)
            return "a symlink";
        if (chk->errno_ == EINVAL)
            return "not a regular file";
        if (chk->errno_ == E2BIG)
            return "larger than any entry may be";
        return strerror(chk->errno_);
    }
    return fa4__entry_result_name((fa4__entry_result)chk->result);
}
