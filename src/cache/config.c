/*
 * config.c - opening the cache: resolving the configuration against the environment, building
 * the tier list ("ro:DIR:rw:DIR..."), checking each root (G10: no symlinked root, no group- or
 * world-writable root unless the tier is shared, private roots created 0700, never /tmp by
 * default), loading the HMAC key; plus describe, stats and the path helpers the other parts share.
 * Mode off returns before the first file-system call (T15).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "cache/admin.h"
#include "cache/entry.h"
#include "cache/fs.h"
#include "cache/impl.h"

#define KEY_FILE_MAX 4096

/* ---------------------------------------------------------------------------------- helpers */

int fa4__cache_path(char *out, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out, len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= len) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

int fa4__cache_bucket_path(const fa4__tier *t, const char *key_hex, char *out, size_t len)
{
    return fa4__cache_path(out, len, "%s/%.2s", t->vdir, key_hex);
}

int fa4__cache_entry_path(const fa4__tier *t, const char *key_hex, char *out, size_t len)
{
    return fa4__cache_path(out, len, "%s/%.2s/%s" FA4__CACHE_SUFFIX, t->vdir, key_hex, key_hex);
}

unsigned fa4__cache_file_mode(const fa4__tier *t)
{
    return t->shared ? 0664 : 0600;
}

int fa4__cache_mkdir(const fa4__tier *t, const char *path)
{
    if (fa4__fs_mkdir(path, t->shared ? 02775 : 0700) == 0) {
        /* the umask may have taken group write away; a team directory needs it */
        if (t->shared && fa4__fs_chmod(path, 02775) != 0)
            return -1;
        return 0;
    }
    return errno == EEXIST ? 0 : -1;
}

int fa4__cache_make_bucket(const fa4__tier *t, const char *key_hex)
{
    char path[PATH_MAX];
    if (fa4__cache_bucket_path(t, key_hex, path, sizeof path) != 0) {
        errno = ENAMETOOLONG;
        return -1;
    }
    if (fa4__cache_mkdir(t, path) == 0)
        return 0;
    if (errno != ENOENT)
        return -1;
    if (fa4__cache_mkdir(t, t->vdir) != 0)
        return -1;
    return fa4__cache_mkdir(t, path);
}

void fa4__cache_random_hex(char *out, int n)
{
    static atomic_uint_fast64_t counter;
    uint8_t bytes[32];
    int nb = (n + 1) / 2;
    if (nb > (int)sizeof bytes)
        nb = sizeof bytes;
    if (getrandom(bytes, (size_t)nb, GRND_NONBLOCK) != nb) {
        /* no entropy yet (early boot): pid, time and a counter still make names unique */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t x = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^ (uint64_t)ts.tv_nsec ^
                     (uint64_t)ts.tv_sec << 32 ^ atomic_fetch_add(&counter, 1) << 48;
        for (int i = 0; i < nb; i++) {
            x ^= x >> 33;
            x *= 0xff51afd7ed558ccdull;
            bytes[i] = (uint8_t)(x >> 56);
        }
    }
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < n && i / 2 < nb; i++)
        out[i] = digits[(i % 2 ? bytes[i / 2] : bytes[i / 2] >> 4) & 15];
    out[n] = '\0';
}

/* ------------------------------------------------------------------------------ configuration */

static int parse_mode(const char *s, int *mode)
{
    if (!strcmp(s, "off") || !strcmp(s, "0") || !strcmp(s, "none"))
        *mode = FA4_CACHE_MODE_OFF;
    else if (!strcmp(s, "ro") || !strcmp(s, "read-only"))
        *mode = FA4_CACHE_MODE_RO;
    else if (!strcmp(s, "rw") || !strcmp(s, "on") || !strcmp(s, "1") || !strcmp(s, "read-write"))
        *mode = FA4_CACHE_MODE_RW;
    else
        return -1;
    return 0;
}

