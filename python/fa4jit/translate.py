"""Translate PyTorch FlexAttention score_mod / mask_mod functions into the mod language.

    Python function --(torch.fx symbolic trace, captured numbers lifted to placeholders)--> fx graph
        --(type inference + one C expression per node)--> mod source text + aux list

A function is traced with proxies for (score, b, h, q_idx, kv_idx). What it captures becomes an aux
parameter: tensors (closure cells, globals, attributes of a bound method's object, any rank) become
`const T *name` read as `name[flat index]`; Python ints and floats it reads from closure cells or
globals become `int name` / `float name` scalars, so a new value does not recompile. Tensors that
require grad and are read by score_mod become trainable aux tensors. Anything without an
equivalent raises TranslationError naming the operation and the line of the user's function.

Semantics follow PyTorch: int / int is true division, // and % floor (helpers emitted when used),
ints are int32 and floats fp32 as in the mod language (MODS.md).
"""

import inspect
import linecache
import math
import os
import re
import sys
import traceback
import types
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple, Union

import torch
import torch.fx

from ._emit import _HELPERS, _Emitter, _Fail, _Val, _convert, _dispatch
from .errors import TranslationError

_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))
_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_WRAPPER_FILE = "<fa4jit-trace>"

SCORE_PARAMS = ("score", "b", "h", "q_idx", "kv_idx")
MASK_PARAMS = ("b", "h", "q_idx", "kv_idx")

# Names that an aux parameter may not take: mod-language words, builtins, the fixed parameters.
_RESERVED = set("""
float int bool const if else return true false void half bf16 int8 uint8 int16 int32 int64 for while
do goto switch case default break continue asm sizeof struct union enum typedef static extern
expf exp2f logf log2f log1pf expm1f sqrtf rsqrtf tanhf sinf cosf fabsf fminf fmaxf floorf ceilf
roundf truncf powf fmodf copysignf erff exp exp2 log log2 log1p expm1 sqrt rsqrt tanh sin cos fabs
fmin fmax floor ceil round trunc pow fmod copysign erf abs min max clamp score_mod mask_mod
""".split()) | set(SCORE_PARAMS)

_TORCH_TO_MOD_DTYPE = {
    torch.float32: "float",
    torch.float64: "float",  # converted to fp32 at launch
    torch.float16: "half",
    torch.bfloat16: "bf16",
    torch.int8: "int8",
    torch.uint8: "uint8",
    torch.int16: "int16",
    torch.int32: "int32",
    torch.int64: "int64",
    torch.bool: "bool",
}
_INT32_MIN, _INT32_MAX = -(2 ** 31), 2 ** 31 - 1


# ------------------------------------------------------------------------------------------ results
@dataclass
class AuxTensor:
    name: str
    tensor: torch.Tensor = field(repr=False)
    mod_dtype: str          # "float", "half", "bf16", "int32", ...
    used_by_score: bool = False
    used_by_mask: bool = False
    grad_read: bool = False  # read by score_mod without .detach()

    @property
    def is_tensor(self):
        return True

    @property
    def trainable(self):
        return (self.grad_read and self.tensor.requires_grad
                and self.tensor.dtype.is_floating_point)


@dataclass
class AuxScalar:
    name: str
    value: Union[int, float]
    type: str               # "float" or "int"
    used_by_score: bool = False
    used_by_mask: bool = False

    @property
    def is_tensor(self):
        return False


@dataclass
class Translation:
    """The mod source of one or both functions and the aux values it declares."""
    source: str
    score_source: Optional[str]
    mask_source: Optional[str]
    aux: List[Union[AuxTensor, AuxScalar]] = field(default_factory=list)
    # False when tensor values were folded into the text (e.g. slopes.sum() of a captured
    # tensor): the text depends on values, so a cache must translate again each time.
    reusable: bool = True

    @property
    def trainable(self) -> Tuple[str, ...]:
        return tuple(a.name for a in self.aux if isinstance(a, AuxTensor) and a.trainable)

    @property
    def tensors(self) -> List[AuxTensor]:
        return [a for a in self.aux if isinstance(a, AuxTensor)]

    @property
    def scalars(self) -> List[AuxScalar]:
        return [a for a in self.aux if isinstance(a, AuxScalar)]


