/*
 * spec.c - a kernel spec to and from text (see spec.h): what a cache entry records about how it
 * was made, so that a tool can compile it again and compare.
 */
#include "spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TRAINABLE 16

struct fa4__spec_storage {
    char *text;                       /* a NUL-terminated copy the spec's strings point into */
    const char *trainable[MAX_TRAINABLE];
};

char *fa4__spec_serialize(const fa4_kernel_spec *spec, const char *arch, size_t *len)
{
    char *out = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&out, &size);
    if (!f)
        return NULL;
    size_t slen = spec->source ? (spec->source_len ? spec->source_len : strlen(spec->source)) : 0;
    fprintf(f, "dtype=%d\nhead_dim=%d\nhead_dim_v=%d\narch=%s\nflags=%u\npath=%d\n", spec->dtype,
            spec->head_dim, spec->head_dim_v, arch ? arch : "", spec->flags, spec->path);
    fprintf(f, "sw_exp2_percent=%d\nrescale_threshold=%.9g\n", spec->sw_exp2_percent,
            (double)spec->rescale_threshold);
    fprintf(f, "trainable=");
    for (int i = 0; i < spec->num_trainable_aux && spec->trainable_aux; i++)
        fprintf(f, "%s%s", i ? "," : "", spec->trainable_aux[i] ? spec->trainable_aux[i] : "");
    fprintf(f, "\nsource_name=%s\nsource=%zu\n", spec->source_name ? spec->source_name : "", slen);
    if (slen)
        fwrite(spec->source, 1, slen, f);
    if (fclose(f) != 0) {
        free(out);
        return NULL;
    }
    if (len)
        *len = size;
    return out;
}

static const char *field(char *text, const char *key, char **save_end)
{
    /* find "\nkey=" or "key=" at the very start; NUL-terminate the value at its newline */
    size_t kl = strlen(key);
    for (char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (!strncmp(p, key, kl) && p[kl] == '=') {
            char *v = p + kl + 1;
            char *nl = strchr(v, '\n');
            if (!nl)
                return NULL;
            *save_end = nl;
            return v;
        }
        if (!strncmp(p, "source=", 7))
            break; /* the source itself follows: stop looking */
    }
    return NULL;
}

fa4_status fa4__spec_deserialize(const char *text, size_t len, fa4_kernel_spec *spec,
                                 fa4__spec_storage **storage)
{
    if (!text || !spec || !storage || len > (1u << 24))
        return FA4_ERR_INVALID_ARGUMENT;
    *storage = NULL;
    fa4__spec_storage *s = calloc(1, sizeof *s);
    char *t = s ? malloc(len + 1) : NULL;
    if (!t) {
        free(s);
        return FA4_ERR_OUT_OF_MEMORY;
    }
    memcpy(t, text, len);
    t[len] = '\0';
    s->text = t;
    fa4_kernel_spec_init(spec);

    /* the source is last: "source=<n>\n" then n bytes, which must end the text exactly */
    char *src = NULL;
    for (char *p = t; p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (!strncmp(p, "source=", 7)) {
            src = p;
            break;
        }
    }
    char *end;
    if (!src)
        goto bad;
    unsigned long long slen = strtoull(src + 7, &end, 10);
    if (*end != '\n' || (size_t)(end + 1 - t) + slen != len)
        goto bad;
    *src = '\0'; /* the key=value part ends here */
    spec->source = slen ? end + 1 : NULL;
    spec->source_len = (size_t)slen;

    const char *v;
    char *nl;
    int dtype, hd, hdv, path, sw;
    unsigned flags;
    double thr;
#define INT_FIELD(name, fmt, var)                                                                  \
    if (!(v = field(t, name, &nl)) || sscanf(v, fmt, &var) != 1)                                   \
        goto bad;
    INT_FIELD("dtype", "%d", dtype)
    INT_FIELD("head_dim", "%d", hd)
    INT_FIELD("head_dim_v", "%d", hdv)
    INT_FIELD("flags", "%u", flags)
    INT_FIELD("path", "%d", path)
    INT_FIELD("sw_exp2_percent", "%d", sw)
    INT_FIELD("rescale_threshold", "%lf", thr)
#undef INT_FIELD
    spec->dtype = dtype;
    spec->head_dim = hd;
    spec->head_dim_v = hdv;
    spec->flags = flags;
    spec->path = path;
    spec->sw_exp2_percent = sw;
    spec->rescale_threshold = (float)thr;
    /* string fields: terminate in place (all lookups above are done) */
    char *arch = (char *)field(t, "arch", &nl);
    char *arch_end = nl;
    char *name = (char *)field(t, "source_name", &nl);
    char *name_end = nl;
    char *train = (char *)field(t, "trainable", &nl);
    char *train_end = nl;
    if (!arch || !name || !train)
        goto bad;
    *arch_end = '\0';
    *name_end = '\0';
    *train_end = '\0';
    spec->arch = arch[0] ? arch : NULL;
    spec->source_name = name[0] ? name : NULL;
    int n = 0;
    for (char *p = train; *p && n < MAX_TRAINABLE;) {
        char *c = strchr(p, ',');
        if (c)
            *c = '\0';
        s->trainable[n++] = p;
        if (!c)
            break;
        p = c + 1;
    }
    spec->trainable_aux = n ? s->trainable : NULL;
    spec->num_trainable_aux = n;
    *storage = s;
    return FA4_OK;

    /* bad: malformed text; nothing is handed out */
bad:
    free(t);
    free(s);
    return FA4_ERR_INVALID_ARGUMENT;
}

void fa4__spec_storage_free(fa4__spec_storage *storage)
{
    if (!storage)
        return;
    free(storage->text);
    free(storage);
}
