"""torch.ops.qplugin.prelu and qplugin.nn.PReLU.

Oracles: the exact reference (float64 prelu on the dequantized codes, quantized round half to
even) -> bit for bit; torch.ops.quantized.prelu (quint8 weights, its only dtype) -> within 1.
Every ISA (table lookups: the same bytes everywhere). Layouts: the output keeps the input's
suggested memory format, as PyTorch's.
"""

import pytest
import torch
import torch.ao.quantization as tq
from torch import nn

import qplugin.quantization as qq
from qplugin import nn as qnn
from _reference import (assert_copies_match, assert_qclose, assert_qequal, assert_same_layout,
                        call_unmodified, dequantize64, quantize64)


def exact(x, w, scale, zp):
    xr = dequantize64(x)
    wr = dequantize64(w).reshape(-1)
    if wr.numel() > 1:
        shape = [1] * x.dim()
        shape[1 if x.dim() >= 2 else 0] = wr.numel()
        wr = wr.reshape(shape)
    return quantize64(torch.where(xr >= 0, xr, xr * wr), scale, zp, torch.quint8)


def _x(shape, scale=0.05, zp=128, seed=0):
    g = torch.Generator().manual_seed(seed)
    codes = torch.randint(0, 256, shape, generator=g, dtype=torch.uint8)
    return torch._make_per_tensor_quantized_tensor(codes, scale, zp)


def _wq(n, dtype=torch.quint8, seed=1, scale=0.01, zp=None):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.quint8:
        codes = torch.randint(0, 256, (n,), generator=g, dtype=torch.uint8)
        zp = 60 if zp is None else zp
    else:
        codes = torch.randint(-128, 128, (n,), generator=g, dtype=torch.int8)
        zp = -3 if zp is None else zp
    return torch._make_per_tensor_quantized_tensor(codes, scale, zp)


SHAPES = [((2, 3, 4, 5), 3), ((2, 3, 4, 5), 1), ((7,), 7), ((7,), 1), ((4, 6), 6),
          ((2, 4, 3), 4), ((1, 2, 3, 4, 5), 2), ((0, 3, 2), 3), ((3, 16, 9, 9), 16)]


@pytest.mark.parametrize("i", range(len(SHAPES)))
@pytest.mark.parametrize("wdtype", [torch.quint8, torch.qint8])
def test_exact_every_isa(isa, i, wdtype):
    shape, n = SHAPES[i]
    x = _x(shape, seed=i)
    w = _wq(n, wdtype, seed=i + 5)
    got = call_unmodified(torch.ops.qplugin.prelu, x, w, 0.04, 100)
    assert_qequal(got, exact(x, w, 0.04, 100))
    assert got.is_contiguous()


# Channels-last (and [N, C]) inputs with C >= 16 and >= 64 pixel rows take the blocked vector
# path (256-row blocks, transposed through lut8_nhwc_to_nchw / lut8_nchw_to_nhwc); the shapes
# give partial blocks and channel counts that are not multiples of the vector width.
@pytest.mark.parametrize("shape, fmt", [((3, 16, 10, 10), torch.channels_last),
                                        ((2, 33, 17, 9), torch.channels_last),
                                        ((1, 64, 23, 25), torch.channels_last),
                                        ((2, 17, 4, 5, 7), torch.channels_last_3d),
                                        ((300, 40), None)])
@pytest.mark.parametrize("wdtype", [torch.quint8, torch.qint8])
def test_exact_channels_last_blocks_every_isa(isa, shape, fmt, wdtype):
    x = _x(shape, seed=len(shape) + shape[1])
    if fmt is not None:
        x = x.contiguous(memory_format=fmt)
    w = _wq(shape[1], wdtype, seed=shape[1])
    got = call_unmodified(torch.ops.qplugin.prelu, x, w, 0.04, 100)
    assert_qequal(got, exact(x, w, 0.04, 100))
    if fmt is not None:
        assert got.is_contiguous(memory_format=fmt)


@pytest.mark.parametrize("i", range(len(SHAPES)))
def test_vs_pytorch(i):
    shape, n = SHAPES[i]
    x = _x(shape, seed=i + 1)
    w = _wq(n, torch.quint8, seed=i)
    ours = torch.ops.qplugin.prelu(x, w, 0.03, 90)
    theirs = torch.ops.quantized.prelu(x, w, 0.03, 90)
    assert_qclose(ours, theirs)
    assert_same_layout(ours, theirs)


