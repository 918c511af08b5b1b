/*
 * emit_internal.h - the text buffer and line bookkeeping shared by the CUDA emitter's files:
 * emit_cuda.c (the user's functions, forward and dual), emit_straight.c (their straight-line form
 * for release builds), emit_deriv.c (the backward's entry points), emit_deps.c (dependence
 * analyses) and emit_prelude.c (the fixed pieces: interface macros, the aux struct and accessors,
 * int32 helpers, the float math, dual-number arithmetic).
 */
#ifndef FA4_JIT_MOD_EMIT_INTERNAL_H
#define FA4_JIT_MOD_EMIT_INTERNAL_H

#include "mod_internal.h"

#define FA4__MAX_HOIST 32

typedef struct fa4__emitter {
    const fa4__mod *m;
    char *buf;
    size_t len, cap;
    int failed;        /* out of memory: the result is NULL */
    int out_line;      /* physical line of the next character written, 1-based */
    int mapped;        /* a #line into the user's source is in force */
    int map_line;      /* the user line the next output line stands for */
    int dual;          /* emitting the dual-number form */
    unsigned char **varying;   /* fa4__mod_varying of the mod (NULL: out of memory) */
    const unsigned char *vary; /* its row for the function being emitted; NULL: take every value
                                  as varying */
    int bare;          /* the next operator needs no parentheses of its own */
    int bare_pending;
    int spec;          /* straight-line form: statements run under predicates (emit_cuda.c) */
    int spec_ret;      /* the function has a return inside an if: fa4_ret / fa4_done exist */
    int returned;      /* a return was emitted earlier in this function (fa4_done may be set) */
    int npred;         /* predicates named so far in this function */
    char pred[24];     /* the predicate of the statements being emitted; "" = always */
    char source[96];   /* the user's source name, safe inside a #line string */
    /* score_mod's subexpressions that are the same at every position (emit_deps.c,
     * fa4__collect_uniform): fa4_score_mod_uniform computes them once, fa4_score_mod_u reads them
     * as fa4_u.u<k> (hoist_rcp[k]: the entry is the reciprocal of a divisor, fa4_rcp_u(e)) */
    const fa4__expr *hoist[FA4__MAX_HOIST];
    unsigned char hoist_rcp[FA4__MAX_HOIST];
    int nhoist;
    int use_hoist;     /* emitting fa4_score_mod_u */
    /* score_mod reads its score only as score / pre_div (a divisor whose reciprocal
     * fa4_score_uniform holds): the prescaled forms take score / pre_div as their score argument
     * (FA4_SCORE_MOD_PRESCALE); prescale: emitting one of them */
    const fa4__expr *pre_div;
    int prescale;
    int rel_form;      /* score_mod has the relative form (emit_rel.c): the backward's offset entry points are emitted */
    /* emitting fa4_score_mod_t (emit_tile.c): these subexpressions read fa4_t.c<k> */
    const fa4__expr *const *tile_cand;
    int ntile_cand;
} fa4__emitter;

void fa4__emitter_init(fa4__emitter *E, const fa4__mod *m, const char *source_name);
/* printf into the buffer, counting lines */
void fa4__out(fa4__emitter *E, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* At the start of a line: make the next line map to the user's `line`. */
void fa4__line_directive(fa4__emitter *E, int line);
/* Map the following lines back to the generated header itself. */
void fa4__reset_line(fa4__emitter *E);
/* The finished text (malloc'd), or NULL when out of memory; frees on failure. */
char *fa4__emitter_finish(fa4__emitter *E);

void fa4__emit_prelude(fa4__emitter *E, int checked);
void fa4__emit_aux_access(fa4__emitter *E);
void fa4__emit_dual_prelude(fa4__emitter *E);
const char *fa4__dual_builtin_name(int builtin);
/* emit_cuda.c: one expression without parentheses of its own; one statement as written */
void fa4__emit_bare(fa4__emitter *E, const fa4__expr *e);
void fa4__emit_stmt(fa4__emitter *E, const fa4__stmt *s, int indent);
/* emit_straight.c: the straight-line form (release builds) of functions that branch */
int fa4__stmt_branches(const fa4__stmt *s);
int fa4__stmt_has_nested_return(const fa4__stmt *s);
void fa4__emit_stmt_spec(fa4__emitter *E, const fa4__stmt *s, int indent);
/* emit_deps.c: mask_mod reads an aux tensor at an index depending on q_idx or kv_idx */
int fa4__mask_gathers(const fa4__mod *m);
/* emit_deps.c: per function of m (as m->order), the slots whose values vary by (query, key)
 * position (NULL when out of memory; release with fa4__mod_varying_free); one function's row
 * (NULL: unknown); whether e depends on a marked slot */
unsigned char **fa4__mod_varying(const fa4__mod *m);
void fa4__mod_varying_free(const fa4__mod *m, unsigned char **dep);
const unsigned char *fa4__func_varying(const fa4__mod *m, unsigned char *const *dep, const fa4__func *f);
int fa4__expr_depends(const fa4__expr *e, const unsigned char *dep);
/* emit_deps.c: fill E->hoist with score_mod f's maximal position-independent subexpressions */
void fa4__collect_uniform(fa4__emitter *E, const fa4__func *f);
/* E->hoist index of e (of its reciprocal when rcp), or -1 */
int fa4__hoisted(const fa4__emitter *E, const fa4__expr *e, int rcp);
/* A helper whose dual form differs from its forward form (it takes or returns float). */
int fa4__needs_dual(const fa4__func *f);
/* emit_tile.c: score_mod is declarations and one return at its end (the shape the tile and
 * affine forms analyse) */
int fa4__score_mod_is_straight(const fa4__func *f);
/* emit_tile.c: FA4_SCORE_MOD_TILE, and where nonzero fa4_score_mod_tile and fa4_score_mod_t */
void fa4__emit_tile_forms(fa4__emitter *E);
/* emit_affine.c: FA4_SCORE_MOD_AFFINE, and where 1 fa4_score_mod_affine (ds, c, dq, dk over a box) */
void fa4__emit_affine_form(fa4__emitter *E);
/* emit_rel.c: FA4_SCORE_MOD_REL, and where 1 fa4_score_mod_rel (score_mod = score + g, g reading
 * the positions only as kv_idx - q_idx) */
void fa4__emit_rel_form(fa4__emitter *E);
/* one case of fa4_aux_grad_site_range: site x's (trainable site k's) index interval over a box */
void fa4__emit_site_range(fa4__emitter *E, const fa4__expr *x, int k);
/* fa4_tmin, fa4_tmax, fa4_tnorm, fa4_tmul, fa4_tdiv, once per header */
void fa4__emit_ival_helpers(fa4__emitter *E);
/* emit_deriv.c: fa4_score_mod_fwd_deriv, _fwd_deriv_sites, _aux_grad and the aux-grad runs */
void fa4__emit_deriv_wrappers(fa4__emitter *E);
int fa4__trainable_site_index(const fa4__mod *m, const fa4__expr *x);

#endif /* FA4_JIT_MOD_EMIT_INTERNAL_H */
