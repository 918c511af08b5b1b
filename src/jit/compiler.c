/*
 * compiler.c - runs NVRTC on assembled programs. Each program is compiled in its own thread (forward
 * and backward in parallel), its cubin and log kept; ptxas' verbose report gives the resource
 * figures; an error that points into the user's mod (via the #line directives of the generated
 * header) is reported at the user's line and column. NVRTC rejecting generated code is our bug, and
 * the message says so.
 */
#include "compiler.h"

#include <errno.h>
#include <fcntl.h>
#include <nvrtc.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hash.h"

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

/* A cubin's symbol table, string table and .nv.info section (offsets into the cubin, each checked
 * to lie inside it). 0 when the ELF could be read, -1 when it is not an ELF64 LE object or is
 * malformed. */
typedef struct {
    uint64_t sym_off, sym_size, sym_ent, sstr_off, sstr_size;
    uint64_t info_off, info_size;
    int have_info;
} cubin_tables;

static int cubin_read_tables(const uint8_t *cubin, size_t size, cubin_tables *t)
{
    memset(t, 0, sizeof *t);
    /* ELF64, little endian */
    if (!cubin || size < 64 || memcmp(cubin, "\x7f" "ELF", 4) || cubin[4] != 2 || cubin[5] != 1)
        return -1;
    const uint64_t shoff = rd_le(cubin + 0x28, 8);
    const uint64_t shentsize = rd_le(cubin + 0x3a, 2), shnum = rd_le(cubin + 0x3c, 2), shstrndx = rd_le(cubin + 0x3e, 2);
    if (shentsize < 64 || shnum == 0 || shstrndx >= shnum || shoff > size || shnum * shentsize > size - shoff)
        return -1;
#define FA4_SH(i) (cubin + shoff + (uint64_t)(i) * shentsize)
    const uint64_t stroff = rd_le(FA4_SH(shstrndx) + 24, 8), strsize = rd_le(FA4_SH(shstrndx) + 32, 8);
    if (stroff > size || strsize > size - stroff)
        return -1;
    uint64_t symstr = 0;
    int have_sym = 0;
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
            t->sym_off = off, t->sym_size = sz, t->sym_ent = rd_le(h + 56, 8), symstr = link, have_sym = link < shnum;
        } else if (!strcmp(nm, ".nv.info")) {
            t->info_off = off, t->info_size = sz, t->have_info = 1;
        }
    }
    if (!have_sym || t->sym_ent < 24)
        return -1;
    t->sstr_off = rd_le(FA4_SH(symstr) + 24, 8), t->sstr_size = rd_le(FA4_SH(symstr) + 32, 8);
#undef FA4_SH
    if (t->sstr_off > size || t->sstr_size > size - t->sstr_off)
        return -1;
    return 0;
}

/* The index of the symbol named function in t's table, -1 where there is none; *st_info its
 * st_info byte */
static int64_t cubin_find_symbol(const uint8_t *cubin, const cubin_tables *t, const char *function, unsigned *st_info)
{
    const size_t flen = strlen(function);
    for (uint64_t j = 0; j * t->sym_ent + 24 <= t->sym_size; j++) {
        const uint8_t *e = cubin + t->sym_off + j * t->sym_ent;
        const uint64_t name = rd_le(e, 4);
        if (name < t->sstr_size && t->sstr_size - name > flen && !memcmp(cubin + t->sstr_off + name, function, flen + 1)) {
            *st_info = e[4];
            return (int64_t)j;
        }
    }
    return -1;
}

int fa4__cubin_has_function(const uint8_t *cubin, size_t size, const char *function)
{
    cubin_tables t;
    unsigned info = 0;
    if (!function || cubin_read_tables(cubin, size, &t) != 0)
        return -1;
    return cubin_find_symbol(cubin, &t, function, &info) >= 0 && (info & 0xf) == 2 /* STT_FUNC */;
}

