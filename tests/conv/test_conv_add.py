"""torch.ops.qplugin.conv2d_add / conv2d_add_relu, qplugin.nn.intrinsic.ConvAdd2d /
ConvAddReLU2d, and the legacy default overloads conv2d / conv2d_relu / conv3d / conv3d_relu
(stride, padding, dilation, groups ignored, as PyTorch).

Oracles: the exact reference (float64 conv on the dequantized codes + the dequantized qaccum,
ReLU after the add, quantized round half to even) -> bit for bit; PyTorch's conv2d_add[_relu]
(onednn engine, the only one that has them) on reduce_range activations (codes 0..127) and
symmetric weights, where it is exact on AVX2 and AVX-512 machines alike -> within 1.
"""
import warnings

import pytest
import torch
import torch.ao.nn.intrinsic as nni
import torch.ao.quantization as tq
import torch.nn.functional as F
from torch import nn

import qplugin.quantization as qq
from qplugin.nn import intrinsic as qnni
from _reference import (assert_bytes_equal, assert_copies_match, assert_qclose, assert_qequal,
                        call_unmodified, dequantize64, quantize64, quantized_engine, weight64)

OPS = {False: torch.ops.qplugin.conv2d_add, True: torch.ops.qplugin.conv2d_add_relu}






def exact(x, acc, w, b, stride, padding, dilation, groups, scale, zp, relu):
    v = F.conv2d(dequantize64(x), weight64(w), None if b is None else b.to(torch.float64), stride,
                 padding, dilation, groups)
    v = v + dequantize64(acc)
    if relu:
        v = v.clamp_min(0)
    return quantize64(v, scale, zp, torch.quint8)


def _q(shape, lo=0, hi=255, scale=0.05, zp=None, seed=0):
    g = torch.Generator().manual_seed(seed)
    codes = torch.randint(lo, hi + 1, shape, generator=g, dtype=torch.uint8)
    return torch._make_per_tensor_quantized_tensor(codes, scale, (lo + hi) // 2 if zp is None
                                                   else zp)


def _w(shape, per_channel=False, zp=0, seed=1):
    g = torch.Generator().manual_seed(seed)
    codes = torch.randint(-128, 128, shape, generator=g, dtype=torch.int8)
    if per_channel:
        sc = torch.rand(shape[0], generator=g, dtype=torch.float64) * 0.01 + 0.001
        return torch._make_per_channel_quantized_tensor(codes, sc, torch.full((shape[0],), zp), 0)
    return torch._make_per_tensor_quantized_tensor(codes, 0.004, zp)


def _out(h, k, s, p, d):
    return (h + 2 * p - d * (k - 1) - 1) // s + 1


CASES = [  # N, Cin, Cout, H, W, k, stride, pad, dil, groups, per_channel, wzp, bias
    (1, 4, 8, 6, 6, 3, 1, 1, 1, 1, False, 0, True),
    (2, 3, 5, 7, 9, 3, 2, 0, 1, 1, True, 0, False),
    (1, 8, 8, 5, 5, 3, 1, 2, 2, 4, True, 0, True),
    (2, 6, 6, 4, 4, 1, 1, 0, 1, 6, False, -3, True),
    (1, 16, 17, 9, 8, (3, 1), (1, 2), (1, 0), 1, 1, True, 0, True),
    (0, 4, 4, 5, 5, 3, 1, 1, 1, 1, False, 0, True),
]


