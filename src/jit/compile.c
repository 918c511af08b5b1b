/*
 * compile.c - fa4_jit_compile, the spine of the library:
 *
 *   spec ----------- check (dtype, head dims, arch, flags, path)
 *    |  mod source -- fa4__mod_parse: lex, parse, check (errors at the user's line:col)
 *    |  key inputs -- mod token hash + every option + kernel and emitter fingerprints + NVRTC
 *    |                version + arch
 *    v
 *   memory table --- hit: the same loaded kernel, shared (refcounted)
 *   disk tiers ----- hit: cubins from the cache (checked, compared key inputs)
 *   [miss] -------- emit fa4_mod.cuh, assemble programs, NVRTC in parallel threads, cache put
 *   load ----------- cuModuleLoadData on the ctx's device (a rejected cached cubin: quarantine,
 *                    compile once more)
 *   fa4_kernel ----- immutable; launches from any thread
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "internal.h"
#include "compiler.h"
#include "hash.h"
#include "spec.h"

#define KEY_FORMAT "fa4jit-key-v1"
#define FA4__SM90_DEFAULT 1

/* Whether FA4_PATH_AUTO picks the Hopper path on sm_90a. It does once that path passes the GPU
 * suite (it does: 76/76 forward cases on the H200, 2026-11-29); FA4JIT_PATH=sm80|sm90 overrides
 * (for comparisons and bisecting). */
static int fa4__sm90_default(void)
{
    const char *e = getenv("FA4JIT_PATH");
    if (e && !strcmp(e, "sm80"))
        return 0;
    if (e && !strcmp(e, "sm90"))
        return 1;
    return FA4__SM90_DEFAULT;
}

/* Whether programs carry line info for profilers (-lineinfo; FA4JIT_LINEINFO=1). Off by default: it
 * changes no instruction, but NVRTC took ~10% longer on a mod's forward with it (the line table
 * grows with every inlined copy of the mod; issue 8, the cold compile of a mod). */
static int fa4__lineinfo(void)
{
    const char *e = getenv("FA4JIT_LINEINFO");
    return e && e[0] == '1';
}

const fa4__path_ops *fa4__path_for(int path)
{
    switch (path) {
    case FA4_PATH_SM80:
        return &fa4__sm80_ops;
    case FA4_PATH_SM90:
        return &fa4__sm90_ops;
    default:
        return NULL;
    }
}

int fa4__frame_tolerance(int path, const char *program)
{
    const fa4__path_ops *ops = fa4__path_for(path);
    for (int i = 0; ops && program && i < ops->num_programs; i++)
        if (!strcmp(ops->programs[i].name, program))
            return ops->programs[i].frame_tolerance;
    return 0;
}

void fa4_kernel_spec_init(fa4_kernel_spec *spec)
{
    if (!spec)
        return;
    memset(spec, 0, sizeof *spec);
    spec->struct_size = sizeof *spec;
    spec->dtype = FA4_DTYPE_BF16;
    spec->head_dim = 128;
    spec->flags = FA4_COMPILE_ALL;
}

static int head_dim_ok(int d)
{
    return d == 64 || d == 96 || d == 128 || d == 192 || d == 256;
}

/* A spec with every default resolved, plus the parsed mod. */
typedef struct resolved {
    fa4_kernel_spec spec;
    char arch[16];
    int arch_major, arch_minor, arch_a;
    const fa4__path_ops *ops;
    fa4__mod *mod;
    const char *source;
    size_t source_len;
    const char *source_name;
} resolved;

/* Whether FA4_COMPILE_GQA changes the programs this spec compiles (a program of the path that the
 * spec asks for and that its wanted() takes only with the flag); where it does not, resolve_spec
 * drops the flag, so that the kernel and its cache key are those of the same spec without it. */
static int gqa_flag_matters(const resolved *r)
{
    fa4_kernel_spec without = r->spec;
    without.flags &= ~(uint32_t)FA4_COMPILE_GQA;
    for (int p = 0; p < r->ops->num_programs; p++) {
        const fa4__program_desc *d = &r->ops->programs[p];
        if ((d->needs & r->spec.flags) && d->wanted &&
            !d->wanted(&without, r->mod) != !d->wanted(&r->spec, r->mod))
            return 1;
    }
    return 0;
}

