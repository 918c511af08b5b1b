/*
 * emit_cuda.c - turns a checked mod into "fa4_mod.cuh", the header every kernel program starts with
 * (interface at the top of mod.h). The forward functions mirror the user's statements one for one,
 * under #line directives so NVRTC messages land on the user's lines. The derivative is the same
 * walk with every float replaced by a dual number (value, derivative): fa4_score_mod_dual, from
 * which fa4_score_mod_fwd_deriv (seed: the score) and fa4_score_mod_aux_grad (seed: one trainable
 * aux read site at a time, accumulated with atomicAdd) are built. The text is header-free,
 * deterministic, and its int arithmetic is the evaluator's (eval.c): wrap-around, x/0 == 0.
 * Fixed pieces of text (int helpers, dual arithmetic) live in emit_prelude.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit_internal.h"

/* ------------------------------------------------------------------------------- expressions */
static void emit_expr(fa4__emitter *E, const fa4__expr *e);

static void emit_float_literal(fa4__emitter *E, double v)
{
    if (isnan(v)) {
        fa4__out(E, "__int_as_float(0x7fffffff)");
        return;
    }
    if (isinf(v)) {
        fa4__out(E, v > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)");
        return;
    }
    /* the shortest spelling that reads back as the same float */
    char buf[48];
    float f = (float)v;
    for (int prec = 1; prec <= 9; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, (double)f);
        if (strtof(buf, NULL) == f)
            break;
    }
    if (!strpbrk(buf, ".en"))
        strcat(buf, ".0");
    fa4__out(E, "%sf", buf);
}

static void emit_int_literal(fa4__emitter *E, int64_t v)
{
    if (v == INT32_MIN)
        fa4__out(E, "(-2147483647 - 1)");
    else if (v < 0)
        fa4__out(E, "(%lld)", (long long)v);
    else
        fa4__out(E, "%lld", (long long)v);
}

/* An expression where no parentheses are needed around it (a statement, an argument). */
void fa4__emit_bare(fa4__emitter *E, const fa4__expr *e)
{
    E->bare = 1;
    emit_expr(E, e);
    E->bare = 0;
}

/* Open / close the parentheses of an operator unless it stands bare. */
static int open_paren(fa4__emitter *E)
{
    int p = !E->bare;
    E->bare = 0;
    if (p)
        fa4__out(E, "(");
    return p;
}

static void close_paren(fa4__emitter *E, int p)
{
    if (p)
        fa4__out(E, ")");
}

/*
 * A scalar aux parameter. In the dual form (the backward kernels) the read is opaque to the
 * compiler (fa4_opaque_*: an empty asm volatile), so nothing computed from it is hoisted out of the
 * kernel's fragment loop and kept in a register across it: in the sm90 backward, at its register
 * limit, t5_bias's hoisted bucket constants spilled 8 bytes. The forward keeps plain reads (the
 * soft-cap's reciprocal 1 / cap is computed once there).
 */
static void emit_aux_scalar(fa4__emitter *E, const fa4__expr *e)
{
    if (!E->dual)
        fa4__out(E, "fa4_a.%s", e->var->name);
    else if (e->type == TY_FLOAT)
        fa4__out(E, "fa4_opaque_f(fa4_a.%s)", e->var->name);
    else if (e->type == TY_INT)
        fa4__out(E, "fa4_opaque_i(fa4_a.%s)", e->var->name);
    else
        fa4__out(E, "(fa4_opaque_i((int)fa4_a.%s) != 0)", e->var->name);
}

/* An expression as a plain float/int/bool: in dual mode, float values take their `.v`. */
static void emit_value(fa4__emitter *E, const fa4__expr *e)
{
    E->bare = 0;
    if (E->dual && e->type == TY_FLOAT && e->kind == EX_FLOAT) {
        emit_float_literal(E, e->fval);
    } else if (E->dual && e->type == TY_FLOAT && e->kind == EX_VAR) {
        if (e->var->kind == VK_AUX)
            emit_aux_scalar(E, e);
        else
            fa4__out(E, "%s.v", e->var->name);
    } else if (E->dual && e->type == TY_FLOAT) {
        E->bare = 0;
        fa4__out(E, "(");
        emit_expr(E, e);
        fa4__out(E, ").v");
    } else {
        emit_expr(E, e);
    }
}

static void emit_args(fa4__emitter *E, const fa4__expr *e)
{
    for (int i = 0; i < e->nargs; i++) {
        if (i)
            fa4__out(E, ", ");
        fa4__emit_bare(E, e->args[i]);
    }
}

static const char *int_binop_fn(int op)
{
    switch (op) {
    case TK_PLUS: return "fa4_iadd";
    case TK_MINUS: return "fa4_isub";
    case TK_STAR: return "fa4_imul";
    case TK_SLASH: return "fa4_idiv";
    case TK_PERCENT: return "fa4_imod";
    case TK_SHL: return "fa4_ishl";
    case TK_SHR: return "fa4_ishr";
    default: return NULL;
    }
}

