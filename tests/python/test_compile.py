"""Compile-only paths through ctypes: a deviceless context (FA4_DEVICE_NONE) compiling for sm_90a,
kernel info and aux info, errors with line, column and log, fa4_spec_check, and the disk cache
configured from Python. No GPU and no torch needed."""

import pytest

import fa4jit
from fa4jit import _ctypes as C

ARCH = "sm_90a"

ALIBI = """float score_mod(float score, int b, int h, int q_idx, int kv_idx, const float *slopes) {
    return score + slopes[h] * (float)(kv_idx - q_idx);
}
"""

BAD = """float score_mod(float score, int b, int h, int q_idx, int kv_idx, const float *slopes) {
    float x = score;
    return x + slope[h];
}
"""


@pytest.fixture()
def ctx(isolated_cache):
    return fa4jit.context("none")


def test_deviceless_context_has_no_arch(ctx):
    assert ctx.device == C.FA4_DEVICE_NONE
    assert ctx.arch == ""


def test_compile_and_read_info(ctx):
    k = ctx.compile(ALIBI, dtype="bf16", head_dim=128, arch=ARCH, flags=C.FA4_COMPILE_FWD)
    info = k.info
    assert info.arch == ARCH
    assert info.dtype == "bf16" and info.head_dim == 128 and info.head_dim_v == 128
    assert info.has_score_mod and not info.has_mask_mod
    assert not info.launchable  # deviceless
    assert info.cache_result == "miss" and info.compile_ms > 0
    assert len(info.key) == 32 and int(info.key, 16) >= 0
    assert [p.name for p in info.programs] == ["fwd"]
    assert info.programs[0].cubin_size > 0 and info.programs[0].registers > 0
    assert len(k.cubin(0)) == info.programs[0].cubin_size
    assert k.aux == [fa4jit.AuxInfo(name="slopes", is_tensor=True, dtype="float",
                                    trainable=False)]


def test_trainable_aux_is_reported(ctx):
    src = ("float score_mod(float score, int b, int h, int q_idx, int kv_idx, const float *bias)"
           " { return score + bias[h]; }")
    k = ctx.compile(src, arch=ARCH, flags=C.FA4_COMPILE_FWD | C.FA4_COMPILE_BWD,
                    trainable=["bias"])
    assert k.aux[0].trainable
    assert {p.name for p in k.info.programs} >= {"fwd", "bwd_main"}


def test_mod_error_carries_line_column_and_status(ctx):
    with pytest.raises(fa4jit.ModError) as ei:
        ctx.compile(BAD, arch=ARCH, source_name="my.mod")
    e = ei.value
    assert e.status == C.STATUS["FA4_ERR_MOD_CHECK"]
    assert e.status_name == "FA4_ERR_MOD_CHECK"
    assert (e.line, e.column) == (3, 16)
    assert "slope" in e.message and "slopes" in e.message
    assert e.source == BAD


def test_syntax_error_family(ctx):
    with pytest.raises(fa4jit.ModError) as ei:
        ctx.compile("float score_mod(float score, int b, int h, int q_idx, int kv_idx) {\n"
                    "    return score +;\n}\n", arch=ARCH)
    assert ei.value.status_name == "FA4_ERR_MOD_SYNTAX" and ei.value.line == 2


def test_spec_check_matches_compile_without_compiling(ctx):
    ctx.check(ALIBI, arch=ARCH)
    with pytest.raises(fa4jit.ModError) as ei:
        ctx.check(BAD, arch=ARCH)
    assert (ei.value.line, ei.value.column) == (3, 16)


def test_unsupported_head_dim(ctx):
    with pytest.raises(fa4jit.Fa4Error) as ei:
        ctx.check(ALIBI, arch=ARCH, head_dim=72)
    assert ei.value.status_name in ("FA4_ERR_UNSUPPORTED", "FA4_ERR_INVALID_ARGUMENT")