/* "2G", "500M", "64k", "1048576" -> bytes; -1 when malformed. */
static int64_t parse_size(const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || v < 0)
        return -1;
    double mult = 1;
    switch (*end) {
    case 'k': case 'K': mult = 1024.0; end++; break;
    case 'm': case 'M': mult = 1024.0 * 1024; end++; break;
    case 'g': case 'G': mult = 1024.0 * 1024 * 1024; end++; break;
    case 't': case 'T': mult = 1024.0 * 1024 * 1024 * 1024; end++; break;
    default: break;
    }
    if (*end == 'i' || *end == 'B')
        end += *end == 'i' && end[1] == 'B' ? 2 : 1;
    if (*end != '\0' || v * mult > 9.0e18)
        return -1;
    return (int64_t)(v * mult);
}

int64_t fa4__cache_parse_size(const char *s)
{
    return parse_size(s);
}

static void add_note(fa4__cache *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_note(fa4__cache *c, const char *fmt, ...)
{
    size_t used = strlen(c->note);
    if (used + 3 >= sizeof c->note)
        return;
    if (used) {
        c->note[used++] = ';';
        c->note[used++] = ' ';
        c->note[used] = '\0';
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->note + used, sizeof c->note - used, fmt, ap);
    va_end(ap);
}

/* Expand a leading "~" and require an absolute path. */
static int expand_dir(const char *in, size_t n, char *out, size_t outlen)
{
    const char *home = getenv("HOME");
    int w;
    if (n >= 1 && in[0] == '~' && (n == 1 || in[1] == '/')) {
        if (!home || home[0] != '/')
            return -1;
        w = snprintf(out, outlen, "%s%.*s", home, (int)(n - 1), in + 1);
    } else {
        w = snprintf(out, outlen, "%.*s", (int)n, in);
    }
    if (w < 0 || (size_t)w >= outlen || out[0] != '/')
        return -1;
    /* a trailing slash would make "root" and "root/" two spellings of one tier */
    for (size_t len = strlen(out); len > 1 && out[len - 1] == '/'; len--)
        out[len - 1] = '\0';
    return 0;
}

static fa4_status add_tier(fa4__cache *c, const char *dir, size_t n, int writable, int shared,
                           char *err, size_t errlen)
{
    if (c->num_tiers == FA4__CACHE_MAX_TIERS) {
        snprintf(err, errlen, "cache tier list: more than %d tiers", FA4__CACHE_MAX_TIERS);
        return FA4_ERR_INVALID_ARGUMENT;
    }
    fa4__tier *t = &c->tiers[c->num_tiers];
    if (n == 0 || expand_dir(dir, n, t->root, sizeof t->root) != 0) {
        snprintf(err, errlen, "cache tier directory '%.*s' is not an absolute path", (int)n, dir);
        return FA4_ERR_INVALID_ARGUMENT;
    }
    size_t rl = strlen(t->root);
    if (rl + 80 >= sizeof t->vdir) {
        snprintf(err, errlen, "cache tier directory '%.*s' is too long", (int)n, dir);
        return FA4_ERR_INVALID_ARGUMENT;
    }
    memcpy(t->vdir, t->root, rl);
    memcpy(t->vdir + rl, "/" FA4__CACHE_VDIR, sizeof("/" FA4__CACHE_VDIR));
    t->writable = writable && c->mode == FA4_CACHE_MODE_RW;
    t->declared_rw = writable;
    t->shared = shared;
    c->num_tiers++;
    return FA4_OK;
}

/* "ro:/opt/app/kernels:rw:~/.cache/fa4jit"; kinds ro, rw, shared (team, writable), shared-ro. */
static fa4_status parse_tiers(fa4__cache *c, const char *list, char *err, size_t errlen)
{
    const char *p = list;
    while (*p) {
        const char *colon = strchr(p, ':');
        if (!colon) {
            snprintf(err, errlen, "cache tier list '%s': '%s' needs a kind (ro:, rw:, shared:)",
                     list, p);
            return FA4_ERR_INVALID_ARGUMENT;
        }
        size_t klen = (size_t)(colon - p);
        int writable, shared;
        if (klen == 2 && !strncmp(p, "ro", 2))
            writable = 0, shared = 0;
        else if (klen == 2 && !strncmp(p, "rw", 2))
            writable = 1, shared = 0;
        else if (klen == 6 && !strncmp(p, "shared", 6))
            writable = 1, shared = 1;
        else if (klen == 9 && !strncmp(p, "shared-ro", 9))
            writable = 0, shared = 1;
        else {
            snprintf(err, errlen, "cache tier list '%s': unknown kind '%.*s' (ro, rw, shared, "
                     "shared-ro)", list, (int)klen, p);
            return FA4_ERR_INVALID_ARGUMENT;
        }
        const char *dir = colon + 1;
        const char *end = strchr(dir, ':');
        size_t dlen = end ? (size_t)(end - dir) : strlen(dir);
        fa4_status st = add_tier(c, dir, dlen, writable, shared, err, errlen);
        if (st != FA4_OK)
            return st;
        p = end ? end + 1 : dir + dlen;
    }
    if (c->num_tiers == 0) {
        snprintf(err, errlen, "cache tier list is empty");
        return FA4_ERR_INVALID_ARGUMENT;
    }
    return FA4_OK;
}

/* Create the missing directories of a private root, 0700 each (like `mkdir -p -m 0700`). */
static int make_root(fa4__tier *t)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", t->root);
    for (char *s = path + 1;; s++) {
        if (*s != '/' && *s != '\0')
            continue;
        char saved = *s;
        *s = '\0';
        struct stat st;
        if (fa4__fs_lstat(path, &st) != 0) {
            if (errno != ENOENT || fa4__cache_mkdir(t, path) != 0)
                return -1;
        }
        *s = saved;
        if (saved == '\0')
            return 0;
    }
}

