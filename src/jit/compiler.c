/*
 * compiler.c - runs NVRTC on assembled programs. Each program is compiled in its own thread (forward
 * and backward in parallel), its cubin and log kept; ptxas' verbose report gives the resource
 * figures; an error that points into the user's mod (via the #line directives of the generated
 * header) is reported at the user's line and column. NVRTC rejecting generated code is our bug, and
 * the message says so.
 */
#include "compiler.h"

#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double fa4__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int parse_int_before(const char *p, const char *start)
{
    /* the number that ends just before p (skipping spaces), e.g. "12 bytes" -> 12 */
    while (p > start && p[-1] == ' ')
        p--;
    const char *e = p;
    while (p > start && p[-1] >= '0' && p[-1] <= '9')
        p--;
    return p == e ? 0 : atoi(p);
}

static uint64_t rd_le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

int fa4__cubin_resources(const uint8_t *cubin, size_t size, const char *function, int *frame, int *regs)
{
    *frame = *regs = -1;
    /* ELF64, little endian */
    if (!cubin || !function || size < 64 || memcmp(cubin, "\x7f" "ELF", 4) || cubin[4] != 2 || cubin[5] != 1)
        return -1;
    const uint64_t shoff = rd_le(cubin + 0x28, 8);
    const uint64_t shentsize = rd_le(cubin + 0x3a, 2), shnum = rd_le(cubin + 0x3c, 2), shstrndx = rd_le(cubin + 0x3e, 2);
    if (shentsize < 64 || shnum == 0 || shstrndx >= shnum || shoff > size || shnum * shentsize > size - shoff)
        return -1;
#define FA4_SH(i) (cubin + shoff + (uint64_t)(i) * shentsize)
    const uint64_t stroff = rd_le(FA4_SH(shstrndx) + 24, 8), strsize = rd_le(FA4_SH(shstrndx) + 32, 8);
    if (stroff > size || strsize > size - stroff)
        return -1;
    uint64_t info_off = 0, info_size = 0, sym_off = 0, sym_size = 0, sym_ent = 0, symstr = 0;
    int have_info = 0, have_sym = 0;
    for (uint64_t i = 0; i < shnum; i++) {
        const uint8_t *h = FA4_SH(i);
        const uint64_t name = rd_le(h, 4), type = rd_le(h + 4, 4), off = rd_le(h + 24, 8), sz = rd_le(h + 32, 8);
        if (off > size || sz > size - off || name >= strsize)
            continue;
        const char *nm = (const char *)cubin + stroff + name;
        if (!memchr(nm, '\0', strsize - name))
            continue;
        if (type == 2 /* SHT_SYMTAB */) {
            const uint64_t link = rd_le(h + 40, 4);
            sym_off = off, sym_size = sz, sym_ent = rd_le(h + 56, 8), symstr = link, have_sym = link < shnum;
        } else if (!strcmp(nm, ".nv.info")) {
            info_off = off, info_size = sz, have_info = 1;
        }
    }
    if (!have_info || !have_sym || sym_ent < 24)
        return -1;
    const uint64_t sstr_off = rd_le(FA4_SH(symstr) + 24, 8), sstr_size = rd_le(FA4_SH(symstr) + 32, 8);
#undef FA4_SH
    if (sstr_off > size || sstr_size > size - sstr_off)
        return -1;
    const size_t flen = strlen(function);
    int64_t sym = -1;
    for (uint64_t j = 0; j * sym_ent + 24 <= sym_size; j++) {
        const uint64_t name = rd_le(cubin + sym_off + j * sym_ent, 4);
        if (name < sstr_size && sstr_size - name > flen &&
            !memcmp(cubin + sstr_off + name, function, flen + 1)) {
            sym = (int64_t)j;
            break;
        }
    }
    if (sym < 0)
        return -1;
    /* records: format byte, attribute byte, a 16-bit value or (format 4, EIFMT_SVAL) size */
    for (uint64_t o = 0; o + 4 <= info_size;) {
        const uint8_t *r = cubin + info_off + o;
        const uint64_t len = r[0] == 4 ? rd_le(r + 2, 2) : 0;
        if (len > info_size - o - 4)
            break;
        if (r[0] == 4 && len == 8 && (int64_t)rd_le(r + 4, 4) == sym) {
            if (r[1] == 0x11)
                *frame = (int)rd_le(r + 8, 4);
            else if (r[1] == 0x2f)
                *regs = (int)rd_le(r + 8, 4);
        }
        o += 4 + len;
    }
    return *frame >= 0 && *regs >= 0 ? 0 : -1;
}

