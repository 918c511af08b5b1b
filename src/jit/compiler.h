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
    const char *memo_dir;          /* set by fa4__nvrtc_run: FA4JIT_TEST_NVRTC_MEMO (compiler.c) */
    const char *memo_helper;       /* and FA4JIT_TEST_NVRTC_HELPER */
    /* out */
    fa4_status status;
    uint8_t *cubin;                /* malloc'd */
    size_t cubin_size;
    char *log;                     /* malloc'd, may be NULL */
    fa4_program_info info;
    /* the entry's stack frame and registers as the cubin records them (EIATTR_FRAME_SIZE /
     * EIATTR_REGCOUNT of .nv.info), -1 where the cubin could not be read: known with or without
     * ptxas' report, so the spill fallback decides on it (compile.c) */
    int cubin_frame, cubin_regs;
    char err[1024];
    int user_line, user_col;       /* when the first error points at the user's mod source */
} fa4__nvrtc_job;

/* Run every job (in parallel threads when n > 1). Returns FA4_OK when all succeeded, else the
 * status of the first failed job; each job carries its own status and log. */
fa4_status fa4__nvrtc_run(fa4__nvrtc_job *jobs, int n);
void fa4__nvrtc_job_release(fa4__nvrtc_job *job);

/* Whether a cubin (ELF64) defines a function symbol of this name: 1 yes, 0 no, -1 not readable. */
int fa4__cubin_has_function(const uint8_t *cubin, size_t size, const char *function);
/* The names of a cubin's function symbols (pointers into the cubin): the first cap into names,
 * the count returned (it may exceed cap), -1 where the cubin is not readable. fa4__kernel_load
 * keeps them, so that fa4__kernel_function's lookup of a kernel a build does not have makes no
 * failing driver call (compute-sanitizer reports those as API errors). */
int fa4__cubin_functions(const uint8_t *cubin, size_t size, const char **names, int cap);
/* The stack frame and register count of `function` from a cubin's .nv.info section (ELF64,
 * EIATTR_FRAME_SIZE 0x11, EIATTR_REGCOUNT 0x2f: {symbol index, value}); 0 on success, -1 where
 * the cubin is not such an ELF or does not record them (exposed for tests). */
int fa4__cubin_resources(const uint8_t *cubin, size_t size, const char *function, int *frame, int *regs);

/* Parse ptxas' verbose report for `function` into info (exposed for tests). */
void fa4__ptxas_parse(const char *log, const char *function, fa4_program_info *info);

/* The user's line of the first error in an NVRTC log, or 0 when the error is in our sources. */
int fa4__nvrtc_user_line(const char *log);

double fa4__now_ms(void);

#endif /* FA4_JIT_COMPILER_H */