static void check_root(fa4__tier *t)
{
    struct stat st;
    t->enabled = 0;
    if (fa4__fs_lstat(t->root, &st) != 0 && errno == ENOENT && t->writable) {
        if (make_root(t) != 0) {
            snprintf(t->state, sizeof t->state, "off: cannot create: %s", strerror(errno));
            return;
        }
    }
    if (fa4__fs_lstat(t->root, &st) != 0) {
        snprintf(t->state, sizeof t->state, "off: %s", strerror(errno));
        return;
    }
    if (S_ISLNK(st.st_mode)) {
        snprintf(t->state, sizeof t->state, "refused: the root is a symlink");
        return;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(t->state, sizeof t->state, "refused: not a directory");
        return;
    }
    if ((st.st_mode & 0022) && !t->shared) {
        snprintf(t->state, sizeof t->state, "refused: %s-writable (name it a shared tier to allow)",
                 (st.st_mode & 0002) ? "world" : "group");
        return;
    }
    t->enabled = 1;
    snprintf(t->state, sizeof t->state, "ok");
}

static void load_key(fa4__cache *c, const char *file)
{
    int fd = fa4__fs_open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK, 0);
    if (fd < 0) {
        add_note(c, "HMAC key file unreadable: %s", strerror(errno));
        return;
    }
    struct stat st;
    uint8_t *key = NULL;
    if (fa4__fs_fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
        st.st_size > KEY_FILE_MAX) {
        add_note(c, "%s", "HMAC key file is not a regular file of 1 to 4096 bytes");
        goto out;
    }
    key = malloc((size_t)st.st_size);
    if (!key || fa4__fs_read_all(fd, key, (size_t)st.st_size) != 0) {
        add_note(c, "HMAC key file unreadable: %s", strerror(errno ? errno : ENOMEM));
        goto out;
    }
    if (st.st_mode & 0044)
        add_note(c, "%s", "HMAC key file is readable by group or others (chmod 600 it)");
    /* `echo secret > key` adds a newline that is not meant to be part of the key */
    size_t n = (size_t)st.st_size;
    while (n > 0 && (key[n - 1] == '\n' || key[n - 1] == '\r'))
        n--;
    if (n == 0) {
        add_note(c, "%s", "HMAC key file is empty");
        goto out;
    }
    c->hmac_key = key;
    c->hmac_key_len = n;
    key = NULL;
out:
    if (key)
        free(key);
    fa4__fs_close(fd);
}