int fa4__cubin_functions(const uint8_t *cubin, size_t size, const char **names, int cap)
{
    cubin_tables t;
    if (cubin_read_tables(cubin, size, &t) != 0)
        return -1;
    int n = 0;
    for (uint64_t j = 0; j * t.sym_ent + 24 <= t.sym_size; j++) {
        const uint8_t *e = cubin + t.sym_off + j * t.sym_ent;
        const uint64_t name = rd_le(e, 4);
        if ((e[4] & 0xf) != 2 /* STT_FUNC */ || name >= t.sstr_size)
            continue;
        const char *nm = (const char *)cubin + t.sstr_off + name;
        if (!memchr(nm, '\0', t.sstr_size - name))
            return -1;
        if (n < cap)
            names[n] = nm;
        n++;
    }
    return n;
}

int fa4__cubin_resources(const uint8_t *cubin, size_t size, const char *function, int *frame, int *regs)
{
    *frame = *regs = -1;
    cubin_tables s;
    unsigned info = 0;
    if (!function || cubin_read_tables(cubin, size, &s) != 0 || !s.have_info)
        return -1;
    const int64_t sym = cubin_find_symbol(cubin, &s, function, &info);
    if (sym < 0)
        return -1;
    /* records: format byte, attribute byte, a 16-bit value or (format 4, EIFMT_SVAL) size */
    for (uint64_t o = 0; o + 4 <= s.info_size;) {
        const uint8_t *r = cubin + s.info_off + o;
        const uint64_t len = r[0] == 4 ? rd_le(r + 2, 2) : 0;
        if (len > s.info_size - o - 4)
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


/* ------------------------------------------------ test runs' NVRTC memo (FA4JIT_TEST_NVRTC_MEMO)
 * One CI run compiles the same program (the same source, headers and options) in many tests: each
 * shipped mod's forward in the resource guard and again as a default build of the knob checks, a
 * backward's helper programs in every build of a knob that does not reach them, the same
 * backward main in the guard and in bwd_compile_check. With FA4JIT_TEST_NVRTC_MEMO=DIR (ctest
 * and scripts/test.sh set it to a folder of the build tree that each run starts empty) a successful
 * NVRTC run leaves its cubin and its log in DIR under the hash of everything NVRTC read, and a job
 * with the same hash takes them instead of compiling. The log is NVRTC's own, so ptxas' report,
 * its warnings and all that the guards judge from them are those of a real compile of these very
 * bytes; only compile_ms is the lookup's. A test aid, not a cache for users: DIR is trusted (no
 * checksum, no key check, no locking beyond the atomic rename; a damaged file is a miss at worst
 * only where it is short), which the kernel cache (src/cache) is not. Each lookup and store is a
 * line of DIR/memo.log, so a run can say what it saved. Read only in builds configured with
 * -DFA4JIT_TEST_NVRTC_MEMO=ON (fa4__nvrtc_run); elsewhere the memo is never on.
 * With FA4JIT_TEST_NVRTC_HELPER=PROGRAM as well (tests/tools/nvrtc_memo_helper.c, built without
 * sanitizers) a miss is compiled by that program in a process of its own, which leaves the entry:
 * under AddressSanitizer's allocator NVRTC takes about 1.8 times the CPU time, and NVRTC is not
 * our code. Where the helper leaves no entry (a failed compile) the job compiles here as always. */

#define MEMO_MAGIC "FA4MEMO1"
#define MEMO_REQ_MAGIC "FA4MREQ1"

extern char **environ;

static void memo_add(fa4__hasher *h, const void *data, size_t n)
{
    uint64_t len = n; /* length-prefixed: no two sequences of fields hash the same bytes */
    fa4__hasher_update(h, &len, sizeof len);
    fa4__hasher_update(h, data, n);
}

static void memo_add_str(fa4__hasher *h, const char *s)
{
    memo_add(h, s ? s : "", s ? strlen(s) : 0);
}

/* Marks in used[] the headers that the #include directives of text name (a name matches a header
 * of that name or one ending in "/name", so that a name relative to the including file matches
 * too) and pushes those not marked before on todo; -1 for an include by macro or of a file that
 * is none of ours. */
static int memo_scan(const fa4__nvrtc_job *job, const char *text, unsigned char *used, int *todo, int *nt)
{
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        const char *q = p;
        while (*q == ' ' || *q == '\t')
            q++;
        if (*q++ != '#')
            continue;
        while (*q == ' ' || *q == '\t')
            q++;
        if (strncmp(q, "include", 7))
            continue;
        q += 7;
        while (*q == ' ' || *q == '\t')
            q++;
        const char close = *q == '"' ? '"' : *q == '<' ? '>' : 0;
        if (!close)
            return -1;
        const char *name = ++q;
        while (*q && *q != close && *q != '\n')
            q++;
        const size_t len = (size_t)(q - name);
        int found = 0;
        for (int i = 0; i < job->num_headers; i++) {
            const char *h = job->header_names[i];
            const size_t hl = h ? strlen(h) : 0;
            if (hl < len || strncmp(h + hl - len, name, len) || (hl > len && h[hl - len - 1] != '/'))
                continue;
            found = 1;
            if (!used[i]) {
                used[i] = 1;
                todo[(*nt)++] = i;
            }
        }
        /* a quoted name that is none of ours ("../x.cuh", a file on disk): NVRTC finds it some
         * other way, so count everything */
        if (close == '"' && (!found || memchr(name, '.', len) == name))
            return -1;
    }
    return 0;
}

/* Which headers the job can read, in used[]: the closure of its #include directives, counting
 * those under #if too (a superset of what NVRTC reads); every header where a source includes by
 * macro or an option could add one. Keying the memo on these alone, a program hits where a
 * kernel file that it does not include changed (the knob checks switch a knob in one file and
 * build the backward, whose programs but one never include it). 0, or -1 when out of memory. */
static int memo_reads(const fa4__nvrtc_job *job, unsigned char *used)
{
    int all = 0;
    for (int i = 0; i < job->num_opts; i++)
        all |= !strncmp(job->opts[i], "-I", 2) || !strncmp(job->opts[i], "--include", 9) ||
               strstr(job->opts[i], "-include") != NULL;
    int *todo = malloc(((size_t)job->num_headers + 1) * sizeof *todo);
    if (!todo)
        return -1;
    int nt = 0;
    all = all || memo_scan(job, job->main_src, used, todo, &nt) != 0;
    while (!all && nt > 0) {
        const char *src = job->header_src[todo[--nt]];
        all = memo_scan(job, src ? src : "", used, todo, &nt) != 0;
    }
    free(todo);
    if (all)
        memset(used, 1, (size_t)job->num_headers);
    return 0;
}

/* The memo key of a job: 32 hex digits; 0, or -1 when out of memory. */
static int memo_key(const fa4__nvrtc_job *job, char hex[33])
{
    unsigned char *used = calloc((size_t)job->num_headers + 1, 1);
    fa4__hasher *h = fa4__hasher_new();
    if (!h || !used || memo_reads(job, used) != 0) {
        free(used);
        fa4__hasher_free(h);
        return -1;
    }
    int v[2] = {0, 0};
    nvrtcVersion(&v[0], &v[1]);
    memo_add(h, MEMO_MAGIC, 8);
    memo_add(h, v, sizeof v);
    memo_add_str(h, job->main_name);
    memo_add_str(h, job->main_src);
    for (int i = 0; i < job->num_headers; i++) {
        if (!used[i])
            continue;
        memo_add_str(h, job->header_names[i]);
        memo_add_str(h, job->header_src[i]);
    }
    free(used);
    for (int i = 0; i < job->num_opts; i++)
        memo_add_str(h, job->opts[i]);
    uint8_t d[16];
    fa4__hasher_digest(h, d);
    fa4__hasher_free(h);
    fa4__hex(d, 16, hex);
    return 0;
}

static void memo_note(const char *dir, const char *what, const fa4__nvrtc_job *job, const char *key,
                      double ms)
{
    char path[4096], line[256];
    snprintf(path, sizeof path, "%s/memo.log", dir);
    int n = snprintf(line, sizeof line, "%s %s %s %.0f\n", what, key, job->name, ms);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd >= 0) {
        if (n > 0 && write(fd, line, (size_t)n) < 0) { /* one write: whole lines from every process */
        }
        close(fd);
    }
}

