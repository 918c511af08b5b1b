/*
 * kernel.c - a compiled kernel after fa4_jit_compile made it (compile.c): its programs to and from
 * cache entries (a "meta" blob of ptxas figures, one cubin blob per program), loading them on the
 * ctx's device, release, and the public queries (info, aux, cubin, source).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "compiler.h"
#include "internal.h"
#include "spec.h"

void fa4__kernel_free_programs(fa4_kernel *k)
{
    for (int i = 0; i < k->num_programs; i++) {
        free(k->programs[i].cubin);
        free(k->programs[i].source);
        k->programs[i].cubin = NULL;
        k->programs[i].source = NULL;
        k->programs[i].num_fns = -1; /* (its names were in the cubin) */
    }
}

static int meta_line(FILE *f, const fa4__program *p)
{
    const fa4_program_info *i = &p->info;
    return fprintf(f, "%s %d %d %d %d %d %d %d %.3f\n", p->name, i->registers, i->spill_stores,
                   i->spill_loads, i->stack_frame, i->shared_static, i->shared_dynamic,
                   i->wgmma_serialized, i->compile_ms);
}

void fa4__kernel_cache_store(fa4_ctx *ctx, const fa4_kernel_spec *spec, const char *arch, fa4_kernel *k)
{
    if (!ctx->cache)
        return;
    fa4__cache_entry e;
    memset(&e, 0, sizeof e);
    size_t spec_len = 0, meta_len = 0;
    char *spec_text = fa4__spec_serialize(spec, arch, &spec_len);
    char *meta = NULL;
    FILE *f = open_memstream(&meta, &meta_len);
    if (f) {
        for (int i = 0; i < k->num_programs; i++)
            meta_line(f, &k->programs[i]);
        if (fclose(f) != 0) {
            free(meta);
            meta = NULL;
        }
    }
    if (spec_text && meta) {
        snprintf(e.blobs[e.num_blobs].name, 32, "spec");
        e.blobs[e.num_blobs].data = (const uint8_t *)spec_text;
        e.blobs[e.num_blobs++].size = spec_len;
        snprintf(e.blobs[e.num_blobs].name, 32, "meta");
        e.blobs[e.num_blobs].data = (const uint8_t *)meta;
        e.blobs[e.num_blobs++].size = meta_len;
        for (int i = 0; i < k->num_programs && e.num_blobs < FA4__CACHE_MAX_BLOBS; i++) {
            snprintf(e.blobs[e.num_blobs].name, 32, "%s", k->programs[i].name);
            e.blobs[e.num_blobs].data = k->programs[i].cubin;
            e.blobs[e.num_blobs++].size = k->programs[i].cubin_size;
        }
        fa4__cache_put(ctx->cache, k->key_inputs, strlen(k->key_inputs), &e);
    }
    free(spec_text);
    free(meta);
}

/* Fill k->programs from a cache entry; 0 on success, -1 when the entry lacks something (a miss). */
int fa4__kernel_from_entry(const fa4__cache_entry *e, fa4_kernel *k)
{
    const fa4__cache_blob *meta = NULL;
    for (int i = 0; i < e->num_blobs; i++)
        if (!strcmp(e->blobs[i].name, "meta"))
            meta = &e->blobs[i];
    if (!meta || meta->size > 65536)
        return -1;
    char text[65537];
    memcpy(text, meta->data, meta->size);
    text[meta->size] = '\0';
    int n = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (n >= FA4_MAX_PROGRAMS)
            return -1;
        fa4__program *p = &k->programs[n];
        fa4_program_info *i = &p->info;
        memset(p, 0, sizeof *p);
        if (sscanf(line, "%31s %d %d %d %d %d %d %d %lf", p->name, &i->registers, &i->spill_stores,
                   &i->spill_loads, &i->stack_frame, &i->shared_static, &i->shared_dynamic,
                   &i->wgmma_serialized, &i->compile_ms) != 9)
            return -1;
        memcpy(i->name, p->name, sizeof i->name);
        const fa4__path_ops *ops = fa4__path_for(k->path);
        for (int d = 0; ops && d < ops->num_programs; d++)
            if (!strcmp(ops->programs[d].name, p->name) && ops->programs[d].function)
                snprintf(p->function, sizeof p->function, "%s", ops->programs[d].function);
        i->compile_ms = 0; /* nothing was compiled for this kernel */
        const fa4__cache_blob *b = NULL;
        for (int j = 0; j < e->num_blobs; j++)
            if (!strcmp(e->blobs[j].name, p->name))
                b = &e->blobs[j];
        if (!b || b->size == 0)
            return -1;
        p->cubin = malloc(b->size);
        if (!p->cubin)
            return -1;
        memcpy(p->cubin, b->data, b->size);
        p->cubin_size = b->size;
        i->cubin_size = b->size;
        n++;
        k->num_programs = n;
    }
    return n > 0 ? 0 : -1;
}

