/*
 * bwd_compile_check.c - deviceless compile check of the sm90 backward main program
 * (src/kernels/sm90/bwd_main.cu, not yet wired into path_sm90.c): compiles fa4_sm90_bwd_main for
 * sm_90a with NVRTC through the library's own machinery (the embedded kernel sources, the mod front
 * end's emitted fa4_mod.cuh, the options of compile.c's compile_programs) for D 64, 128 and 256
 * (sm90/bwd256.cuh's kernel there), bf16 and fp16, with no mod, alibi (score_mod), causal
 * (mask_mod), softcap_causal (both), rel_bias and t5_bias with trainable tables, and fails on spills whose
 * stack frame is over the library's tolerance for bwd_main90 (192 bytes, path_sm90.c; kept at
 * level 0 as the library keeps them; for the default bf16 builds, over the frame listed in
 * known_frames below, 0 for those not listed), a stack frame without spills, serialized wgmma
 * (C7520) or any other ptxas warning. Prints one resource line per variant.
 * Usage: bwd_compile_check [--mods DIR] [--filter SUBSTR] [--cubin-dir DIR] [--verbose] [--checked] [--no-fallback]
 *                          [--dv N] [--mod NAME] [--main80] [--function NAME] [--frame-tolerance N]
 *                          [-DNAME=VALUE ...]
 * --checked compiles checked builds (FA4_CHECKED=1, trapping aux reads); --dv N sets Dv (default D);
 * --no-fallback reports the first build as it is (no spill fallback levels).
 * --mod NAME checks that one mod (any file of the mods directory; "plain": none) instead of the
 * list; rel_bias keeps its trainable table. --main80 compiles bwd_main80.cu (the bwd_main90m80
 * program, 80-query steps) instead: the library builds it for padded D = Dv = 128 without a
 * score_mod, and its spill fallback is a stub (the 64 main runs instead), so a spill fails here
 * and no fallback level is tried.
 * -D options are passed to NVRTC, for trying the kernel's knobs (e.g. -DFA4_SM90_BWD_STAGES=2).
 * --function NAME reports that entry function of the program instead of fa4_sm90_bwd_main (e.g.
 * fa4_sm90_bwd_main_persist with -DFA4_SM90_BWD_PERSIST=1); --frame-tolerance N then allows spills
 * within a stack frame of N bytes (what a launcher that keeps such a build accepts).
 * Exit status: 0 all clean, 1 a variant failed, 77 skipped (no NVRTC).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler.h"
#include "internal.h"
#include "mod/mod.h"

#ifndef FA4_TEST_SOURCE_DIR
#define FA4_TEST_SOURCE_DIR "."
#endif

typedef struct variant {
    const char *mod;       /* file under mods/ without ".mod"; NULL: plain */
    const char *trainable; /* aux name to mark trainable, or NULL */
} variant;

static const variant variants[] = {
    {NULL, NULL}, {"alibi", NULL}, {"causal", NULL}, {"softcap_causal", NULL}, {"rel_bias", "bias"},
    {"t5_bias", "bias"},
};

/* The default builds (bf16, no -D option, the 64-query main's entry) that still spill within the
 * library's tolerance, with the stack frame each has now (NVRTC 13): their spills may not grow,
 * and every other default bf16 build must have none. alibi's and fixed t5_bias's went in session
 * 36 (bwd_common.cuh fa4_wg_thread0). Lower or drop an entry when a change takes spills away. */
typedef struct known_frame {
    const char *mod;
    int d;
    int frame;
} known_frame;
static const known_frame known_frames[] = {{"softcap_causal", 128, 48}, {"t5_bias", 128, 24}};

static int known_frame_of(const char *mod, int d)
{
    for (size_t i = 0; i < sizeof known_frames / sizeof known_frames[0]; i++)
        if (mod && !strcmp(known_frames[i].mod, mod) && known_frames[i].d == d)
            return known_frames[i].frame;
    return 0;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;
    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
        goto out;
    buf = malloc((size_t)n + 1);
    if (!buf)
        goto out;
    if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
        goto out;
    }
    buf[n] = '\0';
    *len = (size_t)n;
    /* out: the file is closed on every path */
