/*
 * emit_rel.c - the relative form of score_mod. Where score_mod is `score + g` and g reads the
 * positions only as their difference kv_idx - q_idx (rel_bias, t5_bias, alibi), g is the same at
 * (q_idx + 8, kv_idx + 8) as at (q_idx, kv_idx): in the sm90 forward's S fragment a thread's second
 * row (q + 8) at key k needs g at the first row's key k - 8, which the thread has already computed
 * one 8-column chunk before. So the forward evaluates g at 34 positions of its 64 (16 chunks of
 * two keys on the first row, plus two on the second row for the first chunk) instead of the whole
 * mod at 64: t5_bias's bucket (a log, two divisions, a clamp and a gather) and rel_bias's clamped
 * gather run about half as often (notes/issue8-mod-cost.md, session 12).
 *
 * The form is found statically, on the AST the forward emits:
 *  - score_mod is declarations and one return (fa4__score_mod_is_straight);
 *  - the return is `score + E` or `E + score` (float), and score is read nowhere else;
 *  - q_idx and kv_idx are read only as the operands of `kv_idx - q_idx` or `q_idx - kv_idx`.
 * Then every value E depends on is a function of (b, h, aux, kv_idx - q_idx), and the int32
 * difference is the same (wrapping included) for any two position pairs with the same offset, so
 * g at one pair equals g at the other bit for bit: no rounding argument is needed, and the
 * score is formed as the mod forms it (score + g). Helpers cannot see q_idx or kv_idx except
 * through arguments, which the rule above already covers. Checked builds keep score_mod as written
 * (FA4_SCORE_MOD_REL 0 there): an aux read at a position the kernel reuses would not be the
 * position the user's read is reported at.
 *
 * Emitted: FA4_SCORE_MOD_REL (0 or 1) and, where 1, FA4_SCORE_MOD_REL_HEAVY (below) and
 * fa4_score_mod_rel(b, h, q_idx, kv_idx, aux, uniform) = g, with score_mod's position-independent
 * parts read from fa4_score_mod_uniform's result as fa4_score_mod_u reads them. test_mod_host
 * checks at random points that score + g equals fa4_score_mod_u bit for bit and that g is unchanged
 * when both positions shift.
 */
#include <stdio.h>
#include <string.h>

#include "emit_internal.h"

/* e is kv_idx - q_idx or q_idx - kv_idx on the parameters themselves */
static int is_difference(const fa4__func *f, const fa4__expr *e)
{
    if (e->kind != EX_BINARY || e->op != TK_MINUS || e->type != TY_INT || !e->a || !e->b ||
        e->a->kind != EX_VAR || e->b->kind != EX_VAR)
        return 0;
    const fa4__var *q = f->params[3], *k = f->params[4];
    return (e->a->var == k && e->b->var == q) || (e->a->var == q && e->b->var == k);
}

/* 1 when e reads q_idx and kv_idx only through their difference; counts its reads of score */
static int positions_relative(const fa4__func *f, const fa4__expr *e, int *score_reads)
{
    if (!e)
        return 1;
    if (e->kind == EX_VAR) {
        if (e->var == f->params[0])
            ++*score_reads;
        return e->var != f->params[3] && e->var != f->params[4];
    }
    if (is_difference(f, e))
        return 1;
    if (!positions_relative(f, e->a, score_reads) || !positions_relative(f, e->b, score_reads) ||
        !positions_relative(f, e->c, score_reads))
        return 0;
    for (int i = 0; i < e->nargs; i++)
        if (!positions_relative(f, e->args[i], score_reads))
            return 0;
    return 1;
}

/* E of `return score + E` (or E + score) when score_mod has the relative form; else NULL */
static const fa4__expr *relative_part(const fa4__func *f)
{
    if (!fa4__score_mod_is_straight(f))
        return NULL;
    const fa4__stmt *body = f->body;
    int score_reads = 0;
    for (int i = 0; i < body->nitems; i++)
        if (!positions_relative(f, body->items[i]->e, &score_reads))
            return NULL;
    const fa4__expr *r = body->items[body->nitems - 1]->e;
    if (score_reads != 1 || !r || r->kind != EX_BINARY || r->op != TK_PLUS || r->type != TY_FLOAT)
        return NULL;
    const fa4__var *s = f->params[0];
    const fa4__expr *g = r->a->kind == EX_VAR && r->a->var == s   ? r->b
                         : r->b->kind == EX_VAR && r->b->var == s ? r->a
                                                                  : NULL;
    return g && g->type == TY_FLOAT ? g : NULL;
}

