"""Depthwise conv (groups == C_in, channel multipliers): exact float64 reference (PyTorch x86
depthwise is wrong for some inputs: e.g. C=144 or weight zero point 5 gives errors up to 12 units,
reproduced in this file), PyTorch parity on small-range inputs, every ISA byte-identical."""
import os
import sys

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))

import warnings  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import qplugin  # noqa: E402,F401

warnings.filterwarnings("ignore", message=".*quantiz.*deprecated.*")
torch.backends.quantized.engine = "x86"
START_ISA = torch.ops.qplugin._cpu_isa()
ISAS = ["scalar", "avx2", "avx512vnni"]


@pytest.fixture(params=ISAS)
def isa(request):
    got = torch.ops.qplugin._set_cpu_isa(request.param)
    if got != request.param:
        torch.ops.qplugin._set_cpu_isa(START_ISA)
        pytest.skip(f"this CPU has no {request.param}")
    yield request.param
    torch.ops.qplugin._set_cpu_isa(START_ISA)


def make(dim, N, Cin, Cout, S, k, groups, xzp=128, per_ch=False, wzp=0, transpose=False, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.quantize_per_tensor(torch.rand(N, Cin, *([S] * dim), generator=g) * 2, 0.02, xzp,
                                  torch.quint8)
    wshape = (Cin, Cout // groups) if transpose else (Cout, Cin // groups)
    wf = torch.randn(*wshape, *([k] * dim), generator=g) * 0.1
    axis = 1 if transpose else 0
    if per_ch:
        n = wshape[axis]
        w = torch.quantize_per_channel(wf, torch.rand(n, generator=g, dtype=torch.double) * 0.002
                                       + 0.001, torch.randint(-3, 4, (n,), generator=g), axis,
                                       torch.qint8)
    else:
        w = torch.quantize_per_tensor(wf, 0.002, wzp, torch.qint8)
    b = torch.randn(Cout, generator=g)
    return x, w, b


def exact(fn, x, w, b, osc, ozp, relu=False, **kw):
    """float64 op on dequantized inputs, quantized with round half to even (the exact oracle)."""
    y = fn(x.dequantize().double(), w.dequantize().double(), b.double(), **kw)
    q = torch.round(y / osc) + ozp
    if relu:
        q = torch.clamp(q, min=ozp)
    return torch.clamp(q, 0, 255).to(torch.int32)


def assert_close(y, ref_int, tol=1, min_equal=0.99):
    yi = y.int_repr().to(torch.int32)
    assert tuple(yi.shape) == tuple(ref_int.shape)
    d = (yi - ref_int).abs()
    assert d.numel() == 0 or d.max().item() <= tol, f"max diff {d.max().item()}"
    if d.numel():
        assert (d == 0).float().mean().item() >= min_equal, f"equal {(d == 0).float().mean()}"

# (N, C, mult, S, k, stride, pad, dil)
CASES = [(1, 144, 1, 14, 3, 1, 1, 1), (2, 17, 1, 9, 3, 2, 1, 1), (1, 63, 1, 12, 5, 1, 2, 1),
         (1, 64, 1, 11, 5, 2, 2, 1), (4, 3, 1, 8, 3, 1, 2, 2), (1, 8, 3, 9, 3, 1, 1, 1),
         (1, 16, 2, 7, 7, 1, 3, 1), (1, 33, 1, 8, 3, 3, 0, 3), (1, 80, 1, 5, 1, 1, 0, 1)]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("wq", ["pt0", "pt5", "pc"])
@pytest.mark.parametrize("xzp", [0, 255])
def test_depthwise_exact_every_isa(isa, case, wq, xzp):
    N, C, m, S, k, s, p, d = case
    x, w, b = make(2, N, C, C * m, S, k, C, xzp=xzp, per_ch=wq == "pc", wzp=5 if wq == "pt5"
                   else 0)
    pq = torch.ops.qplugin.conv2d_prepack(w, b, [s, s], [p, p], [d, d], C)
    if S + 2 * p >= d * (k - 1) + 1:
        assert "dwconv" in pq.kernel()
        y = torch.ops.qplugin.conv2d_relu(x, pq, 0.05, 100)
        assert_close(y, exact(F.conv2d, x, w, b, 0.05, 100, True, stride=s, padding=p,
                              dilation=d, groups=C))
        torch.ops.qplugin._set_cpu_isa("scalar")
        ys = torch.ops.qplugin.conv2d_relu(
            x, torch.ops.qplugin.conv2d_prepack(w, b, [s, s], [p, p], [d, d], C), 0.05, 100)
        assert torch.equal(y.int_repr(), ys.int_repr())


@pytest.mark.parametrize("case", CASES)
def test_depthwise_vs_torch_small_range(case):
    N, C, m, S, k, s, p, d = case
    g = torch.Generator().manual_seed(1)
    # Small codes: PyTorch's depthwise kernel stays exact here.
    x = torch.quantize_per_tensor(torch.rand(N, C, S, S, generator=g) * 0.5, 0.02, 0,
                                  torch.quint8)
    w = torch.quantize_per_tensor(torch.randn(C * m, 1, k, k, generator=g) * 0.02, 0.002, 0,
                                  torch.qint8)
    b = torch.randn(C * m, generator=g)
    args = ([s, s], [p, p], [d, d], C)
    y = torch.ops.qplugin.conv2d(x, torch.ops.qplugin.conv2d_prepack(w, b, *args), 0.05, 100)
    r = torch.ops.quantized.conv2d(x, torch.ops.quantized.conv2d_prepack(w, b, *args), 0.05, 100)
    assert_close(y, r.int_repr().int())


def test_torch_depthwise_is_wrong_here():
    """Documents the oracle bug (so the exact reference is the one to trust above)."""
    x, w, b = make(2, 1, 16, 16, 14, 3, 16, wzp=5)
    args = ([1, 1], [1, 1], [1, 1], 16)
    r = torch.ops.quantized.conv2d(x, torch.ops.quantized.conv2d_prepack(w, b, *args), 0.05, 100)
    e = exact(F.conv2d, x, w, b, 0.05, 100, padding=1, groups=16)
    y = torch.ops.qplugin.conv2d(x, torch.ops.qplugin.conv2d_prepack(w, b, *args), 0.05, 100)
    assert torch.equal(y.int_repr().int(), e)
    if torch.equal(r.int_repr().int(), e):
        pytest.skip("PyTorch's depthwise is right on this input (fixed upstream?)")
