/*
 * nvrtc_memo_helper.c - runs one NVRTC compile for the test runs' NVRTC memo (src/jit/compiler.c,
 * FA4JIT_TEST_NVRTC_HELPER) in a process of its own, built without sanitizers. NVRTC is most of a
 * CI run and does most of its allocating itself: under AddressSanitizer's allocator it takes about
 * 1.8 times the CPU time (sm_90a forward and backward of softcap: 9.2 s against 5.0), while its
 * allocations are not our code and ASan never sees what NVRTC reads of ours (NVRTC is not
 * instrumented). So the sanitizer build keeps everything of ours (emitter, program assembly, spill
 * fallbacks, reading ptxas' report) and hands the NVRTC call itself to this program.
 *
 * usage: nvrtc_memo_helper REQUEST ENTRY - REQUEST as compiler.c's memo_request writes it (the
 * magic, then main_name, main_src, the number of headers, each header's name and source, the
 * number of options and each option, every string as a 64-bit length and its bytes); on a clean
 * compile that ran ptxas, writes ENTRY (a temporary file, then a rename) in the memo's format: the
 * magic, the cubin's and the log's 64-bit sizes, the cubin, the log. Exit 0 when ENTRY was written;
 * 1 otherwise (the caller then compiles in its own process, which reports any error).
 */
#include <nvrtc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MEMO_MAGIC "FA4MEMO1"
#define REQ_MAGIC "FA4MREQ1"

typedef struct reader {
    const uint8_t *p, *end;
} reader;

static int read_u64(reader *r, uint64_t *v)
{
    if (r->end - r->p < 8)
        return -1;
    memcpy(v, r->p, 8);
    r->p += 8;
    return 0;
}

/* A string of the request, NUL-terminated in a copy (strings point into their own allocation). */
static char *read_str(reader *r)
{
    uint64_t n;
    if (read_u64(r, &n) != 0 || n > (uint64_t)(r->end - r->p))
        return NULL;
    char *s = malloc(n + 1);
    if (!s)
        return NULL;
    memcpy(s, r->p, n);
    s[n] = '\0';
    r->p += n;
    return s;
}

static uint8_t *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    uint8_t *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n == cap) {
            uint8_t *b = realloc(buf, cap = cap ? 2 * cap : 1 << 20);
            if (!b) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = b;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    fclose(f);
    *size = n;
    return buf;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: nvrtc_memo_helper REQUEST ENTRY\n");
        return 2;
    }
    size_t size = 0;
    uint8_t *req = slurp(argv[1], &size);
    if (!req || size < 8 || memcmp(req, REQ_MAGIC, 8))
        return 1;
    /* a helper lives for one compile: what it allocates goes with it */
    reader r = {req + 8, req + size};
    char *main_name = read_str(&r), *main_src = read_str(&r);
    uint64_t nh = 0, no = 0;
    if (!main_name || !main_src || read_u64(&r, &nh) != 0 || nh > 4096)
        return 1;
    char **names = calloc(nh + 1, sizeof *names), **srcs = calloc(nh + 1, sizeof *srcs);
    for (uint64_t i = 0; names && srcs && i < nh; i++)
        if (!(names[i] = read_str(&r)) || !(srcs[i] = read_str(&r)))
            return 1;
    if (!names || !srcs || read_u64(&r, &no) != 0 || no > 256)
        return 1;
    char **opts = calloc(no + 1, sizeof *opts);
    for (uint64_t i = 0; opts && i < no; i++)
        if (!(opts[i] = read_str(&r)))
            return 1;
    if (!opts)
        return 1;

    nvrtcProgram prog;
    if (nvrtcCreateProgram(&prog, main_src, main_name, (int)nh, (const char *const *)srcs,
                           (const char *const *)names) != NVRTC_SUCCESS)
        return 1;
    size_t cubin_size = 0, log_size = 0;
    if (nvrtcCompileProgram(prog, (int)no, (const char *const *)opts) != NVRTC_SUCCESS ||
        nvrtcGetCUBINSize(prog, &cubin_size) != NVRTC_SUCCESS || cubin_size == 0 ||
        nvrtcGetProgramLogSize(prog, &log_size) != NVRTC_SUCCESS)
        return 1;
    char *cubin = malloc(cubin_size), *log = malloc(log_size + 1);
    if (!cubin || !log || nvrtcGetCUBIN(prog, cubin) != NVRTC_SUCCESS ||
        nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS)
        return 1;
    log[log_size] = '\0';
    /* as compiler.c keeps: only a build whose log carries ptxas' report */
    if (!strstr(log, "Compiling entry function"))
        return 1;

    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.XXXXXX", argv[2]);
    int fd = mkstemp(tmp);
    if (fd < 0)
        return 1;
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        close(fd);
        unlink(tmp);
        return 1;
    }
    uint64_t sizes[2] = {cubin_size, strlen(log)};
    int ok = fwrite(MEMO_MAGIC, 1, 8, f) == 8 && fwrite(sizes, 8, 2, f) == 2 &&
             fwrite(cubin, 1, cubin_size, f) == cubin_size &&
             (!sizes[1] || fwrite(log, 1, sizes[1], f) == sizes[1]);
    if (fclose(f) != 0 || !ok || rename(tmp, argv[2]) != 0) {
        unlink(tmp);
        return 1;
    }
    return 0;
}
