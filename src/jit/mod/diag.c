/*
 * diag.c - diagnostics of the mod front end: compiler-style messages that point at the user's own
 * line and column with the source line and a caret underline, and the "did you mean" hints found by
 * edit distance. Nothing here prints; the rendering goes into fa4__diag for the caller to show.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "mod_internal.h"

static void copy_bounded(char *dst, size_t cap, const char *s)
{
    size_t n = strlen(s);
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, s, n);
    dst[n] = '\0';
}

/* Append the source line `line` and a caret line under [col, col+len) to out. */
static void render_source_line(char *out, size_t cap, const fa4__mod *m, int line, int col, int len)
{
    if (!m || !m->src || line <= 0)
        return;
    const char *s = m->src, *end = m->src + m->len;
    int cur = 1;
    while (s < end && cur < line) {
        if (*s == '\n')
            cur++;
        s++;
    }
    if (cur != line)
        return;
    const char *e = s;
    while (e < end && *e != '\n' && *e != '\r')
        e++;
    size_t used = strlen(out);
    /* Show at most 200 bytes of the line; long lines keep their start, where columns stay right. */
    size_t linelen = (size_t)(e - s);
    if (linelen > 200)
        linelen = 200;
    char buf[512];
    size_t k = 0;
    for (size_t i = 0; i < linelen; i++) {
        unsigned char ch = (unsigned char)s[i];
        buf[k++] = (ch == '\t' || (ch >= 32 && ch < 127)) ? (char)ch : '?';
    }
    buf[k++] = '\n';
    /* caret line: keep tabs so that it lines up under the source */
    int c0 = col < 1 ? 1 : col;
    for (int i = 1; i < c0 && (size_t)i <= linelen && k < sizeof buf - 80; i++)
        buf[k++] = s[i - 1] == '\t' ? '\t' : ' ';
    buf[k++] = '^';
    for (int i = 1; i < len && i < 64 && k < sizeof buf - 2; i++)
        buf[k++] = '~';
    buf[k] = '\0';
    if (used + 1 < cap)
        snprintf(out + used, cap - used, "\n%s", buf);
}

fa4_status fa4__diag_at(fa4__diag *d, const fa4__mod *m, const char *fname, fa4_status st, int line,
                        int col, int len, const char *fmt, ...)
{
    if (!d)
        return st;
    memset(d, 0, sizeof *d);
    d->status = st;
    d->line = line;
    d->col = col;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->message, sizeof d->message, fmt, ap);
    va_end(ap);
    const char *where = fname ? fname : (m && m->name[0] ? m->name : "mod");
    char head[sizeof d->rendered];
    if (line > 0)
        snprintf(head, sizeof head, "%s:%d:%d: error: %s", where, line, col, d->message);
    else
        snprintf(head, sizeof head, "%s: error: %s", where, d->message);
    copy_bounded(d->rendered, sizeof d->rendered, head);
    if (line > 0)
        render_source_line(d->rendered, sizeof d->rendered, m, line, col, len < 1 ? 1 : len);
    return st;
}

fa4_status fa4__diag_plain(fa4__diag *d, fa4_status st, const char *fmt, ...)
{
    if (!d)
        return st;
    memset(d, 0, sizeof *d);
    d->status = st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->message, sizeof d->message, fmt, ap);
    va_end(ap);
    snprintf(d->rendered, sizeof d->rendered, "error: %s", d->message);
    return st;
}

/* Edit distance with adjacent transpositions (optimal string alignment): "flaot" is one edit from
 * "float". Names are at most FA4__MOD_MAX_NAME long; longer ones count as far. */
int fa4__edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > FA4__MOD_MAX_NAME || lb > FA4__MOD_MAX_NAME)
        return 1000;
    int rows[3][FA4__MOD_MAX_NAME + 2]; /* i-2, i-1, i */
    for (size_t j = 0; j <= lb; j++)
        rows[1][j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int *cur = rows[(i + 1) % 3], *prev = rows[i % 3], *prev2 = rows[(i + 2) % 3];
        cur[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int best = prev[j - 1] + (a[i - 1] != b[j - 1]);
            if (prev[j] + 1 < best)
                best = prev[j] + 1;
            if (cur[j - 1] + 1 < best)
                best = cur[j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                prev2[j - 2] + 1 < best)
                best = prev2[j - 2] + 1;
            cur[j] = best;
        }
    }
    return rows[(la + 1) % 3][lb];
}

const char *fa4__closest(const char *word, const char *const *cands, int n)
{
    const char *best = NULL;
    int bestd = 1000;
    size_t lw = strlen(word);
    /* a third of the name, at least one edit, at most three */
    int limit = (int)(lw / 3);
    if (limit < 1)
        limit = 1;
    if (limit > 3)
        limit = 3;
    for (int i = 0; i < n; i++) {
        if (!cands[i] || !strcmp(cands[i], word))
            continue;
        int dist = fa4__edit_distance(word, cands[i]);
        if (dist <= limit && dist < bestd) {
            bestd = dist;
            best = cands[i];
        }
    }
    return best;
}