/* The memo's cubin and log for key into job (malloc'd); 0 on a hit, -1 on a miss. */
static int memo_get(const char *dir, const char *key, fa4__nvrtc_job *job)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.nvrtc", dir, key);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    uint8_t *buf = NULL;
    int rc = -1;
    if (fstat(fd, &st) != 0 || st.st_size < 24 || st.st_size > (1 << 30))
        goto out;
    buf = malloc((size_t)st.st_size);
    if (!buf)
        goto out;
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
        if (r <= 0)
            goto out;
        got += (size_t)r;
    }
    uint64_t cubin_size, log_size;
    memcpy(&cubin_size, buf + 8, 8);
    memcpy(&log_size, buf + 16, 8);
    if (memcmp(buf, MEMO_MAGIC, 8) || cubin_size == 0 || cubin_size > got ||
        log_size > got || 24 + cubin_size + log_size != got)
        goto out;
    job->cubin = malloc(cubin_size);
    job->log = log_size ? malloc(log_size + 1) : NULL;
    if (!job->cubin || (log_size && !job->log)) {
        fa4__nvrtc_job_release(job);
        goto out;
    }
    memcpy(job->cubin, buf + 24, cubin_size);
    if (log_size) {
        memcpy(job->log, buf + 24 + cubin_size, log_size);
        job->log[log_size] = '\0';
    }
    job->cubin_size = cubin_size;
    rc = 0;
    /* out: the file and the buffer are released on every path */
