/*
 * compiler.h - compiling assembled programs with NVRTC, several in parallel threads, and reading the
 * resource report (registers, spills, shared memory, serialized wgmma) out of ptxas' log.
 */
#ifndef FA4_JIT_COMPILER_H
#define FA4_JIT_COMPILER_H

#include "internal.h"

#define FA4__NVRTC_MAX_OPTS 40

typedef struct fa4__nvrtc_job {
    /* in */
    const char *name;              /* program name: "fwd" */
    const char *main_name;         /* file name NVRTC reports, e.g. "sm80/fwd.cu" */
    const char *main_src;
    const char *const *header_src; /* every includable file: kernel sources + "fa4_mod.cuh" */
    const char *const *header_names;
    int num_headers;
    const char *opts[FA4__NVRTC_MAX_OPTS];
    int num_opts;
    const char *function;          /* entry whose resources are reported */
    /* out */
    fa4_status status;
    uint8_t *cubin;                /* malloc'd */
    size_t cubin_size;
    char *log;                     /* malloc'd, may be NULL */
    fa4_program_info info;
    char err[1024];
    int user_line, user_col;       /* when the first error points at the user's mod source */
} fa4__nvrtc_job;

/* Run every job (in parallel threads when n > 1). Returns FA4_OK when all succeeded, else the
 * status of the first failed job; each job carries its own status and log. */
fa4_status fa4__nvrtc_run(fa4__nvrtc_job *jobs, int n);
void fa4__nvrtc_job_release(fa4__nvrtc_job *job);

/* Parse ptxas' verbose report for `function` into info (exposed for tests). */
void fa4__ptxas_parse(const char *log, const char *function, fa4_program_info *info);

/* The user's line of the first error in an NVRTC log, or 0 when the error is in our sources. */
int fa4__nvrtc_user_line(const char *log);

double fa4__now_ms(void);

#endif /* FA4_JIT_COMPILER_H */
