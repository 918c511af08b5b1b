"""The mod-language emitter behind fa4jit.translate: one C expression per fx node.

Each traced value becomes a _Val: an expression with a type ("float", "int", "bool" as in the mod
language), a Python constant, a view into a captured tensor (indices applied so far), or a dtype or
device marker. Every operation is emitted as a `const T v_N = ...;` local so that precedence never
matters, with explicit casts where PyTorch's type promotion converts. _op and _dispatch map torch
functions, tensor methods and Python operators; anything else raises _Fail, which the translator
turns into a TranslationError at the user's line.
"""

import math
import operator
from typing import Dict, List

import torch
import torch.fx

_INT32_MIN, _INT32_MAX = -(2 ** 31), 2 ** 31 - 1

# ------------------------------------------------------------------------------------------- values
class _Val:
    """What an fx node stands for during emission."""
    __slots__ = ("kind", "expr", "type", "value", "aux", "indices", "detached")

    def __init__(self, kind, expr=None, type=None, value=None, aux=None, indices=(),
                 detached=False):
        self.kind = kind          # "expr", "const", "view", "dtype", "device"
        self.expr = expr          # C text (expr)
        self.type = type          # "float", "int", "bool" (expr, const)
        self.value = value        # Python value (const), mod type (dtype)
        self.aux = aux            # AuxTensor (view)
        self.indices = indices    # index _Vals applied so far (view)
        self.detached = detached


def _const(v):
    if isinstance(v, bool):
        return _Val("const", type="bool", value=v)
    if isinstance(v, int):
        return _Val("const", type="int", value=v)
    return _Val("const", type="float", value=float(v))


def _float_literal(v):
    if math.isnan(v):
        return "(0.0 / 0.0)"
    if math.isinf(v):
        return "(1.0 / 0.0)" if v > 0 else "(-1.0 / 0.0)"
    text = repr(float(v))
    if "e" not in text and "." not in text:
        text += ".0"
    return text if v >= 0 else f"({text})"


class _Fail(Exception):
    """An untranslatable operation; converted to TranslationError with the node's user line."""

    def __init__(self, operation, message):
        super().__init__(message)
        self.operation = operation
        self.message = message


