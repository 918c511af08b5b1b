"""The benchmark's cases and their FLOP counts (pure Python: no torch needed).

FLOPs follow ../shared/DESIGN.md: forward = 4 * B * Hq * (allowed query-key pairs) * D, with the
allowed pairs S_q * S_kv for dense attention, S_q * S_kv / 2 for plain causal attention (the usual
convention), and the exact count of pairs the mask allows for mask mods (masked work is not
counted); forward + backward = 3.5 x forward. Exact counts come from per-row closed forms below;
on the GPU run they are cross-checked against a dense evaluation of the mod's PyTorch twin.
"""

import random
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

TOKENS = 32768          # B * S, fixed across the sequence-length sweep
HEADS = 16
SEQ_SWEEP = (1024, 2048, 4096, 8192, 16384)
BASE_S = 4096
WINDOW = 1024
REL_MAX_DIST = 64
T5_BUCKETS = 32
T5_MAX_DISTANCE = 128
SOFTCAP = 30.0
VARLEN_SEED = 7

PEERS = ("cudnn", "fa2", "flex")
LABELS = {
    "fa4jit-sm90": "fa4jit (sm90 path)",
    "fa4jit-sm80": "fa4jit (sm80 path)",
    "cudnn": "cuDNN (torch SDPA)",
    "fa2": "FlashAttention-2 (torch SDPA)",
    "flex": "FlexAttention (torch.compile)",
}


@dataclass
class Case:
    group: str                    # plot / table group
    label: str                    # short label within the group (x axis)
    B: int
    Hq: int
    Hkv: int
    S: int
    D: int
    causal: bool = False          # plain causal: SDPA is_causal, fa4jit/Flex causal block mask
    score_mod: Optional[str] = None   # shipped mod name (fa4jit) / twin (Flex)
    mask_mod: Optional[str] = None
    trainable: Tuple[str, ...] = ()   # aux tensors that get a gradient
    varlen: Optional[List[int]] = None  # sequence lengths of a packed batch (B == 1)
    peers: Tuple[str, ...] = PEERS    # peers that can express this case
    flex: bool = True                 # run Flex here (its compile costs seconds per shape)
    bwd: bool = True
    notes: str = ""
    id: str = ""
    pairs: int = 0                    # allowed (q, kv) pairs per (b, h), summed over b / B
    flops_fwd: float = 0.0
    flops_fwdbwd: float = 0.0
    extra: Dict = field(default_factory=dict)

    def shape_text(self):
        if self.varlen:
            return (f"varlen {len(self.varlen)} seqs, {sum(self.varlen)} tokens, H={self.Hq}, "
                    f"D={self.D}")
        h = f"Hq={self.Hq}" + (f" Hkv={self.Hkv}" if self.Hkv != self.Hq else "")
        return f"B={self.B} {h} S={self.S} D={self.D}"


def doc_lengths(S, seed=11, lo=256, hi=2048):
    """Document lengths packed into one sequence of S tokens (deterministic)."""
    rng = random.Random(seed)
    out, left = [], S
    while left > 0:
        n = min(left, rng.randint(lo, hi))
        out.append(n)
        left -= n
    return out


