"""Parts of the PyTorch API that need no GPU: what a BlockMask becomes for the op, the refusal
of CPU tensors (enable() falls back to torch on it), mod resolution and the shipped mods."""

from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch", reason="needs torch")

import fa4jit  # noqa: E402
from fa4jit import api  # noqa: E402
from fa4jit._mods import ModSourceMask, prepare  # noqa: E402


def _mask(B=1, H=2, nq=3, nk=4, full=True, seq=(300, 400), bs=(128, 128), dtype=torch.int32):
    z = lambda *s: torch.zeros(*s, dtype=dtype)  # noqa: E731
    return SimpleNamespace(
        seq_lengths=seq, BLOCK_SIZE=bs, mask_mod=None,
        kv_num_blocks=z(B, H, nq), kv_indices=z(B, H, nq, nk),
        q_num_blocks=z(B, H, nk), q_indices=z(B, H, nk, nq),
        full_kv_num_blocks=z(B, H, nq) if full else None,
        full_kv_indices=z(B, H, nq, nk) if full else None,
        full_q_num_blocks=z(B, H, nk) if full else None,
        full_q_indices=z(B, H, nk, nq) if full else None)


def test_block_mask_becomes_tensors_and_metadata():
    ts, meta = api._block_mask_args(_mask(dtype=torch.int64), 300, 400)
    assert meta == [1, 1, 2, 128, 128, 3, 4, 1]
    assert len(ts) == 8 and all(t.dtype == torch.int32 for t in ts)
    ts, meta = api._block_mask_args(_mask(full=False, bs=(64, 128)), 300, 400)
    assert meta == [1, 1, 2, 64, 128, 3, 4, 0] and len(ts) == 4
    assert api._block_mask_args(None, 1, 1) == ([], [0])


def test_block_mask_for_other_lengths_is_refused():
    with pytest.raises(ValueError, match="sequence lengths"):
        api._block_mask_args(_mask(), 256, 400)


def test_block_mask_without_transposed_lists_is_refused():
    m = _mask()
    m.q_num_blocks = None
    with pytest.raises(fa4jit.InvalidArgumentError, match="q_num_blocks"):
        api._block_mask_args(m, 300, 400)


def test_cpu_tensors_are_unsupported():
    q = torch.zeros(1, 2, 8, 64, dtype=torch.bfloat16)
    with pytest.raises(fa4jit.UnsupportedError, match="CUDA"):
        fa4jit.flex_attention(q, q, q)


def test_kernel_options_are_validated_and_torch_keys_ignored():
    assert api._options({"BLOCK_M": 64, "num_warps": 4}) == {}
    assert api._options({"path": "sm80", "deterministic": True}) == {
        "path": "sm80", "deterministic": "1"}
    with pytest.raises(ValueError):
        api._options({"path": "sm70"})


def test_softmax_scale_as_the_library_takes_it():
    # None: PyTorch's 1/sqrt(D); a literal 0 (PyTorch: uniform weights) must not reach the library,
    # which reads 0 as the default, so it goes as the smallest normal float; others unchanged
    assert api._kernel_scale(None, 64) == 0.125
    assert api._kernel_scale(0.0, 64) == api._FLT_MIN > 0.0
    assert api._kernel_scale(-0.0, 128) == api._FLT_MIN
    assert api._kernel_scale(torch.tensor(0.0), 128) == api._FLT_MIN
    assert api._kernel_scale(-0.3, 128) == -0.3 and api._kernel_scale(2, 128) == 2.0
    # float32(FLT_MIN) is that normal number, not a subnormal and not 0
    assert torch.tensor(api._FLT_MIN, dtype=torch.float32).item() == torch.finfo(torch.float32).tiny


def test_mod_forms(lib):
    src = ("float score_mod(float score, int b, int h, int q_idx, int kv_idx, float cap) "
           "{ return cap * tanhf(score / cap); }")
    p = prepare(src, aux={"cap": 3.0})
    assert p.source == src and [(a.name, a.value) for a in p.aux] == [("cap", 3.0)]
    if "causal" in fa4jit.shipped_mods():
        p = prepare(None, "causal")
        assert "mask_mod" in p.source and p.has_mask
        # a BlockMask built from mod source carries its source and aux to flex_attention
        p = prepare(None, ModSourceMask(src, {"cap": 2.0}))
        assert p.source == src and p.aux[0].value == 2.0
    with pytest.raises(ValueError, match="shipped"):
        prepare("not_a_mod_name")
    with pytest.raises(TypeError):
        prepare(42)


def test_python_mod_with_aux_dict_clash():
    t = torch.ones(2)

    def f(score, b, h, q_idx, kv_idx):
        return score + t[h]
    with pytest.raises(ValueError, match="given twice"):
        prepare(f, aux={"t": 1.0})
    p = prepare(f)
    tensors, scalars, spec = api._aux_lists(p)
    assert spec == "t:t:0" and scalars == [] and tensors[0] is t


def test_varlen_refuses_cpu_and_wrong_shapes():
    q = torch.zeros(10, 2, 64, dtype=torch.bfloat16)
    cu = torch.tensor([0, 10], dtype=torch.int32)
    with pytest.raises(fa4jit.UnsupportedError, match="CUDA"):
        fa4jit.varlen_attention(q, q, q, cu, cu, 10, 10)
    with pytest.raises(ValueError, match="packed"):
        fa4jit.varlen_attention(q[None], q, q, cu, cu, 10, 10)