/* Check and resolve a spec; on failure the error is recorded on ctx. */
static fa4_status resolve_spec(fa4_ctx *ctx, const fa4_kernel_spec *in, resolved *r)
{
    memset(r, 0, sizeof *r);
    if (!in)
        return fa4__set_error(ctx, FA4_ERR_INVALID_ARGUMENT, "spec is NULL");
    if (in->struct_size != sizeof(fa4_kernel_spec))
        return fa4__set_error(ctx, FA4_ERR_STRUCT_SIZE,
                              "fa4_kernel_spec.struct_size is %zu; this library knows %zu (call "
                              "fa4_kernel_spec_init first)",
                              in->struct_size, sizeof(fa4_kernel_spec));
    r->spec = *in;
    fa4_kernel_spec *s = &r->spec;
    if (s->dtype != FA4_DTYPE_BF16 && s->dtype != FA4_DTYPE_FP16)
        return fa4__set_error(ctx, FA4_ERR_DTYPE,
                              "spec.dtype is %s; attention runs in bf16 or fp16",
                              fa4_dtype_name((fa4_dtype)s->dtype));
    if (!head_dim_ok(s->head_dim))
        return fa4__set_error(ctx, FA4_ERR_UNSUPPORTED,
                              "spec.head_dim %d is not supported (64, 96, 128, 192 or 256)",
                              s->head_dim);
    if (s->head_dim_v == 0)
        s->head_dim_v = s->head_dim;
    if (!head_dim_ok(s->head_dim_v) || s->head_dim_v > s->head_dim)
        return fa4__set_error(ctx, FA4_ERR_UNSUPPORTED,
                              "spec.head_dim_v %d is not supported with head_dim %d (64, 96, 128, "
                              "192 or 256, at most head_dim)",
                              s->head_dim_v, s->head_dim);
    if (s->flags == 0)
        s->flags = FA4_COMPILE_ALL;
    const uint32_t known =
        FA4_COMPILE_ALL | FA4_COMPILE_CHECKED | FA4_COMPILE_FAST_MATH | FA4_COMPILE_DETERMINISTIC |
        FA4_COMPILE_GQA;
    if (s->flags & ~known)
        return fa4__set_error(ctx, FA4_ERR_INVALID_ARGUMENT, "spec.flags has unknown bits 0x%x",
                              s->flags & ~known);
    if (!(s->flags & FA4_COMPILE_ALL))
        return fa4__set_error(ctx, FA4_ERR_INVALID_ARGUMENT,
                              "spec.flags asks for no kernel (FA4_COMPILE_FWD, _BWD or _BLOCK_MASK)");
    if (s->sw_exp2_percent < 0 || s->sw_exp2_percent > 100)
        return fa4__set_error(ctx, FA4_ERR_INVALID_ARGUMENT,
                              "spec.sw_exp2_percent %d is outside 0..100", s->sw_exp2_percent);
    if (s->num_trainable_aux < 0 || (s->num_trainable_aux > 0 && !s->trainable_aux))
        return fa4__set_error(ctx, FA4_ERR_INVALID_ARGUMENT,
                              "spec.trainable_aux is NULL but num_trainable_aux is %d",
                              s->num_trainable_aux);

    const char *arch = s->arch && s->arch[0] ? s->arch : ctx->arch;
    if (!arch[0])
        return fa4__set_error(ctx, FA4_ERR_ARCH,
                              "spec.arch is not set and the ctx has no device: give an arch such "
                              "as \"sm_90a\" or \"sm_80\"");
    if (fa4__arch_parse(arch, &r->arch_major, &r->arch_minor, &r->arch_a) != 0 ||
        strlen(arch) >= sizeof r->arch)
        return fa4__set_error(ctx, FA4_ERR_ARCH,
                              "arch '%s' is not recognised (expected e.g. sm_80, sm_86, sm_90a)",
                              arch);
    if (r->arch_major < 8)
        return fa4__set_error(ctx, FA4_ERR_ARCH,
                              "arch '%s' is too old: fa4jit needs sm_80 (Ampere) or newer", arch);
    snprintf(r->arch, sizeof r->arch, "%s", arch);

    int hopper = r->arch_major == 9 && r->arch_a;
    if (s->path == FA4_PATH_AUTO)
        s->path = hopper && fa4__sm90_default() ? FA4_PATH_SM90 : FA4_PATH_SM80;
    if (s->path < FA4_PATH_AUTO || s->path > FA4_PATH_SM90)
        return fa4__set_error(ctx, FA4_ERR_INVALID_ARGUMENT, "spec.path %d is not a fa4_path",
                              s->path);
    if (s->path == FA4_PATH_SM90 && !hopper)
        return fa4__set_error(ctx, FA4_ERR_ARCH, "the Hopper path needs arch sm_90a, not '%s'",
                              r->arch);
    r->ops = fa4__path_for(s->path);
    if (!r->ops)
        return fa4__set_error(ctx, FA4_ERR_UNSUPPORTED,
                              "kernel path %d is not available in this build (the sm80 path is)",
                              s->path);

    r->source = s->source;
    r->source_len = s->source ? (s->source_len ? s->source_len : strlen(s->source)) : 0;
    r->source_name = s->source_name && s->source_name[0] ? s->source_name : "mod";
    if (r->source_len > 0) {
        fa4__diag diag;
        memset(&diag, 0, sizeof diag);
        fa4_status st = fa4__mod_parse(r->source, r->source_len, r->source_name, &r->mod, &diag);
        if (st != FA4_OK)
            return fa4__set_error_at(ctx, st, diag.line, diag.col, "%s",
                                     diag.rendered[0] ? diag.rendered : diag.message);
        if (s->num_trainable_aux > 0) {
            st = fa4__mod_set_trainable(r->mod, s->trainable_aux, s->num_trainable_aux, &diag);
            if (st != FA4_OK) {
                fa4__mod_free(r->mod);
                r->mod = NULL;
                return fa4__set_error(ctx, st, "%s",
                                      diag.rendered[0] ? diag.rendered : diag.message);
            }
        }
    } else if (s->num_trainable_aux > 0) {
        return fa4__set_error(ctx, FA4_ERR_AUX,
                              "trainable aux '%s' given but there is no mod source",
                              s->trainable_aux[0] ? s->trainable_aux[0] : "(null)");
    }
    if ((s->flags & FA4_COMPILE_GQA) && !gqa_flag_matters(r))
        s->flags &= ~(uint32_t)FA4_COMPILE_GQA; /* the same programs: one cache entry */
    return FA4_OK;
}

