/*
 * builtins.c - the math builtins of the mod language (MODS.md's list) and the names of its types:
 * one table that the checker (arity, typing), the CUDA emitter and the CPU evaluator all read, so
 * the three can never disagree about which builtins exist.
 */
#include <string.h>

#include "mod_internal.h"

/* clang-format off */
static const fa4__builtin_info table[BI_COUNT_] = {
    [BI_NONE] = {"", NULL, 0, 0},
    [BI_EXP] = {"expf", "exp", 1, 0},
    [BI_EXP2] = {"exp2f", "exp2", 1, 0},
    [BI_LOG] = {"logf", "log", 1, 0},
    [BI_LOG2] = {"log2f", "log2", 1, 0},
    [BI_LOG1P] = {"log1pf", "log1p", 1, 0},
    [BI_EXPM1] = {"expm1f", "expm1", 1, 0},
    [BI_SQRT] = {"sqrtf", "sqrt", 1, 0},
    [BI_RSQRT] = {"rsqrtf", "rsqrt", 1, 0},
    [BI_TANH] = {"tanhf", "tanh", 1, 0},
    [BI_SIN] = {"sinf", "sin", 1, 0},
    [BI_COS] = {"cosf", "cos", 1, 0},
    [BI_FABS] = {"fabsf", "fabs", 1, 0},
    [BI_FMIN] = {"fminf", "fmin", 2, 0},
    [BI_FMAX] = {"fmaxf", "fmax", 2, 0},
    [BI_FLOOR] = {"floorf", "floor", 1, 0},
    [BI_CEIL] = {"ceilf", "ceil", 1, 0},
    [BI_ROUND] = {"roundf", "round", 1, 0},
    [BI_TRUNC] = {"truncf", "trunc", 1, 0},
    [BI_POW] = {"powf", "pow", 2, 0},
    [BI_FMOD] = {"fmodf", "fmod", 2, 0},
    [BI_COPYSIGN] = {"copysignf", "copysign", 2, 0},
    [BI_ERF] = {"erff", "erf", 1, 0},
    [BI_ABS] = {"abs", NULL, 1, 1},
    [BI_MIN] = {"min", NULL, 2, 1},
    [BI_MAX] = {"max", NULL, 2, 1},
    [BI_CLAMP] = {"clamp", NULL, 3, 1},
};
/* clang-format on */

const fa4__builtin_info *fa4__builtin_get(int id)
{
    return id > BI_NONE && id < BI_COUNT_ ? &table[id] : &table[BI_NONE];
}

int fa4__builtin_lookup(const char *name, size_t len)
{
    for (int i = 1; i < BI_COUNT_; i++) {
        if (strlen(table[i].name) == len && !memcmp(table[i].name, name, len))
            return i;
        if (table[i].alt && strlen(table[i].alt) == len && !memcmp(table[i].alt, name, len))
            return i;
    }
    return BI_NONE;
}

const char *fa4__type_name(int ty)
{
    switch (ty) {
    case TY_BOOL: return "bool";
    case TY_INT: return "int";
    case TY_FLOAT: return "float";
    case TY_TENSOR: return "aux tensor";
    default: return "nothing";
    }
}
