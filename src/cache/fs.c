/*
 * fs.c - the file-system call table of the cache with its counters and fault injection (see
 * fs.h). Counting and faults are here, not in tests, so that every caller in src/cache is covered
 * by construction: nothing in the cache calls the C library's file functions directly.
 */
#include "cache/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/file.h>
#include <unistd.h>

static int libc_open(const char *path, int flags, mode_t mode)
{
    return open(path, flags, mode);
}

static int libc_utimens(const char *path, const struct timespec ts[2])
{
    return utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW);
}

const fa4__cache_fs fa4__cache_fs_libc = {
    .open = libc_open,
    .read = read,
    .write = write,
    .close = close,
    .fstat = fstat,
    .lstat = lstat,
    .rename = rename,
    .unlink = unlink,
    .mkdir = mkdir,
    .rmdir = rmdir,
    .fsync = fsync,
    .utimens = libc_utimens,
    .opendir = opendir,
    .readdir = readdir,
    .closedir = closedir,
    .flock = flock,
    .chmod = chmod,
};

static const fa4__cache_fs *table = &fa4__cache_fs_libc;

static atomic_uint_fast64_t calls, write_calls, op_calls[FA4__FS_OP_COUNT_];

/* Fault state. fault_at == 0: none armed. fault_seen counts calls that match only_op. */
static atomic_uint_fast64_t fault_at, fault_seen;
static atomic_int fault_err, fault_kind, fault_op, fault_fired, close_pending;
static _Atomic(fa4__fs_hook) hook_fn;
static _Atomic(void *) hook_ud;
static atomic_uint_fast64_t hook_calls;

void fa4__cache_fs_set(const fa4__cache_fs *t)
{
    table = t ? t : &fa4__cache_fs_libc;
}

void fa4__cache_fs_reset_counts(void)
{
    atomic_store(&calls, 0);
    atomic_store(&write_calls, 0);
    for (int i = 0; i < FA4__FS_OP_COUNT_; i++)
        atomic_store(&op_calls[i], 0);
}

uint64_t fa4__cache_fs_calls(void)
{
    return atomic_load(&calls);
}

uint64_t fa4__cache_fs_write_calls(void)
{
    return atomic_load(&write_calls);
}

uint64_t fa4__cache_fs_op_calls(fa4__fs_op op)
{
    if ((int)op < 0 || op >= FA4__FS_OP_COUNT_)
        return 0;
    return atomic_load(&op_calls[op]);
}

void fa4__cache_fs_fault(uint64_t at, int err, int kind, int only_op)
{
    atomic_store(&fault_at, 0);
    atomic_store(&fault_seen, 0);
    atomic_store(&fault_err, err);
    atomic_store(&fault_kind, kind);
    atomic_store(&fault_op, only_op);
    atomic_store(&fault_fired, 0);
    atomic_store(&close_pending, 0);
    atomic_store(&fault_at, at);
}

void fa4__cache_fs_fault_clear(void)
{
    atomic_store(&fault_at, 0);
    atomic_store(&close_pending, 0);
}

int fa4__cache_fs_fault_fired(void)
{
    return atomic_load(&fault_fired);
}

void fa4__cache_fs_hook(fa4__fs_hook hook, void *ud)
{
    atomic_store(&hook_ud, ud);
    atomic_store(&hook_calls, 0);
    atomic_store(&hook_fn, hook);
}

/* What the armed fault does to this call. */
enum { NO_FAULT, FAIL, SHORT };

static int enter(fa4__fs_op op, int writes)
{
    atomic_fetch_add(&calls, 1);
    atomic_fetch_add(&op_calls[op], 1);
    if (writes)
        atomic_fetch_add(&write_calls, 1);
    fa4__fs_hook h = atomic_load(&hook_fn);
    if (h)
        h(op, atomic_fetch_add(&hook_calls, 1) + 1, atomic_load(&hook_ud));

    uint64_t at = atomic_load(&fault_at);
    if (at == 0)
        return NO_FAULT;
    int kind = atomic_load(&fault_kind);
    if (kind == FA4__FAULT_CLOSE_FAIL && atomic_load(&close_pending)) {
        if (op == FA4__FS_CLOSE) {
            atomic_store(&close_pending, 0);
            atomic_store(&fault_at, 0);
            atomic_store(&fault_fired, 1);
            return FAIL;
        }
        return NO_FAULT;
    }
    int only = atomic_load(&fault_op);
    if (only >= 0 && (int)op != only)
        return NO_FAULT;
    if (atomic_fetch_add(&fault_seen, 1) + 1 != at)
        return NO_FAULT;
    if (kind == FA4__FAULT_CLOSE_FAIL) {
        if (op != FA4__FS_CLOSE) {
            atomic_store(&close_pending, 1);
            return NO_FAULT;
        }
        atomic_store(&fault_at, 0);
        atomic_store(&fault_fired, 1);
        return FAIL;
    }
    if (kind == FA4__FAULT_SHORT && op != FA4__FS_WRITE) {
        /* a short write armed at a call that is not a write: move on to the next write */
        atomic_store(&fault_op, FA4__FS_WRITE);
        atomic_store(&fault_seen, 0);
        atomic_store(&fault_at, 1);
        return NO_FAULT;
    }
    atomic_store(&fault_at, 0);
    atomic_store(&fault_fired, 1);
    return kind == FA4__FAULT_SHORT ? SHORT : FAIL;
}