fa4_status fa4_spec_check(fa4_ctx *ctx, const fa4_kernel_spec *spec)
{
    if (!fa4__ctx_alive(ctx))
        return FA4_ERR_NULL_HANDLE;
    resolved r;
    fa4_status st = resolve_spec(ctx, spec, &r);
    fa4__mod_free(r.mod);
    if (st == FA4_OK)
        fa4__set_error(ctx, FA4_OK, NULL);
    return st;
}

/* The text whose hash is the cache key; stored whole in every entry and compared on read. */
static char *key_inputs(const resolved *r, size_t *len)
{
    char modhash[33] = "none";
    if (r->mod) {
        uint8_t h[16];
        fa4__mod_hash(r->mod, h);
        fa4__hex(h, 16, modhash);
    }
    int nv_major = 0, nv_minor = 0;
    fa4_nvrtc_version(&nv_major, &nv_minor);
    char *out = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&out, &size);
    if (!f)
        return NULL;
    fprintf(f, "%s\nlibrary=%s\nfingerprint=%s\nemitter=%s\nnvrtc=%d.%d\narch=%s\npath=%d\n",
            KEY_FORMAT, FA4_VERSION_STRING, fa4__kernel_sources_fingerprint(), fa4__emitter_fingerprint,
            nv_major, nv_minor, r->arch, r->spec.path);
    fprintf(f, "dtype=%s\nhead_dim=%d\nhead_dim_v=%d\nflags=0x%x\nmod=%s\n",
            fa4_dtype_name((fa4_dtype)r->spec.dtype), r->spec.head_dim, r->spec.head_dim_v,
            r->spec.flags, modhash);
    fprintf(f, "trainable=");
    for (int i = 0; r->mod && i < fa4__mod_num_aux(r->mod); i++)
        if (fa4__mod_aux(r->mod, i)->trainable)
            fprintf(f, "%s;", fa4__mod_aux(r->mod, i)->name);
    fprintf(f, "\nsw_exp2_percent=%d\nrescale_threshold=%.9g\n", r->spec.sw_exp2_percent,
            (double)r->spec.rescale_threshold);
    /* the path's options past its first (its own -DFA4_PATH_*, which path= already says): A/B
     * switches read from the environment at compile time (path_sm90.c), none by default */
    {
        char po[24][64];
        const int np = r->ops->options ? r->ops->options(&r->spec, r->arch, po, 24) : 0;
        for (int i = 1; i < np; i++)
            fprintf(f, "option=%s\n", po[i]);
    }
    if (fa4__lineinfo())
        fprintf(f, "lineinfo=1\n");
    if (fa4__sm90_fwd64_consumers() != 0) /* path_sm90.c's A/B switch, where set */
        fprintf(f, "sm90_fwd64_consumers=%d\n", fa4__sm90_fwd64_consumers());
    if (fclose(f) != 0) {
        free(out);
        return NULL;
    }
    *len = size;
    return out;
}

int fa4__kernel_built_with(const fa4_kernel *k, const char *option)
{
    if (!k->key_inputs || !option)
        return 0;
    /* key_inputs' lines "option=OPTION\n" (above) */
    const size_t n = strlen(option);
    for (const char *at = strstr(k->key_inputs, "option="); at; at = strstr(at + 1, "option="))
        if (!strncmp(at + 7, option, n) && at[7 + n] == '\n')
            return 1;
    return 0;
}

fa4_status fa4_mod_eval(fa4_ctx *ctx, const char *source, size_t source_len, double score,
                        int32_t b, int32_t h, int32_t q_idx, int32_t kv_idx,
                        const fa4_aux_value *aux, int32_t num_aux, double *value,
                        double *dvalue_dscore, int32_t *allowed)
{
    if (!fa4__ctx_alive(ctx))
        return FA4_ERR_NULL_HANDLE;
    if (!source)
        return fa4__set_error(ctx, FA4_ERR_INVALID_ARGUMENT, "fa4_mod_eval: source is NULL");
    size_t len = source_len ? source_len : strlen(source);
    fa4__mod *m = NULL;
    fa4__diag diag;
    memset(&diag, 0, sizeof diag);
    fa4_status st = fa4__mod_parse(source, len, "mod", &m, &diag);
    if (st != FA4_OK)
        return fa4__set_error_at(ctx, st, diag.line, diag.col, "%s",
                                 diag.rendered[0] ? diag.rendered : diag.message);
    double v = score, dv = 1.0;
    int ok = 1;
    st = fa4__mod_eval_score(m, score, b, h, q_idx, kv_idx, aux, num_aux, &v, &dv, &diag);
    if (st == FA4_OK)
        st = fa4__mod_eval_mask(m, b, h, q_idx, kv_idx, aux, num_aux, &ok, &diag);
    fa4__mod_free(m);
    if (st != FA4_OK)
        return fa4__set_error(ctx, st, "%s", diag.rendered[0] ? diag.rendered : diag.message);
    if (value)
        *value = v;
    if (dvalue_dscore)
        *dvalue_dscore = dv;
    if (allowed)
        *allowed = ok != 0;
    return fa4__set_error(ctx, FA4_OK, NULL);
}

fa4_status fa4__spec_key(fa4_ctx *ctx, const fa4_kernel_spec *spec, char key[33], char **inputs)
{
    resolved r;
    fa4_status st = resolve_spec(ctx, spec, &r);
    if (st != FA4_OK)
        return st;
    size_t len = 0;
    char *kin = key_inputs(&r, &len);
    fa4__mod_free(r.mod);
    if (!kin)
        return FA4_ERR_OUT_OF_MEMORY;
    fa4__cache_key(kin, len, key);
    if (inputs)
        *inputs = kin;
    else
        free(kin);
    return FA4_OK;
}

