/*
 * suite.h - the pieces of the sm80 GPU suite shared between its files: the shipped test mods, the
 * compiled kernel variants, the case description, device tensors in any layout, aux values, block
 * masks, and the per-case result. test_sm80.c drives; case.c runs one case; bmask.c builds block
 * masks; bench.c times the benchmark shape; ref.c is the float64 reference.
 */
#ifndef FA4_TESTS_GPU_SUITE_H
#define FA4_TESTS_GPU_SUITE_H

#include "gpu_util.h"

extern fa4_ctx *g_ctx;
extern int g_threads;

/* The suite's "every mod" group uses mods below M_COUNT; of the ones after it the bench uses the
 * shipped mods/document.mod and mods/prefix_lm.mod (with the aux of bench/cases.py), and group I
 * the wide relative bias (a trainable table whose indices per CTA exceed the sm90 backward's
 * aux-gradient window), group O and the bench mods/t5_bias.mod (32 buckets, max distance 128), as
 * it is and with its table trainable (M_T5_TRAIN). */
enum { M_NONE, M_CAUSAL, M_ALIBI, M_SOFTCAP, M_WINDOW, M_RELBIAS, M_ALIBI_CAUSAL, M_DOCUMENT, M_COUNT,
       M_DOC_CAUSAL = M_COUNT, M_PREFIX_LM, M_WIDEBIAS, M_T5, M_T5_TRAIN, M_ALL };

typedef struct mod_def {
    const char *name;
    const char *src;
    const char *trainable;
    int has_mask;
} mod_def;

extern const mod_def mods[M_ALL];
int64_t relbias_index(int h, int q_idx, int kv_idx);
int64_t widebias_index(int h, int q_idx, int kv_idx);
int64_t t5_index(int h, int q_idx, int kv_idx);
#define WIDEBIAS_NUMEL 24000

typedef struct kvariant {
    int mod, dtype, d, dv, checked;
    int nogqa; /* compiled without FA4_COMPILE_GQA (every other variant has it) */
    fa4_kernel *k;
    fa4__mod *m; /* host-side parse for the CPU evaluator */
    fa4_status st;
    char err[512];
    double ms;
} kvariant;

extern kvariant g_kv[128];
extern int g_nkv;
/* index of the (mod, dtype, d, dv, checked, nogqa) variant, registered on first use */
int variant_index(int mod, int dtype, int d, int dv, int checked, int nogqa);
double now_ms(void);

enum { L_BHSD, L_BSHD, L_PADDED, L_COUNT };
enum { BM_NONE, BM_GPU, BM_RANDOM };

typedef struct tcase {
    int mod, dtype, d, dv;
    int batch, hq, hkv, sq, skv;
    int layout, varlen, bm, q_block, kv_block, bm_heads1;
    int bm_unchecked; /* bench: block-mask lists not cross-checked on the CPU (too many to evaluate) */
    int64_t q_off, kv_off;
    int bwd, determ;
    int dlse; /* the backward gets a random d loss / d LSE (fa4_bwd_args.dlse) */
    int aux_small; /* aux tensor shorter than the indices read: reads clamp */
    int checked;   /* compiled with FA4_COMPILE_CHECKED (out-of-range aux reads trap) */
    int det_rot_env; /* > 0: the case runs with FA4JIT_SM90_BWD_DET_ROTATE=det_rot_env - 1 */
    int det_bm_env;  /* > 0: the case runs with FA4JIT_SM90_BWD_DET_BM=det_bm_env - 1 */
    int det80_env;   /* > 0: the case runs with FA4JIT_SM90_BWD_DET80_BM=det80_env - 1 */
    int det80;       /* a deterministic block-masked case meant for the sm90 80-query main (tag) */
    int hi80_env;    /* 1: the case runs with FA4JIT_SM90_BWD80_HEADS_INNER=0 */
    int desc80_env;  /* 1: the case runs with FA4JIT_SM90_BWD80_DESC=1 */
    int nosplit_env; /* 1: the case runs with FA4JIT_SM90_BWD_SPLIT=0 (GQA heads in one CTA) */
    int nogqa;       /* 1: its kernel is compiled without FA4_COMPILE_GQA (no GQA program) */
    int split_heads_env; /* > 0: the case runs with FA4JIT_SM90_BWD_SPLIT_HEADS=split_heads_env */
    double dout_scale; /* > 0: dO's random values times this (large aux-gradient terms), else 1 */
    double scale; /* != 0: the softmax scale passed to the launches (fa4_fwd_args.scale), else 0 (1 / sqrt(D)) */
    int det_heads_inner; /* group O: deterministic GQA with a block mask for every head (a tag) */
    int validation; /* > 0: a launch-validation case number */
    uint64_t seed;
    char tags[256];
} tcase;

typedef struct dtensor {
    CUdeviceptr ptr;
    size_t bytes;
    int64_t sb, sh, ss;
    int64_t s_fixed; /* rows per batch entry (fixed) or total rows (varlen) */
    int h, d;
    fa4_tensor t;
} dtensor;

typedef struct err {
    double rel;    /* ||out - ref|| / ||ref|| */
    double maxabs;
    int64_t bad;   /* non-finite outputs where the reference is finite, or -inf mismatches */
} err;

void make_tensor(dtensor *x, const tcase *c, int dtype, int h, int64_t rows_total, int64_t s_fixed, int d);
void free_tensor(dtensor *x);
double *upload_random(dtensor *x, int dtype, int64_t rows, rng *r, double sigma);
double *download(const dtensor *x, int dtype, int64_t rows);
err compare(const double *out, const double *ref, size_t n);
fa4_tensor lse_tensor(CUdeviceptr p, int64_t B, int h, int64_t S);

typedef struct aux_set {
    fa4_aux_value dev[3], host[3];
    int n;
    CUdeviceptr dbuf, grad;
    void *hbuf;
    int64_t grad_numel;
} aux_set;

void make_aux(aux_set *a, const tcase *c, rng *r, int64_t idx_len);
void free_aux(aux_set *a);

typedef struct bmask {
    fa4_block_mask bm;
    CUdeviceptr arr[8];
    unsigned char *status; /* [bmb][bmh][nq][nkv] */
    int ok;                /* GPU-created lists equal the CPU's */
} bmask;

void bm_random(bmask *m, const tcase *c, rng *r);
fa4_status bm_gpu(bmask *m, const tcase *c, fa4_kernel *k, const fa4__mod *mod, const aux_set *a);
void bm_free(bmask *m);

typedef struct case_out {
    err e[6]; /* o, lse, dq, dk, dv, daux */
    int have[6];
    int pass;
    int determ_ok; /* -1: not checked */
    int bm_ok;     /* -1: no GPU block mask */
    int sched_ok;  /* -1: the path has one tile schedule; else the forward's static and dynamic
                      schedules gave bitwise the same O and LSE */
    char note[200];
} case_out;

void run_case(tcase *c, case_out *res);
typedef struct bench_shape {
    const char *label;
    int mod, batch, hq, hkv, s, d, block_mask, window; /* block_mask: 1 broadcast, 2 one per batch entry, 3 broadcast with 384-row query blocks */
} bench_shape;
extern const bench_shape bench_shapes[];
extern const int num_bench_shapes;
void bench(const bench_shape *b);

#endif /* FA4_TESTS_GPU_SUITE_H */