static int fail(void)
{
    errno = atomic_load(&fault_err);
    return -1;
}

int fa4__fs_open(const char *path, int flags, mode_t mode)
{
    int writes = (flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC)) != 0;
    if (enter(FA4__FS_OPEN, writes) == FAIL)
        return fail();
    return table->open(path, flags, mode);
}

ssize_t fa4__fs_read(int fd, void *buf, size_t n)
{
    if (enter(FA4__FS_READ, 0) == FAIL)
        return fail();
    return table->read(fd, buf, n);
}

ssize_t fa4__fs_write(int fd, const void *buf, size_t n)
{
    int f = enter(FA4__FS_WRITE, 1);
    if (f == FAIL)
        return fail();
    if (f == SHORT && n > 1)
        n /= 2;
    return table->write(fd, buf, n);
}

int fa4__fs_close(int fd)
{
    if (enter(FA4__FS_CLOSE, 0) == FAIL) {
        int e = atomic_load(&fault_err);
        table->close(fd); /* a failing close still releases the descriptor, as on Linux */
        errno = e;
        return -1;
    }
    return table->close(fd);
}

int fa4__fs_fstat(int fd, struct stat *st)
{
    if (enter(FA4__FS_FSTAT, 0) == FAIL)
        return fail();
    return table->fstat(fd, st);
}

int fa4__fs_lstat(const char *path, struct stat *st)
{
    if (enter(FA4__FS_LSTAT, 0) == FAIL)
        return fail();
    return table->lstat(path, st);
}

int fa4__fs_rename(const char *from, const char *to)
{
    if (enter(FA4__FS_RENAME, 1) == FAIL)
        return fail();
    return table->rename(from, to);
}

int fa4__fs_unlink(const char *path)
{
    if (enter(FA4__FS_UNLINK, 1) == FAIL)
        return fail();
    return table->unlink(path);
}

int fa4__fs_mkdir(const char *path, mode_t mode)
{
    if (enter(FA4__FS_MKDIR, 1) == FAIL)
        return fail();
    return table->mkdir(path, mode);
}

int fa4__fs_rmdir(const char *path)
{
    if (enter(FA4__FS_RMDIR, 1) == FAIL)
        return fail();
    return table->rmdir(path);
}

int fa4__fs_fsync(int fd)
{
    if (enter(FA4__FS_FSYNC, 1) == FAIL)
        return fail();
    return table->fsync(fd);
}

int fa4__fs_utimens(const char *path, const struct timespec ts[2])
{
    if (enter(FA4__FS_UTIMENS, 1) == FAIL)
        return fail();
    return table->utimens(path, ts);
}

DIR *fa4__fs_opendir(const char *path)
{
    if (enter(FA4__FS_OPENDIR, 0) == FAIL) {
        fail();
        return NULL;
    }
    return table->opendir(path);
}

struct dirent *fa4__fs_readdir(DIR *dir)
{
    if (enter(FA4__FS_READDIR, 0) == FAIL) {
        fail();
        return NULL;
    }
    return table->readdir(dir);
}

int fa4__fs_closedir(DIR *dir)
{
    if (enter(FA4__FS_CLOSEDIR, 0) == FAIL) {
        int e = atomic_load(&fault_err);
        table->closedir(dir);
        errno = e;
        return -1;
    }
    return table->closedir(dir);
}

int fa4__fs_flock(int fd, int op)
{
    if (enter(FA4__FS_FLOCK, 0) == FAIL)
        return fail();
    return table->flock(fd, op);
}

int fa4__fs_chmod(const char *path, mode_t mode)
{
    if (enter(FA4__FS_CHMOD, 1) == FAIL)
        return fail();
    return table->chmod(path, mode);
}

int fa4__fs_write_all(int fd, const void *buf, size_t n)
{
    const unsigned char *p = buf;
    while (n > 0) {
        ssize_t w = fa4__fs_write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (w == 0) {
            errno = EIO; /* a write that makes no progress would loop forever */
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int fa4__fs_read_all(int fd, void *buf, size_t n)
{
    unsigned char *p = buf;
    while (n > 0) {
        ssize_t r = fa4__fs_read(fd, p, n);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (r == 0) {
            errno = EPROTO;
            return -1;
        }
        p += r;
        n -= (size_t)r;
    }
    return 0;
}
