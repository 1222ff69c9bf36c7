"""conv_transpose1d/2d/3d: against the exact float64 reference only (PyTorch x86 quantized
conv_transpose is wrong when in != out channels and, with fbgemm, for kernel == stride == 2 —
TORCH_ORACLE_NOTES.md), plus PyTorch parity in its correct configuration (equal channels, k3)."""
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

# (dim, N, Cin, Cout, S, k, stride, pad, out_pad, dil, groups)
CASES = [(2, 1, 128, 64, 12, 2, 2, 0, 0, 1, 1), (2, 1, 16, 16, 14, 4, 2, 1, 0, 1, 1),
         (2, 2, 8, 6, 7, 3, 3, 1, 2, 2, 2), (1, 2, 8, 6, 7, 3, 2, 1, 1, 1, 2),
         (3, 1, 4, 6, 5, 3, 2, 1, 1, 1, 1), (2, 1, 4, 6, 5, 1, 3, 0, 0, 1, 1),
         (2, 4, 17, 3, 5, 5, 1, 2, 0, 1, 1), (1, 1, 6, 9, 8, 3, 1, 0, 0, 3, 3)]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("per_ch", [False, True])
def test_exact(isa, case, per_ch):
    dim, N, Cin, Cout, S, k, s, p, op, d, g = case
    x, w, b = make(dim, N, Cin, Cout, S, k, g, per_ch=per_ch, transpose=True, wzp=0)
    pq = getattr(torch.ops.qplugin, f"conv_transpose{dim}d_prepack")(
        w, b, [s] * dim, [p] * dim, [op] * dim, [d] * dim, g)
    assert pq.transpose() and pq.output_padding() == ([0, op] if dim == 1 else [op] * dim)
    y = getattr(torch.ops.qplugin, f"conv_transpose{dim}d")(x, pq, 0.05, 100)
    fn = getattr(F, f"conv_transpose{dim}d")
    assert_close(y, exact(fn, x, w, b, 0.05, 100, stride=s, padding=p, output_padding=op,
                          groups=g, dilation=d), tol=1, min_equal=0.99)
    wu, _ = getattr(torch.ops.qplugin, f"conv_transpose{dim}d_unpack")(pq)
    assert torch.equal(wu.int_repr(), w.int_repr())


def test_vs_torch_where_torch_is_right():
    x, w, b = make(2, 1, 16, 16, 10, 3, 1, transpose=True)
    args = ([2, 2], [1, 1], [1, 1], [1, 1], 1)
    y = torch.ops.qplugin.conv_transpose2d(
        x, torch.ops.qplugin.conv_transpose2d_prepack(w, b, *args), 0.05, 100)
    r = torch.ops.quantized.conv_transpose2d(
        x, torch.ops.quantized.conv_transpose2d_prepack(w, b, *args), 0.05, 100)
    assert_close(y, r.int_repr().int())


def test_bad_inputs():
    x, w, b = make(2, 1, 4, 6, 5, 3, 1, transpose=True)
    with pytest.raises(RuntimeError, match="output_padding smaller"):
        torch.ops.qplugin.conv_transpose2d_prepack(w, b, [2, 2], [0, 0], [2, 2], [1, 1], 1)
    with pytest.raises(RuntimeError, match="in_channels .* divisible"):
        torch.ops.qplugin.conv_transpose2d_prepack(w, b, [1, 1], [0, 0], [0, 0], [1, 1], 3)
    pq = torch.ops.qplugin.conv2d_prepack(
        torch.quantize_per_tensor(torch.randn(6, 4, 3, 3), 0.1, 0, torch.qint8), None,
        [1, 1], [0, 0], [1, 1], 1)
    with pytest.raises(RuntimeError, match="transposed conv"):
        torch.ops.qplugin.conv_transpose2d(x, pq, 0.1, 0)