def test_unknown_arch(ctx):
    with pytest.raises(fa4jit.UnsupportedError) as ei:
        ctx.check(ALIBI, arch="sm_1x")
    assert ei.value.status_name == "FA4_ERR_ARCH"


def test_memory_then_disk_cache_hits(isolated_cache):
    k1 = fa4jit.compile(ALIBI, arch=ARCH, backward=False)
    assert k1.info.cache_result == "miss"
    k2 = fa4jit.compile(ALIBI, arch=ARCH, backward=False)
    assert k2.info.cache_result == "memory"
    assert k2.info.key == k1.info.key
    fa4jit.configure_cache(dir=isolated_cache, mode="rw")  # fresh contexts, same directory
    k3 = fa4jit.compile(ALIBI, arch=ARCH, backward=False)
    assert k3.info.cache_result == "disk" and k3.info.compile_ms == 0
    # Whitespace and comments do not change the key.
    k4 = fa4jit.compile("/* same */\n" + ALIBI.replace("    ", "\t"), arch=ARCH, backward=False)
    assert k4.info.key == k1.info.key


def test_cache_off_never_hits_disk(tmp_path, lib):
    fa4jit.configure_cache(dir=str(tmp_path / "c"), mode="off")
    try:
        fa4jit.compile(ALIBI, arch=ARCH, backward=False)
        fa4jit.configure_cache(dir=str(tmp_path / "c"), mode="off")
        k = fa4jit.compile(ALIBI, arch=ARCH, backward=False)
        assert k.info.cache_result == "miss"
        assert not (tmp_path / "c").exists() or not any((tmp_path / "c").rglob("*.*"))
    finally:
        fa4jit.configure_cache()


def test_shipped_mods_check_and_compile_deviceless(isolated_cache):
    """Every shipped mod passes fa4_spec_check by name; one score mod and one mask mod are
    compiled (the C tests compile all of them for sm_90a and sm_80)."""
    mods = fa4jit.shipped_mods()
    if not mods:
        pytest.skip("no shipped mods found (mods/*.mod)")
    for name in sorted(mods):
        fa4jit.check(name, arch=ARCH)
    for name in ("alibi", "causal"):
        if name not in mods:
            continue
        text = fa4jit.shipped_mod_source(name)
        has_mask = "bool mask_mod(" in text
        k = fa4jit.compile(None if has_mask else name, mask_mod=name if has_mask else None,
                           arch=ARCH, backward=False)
        assert k.info.has_score_mod == ("float score_mod(" in text), name
        assert k.info.has_mask_mod == has_mask, name
        programs = {p.name for p in k.info.programs}
        assert ("block_mask" in programs) == has_mask, (name, programs)


def test_unknown_shipped_mod_name_lists_the_known_ones():
    with pytest.raises(ValueError) as ei:
        fa4jit.check("no_such_mod_name")
    assert "no_such_mod_name" in str(ei.value)


def test_compile_a_python_closure_deviceless(isolated_cache):
    torch = pytest.importorskip("torch", reason="translating a Python mod needs torch")
    table = torch.zeros(4, 9, requires_grad=True)
    cap = 12.0

    def score_mod(score, b, h, q_idx, kv_idx):
        return cap * torch.tanh(score / cap) + table[h, (q_idx - kv_idx) % 9]

    k = fa4jit.compile(score_mod, arch=ARCH, dtype="fp16", head_dim=64)
    names = {a.name: a for a in k.aux}
    assert names["table"].is_tensor and names["table"].trainable
    assert not names["cap"].is_tensor and names["cap"].dtype == "float"
    assert k.info.dtype == "fp16" and k.info.head_dim == 64 and k.info.has_score_mod


def test_bad_cache_mode_is_refused():
    with pytest.raises(ValueError):
        fa4jit.configure_cache(mode="sometimes")


