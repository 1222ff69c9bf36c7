"""Tests of the activations beyond relu6/hardswish/elu: torch.ops.qplugin.{leaky_relu, sigmoid,
hardsigmoid, celu, threshold, clamp, softmax, tanh, gelu, silu, mish, softplus} and their
functional forms (qplugin/nn/_functional_activation.py, re-exported by qplugin.nn.functional),
beyond what the table-driven tests/activation/test_table.py checks for every row (exactness on
every code, PyTorch parity, empty and non-quantized inputs).

Oracles: the float64 op on the dequantized input, quantized with the output qparams (round half
to even) -- the kernels compute exactly this, so all codes must match; PyTorch's quantized ops
or aten ops on quantized tensors where they exist (x86 engine) -- at most 1 apart, >= 99%
identical, same output qparams and memory format. SiLU, Mish, Softplus (and GELU/Tanh with
chosen qparams) have no PyTorch quantized op: the float op is their only oracle.
"""
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from _reference import INT_DTYPE, QRANGE  # noqa: E402,F401  (one QRANGE: tests/_sweeps.py)
import torch.nn.functional as F  # noqa: E402
import torch.ao.nn.quantized.functional as tqF  # noqa: E402

import qplugin  # noqa: E402,F401
from qplugin._tables import activation as table  # noqa: E402
from qplugin.nn import _functional_activation as qF  # noqa: E402
from _reference import assert_qequal, table_call, table_reference  # noqa: E402

torch.backends.quantized.engine = "x86"

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
]

ISAS = ["scalar", "avx2", "avx512vnni"]
ZP = {torch.quint8: 120, torch.qint8: -7, torch.qint32: 11}


def codes(q):
    return q.int_repr().numpy().astype(np.int64)


def all_codes(dtype, scale, zp):
    """Every 8-bit code once, as a [2, 8, 4, 4] tensor (qint32: a spread of codes)."""
    if dtype == torch.qint32:
        c = torch.linspace(-300, 300, 256).round().to(torch.int32)
    else:
        lo, _ = QRANGE[dtype]
        c = (torch.arange(256) + lo).to(INT_DTYPE[dtype])
    return torch._make_per_tensor_quantized_tensor(c.reshape(2, 8, 4, 4), scale, zp)


def rand_q(shape, scale, zp, dtype, seed, cl=False):
    g = torch.Generator().manual_seed(seed)
    x = torch.quantize_per_tensor(torch.randn(shape, generator=g) * 3, scale, zp, dtype)
    return x.contiguous(memory_format=torch.channels_last) if cl else x


def ref_quantize(v, scale, zp, dtype):
    """The float64 values v quantized exactly as the kernels do: nearbyint(v / scale) + zp."""
    lo, hi = QRANGE[dtype]
    q = torch.round(v / scale)
    q = torch.nan_to_num(q, nan=0.0) + zp
    return q.clamp(lo, hi).to(torch.int64).numpy()


def deq64(x):
    return (x.int_repr().to(torch.float64) - x.q_zero_point()) * x.q_scale()


def test_gelu_default_qparams_are_the_inputs():
    """F.gelu on a quantized tensor keeps the input's qparams (PyTorch rounds the scale to
    float32 on the way; qplugin keeps the double)."""
    x = rand_q((2, 16, 7, 9), 0.05, 120, torch.quint8, 2, cl=True)
    for approx in ("none", "tanh"):
        y = torch.ops.qplugin.gelu(x, None, None, approx)
        ref = F.gelu(x, approximate=approx)
        assert y.q_scale() == x.q_scale() and y.q_zero_point() == x.q_zero_point()
        assert y.stride() == ref.stride()
        d = np.abs(codes(y) - codes(ref))
        assert d.max() <= 1 and (d != 0).mean() <= 0.01


@pytest.mark.parametrize("dim", [0, 1, -1, 2])
@pytest.mark.parametrize("cl", [False, True])
def test_softmax(isa, dim, cl):
    x = rand_q((2, 16, 7, 9), 0.05, 120, torch.quint8, 3, cl)
    y = torch.ops.qplugin.softmax(x, dim, 1 / 256, 0)
    ref = torch.ops.quantized.softmax(x, dim, 1 / 256, 0)
    assert y.is_contiguous() and y.q_scale() == 1 / 256 and y.q_zero_point() == 0
    assert y.stride() == ref.stride()
    d = np.abs(codes(y) - codes(ref))
    assert d.max() <= 1 and (d != 0).mean() <= 0.01
    v = torch.softmax(deq64(x), dim)
    assert np.array_equal(codes(y), ref_quantize(v, 1 / 256, 0, torch.quint8))
    # qint8 and qint32 inputs
    for dtype in (torch.qint8, torch.qint32):
        x = rand_q((3, 10), 0.1, 0, dtype, 4)
        y = torch.ops.qplugin.softmax(x, dim % 2, 0.004, 0)
        ref = ref_quantize(torch.softmax(deq64(x), dim % 2), 0.004, 0, dtype)
        assert np.abs(codes(y) - ref).max() <= 1