def test_zero_dim_weight_and_layouts():
    x = _x((2, 5, 6, 7), seed=3)
    w0 = torch.quantize_per_tensor(torch.tensor(-0.4), 0.01, 128, torch.quint8)
    assert_qequal(torch.ops.qplugin.prelu(x, w0, 0.05, 128), exact(x, w0, 0.05, 128))
    w = _wq(5, seed=2)
    for xx in (x.contiguous(memory_format=torch.channels_last), x[:, :, ::2, 1:],
               x.transpose(2, 3)):
        got = torch.ops.qplugin.prelu(xx, w, 0.05, 128)
        theirs = torch.ops.quantized.prelu(xx, w, 0.05, 128)
        assert_qequal(got, exact(xx, w, 0.05, 128))
        assert_same_layout(got, theirs)
    x5 = _x((2, 5, 3, 4, 2), seed=4).contiguous(memory_format=torch.channels_last_3d)
    got = torch.ops.qplugin.prelu(x5, w, 0.05, 128)
    assert got.is_contiguous(memory_format=torch.channels_last_3d)
    assert_qequal(got, exact(x5, w, 0.05, 128))


def test_clamps():
    x = _x((4, 3, 8), scale=1.0, zp=128, seed=9)
    w = _wq(3, torch.qint8, scale=0.05)
    got = torch.ops.qplugin.prelu(x, w, 0.1, 20)
    assert_qequal(got, exact(x, w, 0.1, 20))
    assert (got.int_repr() == 255).any() and (got.int_repr() == 0).any()


BAD = [
    (lambda: (torch.rand(2, 3), _wq(3), 0.1, 0), r"expected qx to be a quantized tensor"),
    (lambda: (_x((2, 3)), torch.rand(3), 0.1, 0), r"expected weight to be a quantized tensor"),
    (lambda: (torch.quantize_per_tensor(torch.rand(2, 3), 0.1, 0, torch.qint8), _wq(3), 0.1, 0),
     r"expected qx of dtype QUInt8, got QInt8"),
    (lambda: (_x((2, 3)), torch.quantize_per_tensor(torch.rand(3), 0.1, 0, torch.qint32), 0.1,
              0), r"expected weight of dtype QUInt8 or QInt8, got QInt32"),
    (lambda: (_x((2, 4)), _wq(3), 0.1, 0), r"expected weight with 1 value or one per channel "
                                             r"\(4, dim 1 of qx\), got 3"),
    (lambda: (_x((5,)), _wq(3), 0.1, 0), r"expected weight with 1 value or one per channel "
                                           r"\(5, dim 0 of qx\), got 3"),
    (lambda: (_x((2, 3)), _wq(3).reshape(3, 1), 0.1, 0), r"expected a 0-d or 1-d weight, got 2-D"),
    (lambda: (_x(()), _wq(1), 0.1, 0), r"expected qx of rank >= 1, got a 0-d tensor"),
    (lambda: (_x((2, 3)), _wq(3), 0.0, 0), r"expected a finite, positive output_scale, got 0"),
    (lambda: (_x((2, 3)), _wq(3), float("nan"), 0), r"expected a finite, positive output_scale"),
    (lambda: (_x((2, 3)), _wq(3), float("inf"), 0), r"expected a finite, positive output_scale"),
    (lambda: (_x((2, 3)), _wq(3), 0.1, 256), r"expected output_zero_point in \[0, 255\]"),
    (lambda: (_x((2, 3)), _wq(3), 0.1, -1), r"expected output_zero_point in \[0, 255\]"),
]


@pytest.mark.parametrize("i", range(len(BAD)))
def test_bad_inputs(i):
    make, pattern = BAD[i]
    with pytest.raises(RuntimeError, match=rf"qplugin::prelu: {pattern}"):
        torch.ops.qplugin.prelu(*make())


# ---------------------------------------------------------------------------------------------
# Module


