/*
 * fs.h - every file-system call the cache makes goes through this table, so that tests can count
 * calls (mode off makes none, a read-only tier makes no writing call), fail the k-th call with a
 * chosen errno, shorten a write, or run a hook (a crash test kills itself at call k). The default
 * table calls the C library; the fault state is process-wide and thread-safe.
 */
#ifndef FA4_CACHE_FS_H
#define FA4_CACHE_FS_H

#include <dirent.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

typedef enum fa4__fs_op {
    FA4__FS_OPEN,
    FA4__FS_READ,
    FA4__FS_WRITE,
    FA4__FS_CLOSE,
    FA4__FS_FSTAT,
    FA4__FS_LSTAT,
    FA4__FS_RENAME,
    FA4__FS_UNLINK,
    FA4__FS_MKDIR,
    FA4__FS_RMDIR,
    FA4__FS_FSYNC,
    FA4__FS_UTIMENS,
    FA4__FS_OPENDIR,
    FA4__FS_READDIR,
    FA4__FS_CLOSEDIR,
    FA4__FS_FLOCK,
    FA4__FS_CHMOD,
    FA4__FS_OP_COUNT_
} fa4__fs_op;

/* The calls themselves. utimens does not follow symlinks; open is given its mode always. */
typedef struct fa4__cache_fs {
    int (*open)(const char *path, int flags, mode_t mode);
    ssize_t (*read)(int fd, void *buf, size_t n);
    ssize_t (*write)(int fd, const void *buf, size_t n);
    int (*close)(int fd);
    int (*fstat)(int fd, struct stat *st);
    int (*lstat)(const char *path, struct stat *st);
    int (*rename)(const char *from, const char *to);
    int (*unlink)(const char *path);
    int (*mkdir)(const char *path, mode_t mode);
    int (*rmdir)(const char *path);
    int (*fsync)(int fd);
    int (*utimens)(const char *path, const struct timespec ts[2]);
    DIR *(*opendir)(const char *path);
    struct dirent *(*readdir)(DIR *dir);
    int (*closedir)(DIR *dir);
    int (*flock)(int fd, int op);
    int (*chmod)(const char *path, mode_t mode);
} fa4__cache_fs;

/* The C library's calls. */
extern const fa4__cache_fs fa4__cache_fs_libc;

/* Replace the table (NULL restores the C library's). For tests; not thread-safe against callers. */
void fa4__cache_fs_set(const fa4__cache_fs *table);

/* Counters since the last reset: all calls, and calls that may modify the file system (open for
 * writing or creating, write, rename, unlink, mkdir, rmdir, fsync, utimens, chmod). */
void fa4__cache_fs_reset_counts(void);
uint64_t fa4__cache_fs_calls(void);
uint64_t fa4__cache_fs_write_calls(void);
uint64_t fa4__cache_fs_op_calls(fa4__fs_op op);

/* Fault injection. The call numbered `at` (1-based, counting every call after the fault is set)
 * fails with errno err; with kind SHORT a write instead writes half its bytes (at least 1); with kind
 * CLOSE_FAIL the fault applies to the first close() at or after call `at` (the fd is closed, the call
 * still reports err). `only_op` < 0 counts every call, else only calls of that op.
 * A hook, when set, runs before every call with the call's number (1-based since the hook was set). */
enum { FA4__FAULT_FAIL = 0, FA4__FAULT_SHORT = 1, FA4__FAULT_CLOSE_FAIL = 2 };
void fa4__cache_fs_fault(uint64_t at, int err, int kind, int only_op);
void fa4__cache_fs_fault_clear(void);
/* 1 when the armed fault has fired. */
int fa4__cache_fs_fault_fired(void);
typedef void (*fa4__fs_hook)(fa4__fs_op op, uint64_t call, void *ud);
void fa4__cache_fs_hook(fa4__fs_hook hook, void *ud);

/* The wrappers the cache calls. read/write retry EINTR themselves only in the helpers below. */
int fa4__fs_open(const char *path, int flags, mode_t mode);
ssize_t fa4__fs_read(int fd, void *buf, size_t n);
ssize_t fa4__fs_write(int fd, const void *buf, size_t n);
int fa4__fs_close(int fd);
int fa4__fs_fstat(int fd, struct stat *st);
int fa4__fs_lstat(const char *path, struct stat *st);
int fa4__fs_rename(const char *from, const char *to);
int fa4__fs_unlink(const char *path);
int fa4__fs_mkdir(const char *path, mode_t mode);
int fa4__fs_rmdir(const char *path);
int fa4__fs_fsync(int fd);
int fa4__fs_utimens(const char *path, const struct timespec ts[2]);
DIR *fa4__fs_opendir(const char *path);
struct dirent *fa4__fs_readdir(DIR *dir);
int fa4__fs_closedir(DIR *dir);
int fa4__fs_flock(int fd, int op);
int fa4__fs_chmod(const char *path, mode_t mode);

/* Write all n bytes (short writes continued, EINTR retried): 0, or -1 with errno. */
int fa4__fs_write_all(int fd, const void *buf, size_t n);
/* Read exactly n bytes: 0; -1 with errno; or -1 with errno EPROTO when the file ended early. */
int fa4__fs_read_all(int fd, void *buf, size_t n);

#endif /* FA4_CACHE_FS_H */
