"""fa4jit's FlexAttention backend on a GPU: forward output, LSE and every gradient (q, k, v and
captured trainable tensors) against a float64 eager reference and torch's own flex_attention,
for user-style Python mods, mod source, shipped mods, GQA, block masks from torch and from
fa4jit, layouts; torch.compile of a small model; the enable() route. Skips without CUDA."""

import warnings

import pytest

torch = pytest.importorskip("torch", reason="needs torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)
fa = pytest.importorskip("torch.nn.attention.flex_attention",
                         reason="torch without FlexAttention (torch.nn.attention.flex_attention)")

import fa4jit  # noqa: E402
from gpu_reference import assert_close, reference_attention  # noqa: E402

DEV = "cuda"
DTYPE = torch.bfloat16


@pytest.fixture(autouse=True)
def _library(lib):
    yield


def _inputs(B=2, Hq=4, Hkv=4, Sq=256, Skv=256, D=64, Dv=None, dtype=DTYPE, seed=0, bshd=False):
    g = torch.Generator(device=DEV).manual_seed(seed)
    Dv = Dv or D

    def make(h, s, d):
        if bshd:  # [B, S, H, D] in memory, viewed as [B, H, S, D]
            t = torch.randn(B, s, h, d, device=DEV, dtype=dtype, generator=g).transpose(1, 2)
        else:
            t = torch.randn(B, h, s, d, device=DEV, dtype=dtype, generator=g)
        return t.requires_grad_()
    return make(Hq, Sq, D), make(Hkv, Skv, D), make(Hkv, Skv, Dv)


def _grads(out, inputs, dout):
    return torch.autograd.grad(out, inputs, dout, allow_unused=True)


def _torch_flex(q, k, v, inputs=None, dout=None, **kw):
    """torch's flex_attention (out, lse, grads) as the baseline, or Nones where torch itself
    fails: its eager path compiles internally and, after many shapes, can trip over its own
    dynamic-shape handling; fa4jit is then held to the float64 reference alone."""
    torch._dynamo.reset()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out, lse = fa.flex_attention(q, k, v, return_lse=True, **kw)
            grads = _grads(out, inputs, dout) if inputs is not None else None
        return out, lse, grads
    except Exception as e:  # noqa: BLE001 - any failure of the baseline, reported below
        warnings.warn(f"torch's flex_attention failed as a baseline: {type(e).__name__}: "
                      f"{str(e)[:200]}")
        return None, None, [None] * len(inputs or [])


def _check(name, q, k, v, score_mod=None, block_mask=None, mask_mod=None, trainable=(),
           fa4_score_mod=None, fa4_kwargs=None, enable_gqa=False):
    """Run fa4jit, torch's flex_attention and the float64 reference; compare out, LSE, grads."""
    fa4_kwargs = dict(fa4_kwargs or {})
    inputs = [q, k, v, *trainable]
    out, lse = fa4jit.flex_attention(q, k, v, score_mod=fa4_score_mod or score_mod,
                                     block_mask=block_mask, return_lse=True,
                                     enable_gqa=enable_gqa, **fa4_kwargs)
    assert out.shape == (q.shape[0], q.shape[1], q.shape[2], v.shape[3]) and out.dtype == q.dtype
    assert lse.dtype == torch.float32 and lse.shape == q.shape[:3]
    dout = torch.randn_like(out)
    got = _grads(out, inputs, dout)
    pt_out, pt_lse, pt = _torch_flex(q, k, v, inputs, dout, score_mod=score_mod,
                                     block_mask=block_mask, enable_gqa=enable_gqa)
    mask = mask_mod if mask_mod is not None else (
        block_mask.mask_mod if block_mask is not None else None)
    ref_out, ref_lse = reference_attention(q, k, v, score_mod, mask)
    ref = _grads(ref_out, inputs, dout.double())
    assert_close(f"{name} out", out, ref_out, pt_out, q.dtype)
    assert_close(f"{name} lse", lse, ref_lse, pt_lse, q.dtype)
    for label, g, p, r in zip(["dq", "dk", "dv"] + [f"d_aux{i}" for i in range(len(trainable))],
                              got, pt, ref):
        assert g is not None, f"{name}: no gradient for {label}"
        assert_close(f"{name} {label}", g, r, p, q.dtype)
    return out


# -------------------------------------------------------------------------- user-style mods
def test_plain():
    _check("plain", *_inputs())


@pytest.mark.parametrize("scale", [0.0, -0.1, 0.3])
def test_softmax_scale_zero_negative_large(scale):
    # PyTorch's scale is used as given: 0 means uniform weights (the C library reads 0 as its
    # default, api._kernel_scale maps it), a negative one flips the order of the scores (the sm90
    # forward without a score_mod gave NaN there before session 26); odd lengths for the masks
    q, k, v = _inputs(Sq=200, Skv=333, D=64)
    out, lse = fa4jit.flex_attention(q, k, v, scale=scale, return_lse=True)
    dout = torch.randn_like(out)
    got = _grads(out, [q, k, v], dout)
    ref_out, ref_lse = reference_attention(q, k, v, scale=scale)
    ref = _grads(ref_out, [q, k, v], dout.double())
    pt_out, pt_lse, pt = _torch_flex(q, k, v, [q, k, v], dout, scale=scale)
    assert_close(f"scale {scale} out", out, ref_out, pt_out, q.dtype)
    assert_close(f"scale {scale} lse", lse, ref_lse, pt_lse, q.dtype)
    for label, g, p, r in zip(["dq", "dk", "dv"], got, pt, ref):
        assert_close(f"scale {scale} {label}", g, r, p, q.dtype)


def test_odd_lengths_and_bshd_layout():
    _check("odd", *_inputs(Sq=200, Skv=333, bshd=True))


def test_alibi_closure_over_a_tensor():
    q, k, v = _inputs()
    slopes = torch.exp2(-8.0 * torch.arange(1, 5, device=DEV) / 4)

    def alibi(score, b, h, q_idx, kv_idx):
        return score + slopes[h] * (kv_idx - q_idx)
    _check("alibi", q, k, v, score_mod=alibi)


def test_softcap_closure_over_a_number():
    q, k, v = _inputs()
    cap = 5.0

    def softcap(score, b, h, q_idx, kv_idx):
        return cap * torch.tanh(score / cap)
    _check("softcap", q, k, v, score_mod=softcap)


def test_trainable_relative_bias_gets_its_gradient():
    q, k, v = _inputs(Sq=128, Skv=128)
    S = 128
    table = (0.5 * torch.randn(4, 2 * S - 1, device=DEV)).requires_grad_()

    def rel(score, b, h, q_idx, kv_idx):
        return score + table[h, q_idx - kv_idx + S - 1]
    _check("rel_bias", q, k, v, score_mod=rel, trainable=[table])


def test_gqa_with_torch_causal_block_mask():
    q, k, v = _inputs(Hq=8, Hkv=2, Sq=256, Skv=256)

    def causal(b, h, q_idx, kv_idx):
        return q_idx >= kv_idx
    bm = fa.create_block_mask(causal, None, None, 256, 256, device=DEV)
    _check("gqa causal", q, k, v, block_mask=bm, enable_gqa=True)


def test_gqa_backward_compiles_the_gqa_program_on_hopper():
    """A GQA call with a backward asks for FA4_COMPILE_GQA (the Hopper backward's program split by
    query head, bwd_main90m80s, D 128 without score_mod); the same shapes without groups do not."""
    q, k, v = _inputs(Hq=8, Hkv=2, Sq=300, Skv=300, D=128)
    _check("gqa d128", q, k, v, enable_gqa=True)
    kern = fa4jit.last_kernel()
    names = {p.name for p in kern.info.programs}
    if kern.info.path != "sm90":
        assert "bwd_main90m80s" not in names
        pytest.skip(f"the GQA program is the Hopper path's; this kernel is {kern.info.path}'s")
    assert "bwd_main90m80s" in names, names
    q, k, v = _inputs(Hq=2, Hkv=2, Sq=300, Skv=300, D=128)
    _check("mha d128", q, k, v)
    assert "bwd_main90m80s" not in {p.name for p in fa4jit.last_kernel().info.programs}


def test_document_mask_with_int_tensor_and_score_mod():
    q, k, v = _inputs(B=1, Sq=384, Skv=384)
    doc = torch.repeat_interleave(torch.arange(3, device=DEV, dtype=torch.int32), 128)
    doc = doc[torch.randperm(384, device=DEV)].sort().values

    def same_doc(b, h, q_idx, kv_idx):
        return (doc[q_idx] == doc[kv_idx]) & (q_idx >= kv_idx)

    def scaled(score, b, h, q_idx, kv_idx):
        return score * 0.5
    bm = fa.create_block_mask(same_doc, 1, None, 384, 384, device=DEV)
    _check("document", q, k, v, score_mod=scaled, block_mask=bm)


def test_fa4jit_block_mask_matches_torch_and_runs():
    window = 64

    def sliding(b, h, q_idx, kv_idx):
        return (q_idx >= kv_idx) & (q_idx - kv_idx <= window)
    ours = fa4jit.create_block_mask(sliding, 2, 4, 320, 320, device=DEV)
    theirs = fa.create_block_mask(sliding, 2, 4, 320, 320, device=DEV)
    assert isinstance(ours, fa.BlockMask)
    assert torch.equal(ours.to_dense(), theirs.to_dense())
    assert ours.mask_mod is sliding and ours.seq_lengths == (320, 320)
    q, k, v = _inputs(B=2, Hq=4, Sq=320, Skv=320)
    _check("fa4jit block mask", q, k, v, block_mask=ours)


def test_per_head_mask_from_a_captured_tensor():
    windows = torch.tensor([16, 64, 128, 1000], device=DEV, dtype=torch.int32)

    def per_head(b, h, q_idx, kv_idx):
        return (q_idx - kv_idx).abs() <= windows[h]
    ours = fa4jit.create_block_mask(per_head, 1, 4, 256, 256, device=DEV)
    theirs = fa.create_block_mask(per_head, 1, 4, 256, 256, device=DEV)
    assert torch.equal(ours.to_dense(), theirs.to_dense())
    _check("per-head window", *_inputs(B=1), block_mask=ours)


def test_mod_source_and_shipped_name_agree_with_python():
    q, k, v = _inputs()
    cap = 8.0

    def softcap(score, b, h, q_idx, kv_idx):
        return cap * torch.tanh(score / cap)
    py = fa4jit.flex_attention(q, k, v, score_mod=softcap)
    src = ("float score_mod(float score, int b, int h, int q_idx, int kv_idx, float cap) {\n"
           "    return cap * tanhf(score / cap);\n}\n")
    text = fa4jit.flex_attention(q, k, v, score_mod=src, aux={"cap": cap})
    assert torch.equal(py, text)
    if "softcap" in fa4jit.shipped_mods():
        named = fa4jit.flex_attention(q, k, v, score_mod="softcap", aux={"cap": cap})
        assert torch.equal(py, named)


def test_missing_aux_is_a_clear_error():
    q, k, v = _inputs()
    src = ("float score_mod(float score, int b, int h, int q_idx, int kv_idx, float cap) {\n"
           "    return cap * tanhf(score / cap);\n}\n")
    with pytest.raises(fa4jit.InvalidArgumentError) as ei:
        fa4jit.flex_attention(q, k, v, score_mod=src)
    assert "'cap'" in str(ei.value)


def test_untranslatable_mod_raises_with_line():
    q, k, v = _inputs()

    def bad(score, b, h, q_idx, kv_idx):
        return torch.softmax(score, dim=-1)
    with pytest.raises(fa4jit.TranslationError) as ei:
        fa4jit.flex_attention(q, k, v, score_mod=bad)
    assert ei.value.operation == "torch.softmax" and ei.value.line > 0


def test_current_stream_is_used():
    q, k, v = _inputs()
    s = torch.cuda.Stream()
    with torch.no_grad():
        ref = fa4jit.flex_attention(q, k, v)
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            out = fa4jit.flex_attention(q, k, v)
        s.synchronize()
    assert torch.equal(out, ref)


def test_return_aux_gives_the_lse():
    q, k, v = _inputs()
    with torch.no_grad():
        out, lse = fa4jit.flex_attention(q, k, v, return_lse=True)
        out2, aux = fa4jit.flex_attention(q, k, v, return_aux=fa.AuxRequest(lse=True))
    assert torch.equal(out, out2) and torch.equal(lse, aux.lse) and aux.max_scores is None
    with pytest.raises(fa4jit.UnsupportedError):
        fa4jit.flex_attention(q, k, v, return_aux=fa.AuxRequest(max_scores=True))


@pytest.mark.parametrize("deterministic", [False, True])
def test_a_loss_of_out_and_lse_gets_both_gradients(deterministic):
    """A loss that uses the LSE as well as the output (as merging partial attention results or a
    z-loss does): dq, dk, dv and a trainable captured tensor's gradient against the float64
    reference and torch's flex_attention; then a loss of the LSE alone."""
    q, k, v = _inputs(Hq=4, Hkv=2, Sq=200, Skv=333, seed=3)
    slopes = (0.1 * torch.randn(4, device=DEV)).requires_grad_()

    def alibi(score, b, h, q_idx, kv_idx):
        return score + slopes[h] * (kv_idx - q_idx)
    inputs = [q, k, v, slopes]
    opts = {"deterministic": deterministic}
    out, lse = fa4jit.flex_attention(q, k, v, score_mod=alibi, return_lse=True, enable_gqa=True,
                                     kernel_options=opts)
    g = torch.Generator(device=DEV).manual_seed(4)
    dout = torch.randn(out.shape, device=DEV, dtype=out.dtype, generator=g)
    dlse = torch.randn(lse.shape, device=DEV, dtype=torch.float32, generator=g)
    got = torch.autograd.grad([out, lse], inputs, [dout, dlse])
    torch._dynamo.reset()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pt_out, pt_lse = fa.flex_attention(q, k, v, score_mod=alibi, return_lse=True,
                                               enable_gqa=True)
            pt = torch.autograd.grad([pt_out, pt_lse], inputs, [dout, dlse])
    except Exception:  # noqa: BLE001 - torch's own failure leaves the float64 reference alone
        pt = [None] * len(inputs)
    ref_out, ref_lse = reference_attention(q, k, v, alibi)
    ref = torch.autograd.grad([ref_out, ref_lse], inputs, [dout.double(), dlse.double()])
    for label, a, p_, r in zip(("dq", "dk", "dv", "dslopes"), got, pt, ref):
        assert_close(f"out+lse loss {label}", a, r, p_, q.dtype)
    _, lse = fa4jit.flex_attention(q, k, v, score_mod=alibi, return_lse=True, enable_gqa=True,
                                   kernel_options=opts)
    got = torch.autograd.grad(lse, inputs, dlse)
    _, ref_lse = reference_attention(q, k, v, alibi)
    # the LSE does not depend on v: its reference gradient is None, i.e. zero
    ref = torch.autograd.grad(ref_lse, inputs, dlse.double(), allow_unused=True)
    for label, a, r, t in zip(("dq", "dk", "dv", "dslopes"), got, ref, inputs):
        r = torch.zeros_like(t, dtype=torch.float64) if r is None else r
        assert_close(f"lse-only loss {label}", a, r, None, q.dtype)


def test_deterministic_backward_is_bitwise_reproducible():
    q, k, v = _inputs(Sq=384, Skv=384)
    opts = {"deterministic": True}
    runs = []
    for _ in range(3):
        out = fa4jit.flex_attention(q, k, v, kernel_options=opts)
        runs.append(_grads(out, [q, k, v], torch.ones_like(out)))
    for later in runs[1:]:
        for a, b in zip(runs[0], later):
            assert torch.equal(a, b)


def test_deterministic_trainable_table_gradient_is_bitwise_reproducible():
    """A trainable relative-position table (every key tile of every head adds into its entries)
    with deterministic=True: dq, dk, dv and the table's gradient bitwise equal over three runs
    (the fixed-point aux-gradient sums), and the table's gradient against the float64
    reference."""
    S = 700
    q, k, v = _inputs(B=2, Hq=4, Sq=S, Skv=S, seed=5)
    table = (0.5 * torch.randn(4, 2 * S - 1, device=DEV)).requires_grad_()

    def rel(score, b, h, q_idx, kv_idx):
        return score + table[h, q_idx - kv_idx + S - 1]
    inputs = [q, k, v, table]
    opts = {"deterministic": True}
    dout = torch.randn(q.shape[:3] + (v.shape[3],), device=DEV, dtype=q.dtype,
                       generator=torch.Generator(device=DEV).manual_seed(6))
    runs = []
    for _ in range(3):
        out = fa4jit.flex_attention(q, k, v, score_mod=rel, kernel_options=opts)
        runs.append(_grads(out, inputs, dout))
    for later in runs[1:]:
        for label, a, b in zip(("dq", "dk", "dv", "dtable"), runs[0], later):
            assert torch.equal(a, b), label
    ref_out, _ = reference_attention(q, k, v, rel)
    ref = _grads(ref_out, inputs, dout.double())
    for label, a, r in zip(("dq", "dk", "dv", "dtable"), runs[0], ref):
        assert_close(f"deterministic rel_bias {label}", a, r, None, q.dtype)


@pytest.mark.parametrize("deterministic", [False, True])
def test_cuda_graph_capture_replays_forward_and_backward(deterministic):
    """fa4jit's launches (the forward with its schedule, the backward's pre / main / post chain,
    which on Hopper uses programmatic dependent launch, and the deterministic backward's rank
    kernel) captured in a CUDA graph and replayed on new input data: the replay must equal an
    eager call on that data (bitwise where the backward is deterministic)."""
    q, k, v = _inputs(B=2, Hq=4, Sq=320, Skv=320, seed=1)

    def causal(b, h, q_idx, kv_idx):
        return q_idx >= kv_idx
    bm = fa.create_block_mask(causal, None, None, 320, 320, device=DEV)
    opts = {"deterministic": deterministic}
    dout = torch.randn(q.shape[:3] + (v.shape[3],), device=DEV, dtype=q.dtype)

    def step():
        out = fa4jit.flex_attention(q, k, v, block_mask=bm,
                                    kernel_options=opts)
        return (out, *torch.autograd.grad(out, [q, k, v], dout))
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # compiles and allocates outside the capture
        for _ in range(2):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = step()
    g = torch.Generator(device=DEV).manual_seed(7)
    with torch.no_grad():
        for t in (q, k, v, dout):
            t.copy_(torch.randn(t.shape, device=DEV, dtype=t.dtype, generator=g))
        for t in captured:
            t.fill_(float("nan"))  # poisoned: the replay must write every element
    graph.replay()
    torch.cuda.synchronize()
    eager = step()
    for name, a, b in zip(("out", "dq", "dk", "dv"), captured, eager):
        assert torch.isfinite(a).all(), name
        if deterministic:
            assert torch.equal(a, b), name
        else:
            torch.testing.assert_close(a, b, rtol=2e-2, atol=2e-2, msg=name)


def test_last_kernel_names_the_kernel_a_call_used():
    q, k, v = _inputs()
    with torch.no_grad():
        fa4jit.flex_attention(q, k, v, score_mod="softcap" if "softcap" in fa4jit.shipped_mods()
                              else None, aux={"cap": 9.0} if "softcap" in fa4jit.shipped_mods()
                              else None)
    kern = fa4jit.last_kernel()
    assert kern is not None and kern.info.launchable and kern.info.head_dim == 64
    assert "fwd" in {p.name for p in kern.info.programs}


def test_compile_returns_launchable_kernel_info():
    k = fa4jit.compile(mask_mod="causal", dtype="bf16", head_dim=64,
                       device=torch.cuda.current_device())
    assert k.info.launchable and k.info.arch.startswith("sm_") and k.info.has_mask_mod
    assert {"fwd", "bwd_main", "block_mask"} <= {p.name for p in k.info.programs}


# ------------------------------------------------------------------------------- varlen
def test_varlen_matches_each_sequence_alone():
    """A packed batch of three sequences against each sequence as its own [1, H, S, D] problem
    (the float64 reference), with a causal mask_mod and an ALiBi score_mod over a trainable
    captured tensor: out, LSE and every gradient of a loss that uses both."""
    lengths = [100, 257, 64]
    H, D = 4, 64
    g = torch.Generator(device=DEV).manual_seed(5)
    T = sum(lengths)
    q, k, v = (torch.randn(T, H, D, device=DEV, dtype=DTYPE, generator=g).requires_grad_()
               for _ in range(3))
    cu = torch.tensor([0] + list(torch.tensor(lengths).cumsum(0)), device=DEV,
                      dtype=torch.int32)
    slopes = torch.exp2(-torch.arange(1, H + 1, device=DEV, dtype=torch.float32)) \
        .requires_grad_()

    def alibi(score, b, h, q_idx, kv_idx):
        return score + slopes[h] * (kv_idx - q_idx)

    def causal(b, h, q_idx, kv_idx):
        return q_idx >= kv_idx

    out, lse = fa4jit.varlen_attention(q, k, v, cu, cu, max(lengths), max(lengths),
                                       score_mod=alibi, mask_mod=causal, return_lse=True)
    assert out.shape == (T, H, D) and lse.shape == (H, T)
    dout = torch.randn_like(out)
    dlse = torch.randn(lse.shape, device=DEV, dtype=torch.float32, generator=g)
    got = torch.autograd.grad([out, lse], [q, k, v, slopes], [dout, dlse])
    refs, ref_lse = [], []
    for i, n in enumerate(lengths):
        s0 = int(cu[i])
        sl = slice(s0, s0 + n)
        o_i, l_i = reference_attention(*(t[sl].transpose(0, 1).unsqueeze(0) for t in (q, k, v)),
                                       alibi, causal)
        refs.append(o_i.squeeze(0).transpose(0, 1))
        ref_lse.append(l_i.squeeze(0))
    ref_out, ref_lse = torch.cat(refs), torch.cat(ref_lse, dim=1)
    ref = torch.autograd.grad([ref_out, ref_lse], [q, k, v, slopes], [dout.double(), dlse.double()])
    assert_close("varlen out", out, ref_out, None, DTYPE)
    assert_close("varlen lse", lse, ref_lse, None, DTYPE)
    for label, a, r in zip(("dq", "dk", "dv", "dslopes"), got, ref):
        assert_close(f"varlen {label}", a, r, None, DTYPE)


# --------------------------------------------------------------------------------- twins
def _twins():
    try:
        import twins  # mods/twins.py (conftest puts mods/ on sys.path)
    except ImportError:
        return None
    return twins


@pytest.mark.parametrize("name", sorted(getattr(_twins(), "TWINS", {})) or ["(no twins)"])
def test_shipped_mod_twin(name):
    """Every shipped mod twice: its PyTorch twin translated by fa4jit (out, LSE, all gradients
    including trainable aux), and the shipped .mod by name with the twin's aux values (out and
    LSE, the block mask built by fa4jit from the mod), each against the float64 reference and
    torch's flex_attention on the twin."""
    twins = _twins()
    if twins is None:
        pytest.skip("mods/twins.py not found")
    B, H, S = 2, 4, 256
    aux = twins.example_aux(name, B, H, S, device=DEV)
    trainable = [aux[t].requires_grad_() for t in twins.TWINS[name].trainable
                 if aux[t].dtype.is_floating_point]
    score_mod, mask_mod = twins.build(name, aux)
    bm = fa.create_block_mask(mask_mod, B, H, S, S, device=DEV) if mask_mod else None
    q, k, v = _inputs(B=B, Hq=H, Hkv=H, Sq=S, Skv=S, seed=3)
    _check(f"twin {name}", q, k, v, score_mod=score_mod, block_mask=bm, trainable=trainable)

    text = fa4jit.shipped_mod_source(name)
    has_score, has_mask = "float score_mod(" in text, "bool mask_mod(" in text
    ours = fa4jit.create_block_mask(name, B, H, S, S, device=DEV, aux=aux) if has_mask else None
    if ours is not None:
        assert torch.equal(ours.to_dense(), bm.to_dense()), f"{name}: block masks differ"
    with torch.no_grad():
        out, lse = fa4jit.flex_attention(q, k, v, score_mod=name if has_score else None,
                                         block_mask=ours, return_lse=True, aux=aux)
        pt_out, pt_lse, _ = _torch_flex(q, k, v, score_mod=score_mod, block_mask=bm)
        ref_out, ref_lse = reference_attention(q, k, v, score_mod, mask_mod)
    assert_close(f"mod {name} out", out, ref_out, pt_out, q.dtype)
    assert_close(f"mod {name} lse", lse, ref_lse, pt_lse, q.dtype)


# ---------------------------------------------------------------------------- torch.compile
class _TinyAttention(torch.nn.Module):
    def __init__(self, d=64, heads=4, cap=10.0):
        super().__init__()
        self.heads, self.cap = heads, cap
        self.qkv = torch.nn.Linear(d * heads, 3 * d * heads, dtype=DTYPE, device=DEV)
        self.src = ("float score_mod(float score, int b, int h, int q_idx, int kv_idx, "
                    "float cap) { return cap * tanhf(score / cap); }")

    def forward(self, x):
        B, S, _ = x.shape
        q, k, v = self.qkv(x).view(B, S, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        o = fa4jit.flex_attention(q, k, v, score_mod=self.src, aux={"cap": self.cap})
        return o.transpose(1, 2).reshape(B, S, -1)


def test_torch_compile_sees_one_opaque_op():
    model = _TinyAttention()
    x = torch.randn(2, 128, 256, device=DEV, dtype=DTYPE, requires_grad=True)
    graphs = []

    def recording_backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    eager = model(x)
    compiled = torch.compile(model, backend=recording_backend)
    out = compiled(x)
    assert torch.equal(out, eager)
    targets = [str(n.target) for gm in graphs for n in gm.graph.nodes if n.op == "call_function"]
    assert any("fa4jit.flex_fwd" in t for t in targets), targets
    out.float().sum().backward()
    assert x.grad is not None and torch.isfinite(x.grad).all()


def test_torch_compile_aot_backward_matches_eager():
    model = _TinyAttention()
    x = torch.randn(2, 128, 256, device=DEV, dtype=DTYPE, requires_grad=True)
    eager = model(x)
    (g_eager,) = torch.autograd.grad(eager.float().sum(), x)
    compiled = torch.compile(model, backend="aot_eager")
    out = compiled(x)
    (g_comp,) = torch.autograd.grad(out.float().sum(), x)
    assert torch.equal(out, eager)
    # dQ is accumulated with atomics: equal up to the order of fp32 additions.
    assert (g_comp.float() - g_eager.float()).abs().max() <= 1e-2 * g_eager.float().abs().max()


class _BiasedAttention(torch.nn.Module):
    """A Python score_mod over a trainable per-head bias: compiled with a graph break at the mod
    translation, the op itself inside the graph."""

    def __init__(self, heads=4):
        super().__init__()
        self.bias = torch.nn.Parameter(torch.linspace(-1.0, 1.0, heads, device=DEV))

    def forward(self, q, k, v):
        bias = self.bias

        def score_mod(score, b, h, q_idx, kv_idx):
            return score + bias[h]
        return fa4jit.flex_attention(q, k, v, score_mod=score_mod)


def test_torch_compile_with_a_python_mod_and_a_trainable_parameter():
    model = _BiasedAttention()
    q, k, v = _inputs(B=1, Sq=128, Skv=128)
    eager = model(q, k, v)
    (g_eager,) = torch.autograd.grad(eager.float().sum(), model.bias)
    compiled = torch.compile(model, backend="aot_eager")
    out = compiled(q, k, v)
    (g_comp,) = torch.autograd.grad(out.float().sum(), model.bias)
    assert torch.equal(out, eager)
    assert (g_comp - g_eager).abs().max() <= 1e-3 * max(1.0, float(g_eager.abs().max()))


# ---------------------------------------------------------------------------------- enable()
def test_enable_routes_unchanged_code_and_falls_back_with_a_warning():
    from torch.nn.attention.flex_attention import flex_attention as imported_before

    assert not getattr(imported_before, "fa4jit_routed", False)
    q, k, v = _inputs()

    def alibi(score, b, h, q_idx, kv_idx):
        return score + 0.1 * (kv_idx - q_idx)
    direct = fa4jit.flex_attention(q, k, v, score_mod=alibi)
    with fa4jit.enable():
        from torch.nn.attention import flex_attention as mod
        assert mod.flex_attention is not imported_before
        routed = mod.flex_attention(q, k, v, score_mod=alibi)
        assert torch.equal(routed, direct)
        # fp32 inputs: fa4jit computes in bf16/fp16 only, so torch serves the call.
        q32, k32, v32 = (t.detach().float() for t in (q, k, v))
        with pytest.warns(RuntimeWarning, match="fa4jit: using torch's flex_attention"):
            out32 = mod.flex_attention(q32, k32, v32, score_mod=alibi)
        ref, _ = reference_attention(q32, k32, v32, alibi)
        assert (out32.double() - ref).abs().max() < 1e-3
        # return_aux on the routed function
        out_aux, aux_out = mod.flex_attention(q, k, v, score_mod=alibi,
                                              return_aux=fa.AuxRequest(lse=True))
        assert torch.equal(out_aux, direct) and aux_out.lse is not None
        # The same reason warns once.
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            mod.flex_attention(q32, k32, v32, score_mod=alibi)
        assert not [w for w in seen if "fa4jit" in str(w.message)]
    assert fa.flex_attention is imported_before
    assert not fa4jit.is_enabled()