fa4_status fa4__cache_open(const fa4__cache_config *cfg, fa4__cache **out, char *err,
                           size_t errlen)
{
    static const fa4__cache_config defaults;
    char dummy[1];
    if (!err || errlen == 0)
        err = dummy, errlen = sizeof dummy;
    err[0] = '\0';
    if (!out)
        return FA4_ERR_INVALID_ARGUMENT;
    *out = NULL;
    if (!cfg)
        cfg = &defaults;

    fa4__cache *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return FA4_ERR_OUT_OF_MEMORY;
    }
    c->write_tier = -1;
    pthread_mutex_init(&c->mu, NULL);
    fa4_status st = FA4_OK;

    c->mode = cfg->mode;
    if (c->mode == FA4_CACHE_MODE_DEFAULT) {
        const char *env = getenv("FA4JIT_CACHE_MODE");
        c->mode = FA4_CACHE_MODE_RW;
        if (env && *env && parse_mode(env, &c->mode) != 0)
            add_note(c, "FA4JIT_CACHE_MODE='%s' not understood, using rw", env);
    } else if (c->mode < FA4_CACHE_MODE_OFF || c->mode > FA4_CACHE_MODE_RW) {
        snprintf(err, errlen, "cache mode %d is not an fa4_cache_mode", c->mode);
        st = FA4_ERR_INVALID_ARGUMENT;
        goto fail;
    }
    if (c->mode == FA4_CACHE_MODE_OFF)
        goto done; /* T15: nothing below runs, so no file-system call is made */

    c->max_size = cfg->max_size;
    if (c->max_size < 0) {
        snprintf(err, errlen, "cache max size %lld is negative", (long long)c->max_size);
        st = FA4_ERR_INVALID_ARGUMENT;
        goto fail;
    }
    if (c->max_size == 0) {
        const char *env = getenv("FA4JIT_CACHE_MAX_SIZE");
        c->max_size = FA4__CACHE_DEFAULT_MAX_SIZE;
        if (env && *env) {
            int64_t v = parse_size(env);
            if (v > 0)
                c->max_size = v;
            else
                add_note(c, "FA4JIT_CACHE_MAX_SIZE='%s' not understood, using 2G", env);
        }
    }
    c->max_entry = c->max_size / 4 < FA4__ENTRY_MAX_FILE ? c->max_size / 4 : FA4__ENTRY_MAX_FILE;
    const char *dur = getenv("FA4JIT_CACHE_DURABLE");
    c->durable = cfg->durable || (dur && !strcmp(dur, "1"));
    c->use_lock = cfg->use_lock;
    const char *req = getenv("FA4JIT_CACHE_REQUIRE_HMAC");
    c->require_hmac = cfg->require_hmac || (req && !strcmp(req, "1"));

    /* an explicit cache_dir is more specific than a tier list from the environment */
    const char *list = cfg->cache_path ? cfg->cache_path
                                       : cfg->cache_dir ? NULL : getenv("FA4JIT_CACHE_PATH");
    if (list && *list) {
        st = parse_tiers(c, list, err, errlen);
        if (st != FA4_OK)
            goto fail;
    } else {
        const char *shared_env = getenv("FA4JIT_CACHE_SHARED");
        int shared = cfg->shared || (shared_env && !strcmp(shared_env, "1"));
        const char *dir = cfg->cache_dir ? cfg->cache_dir : getenv("FA4JIT_CACHE_DIR");
        char def[PATH_MAX];
        if (!dir || !*dir) {
            const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
            int n = -1;
            /* XDG says a relative XDG_CACHE_HOME is invalid and must be ignored */
            if (xdg && xdg[0] == '/')
                n = snprintf(def, sizeof def, "%s/fa4jit", xdg);
            else if (home && home[0] == '/')
                n = snprintf(def, sizeof def, "%s/.cache/fa4jit", home);
            if (n < 0 || (size_t)n >= sizeof def) {
                /* never fall back to /tmp: another user could plant entries there */
                add_note(c, "%s", "no cache directory: HOME and XDG_CACHE_HOME unset");
                goto done;
            }
            dir = def;
        }
        st = add_tier(c, dir, strlen(dir), 1, shared, err, errlen);
        if (st != FA4_OK)
            goto fail;
    }

    for (int i = 0; i < c->num_tiers; i++) {
        check_root(&c->tiers[i]);
        if (c->tiers[i].enabled && c->tiers[i].writable && c->write_tier < 0)
            c->write_tier = i;
    }

    const char *key_file = cfg->hmac_key_file ? cfg->hmac_key_file
                                              : getenv("FA4JIT_CACHE_HMAC_KEY_FILE");
    if (key_file && *key_file)
        load_key(c, key_file);
    if (c->require_hmac && !c->hmac_key)
        add_note(c, "%s", "authentication required but no HMAC key: every entry is a miss");