out:
    fclose(f);
    return buf;
}

/* The emitted fa4_mod.cuh of a shipped mod (malloc'd), or NULL with a message on stderr. */
static char *mod_header(const char *dir, const variant *v, int checked)
{
    char path[1024];
    size_t len = 0;
    char *src, *text = NULL;
    fa4__mod *m = NULL;
    fa4__diag diag;
    snprintf(path, sizeof path, "%s/%s.mod", dir, v->mod);
    src = read_file(path, &len);
    if (!src) {
        fprintf(stderr, "cannot read %s\n", path);
        return NULL;
    }
    memset(&diag, 0, sizeof diag);
    if (fa4__mod_parse(src, len, path, &m, &diag) != FA4_OK) {
        fprintf(stderr, "%s: %s\n", path, diag.message);
        goto out;
    }
    if (v->trainable && fa4__mod_set_trainable(m, &v->trainable, 1, &diag) != FA4_OK) {
        fprintf(stderr, "%s: %s\n", path, diag.message);
        goto out;
    }
    text = fa4__mod_emit_cuda(m, path, checked);
    /* out: the mod and the source are released on every path */
out:
    fa4__mod_free(m);
    free(src);
    return text;
}

static int log_has_warning(const char *log)
{
    return log && (strstr(log, "warning") || strstr(log, "Warning"));
}

