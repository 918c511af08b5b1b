/*
 * check_internal.h - the checker's state, shared by its two files: check.c (names, scopes, types of
 * expressions and statements) and check_mod.c (the mods' signatures, the aux list, the call graph
 * and the entry point fa4__mod_check).
 */
#ifndef FA4_JIT_MOD_CHECK_INTERNAL_H
#define FA4_JIT_MOD_CHECK_INTERNAL_H

#include "mod_internal.h"

#define MAX_SCOPE_VARS 4096

typedef struct checker {
    fa4__mod *m;
    fa4__diag *d;
    fa4__func *f;
    fa4__var *vars[MAX_SCOPE_VARS]; /* scope stack */
    int nvars;
    int scope_base;                 /* first var of the innermost scope */
    const fa4__var *initializing;   /* declared variable whose initializer is being checked */
    int block_depth;                /* blocks and if-branches around the current statement */
    fa4_status st;
} checker;

/* Record the first error (in the current function) and return its status. */
fa4_status fa4__check_err(checker *C, fa4_status st, int line, int col, int len, const char *fmt,
                          ...) __attribute__((format(printf, 6, 7)));
/* Why a name may not be declared, or NULL. */
const char *fa4__check_reserved_reason(const char *name);
fa4__func *fa4__check_find_func(const fa4__mod *m, const char *name);
/* Declare f's parameters and check its body (check.c). */
fa4_status fa4__check_body(checker *C, fa4__func *f);

#endif /* FA4_JIT_MOD_CHECK_INTERNAL_H */