# ----------------------------------------------------------------------------------------- emitter
class _Emitter:
    def __init__(self, fn, kind, shared):
        self.fn = fn
        self.kind = kind
        self.shared = shared          # _Shared across the two functions
        self.lines: List[str] = []
        self.env: Dict[torch.fx.Node, _Val] = {}
        self.params: List[str] = []   # aux declarations of this function, in first-use order
        self.declared = set()
        self.counter = 0

    # ----- helpers
    def fail(self, operation, message):
        raise _Fail(operation, message)

    def local(self, expr, ty):
        name = f"v_{self.counter}"
        self.counter += 1
        self.lines.append(f"    const {ty} {name} = {expr};")
        return _Val("expr", expr=name, type=ty)

    def text(self, v: _Val, ty=None):
        """C text of a scalar value, converted to ty when given."""
        v = self.scalar(v)
        ty = ty or v.type
        if v.kind == "const":
            x = v.value
            if ty == "bool":
                return "true" if x else "false"
            if ty == "int":
                if isinstance(x, float):
                    if not x.is_integer():
                        self.fail("int conversion", f"the constant {x} is used as an int")
                    x = int(x)
                x = int(x)
                if not _INT32_MIN <= x <= _INT32_MAX:
                    self.fail("int constant", f"the constant {x} does not fit the mod language's "
                              "32-bit int")
                return str(x) if x >= 0 else f"({x})"
            return _float_literal(float(x))
        if v.type == ty:
            return v.expr
        return f"(({ty})({v.expr}))"

    def scalar(self, v):
        """A value usable in arithmetic: views are read, dtypes refused."""
        if not isinstance(v, _Val):
            if isinstance(v, (bool, int, float)):
                return _const(v)
            self.fail(type(v).__name__, f"a value of type {type(v).__name__} ({v!r}) is used "
                      "where a number is needed")
        if v.kind == "view":
            return self.read(v, allow_broadcast=True)
        if v.kind in ("dtype", "device"):
            self.fail(v.kind, f"a {v.kind} is used where a number is needed")
        return v

    # ----- aux
    def declare(self, name, decl):
        if name not in self.declared:
            self.declared.add(name)
            self.params.append(decl)

    def view_of(self, tensor, fx_name):
        aux = self.shared.tensor_aux(tensor, self, fx_name)
        if aux is None:  # a constant made inside the function (torch.tensor(2.0)): inline it
            if tensor.numel() != 1:
                self.fail("tensor constant", "a tensor created inside the function with "
                          f"{tensor.numel()} elements; only single numbers can be inlined")
            x = tensor.detach().cpu().reshape(()).item()
            return _const(x)
        return _Val("view", aux=aux, indices=())

    def read(self, v, allow_broadcast=False):
        aux = v.aux
        shape = list(aux.tensor.shape)
        idx = list(v.indices)
        if len(idx) < len(shape):
            rest = shape[len(idx):]
            if allow_broadcast and all(s == 1 for s in rest):
                idx += [_const(0)] * len(rest)
            else:
                self.fail("tensor use", f"tensor '{aux.name}' of shape {tuple(shape)} is used "
                          f"with {len(v.indices)} index(es); index every dimension (e.g. "
                          f"{aux.name}[h]) so that one element is read")
        flat = None
        stride = 1
        terms = []
        for dim in reversed(range(len(shape))):
            i = idx[dim]
            if i.kind == "const":
                c = int(i.value)
                if c < 0:
                    c += shape[dim]
                if not 0 <= c < shape[dim]:
                    self.fail("index", f"index {i.value} is out of range for dimension {dim} of "
                              f"'{aux.name}' (size {shape[dim]})")
                if c:
                    terms.append(str(c * stride))
            else:
                t = self.text(i, "int")
                terms.append(t if stride == 1 else f"{t} * {stride}")
            stride *= shape[dim]
        flat = " + ".join(reversed(terms)) if terms else "0"
        if self.kind == "score_mod":
            aux.used_by_score = True
            if not v.detached:
                aux.grad_read = True
        else:
            aux.used_by_mask = True
        self.declare(aux.name, f"const {aux.mod_dtype} *{aux.name}")
        ty = ("float" if aux.mod_dtype in ("float", "half", "bf16")
              else "bool" if aux.mod_dtype == "bool" else "int")
        return self.local(f"{aux.name}[{flat}]", ty)

    def index(self, v, idx):
        if v.kind != "view":
            self.fail("indexing", "only captured tensors can be indexed")
        items = idx if isinstance(idx, tuple) else (idx,)
        out = list(v.indices)
        for it in items:
            if it is None or it is Ellipsis or isinstance(it, slice):
                self.fail("indexing", f"indexing '{v.aux.name}' with {it!r}: only integer indices "
                          "(b, h, q_idx, kv_idx, expressions of them, constants) are supported")
            it = self.scalar(it)
            if it.type == "float":
                self.fail("indexing", f"indexing '{v.aux.name}' with a float")
            if it.type == "bool":
                self.fail("indexing", f"indexing '{v.aux.name}' with a bool (boolean masks select "
                          "elements; a mod reads one element)")
            out.append(it)
        if len(out) > v.aux.tensor.dim():
            self.fail("indexing", f"'{v.aux.name}' has {v.aux.tensor.dim()} dimension(s) but is "
                      f"indexed with {len(out)}")
        return _Val("view", aux=v.aux, indices=tuple(out), detached=v.detached)

    # ----- operations
    def promote(self, *vals):
        tys = [self.scalar(v).type for v in vals]
        if "float" in tys:
            return "float"
        if "int" in tys:
            return "int"
        return "bool"

    def arith(self, op, a, b):
        a, b = self.scalar(a), self.scalar(b)
        ty = self.promote(a, b)
        if ty == "bool":
            ty = "int"
        if op == "/":
            return self.local(f"{self.text(a, 'float')} / {self.text(b, 'float')}", "float")
        if op == "//":
            if ty == "int":
                self.shared.helpers.add("floordiv")
                return self.local(f"py_floordiv({self.text(a, 'int')}, {self.text(b, 'int')})",
                                  "int")
            return self.local(f"floorf({self.text(a, 'float')} / {self.text(b, 'float')})",
                              "float")
        if op == "%":  # Python / torch.remainder: the sign of the divisor
            if ty == "int":
                self.shared.helpers.add("remainder")
                return self.local(f"py_remainder({self.text(a, 'int')}, {self.text(b, 'int')})",
                                  "int")
            x, y = self.text(a, "float"), self.text(b, "float")
            return self.local(f"{x} - floorf({x} / {y}) * {y}", "float")
        return self.local(f"{self.text(a, ty)} {op} {self.text(b, ty)}", ty)

    def compare(self, op, a, b):
        ty = self.promote(a, b)
        return self.local(f"{self.text(a, ty)} {op} {self.text(b, ty)}", "bool")

    def logical(self, op, a, b):
        a, b = self.scalar(a), self.scalar(b)
        if a.type == "bool" and b.type == "bool":
            cop = {"&": "&&", "|": "||", "^": "!="}[op]
            return self.local(f"{self.text(a)} {cop} {self.text(b)}", "bool")
        if "float" in (a.type, b.type):
            self.fail(f"operator {op}", f"bitwise '{op}' on a float")
        return self.local(f"{self.text(a, 'int')} {op} {self.text(b, 'int')}", "int")

    def shift(self, op, a, b):
        a, b = self.scalar(a), self.scalar(b)
        if "float" in (a.type, b.type):
            self.fail(f"operator {op}", f"shift '{op}' on a float")
        return self.local(f"{self.text(a, 'int')} {op} {self.text(b, 'int')}", "int")

    def unary_float(self, fname, a):
        return self.local(f"{fname}({self.text(a, 'float')})", "float")

    def cast(self, a, ty):
        a = self.scalar(a)
        if a.type == ty:
            return a
        if a.kind == "const":
            self.text(a, ty)  # range and exactness checks
            return _const({"bool": bool, "int": int, "float": float}[ty](a.value))
        if ty == "bool":
            return self.local(f"{self.text(a)} != {'0.0' if a.type == 'float' else '0'}", "bool")
        return self.local(f"({ty})({a.expr})", ty)

    def where(self, c, a, b):
        c = self.cast(self.scalar(c), "bool")
        ty = self.promote(a, b)
        return self.local(f"{self.text(c)} ? {self.text(a, ty)} : {self.text(b, ty)}", ty)

    def minmax(self, which, a, b):
        ty = self.promote(a, b)
        if ty == "float":
            return self.local(f"f{which}f({self.text(a, ty)}, {self.text(b, ty)})", ty)
        if ty == "bool":
            ty = "int"
        return self.local(f"{which}({self.text(a, ty)}, {self.text(b, ty)})", ty)

    def clamp(self, a, lo=None, hi=None):
        out = self.scalar(a)
        if isinstance(lo, _Val) or lo is not None:
            out = self.minmax("max", out, lo)
        if isinstance(hi, _Val) or hi is not None:
            out = self.minmax("min", out, hi)
        return out

    def pow(self, a, b):
        a, b = self.scalar(a), self.scalar(b)
        if b.kind == "const" and b.type != "bool":
            e = b.value
            if e == 1:
                return a
            if e == 2:
                ty = "int" if a.type in ("int", "bool") and isinstance(e, int) else "float"
                t = self.text(a, ty)
                return self.local(f"{t} * {t}", ty)
            if e == 0.5:
                return self.unary_float("sqrtf", a)
            if e == -1:
                return self.local(f"1.0 / {self.text(a, 'float')}", "float")
        if a.type != "float" and b.type != "float":
            self.fail("pow", "an integer raised to a non-constant or large power (torch keeps it "
                      "an exact integer; the mod language has no integer power)")
        return self.local(f"powf({self.text(a, 'float')}, {self.text(b, 'float')})", "float")

    def dtype_type(self, d):
        if isinstance(d, _Val) and d.kind == "dtype":
            d = d.value
        if isinstance(d, torch.dtype):
            if d in (torch.float32, torch.float64):
                return "float"
            if d == torch.bool:
                return "bool"
            if d in (torch.float16, torch.bfloat16):
                self.fail(f".to({d})", f"casting to {d} inside a mod: the mod language computes in "
                          "fp32; cast to torch.float32 or leave the value as it is")
            if not d.is_floating_point and not d.is_complex:
                return "int"
        self.fail(f".to({d})", f"cast to {d!r}")

    def full(self, value, dtype_val, like=None):
        ty = self.dtype_type(dtype_val) if dtype_val is not None else None
        if ty is None:
            ty = like.type if like is not None else self.scalar(value).type
        v = self.scalar(value)
        return self.cast(v, ty)