# ------------------------------------------------------------------------------------- the tracer
class _Tracer(torch.fx.Tracer):
    """An fx tracer that records every tensor a function touches as a get_attr of our own naming
    (the stock tracer refuses parameters that are not members of its root module)."""

    def __init__(self):
        super().__init__()
        self.captured: Dict[str, torch.Tensor] = {}
        self._ids: Dict[int, str] = {}
        if hasattr(self, "record_stack_traces"):
            self.record_stack_traces = True

    def create_node(self, *args, **kwargs):
        # Where in the user's code this node was made, found on the live stack: fx's own
        # node.stack_trace differs between torch versions (frame order, filtering, presence).
        node = super().create_node(*args, **kwargs)
        node.meta["fa4jit_location"] = _stack_location()
        return node

    def create_arg(self, a):
        if isinstance(a, torch.Tensor):
            name = self._ids.get(id(a))
            if name is None:
                name = f"fa4_captured_{len(self.captured)}"
                self._ids[id(a)] = name
                self.captured[name] = a
            return self.create_node("get_attr", name, (), {})
        return super().create_arg(a)


def _in_library(filename):
    absf = os.path.abspath(filename)
    return absf.startswith(_TORCH_DIR + os.sep) or absf.startswith(_PKG_DIR + os.sep)


def _user_frame(frames, fn):
    """The innermost user (filename, line) in frames (outermost first): the deepest frame below
    the trace wrapper that is neither torch's nor ours; else the line defining fn."""
    start = 0
    for i, (filename, _) in enumerate(frames):
        if filename == _WRAPPER_FILE:
            start = i + 1
    best = None
    for filename, lineno in frames[start:]:
        if filename and filename != _WRAPPER_FILE and not _in_library(filename):
            best = (filename, lineno)
    if best is None:
        code = getattr(_function_of(fn) or fn, "__code__", None)
        if code is not None:
            best = (code.co_filename, code.co_firstlineno)
    return best or (None, 0)


_FRAME_RE = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


def _stack_location():
    """(filename, line) of the innermost frame on the current stack that is user code."""
    f = sys._getframe(1)
    while f is not None:
        filename = f.f_code.co_filename
        if filename and filename != _WRAPPER_FILE and not _in_library(filename):
            return filename, f.f_lineno
        f = f.f_back
    return None


def _node_location(node, fn):
    loc = node.meta.get("fa4jit_location") if hasattr(node, "meta") else None
    if loc is None and node.op == "get_attr":  # made while building another node's args
        for user in node.users:
            if user.meta.get("fa4jit_location"):
                loc = user.meta["fa4jit_location"]
                break
    if loc is not None:
        return loc
    trace = getattr(node, "stack_trace", None) or ""
    if not trace:  # get_attr nodes carry no trace: take the first user's
        for user in node.users:
            if getattr(user, "stack_trace", None):
                return _node_location(user, fn)
    frames = [(m.group(1), int(m.group(2)), m.group(3)) for m in _FRAME_RE.finditer(trace)]
    # Some torch versions record the innermost frame first: there our _trace frame (outside the
    # wrapper) comes after the wrapper. Orient outermost first.
    names = [f for f, _, _ in frames]
    outer = [i for i, (f, _, fun) in enumerate(frames) if fun == "_trace" and _in_library(f)]
    if _WRAPPER_FILE in names and outer and outer[0] > names.index(_WRAPPER_FILE):
        frames.reverse()
    return _user_frame([(f, n) for f, n, _ in frames], fn)


def _exception_location(exc, fn):
    frames = [(f.filename, f.lineno) for f in traceback.extract_tb(exc.__traceback__)]
    return _user_frame(frames, fn)


def _fn_label(fn):
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    return name


def _raise_at(fn, kind, location, operation, message):
    filename, line = location
    src = linecache.getline(filename, line) if filename and line else None
    raise TranslationError(f"{kind} {_fn_label(fn)}: {message}", operation=operation,
                           filename=filename, line=line, source_line=src or None)


# --------------------------------------------------------------------------- captured-value search
def _function_of(fn):
    """The plain Python function behind fn (functions, bound methods), or None."""
    if isinstance(fn, types.FunctionType):
        return fn
    if isinstance(fn, types.MethodType) and isinstance(fn.__func__, types.FunctionType):
        return fn.__func__
    return None