@pytest.mark.parametrize("name", ["sigmoid", "leaky_relu", "silu", "gelu", "clamp"])
def test_channels_last_kept_and_strided_input(isa, name):
    row = table.BY_NAME[name]
    case = row.cases[0]
    x = rand_q((2, 16, 7, 9), 0.05, 120, torch.quint8, 5, cl=True)
    y = table_call(row, case, x)
    assert y.is_contiguous(memory_format=torch.channels_last)
    xs = rand_q((2, 16, 7, 18), 0.05, 120, torch.quint8, 6)[..., ::2]
    assert_qequal(table_call(row, case, xs), table_reference(row, case, xs))


def test_celu_contiguous_output_and_empty():
    x = rand_q((2, 16, 7, 9), 0.05, 120, torch.quint8, 7, cl=True)
    y = torch.ops.qplugin.celu(x, 0.03, 7)
    assert y.is_contiguous()  # empty inputs: tests/activation/test_table.py


def test_leaky_relu_inplace():
    x = rand_q((4, 33), 0.05, 120, torch.quint8, 9)
    before = codes(x)
    y = torch.ops.qplugin.leaky_relu(x, 0.2, True, 0.03, 7)  # new qparams: a new tensor
    assert y.data_ptr() != x.data_ptr() and np.array_equal(codes(x), before)
    y = torch.ops.qplugin.leaky_relu(x, 0.2, True, x.q_scale(), x.q_zero_point())
    assert y.data_ptr() == x.data_ptr()
    ref = ref_quantize(F.leaky_relu(torch.from_numpy((before - 120) * 0.05), 0.2), 0.05, 120,
                       torch.quint8)
    assert np.array_equal(codes(x), ref)


def test_errors():
    x = rand_q((2, 3), 0.05, 120, torch.quint8, 10)  # non-quantized input: test_table.py
    with pytest.raises(RuntimeError, match=r"qplugin::silu: expected a finite, positive"):
        torch.ops.qplugin.silu(x, 0.0, 0)
    with pytest.raises(RuntimeError, match=r"qplugin::sigmoid: expected a finite, positive"):
        torch.ops.qplugin.sigmoid(x, float("nan"), 0)
    with pytest.raises(RuntimeError, match=r"qplugin::mish: expected a finite, positive"):
        torch.ops.qplugin.mish(x, -1.0, 0)
    with pytest.raises(RuntimeError, match=r"expected output_zero_point in \[0, 255\]"):
        torch.ops.qplugin.leaky_relu(x, 0.1, False, 0.1, -1)
    with pytest.raises(RuntimeError, match=r"qplugin::gelu: expected approximate 'none' or"):
        torch.ops.qplugin.gelu(x, None, None, "erf")
    with pytest.raises(RuntimeError, match=r"qplugin::tanh: expected output_scale and"):
        torch.ops.qplugin.tanh(x, 0.1, None)
    with pytest.raises(RuntimeError, match=r"qplugin::softmax: expected dim in"):
        torch.ops.qplugin.softmax(x, 2, 0.1, 0)
    with pytest.raises(RuntimeError, match=r"qplugin::clamp: expected at least one of min"):
        torch.ops.qplugin.clamp(x)
    with pytest.raises(RuntimeError, match=r"qplugin::celu: expected a nonzero alpha"):
        torch.ops.qplugin.celu(x, 0.1, 0, 0.0)


# ------------------------------------------------------------------------------------------
# functional forms (≙ torch.ao.nn.quantized.functional)