out:
    free(buf);
    close(fd);
    return rc;
}

/* Keep a successful job's cubin and log under key (a temporary file, then a rename: a reader sees
 * a whole file or none). Failures are ignored: the next job compiles. */
static void memo_put(const char *dir, const char *key, const fa4__nvrtc_job *job)
{
    char tmp[4096], path[4096];
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return;
    snprintf(tmp, sizeof tmp, "%s/.tmp.%s.XXXXXX", dir, key);
    snprintf(path, sizeof path, "%s/%s.nvrtc", dir, key);
    int fd = mkstemp(tmp);
    if (fd < 0)
        return;
    uint64_t sizes[2] = {job->cubin_size, job->log ? strlen(job->log) : 0};
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        close(fd);
        unlink(tmp);
        return;
    }
    int ok = fwrite(MEMO_MAGIC, 1, 8, f) == 8 && fwrite(sizes, 8, 2, f) == 2 &&
             fwrite(job->cubin, 1, job->cubin_size, f) == job->cubin_size &&
             (!sizes[1] || fwrite(job->log, 1, sizes[1], f) == sizes[1]);
    if (fclose(f) != 0 || !ok || rename(tmp, path) != 0)
        unlink(tmp);
}

/* NVRTC on job: its log and, on success (status FA4_OK), its cubin. */
static void nvrtc_compile(fa4__nvrtc_job *job)
{
    nvrtcProgram prog = NULL;
    nvrtcResult r = nvrtcCreateProgram(&prog, job->main_src, job->main_name, job->num_headers,
                                       job->header_src, job->header_names);
    if (r != NVRTC_SUCCESS) {
        job->status = r == NVRTC_ERROR_OUT_OF_MEMORY ? FA4_ERR_OUT_OF_MEMORY
                                                     : FA4_ERR_NVRTC_UNAVAILABLE;
        snprintf(job->err, sizeof job->err, "nvrtcCreateProgram(%s): %s", job->name,
                 nvrtcGetErrorString(r));
        return;
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

    /* out: the program object is destroyed on every path */
out:
    nvrtcDestroyProgram(&prog);
}

static int req_str(FILE *f, const char *s)
{
    uint64_t n = s ? strlen(s) : 0;
    return fwrite(&n, 8, 1, f) == 1 && (!n || fwrite(s, 1, n, f) == n);
}

/* Compile job in the helper's process, which leaves the memo entry of key; 0 when it did. The
 * request (everything NVRTC reads, as nvrtc_memo_helper.c describes) goes through a file. */
static int memo_spawn(const char *dir, const char *helper, const char *key, const fa4__nvrtc_job *job)
{
    char req[4096], entry[4096];
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return -1;
    snprintf(req, sizeof req, "%s/.req.%s.XXXXXX", dir, key);
    snprintf(entry, sizeof entry, "%s/%s.nvrtc", dir, key);
    int fd = mkstemp(req);
    if (fd < 0)
        return -1;
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        close(fd);
        unlink(req);
        return -1;
    }
    uint64_t nh = (uint64_t)job->num_headers, no = (uint64_t)job->num_opts;
    int ok = fwrite(MEMO_REQ_MAGIC, 1, 8, f) == 8 && req_str(f, job->main_name) &&
             req_str(f, job->main_src) && fwrite(&nh, 8, 1, f) == 1;
    for (int i = 0; ok && i < job->num_headers; i++)
        ok = req_str(f, job->header_names[i]) && req_str(f, job->header_src[i]);
    ok = ok && fwrite(&no, 8, 1, f) == 1;
    for (int i = 0; ok && i < job->num_opts; i++)
        ok = req_str(f, job->opts[i]);
    if (fclose(f) != 0 || !ok) {
        unlink(req);
        return -1;
    }
    /* the helper has no sanitizer: none preloaded into it either (the Python tests preload ASan) */
    size_t n = 0;
    while (environ[n])
        n++;
    char **envp = malloc((n + 1) * sizeof *envp);
    int rc = -1, status = 0;
    if (envp) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (strncmp(environ[i], "LD_PRELOAD=", 11))
                envp[k++] = environ[i];
        envp[k] = NULL;
        char *argv[] = {(char *)helper, req, entry, NULL};
        pid_t pid;
        rc = posix_spawn(&pid, helper, NULL, NULL, argv, envp);
        if (rc == 0)
            while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR) {
                    rc = -1;
                    break;
                }
        free(envp);
    }
    unlink(req);
    return rc == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static void *run_job(void *arg)
{
    fa4__nvrtc_job *job = arg;
    double t0 = fa4__now_ms();
    job->cubin_frame = job->cubin_regs = -1;
    char key[33];
    const char *memo = job->memo_dir && memo_key(job, key) == 0 ? job->memo_dir : NULL;
    const int hit = memo && memo_get(memo, key, job) == 0;
    const int spawned = !hit && memo && job->memo_helper &&
                        memo_spawn(memo, job->memo_helper, key, job) == 0 && memo_get(memo, key, job) == 0;
    if (hit || spawned)
        job->status = FA4_OK;
    else
        nvrtc_compile(job);
    if (job->status != FA4_OK) {
        job->info.compile_ms = fa4__now_ms() - t0;
        return NULL;
    }
    /* only a build that ran ptxas: one NVRTC took from the compute cache has no report to pass on */
    if (memo && !hit && !spawned && job->log && strstr(job->log, "Compiling entry function"))
        memo_put(memo, key, job);
    const size_t n = job->cubin_size;
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
    job->info.compile_ms = fa4__now_ms() - t0;
    if (memo)
        memo_note(memo, hit ? "hit" : spawned ? "helper" : "put", job, key, job->info.compile_ms);
    return NULL;
}

fa4_status fa4__nvrtc_run(fa4__nvrtc_job *jobs, int n)
{
    pthread_t threads[2 * FA4_MAX_PROGRAMS];
    int started[2 * FA4_MAX_PROGRAMS] = {0};
    if (n > 2 * FA4_MAX_PROGRAMS) /* the programs and a speculative build of each */
        return FA4_ERR_INTERNAL;
    /* read here, not in the threads: getenv is not safe against a concurrent setenv; only in test
     * builds (-DFA4JIT_TEST_NVRTC_MEMO=ON, scripts/test.sh): a shipped library never reads them */
#if defined(FA4_TEST_NVRTC_MEMO) && FA4_TEST_NVRTC_MEMO
    const char *memo = getenv("FA4JIT_TEST_NVRTC_MEMO");
    const char *helper = getenv("FA4JIT_TEST_NVRTC_HELPER");
#else
    const char *memo = NULL, *helper = NULL;
#endif
    for (int i = 0; i < n; i++) {
        jobs[i].status = FA4_ERR_INTERNAL;
        jobs[i].memo_dir = memo && memo[0] ? memo : NULL;
        jobs[i].memo_helper = helper && helper[0] ? helper : NULL;
    }
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
