"""torch.ops.qplugin.linear_leaky_relu / linear_tanh and qplugin.nn.intrinsic.LinearLeakyReLU /
LinearTanh.

Oracles: (1) the exact reference: float64 linear on the dequantized codes, the activation in
float64, quantized with the output qparams (round half to even) -> bit for bit; (2) PyTorch's
ops of the same name (onednn engine, the only one that has them) on reduce_range activations
(codes 0..127) and symmetric weights, where it is exact on AVX2 and AVX-512 machines alike
(docs/oracle.md: full-range activations saturate its AVX2 u8 x s8 kernels) -> within 1.
Every ISA (the op is ISA-independent: same bytes).
"""
import math

import pytest
import torch
import torch.ao.nn.intrinsic as nni
import torch.ao.quantization as tq
from torch import nn

import qplugin.quantization as qq
from qplugin.nn import intrinsic as qnni
from _reference import (assert_copies_match, assert_qclose, assert_qequal,  # noqa: E402
                        call_unmodified, dequantize64, quantize64, quantized_engine, weight64)

OPS = {"leaky": torch.ops.qplugin.linear_leaky_relu, "tanh": torch.ops.qplugin.linear_tanh}






def exact(kind, x, w, b, scale, zp, slope=0.0):
    v = dequantize64(x) @ weight64(w).T
    if b is not None:
        v = v + b.to(torch.float64)
    v = torch.where(v >= 0, v, v * slope) if kind == "leaky" else torch.tanh(v)
    return quantize64(v, scale, zp, torch.quint8)


def call(kind, x, p, scale, zp, slope=0.01):
    if kind == "leaky":
        return OPS[kind](x, p, scale, zp, slope)
    return OPS[kind](x, p, scale, zp)


def _x(shape, zp=None, lo=0, hi=255, scale=0.05, seed=0):
    g = torch.Generator().manual_seed(seed)
    codes = torch.randint(lo, hi + 1, shape, generator=g, dtype=torch.uint8)
    zp = (lo + hi) // 2 if zp is None else zp
    return torch._make_per_tensor_quantized_tensor(codes, scale, zp)


def _w(N, K, per_channel=False, zp=0, seed=1):
    g = torch.Generator().manual_seed(seed)
    codes = torch.randint(-128, 128, (N, K), generator=g, dtype=torch.int8)
    if per_channel:
        sc = torch.rand(N, generator=g, dtype=torch.float64) * 0.02 + 0.001
        return torch._make_per_channel_quantized_tensor(codes, sc, torch.full((N,), zp), 0)
    return torch._make_per_tensor_quantized_tensor(codes, 0.007, zp)


CASES = [  # (x shape, N, per_channel, weight zp, bias)
    ((4, 16), 8, False, 0, True),
    ((1, 3), 1, True, 0, False),
    ((2, 5, 33), 17, True, 3, True),
    ((7, 64), 65, False, -5, True),
    ((0, 8), 4, False, 0, True),
    ((3, 129), 2, True, 0, True),
]


