"""Depthwise 5x5 on the avx512vnni tier with symmetric weights (every weight zero point 0, what
torch.ao's observers give): rows_quads<5> (kernels/conv/dwconv_avx512vnni.cpp) rearranges each
input row once into 4-pixel windows (dword i = X[iw .. iw + 3][c]) and multiplies each kernel
row with two VPDPBUSD, taps 0..3 on the window of the output and tap 4 on the window 4 / stride_w
entries further (only its first byte meets a non-zero weight). Channel counts around the
16-channel blocks, widths below and around the kernel, strides 1 and 2 (3 takes the generic
kernel), pads 0..3 (windows partly or wholly in the padding), extreme codes and weights (-128,
127, 255 against them), input zero points 0, 47 and 255, the saturating and the clamping
epilogue, several images, two threads. Every ISA gives the scalar tier's bytes, within one unit
of the exact reference."""
from _conv_common import F, assert_qclose, exact, pytest, torch
from _reference import using_threads  # tests/ is on sys.path (conftest.py)

# (C, H, W, stride, pad)
SHAPES = [(1, 5, 5, 1, 2), (15, 6, 7, 1, 2), (16, 7, 7, 1, 2), (17, 9, 11, 2, 2),
          (33, 8, 13, 2, 1), (72, 12, 12, 2, 2), (24, 5, 4, 1, 3), (20, 10, 9, 1, 0),
          (48, 7, 7, 3, 2), (40, 3, 6, 2, 3)]


def _inputs(N, C, H, W, xzp, seed):
    g = torch.Generator().manual_seed(seed)
    codes = torch.randint(0, 256, (N, C, H, W), generator=g)
    pick = torch.rand(N, C, H, W, generator=g)
    codes[pick < 0.2] = 0
    codes[pick > 0.8] = 255
    x = torch._make_per_tensor_quantized_tensor(codes.to(torch.uint8), 0.02, xzp)
    wi = torch.randint(-128, 128, (C, 1, 5, 5), generator=g)
    sel = torch.rand(C, 1, 5, 5, generator=g)
    wi[sel < 0.2] = -128
    wi[sel > 0.8] = 127
    sc = torch.rand(C, generator=g, dtype=torch.double) * 0.002 + 0.001
    w = torch._make_per_channel_quantized_tensor(wi.to(torch.int8), sc,
                                                 torch.zeros(C, dtype=torch.long), 0)
    b = torch.randn(C, generator=g) * 3
    return x, w, b


def _conv(x, w, b, s, p, relu, osc, ozp):
    C = w.shape[0]
    pq = torch.ops.qplugin.conv2d_prepack(w, b, [s, s], [p, p], [1, 1], C)
    op = torch.ops.qplugin.conv2d_relu if relu else torch.ops.qplugin.conv2d
    return op(x, pq, osc, ozp)


@pytest.mark.parametrize("C,H,W,s,p", SHAPES)
@pytest.mark.parametrize("xzp", [0, 47, 255])
@pytest.mark.parametrize("mode", ["sat", "relu"])
def test_5x5_quads(isa, C, H, W, s, p, xzp, mode):
    if W + 2 * p < 5 or H + 2 * p < 5:
        pytest.skip("no output")
    x, w, b = _inputs(2, C, H, W, xzp, seed=C * 31 + W + xzp)
    x = x.contiguous(memory_format=torch.channels_last)
    osc, ozp, relu = {"sat": (0.05, 100, False), "relu": (0.05, 200, True)}[mode]
    before = x.int_repr().clone()
    y = _conv(x, w, b, s, p, relu, osc, ozp)
    assert torch.equal(x.int_repr(), before)
    ref = exact(F.conv2d, x, w, b, osc, ozp, relu, stride=s, padding=p, groups=C)
    assert_qclose(y, ref)
    torch.ops.qplugin._set_cpu_isa("scalar")
    ys = _conv(x, w, b, s, p, relu, osc, ozp)
    assert torch.equal(y.int_repr(), ys.int_repr())


def test_5x5_quads_threads_and_nchw(isa):
    """Two threads split the output rows (each builds its own ring); NCHW input (converted to
    channels-last first for this filter) gives the same bytes."""
    x, w, b = _inputs(3, 40, 14, 14, 47, seed=3)
    xc = x.contiguous(memory_format=torch.channels_last)
    y1 = _conv(xc, w, b, 2, 2, False, 0.05, 100)
    with using_threads(2):
        y2 = _conv(xc, w, b, 2, 2, False, 0.05, 100)
    y3 = _conv(x, w, b, 2, 2, False, 0.05, 100)
    assert torch.equal(y1.int_repr(), y2.int_repr())
    assert torch.equal(y1.int_repr(), y3.int_repr())
    assert_qclose(y1, exact(F.conv2d, x, w, b, 0.05, 100, False, stride=2, padding=2, groups=40))
