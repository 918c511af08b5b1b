/*
 * emit_straight.c - the straight-line form of a mod function that branches, for release builds:
 * every statement runs, and selects keep the effects of the path the source takes: `if (c) x = e;`
 * becomes `x = c ? e : x`, a return inside an if sets fa4_ret and fa4_done. Mods are pure and
 * total (aux reads clamp, x / 0 == 0), so running the other path changes nothing but time, and the
 * kernel's unrolled fragment loop gets straight-line code: no branch per element, and what does
 * not depend on the element (t5_bias's log of max_distance / max_exact) is no longer computed per
 * element behind a branch, where the compiler could not share it. Checked builds keep the branches
 * (a read on the path not taken must not trap), so such a function is emitted twice, under
 * #if FA4_CHECKED (emit_cuda.c). Both sides of && and || run in this form too where the right one
 * reads an aux tensor or divides ints (else it stays a branch around the load or the division,
 * which the compiler may not run speculatively: dilated_window's mask compiled 2.4x as long as
 * plain attention's with those branches).
 */
#include <stdio.h>
#include <string.h>

#include "emit_internal.h"

/* an aux read, a helper call or an int division: what the compiler will not run speculatively */
static int expr_reads_aux(const fa4__expr *e)
{
    if (!e)
        return 0;
    if (e->kind == EX_INDEX || e->kind == EX_CALL)
        return 1;
    if (e->kind == EX_BINARY && e->type == TY_INT && (e->op == TK_SLASH || e->op == TK_PERCENT))
        return 1;
    if (expr_reads_aux(e->a) || expr_reads_aux(e->b) || expr_reads_aux(e->c))
        return 1;
    for (int i = 0; i < e->nargs; i++)
        if (expr_reads_aux(e->args[i]))
            return 1;
    return 0;
}

/* an && or || whose right side reads memory or divides (a branch unless both sides run) */
static int expr_lazy_read(const fa4__expr *e)
{
    if (!e)
        return 0;
    if (e->kind == EX_BINARY && (e->op == TK_ANDAND || e->op == TK_OROR) && expr_reads_aux(e->b))
        return 1;
    if (expr_lazy_read(e->a) || expr_lazy_read(e->b) || expr_lazy_read(e->c))
        return 1;
    for (int i = 0; i < e->nargs; i++)
        if (expr_lazy_read(e->args[i]))
            return 1;
    return 0;
}

/* the straight-line form differs from the branchy one */
int fa4__stmt_branches(const fa4__stmt *s)
{
    if (!s)
        return 0;
    if (s->kind == ST_IF || expr_lazy_read(s->e))
        return 1;
    for (int i = 0; i < s->nitems; i++)
        if (fa4__stmt_branches(s->items[i]))
            return 1;
    return 0;
}

static int stmt_has_return(const fa4__stmt *s)
{
    if (!s)
        return 0;
    if (s->kind == ST_RETURN)
        return 1;
    for (int i = 0; i < s->nitems; i++)
        if (stmt_has_return(s->items[i]))
            return 1;
    return stmt_has_return(s->then_s) || stmt_has_return(s->else_s);
}

/* a return somewhere under an if */
int fa4__stmt_has_nested_return(const fa4__stmt *s)
{
    if (!s)
        return 0;
    if (s->kind == ST_IF)
        return stmt_has_return(s->then_s) || stmt_has_return(s->else_s);
    for (int i = 0; i < s->nitems; i++)
        if (fa4__stmt_has_nested_return(s->items[i]))
            return 1;
    return 0;
}

/* a statement that changes something the function goes on to read */
static int stmt_has_effect(const fa4__stmt *s)
{
    if (!s)
        return 0;
    switch (s->kind) {
    case ST_ASSIGN: return s->var->reads > 0;
    case ST_RETURN: return 1;
    case ST_IF: return stmt_has_effect(s->then_s) || stmt_has_effect(s->else_s);
    case ST_BLOCK:
        for (int i = 0; i < s->nitems; i++)
            if (stmt_has_effect(s->items[i]))
                return 1;
        return 0;
    default: return 0;
    }
}