/* Figures ptxas did not report (an NVRTC compute-cache hit) read off the loaded function. */
static void query_resources(fa4_ctx *ctx, fa4__program *p)
{
    if ((p->info.registers >= 0 && p->info.shared_static >= 0) || !p->module)
        return;
    const char *fn = p->function;
    CUfunction f = NULL;
    if (!fn[0] || ctx->cu->moduleGetFunction(&f, p->module, fn) != CUDA_SUCCESS)
        return;
    int v = 0;
    if (ctx->cu->funcGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, f) == CUDA_SUCCESS)
        p->info.registers = v;
    if (ctx->cu->funcGetAttribute(&v, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f) == CUDA_SUCCESS)
        p->info.stack_frame = v;
    if (ctx->cu->funcGetAttribute(&v, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f) == CUDA_SUCCESS)
        p->info.shared_static = v;
}

/* Load every program on the ctx's device. */
fa4_status fa4__kernel_load(fa4_ctx *ctx, fa4_kernel *k)
{
    for (int i = 0; i < k->num_programs; i++) {
        CUresult cr = ctx->cu->moduleLoadData(&k->programs[i].module, k->programs[i].cubin);
        if (cr != CUDA_SUCCESS) {
            k->programs[i].module = NULL;
            for (int j = 0; j < i; j++) {
                ctx->cu->moduleUnload(k->programs[j].module);
                k->programs[j].module = NULL;
            }
            char what[96];
            snprintf(what, sizeof what, "cuModuleLoadData(%s)", k->programs[i].name);
            return fa4__cu_error(ctx, FA4_ERR_MODULE_LOAD, cr, what);
        }
        query_resources(ctx, &k->programs[i]);
        k->programs[i].num_fns = fa4__cubin_functions(k->programs[i].cubin, k->programs[i].cubin_size,
                                                      k->programs[i].fns, FA4__PROGRAM_FNS);
    }
    return FA4_OK;
}

void fa4__kernel_free(fa4_kernel *k)
{
    if (!k)
        return;
    for (int i = 0; i < k->num_programs; i++)
        if (k->programs[i].module && k->ctx && k->ctx->cu)
            k->ctx->cu->moduleUnload(k->programs[i].module);
    fa4__kernel_free_programs(k);
    fa4__mod_free(k->mod);
    free(k->source_copy);
    free(k->key_inputs);
    k->magic = FA4__DEAD_MAGIC;
    free(k);
}

void fa4_kernel_destroy(fa4_kernel *k)
{
    if (!fa4__kernel_alive(k))
        return;
    fa4_ctx *ctx = k->ctx;
    pthread_mutex_lock(&ctx->lock);
    if (--k->refs > 0) {
        pthread_mutex_unlock(&ctx->lock);
        return;
    }
    for (fa4_kernel **pp = &ctx->kernels; *pp; pp = &(*pp)->next) {
        if (*pp == k) {
            *pp = k->next;
            break;
        }
    }
    pthread_mutex_unlock(&ctx->lock);
    fa4__handle_unregister(k);
    int pushed = ctx->cu_context && fa4__ctx_push(ctx) == FA4_OK;
    fa4__kernel_free(k);
    if (pushed)
        fa4__ctx_pop(ctx);
}