static const char *op_str(int op)
{
    switch (op) {
    case TK_PLUS: return "+";
    case TK_MINUS: return "-";
    case TK_STAR: return "*";
    case TK_SLASH: return "/";
    case TK_AMP: return "&";
    case TK_PIPE: return "|";
    case TK_CARET: return "^";
    case TK_LT: return "<";
    case TK_LE: return "<=";
    case TK_GT: return ">";
    case TK_GE: return ">=";
    case TK_EQEQ: return "==";
    case TK_NE: return "!=";
    case TK_ANDAND: return "&&";
    case TK_OROR: return "||";
    default: return "?";
    }
}

static void emit_binary(fa4__emitter *E, const fa4__expr *e)
{
    const char *fn = e->type == TY_INT ? int_binop_fn(e->op) : NULL;
    E->bare_pending = E->bare;
    E->bare = 0;
    if (fn) {
        fa4__out(E, "%s(", fn);
        fa4__emit_bare(E, e->a);
        fa4__out(E, ", ");
        fa4__emit_bare(E, e->b);
        fa4__out(E, ")");
        return;
    }
    if (E->dual && e->type == TY_FLOAT) {
        const char *dfn = e->op == TK_PLUS    ? "fa4_dadd"
                          : e->op == TK_MINUS ? "fa4_dsub"
                          : e->op == TK_STAR  ? "fa4_dmul"
                                              : "fa4_ddiv";
        fa4__out(E, "%s(", dfn);
        fa4__emit_bare(E, e->a);
        fa4__out(E, ", ");
        fa4__emit_bare(E, e->b);
        fa4__out(E, ")");
        return;
    }
    if (e->type == TY_FLOAT && e->op == TK_SLASH) {
        fa4__out(E, "fa4_fdiv(");
        fa4__emit_bare(E, e->a);
        fa4__out(E, ", ");
        fa4__emit_bare(E, e->b);
        fa4__out(E, ")");
        return;
    }
    /* float arithmetic (forward), bitwise, comparisons and logic: C's own operators; in the
     * straight-line form both sides of && and || run (they are pure and total) */
    E->bare = E->bare_pending;
    int p = open_paren(E);
    emit_value(E, e->a);
    if (E->spec && (e->op == TK_ANDAND || e->op == TK_OROR))
        fa4__out(E, " %s ", e->op == TK_ANDAND ? "&" : "|");
    else
        fa4__out(E, " %s ", op_str(e->op));
    emit_value(E, e->b);
    close_paren(E, p);
}

static void emit_cast(fa4__emitter *E, const fa4__expr *e)
{
    int from = e->a->type, to = e->type;
    if (from == to) {
        emit_expr(E, e->a);
        return;
    }
    if (to == TY_FLOAT && E->dual) {
        E->bare = 0;
        fa4__out(E, "fa4_dconst((float)");
        emit_expr(E, e->a);
        fa4__out(E, ")");
    } else if (to == TY_INT && from == TY_FLOAT) {
        E->bare = 0;
        fa4__out(E, "__float2int_rz(");
        if (E->dual)
            emit_value(E, e->a);
        else
            fa4__emit_bare(E, e->a);
        fa4__out(E, ")");
    } else if (to == TY_FLOAT || to == TY_INT) {
        int p = open_paren(E);
        fa4__out(E, to == TY_FLOAT ? "(float)" : "(int)");
        emit_expr(E, e->a);
        close_paren(E, p);
    } else {
        int p = open_paren(E);
        emit_value(E, e->a);
        fa4__out(E, from == TY_FLOAT ? " != 0.0f" : " != 0");
        close_paren(E, p);
    }
}

static void emit_builtin(fa4__emitter *E, const fa4__expr *e)
{
    const fa4__builtin_info *bi = fa4__builtin_get(e->op);
    if (e->type == TY_INT) {
        fa4__out(E, "fa4_i%s(", bi->name);
        emit_args(E, e);
        fa4__out(E, ")");
        return;
    }
    if (E->dual) {
        fa4__out(E, "%s(", fa4__dual_builtin_name(e->op));
        emit_args(E, e);
        fa4__out(E, ")");
        return;
    }
    E->bare = 0;
    switch (e->op) {
    case BI_ABS: fa4__out(E, "fabsf("); break;
    case BI_MIN: fa4__out(E, "fminf("); break;
    case BI_MAX: fa4__out(E, "fmaxf("); break;
    case BI_CLAMP:
        fa4__out(E, "fminf(fmaxf(");
        fa4__emit_bare(E, e->args[0]);
        fa4__out(E, ", ");
        fa4__emit_bare(E, e->args[1]);
        fa4__out(E, "), ");
        fa4__emit_bare(E, e->args[2]);
        fa4__out(E, ")");
        return;
    /* the prelude's forms (mathfn.h; FA4_FAST_MATH swaps them for the bare approximations) */
    case BI_TANH: fa4__out(E, "fa4_tanhf("); break;
    case BI_EXP: fa4__out(E, "fa4_expf("); break;
    case BI_EXP2: fa4__out(E, "fa4_exp2f("); break;
    case BI_LOG: fa4__out(E, "fa4_logf("); break;
    case BI_LOG2: fa4__out(E, "fa4_log2f("); break;
    default: fa4__out(E, "%s(", bi->name); break;
    }
    emit_args(E, e);
    fa4__out(E, ")");
}

