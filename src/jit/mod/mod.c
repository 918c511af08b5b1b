/*
 * mod.c - the front end's entry points (mod.h): parse = lex + parse + check into one fa4__mod that
 * owns its arena; the aux list and the trainable set; and the cache-key hash over the canonical
 * token stream (token kinds and spellings only, so whitespace and comments never change it), the
 * trainable set and the emitter's version.
 */
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "mod_internal.h"

/* ------------------------------------------------------------------------------------- arena */
struct fa4__arena_block {
    fa4__arena_block *next;
    size_t used, cap;
    max_align_t data[];
};

void *fa4__arena_alloc(fa4__arena *a, size_t n)
{
    n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    fa4__arena_block *b = a->head;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > 32768 ? n : 32768;
        b = calloc(1, sizeof *b + cap);
        if (!b) {
            a->failed = 1;
            return NULL;
        }
        b->cap = cap;
        b->next = a->head;
        a->head = b;
    }
    void *p = (char *)b->data + b->used;
    b->used += n;
    return p;
}

void fa4__arena_free(fa4__arena *a)
{
    fa4__arena_block *b = a->head;
    while (b) {
        fa4__arena_block *n = b->next;
        free(b);
        b = n;
    }
    a->head = NULL;
}

/* ------------------------------------------------------------------------ canonical tokens */
#define TOKEN_STREAM_TAG "fa4jit-mod-tokens-v1"

static fa4_status hash_tokens(fa4__mod *m, fa4__diag *d)
{
    /* kind byte, 2-byte length, spelling: unambiguous, and independent of layout */
    size_t cap = sizeof TOKEN_STREAM_TAG + (size_t)m->ntoks * 3 + m->len;
    uint8_t *buf = malloc(cap);
    if (!buf)
        return fa4__diag_plain(d, FA4_ERR_OUT_OF_MEMORY, "out of memory while hashing the mod");
    size_t k = 0;
    memcpy(buf, TOKEN_STREAM_TAG, sizeof TOKEN_STREAM_TAG);
    k += sizeof TOKEN_STREAM_TAG;
    for (int i = 0; i < m->ntoks; i++) {
        const fa4__tok *t = &m->toks[i];
        if (t->kind == TK_EOF)
            break;
        buf[k++] = (uint8_t)t->kind;
        buf[k++] = (uint8_t)(t->len & 0xff);
        buf[k++] = (uint8_t)(t->len >> 8);
        memcpy(buf + k, m->src + t->off, t->len);
        k += t->len;
    }
    fa4__hash128(buf, k, m->token_hash);
    free(buf);
    return FA4_OK;
}

/* ------------------------------------------------------------------------------- entry points */
fa4_status fa4__mod_parse(const char *src, size_t len, const char *name, fa4__mod **out,
                          fa4__diag *diag)
{
    if (diag)
        memset(diag, 0, sizeof *diag);
    if (!out)
        return fa4__diag_plain(diag, FA4_ERR_INVALID_ARGUMENT, "no place for the parsed mod");
    *out = NULL;
    if (!src && len)
        return fa4__diag_plain(diag, FA4_ERR_INVALID_ARGUMENT, "mod source is NULL");
    if (len > FA4__MOD_MAX_SOURCE)
        return fa4__diag_plain(diag, FA4_ERR_MOD_LIMIT,
                               "mod source is %zu bytes; the limit is %d bytes", len,
                               FA4__MOD_MAX_SOURCE);
    fa4__mod *m = calloc(1, sizeof *m);
    if (!m)
        return fa4__diag_plain(diag, FA4_ERR_OUT_OF_MEMORY, "out of memory");
    fa4_status st = FA4_OK;
    m->src = malloc(len + 1);
    if (!m->src) {
        st = fa4__diag_plain(diag, FA4_ERR_OUT_OF_MEMORY, "out of memory");
        goto fail;
    }
    if (len)
        memcpy(m->src, src, len);
    m->src[len] = '\0';
    m->len = len;
    {
        const char *nm = name && name[0] ? name : "mod";
        size_t nl = strlen(nm);
        if (nl >= sizeof m->name)
            nl = sizeof m->name - 1;
        memcpy(m->name, nm, nl);
        m->name[nl] = '\0';
    }
    st = fa4__mod_lex(m, diag);
    if (st == FA4_OK)
        st = fa4__mod_parse_tokens(m, diag);
    if (st == FA4_OK)
        st = fa4__mod_check(m, diag);
    if (st == FA4_OK && m->arena.failed)
        st = fa4__diag_plain(diag, FA4_ERR_OUT_OF_MEMORY, "out of memory while parsing");
    if (st == FA4_OK)
        st = hash_tokens(m, diag);
    if (st != FA4_OK)
        goto fail;
    *out = m;
    return FA4_OK;

/* any failure after m exists: release it all */
fail:
    fa4__mod_free(m);
    return st;
}

