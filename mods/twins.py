"""PyTorch twins of the shipped mods (mods/*.mod), in torch FlexAttention style.

Each shipped mod has a twin here that computes the same thing with torch ops, so the GPU and Python
tests can compare fa4jit against torch (FlexAttention, or a dense fp64 reference) on the same
inputs. A twin is built from the mod's aux values, because FlexAttention mods capture their extra
tensors by closure:

    aux = example_aux("alibi", B, H, S, device="cuda")    # {"slopes": tensor[H]}
    score_mod, mask_mod = build("alibi", aux)              # FlexAttention-style callables / None
    out = flex_attention(q, k, v, score_mod=score_mod, block_mask=create_block_mask(mask_mod, ...))

`TWINS[name]` holds the factories (`score_mod(aux)`, `mask_mod(aux)`, either may be None), the aux
names in the mod's declaration order (the order fa4jit's aux list uses), and the aux tensors that
are meant to be trainable. `example_aux` returns a dict in that same order: tensors for `const T *`
parameters (float32, float16, int32, bool as declared) and Python numbers for scalars.

The twins follow the mods' semantics: ints are int32 (indices and distances), floats float32, and
`(int)x` truncates toward zero. Aux reads in the kernel clamp out-of-range indices; the example
aux tensors are sized so that no read is out of range, and the twins index them directly.

torch is imported lazily: the file can be read (names, structure) without torch installed.
"""

import math
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable, Dict, Optional, Tuple

try:  # the structure of this file is usable without torch
    import torch
except ImportError:  # pragma: no cover - torch is present wherever twins run
    torch = None


@dataclass(frozen=True)
class Twin:
    """The torch counterpart of one shipped mod."""

    score_mod: Optional[Callable]  # aux -> score_mod(score, b, h, q_idx, kv_idx), or None
    mask_mod: Optional[Callable]  # aux -> mask_mod(b, h, q_idx, kv_idx), or None
    aux: Tuple[str, ...] = ()  # aux parameter names, in the mod's declaration order
    trainable: Tuple[str, ...] = field(default=())  # aux tensors meant to be trainable


# ----------------------------------------------------------------------------------- masks
def _causal(aux):
    def mask_mod(b, h, q_idx, kv_idx):
        return q_idx >= kv_idx

    return mask_mod


def _sliding_window(aux):
    window = aux["window"]

    def mask_mod(b, h, q_idx, kv_idx):
        return (q_idx - kv_idx).abs() <= window

    return mask_mod


def _causal_sliding_window(aux):
    window = aux["window"]

    def mask_mod(b, h, q_idx, kv_idx):
        return (q_idx >= kv_idx) & (q_idx - kv_idx < window)

    return mask_mod


def _prefix_lm(aux):
    prefix_len = aux["prefix_len"]

    def mask_mod(b, h, q_idx, kv_idx):
        return (kv_idx < prefix_len[b]) | (q_idx >= kv_idx)

    return mask_mod


def _document(aux):
    doc_id = aux["doc_id"]

    def mask_mod(b, h, q_idx, kv_idx):
        return (doc_id[q_idx] == doc_id[kv_idx]) & (q_idx >= kv_idx)

    return mask_mod