static void emit_expr(fa4__emitter *E, const fa4__expr *e)
{
    /* only operators use `bare`; leaves and calls drop it */
    if (e->kind != EX_BINARY && e->kind != EX_UNARY && e->kind != EX_COND && e->kind != EX_CAST)
        E->bare = 0;
    switch (e->kind) {
    case EX_INT: emit_int_literal(E, e->ival); return;
    case EX_BOOL: fa4__out(E, e->ival ? "true" : "false"); return;
    case EX_FLOAT:
        if (E->dual) {
            fa4__out(E, "fa4_dconst(");
            emit_float_literal(E, e->fval);
            fa4__out(E, ")");
        } else {
            emit_float_literal(E, e->fval);
        }
        return;
    case EX_VAR:
        if (e->var->kind == VK_AUX) {
            if (E->dual && e->type == TY_FLOAT) {
                fa4__out(E, "fa4_dconst(");
                emit_aux_scalar(E, e);
                fa4__out(E, ")");
            } else {
                emit_aux_scalar(E, e);
            }
        } else {
            fa4__out(E, "%s", e->var->name);
        }
        return;
    case EX_INDEX:
        if (E->dual && e->type == TY_FLOAT) {
            fa4__out(E, "fa4_daux_%s(fa4_a, ", e->var->name);
            fa4__emit_bare(E, e->a);
            fa4__out(E, ", fa4_seed == %d, fa4_at ? fa4_at + %d : nullptr)", e->site, e->site);
        } else {
            fa4__out(E, "fa4_aux_%s(fa4_a, ", e->var->name);
            fa4__emit_bare(E, e->a);
            fa4__out(E, ")");
        }
        return;
    case EX_CALL:
        fa4__out(E, "%s%s(", E->dual && fa4__needs_dual(e->func) ? "fa4_hd_" : "fa4_h_",
                 e->func->name);
        emit_args(E, e);
        fa4__out(E, ")");
        return;
    case EX_BUILTIN: emit_builtin(E, e); return;
    case EX_UNARY:
        if (e->op == TK_PLUS) {
            E->bare = 0;
            emit_expr(E, e->a);
        } else if (e->op == TK_MINUS && e->type == TY_INT && e->a->kind == EX_INT &&
                   e->a->ival > 0) {
            E->bare = 0;
            fa4__out(E, "(-%lld)", (long long)e->a->ival);
        } else if (e->op == TK_MINUS && e->type == TY_INT) {
            E->bare = 0;
            fa4__out(E, "fa4_ineg(");
            emit_expr(E, e->a);
            fa4__out(E, ")");
        } else if (e->op == TK_MINUS && E->dual && e->type == TY_FLOAT) {
            E->bare = 0;
            fa4__out(E, "fa4_dneg(");
            emit_expr(E, e->a);
            fa4__out(E, ")");
        } else {
            int p = open_paren(E);
            fa4__out(E, "%s", e->op == TK_MINUS ? "-" : e->op == TK_BANG ? "!" : "~");
            emit_expr(E, e->a);
            close_paren(E, p);
        }
        return;
    case EX_BINARY: emit_binary(E, e); return;
    case EX_COND: {
        int p = open_paren(E);
        emit_expr(E, e->a);
        fa4__out(E, " ? ");
        emit_expr(E, e->b);
        fa4__out(E, " : ");
        emit_expr(E, e->c);
        close_paren(E, p);
        return;
    }
    case EX_CAST: emit_cast(E, e); return;
    default: fa4__out(E, "0"); return;
    }
}

/* -------------------------------------------------------------------------------- statements */
static const char *type_text(const fa4__emitter *E, int ty)
{
    if (ty == TY_FLOAT)
        return E->dual ? "fa4_dual" : "float";
    return ty == TY_INT ? "int" : "bool";
}

