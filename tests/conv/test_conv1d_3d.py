"""conv1d / conv3d (+relu): parity with torch.ops.quantized and the exact reference, every ISA,
unpack shapes, bad inputs (PyTorch returns an empty tensor for conv3d with a too-large kernel)."""
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

C1 = [(2, 16, 32, 50, 3, 1, 1, 1, 1), (1, 17, 34, 33, 5, 2, 2, 2, 17), (4, 8, 12, 7, 1, 1, 0, 1, 2),
      (1, 3, 5, 9, 7, 3, 3, 1, 1)]
C3 = [(2, 4, 8, 9, 3, 1, 1, 1, 1), (1, 16, 16, 7, 3, 2, 1, 1, 16), (1, 6, 9, 6, 1, 1, 0, 1, 3),
      (1, 3, 5, 8, 3, 1, 2, 2, 1)]


@pytest.mark.parametrize("dim,case", [(1, c) for c in C1] + [(3, c) for c in C3])
@pytest.mark.parametrize("per_ch", [False, True])
def test_parity(isa, dim, case, per_ch):
    N, Cin, Cout, S, k, s, p, d, g = case
    x, w, b = make(dim, N, Cin, Cout, S, k, g, per_ch=per_ch)
    args = ([s] * dim, [p] * dim, [d] * dim, g)
    pq = getattr(torch.ops.qplugin, f"conv{dim}d_prepack")(w, b, *args)
    fn = getattr(F, f"conv{dim}d")
    for relu in (False, True):
        name = f"conv{dim}d" + ("_relu" if relu else "")
        y = getattr(torch.ops.qplugin, name)(x, pq, 0.05, 100)
        assert_close(y, exact(fn, x, w, b, 0.05, 100, relu, stride=s, padding=p, dilation=d,
                              groups=g))
        if g < Cin and not per_ch:
            pt = getattr(torch.ops.quantized, f"conv{dim}d_prepack")(w, b, *args)
            r = getattr(torch.ops.quantized, name)(x, pt, 0.05, 100)
            assert_close(y, r.int_repr().int())
            assert y.stride() == r.stride()
    wu, bu = getattr(torch.ops.qplugin, f"conv{dim}d_unpack")(pq)
    assert torch.equal(wu.int_repr(), w.int_repr())


def test_bad_inputs():
    x, w, b = make(3, 1, 4, 4, 3, 3, 1)
    pq = torch.ops.qplugin.conv3d_prepack(w, b, [1] * 3, [0] * 3, [1] * 3, 1)
    with pytest.raises(RuntimeError, match="kernel to fit"):
        torch.ops.qplugin.conv3d(x[:, :, :2], pq, 0.1, 0)
    with pytest.raises(RuntimeError, match="5-D input"):
        torch.ops.qplugin.conv3d(x[0], pq, 0.1, 0)
    x1, w1, b1 = make(1, 1, 4, 6, 9, 3, 1)
    with pytest.raises(RuntimeError, match="3-D weight"):
        torch.ops.qplugin.conv1d_prepack(w, b, [1], [0], [1], 1)
    pq1 = torch.ops.qplugin.conv1d_prepack(w1, b1, [1], [0], [1], 1)
    with pytest.raises(RuntimeError, match="3-D input"):
        torch.ops.qplugin.conv1d(x1.unsqueeze(2), pq1, 0.1, 0)
