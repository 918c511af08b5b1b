/*
 * emit_cuda.c - turns a checked mod into "fa4_mod.cuh", the header every kernel program starts with
 * (interface at the top of mod.h). The forward functions mirror the user's statements one for one,
 * under #line directives so NVRTC messages land on the user's lines. The derivative is the same
 * walk with every float replaced by a dual number (value, derivative): fa4_score_mod_dual, from
 * which fa4_score_mod_fwd_deriv (seed: the score) and fa4_score_mod_aux_grad (seed: one trainable
 * aux read site at a time) are built in emit_deriv.c. The text is header-free,
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
        /* an int division whose divisor is the same at every position (and not a literal, which
         * the compiler divides by best itself): fa4_idiv_u's multiply-high by a magic number the
         * compiler computes once, instead of a division expanded at every position */
        const int uniform = (e->op == TK_SLASH || e->op == TK_PERCENT) && E->vary &&
                            e->b->kind != EX_INT && !fa4__expr_depends(e->b, E->vary);
        fa4__out(E, "%s%s(", fn, uniform ? "_u" : "");
        fa4__emit_bare(E, e->a);
        fa4__out(E, ", ");
        fa4__emit_bare(E, e->b);
        fa4__out(E, ")");
        return;
    }
    if (E->prescale && e->op == TK_SLASH && e->b == E->pre_div) {
        /* the prescaled forms' score argument is score / pre_div already (fa4_score_mod_p) */
        fa4__emit_bare(E, e->a);
        return;
    }
    if (E->dual && e->type == TY_FLOAT) {
        /* the dual form keeps fa4_fdiv even for a divisor that is the same at every position: its
         * scalar aux reads are opaque (not hoisted, for the backward's registers), and an IEEE
         * reciprocal per score would cost more than the correction (softcap's sm90 backward:
         * 4472 -> 5312 SASS instructions) */
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
    if (e->type == TY_FLOAT && e->op == TK_SLASH && E->use_hoist && fa4__hoisted(E, e->b, 1) >= 0) {
        /* fa4_fdiv_u with the reciprocal from fa4_score_mod_uniform */
        fa4__out(E, "(");
        fa4__emit_bare(E, e->a);
        fa4__out(E, " * fa4_u.u%d)", fa4__hoisted(E, e->b, 1));
        return;
    }
    if (e->type == TY_FLOAT && e->op == TK_SLASH) {
        /* a divisor that is the same at every position: a multiply by its reciprocal, which the
         * compiler computes once instead of fa4_fdiv's 5 instructions per score */
        const int uniform = E->vary && !fa4__expr_depends(e->b, E->vary);
        fa4__out(E, uniform ? "fa4_fdiv_u(" : "fa4_fdiv(");
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
    for (int k = 0; k < E->ntile_cand; k++)
        if (E->tile_cand[k] == e) {
            E->bare = 0;
            fa4__out(E, "fa4_t.c%d", k);
            return;
        }
    if (E->use_hoist) {
        const int k = fa4__hoisted(E, e, 0);
        if (k >= 0) {
            E->bare = 0;
            fa4__out(E, "fa4_u.u%d", k);
            return;
        }
    }
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
            if (E->prescale && e->op == TK_SLASH && e->b == E->pre_div) {
        /* the prescaled forms' score argument is score / pre_div already (fa4_score_mod_p) */
        fa4__emit_bare(E, e->a);
        return;
    }
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
        if (E->prescale && e->op == TK_SLASH && e->b == E->pre_div) {
        /* the prescaled forms' score argument is score / pre_div already (fa4_score_mod_p) */
        fa4__emit_bare(E, e->a);
        return;
    }
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
    /* a helper without a dual form is also called by score_mod's dual form, whose scalar aux
     * reads are opaque: there fa4_fdiv_u's reciprocal would be an IEEE division per score
     * (t5_bias's sm90 backward: 4304 -> 10448 SASS instructions), so such a helper keeps fa4_fdiv */
    const int in_dual = f->role == FR_HELPER && f->used_in_score && !fa4__needs_dual(f);
    E->vary = in_dual ? NULL : fa4__func_varying(E->m, E->varying, f);
    E->spec_ret = spec && fa4__stmt_has_nested_return(f->body);
    E->returned = 0;
    E->npred = 0;
    E->pred[0] = '\0';
    const char *ret = type_text(E, f->ret);
    fa4__line_directive(E, f->line);
    if (f->role == FR_SCORE)
        fa4__out(E, "__device__ __forceinline__ %s fa4_score_mod%s%s(", ret,
                 dual ? "_dual" : E->use_hoist ? "_u" : "", E->prescale ? "_p" : "");
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
    if (f->role == FR_SCORE && E->use_hoist)
        fa4__out(E, ", const fa4_score_uniform &fa4_u");
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
    E->vary = NULL;
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

/* Whether score_mod reads its score (sv) only as sv / D, one divisor node D for every read: D in
 * *div, else *bad set */
static void pre_expr(const fa4__expr *e, const fa4__var *sv, const fa4__expr **div, int *bad)
{
    if (!e || *bad)
        return;
    if (e->kind == EX_BINARY && e->op == TK_SLASH && e->type == TY_FLOAT && e->a->kind == EX_VAR &&
        e->a->var == sv) {
        if (*div && *div != e->b)
            *bad = 1;
        *div = e->b;
        pre_expr(e->b, sv, div, bad);
        return;
    }
    if (e->kind == EX_VAR && e->var == sv) {
        *bad = 1;
        return;
    }
    pre_expr(e->a, sv, div, bad);
    pre_expr(e->b, sv, div, bad);
    pre_expr(e->c, sv, div, bad);
    for (int i = 0; i < e->nargs; i++)
        pre_expr(e->args[i], sv, div, bad);
}

static void pre_stmt(const fa4__stmt *s, const fa4__var *sv, const fa4__expr **div, int *bad)
{
    if (!s || *bad)
        return;
    if (s->kind == ST_ASSIGN && s->var == sv)
        *bad = 1; /* the score itself assigned */
    if (s->kind == ST_BLOCK)
        for (int i = 0; i < s->nitems; i++)
            pre_stmt(s->items[i], sv, div, bad);
    pre_expr(s->e, sv, div, bad);
    pre_stmt(s->then_s, sv, div, bad);
    pre_stmt(s->else_s, sv, div, bad);
}

/* E->pre_div: the divisor of score_mod's every score read where the uniform forms hoist its
 * reciprocal (softcap's cap * tanhf(score / cap)); NULL where there is none such */
static void find_prescale(fa4__emitter *E)
{
    const fa4__func *f = E->m->score;
    E->pre_div = NULL;
    if (!f || E->nhoist == 0 || f->nparams < 1 || f->params[0]->type != TY_FLOAT)
        return;
    const fa4__expr *div = NULL;
    int bad = 0;
    pre_stmt(f->body, f->params[0], &div, &bad);
    if (div && !bad && fa4__hoisted(E, div, 1) >= 0)
        E->pre_div = div;
}

/*
 * The prescaled forms (FA4_SCORE_MOD_PRESCALE 1, release builds): where score_mod reads its score
 * only as score / D with D the same at every position (find_prescale), the kernel may multiply
 * the raw scores by scale * fa4_score_mod_pre_mul(b, h, aux) (1 / D, the uniform form's
 * reciprocal) and call fa4_score_mod_p, which is fa4_score_mod_u with score / D read as its
 * argument: a multiply and the divisor's reciprocal per score fewer, at the rounding of
 * s * (scale / D) in place of (s * scale) / D. fa4_score_mod_fwd_deriv_p is the dual form's
 * counterpart for the backward (the derivative seeded with 1 / D: d score_mod / d score).
 */
static void emit_prescale_fwd(fa4__emitter *E)
{
    const fa4__func *f = E->m->score;
    fa4__out(E, "#define FA4_SCORE_MOD_PRESCALE %d\n", E->pre_div ? 1 : 0);
    if (!E->pre_div)
        return;
    fa4__out(E, "__device__ __forceinline__ float fa4_score_mod_pre_mul(int b, int h, const fa4_aux &fa4_a)\n{\n"
                "    return fa4_score_mod_uniform(b, h, fa4_a).u%d;\n}\n",
             fa4__hoisted(E, E->pre_div, 1));
    E->use_hoist = 1;
    E->prescale = 1;
    emit_function(E, f, 0, fa4__stmt_branches(f->body));
    E->prescale = 0;
    E->use_hoist = 0;
}

static void emit_prescale_dual(fa4__emitter *E)
{
    const fa4__func *f = E->m->score;
    if (!E->pre_div)
        return;
    fa4__out(E, "\n// the prescaled form (FA4_SCORE_MOD_PRESCALE): score / D is the argument\n"
                "#if !FA4_CHECKED\n");
    E->prescale = 1;
    emit_function(E, f, 1, fa4__stmt_branches(f->body));
    E->prescale = 0;
    fa4__out(E, "#line %d \"fa4_mod.cuh\"\n", E->out_line + 1);
    fa4__out(E, "// score_mod's value and d score_mod / d score at sp = score / D (mul = 1 / D)\n"
                "__device__ __forceinline__ float fa4_score_mod_fwd_deriv_p(float sp, float mul, int b, int h, "
                "int q_idx, int kv_idx, const fa4_aux &fa4_a, float *dscore)\n{\n"
                "    fa4_dual r = fa4_score_mod_dual_p(fa4_dmake(sp, mul), b, h, q_idx, kv_idx, fa4_a, -1, nullptr);\n"
                "    *dscore = r.d;\n    return r.v;\n}\n#endif\n");
}

/*
 * The sm90 forward's form of score_mod: fa4_score_mod_uniform(b, h, aux) computes the subexpressions
 * that are the same at every position (emit_deps.c) once per score fragment; fa4_score_mod_u is
 * score_mod reading them from it. Checked builds (where an aux read out of range is reported, so
 * only the reads score_mod reaches may run) keep score_mod as it is behind the same interface.
 */
static void emit_uniform_forms(fa4__emitter *E)
{
    const fa4__func *f = E->m->score;
    fa4__out(E, "\n// ---- score_mod's position-independent part, computed once per score fragment\n");
    fa4__out(E, "#define FA4_SCORE_MOD_UNIFORM %d\n", f ? E->nhoist : 0);
    fa4__out(E, "#if FA4_CHECKED || !FA4_SCORE_MOD_UNIFORM\n");
    fa4__out(E, "struct fa4_score_uniform {\n    int fa4_unused_;\n};\n"
                "__device__ __forceinline__ fa4_score_uniform fa4_score_mod_uniform(int b, int h, "
                "const fa4_aux &fa4_a)\n{\n    fa4_score_uniform u;\n    u.fa4_unused_ = 0;\n"
                "    return u;\n}\n"
                "__device__ __forceinline__ float fa4_score_mod_u(float score, int b, int h, int q_idx, "
                "int kv_idx, const fa4_aux &fa4_a, const fa4_score_uniform &)\n{\n"
                "    return fa4_score_mod(score, b, h, q_idx, kv_idx, fa4_a);\n}\n"
                "#define FA4_SCORE_MOD_PRESCALE 0\n");
    if (!f || E->nhoist == 0) {
        fa4__out(E, "#endif\n");
        return;
    }
    fa4__out(E, "#else\n");
    fa4__out(E, "struct fa4_score_uniform {\n");
    for (int k = 0; k < E->nhoist; k++)
        fa4__out(E, "    %s u%d;\n", E->hoist_rcp[k] || E->hoist[k]->type == TY_FLOAT ? "float"
                                     : E->hoist[k]->type == TY_INT                  ? "int"
                                                                                     : "bool",
                 k);
    fa4__out(E, "};\n");
    fa4__out(E, "__device__ __forceinline__ fa4_score_uniform fa4_score_mod_uniform(int %s, int %s, "
                "const fa4_aux &fa4_a)\n{\n    fa4_score_uniform fa4_u;\n",
             f->params[1]->name, f->params[2]->name);
    E->vary = fa4__func_varying(E->m, E->varying, f);
    for (int k = 0; k < E->nhoist; k++) {
        fa4__line_directive(E, E->hoist[k]->line);
        fa4__out(E, "    fa4_u.u%d = %s", k, E->hoist_rcp[k] ? "fa4_rcp_u(" : "");
        fa4__emit_bare(E, E->hoist[k]);
        fa4__out(E, "%s;\n", E->hoist_rcp[k] ? ")" : "");
    }
    E->vary = NULL;
    fa4__out(E, "    return fa4_u;\n}\n");
    fa4__reset_line(E);
    E->use_hoist = 1;
    emit_function(E, f, 0, fa4__stmt_branches(f->body));
    E->use_hoist = 0;
    find_prescale(E);
    emit_prescale_fwd(E);
    fa4__out(E, "#endif\n");
    fa4__out(E, "#line %d \"fa4_mod.cuh\"\n", E->out_line + 1);
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
    E.varying = fa4__mod_varying(m);
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
    fa4__collect_uniform(&E, m->score);
    emit_uniform_forms(&E);
    fa4__emit_tile_forms(&E);
    if (m->score)
        fa4__emit_affine_form(&E);
    else
        fa4__out(&E, "#define FA4_SCORE_MOD_AFFINE 0\n");
    fa4__emit_rel_form(&E);
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
        emit_prescale_dual(&E);
    }
    fa4__emit_deriv_wrappers(&E);
    fa4__mod_varying_free(m, E.varying);
    return fa4__emitter_finish(&E);
}

/* The counts as the release header defines them (the analyses run inside the emission). */
static int define_after(const char *text, const char *anchor, const char *name)
{
    const char *a = anchor ? strstr(text, anchor) : text;
    const char *d = a ? strstr(a, name) : NULL;
    return d ? atoi(d + strlen(name)) : 0;
}

int fa4__mod_forward_forms(const fa4__mod *m, int *hoisted, int *tile_parts, int *tile_add, int *affine,
                           int *rel, int *tile_calls, int *prescaled)
{
    char *text = fa4__mod_emit_cuda(m, m ? m->name : "mod", 0);
    if (!text)
        return -1;
    /* the release definitions follow the checked ones (#if FA4_CHECKED ... #else) */
    *hoisted = define_after(text, NULL, "#define FA4_SCORE_MOD_UNIFORM ");
    *tile_parts = define_after(text, "#else\n#define FA4_SCORE_MOD_TILE ", "#define FA4_SCORE_MOD_TILE ");
    *tile_add = *tile_parts ? define_after(text, "#else\n#define FA4_SCORE_MOD_TILE ",
                                           "#define FA4_SCORE_MOD_TILE_ADD ")
                            : 0;
    if (tile_calls)
        *tile_calls = *tile_parts ? define_after(text, "#else\n#define FA4_SCORE_MOD_TILE ",
                                                 "#define FA4_SCORE_MOD_TILE_CALLS ")
                                  : 0;
    *affine = strstr(text, "#else\n#define FA4_SCORE_MOD_AFFINE 1\n") != NULL;
    *rel = strstr(text, "#else\n#define FA4_SCORE_MOD_REL 1\n") != NULL;
    if (*rel && strstr(text, "#define FA4_SCORE_MOD_REL_HEAVY 1\n"))
        *rel = 2;
    if (prescaled)
        *prescaled = strstr(text, "#define FA4_SCORE_MOD_PRESCALE 1\n") != NULL;
    free(text);
    return 0;
}