def _named_captures(fn, depth=0, seen=None):
    """(name, value) pairs a function can see by name: closure cells, referenced globals, and the
    attributes, parameters and buffers of a bound method's object; recursing into captured
    functions (and_masks-style combinators)."""
    seen = set() if seen is None else seen
    if id(fn) in seen or depth > 8:
        return []
    seen.add(id(fn))
    out = []
    if isinstance(fn, types.MethodType):
        obj = fn.__self__
        if isinstance(obj, torch.nn.Module):
            out.extend(obj.named_parameters())
            out.extend(obj.named_buffers())
        out.extend((k, v) for k, v in getattr(obj, "__dict__", {}).items())
    f = _function_of(fn)
    if f is None:
        if callable(fn) and not isinstance(fn, type) and hasattr(fn, "__call__"):
            call = getattr(fn, "__call__")
            if isinstance(call, types.MethodType):
                return out + _named_captures(call, depth + 1, seen)
        if hasattr(fn, "func"):  # functools.partial
            return out + _named_captures(fn.func, depth + 1, seen)
        return out
    code = f.__code__
    for name, cell in zip(code.co_freevars, f.__closure__ or ()):
        try:
            out.append((name, cell.cell_contents))
        except ValueError:  # empty cell
            pass
    for name in code.co_names:
        if name in f.__globals__:
            out.append((name, f.__globals__[name]))
    nested = [v for _, v in list(out) if callable(v) and not isinstance(v, type)
              and (_function_of(v) is not None or hasattr(v, "func"))]
    for v in nested:
        out.extend(_named_captures(v, depth + 1, seen))
    return out


def _lift_numbers(fn):
    """Plan which captured numbers become scalar placeholders: a list of (name, value, where) with
    where = ("cell", index) or ("global", name). Only the function's own cells and globals."""
    f = _function_of(fn)
    if f is None:
        return []
    plan = []
    code = f.__code__
    for i, (name, cell) in enumerate(zip(code.co_freevars, f.__closure__ or ())):
        try:
            v = cell.cell_contents
        except ValueError:
            continue
        if _is_liftable(v):
            plan.append((name, v, ("cell", i)))
    for name in code.co_names:
        v = f.__globals__.get(name, None)
        if name in f.__globals__ and _is_liftable(v):
            plan.append((name, v, ("global", name)))
    return plan


def _is_liftable(v):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    if isinstance(v, int):
        return _INT32_MIN <= v <= _INT32_MAX
    return math.isfinite(v)


def _with_proxies(fn, plan, proxies):
    """fn with its lifted numbers replaced by proxies (a new function object; fn is untouched)."""
    f = _function_of(fn)
    cells = list(f.__closure__ or ())
    g = f.__globals__
    replaced_globals = {}
    for (name, _, where), proxy in zip(plan, proxies):
        if where[0] == "cell":
            cells[where[1]] = types.CellType(proxy)
        else:
            replaced_globals[name] = proxy
    if replaced_globals:
        g = dict(g)
        g.update(replaced_globals)
    new = types.FunctionType(f.__code__, g, f.__name__, f.__defaults__, tuple(cells) or None)
    new.__kwdefaults__ = f.__kwdefaults__
    if isinstance(fn, types.MethodType):
        return types.MethodType(new, fn.__self__)
    return new


def _positional_arity(fn):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    n = 0
    for p in sig.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty:
            n += 1
        elif p.kind == p.VAR_POSITIONAL:
            return None
    return n


def _trace(fn, kind, lift):
    params = SCORE_PARAMS if kind == "score_mod" else MASK_PARAMS
    plan = _lift_numbers(fn) if lift else []
    scalar_params = [f"fa4_scalar_{i}" for i in range(len(plan))]
    all_params = list(params) + scalar_params

    def call(*args):
        fixed, scalars = args[: len(params)], args[len(params):]
        target = _with_proxies(fn, plan, scalars) if plan else fn
        return target(*fixed)

    src = f"def fa4_traced({', '.join(all_params)}):\n    return fa4_call({', '.join(all_params)})\n"
    namespace = {"fa4_call": call}
    exec(compile(src, _WRAPPER_FILE, "exec"), namespace)
    tracer = _Tracer()
    graph = tracer.trace(namespace["fa4_traced"])
    return graph, tracer.captured, dict(zip(scalar_params, plan))


class _Namer:
    """Unique C names for aux parameters across both functions of one translation."""

    def __init__(self):
        self.used = set()

    def take(self, wanted):
        base = re.sub(r"[^A-Za-z0-9_]", "_", wanted or "aux") or "aux"
        if base[0].isdigit():
            base = "a_" + base
        if base in _RESERVED or base.startswith("v_") or base.startswith("fa4"):
            base = "aux_" + base
        base = base[:56]
        name, i = base, 2
        while name in self.used:
            name = f"{base}_{i}"
            i += 1
        self.used.add(name)
        return name