done:
    *out = c;
    return FA4_OK;
fail:
    fa4__cache_close(c);
    return st;
}

void fa4__cache_close(fa4__cache *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->num_locks; i++)
        if (c->locks[i].fd >= 0)
            fa4__cache_unlock(c, i);
    free(c->locks);
    free(c->quarantine);
    if (c->hmac_key) {
        memset(c->hmac_key, 0, c->hmac_key_len);
        free(c->hmac_key);
    }
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* -------------------------------------------------------------------------- inspection */

void fa4__cache_get_stats(const fa4__cache *c, fa4__cache_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!c)
        return;
    fa4__cache *m = (fa4__cache *)c; /* atomics are read through a non-const pointer */
    out->hits = atomic_load(&m->hits);
    out->misses = atomic_load(&m->misses);
    out->corrupt = atomic_load(&m->corrupt);
    out->io_errors = atomic_load(&m->io_errors);
    out->puts = atomic_load(&m->puts);
    out->put_failures = atomic_load(&m->put_failures);
    out->evictions = atomic_load(&m->evictions);
    out->lock_timeouts = atomic_load(&m->lock_timeouts);
    out->quarantined = atomic_load(&m->quarantined);
}

void fa4__cache_describe(const fa4__cache *c, char *buf, size_t len)
{
    if (!buf || len == 0)
        return;
    buf[0] = '\0';
    if (!c)
        return;
    size_t used = 0;
#define APPEND(...)                                                                               \
    do {                                                                                          \
        int n_ = snprintf(buf + used, len - used, __VA_ARGS__);                                   \
        if (n_ < 0 || (size_t)n_ >= len - used) {                                                 \
            used = len - 1;                                                                       \
            return;                                                                               \
        }                                                                                         \
        used += (size_t)n_;                                                                       \
    } while (0)
    if (c->mode == FA4_CACHE_MODE_OFF)
        APPEND("off (in-process table only, no disk cache)\n");
    for (int i = 0; i < c->num_tiers; i++) {
        const fa4__tier *t = &c->tiers[i];
        APPEND("%s%s %s (%s)\n", t->writable ? "rw" : "ro", t->shared ? " shared" : "", t->vdir,
               t->state);
    }
    if (c->mode != FA4_CACHE_MODE_OFF)
        APPEND("max size %lld bytes, entries up to %lld bytes; hmac %s%s%s\n",
               (long long)c->max_size, (long long)c->max_entry, c->hmac_key ? "key loaded" : "none",
               c->require_hmac ? ", required" : "", c->durable ? "; durable" : "");
    if (c->note[0])
        APPEND("note: %s\n", c->note);
#undef APPEND
}

int fa4__cache_num_tiers(const fa4__cache *c)
{
    return c ? c->num_tiers : 0;
}

int fa4__cache_tier_info_get(const fa4__cache *c, int i, fa4__cache_tier_info *out)
{
    if (!c || i < 0 || i >= c->num_tiers)
        return -1;
    const fa4__tier *t = &c->tiers[i];
    out->root = t->root;
    out->dir = t->vdir;
    out->writable = t->writable;
    out->declared_rw = t->declared_rw;
    out->shared = t->shared;
    out->enabled = t->enabled;
    out->state = t->state;
    return 0;
}

int64_t fa4__cache_max_size(const fa4__cache *c)
{
    return c ? c->max_size : 0;
}

int64_t fa4__cache_max_entry(const fa4__cache *c)
{
    return c ? c->max_entry : 0;
}

int fa4__cache_auth_level(const fa4__cache *c)
{
    if (!c)
        return 0;
    return (c->hmac_key ? 1 : 0) | (c->require_hmac ? 2 : 0);
}