/* fa4_mod.cuh for plain attention (no mod source). */
const char fa4__plain_mod_header[] =
    "/* fa4_mod.cuh: plain attention (no mod source) */\n"
    "#define FA4_HAS_SCORE_MOD 0\n#define FA4_HAS_MASK_MOD 0\n#define FA4_NUM_AUX 0\n"
    "#define FA4_HAS_TRAINABLE_AUX 0\n#define FA4_MASK_MOD_GATHERS 0\n"
    "struct fa4_aux { int fa4_unused_; };\n"
    "__device__ __forceinline__ float fa4_score_mod(float score, int, int, int, int, "
    "const fa4_aux &) { return score; }\n"
    "__device__ __forceinline__ bool fa4_mask_mod(int, int, int, int, const fa4_aux &) "
    "{ return true; }\n"
    "__device__ __forceinline__ float fa4_score_mod_fwd_deriv(float score, int, int, int, int, "
    "const fa4_aux &, float *dscore) { *dscore = 1.0f; return score; }\n"
    "__device__ __forceinline__ void fa4_score_mod_aux_grad(float, int, int, int, int, "
    "const fa4_aux &, float) {}\n";

static const fa4__embedded_file *find_source(const fa4__embedded_file *files, int n,
                                             const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(files[i].name, name) == 0)
            return &files[i];
    return NULL;
}

/* What the spill fallback decides on: the entry's stack frame as the cubin records it (spills
 * live there; the shipped kernels have no other local memory), which is known whether or not
 * ptxas' report came with the build (NVRTC's compute cache returns cubins without one), so the
 * same source and options always keep the same build; a serialized wgmma counts as worse than any
 * frame. Without a readable cubin, the report's stack frame. */
static int fallback_cost(const fa4__nvrtc_job *j)
{
    const fa4_program_info *i = &j->info;
    const int frame = j->cubin_frame >= 0 ? j->cubin_frame : i->stack_frame > 0 ? i->stack_frame : 0;
    return frame + (i->wgmma_serialized > 0 ? 1 << 20 : 0);
}

/* Keep alt (a build of jobs' program j with option opt) in place of j where it spills less;
 * release the other. */
static void keep_cleaner(fa4__nvrtc_job *j, fa4__nvrtc_job *alt, const char *opt)
{
    if (alt->status == FA4_OK && alt->info.registers >= 0 && fallback_cost(alt) < fallback_cost(j)) {
        char *log = NULL;
        /* keep every report in the program's log: the earlier ones tell why the fallback ran (the
         * marker line is read back by `fa4jit compile --json`, cmd_compile.c: keep its text) */
        if (asprintf(&log, "%s\n==== spilled: compiled again with %s ====\n%s", j->log ? j->log : "", opt,
                     alt->log ? alt->log : "") < 0)
            log = NULL;
        fa4__nvrtc_job_release(j);
        *j = *alt;
        if (log) {
            free(j->log);
            j->log = log;
        }
    } else {
        fa4__nvrtc_job_release(alt);
    }
    alt->cubin = NULL;
    alt->log = NULL;
}

/* A copy of job j with one option more, for a fallback build: nothing of j's results. */
static void fallback_job(fa4__nvrtc_job *alt, const fa4__nvrtc_job *j, int num_opts, const char *opt)
{
    *alt = *j;
    alt->cubin = NULL;
    alt->log = NULL;
    alt->status = FA4_OK;
    memset(&alt->info, 0, sizeof alt->info); /* the retry's own report, nothing stale */
    alt->cubin_frame = alt->cubin_regs = -1;
    alt->err[0] = '\0';
    alt->num_opts = num_opts;
    alt->opts[alt->num_opts++] = opt;
}

/* Programs with a spill_fallback whose stack frame (spills; fallback_cost) is over the program's
 * frame_tolerance (or that serialize wgmma) are compiled
 * once more with its first option, in parallel, and the build with fewer spill bytes is kept; any
 * still spilling then with the next option in place of the first, and so on: e.g. the sm90
 * backward's faster schedules need a few more registers than some mods leave. Program i starts
 * at level first[i] (a speculative build, below, has tried the levels before it). A program whose
 * cubin records no frame and came without a report is kept as it is. */
static void spill_fallbacks(fa4__nvrtc_job *jobs, const fa4__program_desc *const *descs, int n,
                            const int *base, const int *first)
{
    fa4__nvrtc_job alt[FA4_MAX_PROGRAMS];
    int idx[FA4_MAX_PROGRAMS];
    for (int level = 0; level < FA4__MAX_SPILL_FALLBACKS; level++) {
        int m = 0;
        for (int i = 0; i < n; i++) {
            if (level < first[i] || !descs[i] || !descs[i]->spill_fallback[level] ||
                (jobs[i].info.registers < 0 && jobs[i].cubin_frame < 0) ||
                fallback_cost(&jobs[i]) <= descs[i]->frame_tolerance || base[i] >= FA4__NVRTC_MAX_OPTS)
                continue;
            fallback_job(&alt[m], &jobs[i], base[i], descs[i]->spill_fallback[level]);
            idx[m++] = i;
        }
        if (m == 0)
            continue; /* a later level may still apply to a program that started there */
        fa4__nvrtc_run(alt, m);
        for (int a = 0; a < m; a++)
            keep_cleaner(&jobs[idx[a]], &alt[a], descs[idx[a]]->spill_fallback[level]);
    }
}