def test_numbers_travel_exactly_as_text():
    from fa4jit._wire import decode_numbers, encode_numbers
    values = [0.1, 1e-30, -3.0, 2.0 ** 70, 7]
    assert decode_numbers(encode_numbers(values)) == [float(v) for v in values]
    assert decode_numbers(encode_numbers([3, -4]), int) == [3, -4]
    assert decode_numbers("") == []


def test_evaluate_on_the_cpu(lib):
    from fa4jit import _lib
    if not _lib.has("fa4_mod_eval"):
        pytest.skip("the loaded libfa4jit has no fa4_mod_eval")
    import math
    src = ("float score_mod(float score, int b, int h, int q_idx, int kv_idx, float cap) {\n"
           "    return cap * tanhf(score / cap);\n}\n"
           "bool mask_mod(int b, int h, int q_idx, int kv_idx, int window) {\n"
           "    return q_idx >= kv_idx && q_idx - kv_idx < window;\n}\n")
    value, d, allowed = fa4jit.evaluate(src, score=100.0, q_idx=9, kv_idx=5,
                                        aux={"window": 3, "cap": 30.0})
    assert abs(value - 30.0 * math.tanh(100.0 / 30.0)) < 1e-9
    assert abs(d - (1.0 - math.tanh(100.0 / 30.0) ** 2)) < 1e-9
    assert allowed is False  # 9 - 5 >= window
    assert fa4jit.evaluate(src, score=1.0, q_idx=6, kv_idx=5, aux={"window": 3, "cap": 30.0})[2]
    assert fa4jit.evaluate(None, score=2.5) == (2.5, 1.0, True)
    with pytest.raises(fa4jit.InvalidArgumentError, match="'window'"):
        fa4jit.evaluate(src, aux={"cap": 1.0})
    with pytest.raises(fa4jit.ModError) as ei:
        fa4jit.evaluate("float score_mod(float score, int b, int h, int q_idx, int kv_idx) {\n"
                        "    return score + slope;\n}\n")
    assert (ei.value.line, ei.value.column) == (2, 20)


def test_aux_declaration_order_follows_the_source():
    from fa4jit._eval import aux_declarations
    src = ("/* float score_mod(float s, int b, int h, int q, int kv, int nope) */\n"
           "bool mask_mod(int b, int h, int q, int kv, const int32 *doc, int w) { return true; }\n"
           "float score_mod(float s, int b, int h, int q, int kv, float c, const half *t, int w)"
           " { return s; }\n")
    assert aux_declarations(src) == [("doc", True, "int32"), ("w", False, "int"),
                                     ("c", False, "float"), ("t", True, "half")]


def test_fast_math_is_a_kernel_option_and_part_of_the_key(isolated_cache):
    src = ("float score_mod(float score, int b, int h, int q_idx, int kv_idx) "
           "{ return 20.0 * tanhf(score / 20.0); }")
    exact = fa4jit.compile(src, arch=ARCH, backward=False)
    fast = fa4jit.compile(src, arch=ARCH, backward=False, kernel_options={"fast_math": True})
    assert fast.info.flags & C.FA4_COMPILE_FAST_MATH and not exact.info.flags & \
        C.FA4_COMPILE_FAST_MATH
    assert fast.info.key != exact.info.key


def test_compile_gqa_adds_the_hopper_gqa_program(isolated_cache):
    """fa4jit.compile(gqa=True) with the backward asks for FA4_COMPILE_GQA: the sm90 backward's
    program for grouped-query attention (bwd_main90m80s) is compiled; without it, it is not."""
    k = fa4jit.compile(mask_mod="causal", arch=ARCH, gqa=True, block_mask=False)
    assert "bwd_main90m80s" in {p.name for p in k.info.programs}
    k = fa4jit.compile(mask_mod="causal", arch=ARCH, block_mask=False)
    names = {p.name for p in k.info.programs}
    assert "bwd_main90m80" in names and "bwd_main90m80s" not in names