def _case(i, seed=0):
    N, Cin, Cout, H, W, k, s, p, d, g, pc, wzp, has_b = CASES[i]
    kh, kw = (k, k) if isinstance(k, int) else k
    sh, sw = (s, s) if isinstance(s, int) else s
    ph, pw = (p, p) if isinstance(p, int) else p
    x = _q((N, Cin, H, W), seed=seed + i)
    w = _w((Cout, Cin // g, kh, kw), pc, wzp, seed=seed + i + 7)
    b = torch.randn(Cout, generator=torch.Generator().manual_seed(i)) if has_b else None
    acc = _q((N, Cout, _out(H, kh, sh, ph, d), _out(W, kw, sw, pw, d)), scale=0.03, zp=140,
             seed=seed + i + 3)
    return x, acc, w, b, [sh, sw], [ph, pw], [d, d], g


@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("i", range(len(CASES)))
def test_exact_every_isa(isa, relu, i):
    x, acc, w, b, s, p, d, g = _case(i)
    packed = torch.ops.qplugin.conv2d_prepack(w, b, s, p, d, g)
    got = call_unmodified(OPS[relu], x, acc, packed, 0.06, 110)
    assert got.is_contiguous(memory_format=torch.channels_last)
    assert_qequal(got, exact(x, acc, w, b, s, p, d, g, 0.06, 110, relu))


# The driver path (the conv GEMM writing exact int32 accumulators, ops/quantized_cpu/
# conv_kernel.cpp) at sizes where it blocks rows and columns, splits the batch into chunks
# (P * C_out > 2^18 accumulators per image), takes the implicit GEMM (weight zero points 0) or
# the row-sum path (nonzero weight zero point); and K > 33025, which falls back to the int64 GEMM.
BIG = [  # N, Cin, Cout, H, W, k, stride, pad, dil, groups, per_channel, wzp, bias
    (2, 8, 72, 64, 60, 3, 1, 1, 1, 1, True, 0, True),
    (2, 8, 72, 64, 60, 3, 1, 1, 1, 1, False, 5, True),
    (3, 24, 40, 21, 19, 3, 2, 1, 1, 1, True, 0, False),
    (1, 3700, 3, 3, 4, 3, 1, 1, 1, 1, False, 0, True),
]


@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("case", BIG)
def test_exact_driver_path_every_isa(isa, relu, case):
    N, Cin, Cout, H, W, k, s, p, d, g, pc, wzp, has_b = case
    x = _q((N, Cin, H, W), seed=11)
    w = _w((Cout, Cin // g, k, k), pc, wzp, seed=12)
    b = torch.randn(Cout, generator=torch.Generator().manual_seed(13)) if has_b else None
    acc = _q((N, Cout, _out(H, k, s, p, d), _out(W, k, s, p, d)), scale=0.03, zp=140, seed=14)
    packed = torch.ops.qplugin.conv2d_prepack(w, b, [s, s], [p, p], [d, d], g)
    got = call_unmodified(OPS[relu], x, acc, packed, 0.06, 110)
    assert_qequal(got, exact(x, acc, w, b, [s, s], [p, p], [d, d], g, 0.06, 110, relu))


@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("out_scale, acc_scale", [(1e-13, 0.03), (0.06, 1e20), (1e-30, 1e20)])
def test_huge_quotients_every_isa(isa, relu, out_scale, acc_scale):
    # |v / output_scale| >= 1e15: the vector finishing pass leaves these to quantize_exact.
    x, _, w, b, s, p, d, g = _case(4)
    acc = _q((1, 17, 9, 4), scale=acc_scale, zp=140, seed=3)
    packed = torch.ops.qplugin.conv2d_prepack(w, b, s, p, d, g)
    got = OPS[relu](x, acc, packed, out_scale, 7)
    ref = exact(x, acc, w, b, s, p, d, g, out_scale, 7, relu)
    assert_qequal(got, ref)
    if not relu:  # the draw saturates both ends
        codes = got.int_repr()
        assert (codes == 0).any() and (codes == 255).any()


def test_layouts_and_isas_identical():
    x, acc, w, b, s, p, d, g = _case(0)
    packed = torch.ops.qplugin.conv2d_prepack(w, b, s, p, d, g)
    ref = exact(x, acc, w, b, s, p, d, g, 0.05, 100, True)
    base = torch.ops.qplugin.conv2d_add_relu(x, acc, packed, 0.05, 100)
    for xx in (x.contiguous(memory_format=torch.channels_last), x):
        for aa in (acc.contiguous(memory_format=torch.channels_last), acc):
            got = call_unmodified(torch.ops.qplugin.conv2d_add_relu, xx, aa, packed, 0.05, 100)
            assert_qequal(got, ref)
            assert_bytes_equal(got, base)
    big = _q((1, 4, 16, 20), seed=4)[:, :, ::2, ::2]  # strided input
    acc2 = _q((1, 8, 8, 10), seed=5)
    assert_qequal(torch.ops.qplugin.conv2d_add(big, acc2, packed, 0.05, 100),
                  exact(big, acc2, w, b, s, p, d, g, 0.05, 100, False))


@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("i", [0, 1, 2, 4])
def test_vs_pytorch_onednn(relu, i):
    N, Cin, Cout, H, W, k, s, p, d, g, pc, _, has_b = CASES[i]
    x, acc, w, b, s, p, d, g = _case(i, seed=11)
    x = _q(tuple(x.shape), lo=0, hi=127, zp=50, scale=0.04, seed=i)  # reduce_range codes
    ref = exact(x, acc, w, b, s, p, d, g, 0.05, 100, relu)
    with quantized_engine("onednn"):
        tp = torch.ops.quantized.conv2d_prepack(w, b, s, p, d, g)
        top = torch.ops.quantized.conv2d_add_relu if relu else torch.ops.quantized.conv2d_add
        theirs = top(x, acc.clone(), tp, 0.05, 100)
    ours = OPS[relu](x, acc, torch.ops.qplugin.conv2d_prepack(w, b, s, p, d, g), 0.05, 100)
    assert_qequal(ours, ref)
    assert_qclose(theirs, ref)  # torch is a fair oracle here
    assert_qclose(ours, theirs)
    assert ours.stride() == theirs.stride()


def _bad_cases():
    x, acc, w, b, s, p, d, g = _case(0)
    P = torch.ops.qplugin.conv2d_prepack(w, b, s, p, d, g)
    P3 = torch.ops.qplugin.conv3d_prepack(_w((8, 4, 1, 3, 3)), None, [1, 1, 1], [0, 1, 1],
                                          [1, 1, 1], 1)
    PT = torch.ops.qplugin.conv_transpose2d_prepack(_w((4, 8, 3, 3)), None, [1, 1], [1, 1],
                                                    [0, 0], [1, 1], 1)
    q8 = torch.quantize_per_tensor(torch.rand(1, 4, 6, 6), 0.1, 0, torch.qint8)
    return [
        ((torch.rand(1, 4, 6, 6), acc, P, 0.1, 0), r"expected qx to be a quantized tensor"),
        ((x, torch.rand(1, 8, 6, 6), P, 0.1, 0), r"expected qaccum to be a quantized tensor"),
        ((q8, acc, P, 0.1, 0), r"expected qx of dtype QUInt8, got QInt8"),
        ((x, _q((1, 8, 5, 6)), P, 0.1, 0), r"expected qaccum of the output's shape \[1, 8, 6, "
                                            r"6\], got \[1, 8, 5, 6\]"),
        ((x[0], acc, P, 0.1, 0), r"expected a 4-D input qx \(N, C, H, W\), got 3-D"),
        ((_q((1, 3, 6, 6)), acc, P, 0.1, 0), r"expected an input with 4 channels .* got 3"),
        ((_q((1, 4, 1, 1)), _q((1, 8, 1, 1)), torch.ops.qplugin.conv2d_prepack(
            w, b, [1, 1], [0, 0], [1, 1], 1), 0.1, 0), r"expected an input at least as large"),
        ((x, acc, P, 0.0, 0), r"expected a finite, positive output_scale, got 0"),
        ((x, acc, P, float("nan"), 0), r"expected a finite, positive output_scale"),
        ((x, acc, P, -0.5, 0), r"expected a finite, positive output_scale"),
        ((x, acc, P, 0.1, 256), r"expected output_zero_point in \[0, 255\]"),
        ((x, acc, PT, 0.1, 0), r"expected packed weights of a conv \(conv\*_prepack\)"),
    ], P3


@pytest.mark.parametrize("relu", [False, True])
def test_bad_inputs(relu):
    cases, P3 = _bad_cases()
    name = "conv2d_add_relu" if relu else "conv2d_add"
    for args, pattern in cases:
        with pytest.raises(RuntimeError, match=rf"qplugin::{name}: {pattern}"):
            OPS[relu](*args)
    x, acc = cases[0][0][1], cases[0][0][1]
    with pytest.raises(RuntimeError):  # a Conv3dPackedParams is not a Conv2dPackedParams
        OPS[relu](_q((1, 4, 6, 6)), acc, P3, 0.1, 0)


# ---------------------------------------------------------------------------------------------
# Legacy default overloads: the extra arguments are ignored (PyTorch's QConvInt8ForBC).


@pytest.mark.parametrize("relu", [False, True])
def test_legacy_conv2d_overload_ignores_args(relu):
    x, acc, w, b, s, p, d, g = _case(1)
    packed = torch.ops.qplugin.conv2d_prepack(w, b, s, p, d, g)
    new = (torch.ops.qplugin.conv2d_relu if relu else torch.ops.qplugin.conv2d).new
    legacy = (torch.ops.qplugin.conv2d_relu if relu else torch.ops.qplugin.conv2d).default
    want = new(x, packed, 0.07, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # Deliberately wrong stride/padding/dilation/groups: the packed config wins.
        got = legacy(x, packed, [3, 3], [0, 0], [2, 2], 7, 0.07, 5)
        top = torch.ops.quantized.conv2d_relu if relu else torch.ops.quantized.conv2d
        tp = torch.ops.quantized.conv2d_prepack(w, b, s, p, d, g)
        theirs = top.default(_q(tuple(x.shape), lo=0, hi=127, seed=1), tp, [3, 3], [0, 0],
                             [2, 2], 7, 0.07, 5)
    assert_bytes_equal(got, want)
    ours_rr = legacy(_q(tuple(x.shape), lo=0, hi=127, seed=1), packed, [3, 3], [0, 0], [2, 2], 7,
                     0.07, 5)
    assert_qclose(ours_rr, theirs)
    with pytest.raises(RuntimeError, match=r"qplugin::conv2d(_relu)?: expected a finite, "
                                           r"positive output_scale"):
        legacy(x, packed, [1, 1], [0, 0], [1, 1], 1, 0.0, 5)


@pytest.mark.parametrize("relu", [False, True])
def test_legacy_conv3d_overload_ignores_args(relu):
    x = _q((1, 3, 4, 5, 5), seed=2)
    w = _w((4, 3, 2, 3, 3), True, seed=3)
    b = torch.randn(4)
    packed = torch.ops.qplugin.conv3d_prepack(w, b, [1, 1, 1], [1, 1, 1], [1, 1, 1], 1)
    op = torch.ops.qplugin.conv3d_relu if relu else torch.ops.qplugin.conv3d
    want = op.new(x, packed, 0.07, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = op.default(x, packed, [2, 2, 2], [0, 0, 0], [1, 1, 1], 3, 0.07, 5)
    assert_bytes_equal(got, want)
    # TorchScript resolves the overload by its arguments.
    fn = torch.jit.script(_Legacy3dRelu(packed) if relu else _Legacy3d(packed))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_bytes_equal(fn(x), want)


class _Legacy3d(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, x):
        return torch.ops.qplugin.conv3d(x, self.p, [1, 1, 1], [1, 1, 1], [1, 1, 1], 1, 0.07, 5)


class _Legacy3dRelu(_Legacy3d):
    def forward(self, x):
        return torch.ops.qplugin.conv3d_relu(x, self.p, [1, 1, 1], [1, 1, 1], [1, 1, 1], 1, 0.07,
                                             5)


# ---------------------------------------------------------------------------------------------
# Modules


class _Net(nn.Module):
    def __init__(self, relu):
        super().__init__()
        self.q1, self.q2 = tq.QuantStub(), tq.QuantStub()
        conv = nn.Conv2d(4, 6, 3, padding=1)
        self.conv = nni.ConvAddReLU2d(conv, torch.add, nn.ReLU()) if relu else nni.ConvAdd2d(
            conv, torch.add)
        self.dequant = tq.DeQuantStub()

    def forward(self, x, y):
        return self.dequant(self.conv(self.q1(x), self.q2(y)))


def _converted(relu, torch_convert=False):
    torch.manual_seed(0)
    m = _Net(relu).eval()
    m.qconfig = tq.get_default_qconfig("x86")
    tq.prepare(m, inplace=True, allow_list=qq.get_default_qconfig_propagation_list())
    for _ in range(3):
        m(torch.randn(2, 4, 5, 5), torch.randn(2, 6, 5, 5))
    if torch_convert:
        with quantized_engine("onednn"):
            return tq.convert(m)
    return qq.convert(m)


@pytest.mark.parametrize("relu", [False, True])
def test_module_from_float_through_convert(relu):
    qm = _converted(relu)
    assert type(qm.conv) is (qnni.ConvAddReLU2d if relu else qnni.ConvAdd2d)
    x = qm.q1(torch.randn(2, 4, 5, 5))
    y = qm.q2(torch.randn(2, 6, 5, 5))
    got = qm.conv(x, y)
    c = qm.conv
    ref = exact(x, y, c.weight(), c.bias(), c.stride, c.padding, c.dilation, c.groups, c.scale,
                c.zero_point, relu)
    assert_qequal(got, ref)
    tm = _converted(relu, torch_convert=True)
    with quantized_engine("onednn"):
        theirs = tm.conv(x, y.clone())
    assert theirs.q_scale() == got.q_scale() and theirs.q_zero_point() == got.q_zero_point()
    assert_qclose(got, theirs)


@pytest.mark.parametrize("relu", [False, True])
def test_module_state_dict_script_roundtrip(relu, tmp_path):
    qm = _converted(relu)
    m = qm.conv
    x = qm.q1(torch.randn(1, 4, 5, 5))
    y = qm.q2(torch.randn(1, 6, 5, 5))
    out = m(x, y)
    cls = type(m)
    fresh = cls(4, 6, 3, padding=1)
    fresh.load_state_dict(m.state_dict())
    assert_qequal(fresh(x, y), out)
    assert_copies_match(m, (x, y), out, tmp_path)
    name = "ConvAddReLU2d" if relu else "ConvAdd2d"
    assert repr(fresh).startswith(f"Quantized{name}(4, 6, kernel_size=(3, 3), stride=(1, 1), ")
    with pytest.raises(ValueError, match=rf"qplugin.nn.intrinsic.{name}: expected a 4-D input"):
        m(x[0], y)
    with pytest.raises(TypeError, match=rf"qplugin.nn.{name}.from_float: expected"):
        cls.from_float(nn.Conv2d(4, 6, 3))


def test_mapping_entries():
    assert qq.DEFAULT_MODULE_MAPPING[nni.ConvAdd2d] is qnni.ConvAdd2d
    assert qq.DEFAULT_MODULE_MAPPING[nni.ConvAddReLU2d] is qnni.ConvAddReLU2d