void fa4__ptxas_parse(const char *log, const char *function, fa4_program_info *info)
{
    if (!log)
        return;
    char marker[160];
    snprintf(marker, sizeof marker, "Compiling entry function '%s'", function ? function : "");
    const char *sec = function ? strstr(log, marker) : NULL;
    if (!sec)
        sec = strstr(log, "Compiling entry function");
    if (sec) {
        const char *end = strstr(sec + 1, "Compiling entry function");
        if (!end)
            end = sec + strlen(sec);
        /* The entry's "Function properties" and those of the non-inlined functions ptxas lists
         * after it (up to the next entry) are summed: a callee's line comes last, so taking the
         * last value reported the callee's zeros for a spilling kernel (fa4_bwd_turn_agent). */
        int stack = -1, st = -1, ld = -1;
        for (const char *p = sec; p < end; p++) {
            if (!strncmp(p, "bytes stack frame", 17))
                stack = (stack > 0 ? stack : 0) + parse_int_before(p, sec);
            else if (!strncmp(p, "bytes spill stores", 18))
                st = (st > 0 ? st : 0) + parse_int_before(p, sec);
            else if (!strncmp(p, "bytes spill loads", 17))
                ld = (ld > 0 ? ld : 0) + parse_int_before(p, sec);
            else if (!strncmp(p, "Used ", 5))
                info->registers = atoi(p + 5);
            else if (!strncmp(p, "bytes smem", 10))
                info->shared_static = parse_int_before(p, sec);
        }
        if (stack >= 0)
            info->stack_frame = stack;
        if (st >= 0)
            info->spill_stores = st;
        if (ld >= 0)
            info->spill_loads = ld;
    }
    int serialized = 0;
    for (const char *p = log; (p = strstr(p, "wgmma")) != NULL; p++) {
        const char *eol = strchr(p, '\n');
        const char *s = strstr(p, "serialized");
        if (s && (!eol || s < eol)) {
            serialized++;
            p = eol ? eol : p + strlen(p) - 1;
        }
    }
    info->wgmma_serialized = serialized;
}

/* Find the first "NAME(LINE): error" of the log; when NAME is not a kernel source file it is the
 * user's function (the generated header's #line directives name it), so that line is the user's. */
int fa4__nvrtc_user_line(const char *log)
{
    if (!log)
        return 0;
    const char *e = strstr(log, "): error");
    if (!e)
        return 0;
    const char *open = e;
    while (open > log && *open != '(')
        open--;
    const char *name = open;
    while (name > log && name[-1] != '\n')
        name--;
    size_t nlen = (size_t)(open - name);
    int is_kernel = (nlen >= 3 && !strncmp(open - 3, ".cu", 3)) ||
                    (nlen >= 4 && !strncmp(open - 4, ".cuh", 4)) ||
                    (nlen >= 2 && !strncmp(open - 2, ".h", 2));
    return !is_kernel && nlen > 0 ? atoi(open + 1) : 0;
}