/* ---------------------------------------------------------------------------------- queries */
fa4_status fa4_kernel_get_info(const fa4_kernel *k, fa4_kernel_info *info)
{
    if (!fa4__kernel_alive(k))
        return FA4_ERR_NULL_HANDLE;
    if (!info)
        return FA4_ERR_INVALID_ARGUMENT;
    if (info->struct_size != sizeof *info)
        return FA4_ERR_STRUCT_SIZE;
    pthread_mutex_lock(&k->ctx->lock);
    *info = k->info;
    pthread_mutex_unlock(&k->ctx->lock);
    return FA4_OK;
}

fa4_status fa4_kernel_aux_info(const fa4_kernel *k, int32_t index, fa4_aux_info *info)
{
    if (!fa4__kernel_alive(k))
        return FA4_ERR_NULL_HANDLE;
    if (!info)
        return FA4_ERR_INVALID_ARGUMENT;
    if (info->struct_size != sizeof *info)
        return FA4_ERR_STRUCT_SIZE;
    int n = k->mod ? fa4__mod_num_aux(k->mod) : 0;
    if (index < 0 || index >= n)
        return FA4_ERR_INVALID_ARGUMENT;
    const fa4__aux_decl *d = fa4__mod_aux(k->mod, index);
    snprintf(info->name, sizeof info->name, "%s", d->name);
    info->is_tensor = d->is_tensor;
    info->dtype = d->dtype;
    info->trainable = d->trainable;
    return FA4_OK;
}

fa4_status fa4_kernel_get_cubin(const fa4_kernel *k, int32_t index, void *buf, size_t *size)
{
    if (!fa4__kernel_alive(k))
        return FA4_ERR_NULL_HANDLE;
    if (!size || index < 0 || index >= k->num_programs)
        return FA4_ERR_INVALID_ARGUMENT;
    size_t need = k->programs[index].cubin_size;
    if (buf) {
        if (*size < need) {
            *size = need;
            return FA4_ERR_INVALID_ARGUMENT;
        }
        memcpy(buf, k->programs[index].cubin, need);
    }
    *size = need;
    return FA4_OK;
}

fa4_status fa4_kernel_get_source(const fa4_kernel *k, int32_t index, const char **source)
{
    if (!fa4__kernel_alive(k))
        return FA4_ERR_NULL_HANDLE;
    if (!source || index < 0 || index >= k->num_programs)
        return FA4_ERR_INVALID_ARGUMENT;
    *source = k->programs[index].source;
    return FA4_OK;
}

CUfunction fa4__kernel_function(fa4_kernel *k, const char *program, const char *function)
{
    for (int i = 0; i < k->num_programs; i++) {
        if (strcmp(k->programs[i].name, program) != 0 || !k->programs[i].module)
            continue;
        /* absent from the cubin: no driver call (a failing one is an API error to the sanitizers) */
        const fa4__program *pr = &k->programs[i];
        int has = 0;
        if (pr->num_fns >= 0 && pr->num_fns <= FA4__PROGRAM_FNS) {
            for (int j = 0; j < pr->num_fns && !has; j++)
                has = strcmp(pr->fns[j], function) == 0;
        } else {
            has = fa4__cubin_has_function(pr->cubin, pr->cubin_size, function) != 0; /* -1: ask the driver */
        }
        if (!has)
            return NULL;
        CUfunction f = NULL;
        if (k->ctx->cu->moduleGetFunction(&f, k->programs[i].module, function) != CUDA_SUCCESS)
            return NULL;
        return f;
    }
    return NULL;
}