def prefix_lengths(B, S, seed=13):
    rng = random.Random(seed)
    return [rng.randint(S // 8, S // 2) for _ in range(B)]


def varlen_lengths(total=TOKENS, seed=VARLEN_SEED, lo=256, hi=8192):
    """A variable-length batch: lengths (multiples of 64) summing to `total` tokens."""
    rng = random.Random(seed)
    out, left = [], total
    while left > 0:
        n = min(left, rng.randint(lo // 64, hi // 64) * 64)
        out.append(n)
        left -= n
    return out


# ------------------------------------------------------------------------------ allowed pairs
def allowed_pairs(case: Case) -> int:
    """Allowed (q, kv) pairs summed over the batch (per head); see the module doc."""
    S, B = case.S, case.B
    if case.varlen:
        return sum(n * n for n in case.varlen)
    m = case.mask_mod
    if m is None:
        return B * (S * S // 2 if case.causal else S * S)
    if m == "causal":
        return B * S * (S + 1) // 2
    if m == "causal_sliding_window":
        w = case.extra["window"]
        return B * sum(min(q + 1, w) for q in range(S))
    if m == "sliding_window":
        w = case.extra["window"]
        return B * sum(min(S - 1, q + w) - max(0, q - w) + 1 for q in range(S))
    if m == "document":
        return B * sum(n * (n + 1) // 2 for n in case.extra["doc_lengths"])
    if m == "prefix_lm":
        return sum(sum(min(S, max(p, q + 1)) for q in range(S)) for p in case.extra["prefix_len"])
    raise KeyError(f"no closed-form pair count for mask '{m}'")


def finish(case: Case) -> Case:
    case.pairs = allowed_pairs(case)
    case.flops_fwd = 4.0 * case.Hq * case.D * case.pairs
    case.flops_fwdbwd = 3.5 * case.flops_fwd
    name = case.group + ":" + case.label
    case.id = name.replace(" ", "_")
    return case


# ------------------------------------------------------------------------------------ the list
def build_cases(quick: bool, optional: bool = False) -> List[Case]:
    """Cases in priority order (a run out of time drops the tail); optional: also the cases that run
    only when asked for by id (run.py --cases)."""
    cs: List[Case] = []
    B0 = TOKENS // BASE_S

    def add(c):
        cs.append(finish(c))

    # headline: plain and causal at S=4096, D=128
    # (det: also the deterministic backward, issue 9's cost of determinism; the optional T5 row
    # too, whose table gradient the deterministic mode sums in fixed point)
    head = [Case("plain_seqlen", f"S={BASE_S}", B0, HEADS, HEADS, BASE_S, 128,
                 extra={"det": True}),
            Case("causal_seqlen", f"S={BASE_S}", B0, HEADS, HEADS, BASE_S, 128, causal=True,
                 extra={"det": True})]
    # mods (Flex is the only peer that expresses them); plain/causal rows are in their groups
    mod_peers = ("flex",)
    mods = [
        Case("mods", "ALiBi", B0, HEADS, HEADS, BASE_S, 128, score_mod="alibi", peers=mod_peers),
        Case("mods", "head scale", B0, HEADS, HEADS, BASE_S, 128, score_mod="head_scale",
             peers=mod_peers, notes="score * expf(log_temp[h]), fp16 table, not trainable here"),
        Case("mods", "softcap tanh", B0, HEADS, HEADS, BASE_S, 128, score_mod="softcap",
             peers=mod_peers, extra={"cap": SOFTCAP}),
        Case("mods", "softcap fast-math", B0, HEADS, HEADS, BASE_S, 128, score_mod="softcap",
             peers=mod_peers, bwd=False, extra={"cap": SOFTCAP, "fast_math": True},
             notes="fa4jit compiled with FA4_COMPILE_FAST_MATH (tanh.approx), forward only, "
                   "checked against Flex's exact tanh"),
        Case("mods", f"sliding window {WINDOW}", B0, HEADS, HEADS, BASE_S, 128,
             mask_mod="causal_sliding_window", peers=mod_peers, extra={"window": WINDOW},
             notes="causal window of 1024 keys"),
        Case("mods", "document", B0, HEADS, HEADS, BASE_S, 128, mask_mod="document",
             peers=mod_peers, extra={"doc_lengths": doc_lengths(BASE_S)},
             notes="causal within documents of 256-2048 tokens"),
        Case("mods", "prefix-LM", B0, HEADS, HEADS, BASE_S, 128, mask_mod="prefix_lm",
             peers=mod_peers, extra={"prefix_len": prefix_lengths(B0, BASE_S)},
             notes="prefix length per batch in [S/8, S/2]"),
        Case("mods", "rel. bias (trainable)", B0, HEADS, HEADS, BASE_S, 128,
             score_mod="rel_bias", trainable=("bias",), peers=mod_peers,
             extra={"max_dist": REL_MAX_DIST},
             notes=f"table H x {2 * REL_MAX_DIST + 1}, fp32, gradient in the backward"),
    ]
    # optional: only where --cases names them (the full run's time plan has no room left)
    opt = [Case("mods", "T5 bias (trainable)", B0, HEADS, HEADS, BASE_S, 128,
                score_mod="t5_bias", trainable=("bias",), peers=mod_peers,
                extra={"num_buckets": T5_BUCKETS, "max_distance": T5_MAX_DISTANCE, "det": True},
                notes=f"T5's log-spaced buckets of kv - q ({T5_BUCKETS}, max distance "
                      f"{T5_MAX_DISTANCE}), table H x {T5_BUCKETS}, fp32, gradient in the "
                      "backward"),
           Case("mods", "T5 bias (fixed)", B0, HEADS, HEADS, BASE_S, 128,
                score_mod="t5_bias", peers=mod_peers,
                extra={"num_buckets": T5_BUCKETS, "max_distance": T5_MAX_DISTANCE},
                notes="the trainable T5 case's table without its gradient: what the backward's "
                      "trainability costs"),
           Case("mods", "rel. bias (fixed)", B0, HEADS, HEADS, BASE_S, 128,
                score_mod="rel_bias", peers=mod_peers, extra={"max_dist": REL_MAX_DIST},
                notes=f"the trainable case's table H x {2 * REL_MAX_DIST + 1} without its "
                      "gradient: what the backward's trainability costs"),
           Case("mods", "rel. bias D=256", B0, HEADS, HEADS, BASE_S, 256, score_mod="rel_bias",
                peers=mod_peers, extra={"max_dist": REL_MAX_DIST},
                notes=f"table H x {2 * REL_MAX_DIST + 1}, fp32, fixed; head dim 256, where the "
                      "sm90 forward's register budget is tightest")] if optional else []
    # quick mode: Flex (a compile per shape, seconds each) only where it is the only peer or at
    # the headline shapes; the SDPA backends cover the rest
    flex_all = not quick
    gqa = [Case("gqa", "GQA 32:4", B0, 32, 4, BASE_S, 128, causal=True, flex=flex_all),
           Case("gqa", "GQA 8:1", B0, 8, 1, BASE_S, 128, causal=True, flex=flex_all)]
    hdim = [Case("headdim", f"D={d}", B0, HEADS, HEADS, BASE_S, d, flex=flex_all)
            for d in (64, 256)]
    lens = varlen_lengths()
    varlen = [Case("varlen", "varlen", 1, HEADS, HEADS, sum(lens), 128, varlen=lens,
                   peers=("fa2", "flex"),
                   notes="packed; cuDNN not reachable through SDPA here; Flex via a "
                         "block-diagonal mask over the packed tokens")]
    sweep = []
    # the ends of the sweep first (1k, 16k), then the points between (2k, 8k)
    ends = (min(SEQ_SWEEP), max(SEQ_SWEEP))
    for pair in (ends, tuple(S for S in SEQ_SWEEP if S not in ends)):
        for causal in (False, True):
            for S in pair:
                if S == BASE_S or (quick and S not in ends):
                    continue
                sweep.append(Case("causal_seqlen" if causal else "plain_seqlen", f"S={S}",
                                  TOKENS // S, HEADS, HEADS, S, 128, causal=causal,
                                  flex=flex_all))
    extra = [] if quick else [
        Case("mods", "softcap + causal", B0, HEADS, HEADS, BASE_S, 128, score_mod="softcap",
             mask_mod="causal", peers=mod_peers, extra={"cap": SOFTCAP}),
        Case("mods", f"bidir. window {WINDOW}", B0, HEADS, HEADS, BASE_S, 128,
             mask_mod="sliding_window", peers=mod_peers, extra={"window": WINDOW}),
    ]
    if quick:  # cheap (no Flex) first, so a short budget still covers every group
        order = head + gqa + hdim + sweep + mods + varlen
    else:
        order = head + mods + gqa + hdim + varlen + sweep + extra
    order += opt
    for c in order:
        add(c)
    for c in cs:
        c.extra.setdefault("quick", quick)
    return cs


# Mods whose cold compile is measured (JIT figures); None = plain attention.
JIT_MODS_QUICK = (None, "alibi", "softcap", "document", "rel_bias")
# Full: the mods the run also times (so Flex's first call for the same mod stands beside them),
# in priority order (the probe stops at its time budget); the other shipped mods compile as these.
JIT_MODS_FULL = (None, "causal", "alibi", "rel_bias", "softcap", "document",
                 "causal_sliding_window", "prefix_lm", "softcap_causal", "sliding_window")
MASK_MODS = {"causal", "causal_sliding_window", "sliding_window", "document", "prefix_lm",
             "dilated_window", "block_diagonal", "longformer", "attention_sink"}