/* Whether g costs more than a few integer operations and a gather: a transcendental or root builtin
 * or a float division anywhere in score_mod or the helpers it calls (t5_bias's log, against
 * rel_bias's clamped gather). The sm90 backward then evaluates g once per offset of a warp's step
 * and shares it by shuffles (FA4_SM90_BWD_REL_SHFL), which measured faster for trainable t5_bias
 * and slower for rel_bias (notes/sm90-bwd.md, session 33). */
static int stmt_heavy(const fa4__stmt *s, int depth);

static int expr_heavy(const fa4__expr *e, int depth)
{
    if (!e)
        return 0;
    if (e->kind == EX_BUILTIN)
        switch (e->op) {
        case BI_EXP: case BI_EXP2: case BI_LOG: case BI_LOG2: case BI_LOG1P: case BI_EXPM1:
        case BI_SQRT: case BI_RSQRT: case BI_TANH: case BI_SIN: case BI_COS: case BI_POW:
        case BI_FMOD: case BI_ERF:
            return 1;
        default:
            break;
        }
    if (e->kind == EX_BINARY && e->op == TK_SLASH && e->type == TY_FLOAT)
        return 1;
    /* helpers do not recurse (the checker's rule); the bound only keeps a malformed AST finite */
    if (e->kind == EX_CALL && e->func && (depth > 32 || stmt_heavy(e->func->body, depth + 1)))
        return 1;
    if (expr_heavy(e->a, depth) || expr_heavy(e->b, depth) || expr_heavy(e->c, depth))
        return 1;
    for (int i = 0; i < e->nargs; i++)
        if (expr_heavy(e->args[i], depth))
            return 1;
    return 0;
}

static int stmt_heavy(const fa4__stmt *s, int depth)
{
    if (!s)
        return 0;
    if (s->kind == ST_ASSIGN && s->op == TK_SLASHEQ && s->var && s->var->type == TY_FLOAT)
        return 1;
    for (int i = 0; i < s->nitems; i++)
        if (stmt_heavy(s->items[i], depth))
            return 1;
    return expr_heavy(s->e, depth) || stmt_heavy(s->then_s, depth) || stmt_heavy(s->else_s, depth);
}

void fa4__emit_rel_form(fa4__emitter *E)
{
    const fa4__func *f = E->m->score;
    fa4__out(E, "\n// ---- score_mod as score + g(b, h, kv_idx - q_idx): g shared by positions with the same offset\n");
    const fa4__expr *g = f ? relative_part(f) : NULL;
    if (!g) {
        fa4__out(E, "#define FA4_SCORE_MOD_REL 0\n");
        return;
    }
    E->rel_form = 1;
    fa4__out(E, "#if FA4_CHECKED\n#define FA4_SCORE_MOD_REL 0\n#else\n#define FA4_SCORE_MOD_REL 1\n");
    fa4__out(E, "#define FA4_SCORE_MOD_REL_HEAVY %d\n", stmt_heavy(f->body, 0));
    fa4__out(E, "__device__ __forceinline__ float fa4_score_mod_rel(int %s, int %s, int %s, int %s, "
                "const fa4_aux &fa4_a, const fa4_score_uniform &fa4_u)\n{\n",
             f->params[1]->name, f->params[2]->name, f->params[3]->name, f->params[4]->name);
    fa4__out(E, "    (void)%s, (void)%s, (void)fa4_a, (void)fa4_u;\n", f->params[1]->name,
             f->params[2]->name);
    E->vary = fa4__func_varying(E->m, E->varying, f);
    E->use_hoist = 1;
    const fa4__stmt *body = f->body;
    for (int i = 0; i + 1 < body->nitems; i++) {
        fa4__line_directive(E, body->items[i]->line);
        fa4__emit_stmt(E, body->items[i], 4);
    }
    fa4__line_directive(E, body->items[body->nitems - 1]->line);
    fa4__out(E, "    return ");
    fa4__emit_bare(E, g);
    fa4__out(E, ";\n");
    fa4__reset_line(E);
    E->use_hoist = 0;
    E->vary = NULL;
    fa4__out(E, "}\n#endif\n");
    fa4__out(E, "#line %d \"fa4_mod.cuh\"\n", E->out_line + 1);
}