void fa4__mod_free(fa4__mod *m)
{
    if (!m)
        return;
    fa4__arena_free(&m->arena);
    free(m->toks);
    free(m->src);
    free(m);
}

int fa4__mod_has_score(const fa4__mod *m)
{
    return m && m->score;
}

int fa4__mod_has_mask(const fa4__mod *m)
{
    return m && m->mask;
}

int fa4__mod_num_aux(const fa4__mod *m)
{
    return m ? m->naux : 0;
}

const fa4__aux_decl *fa4__mod_aux(const fa4__mod *m, int i)
{
    return m && i >= 0 && i < m->naux ? &m->aux[i] : NULL;
}

/* Number of expressions of s that index aux `k`. */
static int count_reads(const fa4__expr *e, int k)
{
    if (!e)
        return 0;
    int n = e->kind == EX_INDEX && e->var && e->var->kind == VK_AUX && e->var->aux_index == k;
    n += count_reads(e->a, k) + count_reads(e->b, k) + count_reads(e->c, k);
    for (int i = 0; i < e->nargs; i++)
        n += count_reads(e->args[i], k);
    return n;
}

static int count_reads_stmt(const fa4__stmt *s, int k)
{
    if (!s)
        return 0;
    int n = count_reads(s->e, k) + count_reads_stmt(s->then_s, k) + count_reads_stmt(s->else_s, k);
    for (int i = 0; i < s->nitems; i++)
        n += count_reads_stmt(s->items[i], k);
    return n;
}

fa4_status fa4__mod_set_trainable(fa4__mod *m, const char *const *names, int n, fa4__diag *diag)
{
    if (!m || n < 0 || (n > 0 && !names))
        return fa4__diag_plain(diag, FA4_ERR_INVALID_ARGUMENT, "invalid trainable aux list");
    int want[FA4__MOD_MAX_AUX] = {0};
    for (int i = 0; i < n; i++) {
        if (!names[i])
            return fa4__diag_plain(diag, FA4_ERR_AUX, "trainable aux name %d is NULL", i);
        int k;
        for (k = 0; k < m->naux; k++)
            if (!strcmp(m->aux[k].name, names[i]))
                break;
        if (k == m->naux)
            return fa4__diag_plain(diag, FA4_ERR_AUX,
                                   "trainable aux '%s' is not a parameter of "
                                   "the mod",
                                   names[i]);
        const fa4__aux_decl *a = &m->aux[k];
        if (!a->is_tensor)
            return fa4__diag_plain(diag, FA4_ERR_AUX,
                                   "trainable aux '%s' is a scalar; only aux "
                                   "tensors can be trainable",
                                   names[i]);
        if (a->dtype != FA4_DTYPE_FP32 && a->dtype != FA4_DTYPE_FP16 && a->dtype != FA4_DTYPE_BF16)
            return fa4__diag_plain(diag, FA4_ERR_AUX,
                                   "trainable aux '%s' holds integers or "
                                   "bools; only float, half and bf16 tensors "
                                   "have gradients",
                                   names[i]);
        if (!m->score || !a->used_by_score || !count_reads_stmt(m->score->body, k))
            return fa4__diag_plain(diag, FA4_ERR_AUX,
                                   "trainable aux '%s' is not read by "
                                   "score_mod, so it has no gradient",
                                   names[i]);
        want[k] = 1;
    }
    /* the backward runs score_mod's derivative once per trainable read site: keep that bounded */
    int sites = 0;
    for (int k = 0; k < m->naux; k++)
        if (want[k])
            sites += count_reads_stmt(m->score->body, k);
    if (sites > FA4__MOD_MAX_GRAD_SITES)
        return fa4__diag_plain(diag, FA4_ERR_AUX,
                               "the trainable aux tensors are read at %d places "
                               "in score_mod; at most %d are supported",
                               sites, FA4__MOD_MAX_GRAD_SITES);
    for (int k = 0; k < m->naux; k++)
        m->aux[k].trainable = want[k];
    return FA4_OK;
}

/* Bump whenever the emitted CUDA or the evaluator's semantics change for the same tokens, so that
 * cached cubins built from older emitted text are never taken for the new one. */
#define EMIT_VERSION 1u

void fa4__mod_hash(const fa4__mod *m, uint8_t out[16])
{
    uint8_t buf[16 + 4 + 8 + FA4__MOD_MAX_AUX];
    size_t k = 0;
    memset(buf, 0, sizeof buf);
    if (m) {
        memcpy(buf, m->token_hash, 16);
        k = 16;
        for (int i = 0; i < 4; i++)
            buf[k++] = (uint8_t)(EMIT_VERSION >> (8 * i));
        memcpy(buf + k, "trainabl", 8);
        k += 8;
        for (int i = 0; i < m->naux; i++)
            buf[k++] = (uint8_t)m->aux[i].trainable;
    }
    fa4__hash128(buf, k, out);
}
