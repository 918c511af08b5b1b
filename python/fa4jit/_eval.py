"""fa4jit.evaluate: a mod evaluated on the CPU by the library (fa4_mod_eval), in double precision.

Gives the score_mod's value and d value / d score and the mask_mod's verdict at one point, for a
mod in any of the three forms (source text, shipped name, Python function, translated). Useful to
check a translation or a mod by hand, and used by the tests against the Python functions.
Aux values are host memory here: tensors are copied to the CPU in the declared element type.

The library takes aux values in the mod's declaration order: the aux parameters of score_mod and
mask_mod in the order they appear in the source, each name once (names are checked by the library,
so a wrong order is an error, never a wrong value).
"""

import ctypes
import re

from . import _ctypes as C
from . import _lib
from ._mods import prepare
from .errors import InvalidArgumentError, UnsupportedError

_COMMENTS = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_MOD_HEAD = re.compile(r"\b(?:float|bool)\s+(score_mod|mask_mod)\s*\(([^)]*)\)")
_TENSOR_CODES = {"float": C.FA4_DTYPE_FP32, "half": C.FA4_DTYPE_FP16, "bf16": C.FA4_DTYPE_BF16,
                 "int8": C.FA4_DTYPE_INT8, "uint8": C.FA4_DTYPE_UINT8,
                 "int16": C.FA4_DTYPE_INT16, "int32": C.FA4_DTYPE_INT32,
                 "int64": C.FA4_DTYPE_INT64, "bool": C.FA4_DTYPE_BOOL}
_SCALAR_CODES = {"float": C.FA4_DTYPE_FP32, "int": C.FA4_DTYPE_INT32, "bool": C.FA4_DTYPE_BOOL}
_TORCH_NAMES = {"float": "float32", "half": "float16", "bf16": "bfloat16", "int8": "int8",
                "uint8": "uint8", "int16": "int16", "int32": "int32", "int64": "int64",
                "bool": "bool"}


def aux_declarations(source):
    """[(name, is_tensor, type word)] of the aux parameters, in declaration order."""
    out, seen = [], set()
    for m in _MOD_HEAD.finditer(_COMMENTS.sub(" ", source)):
        params = [p.strip() for p in m.group(2).split(",") if p.strip()]
        fixed = 5 if m.group(1) == "score_mod" else 4
        for p in params[fixed:]:
            words = p.replace("*", " * ").split()
            name = words[-1]
            if name in seen:
                continue
            seen.add(name)
            if "*" in words:
                type_word = [w for w in words[:-1] if w not in ("const", "*")][0]
                out.append((name, True, type_word))
            else:
                out.append((name, False, words[0]))
    return out


def evaluate(score_mod=None, mask_mod=None, score=0.0, b=0, h=0, q_idx=0, kv_idx=0, aux=None):
    """(value, d value / d score, allowed) of the mods at one point, on the CPU in double.

    Without a score_mod the value is the score and the derivative 1; without a mask_mod the pair
    is allowed."""
    from .api import context
    lib = _lib.load()
    if not _lib.has("fa4_mod_eval"):
        raise UnsupportedError(f"the loaded libfa4jit ({_lib.path()}) has no fa4_mod_eval")
    p = prepare(score_mod, mask_mod, aux)
    if p.source is None:
        return float(score), 1.0, True
    given = {a.name: a for a in p.aux}
    decls = aux_declarations(p.source)
    missing = [n for n, _, _ in decls if n not in given]
    if missing:
        raise InvalidArgumentError("no value for aux " + ", ".join(f"'{n}'" for n in missing)
                                   + " (pass aux={name: value})", status_name="FA4_ERR_AUX")
    keep = []
    arr = (C.fa4_aux_value * max(1, len(decls)))()
    for i, (name, is_tensor, word) in enumerate(decls):
        v = given[name].value
        slot = arr[i]
        name_b = name.encode()
        keep.append(name_b)
        slot.name = name_b
        if is_tensor:
            import torch
            t = torch.as_tensor(v).detach().to("cpu", getattr(torch, _TORCH_NAMES[word]))
            t = t.contiguous()
            keep.append(t)
            slot.dtype, slot.data, slot.numel = _TENSOR_CODES[word], t.data_ptr(), t.numel()
        else:
            slot.dtype = _SCALAR_CODES[word]
            if word == "float":
                slot.f = float(v)
            else:
                slot.i = int(v)
    src = p.source.encode()
    value, dvalue, allowed = ctypes.c_double(), ctypes.c_double(), ctypes.c_int32()
    ctx = context("none")
    ctx.call(lib.fa4_mod_eval, ctx.handle, src, len(src), float(score), int(b), int(h),
             int(q_idx), int(kv_idx), ctypes.cast(arr, ctypes.POINTER(C.fa4_aux_value)),
             len(decls), ctypes.byref(value), ctypes.byref(dvalue), ctypes.byref(allowed),
             source=p.source)
    del keep
    return value.value, dvalue.value, bool(allowed.value)