void fa4__emit_stmt(fa4__emitter *E, const fa4__stmt *s, int indent)
{
    if (s->kind != ST_BLOCK && s->kind != ST_EMPTY)
        fa4__line_directive(E, s->line);
    switch (s->kind) {
    case ST_EMPTY: return;
    case ST_BLOCK:
        fa4__out(E, "%*s{\n", indent, "");
        for (int i = 0; i < s->nitems; i++)
            fa4__emit_stmt(E, s->items[i], indent + 4);
        fa4__out(E, "%*s}\n", indent, "");
        return;
    case ST_DECL:
        /* a local that is never read is dropped with its assignments (mods are pure), which also
         * keeps NVRTC's "set but never used" warnings out of the log */
        if (!s->var->reads) {
            fa4__out(E, "%*s// '%s' is never read\n", indent, "", s->var->name);
            return;
        }
        fa4__out(E, "%*s%s%s %s = ", indent, "", s->var->is_const ? "const " : "",
                 type_text(E, s->var->type), s->var->name);
        if (s->e)
            fa4__emit_bare(E, s->e);
        else if (s->var->type == TY_FLOAT)
            fa4__out(E, E->dual ? "fa4_dconst(0.0f)" : "0.0f");
        else
            fa4__out(E, s->var->type == TY_INT ? "0" : "false");
        fa4__out(E, ";\n");
        return;
    case ST_ASSIGN:
        if (!s->var->reads)
            return;
        fa4__out(E, "%*s%s = ", indent, "", s->var->name);
        fa4__emit_bare(E, s->e);
        fa4__out(E, ";\n");
        return;
    case ST_IF:
        fa4__out(E, "%*sif (", indent, "");
        fa4__emit_bare(E, s->e);
        fa4__out(E, ")\n");
        if (s->then_s->kind == ST_BLOCK) {
            fa4__emit_stmt(E, s->then_s, indent);
        } else {
            fa4__out(E, "%*s{\n", indent, "");
            fa4__emit_stmt(E, s->then_s, indent + 4);
            fa4__out(E, "%*s}\n", indent, "");
        }
        if (s->else_s) {
            fa4__out(E, "%*selse\n", indent, "");
            if (s->else_s->kind == ST_BLOCK) {
                fa4__emit_stmt(E, s->else_s, indent);
            } else {
                fa4__out(E, "%*s{\n", indent, "");
                fa4__emit_stmt(E, s->else_s, indent + 4);
                fa4__out(E, "%*s}\n", indent, "");
            }
        }
        return;
    case ST_RETURN:
        fa4__out(E, "%*sreturn ", indent, "");
        fa4__emit_bare(E, s->e);
        fa4__out(E, ";\n");
        return;
    default: return;
    }
}

/* One user function: the forward form, or the dual form (dual = 1). */
static void emit_function(fa4__emitter *E, const fa4__func *f, int dual, int spec)
{
    E->dual = dual;
    E->spec = spec;
    E->spec_ret = spec && fa4__stmt_has_nested_return(f->body);
    E->returned = 0;
    E->npred = 0;
    E->pred[0] = '\0';
    const char *ret = type_text(E, f->ret);
    fa4__line_directive(E, f->line);
    if (f->role == FR_SCORE)
        fa4__out(E, "__device__ __forceinline__ %s fa4_score_mod%s(", ret, dual ? "_dual" : "");
    else if (f->role == FR_MASK)
        fa4__out(E, "__device__ __forceinline__ bool fa4_mask_mod(");
    else
        fa4__out(E, "__device__ __forceinline__ %s %s%s(", ret, dual ? "fa4_hd_" : "fa4_h_",
                 f->name);
    int nfixed = f->role == FR_SCORE ? 5 : f->role == FR_MASK ? 4 : f->nparams;
    for (int i = 0; i < nfixed; i++) {
        const fa4__var *v = f->params[i];
        fa4__out(E, "%s%s%s %s", i ? ", " : "", v->is_const ? "const " : "", type_text(E, v->type),
                 v->name);
    }
    if (f->role != FR_HELPER)
        fa4__out(E, ", const fa4_aux &fa4_a");
    if (f->role == FR_SCORE && dual)
        fa4__out(E, ", int fa4_seed, long long *fa4_at");
    fa4__out(E, ")\n");
    fa4__out(E, "{\n");
    if (E->spec_ret)
        fa4__out(E, "    %s fa4_ret = %s;\n    bool fa4_done = false;\n", ret,
                 f->ret == TY_FLOAT ? (dual ? "fa4_dconst(0.0f)" : "0.0f")
                 : f->ret == TY_INT ? "0"
                                    : "false");
    for (int i = 0; i < f->body->nitems; i++) {
        if (spec)
            fa4__emit_stmt_spec(E, f->body->items[i], 4);
        else
            fa4__emit_stmt(E, f->body->items[i], 4);
    }
    const int n = f->body->nitems;
    if (E->spec_ret && (n == 0 || f->body->items[n - 1]->kind != ST_RETURN))
        fa4__out(E, "    return fa4_ret;\n");
    fa4__out(E, "}\n");
    fa4__reset_line(E);
    E->dual = 0;
    E->spec = 0;
}