class _Shared:
    """State shared by the score_mod and mask_mod of one translation: aux names and helpers."""

    def __init__(self):
        self.namer = _Namer()
        self.tensors: Dict[int, AuxTensor] = {}
        self.scalars: Dict[Tuple, AuxScalar] = {}
        self.order: List[Union[AuxTensor, AuxScalar]] = []
        self.helpers = set()
        self.names_by_id: Dict[int, str] = {}
        self.captured_ids = set()
        self.inlined_constants = False  # a tensor value was baked in: do not reuse the result

    def learn_names(self, fn):
        for name, v in _named_captures(fn):
            if isinstance(v, torch.Tensor):
                self.captured_ids.add(id(v))
                self.names_by_id.setdefault(id(v), name.split(".")[-1])

    def tensor_aux(self, tensor, em, fx_name):
        key = id(tensor)
        aux = self.tensors.get(key)
        if aux is not None:
            return aux
        if key not in self.captured_ids:
            if tensor.requires_grad:
                em.fail("tensor computed from captured tensors",
                        "a tensor that requires grad is computed outside the traced values "
                        "(e.g. param.exp() on a captured parameter): it would be evaluated once, "
                        "at translation, and its gradient lost; capture the parameter and apply "
                        "the operation to an element read from it (param[h].exp())")
            if tensor.numel() == 1:
                self.inlined_constants = True
                return None
        if tensor.dtype not in _TORCH_TO_MOD_DTYPE:
            em.fail("tensor dtype", f"captured tensor of dtype {tensor.dtype} (supported: "
                    + ", ".join(str(d).replace("torch.", "") for d in _TORCH_TO_MOD_DTYPE) + ")")
        name = self.namer.take(self.names_by_id.get(key, "aux"))
        aux = AuxTensor(name=name, tensor=tensor, mod_dtype=_TORCH_TO_MOD_DTYPE[tensor.dtype])
        self.tensors[key] = aux
        self.order.append(aux)
        return aux

    def scalar_aux(self, fn, where, name, value):
        f = _function_of(fn)
        key = (id(f.__closure__[where[1]]),) if where[0] == "cell" else (id(f.__globals__), name)
        aux = self.scalars.get(key)
        if aux is None:
            ty = "int" if isinstance(value, int) else "float"
            aux = AuxScalar(name=self.namer.take(name), value=value, type=ty)
            self.scalars[key] = aux
            self.order.append(aux)
        return aux


