/*
 * mod_internal.h - the data shared by the passes of the mod front end (not seen outside src/jit/mod).
 *
 *   source --lex.c--> tokens --parse.c--> AST --check.c--> typed AST (implicit casts made explicit,
 *   names resolved, aux list built) --> emit_cuda.c (forward + dual-number derivative), eval.c
 *   (CPU evaluator, double + derivative), mod.c (public entry points, canonical token hash).
 *
 * Everything a parse allocates lives in one arena owned by the fa4__mod, freed in one call.
 * Diagnostics go through diag.c, which renders the compiler-style message with caret and hints.
 */
#ifndef FA4_JIT_MOD_INTERNAL_H
#define FA4_JIT_MOD_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "mod.h"

/* ------------------------------------------------------------------------------------- arena */
typedef struct fa4__arena_block fa4__arena_block;
typedef struct fa4__arena {
    fa4__arena_block *head;
    int failed; /* an allocation failed: the parse reports FA4_ERR_OUT_OF_MEMORY */
} fa4__arena;

void *fa4__arena_alloc(fa4__arena *a, size_t n); /* zeroed; NULL (and a->failed) when out of memory */
void fa4__arena_free(fa4__arena *a);

/* ------------------------------------------------------------------------------------ tokens */
typedef enum fa4__tok_kind {
    TK_EOF = 0,
    TK_IDENT,
    TK_INT,    /* integer literal; value in ival */
    TK_FLOAT,  /* floating literal; value in fval */
    /* punctuators */
    TK_LPAREN, TK_RPAREN, TK_LBRACE, TK_RBRACE, TK_LBRACKET, TK_RBRACKET,
    TK_COMMA, TK_SEMI, TK_QUESTION, TK_COLON, TK_DOT, TK_ARROW,
    TK_PLUS, TK_MINUS, TK_STAR, TK_SLASH, TK_PERCENT,
    TK_AMP, TK_PIPE, TK_CARET, TK_TILDE, TK_BANG,
    TK_SHL, TK_SHR, TK_ANDAND, TK_OROR,
    TK_LT, TK_LE, TK_GT, TK_GE, TK_EQEQ, TK_NE,
    TK_ASSIGN, TK_PLUSEQ, TK_MINUSEQ, TK_STAREQ, TK_SLASHEQ, TK_PERCENTEQ,
    TK_AMPEQ, TK_PIPEEQ, TK_CARETEQ, TK_SHLEQ, TK_SHREQ,
    TK_INC, TK_DEC,
    TK_COUNT_
} fa4__tok_kind;

typedef struct fa4__tok {
    int kind;
    int line, col;  /* 1-based */
    uint32_t off;   /* byte offset in the source */
    uint32_t len;   /* bytes */
    int64_t ival;
    double fval;
} fa4__tok;

/* ------------------------------------------------------------------------------------- types */
typedef enum fa4__type {
    TY_NONE = 0,
    TY_BOOL,
    TY_INT,
    TY_FLOAT,
    TY_TENSOR /* an aux tensor parameter (only ever indexed) */
} fa4__type;

const char *fa4__type_name(int ty);

/* ---------------------------------------------------------------------------------- builtins */
typedef enum fa4__builtin {
    BI_NONE = 0,
    BI_EXP, BI_EXP2, BI_LOG, BI_LOG2, BI_LOG1P, BI_EXPM1, BI_SQRT, BI_RSQRT, BI_TANH, BI_SIN,
    BI_COS, BI_FABS, BI_FMIN, BI_FMAX, BI_FLOOR, BI_CEIL, BI_ROUND, BI_TRUNC, BI_POW, BI_FMOD,
    BI_COPYSIGN, BI_ERF,
    BI_ABS, BI_MIN, BI_MAX, BI_CLAMP, /* int or float, by the argument types */
    BI_COUNT_
} fa4__builtin;

typedef struct fa4__builtin_info {
    const char *name;      /* canonical name, "expf" */
    const char *alt;       /* the other spelling, "exp" (NULL for abs/min/max/clamp) */
    int arity;
    int generic;           /* 1: int when every argument is int, else float */
} fa4__builtin_info;

const fa4__builtin_info *fa4__builtin_get(int id);
int fa4__builtin_lookup(const char *name, size_t len); /* BI_NONE when not a builtin */

/* ------------------------------------------------------------------------------------ AST */
typedef enum fa4__expr_kind {
    EX_INT, EX_FLOAT, EX_BOOL, /* literals */
    EX_VAR,                    /* a local, a parameter, or a scalar aux */
    EX_INDEX,                  /* aux[index] */
    EX_CALL,                   /* helper call */
    EX_BUILTIN,                /* builtin call; op = builtin id */
    EX_UNARY,                  /* op = TK_MINUS, TK_PLUS, TK_BANG, TK_TILDE */
    EX_BINARY,                 /* op = the operator token kind */
    EX_COND,                   /* a ? b : c */
    EX_CAST                    /* (type) a, explicit or inserted by the checker */
} fa4__expr_kind;

typedef struct fa4__var fa4__var;
typedef struct fa4__func fa4__func;
typedef struct fa4__expr fa4__expr;

struct fa4__expr {
    int kind;
    int op;
    int type;           /* set by the checker */
    int line, col, len; /* the token diagnostics point at */
    int implicit;       /* EX_CAST inserted by the checker */
    int64_t ival;       /* EX_INT, EX_BOOL */
    double fval;        /* EX_FLOAT */
    uint32_t name_off, name_len; /* EX_VAR, EX_INDEX, EX_CALL: identifier in the source */
    fa4__var *var;      /* EX_VAR, EX_INDEX (after checking) */
    fa4__func *func;    /* EX_CALL (after checking) */
    fa4__expr *a, *b, *c;
    fa4__expr **args;   /* EX_CALL, EX_BUILTIN */
    int nargs;
    int site;           /* EX_INDEX: read-site number within its function, from 0 */
    int depth;          /* height of this expression tree */
};

