"""Route torch.nn.attention.flex_attention.flex_attention to fa4jit, unchanged code otherwise.

    import fa4jit
    fa4jit.enable()            # or:  with fa4jit.enable(): ...

replaces torch's flex_attention in torch.nn.attention.flex_attention and in every already
imported module that bound it by name (`from torch.nn.attention.flex_attention import
flex_attention`). A call fa4jit cannot serve (CPU tensors, fp32, a mod it cannot translate, a
configuration the library does not support, a torch feature it lacks such as return_aux with
max_scores) runs torch's own kernel instead, with a warning naming the reason, once per reason.
disable() (or leaving the with-block) puts torch's function back everywhere it was replaced.
"""

import sys
import threading
import warnings

from . import api
from .errors import Fa4Error

_lock = threading.Lock()
_depth = 0
_original = None
_patched_modules = []
_warned = set()

FLEX_MODULE = "torch.nn.attention.flex_attention"


def _warn_once(reason):
    key = reason.split("\n")[0][:200]
    if key in _warned:
        return
    _warned.add(key)
    warnings.warn(f"fa4jit: using torch's flex_attention for this call: {reason}",
                  RuntimeWarning, stacklevel=3)


@api._dynamo_disable
def _route(query, key, value, score_mod, block_mask, scale, enable_gqa, return_lse,
           kernel_options, return_aux, extra):
    """("fa4", call) when fa4jit serves the call, else ("torch", reason)."""
    if extra:
        return "torch", f"argument(s) {sorted(extra)} not known to fa4jit"
    try:
        api.check_return_aux(return_lse, return_aux)
    except ValueError as e:  # both given: torch raises its own error for that
        return "torch", str(e)
    except NotImplementedError as e:
        return "torch", str(e)
    if getattr(query, "is_nested", False):
        return "torch", "nested (jagged) tensors"
    try:
        call = api._prepare_call(query, key, value, score_mod, block_mask, scale, enable_gqa,
                                 kernel_options, None)
        # Compile now (or find the kernel), so that an unsupported configuration falls back
        # here instead of failing inside the op.
        _compile_for(query, key, value, call)
    except (Fa4Error, NotImplementedError) as e:
        return "torch", f"{type(e).__name__}: {e}"
    return "fa4", call


def _compile_for(query, key, value, call):
    import torch
    from ._wire import decode_options, trainable_names
    source, aux_spec, options, any_trainable = call[4], call[5], call[7], call[8]
    needs_grad = torch.is_grad_enabled() and (
        query.requires_grad or key.requires_grad or value.requires_grad or any_trainable)
    api._kernel_for(query.device, source or None, query.dtype, query.shape[-1], value.shape[-1],
                    trainable_names(aux_spec), decode_options(options), needs_grad,
                    gqa=query.shape[1] != key.shape[1])


def _routed(query, key, value, score_mod=None, block_mask=None, scale=None, enable_gqa=False,
            return_lse=False, kernel_options=None, *, return_aux=None, **extra):
    where, payload = _route(query, key, value, score_mod, block_mask, scale, enable_gqa,
                            return_lse, kernel_options, return_aux, extra)
    if where == "torch":
        _warn_once(payload)
        kwargs = dict(extra)
        if return_aux is not None:
            kwargs["return_aux"] = return_aux
        return _original(query, key, value, score_mod=score_mod, block_mask=block_mask,
                         scale=scale, enable_gqa=enable_gqa, return_lse=return_lse,
                         kernel_options=kernel_options, **kwargs)
    out, lse = api._launch(query, key, value, payload)
    return api.shape_result(out, lse, return_lse, return_aux)


_routed.__name__ = "flex_attention"
_routed.__qualname__ = "flex_attention"
_routed.__doc__ = ("fa4jit's route for torch's flex_attention (fa4jit.enable()); torch's kernel "
                   "serves what fa4jit cannot.")
_routed.fa4jit_routed = True


class _Enabled:
    """Returned by enable(); leaving a with-block on it calls disable()."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        disable()
        return False


def enable():
    """Route torch's flex_attention to fa4jit (nested calls are counted). Returns a context
    manager that undoes this enable() on exit."""
    global _depth, _original
    import importlib
    with _lock:
        if _depth == 0:
            mod = importlib.import_module(FLEX_MODULE)
            _original = mod.flex_attention
            _patched_modules.clear()
            for m in list(sys.modules.values()):
                try:
                    if getattr(m, "flex_attention", None) is _original:
                        setattr(m, "flex_attention", _routed)
                        _patched_modules.append(m)
                except Exception:  # modules with odd attribute access
                    continue
        _depth += 1
    return _Enabled()


def disable():
    """Undo one enable(); the last one restores torch's flex_attention everywhere."""
    global _depth, _original
    with _lock:
        if _depth == 0:
            return
        _depth -= 1
        if _depth == 0:
            for m in _patched_modules:
                if getattr(m, "flex_attention", None) is _routed:
                    setattr(m, "flex_attention", _original)
            _patched_modules.clear()
            _original = None


def is_enabled():
    return _depth > 0


def original_flex_attention():
    """torch's own flex_attention (also while enabled)."""
    if _original is not None:
        return _original
    import importlib
    return importlib.import_module(FLEX_MODULE).flex_attention
