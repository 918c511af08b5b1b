"""The torch.fx -> mod language translator on CPU: what it emits, that the library's checker
accepts it (fa4_spec_check), how captured tensors and numbers become aux parameters, and the
errors that name the operation and the user's line. Needs torch (any version with torch.fx)."""

import inspect
import math

import pytest

torch = pytest.importorskip("torch", reason="the translator needs torch (torch.fx)")

import fa4jit  # noqa: E402
from fa4jit.translate import AuxScalar, AuxTensor, translate  # noqa: E402


def _line_of(fn, text):
    """The file line number of the first line of fn's source containing text."""
    lines, start = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if text in line:
            return start + i
    raise AssertionError(f"{text!r} not in {fn.__name__}")


@pytest.fixture(scope="module")
def checker(lib):
    ctx = fa4jit.Context("none", fa4jit.CacheConfig(mode="off"))

    def check(t, **kw):
        ctx.check(t.source or None, arch="sm_90a", trainable=t.trainable, **kw)
        return t
    return check


# ----------------------------------------------------------------------------- user-style mods
H, S = 4, 64
slopes = torch.exp2(-torch.arange(1, H + 1, dtype=torch.float32))
bias_table = torch.randn(H, 2 * S - 1, requires_grad=True)
doc_id = torch.repeat_interleave(torch.arange(4, dtype=torch.int32), S // 4)
is_global = torch.zeros(S, dtype=torch.bool)
soft_cap = 20.0
window = 16
temperature = torch.tensor(0.5)


def alibi(score, b, h, q_idx, kv_idx):
    return score + slopes[h] * (kv_idx - q_idx)


def softcap(score, b, h, q_idx, kv_idx):
    return soft_cap * torch.tanh(score / soft_cap)


def rel_bias(score, b, h, q_idx, kv_idx):
    return score + bias_table[h, q_idx - kv_idx + S - 1]


def temp(score, b, h, q_idx, kv_idx):
    return score * temperature


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def sliding(b, h, q_idx, kv_idx):
    return (q_idx >= kv_idx) & (q_idx - kv_idx < window)


def document(b, h, q_idx, kv_idx):
    return (doc_id[q_idx] == doc_id[kv_idx]) | is_global[kv_idx]


def make_window_mask(w):
    def mask(b, h, q_idx, kv_idx):
        return (q_idx - kv_idx).abs() <= w
    return mask


def noop(b, h, q_idx, kv_idx):
    return b.new_ones(size=(), dtype=torch.bool, device=b.device)


def test_alibi_captures_a_tensor(checker):
    t = checker(translate(alibi))
    assert "const float *slopes" in t.source
    assert "slopes[h]" in t.source
    (a,) = t.aux
    assert isinstance(a, AuxTensor) and a.name == "slopes" and a.tensor is slopes
    assert not a.trainable and t.trainable == ()


def test_captured_number_becomes_a_scalar(checker):
    t = checker(translate(softcap))
    assert "float soft_cap" in t.source and "tanhf" in t.source
    (a,) = t.aux
    assert isinstance(a, AuxScalar) and (a.name, a.value, a.type) == ("soft_cap", 20.0, "float")


def test_requires_grad_tensor_is_trainable_and_flattened(checker):
    t = checker(translate(rel_bias))
    (a,) = t.tensors
    (s,) = t.scalars
    assert a.trainable and t.trainable == ("bias_table",)
    assert isinstance(s, AuxScalar) and (s.name, s.value, s.type) == ("S", S, "int")
    assert f"* {2 * S - 1}" in t.source  # row-major flat index of a 2-D table


def test_zero_dim_tensor_is_read_at_zero(checker):
    t = checker(translate(temp))
    assert "temperature[0]" in t.source


def test_score_and_mask_share_one_source(checker):
    t = checker(translate(alibi, sliding))
    assert t.source.count("float score_mod(") == 1 and t.source.count("bool mask_mod(") == 1
    assert [a.name for a in t.aux] == ["slopes", "window"]
    assert "int window" in t.mask_source


def test_int_and_bool_tensors(checker):
    t = checker(translate(None, document))
    assert "const int32 *doc_id" in t.source and "const bool *is_global" in t.source
    assert "||" in t.source


def test_closure_number_from_a_factory(checker):
    t = checker(translate(None, make_window_mask(8)))
    assert [(a.name, a.value) for a in t.aux] == [("w", 8)]
    assert "abs(" in t.source


def test_noop_mask_is_dropped_unless_kept(checker):
    t = translate(None, noop)
    assert t.mask_source is None and t.source == ""
    kept = checker(translate(None, noop, keep_trivial_mask=True))
    assert "return true;" in kept.source


def test_torch_own_mask_helpers(checker):
    fa = pytest.importorskip("torch.nn.attention.flex_attention",
                             reason="torch without flex_attention (and_masks, noop_mask)")
    t = checker(translate(None, fa.and_masks(causal, sliding)))
    assert "&&" in t.source
    assert translate(None, fa.noop_mask).mask_source is None


def test_python_semantics_helpers(checker):
    def f(score, b, h, q_idx, kv_idx):
        return score + ((q_idx - kv_idx) // 3) + ((q_idx - kv_idx) % 5) + q_idx / 2

    t = checker(translate(f))
    assert "py_floordiv(" in t.source and "py_remainder(" in t.source
    assert "(float)" in t.source  # int / int is true division


def test_many_torch_ops(checker):
    def f(score, b, h, q_idx, kv_idx):
        x = torch.where(q_idx >= kv_idx, score, -float("inf"))
        y = torch.clamp(score, -5.0, 5.0) + torch.sigmoid(score) + score.exp() * 0.0
        z = torch.minimum(q_idx, kv_idx).float() + torch.maximum(score, torch.zeros_like(score))
        w = (q_idx - kv_idx).abs().to(torch.float32) ** 2 + torch.sqrt(score.abs() + 1.0)
        return x + y + z + w + torch.log1p(score.abs()) + (~(q_idx > 3)).float()

    t = checker(translate(f))
    for piece in ("? score :", "(-1.0 / 0.0)", "fminf(", "fmaxf(", "expf(", "sqrtf(",
                  "log1pf(", "!"):
        assert piece in t.source, piece


def test_bound_method_of_a_module(checker):
    class Bias(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rel = torch.nn.Parameter(torch.zeros(H, 8))

        def score_mod(self, score, b, h, q_idx, kv_idx):
            return score + self.rel[h, (q_idx - kv_idx) % 8]

    m = Bias()
    t = checker(translate(m.score_mod))
    (a,) = t.aux
    assert a.name == "rel" and a.trainable and a.tensor is m.rel


def test_number_used_in_python_control_flow_becomes_a_constant(checker):
    limit = 4

    def f(score, b, h, q_idx, kv_idx):
        if limit > 0:
            return score * limit
        return score

    t = checker(translate(f))
    assert t.aux == [] and "4" in t.source


def test_same_tensor_in_both_mods_is_one_aux(checker):
    def s(score, b, h, q_idx, kv_idx):
        return score + doc_id[q_idx].float()

    def m(b, h, q_idx, kv_idx):
        return doc_id[q_idx] == doc_id[kv_idx]

    t = checker(translate(s, m))
    assert [a.name for a in t.aux] == ["doc_id"]


def test_name_clash_with_builtins_is_renamed(checker):
    exp = torch.ones(H)

    def f(score, b, h, q_idx, kv_idx):
        return score + exp[h]

    t = checker(translate(f))
    assert t.aux[0].name != "exp"


# ------------------------------------------------------------------------------------- errors
def test_unsupported_op_names_op_and_line():
    def f(score, b, h, q_idx, kv_idx):
        y = score * 2
        return torch.softmax(y, dim=0)

    with pytest.raises(fa4jit.TranslationError) as ei:
        translate(f)
    e = ei.value
    assert e.operation == "torch.softmax"
    assert e.line == _line_of(f, "torch.softmax") and e.filename == __file__
    assert "torch.softmax" in str(e) and "return torch.softmax" in str(e)


def test_control_flow_on_traced_value():
    def f(score, b, h, q_idx, kv_idx):
        if q_idx > kv_idx:
            return score
        return -score

    with pytest.raises(fa4jit.TranslationError) as ei:
        translate(f)
    assert ei.value.operation == "control flow"
    assert ei.value.line == _line_of(f, "if q_idx > kv_idx")


def test_math_module_on_traced_value():
    def f(score, b, h, q_idx, kv_idx):
        return math.exp(score)

    with pytest.raises(fa4jit.TranslationError) as ei:
        translate(f)
    assert ei.value.line == _line_of(f, "math.exp")


def test_folded_tensor_values_are_not_cached(checker):
    def f(score, b, h, q_idx, kv_idx):
        return score + slopes.sum()

    t = checker(translate(f))
    assert not t.reusable and t.aux == []
    assert repr(float(slopes.sum())) in t.source


def test_grad_tensor_computed_at_translation_is_refused():
    log_scale = torch.zeros((), requires_grad=True)

    def f(score, b, h, q_idx, kv_idx):
        return score * log_scale.exp()

    with pytest.raises(fa4jit.TranslationError) as ei:
        translate(f)
    assert "gradient" in str(ei.value) and ei.value.line == _line_of(f, "log_scale.exp()")


def test_reduction_and_slicing_and_half_casts():
    def red(score, b, h, q_idx, kv_idx):
        return score + score.mean()

    def sl(score, b, h, q_idx, kv_idx):
        return score + bias_table[h, :].sum()

    def half(score, b, h, q_idx, kv_idx):
        return score.to(torch.float16)

    for fn, needle in ((red, "score.mean()"), (sl, "bias_table[h, :]"), (half, "float16")):
        with pytest.raises(fa4jit.TranslationError) as ei:
            translate(fn)
        assert ei.value.line == _line_of(fn, needle), fn.__name__


def test_unindexed_tensor_is_refused():
    def f(score, b, h, q_idx, kv_idx):
        return score + bias_table[h]

    with pytest.raises(fa4jit.TranslationError) as ei:
        translate(f)
    assert "index every dimension" in str(ei.value)


def test_wrong_arity():
    with pytest.raises(fa4jit.TranslationError) as ei:
        translate(lambda score, b, h: score)
    assert "takes 3" in str(ei.value)
    with pytest.raises(fa4jit.TranslationError):
        translate(None, lambda b, h, q_idx, kv_idx, extra: True)


def test_translation_cache_follows_captured_values(lib):
    from fa4jit._mods import prepare
    cap = [10.0]

    def make(c):
        def f(score, b, h, q_idx, kv_idx):
            return score * c
        return f

    f1 = make(cap[0])
    p1 = prepare(f1)
    p2 = prepare(f1)
    assert p1.source == p2.source and p1.aux[0].value == 10.0
    f2 = make(3.0)
    p3 = prepare(f2)
    assert p3.source == p1.source and p3.aux[0].value == 3.0


def test_translation_cache_hits_for_bound_methods(lib, monkeypatch):
    from fa4jit import _mods

    class Mod(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(4))

        def score_mod(self, score, b, h, q_idx, kv_idx):
            return score * self.w[h]

    calls = []
    import fa4jit.translate as tr
    orig = tr.translate

    def counting(*a, **k):
        calls.append(1)
        return orig(*a, **k)
    monkeypatch.setattr(tr, "translate", counting)
    m1, m2 = Mod(), Mod()
    p1 = _mods.prepare(m1.score_mod)
    p2 = _mods.prepare(m1.score_mod)   # a new bound-method object, same function and module
    assert len(calls) == 1 and p1.aux[0].value is p2.aux[0].value is m1.w
    p3 = _mods.prepare(m2.score_mod)   # another module: its own parameter
    assert len(calls) == 2 and p3.aux[0].value is m2.w
