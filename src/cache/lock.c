/*
 * lock.c - the optional per-key compile lock (G5). It only keeps concurrent processes from
 * compiling the same key twice; correctness never depends on it, so every failure means "go ahead
 * without the lock". flock() on <bucket>/<key>.lock: the kernel drops the lock of a holder that
 * dies, so a killed holder blocks nobody. A holder that is alive but stuck is waited for at most
 * timeout_ms; a lock file older than FA4__LOCK_STALE_S is considered abandoned by a hung holder and
 * broken by unlinking it (waiters then lock a fresh file). The holder unlinks the file before it
 * unlocks, and a waiter that gets the lock checks that its file is still the one at the path.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>

#include "cache/fs.h"
#include "cache/impl.h"

#define FA4__LOCK_STALE_S 300

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static int key_ok(const char *key_hex)
{
    if (!key_hex || strlen(key_hex) != 32)
        return 0;
    for (int i = 0; i < 32; i++)
        if (!((key_hex[i] >= '0' && key_hex[i] <= '9') || (key_hex[i] >= 'a' && key_hex[i] <= 'f')))
            return 0;
    return 1;
}

static int add_slot(fa4__cache *c, int fd, const char *path)
{
    pthread_mutex_lock(&c->mu);
    int i;
    for (i = 0; i < c->num_locks; i++)
        if (c->locks[i].fd < 0)
            break;
    if (i == c->num_locks) {
        fa4__held_lock *p = realloc(c->locks, (size_t)(c->num_locks + 1) * sizeof *p);
        if (!p) {
            pthread_mutex_unlock(&c->mu);
            return -1;
        }
        c->locks = p;
        c->num_locks++;
    }
    c->locks[i].fd = fd;
    snprintf(c->locks[i].path, sizeof c->locks[i].path, "%s", path);
    pthread_mutex_unlock(&c->mu);
    return i;
}

int fa4__cache_lock(fa4__cache *c, const char *key_hex, int timeout_ms)
{
    if (!c || !c->use_lock || c->mode != FA4_CACHE_MODE_RW || c->write_tier < 0 || !key_ok(key_hex))
        return -1;
    fa4__tier *t = &c->tiers[c->write_tier];
    char path[PATH_MAX];
    if (fa4__cache_path(path, sizeof path, "%s/%.2s/%s" FA4__CACHE_LOCK_SUFFIX, t->vdir, key_hex,
                        key_hex) != 0 ||
        fa4__cache_make_bucket(t, key_hex) != 0) {
        FA4__COUNT(c, io_errors);
        return -1;
    }
    int64_t deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    int wait = 1;
    for (;;) {
        /* read-only is enough for flock, and works on a teammate's 0644 lock file */
        int fd = fa4__fs_open(path, O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
                              fa4__cache_file_mode(t));
        if (fd < 0) {
            FA4__COUNT(c, io_errors);
            return -1;
        }
        for (;;) {
            if (fa4__fs_flock(fd, LOCK_EX | LOCK_NB) == 0) {
                struct stat a, b;
                if (fa4__fs_fstat(fd, &a) == 0 && fa4__fs_lstat(path, &b) == 0 &&
                    a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
                    /* the mtime says when it was taken: how stale-lock breaking sees age */
                    fa4__fs_utimens(path, NULL);
                    int token = add_slot(c, fd, path);
                    if (token < 0) {
                        fa4__fs_close(fd);
                        return -1;
                    }
                    return token;
                }
                break; /* the holder removed the file as it unlocked: lock the new one */
            }
            if (errno != EWOULDBLOCK && errno != EINTR) {
                fa4__fs_close(fd); /* e.g. ENOLCK on a file system without locks */
                FA4__COUNT(c, io_errors);
                return -1;
            }
            struct stat st;
            if (fa4__fs_fstat(fd, &st) == 0 && time(NULL) - st.st_mtime > FA4__LOCK_STALE_S) {
                /* held far longer than any compile takes: the holder hangs; break it */
                fa4__fs_unlink(path);
                break;
            }
            int64_t left = deadline - now_ms();
            if (left <= 0) {
                fa4__fs_close(fd);
                FA4__COUNT(c, lock_timeouts);
                return -1;
            }
            sleep_ms((int)(left < wait ? left : wait));
            if (wait < 20)
                wait *= 2;
        }
        fa4__fs_close(fd);
    }
}

void fa4__cache_unlock(fa4__cache *c, int token)
{
    if (!c || token < 0)
        return;
    pthread_mutex_lock(&c->mu);
    if (token >= c->num_locks || c->locks[token].fd < 0) {
        pthread_mutex_unlock(&c->mu);
        return;
    }
    int fd = c->locks[token].fd;
    /* unlink while still holding it, so a waiter never takes over a file that is gone */
    fa4__fs_unlink(c->locks[token].path);
    fa4__fs_close(fd);
    c->locks[token].fd = -1;
    pthread_mutex_unlock(&c->mu);
}