/* The function as written; where it branches, the straight-line form for release builds. */
static void emit_function_forms(fa4__emitter *E, const fa4__func *f, int dual)
{
    if (!fa4__stmt_branches(f->body)) {
        emit_function(E, f, dual, 0);
        return;
    }
    fa4__out(E, "#if FA4_CHECKED\n");
    emit_function(E, f, dual, 0);
    fa4__out(E, "#else\n");
    emit_function(E, f, dual, 1);
    /* the #line that closed the first form was skipped with it where the second one is compiled */
    fa4__out(E, "#endif\n");
    fa4__out(E, "#line %d \"fa4_mod.cuh\"\n", E->out_line + 1);
}

/* ------------------------------------------------------------------------- derivative wrappers */
static void collect_sites_expr(const fa4__expr *e, const fa4__expr **sites, int *n, int max)
{
    if (!e)
        return;
    if (e->kind == EX_INDEX && e->type == TY_FLOAT && e->var->kind == VK_AUX && *n < max)
        sites[(*n)++] = e;
    collect_sites_expr(e->a, sites, n, max);
    collect_sites_expr(e->b, sites, n, max);
    collect_sites_expr(e->c, sites, n, max);
    for (int i = 0; i < e->nargs; i++)
        collect_sites_expr(e->args[i], sites, n, max);
}

static void collect_sites(const fa4__stmt *s, const fa4__expr **sites, int *n, int max)
{
    if (!s)
        return;
    collect_sites_expr(s->e, sites, n, max);
    for (int i = 0; i < s->nitems; i++)
        collect_sites(s->items[i], sites, n, max);
    collect_sites(s->then_s, sites, n, max);
    collect_sites(s->else_s, sites, n, max);
}

/*
 * The kernels' accumulation of the terms (where FA4_NUM_AUX_GRAD_SITES > 0): one atomic per run of
 * equal indices in a thread's walk over its elements, then one per warp where its lanes end on
 * one index. Far from the diagonal a relative-position table is read at one clamped bucket for a
 * whole tile, and per-element atomics (even warp-aggregated) queued on that one address made the
 * backward 5x slower than plain attention. The index comes from the pass that computes the value
 * (fa4_score_mod_fwd_deriv_sites), runs are 32-bit indices (the read index is an int), and the
 * per-element update is two compares, a select, an add and one branch around the atomic (ptxas
 * branches there even for an inline-PTX predicated red): a first form that recomputed the index
 * and compared pointers under nested branches cost ~60 SASS instructions per element, which
 * was most of the remaining time once the atomics were combined.
 */