def _emit_function(fn, kind, shared: _Shared, lift: bool):
    try:
        graph, captured, scalar_plan = _trace(fn, kind, lift)
    except _Fail:
        raise
    except Exception as e:  # the user's code raised while being traced
        if isinstance(e, TranslationError):
            raise
        loc = _exception_location(e, fn)
        op = type(e).__name__
        msg = str(e).split("\n")[0]
        if isinstance(e, torch.fx.proxy.TraceError) or "symbolically traced" in str(e):
            msg = ("Python control flow (if/while/and/or/not, min()/max(), int()/float()/bool()) "
                   "on a traced value cannot be translated; use torch.where, torch.minimum/"
                   "maximum, & | ~ instead (" + msg + ")")
            op = "control flow"
        elif isinstance(e, TypeError) and "Proxy" in str(e):
            msg = ("a non-torch function was called on a traced value (math.* and numpy take "
                   "numbers, not tensors); use the torch function instead (" + msg + ")")
            op = "non-torch call"
        _raise_at(fn, kind, loc, op, msg)

    em = _Emitter(fn, kind, shared)
    params = SCORE_PARAMS if kind == "score_mod" else MASK_PARAMS
    fixed_types = {"score": "float", "b": "int", "h": "int", "q_idx": "int", "kv_idx": "int"}
    result = None
    placeholder_i = 0
    for node in graph.nodes:
        try:
            if node.op == "placeholder":
                if placeholder_i < len(params):
                    p = params[placeholder_i]
                    em.env[node] = _Val("expr", expr=p, type=fixed_types[p])
                else:
                    name, value, where = scalar_plan[node.target]
                    if node.users:
                        aux = shared.scalar_aux(fn, where, name, value)
                        if kind == "score_mod":
                            aux.used_by_score = True
                        else:
                            aux.used_by_mask = True
                        em.declare(aux.name, f"{aux.type} {aux.name}")
                        em.env[node] = _Val("expr", expr=aux.name, type=aux.type)
                placeholder_i += 1
            elif node.op == "get_attr":
                em.env[node] = em.view_of(captured[node.target], node.target)
            elif node.op in ("call_function", "call_method"):
                args = tuple(_convert(em, x) for x in node.args)
                kwargs = {k: _convert(em, v) for k, v in node.kwargs.items()}
                em.env[node] = _dispatch(em, node, args, kwargs)
            elif node.op == "output":
                result = _convert(em, node.args[0])
            else:
                em.fail(node.op, f"fx node kind {node.op}")
        except _Fail as f:
            _raise_at(fn, kind, _node_location(node, fn), f.operation, f.message)

    if isinstance(result, (tuple, list)):
        _raise_at(fn, kind, _user_frame([], fn), "return", "returns several values; a mod "
                  "returns one number")
    try:
        out_ty = "float" if kind == "score_mod" else "bool"
        ret = em.scalar(result)
        ret_text = em.text(ret, out_ty)
    except _Fail as f:
        _raise_at(fn, kind, _user_frame([], fn), f.operation, f.message)
    trivial = kind == "mask_mod" and ret.kind == "const" and bool(ret.value)
    fixed_decl = ("float score, int b, int h, int q_idx, int kv_idx" if kind == "score_mod"
                  else "int b, int h, int q_idx, int kv_idx")
    decl = ", ".join([fixed_decl] + em.params)
    code = getattr(_function_of(fn), "__code__", None)
    where = f" ({os.path.basename(code.co_filename)}:{code.co_firstlineno})" if code else ""
    text = (f"/* Translated by fa4jit from the Python {kind} {_fn_label(fn)}{where}. */\n"
            f"{'float' if kind == 'score_mod' else 'bool'} {kind}({decl}) {{\n"
            + "".join(line + "\n" for line in em.lines)
            + f"    return {ret_text};\n}}\n")
    return text, trivial


# ------------------------------------------------------------------------------------------- entry
def _check_arity(fn, kind):
    want = 5 if kind == "score_mod" else 4
    n = _positional_arity(fn)
    if n is not None and n != want:
        params = SCORE_PARAMS if kind == "score_mod" else MASK_PARAMS
        _raise_at(fn, kind, _user_frame([], fn), "signature",
                  f"takes {n} positional argument(s); a {kind} takes {want}: "
                  f"({', '.join(params)})")


def _one(fn, kind, shared):
    _check_arity(fn, kind)
    shared.learn_names(fn)
    # First with captured numbers as scalar parameters; a function that branches on one in Python
    # (if window > 0: ...) cannot be traced so, and gets them as constants instead.
    snapshot = (dict(shared.tensors), list(shared.order), set(shared.namer.used),
                dict(shared.scalars), set(shared.helpers))
    try:
        return _emit_function(fn, kind, shared, lift=True)
    except TranslationError:
        if not _lift_numbers(fn):
            raise
        (shared.tensors, shared.order, shared.namer.used, shared.scalars,
         shared.helpers) = snapshot
        return _emit_function(fn, kind, shared, lift=False)


def translate(score_mod=None, mask_mod=None, keep_trivial_mask=False) -> Translation:
    """Translate Python score_mod and/or mask_mod functions into one mod source.

    A mask_mod that always returns true is dropped (mask_source None: attention without a mask)
    unless keep_trivial_mask (a block mask needs a mask_mod to evaluate).
    """
    shared = _Shared()
    score_text = mask_text = None
    if score_mod is not None:
        score_text, _ = _one(score_mod, "score_mod", shared)
    if mask_mod is not None:
        text, trivial = _one(mask_mod, "mask_mod", shared)
        if keep_trivial_mask or not trivial:
            mask_text = text
    helpers = "".join(_HELPERS[h] for h in sorted(shared.helpers))
    parts = [p for p in (helpers, score_text, mask_text) if p]
    # A dropped trivial mask declares nothing.
    used = [a for a in shared.order if a.used_by_score or (a.used_by_mask and mask_text)]
    return Translation(source="\n".join(parts), score_source=score_text, mask_source=mask_text,
                       aux=used, reusable=not shared.inlined_constants)
