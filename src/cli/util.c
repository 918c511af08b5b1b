/*
 * util.c - small helpers shared by the subcommands of `fa4jit`.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

int fa4__cli_read_file(const char *path, size_t max, char **buf, size_t *len, char *err,
                       size_t errlen)
{
    *buf = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "'%s' is not a regular file", path);
        fclose(f);
        return -1;
    }
    if ((size_t)st.st_size > max) {
        snprintf(err, errlen, "'%s' is %lld bytes; the limit is %zu", path, (long long)st.st_size,
                 max);
        fclose(f);
        return -1;
    }
    char *b = malloc((size_t)st.st_size + 1);
    if (!b) {
        snprintf(err, errlen, "out of memory reading '%s'", path);
        fclose(f);
        return -1;
    }
    size_t n = fread(b, 1, (size_t)st.st_size, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || n != (size_t)st.st_size) {
        snprintf(err, errlen, "cannot read '%s'", path);
        free(b);
        return -1;
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return 0;
}

int fa4__cli_isatty(void)
{
    const char *nc = getenv("NO_COLOR");
    return isatty(STDOUT_FILENO) && !(nc && nc[0]);
}