_UNARY_FLOAT = {
    "tanh": "tanhf", "exp": "expf", "log": "logf", "sqrt": "sqrtf", "rsqrt": "rsqrtf",
    "sin": "sinf", "cos": "cosf", "exp2": "exp2f", "log2": "log2f", "log1p": "log1pf",
    "expm1": "expm1f", "erf": "erff",
}
_ROUNDING = {"floor": "floorf", "ceil": "ceilf", "trunc": "truncf", "fix": "truncf"}
_CASTS = {"float": "float", "double": "float", "int": "int", "long": "int", "short": "int",
          "char": "int", "byte": "int", "bool": "bool"}
_ARITH = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
          operator.floordiv: "//", operator.mod: "%"}
_CMP = {operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">=",
        operator.eq: "==", operator.ne: "!="}
_TORCH_ARITH = {"add": "+", "sub": "-", "subtract": "-", "mul": "*", "multiply": "*",
                "true_divide": "/", "floor_divide": "//", "remainder": "%"}
_TORCH_CMP = {"lt": "<", "less": "<", "le": "<=", "less_equal": "<=", "gt": ">", "greater": ">",
              "ge": ">=", "greater_equal": ">=", "eq": "==", "ne": "!=", "not_equal": "!="}
_TORCH_LOGIC = {"logical_and": "&", "logical_or": "|", "logical_xor": "^", "bitwise_and": "&",
                "bitwise_or": "|", "bitwise_xor": "^"}
