/*
 * sources.c - where kernel skeleton sources come from: the copy embedded at build time (the
 * default; its fingerprint was taken at build time), or, for kernel developers, the files of a
 * directory read once at first use (FA4JIT_KERNEL_DIR, or the source tree when the library was
 * configured with FA4JIT_KERNELS_FROM_SOURCE), so that editing a .cuh needs no rebuild.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hash.h"
#include "internal.h"

extern const fa4__embedded_file fa4__embedded_files[];
extern const int fa4__embedded_count;
extern const char fa4__embedded_fingerprint[];

#define MAX_DIR_FILES 256
#define MAX_FILE_SIZE (4 << 20)

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static fa4__embedded_file g_files[MAX_DIR_FILES + 1];
static int g_count;
static const fa4__embedded_file *g_table;
static char g_fingerprint[40];
static char g_why[8400];

static int has_suffix(const char *s, const char *sfx)
{
    size_t a = strlen(s), b = strlen(sfx);
    return a >= b && strcmp(s + a - b, sfx) == 0;
}

static int cmp_files(const void *a, const void *b)
{
    return strcmp(((const fa4__embedded_file *)a)->name, ((const fa4__embedded_file *)b)->name);
}

/* Read every kernel source under root/rel into g_files. Returns 0 or -1 with g_why set. */
static int read_dir(const char *root, const char *rel, int depth)
{
    char path[4096];
    snprintf(path, sizeof path, "%s%s%s", root, rel[0] ? "/" : "", rel);
    DIR *d = opendir(path);
    if (!d) {
        snprintf(g_why, sizeof g_why, "cannot open kernel directory '%s': %s", path,
                 strerror(errno));
        return -1;
    }
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char relname[1024], full[4096];
        snprintf(relname, sizeof relname, "%s%s%s", rel, rel[0] ? "/" : "", e->d_name);
        snprintf(full, sizeof full, "%s/%s", root, relname);
        struct stat st;
        if (stat(full, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            if (depth < 4)
                rc = read_dir(root, relname, depth + 1);
            continue;
        }
        if (!S_ISREG(st.st_mode) ||
            !(has_suffix(e->d_name, ".cu") || has_suffix(e->d_name, ".cuh") ||
              has_suffix(e->d_name, ".h")))
            continue;
        if (g_count >= MAX_DIR_FILES || st.st_size > MAX_FILE_SIZE) {
            snprintf(g_why, sizeof g_why, "kernel directory '%s': too many or too large files",
                     root);
            rc = -1;
            break;
        }
        FILE *f = fopen(full, "rb");
        char *text = f ? malloc((size_t)st.st_size + 1) : NULL;
        char *name = strdup(relname);
        if (!f || !text || !name || fread(text, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
            snprintf(g_why, sizeof g_why, "cannot read kernel source '%s'", full);
            free(text);
            free(name);
            if (f)
                fclose(f);
            rc = -1;
            break;
        }
        fclose(f);
        text[st.st_size] = '\0';
        g_files[g_count].name = name;
        g_files[g_count].text = text;
        g_files[g_count].size = (size_t)st.st_size;
        g_count++;
    }
    closedir(d);
    return rc;
}

static void load_sources(void)
{
    const char *dir = getenv("FA4JIT_KERNEL_DIR");
#ifdef FA4_KERNELS_FROM_SOURCE
    if (!dir || !dir[0])
        dir = FA4_SOURCE_KERNEL_DIR;
#endif
    if (!dir || !dir[0]) {
        g_table = fa4__embedded_files;
        g_count = fa4__embedded_count;
        snprintf(g_fingerprint, sizeof g_fingerprint, "%s", fa4__embedded_fingerprint);
        return;
    }
    if (read_dir(dir, "", 0) != 0)
        return;
    qsort(g_files, (size_t)g_count, sizeof g_files[0], cmp_files);
    fa4__hasher *h = fa4__hasher_new();
    if (!h) {
        snprintf(g_why, sizeof g_why, "out of memory");
        return;
    }
    for (int i = 0; i < g_count; i++) {
        fa4__hasher_update(h, g_files[i].name, strlen(g_files[i].name) + 1);
        fa4__hasher_update(h, g_files[i].text, g_files[i].size);
    }
    uint8_t d[16];
    fa4__hasher_digest(h, d);
    fa4__hasher_free(h);
    /* "dev-" keeps entries built from a working tree apart from released ones */
    memcpy(g_fingerprint, "dev-", 4);
    fa4__hex(d, 14, g_fingerprint + 4);
    g_table = g_files;
}

const fa4__embedded_file *fa4__kernel_sources(int *count, const char **why)
{
    pthread_once(&g_once, load_sources);
    if (!g_table) {
        if (why)
            *why = g_why;
        return NULL;
    }
    *count = g_count;
    return g_table;
}

const char *fa4__kernel_sources_fingerprint(void)
{
    pthread_once(&g_once, load_sources);
    return g_table ? g_fingerprint : "unavailable";
}
