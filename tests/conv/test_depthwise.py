"""Depthwise conv (groups == C_in, channel multipliers): exact float64 reference (PyTorch x86
depthwise is wrong for some inputs: e.g. C=144 or weight zero point 5 gives errors up to 12 units,
reproduced in this file), PyTorch parity on small-range inputs, every ISA byte-identical."""
from _conv_common import (  # noqa: E402,F401  (tests/conv/_conv_common.py)
    ISAS, START_ISA, F, assert_qclose, exact, make, pytest, qplugin, torch, warnings)

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
    assert S + 2 * p >= d * (k - 1) + 1, "every case has a non-empty output"
    pq = torch.ops.qplugin.conv2d_prepack(w, b, [s, s], [p, p], [d, d], C)
    assert "dwconv" in pq.kernel()
    y = torch.ops.qplugin.conv2d_relu(x, pq, 0.05, 100)
    assert_qclose(y, exact(F.conv2d, x, w, b, 0.05, 100, True, stride=s, padding=p,
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
    assert_qclose(y, r.int_repr().int())


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


# Strided 3x3 on channels-last input: the avx512vnni kernel rearranges each input row's three-tap
# windows per 16-channel block, for full blocks with one VPERMB (when the CPU has VBMI) over the
# outputs whose taps lie inside the row, the edges and partial blocks the general way. Widths
# where that inner range is empty, one pixel, or all but the edges; pads 0-2; strides 2 and 3;
# 96 channels (whole blocks) and 40 (two blocks and a partial one).
@pytest.mark.parametrize("C", [96, 40])
@pytest.mark.parametrize("S,s,p", [(3, 2, 0), (4, 2, 1), (5, 2, 1), (9, 2, 2), (12, 2, 1),
                                   (13, 3, 1), (8, 3, 0)])
def test_depthwise_strided_channels_last(isa, C, S, s, p):
    x, w, b = make(2, 2, C, C, S, 3, C, xzp=7)
    x = x.contiguous(memory_format=torch.channels_last)
    pq = torch.ops.qplugin.conv2d_prepack(w, b, [s, s], [p, p], [1, 1], C)
    y = torch.ops.qplugin.conv2d(x, pq, 0.05, 100)
    assert_qclose(y, exact(F.conv2d, x, w, b, 0.05, 100, stride=s, padding=p, groups=C))