static void emit_aux_grad_acc(fa4__emitter *E, const fa4__expr *const *sites, int n, int nall)
{
    fa4__out(
        E,
        "\n// Run-combining accumulation for the backward kernels. A thread keeps, per read site,\n"
        "// the index of its current run of terms and the run's sum (the kernel's registers):\n"
        "// a term for another index first adds the finished run into global memory, and\n"
        "// fa4_aux_grad_flush (every lane of the warp, at the end of a tile) adds what is left,\n"
        "// one atomic per warp where all its lanes end on one index. Not bitwise reproducible\n"
        "// (float atomics in any order), as fa4_score_mod_aux_grad.\n"
        "struct fa4_aux_grad_acc {\n"
        "    int at[FA4_NUM_AUX_GRAD_SITES]; // -1: no run yet\n"
        "    float sum[FA4_NUM_AUX_GRAD_SITES];\n"
        "};\n"
        "__device__ __forceinline__ void fa4_aux_grad_begin(fa4_aux_grad_acc &acc)\n{\n"
        "#pragma unroll\n"
        "    for (int k = 0; k < FA4_NUM_AUX_GRAD_SITES; k++) {\n"
        "        acc.at[k] = -1;\n"
        "        acc.sum[k] = 0.0f;\n"
        "    }\n"
        "}\n"
        "// a finished run (index prev) into global memory when the next term is for index i\n"
        "__device__ __forceinline__ void fa4_aux_grad_red_if(float *p, float v, int i, int prev)\n{\n"
        "    if (i != prev && prev >= 0)\n"
        "        atomicAdd(p, v);\n"
        "}\n"
        "// score_mod's value and d score_mod / d score (fa4_score_mod_fwd_deriv) and, in the same\n"
        "// pass, the index that trainable site k read (at[k]; -1: the site did not run)\n"
        "__device__ __forceinline__ float fa4_score_mod_fwd_deriv_sites(float score, int b, int h, "
        "int q_idx, int kv_idx,\n"
        "                                                               const fa4_aux &fa4_a, "
        "float *dscore, int *at)\n{\n");
    fa4__out(E,
             "    long long s[%d];\n"
             "    for (int k = 0; k < %d; k++)\n"
             "        s[k] = -1;\n"
             "    fa4_dual r = fa4_score_mod_dual(fa4_dmake(score, 1.0f), b, h, q_idx, kv_idx, "
             "fa4_a, -1, s);\n",
             nall, nall);
    for (int k = 0; k < n; k++)
        fa4__out(E, "    at[%d] = (int)s[%d]; // <= INT_MAX: the index of the read is an int\n", k,
                 sites[k]->site);
    fa4__out(E, "    *dscore = r.d;\n    return r.v;\n}\n"
                "// g * d score_mod / d x[at[k]] into the runs (at from fa4_score_mod_fwd_deriv_sites)\n"
                "__device__ __forceinline__ void fa4_score_mod_aux_grad_acc(float score, int b, "
                "int h, int q_idx, int kv_idx,\n"
                "                                                           const fa4_aux &fa4_a, "
                "float g, const int *at,\n"
                "                                                           fa4_aux_grad_acc &acc)\n{\n");
    for (int k = 0; k < n; k++) {
        const fa4__expr *x = sites[k];
        fa4__out(E,
                 "    { // site %d: %s[...] at line %d\n"
                 "        const fa4_dual r = fa4_score_mod_dual(fa4_dconst(score), b, h, q_idx, "
                 "kv_idx, fa4_a, %d, nullptr);\n"
                 "        const int i = at[%d], prev = acc.at[%d];\n"
                 "        fa4_aux_grad_red_if(fa4_a.%s_grad + prev, acc.sum[%d], i, prev);\n"
                 "        acc.sum[%d] = (i == prev ? acc.sum[%d] : 0.0f) + g * r.d;\n"
                 "        acc.at[%d] = i;\n"
                 "    }\n",
                 k, x->var->name, x->line, x->site, k, k, x->var->name, k, k, k, k);
    }
    fa4__out(E, "}\n"
                "__device__ __forceinline__ void fa4_aux_grad_flush(const fa4_aux &fa4_a, "
                "fa4_aux_grad_acc &acc)\n{\n"
                "    const unsigned act = __activemask();\n");
    for (int k = 0; k < n; k++)
        fa4__out(E,
                 "    { // site %d\n"
                 "        const int i = acc.at[%d];\n"
                 "        float s = acc.sum[%d];\n"
                 "        acc.at[%d] = -1;\n"
                 "        acc.sum[%d] = 0.0f;\n"
                 "        int same = 0;\n"
                 "        if (act == 0xffffffffu)\n"
                 "            (void)__match_all_sync(act, i, &same);\n"
                 "        if (same) {\n"
                 "            for (int o = 16; o > 0; o >>= 1)\n"
                 "                s += __shfl_xor_sync(0xffffffffu, s, o);\n"
                 "            if (i >= 0 && (threadIdx.x & 31) == 0)\n"
                 "                atomicAdd(&fa4_a.%s_grad[i], s);\n"
                 "        } else if (i >= 0) {\n"
                 "            atomicAdd(&fa4_a.%s_grad[i], s);\n"
                 "        }\n"
                 "    }\n",
                 k, k, k, k, k, sites[k]->var->name, sites[k]->var->name);
    fa4__out(E, "}\n");
}

