/*
 * ctx.c - the fa4_ctx handle: device selection (the device's primary context, shared with the CUDA
 * runtime and PyTorch), the cache, the registry of live handles that turns use-after-destroy into
 * FA4_ERR_NULL_HANDLE, and the per-ctx last error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "internal.h"

/* ------------------------------------------------------------------------------ handle registry */
/* Destroyed handles must be recognised without reading freed memory, so liveness is a lookup in a
 * process-wide set of pointers rather than a magic number inside the object. */
static pthread_mutex_t g_reg_lock = PTHREAD_MUTEX_INITIALIZER;
static const void **g_reg;
static size_t g_reg_len, g_reg_cap;

static int registry_add(const void *p)
{
    pthread_mutex_lock(&g_reg_lock);
    if (g_reg_len == g_reg_cap) {
        size_t cap = g_reg_cap ? 2 * g_reg_cap : 64;
        const void **n = realloc(g_reg, cap * sizeof *n);
        if (!n) {
            pthread_mutex_unlock(&g_reg_lock);
            return -1;
        }
        g_reg = n;
        g_reg_cap = cap;
    }
    g_reg[g_reg_len++] = p;
    pthread_mutex_unlock(&g_reg_lock);
    return 0;
}

static void registry_remove(const void *p)
{
    pthread_mutex_lock(&g_reg_lock);
    for (size_t i = 0; i < g_reg_len; i++) {
        if (g_reg[i] == p) {
            g_reg[i] = g_reg[--g_reg_len];
            break;
        }
    }
    pthread_mutex_unlock(&g_reg_lock);
}

static int registry_has(const void *p)
{
    int found = 0;
    if (!p)
        return 0;
    pthread_mutex_lock(&g_reg_lock);
    for (size_t i = 0; i < g_reg_len && !found; i++)
        found = g_reg[i] == p;
    pthread_mutex_unlock(&g_reg_lock);
    return found;
}

int fa4__ctx_alive(const fa4_ctx *ctx)
{
    return registry_has(ctx) && ctx->magic == FA4__CTX_MAGIC;
}

int fa4__kernel_alive(const fa4_kernel *k)
{
    return registry_has(k) && k->magic == FA4__KERNEL_MAGIC;
}

int fa4__handle_register(const void *p)
{
    return registry_add(p);
}

void fa4__handle_unregister(const void *p)
{
    registry_remove(p);
}

/* ---------------------------------------------------------------------------------- last error */
static fa4_status set_error_v(fa4_ctx *ctx, fa4_status st, int line, int col, const char *fmt,
                              va_list ap)
{
    if (!ctx)
        return st;
    pthread_mutex_lock(&ctx->lock);
    ctx->err = st;
    ctx->err_line = line;
    ctx->err_col = col;
    if (fmt)
        vsnprintf(ctx->errmsg, sizeof ctx->errmsg, fmt, ap);
    else
        ctx->errmsg[0] = '\0';
    pthread_mutex_unlock(&ctx->lock);
    return st;
}

fa4_status fa4__set_error(fa4_ctx *ctx, fa4_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fa4_status r = set_error_v(ctx, st, 0, 0, fmt, ap);
    va_end(ap);
    return r;
}

fa4_status fa4__set_error_at(fa4_ctx *ctx, fa4_status st, int line, int col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fa4_status r = set_error_v(ctx, st, line, col, fmt, ap);
    va_end(ap);
    return r;
}

void fa4__set_compile_log(fa4_ctx *ctx, char *log)
{
    if (!ctx) {
        free(log);
        return;
    }
    pthread_mutex_lock(&ctx->lock);
    free(ctx->compile_log);
    ctx->compile_log = log;
    pthread_mutex_unlock(&ctx->lock);
}

fa4_status fa4__cu_error(fa4_ctx *ctx, fa4_status st, CUresult r, const char *what)
{
    char buf[256];
    fa4__cu_describe(ctx ? ctx->cu : NULL, r, buf, sizeof buf);
    return fa4__set_error(ctx, st, "%s: %s", what, buf);
}

const char *fa4_ctx_errmsg(const fa4_ctx *ctx)
{
    if (!fa4__ctx_alive(ctx))
        return "NULL or destroyed fa4_ctx";
    return ctx->errmsg;
}