_MAGIC = {"__add__": "+", "__sub__": "-", "__mul__": "*", "__truediv__": "/",
          "__floordiv__": "//", "__mod__": "%"}


def _op(em: _Emitter, name, args, kwargs):
    """One torch function or tensor method by name (args[0] is self for methods)."""
    a = args
    kw = kwargs
    if name in ("__getitem__",):
        return em.index(a[0], a[1])
    if name in _TORCH_ARITH or name in _MAGIC:
        op = _TORCH_ARITH.get(name) or _MAGIC[name]
        other = a[1]
        alpha = kw.get("alpha")
        if alpha is not None and op in "+-":
            other = em.arith("*", other, alpha)
        return em.arith(op, a[0], other)
    if name in ("div", "divide"):
        mode = kw.get("rounding_mode")
        if mode is None:
            return em.arith("/", a[0], a[1])
        if mode == "floor":
            return em.arith("//", a[0], a[1])
        if mode == "trunc":
            ty = em.promote(a[0], a[1])
            if ty == "float":
                return em.unary_float("truncf", em.arith("/", a[0], a[1]))
            return em.local(f"{em.text(a[0], 'int')} / {em.text(a[1], 'int')}", "int")
        em.fail(name, f"rounding_mode={mode!r}")
    if name == "fmod":
        ty = em.promote(a[0], a[1])
        if ty == "float":
            return em.local(f"fmodf({em.text(a[0], ty)}, {em.text(a[1], ty)})", ty)
        return em.local(f"{em.text(a[0], 'int')} % {em.text(a[1], 'int')}", "int")
    if name in _TORCH_CMP:
        return em.compare(_TORCH_CMP[name], a[0], a[1])
    if name in _TORCH_LOGIC:
        x, y = em.scalar(a[0]), em.scalar(a[1])
        if name.startswith("logical"):
            x, y = em.cast(x, "bool"), em.cast(y, "bool")
        return em.logical(_TORCH_LOGIC[name], x, y)
    if name == "logical_not":
        return em.local(f"!{em.text(em.cast(a[0], 'bool'))}", "bool")
    if name == "bitwise_not":
        x = em.scalar(a[0])
        if x.type == "bool":
            return em.local(f"!{em.text(x)}", "bool")
        return em.local(f"~{em.text(x, 'int')}", "int")
    if name in ("neg", "negative"):
        x = em.scalar(a[0])
        ty = "int" if x.type == "bool" else x.type
        return em.local(f"-{em.text(x, ty)}", ty)
    if name in ("pow", "float_power"):
        return em.pow(a[0], a[1])
    if name == "square":
        return em.pow(a[0], 2)
    if name == "reciprocal":
        return em.local(f"1.0 / {em.text(a[0], 'float')}", "float")
    if name in _UNARY_FLOAT:
        return em.unary_float(_UNARY_FLOAT[name], a[0])
    if name in _ROUNDING:
        x = em.scalar(a[0])
        if x.type != "float":
            return x
        return em.unary_float(_ROUNDING[name], x)
    if name in ("abs", "absolute"):
        x = em.scalar(a[0])
        if x.type == "float":
            return em.unary_float("fabsf", x)
        return em.local(f"abs({em.text(x, 'int')})", "int")
    if name == "sigmoid":
        return em.local(f"1.0 / (1.0 + expf(-{em.text(a[0], 'float')}))", "float")
    if name == "relu":
        return em.minmax("max", a[0], 0.0 if em.scalar(a[0]).type == "float" else 0)
    if name == "sign":
        x = em.scalar(a[0])
        ty = "int" if x.type == "bool" else x.type
        zero = "0.0" if ty == "float" else "0"
        t = em.text(x, ty)
        return em.local(f"({t} > {zero}) ? ({ty})1 : (({t} < {zero}) ? ({ty})(-1) : ({ty})0)", ty)
    if name in ("minimum", "fmin", "maximum", "fmax", "min", "max"):
        other = a[1] if len(a) > 1 else kw.get("other")
        if name in ("min", "max") and not (isinstance(other, _Val) and other.kind != "const"):
            em.fail(f"torch.{name}", f"torch.{name} as a reduction; a mod computes one number "
                    "(use torch.minimum/maximum for two values)")
        return em.minmax("min" if name in ("minimum", "fmin", "min") else "max", a[0], other)
    if name in ("clamp", "clip"):
        lo = a[1] if len(a) > 1 else kw.get("min")
        hi = a[2] if len(a) > 2 else kw.get("max")
        return em.clamp(a[0], lo, hi)
    if name == "clamp_min":
        return em.clamp(a[0], a[1], None)
    if name == "clamp_max":
        return em.clamp(a[0], None, a[1])
    if name == "where":
        if len(a) != 3:
            em.fail("torch.where", "torch.where with one argument (nonzero) has no scalar meaning")
        return em.where(a[0], a[1], a[2])
    if name in ("to", "type"):
        target = kw.get("dtype")
        for x in a[1:]:
            if isinstance(x, torch.dtype) or (isinstance(x, _Val) and x.kind == "dtype"):
                target = x
        if target is None:  # .to(device) and friends
            return a[0]
        return em.cast(a[0], em.dtype_type(target))
    if name in _CASTS:
        return em.cast(a[0], _CASTS[name])
    if name in ("half", "bfloat16"):
        em.dtype_type(torch.float16 if name == "half" else torch.bfloat16)
    if name in ("clone", "contiguous", "squeeze", "float32"):
        return a[0]
    if name == "detach":
        x = a[0]
        if isinstance(x, _Val) and x.kind == "view":
            return _Val("view", aux=x.aux, indices=x.indices, detached=True)
        return x
    if name in ("ones_like", "zeros_like", "full_like", "new_ones", "new_zeros", "new_full",
                "new_tensor", "scalar_tensor", "tensor"):
        like = em.scalar(a[0]) if name.endswith("_like") or name.startswith("new_") else None
        if name in ("ones_like", "new_ones"):
            value = 1
        elif name in ("zeros_like", "new_zeros"):
            value = 0
        elif name in ("full_like", "new_full"):
            value = a[2] if name == "new_full" and len(a) > 2 else (
                a[1] if name == "full_like" else kw.get("fill_value"))
            if value is None:
                value = kw.get("fill_value")
        elif name == "new_tensor":
            value = a[1] if len(a) > 1 else kw.get("data")
        else:
            value = a[0]
        size = kw.get("size")
        if size is None and name.startswith("new_") and name != "new_tensor" and len(a) > 1:
            size = a[1]
        if size not in (None, (), []):
            em.fail(name, f"{name} with size {size}: a mod computes one number")
        return em.full(value, kw.get("dtype"), like)
    if name == "nan_to_num":
        x = em.scalar(a[0])
        if x.type != "float":
            return x
        big = float(torch.finfo(torch.float32).max)
        nan = a[1] if len(a) > 1 else kw.get("nan", 0.0)
        pos = a[2] if len(a) > 2 else kw.get("posinf")
        neg = a[3] if len(a) > 3 else kw.get("neginf")
        t = em.text(x)
        pos_t = em.text(pos, "float") if pos is not None else _float_literal(big)
        neg_t = em.text(neg, "float") if neg is not None else _float_literal(-big)
        return em.local(f"({t} != {t}) ? {em.text(nan, 'float')} : (({t} > {_float_literal(big)}) "
                        f"? {pos_t} : (({t} < {_float_literal(-big)}) ? {neg_t} : {t}))", "float")
    if name == "item":
        return em.scalar(a[0])
    op = f"torch.{name}" if not name.startswith("__") else name
    em.fail(op, f"'{op}' has no equivalent in the mod language")


