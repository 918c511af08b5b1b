"""The launch-time aux list on the CPU: values given by name are laid out in the kernel's
declaration order, converted to the declared dtype, checked (missing, extra, kind, integral ints),
and trainable tensors get fp32 gradient buffers. Uses a deviceless kernel and CPU tensors; nothing
is launched. Needs torch."""

import ctypes

import pytest

torch = pytest.importorskip("torch", reason="the aux packing works on torch tensors")

import fa4jit  # noqa: E402
from fa4jit import _ctypes as C  # noqa: E402
from fa4jit._ops import _AuxPack  # noqa: E402
from fa4jit._wire import encode_aux_spec  # noqa: E402

SRC = """float score_mod(float score, int b, int h, int q_idx, int kv_idx, const float *bias,
                int span, const half *temp) {
    return score * (float)temp[h] + bias[h * span + q_idx % span];
}
bool mask_mod(int b, int h, int q_idx, int kv_idx, bool causal) {
    return !causal || q_idx >= kv_idx;
}
"""
CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def kernel(lib):
    ctx = fa4jit.Context("none", fa4jit.CacheConfig(mode="off"))
    return ctx.compile(SRC, arch="sm_90a", flags=C.FA4_COMPILE_FWD | C.FA4_COMPILE_BWD,
                       trainable=["bias"])


def _pack(kernel, values, with_grads=False):
    """values: name -> tensor or number, in any order."""
    tensors, scalars, entries = [], [], []
    for name, v in values.items():
        if isinstance(v, torch.Tensor):
            tensors.append(v)
            entries.append((name, True, name == "bias", None))
        else:
            scalars.append(float(v))
            entries.append((name, False, False, "float"))
    return _AuxPack(kernel, tensors, scalars, encode_aux_spec(entries), CPU, with_grads)


def test_declaration_order_and_conversions(kernel):
    assert [a.name for a in kernel.aux] == ["bias", "span", "temp", "causal"]
    bias = torch.arange(12, dtype=torch.float64).reshape(3, 4)  # float64 -> fp32, flattened
    temp = torch.ones(3)                                          # fp32 -> half, as declared
    pack = _pack(kernel, {"causal": True, "temp": temp, "span": 4, "bias": bias})
    assert pack.count == 4
    slots = [pack.array[i] for i in range(4)]
    assert [s.name.decode() for s in slots] == ["bias", "span", "temp", "causal"]
    assert slots[0].dtype == C.FA4_DTYPE_FP32 and slots[0].numel == 12
    got = (ctypes.c_float * 12).from_address(slots[0].data)
    assert list(got) == [float(x) for x in range(12)]
    assert (slots[1].dtype, slots[1].i) == (C.FA4_DTYPE_INT32, 4)
    assert slots[2].dtype == C.FA4_DTYPE_FP16 and slots[2].numel == 3
    assert (slots[3].dtype, slots[3].i) == (C.FA4_DTYPE_BOOL, 1)
    assert not slots[0].grad  # forward: no gradient buffer


def test_trainable_tensor_gets_a_zeroed_fp32_gradient_buffer(kernel):
    bias = torch.zeros(8, requires_grad=True)
    pack = _pack(kernel, {"bias": bias, "span": 2, "temp": torch.ones(2), "causal": False},
                 with_grads=True)
    g = pack.grads["bias"]
    assert g.dtype == torch.float32 and g.numel() == 8 and not g.any()
    assert pack.array[0].grad == g.data_ptr()


def test_missing_and_extra_names(kernel):
    with pytest.raises(fa4jit.InvalidArgumentError) as ei:
        _pack(kernel, {"bias": torch.ones(2), "span": 1, "temp": torch.ones(1), "extra": 3})
    msg = str(ei.value)
    assert "'causal'" in msg and "'extra'" in msg and ei.value.status_name == "FA4_ERR_AUX"


def test_kind_mismatch_and_non_integral_int(kernel):
    with pytest.raises(fa4jit.InvalidArgumentError):
        _pack(kernel, {"bias": 1.0, "span": 1, "temp": torch.ones(1), "causal": True})
    with pytest.raises(fa4jit.InvalidArgumentError) as ei:
        _pack(kernel, {"bias": torch.ones(2), "span": 2.5, "temp": torch.ones(1),
                       "causal": True})
    assert "span" in str(ei.value)