fa4_status fa4_ctx_errcode(const fa4_ctx *ctx)
{
    return fa4__ctx_alive(ctx) ? ctx->err : FA4_ERR_NULL_HANDLE;
}

int fa4_ctx_error_line(const fa4_ctx *ctx)
{
    return fa4__ctx_alive(ctx) ? ctx->err_line : 0;
}

int fa4_ctx_error_column(const fa4_ctx *ctx)
{
    return fa4__ctx_alive(ctx) ? ctx->err_col : 0;
}

const char *fa4_ctx_compile_log(const fa4_ctx *ctx)
{
    if (!fa4__ctx_alive(ctx) || !ctx->compile_log)
        return "";
    return ctx->compile_log;
}

const char *fa4_ctx_arch(const fa4_ctx *ctx)
{
    return fa4__ctx_alive(ctx) ? ctx->arch : "";
}

/* ------------------------------------------------------------------------------- create/destroy */
static __thread char t_create_err[512];

const char *fa4_ctx_create_errmsg(void)
{
    return t_create_err;
}

void fa4_ctx_options_init(fa4_ctx_options *opts)
{
    if (!opts)
        return;
    memset(opts, 0, sizeof *opts);
    opts->struct_size = sizeof *opts;
    opts->device = FA4_DEVICE_CURRENT;
}

static fa4_status create_fail(fa4_status st, const char *msg, const char *detail)
{
    snprintf(t_create_err, sizeof t_create_err, "%s%s", msg, detail ? detail : "");
    return st;
}

/* Arch string of a device: Hopper and Blackwell datacenter parts get the 'a' target that unlocks
 * their own instructions (wgmma, setmaxnreg, tcgen05). */
static void arch_of(int major, int minor, char *out, size_t len)
{
    int a = (major == 9 && minor == 0) || (major == 10 && (minor == 0 || minor == 3));
    snprintf(out, len, "sm_%d%d%s", major, minor, a ? "a" : "");
}

static fa4_status open_device(fa4_ctx *ctx, int device)
{
    const char *why = NULL;
    const fa4__cu *cu = fa4__cu_get(&why);
    if (!cu)
        return create_fail(FA4_ERR_NO_DRIVER, why, " (use FA4_DEVICE_NONE to compile only)");
    int count = 0;
    if (cu->deviceGetCount(&count) != CUDA_SUCCESS || count == 0)
        return create_fail(FA4_ERR_NO_DEVICE, "no CUDA device", NULL);
    if (device == FA4_DEVICE_CURRENT) {
        CUcontext cur = NULL;
        CUdevice d;
        device = 0;
        if (cu->ctxGetCurrent(&cur) == CUDA_SUCCESS && cur && cu->ctxGetDevice(&d) == CUDA_SUCCESS)
            device = (int)d;
    }
    if (device < 0 || device >= count) {
        snprintf(t_create_err, sizeof t_create_err, "device %d does not exist (%d device%s)",
                 device, count, count == 1 ? "" : "s");
        return FA4_ERR_NO_DEVICE;
    }
    CUresult r = cu->deviceGet(&ctx->cu_device, device);
    if (r == CUDA_SUCCESS)
        r = cu->devicePrimaryCtxRetain(&ctx->cu_context, ctx->cu_device);
    if (r != CUDA_SUCCESS) {
        char buf[256];
        fa4__cu_describe(cu, r, buf, sizeof buf);
        return create_fail(FA4_ERR_CUDA, "cannot open the device's primary context: ", buf);
    }
    int major = 0, minor = 0;
    cu->deviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, ctx->cu_device);
    cu->deviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, ctx->cu_device);
    cu->deviceGetAttribute(&ctx->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, ctx->cu_device);
    cu->deviceGetAttribute(&ctx->max_smem_optin,
                           CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, ctx->cu_device);
    arch_of(major, minor, ctx->arch, sizeof ctx->arch);
    ctx->cu = cu;
    ctx->device = device;
    return FA4_OK;
}