def _target_name(target):
    mod = getattr(target, "__module__", "") or ""
    name = getattr(target, "__name__", None) or str(target)
    if mod.startswith("torch"):
        return name, f"torch.{name}"
    return name, f"{mod}.{name}" if mod else name


_HELPERS = {
    "floordiv": (
        "/* Python's // on ints: rounds toward negative infinity. */\n"
        "int py_floordiv(int a, int b) {\n"
        "    int q = a / b;\n"
        "    if (a % b != 0 && ((a < 0) != (b < 0))) {\n"
        "        q = q - 1;\n"
        "    }\n"
        "    return q;\n"
        "}\n"),
    "remainder": (
        "/* Python's % on ints: the result takes the sign of the divisor. */\n"
        "int py_remainder(int a, int b) {\n"
        "    int r = a % b;\n"
        "    if (r != 0 && ((r < 0) != (b < 0))) {\n"
        "        r = r + b;\n"
        "    }\n"
        "    return r;\n"
        "}\n"),
}


def _convert(em, x):
    if isinstance(x, torch.fx.Node):
        if x not in em.env:
            em.fail(x.op, f"value '{x.name}' is not available")
        return em.env[x]
    if isinstance(x, (bool, int, float)):
        return _const(x)
    if isinstance(x, (tuple, list)):
        return tuple(_convert(em, y) for y in x)
    if isinstance(x, torch.dtype):
        return _Val("dtype", value=x)
    if isinstance(x, torch.device):
        return _Val("device", value=x)
    return x