int main(int argc, char **argv)
{
    const char *mods_dir = FA4_TEST_SOURCE_DIR "/mods", *filter = NULL, *cubin_dir = NULL;
    int verbose = 0, failed = 0, ran = 0, ndefs = 0, checked = 0, dv_opt = 0, no_fallback = 0;
    const char *defs[8];
    const char *only_mod = NULL;
    int main80 = 0, frame_tol = -1;
    const char *function = "fa4_sm90_bwd_main";
    variant one = {NULL, NULL};
    const variant *list = variants;
    size_t nvariants = sizeof variants / sizeof variants[0];
    int nsrc = 0;
    const char *why = NULL;
    const fa4__embedded_file *files;
    const fa4__embedded_file *main_file = NULL;
    const char **hsrc, **hname;

    /* a cubin from the CUDA compute cache comes without ptxas' report */
    setenv("CUDA_CACHE_DISABLE", "1", 1);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--mods") && i + 1 < argc)
            mods_dir = argv[++i];
        else if (!strcmp(argv[i], "--filter") && i + 1 < argc)
            filter = argv[++i];
        else if (!strcmp(argv[i], "--cubin-dir") && i + 1 < argc)
            cubin_dir = argv[++i];
        else if (!strcmp(argv[i], "--verbose"))
            verbose = 1;
        else if (!strcmp(argv[i], "--no-fallback"))
            no_fallback = 1;
        else if (!strcmp(argv[i], "--checked"))
            checked = 1;
        else if (!strcmp(argv[i], "--dv") && i + 1 < argc)
            dv_opt = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--mod") && i + 1 < argc)
            only_mod = argv[++i];
        else if (!strcmp(argv[i], "--main80"))
            main80 = 1;
        else if (!strcmp(argv[i], "--function") && i + 1 < argc)
            function = argv[++i];
        else if (!strcmp(argv[i], "--frame-tolerance") && i + 1 < argc)
            frame_tol = atoi(argv[++i]);
        else if (!strncmp(argv[i], "-D", 2) && ndefs < 8)
            defs[ndefs++] = argv[i];
        else {
            fprintf(stderr, "usage: %s [--mods DIR] [--filter SUBSTR] [--cubin-dir DIR] [--verbose] [--checked] [--no-fallback] [--dv N] "
                    "[--mod NAME] [--main80] [--function NAME] [--frame-tolerance N] [-DNAME=VALUE ...]\n",
                    argv[0]);
            return 2;
        }
    }
    files = fa4__kernel_sources(&nsrc, &why);
    if (!files) {
        fprintf(stderr, "kernel sources: %s\n", why ? why : "unavailable");
        return 1;
    }
    for (int i = 0; i < nsrc; i++)
        if (!strcmp(files[i].name, main80 ? "sm90/bwd_main80.cu" : "sm90/bwd_main.cu"))
            main_file = &files[i];
    if (!main_file) {
        fprintf(stderr, "%s is not among the embedded kernel sources\n", main80 ? "sm90/bwd_main80.cu" : "sm90/bwd_main.cu");
        return 1;
    }
    if (main80)
        no_fallback = 1; /* the library's fallback there is a stub */
    if (only_mod) {
        one.mod = strcmp(only_mod, "plain") ? only_mod : NULL;
        for (size_t vi = 0; vi < nvariants; vi++)
            if (variants[vi].mod && one.mod && !strcmp(variants[vi].mod, one.mod))
                one.trainable = variants[vi].trainable;
        list = &one;
        nvariants = 1;
    }
    hsrc = calloc((size_t)nsrc + 1, sizeof *hsrc);
    hname = calloc((size_t)nsrc + 1, sizeof *hname);
    if (!hsrc || !hname)
        return 1;
    for (int i = 0; i < nsrc; i++) {
        hsrc[i] = files[i].text;
        hname[i] = files[i].name;
    }
    hname[nsrc] = "fa4_mod.cuh";

    for (size_t vi = 0; vi < nvariants; vi++) {
        const variant *v = &list[vi];
        char *hdr = v->mod ? mod_header(mods_dir, v, checked) : NULL;
        if (v->mod && !hdr) {
            failed = 1;
            continue;
        }
        hsrc[nsrc] = hdr ? hdr : fa4__plain_mod_header;
        for (int d = 64; d <= 256; d += 64) {
            if (d == 192) /* the stub: the sm80 backward runs there */
                continue;
            for (int bf = 1; bf >= 0; bf--) {
                char label[128], o_dim[32], o_dimv[32];
                fa4__nvrtc_job job;
                fa4_status st;
                const int dv = dv_opt > 0 ? dv_opt : d;
                if (main80 && (d != 128 || dv != 128))
                    continue;
                snprintf(label, sizeof label, "%s%s d%d%s %s%s%s", v->mod ? v->mod : "plain",
                         v->trainable ? "(trainable)" : "", d, dv != d ? (dv == 64 ? "/64" : "/dv") : "",
                         bf ? "bf16" : "fp16", checked ? " checked" : "", main80 ? " m80" : "");
                if (filter && !strstr(label, filter))
                    continue;
                memset(&job, 0, sizeof job);
                snprintf(o_dim, sizeof o_dim, "-DFA4_HEAD_DIM=%d", d);
                snprintf(o_dimv, sizeof o_dimv, "-DFA4_HEAD_DIM_V=%d", dv);
                job.name = "bwd_main";
                job.main_name = main_file->name;
                job.main_src = main_file->text;
                job.header_src = hsrc;
                job.header_names = hname;
                job.num_headers = nsrc + 1;
                job.function = function;
                job.opts[job.num_opts++] = "-std=c++17";
                job.opts[job.num_opts++] = "-lineinfo";
                job.opts[job.num_opts++] = "--ptxas-options=-v";
                job.opts[job.num_opts++] = "--gpu-architecture=sm_90a";
                job.opts[job.num_opts++] = "-DFA4_ARCH=90";
                job.opts[job.num_opts++] = checked ? "-DFA4_CHECKED=1" : "-DFA4_CHECKED=0";
                job.opts[job.num_opts++] = "-DFA4_FAST_MATH=0";
                job.opts[job.num_opts++] = bf ? "-DFA4_DTYPE_BF16=1" : "-DFA4_DTYPE_FP16=1";
                job.opts[job.num_opts++] = o_dim;
                job.opts[job.num_opts++] = o_dimv;
                job.opts[job.num_opts++] = "-DFA4_SW_EXP2_PERCENT=0";
                job.opts[job.num_opts++] = "-DFA4_RESCALE_THRESHOLD=0.00000000f";
                job.opts[job.num_opts++] = "-DFA4_PATH_SM90=1";
                for (int k = 0; k < ndefs; k++)
                    job.opts[job.num_opts++] = defs[k];
                ran++;
                st = fa4__nvrtc_run(&job, 1);
                /* as the library (path_sm90.c's spill_fallback list for bwd_main90): a build that
                 * spills is compiled again at the next fallback level (bwd_consumer.cuh: 1 undoes a
                 * score_mod's split score stage where level 0 split it, else is the full fallback: no
                 * fast interior tiles, the deterministic dQ turn passed at the step's end; 2 the full
                 * fallback), and the last one must be clean */
                static const char *const levels[] = {"-DFA4_SM90_BWD_FALLBACK=1", "-DFA4_SM90_BWD_FALLBACK=2"};
                /* path_sm90.c's frame_tolerance of bwd_main90 (level 0 kept up to this stack frame,
                 * the cubin's record, measured faster than its clean fallbacks; 192 bytes); none for
                 * the 80-query main */
                const int tolerance = frame_tol >= 0 ? frame_tol
                                                      : fa4__frame_tolerance(FA4_PATH_SM90, main80 ? "bwd_main90m80" : "bwd_main90");
                const int base_opts = job.num_opts;
                int fell_back = 0;
                while (!no_fallback && fell_back < 2 && st == FA4_OK && job.info.registers >= 0 &&
                       (job.cubin_frame > tolerance || job.info.wgmma_serialized)) {
                    fa4__nvrtc_job_release(&job);
                    job.num_opts = base_opts;
                    job.opts[job.num_opts++] = levels[fell_back++];
                    st = fa4__nvrtc_run(&job, 1);
                }
                if (st != FA4_OK) {
                    if (st == FA4_ERR_NVRTC_UNAVAILABLE) {
                        printf("SKIP: NVRTC unavailable (%s)\n", job.err);
                        fa4__nvrtc_job_release(&job);
                        free(hdr);
                        free(hsrc);
                        free(hname);
                        return 77;
                    }
                    printf("FAIL %-32s compile: %s\n%s\n", label, job.err, job.log ? job.log : "");
                    failed = 1;
                } else {
                    const fa4_program_info *in = &job.info;
                    /* -1: NVRTC served the cubin from the CUDA compute cache, no report */
                    const int spilled = in->spill_stores + in->spill_loads;
                    /* default bf16 builds: no more than the frame listed in known_frames */
                    const int known = known_frame_of(v->mod, d);
                    const int allowed = bf && frame_tol < 0 && !main80 && ndefs == 0 && !checked && dv_opt <= 0 && !fell_back
                                            ? (known < tolerance ? known : tolerance)
                                            : tolerance;
                    /* a stack frame only with the tolerated spills (a local array otherwise) */
                    const int bad = in->registers < 0 || job.cubin_frame < 0 || (spilled > 0 && job.cubin_frame > allowed) ||
                                    (in->stack_frame != 0 && spilled == 0) ||
                                    in->wgmma_serialized != 0 || log_has_warning(job.log);
                    printf("%s %-32s regs %3d  spill st/ld %d/%d  stack %d  smem static %d  wgmma serialized %d  "
                           "%.0f ms%s%s%s\n",
                           bad ? "FAIL" : "ok  ", label, in->registers, in->spill_stores, in->spill_loads,
                           in->stack_frame, in->shared_static, in->wgmma_serialized, in->compile_ms,
                           fell_back ? "  (spilled: fallback " : "", fell_back ? levels[fell_back - 1] : "",
                           fell_back ? ")" : "");
                    if (bad || verbose)
                        printf("%s\n", job.log ? job.log : "");
                    failed |= bad;
                    if (cubin_dir && job.cubin) {
                        char path[1024];
                        FILE *f;
                        snprintf(path, sizeof path, "%s/bwd_main%s_%s_d%d_%s.cubin", cubin_dir, main80 ? "80" : "",
                                 v->mod ? v->mod : "plain", d, bf ? "bf16" : "fp16");
                        f = fopen(path, "wb");
                        if (f) {
                            fwrite(job.cubin, 1, job.cubin_size, f);
                            fclose(f);
                        }
                    }
                }
                fflush(stdout);
                fa4__nvrtc_job_release(&job);
            }
        }
        free(hdr);
    }
    free(hsrc);
    free(hname);
    if (!ran) {
        printf("no variant matched\n");
        return 1;
    }
    return failed ? 1 : 0;
}
