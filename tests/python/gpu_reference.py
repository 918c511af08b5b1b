"""References for the GPU tests: float64 eager attention with FlexAttention's semantics, and the
comparison rule.

The float64 reference evaluates score_mod and mask_mod on broadcast index tensors
(b [B,1,1,1], h [1,H,1,1], q_idx [1,1,Sq,1], kv_idx [1,1,1,Skv]), as PyTorch mods written for
vmap also work under broadcasting; rows with no allowed key give O = 0 and LSE = -inf.
A result passes when its error against the float64 reference is at most twice the error of
torch's own flex_attention on the same low-precision inputs, plus a floor of a few units in the
last place of the dtype (FlashAttention's test rule with an absolute floor).
"""

import math

import torch


def reference_attention(q, k, v, score_mod=None, mask_mod=None, scale=None):
    """(out, lse) in float64, differentiable w.r.t. q, k, v and any tensor the mods capture."""
    B, Hq, Sq, D = q.shape
    Hkv, Skv = k.shape[1], k.shape[2]
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    q64, k64, v64 = q.double(), k.double(), v.double()
    if Hkv != Hq:
        k64 = k64.repeat_interleave(Hq // Hkv, dim=1)
        v64 = v64.repeat_interleave(Hq // Hkv, dim=1)
    s = (q64 @ k64.transpose(-1, -2)) * scale
    dev = q.device
    b = torch.arange(B, device=dev).view(B, 1, 1, 1)
    h = torch.arange(Hq, device=dev).view(1, Hq, 1, 1)
    qi = torch.arange(Sq, device=dev).view(1, 1, Sq, 1)
    ki = torch.arange(Skv, device=dev).view(1, 1, 1, Skv)
    if score_mod is not None:
        s = score_mod(s, b, h, qi, ki).to(torch.float64).expand(B, Hq, Sq, Skv)
    if mask_mod is not None:
        allowed = mask_mod(b, h, qi, ki).expand(B, Hq, Sq, Skv)
        s = s.masked_fill(~allowed, float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - lse.unsqueeze(-1))
    p = torch.where(torch.isfinite(lse).unsqueeze(-1), p, torch.zeros_like(p))
    return p @ v64, lse


def max_err(a, b):
    a, b = a.double(), b.double()
    both_inf = torch.isinf(a) & torch.isinf(b) & (torch.sign(a) == torch.sign(b))
    d = torch.where(both_inf, torch.zeros_like(a), (a - b).abs())
    return float(d.max()) if d.numel() else 0.0


def assert_close(name, got, ref, baseline, dtype):
    """got and baseline (torch's result) against the float64 ref."""
    eps = torch.finfo(dtype).eps
    finite = ref[torch.isfinite(ref)]
    scale = max(1.0, float(finite.abs().max())) if finite.numel() else 1.0
    err = max_err(got, ref)
    base = max_err(baseline, ref) if baseline is not None else 0.0  # torch gave no gradient
    limit = 2 * base + 4 * eps * scale
    assert err <= limit, f"{name}: error {err:.3g} > {limit:.3g} (torch's error {base:.3g})"