def _dispatch(em: _Emitter, node, args, kwargs):
    if node.op == "call_method":
        return _op(em, node.target, args, _unwrap_dtypes(kwargs))
    t = node.target
    if t is getattr:
        obj, attr = args[0], args[1]
        if attr == "dtype":
            v = em.scalar(obj)
            return _Val("dtype", value={"float": torch.float32, "int": torch.int32,
                                        "bool": torch.bool}[v.type])
        if attr == "device":
            return _Val("device", value=None)
        em.fail(f".{attr}", f"attribute '.{attr}' of a traced value")
    if t in _ARITH:
        return em.arith(_ARITH[t], args[0], args[1])
    if t in _CMP:
        return em.compare(_CMP[t], args[0], args[1])
    if t in (operator.and_, operator.or_, operator.xor):
        return em.logical({operator.and_: "&", operator.or_: "|", operator.xor: "^"}[t],
                          args[0], args[1])
    if t in (operator.lshift, operator.rshift):
        return em.shift("<<" if t is operator.lshift else ">>", args[0], args[1])
    if t is operator.neg:
        return _op(em, "neg", args, {})
    if t is operator.pos:
        return em.scalar(args[0])
    if t is operator.invert:
        return _op(em, "bitwise_not", args, {})
    if t is operator.abs:
        return _op(em, "abs", args, {})
    if t is operator.pow:
        return em.pow(args[0], args[1])
    if t is operator.getitem:
        return em.index(args[0], args[1])
    if t is operator.not_:
        em.fail("not", "'not x' on a traced value; use ~x or torch.logical_not")
    name, qual = _target_name(t)
    if qual.startswith("torch.") or getattr(torch, name, None) is t or \
            getattr(torch.Tensor, name, None) is t or getattr(torch.special, name, None) is t:
        if name in ("special_expit", "expit"):
            name = "sigmoid"
        return _op(em, name, args, _unwrap_dtypes(kwargs))
    if name in ("sigmoid", "tanh", "relu", "silu", "gelu") and "functional" in qual:
        if name in ("sigmoid", "tanh", "relu"):
            return _op(em, name, args, {})
    em.fail(qual, f"'{qual}' has no equivalent in the mod language")


def _unwrap_dtypes(kwargs):
    return {k: (v.value if isinstance(v, _Val) and v.kind == "dtype" else v)
            for k, v in kwargs.items()}