fa4_status fa4_ctx_create(const fa4_ctx_options *opts, fa4_ctx **out)
{
    fa4_ctx_options defaults;
    fa4_status st;
    fa4_ctx *ctx = NULL;

    t_create_err[0] = '\0';
    if (!out)
        return create_fail(FA4_ERR_INVALID_ARGUMENT, "fa4_ctx_create: out is NULL", NULL);
    *out = NULL;
    if (!opts) {
        fa4_ctx_options_init(&defaults);
        opts = &defaults;
    } else if (opts->struct_size != sizeof(fa4_ctx_options)) {
        snprintf(t_create_err, sizeof t_create_err,
                 "fa4_ctx_options.struct_size is %zu; this library knows %zu (call "
                 "fa4_ctx_options_init first)",
                 opts->struct_size, sizeof(fa4_ctx_options));
        return FA4_ERR_STRUCT_SIZE;
    }
    if (opts->device < FA4_DEVICE_CURRENT)
        return create_fail(FA4_ERR_INVALID_ARGUMENT, "invalid device ordinal", NULL);
    if (opts->cache_mode < FA4_CACHE_MODE_DEFAULT || opts->cache_mode > FA4_CACHE_MODE_RW)
        return create_fail(FA4_ERR_INVALID_ARGUMENT, "invalid cache_mode", NULL);

    ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return create_fail(FA4_ERR_OUT_OF_MEMORY, "out of memory", NULL);
    pthread_mutex_init(&ctx->lock, NULL);
    ctx->magic = FA4__CTX_MAGIC;
    ctx->device = FA4_DEVICE_NONE;

    if (opts->device != FA4_DEVICE_NONE) {
        st = open_device(ctx, opts->device);
        if (st != FA4_OK)
            goto fail;
    }

    fa4__cache_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.mode = opts->cache_mode;
    cfg.cache_dir = opts->cache_dir;
    cfg.cache_path = opts->cache_path;
    cfg.max_size = opts->cache_max_size;
    cfg.hmac_key_file = opts->hmac_key_file;
    cfg.require_hmac = opts->require_hmac;
    cfg.use_lock = 1;
    char err[256] = "";
    st = fa4__cache_open(&cfg, &ctx->cache, err, sizeof err);
    if (st != FA4_OK) {
        create_fail(st, "kernel cache: ", err);
        goto fail;
    }
    if (fa4__handle_register(ctx) != 0) {
        st = create_fail(FA4_ERR_OUT_OF_MEMORY, "out of memory", NULL);
        goto fail;
    }
    *out = ctx;
    return FA4_OK;

    /* fail: anything set up above is released; ctx was never registered */
fail:
    if (ctx->cache)
        fa4__cache_close(ctx->cache);
    if (ctx->cu_context)
        ctx->cu->devicePrimaryCtxRelease(ctx->cu_device);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
    return st;
}

void fa4_ctx_destroy(fa4_ctx *ctx)
{
    if (!fa4__ctx_alive(ctx))
        return;
    fa4__handle_unregister(ctx);
    if (ctx->cu_context)
        fa4__ctx_push(ctx);
    fa4_kernel *k = ctx->kernels;
    while (k) {
        fa4_kernel *next = k->next;
        fa4__handle_unregister(k);
        fa4__kernel_free(k);
        k = next;
    }
    if (ctx->cu_context) {
        fa4__ctx_pop(ctx);
        ctx->cu->devicePrimaryCtxRelease(ctx->cu_device);
    }
    fa4__cache_close(ctx->cache);
    free(ctx->compile_log);
    ctx->magic = FA4__DEAD_MAGIC;
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
}

fa4_status fa4__ctx_push(fa4_ctx *ctx)
{
    if (!ctx->cu_context)
        return fa4__set_error(ctx, FA4_ERR_NO_DEVICE,
                              "this ctx has no device (created with FA4_DEVICE_NONE)");
    CUresult r = ctx->cu->ctxPushCurrent(ctx->cu_context);
    if (r != CUDA_SUCCESS)
        return fa4__cu_error(ctx, FA4_ERR_CUDA, r, "cuCtxPushCurrent");
    return FA4_OK;
}

void fa4__ctx_pop(fa4_ctx *ctx)
{
    CUcontext dummy;
    ctx->cu->ctxPopCurrent(&dummy);
}