static void emit_deriv_wrappers(fa4__emitter *E)
{
    const fa4__mod *m = E->m;
    fa4__out(E, "\n// d score_mod / d score by forward-mode differentiation.\n");
    fa4__out(E, "__device__ __forceinline__ float fa4_score_mod_fwd_deriv(float score, int b, "
                "int h, int q_idx, int kv_idx,\n"
                "                                                         const fa4_aux &fa4_a, "
                "float *dscore)\n{\n");
    if (m->score) {
        fa4__out(E, "    fa4_dual r = fa4_score_mod_dual(fa4_dmake(score, 1.0f), b, h, q_idx, "
                    "kv_idx, fa4_a, -1, nullptr);\n"
                    "    *dscore = r.d;\n"
                    "    return r.v;\n}\n");
    } else {
        fa4__out(E, "    *dscore = 1.0f;\n    return score;\n}\n");
    }
    /* the trainable read sites, in source order */
    int cap = m->score ? m->score->nsites : 0, nsites = 0, n = 0;
    const fa4__expr **sites = malloc(sizeof *sites * (size_t)(cap + 1));
    if (!sites) {
        E->failed = 1;
        return;
    }
    if (m->score)
        collect_sites(m->score->body, sites, &nsites, cap);
    for (int i = 0; i < nsites; i++)
        if (m->aux[sites[i]->var->aux_index].trainable)
            sites[n++] = sites[i];
    fa4__out(
        E,
        "\n// For trainable aux read site k of score_mod, reading x[i]: where[k] = &x_grad[i] and\n"
        "// what[k] = g * d score_mod / d x[i]; where[k] = nullptr if the site did not run.\n"
        "#define FA4_NUM_AUX_GRAD_SITES %d\n",
        n);
    fa4__out(E,
             "__device__ __forceinline__ void fa4_score_mod_aux_grad_terms(float score, int b, "
             "int h, int q_idx, int kv_idx,\n"
             "                                                             const fa4_aux &fa4_a, "
             "float g, float **where,\n"
             "                                                             float *what)\n{\n");
    if (!n)
        fa4__out(E, "    // no trainable aux tensors\n");
    for (int k = 0; k < n; k++) {
        const fa4__expr *x = sites[k];
        fa4__out(E, "    { // site %d: %s[...] at line %d\n", k, x->var->name, x->line);
        fa4__out(E,
                 "        long long at[%d];\n"
                 "        for (int s = 0; s < %d; s++)\n"
                 "            at[s] = -1;\n"
                 "        fa4_dual r = fa4_score_mod_dual(fa4_dconst(score), b, h, q_idx, "
                 "kv_idx, fa4_a, %d, at);\n"
                 "        where[%d] = at[%d] >= 0 ? &fa4_a.%s_grad[at[%d]] : nullptr;\n"
                 "        what[%d] = g * r.d;\n"
                 "    }\n",
                 cap, cap, x->site, k, x->site, x->var->name, x->site, k);
    }
    fa4__out(E, "}\n");
    if (n)
        fa4__out(E,
                 "\n// One aux-gradient term into global memory. When the whole warp adds into one\n"
                 "// address (a bias table clamped to its last bucket, a per-head scalar), the warp\n"
                 "// sums first and one lane adds: 32 times fewer atomics on the hot address.\n"
                 "__device__ __forceinline__ void fa4_aux_grad_add(float *where, float what)\n{\n"
                 "    const unsigned act = __activemask();\n"
                 "    int same = 0;\n"
                 "    if (act == 0xffffffffu)\n"
                 "        (void)__match_all_sync(act, (unsigned long long)where, &same);\n"
                 "    if (same) {\n"
                 "        for (int o = 16; o > 0; o >>= 1)\n"
                 "            what += __shfl_xor_sync(0xffffffffu, what, o);\n"
                 "        if ((threadIdx.x & 31) == 0)\n"
                 "            atomicAdd(where, what);\n"
                 "    } else {\n"
                 "        atomicAdd(where, what);\n"
                 "    }\n"
                 "}\n");
    fa4__out(E,
             "\n// The same terms, accumulated: atomicAdd(&x_grad[i], g * d score_mod / d x[i]).\n"
             "__device__ __forceinline__ void fa4_score_mod_aux_grad(float score, int b, int h, "
             "int q_idx, int kv_idx,\n"
             "                                                       const fa4_aux &fa4_a, "
             "float g)\n{\n");
    if (n)
        fa4__out(E, "    float *where[FA4_NUM_AUX_GRAD_SITES];\n"
                    "    float what[FA4_NUM_AUX_GRAD_SITES];\n"
                    "    fa4_score_mod_aux_grad_terms(score, b, h, q_idx, kv_idx, fa4_a, g, where, "
                    "what);\n"
                    "    for (int k = 0; k < FA4_NUM_AUX_GRAD_SITES; k++)\n"
                    "        if (where[k])\n"
                    "            fa4_aux_grad_add(where[k], what[k]);\n");
    else
        fa4__out(E, "    // no trainable aux tensors\n");
    fa4__out(E, "}\n");
    if (n)
        emit_aux_grad_acc(E, sites, n, cap);
    free(sites);
}

/* ------------------------------------------------------------------------- gathering masks */
/* Does mask_mod read an aux tensor element at an index that depends on q_idx or kv_idx (document's
 * doc_id[q_idx])? The sm90 forward evaluates such a mask while S is on the tensor cores
 * (FA4_MASK_MOD_GATHERS, mainloop.cuh), where its reads overlap the MMA; a mask computed from the
 * indices alone, or from aux[b], is cheaper inline. Dependence flows through locals (an assignment
 * from a dependent value, or under a dependent condition), helper arguments and helper results (a
 * result depends on the arguments). It may answer yes too often, never wrongly for correctness:
 * the answer only picks where the mask is computed. */
static int expr_depends(const fa4__expr *e, const unsigned char *dep)
{
    if (!e)
        return 0;
    if (e->kind == EX_VAR && e->var && e->var->kind != VK_AUX && dep[e->var->slot])
        return 1;
    if (expr_depends(e->a, dep) || expr_depends(e->b, dep) || expr_depends(e->c, dep))
        return 1;
    for (int i = 0; i < e->nargs; i++)
        if (expr_depends(e->args[i], dep))
            return 1;
    return 0;
}

/* Mark the locals that depend on the indices; sets *changed when one is newly marked. */
static void stmt_mark(const fa4__stmt *s, int under_dep, unsigned char *dep, int *changed)
{
    if (!s)
        return;
    switch (s->kind) {
    case ST_BLOCK:
        for (int i = 0; i < s->nitems; i++)
            stmt_mark(s->items[i], under_dep, dep, changed);
        return;
    case ST_DECL:
    case ST_ASSIGN:
        if (s->var && !dep[s->var->slot] && (under_dep || expr_depends(s->e, dep))) {
            dep[s->var->slot] = 1;
            *changed = 1;
        }
        return;
    case ST_IF: {
        const int d = under_dep || expr_depends(s->e, dep);
        stmt_mark(s->then_s, d, dep, changed);
        stmt_mark(s->else_s, d, dep, changed);
        return;
    }
    default: return;
    }
}