/* Compile every program the spec asks for into k->programs. */
static fa4_status compile_programs(fa4_ctx *ctx, const resolved *r, fa4_kernel *k)
{
    fa4_status st = FA4_OK;
    int nsrc = 0;
    const char *why = NULL;
    const fa4__embedded_file *files = fa4__kernel_sources(&nsrc, &why);
    if (!files)
        return fa4__set_error(ctx, FA4_ERR_IO, "kernel sources: %s", why);

    char *mod_header = NULL;
    if (k->mod) {
        mod_header = fa4__mod_emit_cuda(k->mod, r->source_name,
                                        (r->spec.flags & FA4_COMPILE_CHECKED) != 0);
        if (!mod_header)
            return fa4__set_error(ctx, FA4_ERR_OUT_OF_MEMORY, "out of memory emitting the mod");
    }
    const char *mod_text = mod_header ? mod_header : fa4__plain_mod_header;

    const char **hsrc = calloc((size_t)nsrc + 1, sizeof *hsrc);
    const char **hname = calloc((size_t)nsrc + 1, sizeof *hname);
    fa4__nvrtc_job *jobs = calloc(2 * FA4_MAX_PROGRAMS, sizeof *jobs); /* + speculative builds */
    const fa4__program_desc *descs[FA4_MAX_PROGRAMS] = {0};
    char(*path_opts)[64] = calloc(24, 64);
    char (*common)[64] = calloc(16, 64);
    if (!hsrc || !hname || !jobs || !path_opts || !common) {
        st = fa4__set_error(ctx, FA4_ERR_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    for (int i = 0; i < nsrc; i++) {
        hsrc[i] = files[i].text;
        hname[i] = files[i].name;
    }
    hsrc[nsrc] = mod_text;
    hname[nsrc] = "fa4_mod.cuh";

    int nc = 0;
    snprintf(common[nc++], 64, "--gpu-architecture=%s", r->arch);
    snprintf(common[nc++], 64, "-DFA4_ARCH=%d", r->arch_major * 10 + r->arch_minor);
    snprintf(common[nc++], 64, "-DFA4_CHECKED=%d", (r->spec.flags & FA4_COMPILE_CHECKED) ? 1 : 0);
    snprintf(common[nc++], 64, "-DFA4_FAST_MATH=%d",
             (r->spec.flags & FA4_COMPILE_FAST_MATH) ? 1 : 0);
    snprintf(common[nc++], 64, "-DFA4_DTYPE_%s=1",
             r->spec.dtype == FA4_DTYPE_BF16 ? "BF16" : "FP16");
    snprintf(common[nc++], 64, "-DFA4_HEAD_DIM=%d", r->spec.head_dim);
    snprintf(common[nc++], 64, "-DFA4_HEAD_DIM_V=%d", r->spec.head_dim_v);
    snprintf(common[nc++], 64, "-DFA4_SW_EXP2_PERCENT=%d", r->spec.sw_exp2_percent);
    snprintf(common[nc++], 64, "-DFA4_RESCALE_THRESHOLD=%#.9gf", (double)r->spec.rescale_threshold);
    int np = r->ops->options ? r->ops->options(&r->spec, r->arch, path_opts, 24) : 0;

    int n = 0;
    for (int p = 0; p < r->ops->num_programs; p++) {
        const fa4__program_desc *d = &r->ops->programs[p];
        if (!(d->needs & r->spec.flags))
            continue;
        if (d->needs == FA4_COMPILE_BLOCK_MASK && !(k->mod && fa4__mod_has_mask(k->mod)))
            continue; /* no mask_mod: nothing to turn into a block mask */
        if (d->wanted && !d->wanted(&r->spec, k->mod))
            continue;
        const fa4__embedded_file *main = find_source(files, nsrc, d->entry);
        if (!main) {
            st = fa4__set_error(ctx, FA4_ERR_INTERNAL, "kernel source '%s' is not in this build",
                                d->entry);
            goto out;
        }
        if (n >= FA4_MAX_PROGRAMS) {
            st = fa4__set_error(ctx, FA4_ERR_INTERNAL, "too many programs");
            goto out;
        }
        descs[n] = d;
        fa4__nvrtc_job *j = &jobs[n++];
        j->name = d->name;
        j->main_name = d->entry;
        j->main_src = main->text;
        j->header_src = hsrc;
        j->header_names = hname;
        j->num_headers = nsrc + 1;
        j->function = d->function;
        j->opts[j->num_opts++] = "-std=c++17";
        if (fa4__lineinfo())
            j->opts[j->num_opts++] = "-lineinfo";
        j->opts[j->num_opts++] = "--ptxas-options=-v";
        for (int i = 0; i < nc; i++)
            j->opts[j->num_opts++] = common[i];
        for (int i = 0; i < np && j->num_opts < FA4__NVRTC_MAX_OPTS; i++)
            j->opts[j->num_opts++] = path_opts[i];
        /* The sm80 forward and backward call the mods under per-position branches (fa4_allowed),
         * where fa4_idiv_u's magic number is computed again at each position (35 and 64 64-bit
         * divisions in dilated_window's at sm_80): there the general division is cheaper. */
        if ((!strcmp(d->entry, "sm80/fwd.cu") || !strcmp(d->entry, "sm80/bwd_main.cu")) &&
            j->num_opts < FA4__NVRTC_MAX_OPTS)
            j->opts[j->num_opts++] = "-DFA4_IDIV_UNIFORM=0";
    }

    /* Speculation: where the program's first build is likely to spill (its desc's speculate says
     * so for this spec and mod, with how many fallback levels), those levels are compiled beside it
     * instead of after it. The kept build is the one the sequential order keeps (the first unless it
     * spills and a level in order spills less; a level runs only while the kept build spills); only
     * the wall time differs. Where the first build would not spill, the extra builds only cost CPU
     * time, hence a predicate rather than every build. */
    int base[FA4_MAX_PROGRAMS], first[FA4_MAX_PROGRAMS], spec_of[2 * FA4_MAX_PROGRAMS],
        spec_level[2 * FA4_MAX_PROGRAMS], ns = 0;
    for (int i = 0; i < n; i++) {
        base[i] = jobs[i].num_opts; /* the options without any fallback's */
        first[i] = 0;
        const int want = descs[i]->speculate ? descs[i]->speculate(&r->spec, k->mod) : 0;
        for (int lv = 0; lv < want && lv < FA4__MAX_SPILL_FALLBACKS && descs[i]->spill_fallback[lv] &&
                         jobs[i].num_opts < FA4__NVRTC_MAX_OPTS && n + ns < 2 * FA4_MAX_PROGRAMS;
             lv++) {
            fallback_job(&jobs[n + ns], &jobs[i], base[i], descs[i]->spill_fallback[lv]);
            spec_of[ns] = i;
            spec_level[ns++] = lv;
            first[i] = lv + 1;
        }
    }
    double t0 = fa4__now_ms();
    fa4__nvrtc_run(jobs, n + ns);
    st = FA4_OK; /* a speculative build's failure is not the kernel's */
    for (int i = 0; i < n && st == FA4_OK; i++)
        st = jobs[i].status;
    /* in level order per program (they were queued so): each kept only where the build kept so far
     * still spills, as spill_fallbacks would */
    for (int a = 0; a < ns; a++) {
        fa4__nvrtc_job *j = &jobs[spec_of[a]];
        if (st == FA4_OK && fallback_cost(j) > descs[spec_of[a]]->frame_tolerance)
            keep_cleaner(j, &jobs[n + a], descs[spec_of[a]]->spill_fallback[spec_level[a]]);
        else
            fa4__nvrtc_job_release(&jobs[n + a]);
    }
    if (st == FA4_OK)
        spill_fallbacks(jobs, descs, n, base, first);
    k->info.compile_ms = fa4__now_ms() - t0;

    /* the whole log of every program, in order, for fa4_ctx_compile_log */
    {
        char *log = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&log, &size);
        if (f) {
            for (int i = 0; i < n; i++)
                fprintf(f, "==== program %s (%s) ====\n%s\n", jobs[i].name, jobs[i].main_name,
                        jobs[i].log ? jobs[i].log : "");
            if (fclose(f) == 0)
                fa4__set_compile_log(ctx, log);
            else
                free(log);
        }
    }
    if (st != FA4_OK) {
        for (int i = 0; i < n; i++) {
            if (jobs[i].status == FA4_OK)
                continue;
            st = jobs[i].user_line
                     ? fa4__set_error_at(ctx, jobs[i].status, jobs[i].user_line, 0, "%s",
                                         jobs[i].err)
                     : fa4__set_error(ctx, jobs[i].status, "%s", jobs[i].err);
            break;
        }
        goto out;
    }
    for (int i = 0; i < n; i++) {
        fa4__program *pg = &k->programs[i];
        snprintf(pg->name, sizeof pg->name, "%s", jobs[i].name);
        snprintf(pg->function, sizeof pg->function, "%s", jobs[i].function ? jobs[i].function : "");
        pg->cubin = jobs[i].cubin;
        pg->cubin_size = jobs[i].cubin_size;
        jobs[i].cubin = NULL;
        pg->info = jobs[i].info;
        if (r->ops->smem_bytes)
            pg->info.shared_dynamic = r->ops->smem_bytes(&r->spec, pg->name);
        size_t sl = strlen(mod_text) + strlen(jobs[i].main_src) + 256;
        pg->source = malloc(sl);
        if (pg->source)
            snprintf(pg->source, sl, "// ==== fa4_mod.cuh ====\n%s\n// ==== %s ====\n%s", mod_text,
                     jobs[i].main_name, jobs[i].main_src);
    }
    k->num_programs = n;

    /* out: jobs' buffers, the header arrays and the emitted text are released on every path */
out:
    if (jobs)
        for (int i = 0; i < 2 * FA4_MAX_PROGRAMS; i++)
            fa4__nvrtc_job_release(&jobs[i]);
    free(jobs);
    free(hsrc);
    free(hname);
    free(path_opts);
    free(common);
    free(mod_header);
    return st;
}

static void fill_info(fa4_kernel *k, const resolved *r)
{
    fa4_kernel_info *in = &k->info;
    in->struct_size = sizeof *in;
    memcpy(in->key, k->key, sizeof in->key);
    snprintf(in->arch, sizeof in->arch, "%s", r->arch);
    in->path = r->spec.path;
    in->dtype = r->spec.dtype;
    in->head_dim = r->spec.head_dim;
    in->head_dim_v = r->spec.head_dim_v;
    in->flags = r->spec.flags;
    in->has_score_mod = k->mod ? fa4__mod_has_score(k->mod) : 0;
    in->has_mask_mod = k->mod ? fa4__mod_has_mask(k->mod) : 0;
    in->num_aux = k->mod ? fa4__mod_num_aux(k->mod) : 0;
    in->num_programs = k->num_programs;
    for (int i = 0; i < k->num_programs; i++)
        in->programs[i] = k->programs[i].info;
}

/* Hash of the spec exactly as given (source bytes, every field, the arch it resolves to, and the
 * path override and line-info switch): equal raw keys mean equal kernels, so a repeated compile
 * skips parsing. */
static int raw_key(fa4_ctx *ctx, const fa4_kernel_spec *s, uint8_t out[16])
{
    if (!s || s->struct_size != sizeof *s)
        return -1;
    fa4__hasher *h = fa4__hasher_new();
    if (!h)
        return -1;
    size_t slen = s->source ? (s->source_len ? s->source_len : strlen(s->source)) : 0;
    int32_t fields[8] = {s->dtype, s->head_dim, s->head_dim_v, (int32_t)s->flags, s->path,
                         s->num_trainable_aux, s->sw_exp2_percent, 0};
    memcpy(&fields[7], &s->rescale_threshold, 4);
    fa4__hasher_update(h, fields, sizeof fields);
    const char *arch = s->arch && s->arch[0] ? s->arch : ctx->arch;
    const char *env = getenv("FA4JIT_PATH");
    const char *strs[4] = {arch, s->source_name ? s->source_name : "", env ? env : "",
                           fa4__lineinfo() ? "lineinfo" : ""};
    for (int i = 0; i < 4; i++)
        fa4__hasher_update(h, strs[i], strlen(strs[i]) + 1);
    /* an A/B switch read at compile time (path_sm90.c); hashed only when set, so other raw keys
     * stay as they were */
    const char *dq256 = getenv("FA4JIT_SM90_BWD256_DQ");
    if (dq256)
        fa4__hasher_update(h, dq256, strlen(dq256) + 1);
    static const char *const fwd_knobs[2] = {"FA4JIT_SM90_FWD_STG128", "FA4JIT_SM90_FWD_NEXT_EARLY"};
    for (int i = 0; i < 2; i++) { /* path_sm90.c's forward switches, likewise only where set */
        const char *v = getenv(fwd_knobs[i]);
        if (v) {
            fa4__hasher_update(h, fwd_knobs[i], strlen(fwd_knobs[i]) + 1);
            fa4__hasher_update(h, v, strlen(v) + 1);
        }
    }
    if (fa4__sm90_fwd64_consumers() == 3)
        fa4__hasher_update(h, "fwd64c3", 8);
    else if (fa4__sm90_fwd64_consumers() == 2)
        fa4__hasher_update(h, "fwd64c2", 8);
    for (int i = 0; i < s->num_trainable_aux && s->trainable_aux; i++) {
        const char *t = s->trainable_aux[i] ? s->trainable_aux[i] : "";
        fa4__hasher_update(h, t, strlen(t) + 1);
    }
    fa4__hasher_update(h, &slen, sizeof slen);
    if (slen)
        fa4__hasher_update(h, s->source, slen);
    fa4__hasher_digest(h, out);
    fa4__hasher_free(h);
    return 0;
}

static fa4_kernel *memory_lookup_raw(fa4_ctx *ctx, const uint8_t raw[16])
{
    for (fa4_kernel *k = ctx->kernels; k; k = k->next)
        if (!memcmp(k->raw_key, raw, 16))
            return k;
    return NULL;
}

/* A memory-table hit: one more holder; the info describes this lookup. */
static void take_hit(fa4_kernel *hit, double t_start)
{
    hit->refs++;
    hit->info.cache_result = FA4_CACHE_HIT_MEMORY;
    hit->info.cache_tier = -1;
    hit->info.compile_ms = 0;
    for (int i = 0; i < hit->info.num_programs; i++)
        hit->info.programs[i].compile_ms = 0;
    hit->info.lookup_ms = fa4__now_ms() - t_start;
}

static fa4_kernel *memory_lookup(fa4_ctx *ctx, const char *key_in)
{
    for (fa4_kernel *k = ctx->kernels; k; k = k->next)
        if (!strcmp(k->key_inputs, key_in))
            return k;
    return NULL;
}

fa4_status fa4_jit_compile(fa4_ctx *ctx, const fa4_kernel_spec *spec, fa4_kernel **out)
{
    double t_start = fa4__now_ms();
    resolved r;
    fa4_status st;
    fa4_kernel *k = NULL;
    char *kin = NULL;
    size_t kin_len = 0;
    int pushed = 0, lock = -1;

    if (!fa4__ctx_alive(ctx))
        return FA4_ERR_NULL_HANDLE;
    if (!out)
        return fa4__set_error(ctx, FA4_ERR_INVALID_ARGUMENT, "fa4_jit_compile: out is NULL");
    *out = NULL;
    /* fast path: the very same spec is already loaded in this ctx */
    uint8_t raw[16];
    int have_raw = raw_key(ctx, spec, raw) == 0;
    if (have_raw) {
        pthread_mutex_lock(&ctx->lock);
        fa4_kernel *hit = memory_lookup_raw(ctx, raw);
        if (hit)
            take_hit(hit, t_start);
        pthread_mutex_unlock(&ctx->lock);
        if (hit) {
            *out = hit;
            return fa4__set_error(ctx, FA4_OK, NULL);
        }
    }
    memset(&r, 0, sizeof r);
    st = resolve_spec(ctx, spec, &r);
    if (st != FA4_OK)
        return st;
    kin = key_inputs(&r, &kin_len);
    if (!kin) {
        st = fa4__set_error(ctx, FA4_ERR_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    int launchable = ctx->cu_context && strcmp(r.arch, ctx->arch) == 0;

    /* memory table: the same spec compiled before in this ctx */
    pthread_mutex_lock(&ctx->lock);
    fa4_kernel *hit = memory_lookup(ctx, kin);
    if (hit)
        take_hit(hit, t_start);
    pthread_mutex_unlock(&ctx->lock);
    if (hit) {
        *out = hit;
        fa4__set_error(ctx, FA4_OK, NULL);
        st = FA4_OK;
        goto out;
    }

    k = calloc(1, sizeof *k);
    if (!k) {
        st = fa4__set_error(ctx, FA4_ERR_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    k->magic = FA4__KERNEL_MAGIC;
    k->ctx = ctx;
    k->refs = 1;
    if (have_raw)
        memcpy(k->raw_key, raw, 16);
    k->mod = r.mod;
    r.mod = NULL;
    k->spec = r.spec;
    k->path = r.spec.path;
    k->key_inputs = kin;
    kin = NULL;
    fa4__cache_key(k->key_inputs, kin_len, k->key);
    if (r.source_len) {
        k->source_copy = malloc(r.source_len + 1);
        if (!k->source_copy) {
            st = fa4__set_error(ctx, FA4_ERR_OUT_OF_MEMORY, "out of memory");
            goto out;
        }
        memcpy(k->source_copy, r.source, r.source_len);
        k->source_copy[r.source_len] = '\0';
    }
    k->spec.source = k->source_copy;
    k->spec.source_len = r.source_len;
    k->spec.source_name = NULL;
    k->spec.arch = NULL;
    k->spec.trainable_aux = NULL;
    st = fa4__aux_layout(k);
    if (st != FA4_OK) {
        fa4__set_error(ctx, st, "cannot lay out the aux parameter block");
        goto out;
    }
    k->info.cache_tier = -1;

    for (int attempt = 0; attempt < 2; attempt++) {
        /* disk tiers */
        int from_disk = 0;
        fa4__cache_entry e;
        int tier = -1;
        if (ctx->cache && attempt == 0) {
            memset(&e, 0, sizeof e);
            int got = fa4__cache_get(ctx->cache, k->key_inputs, kin_len, &e, &tier);
            if (!got) {
                /* avoid duplicate compiles by concurrent processes, then look once more */
                lock = fa4__cache_lock(ctx->cache, k->key, 60000);
                if (lock >= 0)
                    got = fa4__cache_get(ctx->cache, k->key_inputs, kin_len, &e, &tier);
            }
            if (got) {
                if (fa4__kernel_from_entry(&e, k) == 0) {
                    from_disk = 1;
                    k->info.cache_result = FA4_CACHE_HIT_DISK;
                    k->info.cache_tier = tier;
                } else {
                    fa4__kernel_free_programs(k);
                    k->num_programs = 0;
                }
                fa4__cache_entry_free(&e);
            }
        }
        if (!from_disk) {
            st = compile_programs(ctx, &r, k);
            if (st != FA4_OK)
                goto out;
            k->info.cache_result = FA4_CACHE_MISS;
            k->info.cache_tier = -1;
            fa4__kernel_cache_store(ctx, &r.spec, r.arch, k);
        }
        if (lock >= 0) {
            fa4__cache_unlock(ctx->cache, lock);
            lock = -1;
        }
        if (!launchable)
            break;
        if (!pushed) {
            st = fa4__ctx_push(ctx);
            if (st != FA4_OK)
                goto out;
            pushed = 1;
        }
        st = fa4__kernel_load(ctx, k);
        if (st == FA4_OK)
            break;
        if (!from_disk)
            goto out;
        /* G13: the driver rejected a cached cubin: quarantine it and compile once more */
        fa4__cache_quarantine(ctx->cache, k->key_inputs, kin_len);
        fa4__kernel_free_programs(k);
        k->num_programs = 0;
    }
    fill_info(k, &r);
    k->info.launchable = launchable;

    if (fa4__handle_register(k) != 0) {
        st = fa4__set_error(ctx, FA4_ERR_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    pthread_mutex_lock(&ctx->lock);
    fa4_kernel *again = memory_lookup(ctx, k->key_inputs);
    if (again) {
        /* another thread finished the same spec first: share its kernel, drop ours */
        again->refs++;
        pthread_mutex_unlock(&ctx->lock);
        fa4__handle_unregister(k);
        fa4__kernel_free(k);
        k = again;
    } else {
        k->next = ctx->kernels;
        ctx->kernels = k;
        pthread_mutex_unlock(&ctx->lock);
    }
    k->info.lookup_ms = fa4__now_ms() - t_start;
    *out = k;
    k = NULL;
    fa4__set_error(ctx, FA4_OK, NULL);
    st = FA4_OK;

    /* out: a kernel not handed to the caller is freed; the CUDA context popped; the lock released */
out:
    if (lock >= 0)
        fa4__cache_unlock(ctx->cache, lock);
    if (k)
        fa4__kernel_free(k);
    if (pushed)
        fa4__ctx_pop(ctx);
    fa4__mod_free(r.mod);
    free(kin);
    return st;
}