static void *run_job(void *arg)
{
    fa4__nvrtc_job *job = arg;
    nvrtcProgram prog = NULL;
    double t0 = fa4__now_ms();
    job->cubin_frame = job->cubin_regs = -1;
    nvrtcResult r = nvrtcCreateProgram(&prog, job->main_src, job->main_name, job->num_headers,
                                       job->header_src, job->header_names);
    if (r != NVRTC_SUCCESS) {
        job->status = r == NVRTC_ERROR_OUT_OF_MEMORY ? FA4_ERR_OUT_OF_MEMORY
                                                     : FA4_ERR_NVRTC_UNAVAILABLE;
        snprintf(job->err, sizeof job->err, "nvrtcCreateProgram(%s): %s", job->name,
                 nvrtcGetErrorString(r));
        return NULL;
    }
    nvrtcResult cr = nvrtcCompileProgram(prog, job->num_opts, job->opts);
    size_t log_size = 0;
    if (nvrtcGetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
        job->log = malloc(log_size);
        if (job->log && nvrtcGetProgramLog(prog, job->log) != NVRTC_SUCCESS) {
            free(job->log);
            job->log = NULL;
        }
    }
    if (cr != NVRTC_SUCCESS) {
        job->status = FA4_ERR_NVRTC;
        job->user_line = fa4__nvrtc_user_line(job->log);
        /* first error line of the log, for the one-line message */
        char first[400] = "";
        if (job->log) {
            const char *e = strstr(job->log, "error");
            if (e) {
                const char *s = e;
                while (s > job->log && s[-1] != '\n')
                    s--;
                const char *n = strchr(s, '\n');
                size_t l = n ? (size_t)(n - s) : strlen(s);
                if (l >= sizeof first)
                    l = sizeof first - 1;
                memcpy(first, s, l);
                first[l] = '\0';
            }
        }
        snprintf(job->err, sizeof job->err,
                 "NVRTC rejected the generated program '%s' (%s); this is a bug in fa4jit, please "
                 "report it with the compile log: %s",
                 job->name, nvrtcGetErrorString(cr), first[0] ? first : "(no log)");
        goto out;
    }
    size_t n = 0;
    if (nvrtcGetCUBINSize(prog, &n) != NVRTC_SUCCESS || n == 0) {
        job->status = FA4_ERR_NVRTC;
        snprintf(job->err, sizeof job->err,
                 "NVRTC produced no cubin for '%s' (is the architecture a real one, not compute_XX?)",
                 job->name);
        goto out;
    }
    job->cubin = malloc(n);
    if (!job->cubin) {
        job->status = FA4_ERR_OUT_OF_MEMORY;
        snprintf(job->err, sizeof job->err, "out of memory for a %zu-byte cubin", n);
        goto out;
    }
    if (nvrtcGetCUBIN(prog, (char *)job->cubin) != NVRTC_SUCCESS) {
        job->status = FA4_ERR_NVRTC;
        snprintf(job->err, sizeof job->err, "nvrtcGetCUBIN failed for '%s'", job->name);
        goto out;
    }
    job->cubin_size = n;
    job->status = FA4_OK;
    snprintf(job->info.name, sizeof job->info.name, "%s", job->name);
    fa4__cubin_resources(job->cubin, n, job->function, &job->cubin_frame, &job->cubin_regs);
    if (job->log && strstr(job->log, "Compiling entry function")) {
        fa4__ptxas_parse(job->log, job->function, &job->info);
    } else {
        /* NVRTC served the cubin from its compute cache: ptxas did not run, so there is no
         * report. The cubin still records the entry's registers and stack frame; no frame means
         * no spill, a frame means spills of unknown size (-1: a zero would hide them). */
        job->info.registers = job->cubin_regs;
        job->info.stack_frame = job->cubin_frame;
        job->info.spill_stores = job->info.spill_loads = job->cubin_frame == 0 ? 0 : -1;
        job->info.shared_static = -1;
    }
    job->info.cubin_size = n;

    /* out: the program object is destroyed on every path */
out:
    job->info.compile_ms = fa4__now_ms() - t0;
    nvrtcDestroyProgram(&prog);
    return NULL;
}

fa4_status fa4__nvrtc_run(fa4__nvrtc_job *jobs, int n)
{
    pthread_t threads[2 * FA4_MAX_PROGRAMS];
    int started[2 * FA4_MAX_PROGRAMS] = {0};
    if (n > 2 * FA4_MAX_PROGRAMS) /* the programs and a speculative build of each */
        return FA4_ERR_INTERNAL;
    for (int i = 0; i < n; i++)
        jobs[i].status = FA4_ERR_INTERNAL;
    /* job 0 runs on this thread; the others in their own (run inline if a thread cannot start) */
    for (int i = 1; i < n; i++)
        started[i] = pthread_create(&threads[i], NULL, run_job, &jobs[i]) == 0;
    if (n > 0)
        run_job(&jobs[0]);
    for (int i = 1; i < n; i++) {
        if (started[i])
            pthread_join(threads[i], NULL);
        else
            run_job(&jobs[i]);
    }
    for (int i = 0; i < n; i++)
        if (jobs[i].status != FA4_OK)
            return jobs[i].status;
    return FA4_OK;
}

void fa4__nvrtc_job_release(fa4__nvrtc_job *job)
{
    free(job->cubin);
    free(job->log);
    job->cubin = NULL;
    job->log = NULL;
}
