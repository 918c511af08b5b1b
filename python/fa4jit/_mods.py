"""From what a user passes as score_mod / mask_mod to one mod source plus its aux values.

A mod may be given as
  (a) mod-language source text (anything containing "(" is taken as source),
  (b) the name of a shipped mod ("alibi" -> mods/alibi.mod),
  (c) a Python function as written for torch's flex_attention (translated by fa4jit.translate).
Prepared is the result: the source, the aux values in the order the source declares them (matched
to the compiled kernel's order at launch), and which aux tensors are trainable.

Translations are cached per function object; an entry is reused only while everything the function
captures is the same (tensors by identity, shape, dtype and requires_grad; numbers by value).
"""

import glob
import os
import threading
import types
import weakref
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from . import _lib

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))


def mods_dirs():
    """Where shipped mods are looked for: FA4JIT_MODS_DIR, the package's mods/ (a wheel), the
    source checkout's mods/."""
    out = []
    env = os.environ.get("FA4JIT_MODS_DIR")
    if env:
        out.append(env)
    out.append(os.path.join(_PKG_DIR, "mods"))
    root = _lib.repo_dir()
    if root is not None:
        out.append(os.path.join(root, "mods"))
    return [d for d in out if os.path.isdir(d)]


def shipped_mods() -> Dict[str, str]:
    """Shipped mod name -> path of its .mod file (the first directory that has the name wins)."""
    found: Dict[str, str] = {}
    for d in mods_dirs():
        for p in sorted(glob.glob(os.path.join(d, "*.mod"))):
            found.setdefault(os.path.splitext(os.path.basename(p))[0], p)
    return found


# name -> (FA4JIT_MODS_DIR when read, path, mtime_ns, size, text): a call by name costs one
# stat() instead of a directory scan and a read.
_source_cache: Dict[str, tuple] = {}
_source_lock = threading.Lock()


def shipped_mod_source(name) -> str:
    env = os.environ.get("FA4JIT_MODS_DIR")
    hit = _source_cache.get(name)
    if hit is not None and hit[0] == env:
        try:
            st = os.stat(hit[1])
            if (st.st_mtime_ns, st.st_size) == (hit[2], hit[3]):
                return hit[4]
        except OSError:
            pass
    mods = shipped_mods()
    if name not in mods:
        known = ", ".join(sorted(mods)) or "none found"
        raise ValueError(f"'{name}' is neither mod source nor the name of a shipped mod "
                         f"(shipped: {known}; searched {mods_dirs() or 'no mods directory'})")
    path = mods[name]
    with open(path, encoding="utf-8") as f:
        st = os.fstat(f.fileno())
        text = f.read()
    with _source_lock:
        _source_cache[name] = (env, path, st.st_mtime_ns, st.st_size, text)
    return text


def is_source_text(s: str) -> bool:
    return "(" in s


class ModSourceMask:
    """The mask_mod of a BlockMask built by fa4jit from mod source text (or a shipped mod's name).
    fa4jit reads .source and .aux from it; torch's own kernels cannot evaluate it (calling it
    raises), so such a BlockMask is for fa4jit's flex_attention only."""

    def __init__(self, source, aux=None):
        self.source = source
        self.aux = dict(aux or {})

    def __call__(self, b, h, q_idx, kv_idx):
        from .errors import UnsupportedError
        raise UnsupportedError("this mask_mod is fa4jit mod source; only fa4jit can evaluate it")

    def __repr__(self):
        first = self.source.strip().splitlines()[0] if self.source.strip() else ""
        return f"ModSourceMask({first!r})"


@dataclass
class AuxValue:
    """One aux argument: a tensor (any torch tensor) or a scalar (int/float/bool)."""
    name: str
    value: object
    is_tensor: bool
    trainable: bool = False
    scalar_type: Optional[str] = None  # "float", "int", "bool" for scalars


@dataclass
class Prepared:
    source: Optional[str]               # None: plain attention
    source_name: str
    aux: List[AuxValue] = field(default_factory=list)
    has_mask: bool = False

    @property
    def trainable(self) -> Tuple[str, ...]:
        return tuple(a.name for a in self.aux if a.trainable)


def _text_of(obj, kind):
    if isinstance(obj, str):
        if is_source_text(obj):
            return obj, kind
        return shipped_mod_source(obj), obj
    return None, None