def test_functional_mirrors_torch_ao():
    x = rand_q((2, 8, 5, 5), 0.05, 120, torch.quint8, 11, cl=True)
    pairs = [
        (qF.hardsigmoid(x), tqF.hardsigmoid(x)),
        (qF.hardtanh(x, -0.4, 0.6), tqF.hardtanh(x, -0.4, 0.6)),
        (qF.leaky_relu(x, 0.2), tqF.leaky_relu(x, 0.2)),
        (qF.leaky_relu(x, 0.2, scale=0.03, zero_point=7),
         tqF.leaky_relu(x, 0.2, scale=0.03, zero_point=7)),
        (qF.celu(x, 0.03, 7, 0.5), tqF.celu(x, 0.03, 7, 0.5)),
        (qF.threshold(x, 0.1, 0.7), tqF.threshold(x, 0.1, 0.7)),
        (qF.clamp(x, -0.3, 0.3), tqF.clamp(x, -0.3, 0.3)),
        (qF.sigmoid(x), torch.sigmoid(x)),
        (qF.tanh(x), torch.tanh(x)),
        (qF.softmax(x, 1, 1 / 256, 0), torch.ops.quantized.softmax(x, 1, 1 / 256, 0)),
    ]
    # PyTorch's threshold is inconsistent exactly at x == threshold (its vector and scalar paths
    # disagree); qplugin applies x > threshold on the exact value.
    at_threshold = (deq64(x) == 0.1).numpy()
    for i, (y, ref) in enumerate(pairs):
        assert y.q_scale() == ref.q_scale() and y.q_zero_point() == ref.q_zero_point()
        assert y.shape == ref.shape
        d = np.abs(codes(y) - codes(ref))
        if i == 5:
            d[at_threshold] = 0
        assert d.max() <= 1 and (d != 0).mean() <= 0.01
    for y in (qF.silu(x, 0.02, 9), qF.mish(x, 0.02, 9), qF.softplus(x, 0.02, 9),
              qF.gelu(x), qF.gelu(x, 0.02, 9, "tanh")):
        assert y.shape == x.shape


def test_functional_inplace():
    x = rand_q((2, 8, 5, 5), 0.05, 120, torch.quint8, 12)
    x1, x2 = x.clone(), x.clone()
    r = qF.hardtanh(x1, -0.4, 0.6, inplace=True)
    assert r is x1 and np.array_equal(codes(x1), codes(tqF.hardtanh(x, -0.4, 0.6)))
    r = qF.hardsigmoid(x2, inplace=True)
    ref = tqF.hardsigmoid(x.clone(), inplace=True)
    assert r is x2 and x2.q_scale() == ref.q_scale() and x2.q_zero_point() == ref.q_zero_point()
    x3 = x.clone()
    r = qF.leaky_relu(x3, 0.3, inplace=True)
    assert r.data_ptr() == x3.data_ptr()
    with pytest.raises(ValueError, match=r"expected inplace=False when scale"):
        qF.leaky_relu(x, 0.3, True, 0.1, 0)


def test_functional_errors_and_script():
    for fn, args in [(qF.hardsigmoid, ()), (qF.hardtanh, ()), (qF.celu, (0.1, 0)),
                     (qF.threshold, (0.1, 0.2)), (qF.clamp, (0.1, 0.2)), (qF.silu, (0.1, 0)),
                     (qF.gelu, ()), (qF.tanh, ()), (qF.sigmoid, ()), (qF.mish, (0.1, 0)),
                     (qF.softplus, (0.1, 0)), (qF.softmax, (0, 0.1, 0))]:
        with pytest.raises(ValueError, match=r"expected a quantized input tensor"):
            fn(torch.randn(3), *args)
    x = rand_q((2, 8), 0.05, 120, torch.quint8, 13)
    for fn, args in [(qF.silu, (0.02, 9)), (qF.leaky_relu, (0.1,)), (qF.hardtanh, (-0.5, 0.5)),
                     (qF.sigmoid, ()), (qF.gelu, ())]:
        scripted = torch.jit.script(fn)
        assert torch.equal(scripted(x, *args).int_repr(), fn(x, *args).int_repr())


@pytest.mark.parametrize("dtype", [torch.quint8, torch.qint8, torch.qint32])
def test_clamp_min_above_max_and_one_sided(isa, dtype):
    x = rand_q((3, 70), 0.05, ZP[dtype], dtype, 14)
    for lo, hi in [(0.5, -0.5), (None, 0.3), (-0.2, None), (-1e9, 1e9)]:
        y = torch.ops.qplugin.clamp(x, lo, hi)
        ref = torch.clamp(deq64(x), lo, hi)
        assert np.array_equal(codes(y), ref_quantize(ref, 0.05, ZP[dtype], dtype))