/* the condition under which the next statement takes effect; "" when always */
static const char *live_pred(const fa4__emitter *E, char *buf, size_t cap)
{
    if (!E->pred[0])
        snprintf(buf, cap, "%s", E->returned ? "!fa4_done" : "");
    else
        snprintf(buf, cap, E->returned ? "%s && !fa4_done" : "%s", E->pred);
    return buf;
}

/* one arm of an if, under predicate `name` = live && (!)fa4_cN */
static void emit_arm_spec(fa4__emitter *E, const fa4__stmt *arm, const char *name, int id,
                          int negate, int indent)
{
    if (!stmt_has_effect(arm))
        return;
    char lv[64], saved[sizeof E->pred];
    live_pred(E, lv, sizeof lv);
    fa4__out(E, "%*sconst bool %s = %s%s%sfa4_c%d;\n", indent, "", name, lv, lv[0] ? " && " : "",
             negate ? "!" : "", id);
    memcpy(saved, E->pred, sizeof saved);
    snprintf(E->pred, sizeof E->pred, "%s", name);
    if (arm->kind == ST_BLOCK) {
        fa4__emit_stmt_spec(E, arm, indent);
    } else {
        fa4__out(E, "%*s{\n", indent, "");
        fa4__emit_stmt_spec(E, arm, indent + 4);
        fa4__out(E, "%*s}\n", indent, "");
    }
    memcpy(E->pred, saved, sizeof saved);
}

void fa4__emit_stmt_spec(fa4__emitter *E, const fa4__stmt *s, int indent)
{
    char lv[64];
    switch (s->kind) {
    case ST_BLOCK:
        fa4__out(E, "%*s{\n", indent, "");
        for (int i = 0; i < s->nitems; i++)
            fa4__emit_stmt_spec(E, s->items[i], indent + 4);
        fa4__out(E, "%*s}\n", indent, "");
        return;
    case ST_ASSIGN:
        if (!s->var->reads)
            return;
        fa4__line_directive(E, s->line);
        live_pred(E, lv, sizeof lv);
        fa4__out(E, "%*s%s = ", indent, "", s->var->name);
        if (lv[0]) {
            fa4__out(E, "%s ? (", lv);
            fa4__emit_bare(E, s->e);
            fa4__out(E, ") : %s;\n", s->var->name);
        } else {
            fa4__emit_bare(E, s->e);
            fa4__out(E, ";\n");
        }
        return;
    case ST_RETURN:
        fa4__line_directive(E, s->line);
        if (!E->pred[0]) { /* at the top level: the function ends here */
            fa4__out(E, "%*sreturn ", indent, "");
            if (E->returned) {
                fa4__out(E, "fa4_done ? fa4_ret : (");
                fa4__emit_bare(E, s->e);
                fa4__out(E, ");\n");
            } else {
                fa4__emit_bare(E, s->e);
                fa4__out(E, ";\n");
            }
            return;
        }
        live_pred(E, lv, sizeof lv);
        fa4__out(E, "%*sfa4_ret = %s ? (", indent, "", lv);
        fa4__emit_bare(E, s->e);
        fa4__out(E, ") : fa4_ret;\n%*sfa4_done = fa4_done || %s;\n", indent, "", E->pred);
        E->returned = 1;
        return;
    case ST_IF: {
        if (!stmt_has_effect(s))
            return;
        fa4__line_directive(E, s->line);
        const int id = E->npred++;
        char name[24];
        fa4__out(E, "%*s{\n%*sconst bool fa4_c%d = ", indent, "", indent + 4, "", id);
        fa4__emit_bare(E, s->e);
        fa4__out(E, ";\n");
        snprintf(name, sizeof name, "fa4_p%d", id);
        emit_arm_spec(E, s->then_s, name, id, 0, indent + 4);
        snprintf(name, sizeof name, "fa4_q%d", id);
        emit_arm_spec(E, s->else_s, name, id, 1, indent + 4);
        fa4__out(E, "%*s}\n", indent, "");
        return;
    }
    default: fa4__emit_stmt(E, s, indent); return; /* declarations: computed on every path */
    }
}