class _TranslationCache:
    def __init__(self):
        self._lock = threading.Lock()
        self._entries: Dict[Tuple[int, int], tuple] = {}

    @staticmethod
    def _snapshot(fn):
        import torch
        from .translate import _named_captures
        if fn is None:
            return None
        snap = []
        if isinstance(fn, types.MethodType):
            snap.append(("self", "o", id(fn.__self__)))
        for name, v in _named_captures(fn):
            if isinstance(v, torch.Tensor):
                snap.append((name, "t", id(v), tuple(v.shape), v.dtype, v.requires_grad))
            elif isinstance(v, (bool, int, float)):
                snap.append((name, "n", type(v), v))
            else:
                snap.append((name, "o", id(v)))
        return tuple(snap)

    def get(self, score_fn, mask_fn, keep_trivial_mask):
        from .translate import translate
        # A bound method is a new object at every attribute access: key on its function.
        anchors = tuple(f.__func__ if isinstance(f, types.MethodType) else f
                        for f in (score_fn, mask_fn))
        key = (id(anchors[0]), id(anchors[1]), keep_trivial_mask)
        snap = (self._snapshot(score_fn), self._snapshot(mask_fn))
        with self._lock:
            hit = self._entries.get(key)
        if hit is not None:
            refs, old_snap, result = hit
            alive = all((r() if r is not None else None) is a for r, a in zip(refs, anchors))
            if alive and old_snap == snap:
                return result
        result = translate(score_fn, mask_fn, keep_trivial_mask=keep_trivial_mask)
        if not result.reusable:
            return result
        try:
            refs = tuple(weakref.ref(a) if a is not None else None for a in anchors)
        except TypeError:  # not weakly referenceable: do not cache
            return result
        with self._lock:
            if len(self._entries) > 4096:
                self._entries.clear()
            self._entries[key] = (refs, snap, result)
        return result

    def clear(self):
        with self._lock:
            self._entries.clear()


translations = _TranslationCache()


def prepare(score_mod=None, mask_mod=None, aux=None, keep_trivial_mask=False) -> Prepared:
    """One Prepared from a score_mod and a mask_mod given in any of the three forms.

    `aux` maps names to values for aux parameters declared in mod source text (forms a and b);
    the tensors among them that require grad are trainable.
    """
    aux = dict(aux or {})
    if isinstance(mask_mod, ModSourceMask):
        for name, v in mask_mod.aux.items():
            aux.setdefault(name, v)
        mask_mod = mask_mod.source
    texts = []
    names = []
    values: List[AuxValue] = []
    fn_score = score_mod if callable(score_mod) and not isinstance(score_mod, str) else None
    fn_mask = mask_mod if callable(mask_mod) and not isinstance(mask_mod, str) else None
    for obj, kind in ((score_mod, "score_mod"), (mask_mod, "mask_mod")):
        if obj is None or callable(obj) and not isinstance(obj, str):
            continue
        if not isinstance(obj, str):
            raise TypeError(f"{kind} must be None, mod source text, a shipped mod's name or a "
                            f"Python function; got {type(obj).__name__}")
        text, name = _text_of(obj, kind)
        if text not in texts:  # one file holding both mods, given twice
            texts.append(text)
            names.append(name)
    has_mask = False
    if fn_score is not None or fn_mask is not None:
        t = translations.get(fn_score, fn_mask, keep_trivial_mask)
        if t.source:
            texts.insert(0, t.source)
            names.insert(0, "python")
        has_mask = t.mask_source is not None
        for a in t.aux:
            if a.is_tensor:
                values.append(AuxValue(a.name, a.tensor, True, trainable=a.trainable))
            else:
                values.append(AuxValue(a.name, a.value, False, scalar_type=a.type))
    if isinstance(mask_mod, str):
        has_mask = True
    taken = {v.name for v in values}
    for name, v in aux.items():
        if name in taken:
            raise ValueError(f"aux '{name}' is given twice (captured by a Python mod and in aux=)")
        if _is_tensor(v):
            values.append(AuxValue(name, v, True, trainable=bool(v.requires_grad)
                                   and v.dtype.is_floating_point))
        elif isinstance(v, bool):
            values.append(AuxValue(name, v, False, scalar_type="bool"))
        elif isinstance(v, int):
            values.append(AuxValue(name, v, False, scalar_type="int"))
        elif isinstance(v, float):
            values.append(AuxValue(name, v, False, scalar_type="float"))
        else:
            raise TypeError(f"aux '{name}': expected a tensor, int, float or bool, got "
                            f"{type(v).__name__}")
    source = "\n".join(texts) if texts else None
    return Prepared(source=source or None, source_name="+".join(names) or "mod", aux=values,
                    has_mask=has_mask)


def _is_tensor(v):
    try:
        import torch
    except ImportError:
        return False
    return isinstance(v, torch.Tensor)