@pytest.mark.parametrize("kind", ["leaky", "tanh"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_exact_reference_every_isa(isa, kind, case):
    shape, N, pc, wzp, has_b = CASES[case]
    x = _x(shape, seed=case)
    w = _w(N, shape[-1], pc, wzp, seed=case + 10)
    b = torch.randn(N, generator=torch.Generator().manual_seed(case)) if has_b else None
    p = torch.ops.qplugin.linear_prepack(w, b)
    # Output scale fine enough that the activation's shape matters (tanh in [-1, 1]).
    scale, zp = (0.01, 128) if kind == "tanh" else (0.05, 100)
    for slope in ((0.01, 0.5, -0.3, 2.0) if kind == "leaky" else (0.0,)):
        got = call_unmodified(call, kind, x, p, scale, zp, slope)
        assert got.dtype == torch.quint8 and got.is_contiguous()
        assert got.shape == (*shape[:-1], N)
        assert_qequal(got, exact(kind, x, w, b, scale, zp, slope), msg=f"{kind} slope={slope}")


@pytest.mark.parametrize("kind", ["leaky", "tanh"])
def test_strided_input(kind):
    x = _x((6, 40), seed=3)[:, ::2]  # non-contiguous, 20 features
    w = _w(5, 20, True)
    p = torch.ops.qplugin.linear_prepack(w, None)
    got = call(kind, x, p, 0.02, 120, 0.2)
    assert_qequal(got, exact(kind, x, w, None, 0.02, 120, 0.2))


@pytest.mark.parametrize("kind", ["leaky", "tanh"])
def test_output_clamps(kind):
    # Large outputs saturate at 0 / 255; tanh's +-1 lands on zp +- 1/scale = 128 +- 100.
    x = _x((8, 32), seed=5, scale=0.5)
    w = _w(16, 32, seed=6)
    p = torch.ops.qplugin.linear_prepack(w, None)
    got = call(kind, x, p, 0.01, 128, 0.1)
    assert_qequal(got, exact(kind, x, w, None, 0.01, 128, 0.1))
    codes = got.int_repr()
    if kind == "leaky":
        assert (codes == 255).any() and (codes == 0).any()
    else:
        assert (codes == 228).any() and (codes == 28).any()
        assert codes.min() >= 28 and codes.max() <= 228


@pytest.mark.parametrize("kind", ["leaky", "tanh"])
@pytest.mark.parametrize("seed", range(3))
def test_vs_pytorch_onednn(kind, seed):
    # reduce_range activations (codes 0..127) and symmetric weights: PyTorch's onednn path is
    # exact there on every CPU, so it is a fair second oracle.
    x = _x((9, 48), zp=60, lo=0, hi=127, scale=0.03, seed=seed)
    w = _w(24, 48, per_channel=seed % 2 == 1, seed=seed + 20)
    b = torch.randn(24, generator=torch.Generator().manual_seed(seed))
    scale, zp = (0.008, 128) if kind == "tanh" else (0.04, 90)
    ref = exact(kind, x, w, b, scale, zp, 0.125)
    with quantized_engine("onednn"):
        tp = torch.ops.quantized.linear_prepack(w, b)
        theirs = (torch.ops.quantized.linear_leaky_relu(x, tp, scale, zp, 0.125) if kind == "leaky"
                  else torch.ops.quantized.linear_tanh(x, tp, scale, zp))
    ours = call(kind, x, torch.ops.qplugin.linear_prepack(w, b), scale, zp, 0.125)
    assert_qequal(ours, ref)
    # Only where torch itself is within 1 of the exact reference is it used as the oracle.
    assert_qclose(theirs, ref)
    assert_qclose(ours, theirs)


# ---------------------------------------------------------------------------------------------
# Rounding boundaries and non-finite values. The kernel decides most elements in a vectorized
# pass (tanh by its own exp with an error bound) and hands the ones it cannot vouch for (within
# the bound of a rounding boundary; non-finite) to std::tanh / the scalar rounding. These cases
# sit exactly there: x = one code above its zero point with scale 1, weight codes 1 with
# per-channel scales w_s[n], no bias -> v[n] = 1 * (1.0 * w_s[n]) + 0 = w_s[n] exactly, so the
# test controls v to the last bit. The expected bytes use Python's math.tanh (the C library's
# tanh, which the op's exact path calls) and round() (half to even): every decision must match.


def _ulps(v, n):
    out, a, b = [v], v, v
    for _ in range(n):
        a, b = math.nextafter(a, -math.inf), math.nextafter(b, math.inf)
        out += [a, b]
    return out


def _q(w, s, zp):
    if math.isnan(w):
        return zp
    r = w / s
    if math.isinf(r):
        return 255 if r > 0 else 0
    return max(0, min(255, round(r) + zp))


def _boundary_op(kind, vs, s, zp, slope):
    N = len(vs)
    x = torch._make_per_tensor_quantized_tensor(torch.ones(3, 1, dtype=torch.uint8), 1.0, 0)
    w = torch._make_per_channel_quantized_tensor(
        torch.ones(N, 1, dtype=torch.int8), torch.tensor(vs, dtype=torch.float64),
        torch.zeros(N, dtype=torch.int64), 0)
    got = call(kind, x, torch.ops.qplugin.linear_prepack(w, None), s, zp, slope)
    act = math.tanh if kind == "tanh" else (lambda v: v if v >= 0 else v * slope)
    want = torch.tensor([_q(act(v), s, zp) for v in vs], dtype=torch.uint8).expand(3, N)
    return got.int_repr(), want


@pytest.mark.parametrize("kind", ["leaky", "tanh"])
def test_rounding_boundaries_every_isa(isa, kind):
    s, zp, slope = 0.5, 128, 0.25
    vs = []
    for k in (-3, -2, -1, 0, 1, 2):
        t = (k + 0.5) * s  # a rounding boundary of the output
        if kind == "tanh":
            if abs(t) >= 1:
                continue
            center = math.atanh(t)
        else:
            center = t if t >= 0 else t / slope
        vs += _ulps(center, 24)  # within ~1e-14 of the boundary: the exact path decides
        vs += [center + j * 1e-12 for j in range(-40, 41, 3)]  # around the fast path's margin
    vs = [v for v in vs if v > 0]  # per-channel scales must be positive
    got, want = _boundary_op(kind, vs, s, zp, slope)
    # The cases straddle boundaries: both neighbouring codes occur (else they test nothing).
    assert len(set(want[0].tolist())) >= 3
    assert torch.equal(got, want), (got != want).nonzero()[:5]


@pytest.mark.parametrize("kind", ["leaky", "tanh"])
def test_negative_and_non_finite_values_every_isa(isa, kind):
    # Negative v through a negative weight code; NaN / inf through the bias.
    s, zp, slope = 0.02, 100, 0.5
    x = torch._make_per_tensor_quantized_tensor(torch.full((2, 1), 3, dtype=torch.uint8), 0.5, 1)
    w = torch._make_per_tensor_quantized_tensor(
        torch.tensor([[-7], [5], [1], [1], [1], [0]], dtype=torch.int8), 0.25, 0)
    b = torch.tensor([0.1, -0.3, math.nan, math.inf, -math.inf, 1e30])
    got = call(kind, x, torch.ops.qplugin.linear_prepack(w, b), s, zp, slope).int_repr()
    act = math.tanh if kind == "tanh" else (lambda v: v if v >= 0 else v * slope)
    acc = [(3 - 1) * c for c in (-7, 5, 1, 1, 1, 0)]
    vs = [a * (0.5 * 0.25) + float(bb) for a, bb in zip(acc, b.tolist())]
    want = torch.tensor([_q(act(v), s, zp) for v in vs], dtype=torch.uint8).expand(2, 6)
    assert torch.equal(got, want), (got, want)


BAD = [
    (lambda p: (torch.rand(2, 16), p, 0.1, 0), r"expected input to be a quantized tensor"),
    (lambda p: (torch.quantize_per_tensor(torch.rand(2, 16), 0.1, 0, torch.qint8), p, 0.1, 0),
     r"expected input of dtype QUInt8, got QInt8"),
    (lambda p: (_x((2, 15)), p, 0.1, 0), r"expected input with in_features = 16 .* got 15"),
    (lambda p: (_x((16,)), p, 0.1, 0), r"expected input of rank >= 2 .* got 1-D"),
    (lambda p: (_x((2, 16)), p, 0.0, 0), r"expected a finite, positive output_scale, got 0"),
    (lambda p: (_x((2, 16)), p, -1.0, 0), r"expected a finite, positive output_scale, got -1"),
    (lambda p: (_x((2, 16)), p, float("nan"), 0), r"expected a finite, positive output_scale"),
    (lambda p: (_x((2, 16)), p, 0.1, 256), r"expected output_zero_point in \[0, 255\] .* got 256"),
    (lambda p: (_x((2, 16)), p, 0.1, -1), r"expected output_zero_point in \[0, 255\] .* got -1"),
]


@pytest.mark.parametrize("kind", ["leaky", "tanh"])
@pytest.mark.parametrize("i", range(len(BAD)))
def test_bad_inputs(kind, i):
    p = torch.ops.qplugin.linear_prepack(_w(4, 16), None)
    make, pattern = BAD[i]
    name = "linear_leaky_relu" if kind == "leaky" else "linear_tanh"
    with pytest.raises(RuntimeError, match=rf"qplugin::{name}: {pattern}"):
        call(kind, *make(p))


def test_bad_negative_slope():
    p = torch.ops.qplugin.linear_prepack(_w(4, 16), None)
    for s in (float("nan"), float("inf")):
        with pytest.raises(RuntimeError, match=r"qplugin::linear_leaky_relu: expected a finite "
                                               r"negative_slope, got"):
            torch.ops.qplugin.linear_leaky_relu(_x((2, 16)), p, 0.1, 0, s)


# ---------------------------------------------------------------------------------------------
# Modules


class _Net(nn.Module):
    def __init__(self, fused):
        super().__init__()
        self.quant = tq.QuantStub()
        self.fc = fused
        self.dequant = tq.DeQuantStub()

    def forward(self, x):
        return self.dequant(self.fc(self.quant(x)))


def _converted(kind, per_channel=True, torch_convert=False):
    torch.manual_seed(0)
    lin = nn.Linear(12, 6)
    fused = (nni.LinearLeakyReLU(lin, nn.LeakyReLU(0.2)) if kind == "leaky"
             else nni.LinearTanh(lin, nn.Tanh()))
    m = _Net(fused).eval()
    m.qconfig = tq.get_default_qconfig("x86") if per_channel else tq.default_qconfig
    tq.prepare(m, inplace=True, allow_list=qq.get_default_qconfig_propagation_list())
    for _ in range(4):
        m(torch.randn(16, 12) * 2)
    if torch_convert:
        with quantized_engine("onednn"):
            return tq.convert(m)
    return qq.convert(m)


@pytest.mark.parametrize("kind", ["leaky", "tanh"])
def test_module_from_float_through_convert(kind):
    qm = _converted(kind)
    cls = qnni.LinearLeakyReLU if kind == "leaky" else qnni.LinearTanh
    assert type(qm.fc) is cls
    if kind == "leaky":
        assert qm.fc.negative_slope == 0.2
    x = torch.randn(5, 12)
    qx = qm.quant(x)
    got = qm.fc(qx)
    ref = exact(kind, qx, qm.fc.weight(), qm.fc.bias(), qm.fc.scale, qm.fc.zero_point, 0.2)
    assert_qequal(got, ref)
    # torch.ao's own conversion (onednn engine; the x86 qconfig's reduce_range keeps it exact).
    tm = _converted(kind, torch_convert=True)
    with quantized_engine("onednn"):
        theirs = tm.fc(tm.quant(x))
    assert theirs.q_scale() == got.q_scale() and theirs.q_zero_point() == got.q_zero_point()
    assert_qclose(got, theirs)


@pytest.mark.parametrize("kind", ["leaky", "tanh"])
def test_module_from_float_rejects(kind):
    cls = qnni.LinearLeakyReLU if kind == "leaky" else qnni.LinearTanh
    lin = nn.Linear(4, 3)
    with pytest.raises(TypeError, match=rf"qplugin.nn.{cls.__name__}.from_float: expected"):
        cls.from_float(nni.LinearReLU(lin, nn.ReLU()))
    fused = (nni.LinearLeakyReLU(lin, nn.LeakyReLU(0.2)) if kind == "leaky"
             else nni.LinearTanh(lin, nn.Tanh()))
    with pytest.raises(ValueError, match="expected a module with a qconfig"):
        cls.from_float(fused)


@pytest.mark.parametrize("kind", ["leaky", "tanh"])
def test_module_state_dict_script_roundtrip(kind, tmp_path):
    qm = _converted(kind)
    m = qm.fc
    x = qm.quant(torch.randn(3, 12))
    y = m(x)
    cls = type(m)
    fresh = cls(12, 6, 0.2) if kind == "leaky" else cls(12, 6)
    fresh.load_state_dict(m.state_dict())
    assert_qequal(fresh(x), y)
    assert fresh.scale == m.scale and fresh.zero_point == m.zero_point
    assert_copies_match(m, (x,), y, tmp_path)


def test_module_repr_and_ctor():
    m = qnni.LinearLeakyReLU(4, 3, 0.25)
    assert repr(m) == ("QuantizedLinearLeakyReLU(in_features=4, out_features=3, scale=1.0, "
                       "zero_point=0, qscheme=torch.per_tensor_affine, negative_slope=0.25)")
    t = qnni.LinearTanh(4, 3, bias=False)
    assert repr(t) == ("QuantizedLinearTanh(in_features=4, out_features=3, scale=1.0, "
                       "zero_point=0, qscheme=torch.per_tensor_affine)")
    assert t.bias() is None
    assert type(m).__module__ == "qplugin.nn.intrinsic.modules.linear_relu"


def test_module_from_reference():
    from torch.ao.nn.quantized.reference import Linear as RefLinear
    lin = nn.Linear(6, 4)
    qparams = {"qscheme": torch.per_tensor_affine, "dtype": torch.qint8, "scale": 0.01,
               "zero_point": 0}
    ref = nn.Sequential(RefLinear.from_float(lin, qparams), nn.LeakyReLU(0.3))
    m = qnni.LinearLeakyReLU.from_reference(ref, 0.05, 7)
    assert m.negative_slope == pytest.approx(0.3) and m.scale == 0.05 and m.zero_point == 7
    torch.testing.assert_close(m.bias(), lin.bias.detach())
    t = qnni.LinearTanh.from_reference(nn.Sequential(RefLinear.from_float(lin, qparams),
                                                     nn.Tanh()), 0.01, 128)
    assert torch.equal(t.weight().int_repr(), m.weight().int_repr())


def test_mapping_entries():
    assert qq.DEFAULT_MODULE_MAPPING[nni.LinearLeakyReLU] is qnni.LinearLeakyReLU
    assert qq.DEFAULT_MODULE_MAPPING[nni.LinearTanh] is qnni.LinearTanh


@pytest.mark.parametrize("kind", ["leaky", "tanh"])
def test_large_k_extremes_every_isa(isa, kind):
    # K = 40000 (> the kernels' 16384-k int32 blocks, not a multiple of 64) with extreme codes:
    # activations 0/255 around zero point 0 or 255 and weights -128/127 with zero points
    # 0 / -128 / 127, so |(x - zx)(w - zw)| reaches 255 * 255.
    K, M, N = 40000, 5, 3
    g = torch.Generator().manual_seed(7)
    xc = (torch.randint(0, 2, (M, K), generator=g) * 255).to(torch.uint8)
    wc = torch.where(torch.randint(0, 2, (N, K), generator=g) == 1, 127, -128).to(torch.int8)
    # Row 0 x column 0 with zx=255, zw=-128: 40000 * (-255) * 255 = -2.6e9, past int32.
    xc[0] = 0
    wc[0] = 127
    for zx, zw in ((0, 0), (255, -128), (0, 127)):
        x = torch._make_per_tensor_quantized_tensor(xc, 1e-5, zx)
        w = torch._make_per_channel_quantized_tensor(wc, torch.tensor([1e-5, 2e-5, 5e-6],
                                                                      dtype=torch.float64),
                                                     torch.full((N,), zw), 0)
        p = torch.ops.qplugin.linear_prepack(w, torch.tensor([0.5, -0.5, 0.0]))
        got = call(kind, x, p, 0.02, 128, 0.25)
        assert_qequal(got, exact(kind, x, w, torch.tensor([0.5, -0.5, 0.0]), 0.02, 128, 0.25),
                      msg=f"zx={zx} zw={zw}")