class _Net(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.quant = tq.QuantStub()
        self.act = nn.PReLU(n)
        self.dequant = tq.DeQuantStub()

    def forward(self, x):
        return self.dequant(self.act(self.quant(x)))


def _prepared(n, qconfig):
    torch.manual_seed(0)
    m = _Net(n).eval()
    with torch.no_grad():
        m.act.weight.copy_(torch.linspace(-0.5, 0.7, n))
    m.qconfig = qconfig
    tq.prepare(m, inplace=True, allow_list=qq.get_default_qconfig_propagation_list())
    for _ in range(3):
        m(torch.randn(4, n, 5, 5) * 3)
    return m


def _quint8_weight_qconfig():
    return tq.QConfig(activation=tq.MinMaxObserver.with_args(dtype=torch.quint8),
                      weight=tq.MinMaxObserver.with_args(dtype=torch.quint8))


def test_module_from_float_matches_torch():
    m = _prepared(4, _quint8_weight_qconfig())
    ours = qq.convert(m)
    theirs = tq.convert(m)
    assert type(ours.act) is qnn.PReLU and ours.act.num_parameters == 4
    assert ours.act.weight.dtype == torch.quint8
    assert torch.equal(ours.act.weight.int_repr(), theirs.act.weight.int_repr())
    assert ours.act.weight.q_scale() == theirs.act.weight.q_scale()
    x = ours.quant(torch.randn(2, 4, 3, 3) * 3)
    got = ours.act(x)
    assert got.q_scale() == theirs.act.scale and got.q_zero_point() == theirs.act.zero_point
    assert_qequal(got, exact(x, ours.act.weight, float(ours.act.scale), int(ours.act.zero_point)))
    # PyTorch is the oracle for the negative inputs only: it multiplies the positive ones by
    # quantize(1.0) on the weight's grid, which is not 1 unless 1.0 is a code of that grid (here
    # it is above the weight's range: torch scales them by the largest weight; see
    # test_pytorch_positive_slope_bug).
    neg = x.int_repr() < x.q_zero_point()
    assert neg.any() and (~neg).any()
    t = theirs.act(x).int_repr().int()
    assert (got.int_repr().int()[neg] - t[neg]).abs().max() <= 1


def test_pytorch_positive_slope_bug():
    # Documents the PyTorch deviation: with a weight grid on which 1.0 is not representable,
    # quantized::prelu scales x >= 0 by the clamped quantize(1.0); qplugin returns x itself.
    w = torch.quantize_per_tensor(torch.tensor([0.1, 0.2, 0.3, 0.7]), 0.0047, 106, torch.quint8)
    x = torch._make_per_tensor_quantized_tensor(torch.full((1, 4, 2, 2), 200, dtype=torch.uint8),
                                                0.07, 111)
    ours = torch.ops.qplugin.prelu(x, w, 0.07, 111)
    assert (ours.int_repr() == 200).all()  # identity for positives (same in/out qparams)
    theirs = torch.ops.quantized.prelu(x, w, 0.07, 111)
    assert (theirs.int_repr() < 200).all()  # PyTorch: 111 + 89 * 0.7003 -> 173


def test_module_from_float_qint8_observer_keeps_negative_slopes():
    # The default qconfig observes weights as qint8 (symmetric, zero point 0). PyTorch then
    # quantizes to quint8 anyway, clamping every negative slope to 0; qplugin keeps qint8.
    m = _prepared(3, tq.default_qconfig)
    q = qq.convert(m).act
    assert q.weight.dtype == torch.qint8
    w = q.weight.dequantize()
    torch.testing.assert_close(w, torch.linspace(-0.5, 0.7, 3), atol=0.01, rtol=0)


def test_module_state_dict_script_roundtrip(tmp_path):
    q = qq.convert(_prepared(4, _quint8_weight_qconfig())).act
    x = torch.quantize_per_tensor(torch.randn(2, 4, 3, 3), 0.05, 128, torch.quint8)
    y = q(x)
    fresh = qnn.PReLU(1.0, 0, 4)
    fresh.load_state_dict(q.state_dict())
    assert_qequal(fresh(x), y)
    assert float(fresh.scale) == float(q.scale) and int(fresh.zero_point) == int(q.zero_point)
    # A PyTorch-style (empty) state dict keeps the current values.
    fresh.load_state_dict({}, strict=True)
    assert_qequal(fresh(x), y)
    assert_copies_match(q, (x,), y, tmp_path)


def test_module_ctor_set_weight_repr():
    m = qnn.PReLU(0.1, 3, 2)
    assert repr(m) == "QuantizedPReLU(num_parameters=2, scale=0.1, zero_point=3)"
    assert m.weight.dtype == torch.quint8 and m.weight.shape == (2,)
    w = _wq(2, torch.qint8)
    m.set_weight(w)
    assert m.weight is w
    with pytest.raises(ValueError, match=r"qplugin.nn.PReLU.set_weight: expected 2 values"):
        m.set_weight(_wq(3))
    with pytest.raises(TypeError, match=r"qplugin.nn.PReLU.set_weight: expected a quantized"):
        m.set_weight(torch.rand(2))
    with pytest.raises(ValueError, match=r"qplugin.nn.PReLU: expected num_parameters"):
        qnn.PReLU(0.1, 3, 0)
    with pytest.raises(TypeError, match=r"qplugin.nn.PReLU.from_float"):
        qnn.PReLU.from_float(nn.ReLU())
    assert qq.DEFAULT_MODULE_MAPPING[nn.PReLU] is qnn.PReLU