static int func_gathers(const fa4__func *f, const unsigned char *param_dep);

static int expr_gathers(const fa4__expr *e, const unsigned char *dep)
{
    if (!e)
        return 0;
    if (e->kind == EX_INDEX && expr_depends(e->a, dep))
        return 1;
    if (e->kind == EX_CALL && e->func) {
        unsigned char arg_dep[64] = {0};
        for (int i = 0; i < e->nargs && i < 64; i++)
            arg_dep[i] = (unsigned char)expr_depends(e->args[i], dep);
        if (func_gathers(e->func, arg_dep))
            return 1;
    }
    if (expr_gathers(e->a, dep) || expr_gathers(e->b, dep) || expr_gathers(e->c, dep))
        return 1;
    for (int i = 0; i < e->nargs; i++)
        if (expr_gathers(e->args[i], dep))
            return 1;
    return 0;
}

static int stmt_gathers(const fa4__stmt *s, const unsigned char *dep)
{
    if (!s)
        return 0;
    if (s->kind == ST_BLOCK) {
        for (int i = 0; i < s->nitems; i++)
            if (stmt_gathers(s->items[i], dep))
                return 1;
        return 0;
    }
    return expr_gathers(s->e, dep) || stmt_gathers(s->then_s, dep) || stmt_gathers(s->else_s, dep);
}

/* param_dep[i]: whether parameter i depends on the indices */
static int func_gathers(const fa4__func *f, const unsigned char *param_dep)
{
    unsigned char *dep = calloc((size_t)f->nslots + 1, 1);
    if (!dep)
        return 1; /* out of memory: the answer that is never wrong */
    for (int i = 0; i < f->nparams && i < 64; i++)
        dep[f->params[i]->slot] = param_dep[i];
    int changed = 1;
    while (changed) {
        changed = 0;
        stmt_mark(f->body, 0, dep, &changed);
    }
    const int r = stmt_gathers(f->body, dep);
    free(dep);
    return r;
}

int fa4__mask_gathers(const fa4__mod *m)
{
    if (!m->mask || m->mask->nparams < 4)
        return 0;
    unsigned char index_params[64] = {0}; /* b, h, q_idx, kv_idx, then the aux */
    index_params[2] = index_params[3] = 1;
    return func_gathers(m->mask, index_params);
}

/* ------------------------------------------------------------------------------------ driver */
int fa4__needs_dual(const fa4__func *f)
{
    if (f->ret == TY_FLOAT)
        return 1;
    for (int i = 0; i < f->nparams; i++)
        if (f->params[i]->type == TY_FLOAT)
            return 1;
    return 0;
}

char *fa4__mod_emit_cuda(const fa4__mod *m, const char *source_name, int checked)
{
    if (!m)
        return NULL;
    fa4__emitter E;
    fa4__emitter_init(&E, m, source_name);
    fa4__emit_prelude(&E, checked);
    fa4__emit_aux_access(&E);

    fa4__out(&E, "\n// ---- the user's functions (helpers first), as written\n");
    for (int i = 0; i < m->nfuncs; i++) {
        const fa4__func *f = m->order[i];
        if (f->role == FR_HELPER) {
            fa4__out(&E, "\n");
            emit_function_forms(&E, f, 0);
        }
    }
    if (m->score) {
        fa4__out(&E, "\n");
        emit_function_forms(&E, m->score, 0);
    } else {
        fa4__out(&E, "\n// no score_mod: the identity\n"
                     "__device__ __forceinline__ float fa4_score_mod(float score, int b, int h, "
                     "int q_idx, int kv_idx, const fa4_aux &fa4_a)\n{\n    return score;\n}\n");
    }
    if (m->mask) {
        fa4__out(&E, "\n");
        emit_function_forms(&E, m->mask, 0);
    } else {
        fa4__out(&E, "\n// no mask_mod: every pair attends\n"
                     "__device__ __forceinline__ bool fa4_mask_mod(int b, int h, int q_idx, "
                     "int kv_idx, const fa4_aux &fa4_a)\n{\n    return true;\n}\n");
    }
    if (m->score) {
        fa4__emit_dual_prelude(&E);
        fa4__out(&E, "\n// ---- score_mod on dual numbers (value, derivative)\n");
        for (int i = 0; i < m->nfuncs; i++) {
            const fa4__func *f = m->order[i];
            if (f->role == FR_HELPER && f->used_in_score && fa4__needs_dual(f)) {
                fa4__out(&E, "\n");
                emit_function_forms(&E, f, 1);
            }
        }
        fa4__out(&E, "\n");
        emit_function_forms(&E, m->score, 1);
    }
    emit_deriv_wrappers(&E);
    return fa4__emitter_finish(&E);
}