def _dilated_window(aux):
    window, dilation = aux["window"], aux["dilation"]

    def mask_mod(b, h, q_idx, kv_idx):
        dist = q_idx - kv_idx
        # for dist >= 0, torch's floor division and remainder agree with C's truncating ones
        return (dist >= 0) & (dist % dilation == 0) & (dist // dilation < window)

    return mask_mod


def _block_diagonal(aux):
    block = aux["block"]

    def mask_mod(b, h, q_idx, kv_idx):
        return q_idx // block == kv_idx // block

    return mask_mod


def _longformer(aux):
    is_global, window = aux["is_global"], aux["window"]

    def mask_mod(b, h, q_idx, kv_idx):
        return is_global[q_idx] | is_global[kv_idx] | ((q_idx - kv_idx).abs() <= window)

    return mask_mod


def _attention_sink(aux):
    num_sink, window = aux["num_sink"], aux["window"]

    def mask_mod(b, h, q_idx, kv_idx):
        return (q_idx >= kv_idx) & ((kv_idx < num_sink) | (q_idx - kv_idx < window))

    return mask_mod


# ----------------------------------------------------------------------------------- scores
def _alibi(aux):
    slopes = aux["slopes"]

    def score_mod(score, b, h, q_idx, kv_idx):
        return score + slopes[h] * (kv_idx - q_idx).to(torch.float32)

    return score_mod


def _softcap(aux):
    cap = float(aux["cap"])

    def score_mod(score, b, h, q_idx, kv_idx):
        return cap * torch.tanh(score / cap)

    return score_mod


def _rel_bias(aux):
    bias, max_dist = aux["bias"], int(aux["max_dist"])
    span = 2 * max_dist + 1

    def score_mod(score, b, h, q_idx, kv_idx):
        rel = torch.clamp(kv_idx - q_idx, -max_dist, max_dist)
        return score + bias[h * span + rel + max_dist]

    return score_mod


def _t5_den(num_buckets, max_distance):
    """The float32 log of max_distance / max_exact, as a Python number (a float32 value, so the
    bucket's division rounds as the mod's does). Made outside score_mod: a tensor made inside it
    is a constant that FlexAttention's compile rejects (lift_fresh_copy, PyTorch 2.11)."""
    max_exact = (num_buckets // 2) // 2
    return float(torch.log(torch.tensor(float(max_distance), dtype=torch.float32) /
                           torch.tensor(float(max_exact), dtype=torch.float32)))


def _t5_bucket(rel, num_buckets, max_distance, den):
    """T5's bidirectional bucket of kv_idx - q_idx, as mods/t5_bias.mod computes it (den:
    _t5_den(num_buckets, max_distance))."""
    half = num_buckets // 2
    max_exact = half // 2
    bucket = torch.where(rel > 0, half, 0)
    n = rel.abs()
    # float32 throughout, as in the mod (logf of float32 quotients)
    num = torch.log(n.to(torch.float32) / float(max_exact))
    scaled = num / den
    large = max_exact + torch.nan_to_num(scaled * float(half - max_exact), neginf=0.0).to(torch.int32)
    return bucket + torch.where(n < max_exact, n, torch.clamp(large, max=half - 1))


def _t5_bias(aux):
    bias, num_buckets, max_distance = aux["bias"], int(aux["num_buckets"]), int(aux["max_distance"])

    den = _t5_den(num_buckets, max_distance)

    def score_mod(score, b, h, q_idx, kv_idx):
        return score + bias[h * num_buckets + _t5_bucket(kv_idx - q_idx, num_buckets, max_distance, den)]

    return score_mod


def _head_scale(aux):
    log_temp = aux["log_temp"]

    def score_mod(score, b, h, q_idx, kv_idx):
        return score * torch.exp(log_temp[h].to(torch.float32))

    return score_mod


TWINS: Dict[str, Twin] = {
    "causal": Twin(None, _causal),
    "sliding_window": Twin(None, _sliding_window, ("window",)),
    "causal_sliding_window": Twin(None, _causal_sliding_window, ("window",)),
    "prefix_lm": Twin(None, _prefix_lm, ("prefix_len",)),
    "document": Twin(None, _document, ("doc_id",)),
    "alibi": Twin(_alibi, None, ("slopes",), ("slopes",)),
    "softcap": Twin(_softcap, None, ("cap",)),
    "softcap_causal": Twin(_softcap, _causal, ("cap",)),
    "rel_bias": Twin(_rel_bias, None, ("bias", "max_dist"), ("bias",)),
    "t5_bias": Twin(_t5_bias, None, ("bias", "num_buckets", "max_distance"), ("bias",)),
    "dilated_window": Twin(None, _dilated_window, ("window", "dilation")),
    "block_diagonal": Twin(None, _block_diagonal, ("block",)),
    "longformer": Twin(None, _longformer, ("is_global", "window")),
    "attention_sink": Twin(None, _attention_sink, ("num_sink", "window")),
    "head_scale": Twin(_head_scale, None, ("log_temp",), ("log_temp",)),
}


def build(name: str, aux: Dict) -> Tuple[Optional[Callable], Optional[Callable]]:
    """(score_mod, mask_mod) of mod `name` bound to its aux values; either may be None."""
    twin = TWINS[name]
    return (twin.score_mod(aux) if twin.score_mod else None,
            twin.mask_mod(aux) if twin.mask_mod else None)


def example_aux(name: str, B: int, H: int, S: int, device="cpu", seed: int = 0) -> "OrderedDict":
    """Aux values of mod `name` for batch B, H query heads and sequence length S, in declaration
    order: tensors on `device` for tensor parameters, Python numbers for scalars. Deterministic
    for a given seed; every index the mod reads stays in range for q_idx, kv_idx < S."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    win = max(1, S // 8)
    if name in ("causal",):
        vals = {}
    elif name in ("sliding_window", "causal_sliding_window"):
        vals = {"window": win}
    elif name == "prefix_lm":
        vals = {"prefix_len": torch.randint(0, S + 1, (B,), generator=g, dtype=torch.int32)}
    elif name == "document":
        # 1 to 4 documents packed in each sequence: ids grow at sorted random boundaries
        cuts = torch.sort(torch.randint(1, max(2, S), (3,), generator=g)).values
        ids = torch.zeros(S, dtype=torch.int32)
        for c in cuts.tolist():
            ids[c:] += 1
        vals = {"doc_id": ids}
    elif name == "alibi":
        vals = {"slopes": torch.tensor([2.0 ** (-8.0 * (h + 1) / H) for h in range(H)],
                                       dtype=torch.float32)}
    elif name in ("softcap", "softcap_causal"):
        vals = {"cap": 30.0}
    elif name == "rel_bias":
        max_dist = 64
        vals = {"bias": 0.1 * torch.randn(H * (2 * max_dist + 1), generator=g), "max_dist": max_dist}
    elif name == "t5_bias":
        vals = {"bias": 0.1 * torch.randn(H * 32, generator=g), "num_buckets": 32,
                "max_distance": 128}
    elif name == "dilated_window":
        vals = {"window": max(1, S // 16), "dilation": 2}
    elif name == "block_diagonal":
        vals = {"block": 64}
    elif name == "longformer":
        is_global = torch.zeros(S, dtype=torch.bool)
        is_global[: min(4, S)] = True
        vals = {"is_global": is_global, "window": max(1, S // 16)}
    elif name == "attention_sink":
        vals = {"num_sink": 4, "window": win}
    elif name == "head_scale":
        vals = {"log_temp": (0.1 * torch.randn(H, generator=g)).to(torch.float16)}
    else:
        raise KeyError(f"no twin for mod '{name}'")
    out = OrderedDict()
    for key in TWINS[name].aux:
        v = vals[key]
        out[key] = v.to(device) if isinstance(v, torch.Tensor) else v
    return out


def names():
    """Names of the shipped mods that have twins (all of them)."""
    return sorted(TWINS)


__all__ = ["Twin", "TWINS", "build", "example_aux", "names"]


if __name__ == "__main__":  # a quick self-check: every twin evaluates on a small grid
    for mod in names():
        a = example_aux(mod, 2, 4, 128)
        s, m = build(mod, a)
        b = torch.tensor(1, dtype=torch.int32)
        h = torch.tensor(3, dtype=torch.int32)
        q = torch.arange(128, dtype=torch.int32)[:, None]
        kv = torch.arange(128, dtype=torch.int32)[None, :]
        score = torch.randn(128, 128)
        if s:
            assert s(score, b, h, q, kv).shape == (128, 128), mod
        if m:
            assert m(b, h, q, kv).shape == (128, 128), mod
    print("twins ok:", ", ".join(names()))