typedef enum fa4__stmt_kind {
    ST_BLOCK, ST_DECL, ST_ASSIGN, ST_IF, ST_RETURN, ST_EMPTY
} fa4__stmt_kind;

typedef struct fa4__stmt fa4__stmt;
struct fa4__stmt {
    int kind;
    int line, col, len;
    fa4__stmt **items;  /* ST_BLOCK */
    int nitems;
    fa4__var *var;      /* ST_DECL, ST_ASSIGN (after checking) */
    uint32_t name_off, name_len; /* ST_ASSIGN target */
    int name_line, name_col;
    int op;             /* ST_ASSIGN: TK_ASSIGN or a compound token */
    fa4__expr *e;       /* init, value, condition, return value (may be NULL) */
    fa4__stmt *then_s, *else_s;
};

typedef enum fa4__var_kind {
    VK_PARAM,    /* fixed mod parameter or helper parameter */
    VK_AUX,      /* aux parameter of a mod */
    VK_LOCAL
} fa4__var_kind;

struct fa4__var {
    char name[FA4__MOD_MAX_NAME + 1];
    int kind;
    int type;        /* TY_FLOAT / TY_INT / TY_BOOL / TY_TENSOR */
    int is_const;
    fa4_dtype dtype; /* aux tensors: element type */
    int aux_index;   /* VK_AUX: index in the mod's aux list */
    int slot;        /* evaluator slot in its function */
    int line, col, len;
    int has_const_kw;   /* `const` written on an aux scalar / local */
    int type_line, type_col, type_len; /* the type word, for messages about it */
    int pointer;        /* declared with '*' */
    int reads;          /* times an expression reads it (0: the emitter marks it used) */
};

typedef enum fa4__func_role { FR_HELPER = 0, FR_SCORE, FR_MASK } fa4__func_role;

struct fa4__func {
    char name[FA4__MOD_MAX_NAME + 1];
    int role;
    int ret;         /* return type */
    int line, col, len;          /* the name token */
    int end_line, end_col;       /* the closing brace */
    fa4__var **params;
    int nparams;
    int nslots;      /* parameters + locals */
    fa4__stmt *body;
    int nsites;      /* aux read sites */
    /* checker state */
    int visiting, done, order, call_depth;
    double inlined_size, own_size;
    int max_nest;    /* deepest expression plus the blocks around it, in this function */
    int stack;       /* max_nest summed along the deepest call chain (the evaluator's recursion) */
    fa4__expr **calls;           /* helper call sites in this function */
    int ncalls, capcalls;
    int used_in_score, used_in_mask; /* reachable from the mod */
};

struct fa4__mod {
    fa4__arena arena;
    char *src;       /* copy of the source, NUL-terminated */
    size_t len;
    char name[64];   /* `name` given to parse ("mod" when NULL) */
    fa4__tok *toks;
    int ntoks;
    fa4__func **funcs;
    int nfuncs;
    fa4__func *score, *mask;
    fa4__aux_decl aux[FA4__MOD_MAX_AUX];
    fa4__var *aux_score[FA4__MOD_MAX_AUX]; /* the declaring parameters (NULL where absent) */
    fa4__var *aux_mask[FA4__MOD_MAX_AUX];
    int naux;
    fa4__func **order;      /* every function, callees before callers */
    uint32_t builtins_used; /* bit per builtin id, in functions reachable from score_mod */
    uint8_t token_hash[16]; /* XXH3-128 of the canonical token stream */
};

/* Upper bound on expression and block nesting summed along a chain of helper calls: the depth of
 * the CPU evaluator's recursion, kept well inside a thread's stack (sanitizers included). */
#define FA4__MOD_MAX_STACK 2048

/* Upper bound on the operations one mod expands to once helpers are inlined. */
#define FA4__MOD_MAX_INLINED 200000.0

/* ----------------------------------------------------------------------------- diagnostics */
/* Fill *d with a compiler-style message at (line, col), underlining len bytes. `fname` is the
 * enclosing function (NULL: the source name). Returns st. d may be NULL. */
fa4_status fa4__diag_at(fa4__diag *d, const fa4__mod *m, const char *fname, fa4_status st,
                        int line, int col, int len, const char *fmt, ...)
    __attribute__((format(printf, 8, 9)));
/* Without a place (line = col = 0). */
fa4_status fa4__diag_plain(fa4__diag *d, fa4_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The candidate closest to word by edit distance, or NULL when none is close enough. */
const char *fa4__closest(const char *word, const char *const *cands, int n);
int fa4__edit_distance(const char *a, const char *b);

/* ------------------------------------------------------------------------------------ passes */
/* Lex m->src into m->toks. */
fa4_status fa4__mod_lex(fa4__mod *m, fa4__diag *d);
/* Is this identifier spelling a keyword of the language? Returns 1 and sets *kw. */
typedef enum fa4__kw {
    KW_NONE = 0, KW_FLOAT, KW_INT, KW_BOOL, KW_CONST, KW_IF, KW_ELSE, KW_RETURN, KW_TRUE, KW_FALSE
} fa4__kw;
int fa4__keyword(const char *s, size_t len);
/* Parse m->toks into m->funcs. */
fa4_status fa4__mod_parse_tokens(fa4__mod *m, fa4__diag *d);
/* Resolve, type-check and validate; builds the aux list. */
fa4_status fa4__mod_check(fa4__mod *m, fa4__diag *d);
/* Token text helpers. */
int fa4__tok_is(const fa4__mod *m, const fa4__tok *t, const char *s);

#endif /* FA4_JIT_MOD_INTERNAL_H */
