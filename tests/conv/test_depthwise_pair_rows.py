"""Depthwise 3x3 and 5x5 (dilation_w 1) on the avx2 tier: rows_pairs
(kernels/conv/dwconv_avx2.cpp) rearranges each input row once into pair rows, from channels-last
rows or, for NCHW input (3x3), from the C planes directly (8 x 8 dword transposes in groups of 8
or 16 entries, the last group overlapping the one before, the padding's entries one by one).
Widths with no whole group, one, and an overlapping last one; strides 1, 2 (even entries only)
and 3; pads 0-2; dilation_h 1, 2, 3 and 5 (3 and 5 share a factor with a kernel height: no ring
slot by ih % KH); channel counts below, at and past the 8-channel block; weight zero
points other than 0 (NCHW now reads in place with them too); the epilogue with the saturating
packs (no ReLU, whole uint8 range) and with the explicit clamp (ReLU, a high output zero point);
gains that saturate most outputs (beyond int16 before the packs: this caught the avx512vnni 3x3
kernel's VPACKUSDW narrowing, which gave 0 for 255). Every ISA: the NCHW and the channels-last
input give the same bytes, the same as the scalar tier's, and within one unit of the exact
reference."""
from _conv_common import F, assert_qclose, exact, make, pytest, torch
from _reference import using_threads  # tests/ is on sys.path (conftest.py)

# (C, W, stride, pad)
SHAPES = [(1, 1, 1, 1), (5, 3, 1, 0), (8, 5, 2, 1), (13, 16, 1, 1), (24, 17, 1, 1),
          (40, 18, 1, 0), (9, 33, 2, 1), (16, 40, 2, 2), (7, 37, 3, 1), (24, 20, 1, 2),
          (17, 34, 2, 0), (3, 2, 2, 2)]


def _run(x, w, b, s, p, dh, C, osc, ozp, relu):
    pq = torch.ops.qplugin.conv2d_prepack(w, b, [s, s], [p, p], [dh, 1], C)
    op = torch.ops.qplugin.conv2d_relu if relu else torch.ops.qplugin.conv2d
    return pq, op(x, pq, osc, ozp)


@pytest.mark.parametrize("C,W,s,p", SHAPES)
@pytest.mark.parametrize("dh", [1, 2, 3, 5])
@pytest.mark.parametrize("mode", ["sat", "relu", "gain"])
@pytest.mark.parametrize("k", [3, 5])
def test_pair_rows(isa, C, W, s, p, dh, mode, k):
    if W + 2 * p < k:
        pytest.skip("no output column")
    H = (k - 1) * dh + 3
    per_ch = mode != "gain"
    _, w, b = make(2, 2, C, C, H, k, C, per_ch=per_ch, seed=C * 7 + W)
    # Codes over the whole uint8 range (x_zp 0) or [37, 255].
    g = torch.Generator().manual_seed(W)
    x = torch.quantize_per_tensor(torch.rand(2, C, H, W, generator=g) * 5.1, 0.02,
                                  37 if mode == "relu" else 0, torch.quint8)
    osc, ozp, relu = {"sat": (0.05, 100, False), "relu": (0.05, 200, True),
                      "gain": (0.00002, 128, False)}[mode]
    assert x.is_contiguous()
    x_before = x.int_repr().clone()
    pq, y = _run(x, w, b, s, p, dh, C, osc, ozp, relu)
    assert torch.equal(x.int_repr(), x_before)
    y_cl = (torch.ops.qplugin.conv2d_relu if relu else torch.ops.qplugin.conv2d)(
        x.contiguous(memory_format=torch.channels_last), pq, osc, ozp)
    assert torch.equal(y.int_repr(), y_cl.int_repr()), "NCHW and channels-last input differ"
    ref = exact(F.conv2d, x, w, b, osc, ozp, relu, stride=s, padding=p, dilation=(dh, 1),
                groups=C)
    assert_qclose(y, ref)
    if mode == "gain":
        codes = y.int_repr()
        assert ((codes == 0) | (codes == 255)).float().mean() > 0.5, "the case saturates"
    torch.ops.qplugin._set_cpu_isa("scalar")
    _, ys = _run(x, w, b, s, p, dh, C, osc, ozp, relu)
    assert torch.equal(y.int_repr(), ys.int_repr())


@pytest.mark.parametrize("nchw", [True, False])
def test_pair_rows_3d_and_threads(isa, nchw):
    """A 1x3x3 depthwise conv3d (rows keyed by depth plane and row) and a batch split across
    threads: the same bytes on 1 and 2 threads and as the scalar tier."""
    g = torch.Generator().manual_seed(5)
    C = 20
    x = torch.quantize_per_tensor(torch.rand(2, C, 3, 21, 26, generator=g) * 5, 0.02, 3,
                                  torch.quint8)
    w = torch.quantize_per_channel(torch.randn(C, 1, 1, 3, 3, generator=g) * 0.1,
                                   torch.rand(C, generator=g, dtype=torch.double) * 0.002 + 0.001,
                                   torch.randint(-3, 4, (C,), generator=g), 0, torch.qint8)
    b = torch.randn(C, generator=g)
    if not nchw:
        x = x.contiguous(memory_format=torch.channels_last_3d)
    args = ([1, 2, 1], [1, 1, 1], [1, 1, 1], C)
    pq = torch.ops.qplugin.conv3d_prepack(w, b, *args)
    with using_threads(1):
        y1 = torch.ops.qplugin.conv3d(x, pq, 0.03, 90)
    with using_threads(2):
        y2 = torch.ops.qplugin.conv3d(x, pq, 0.03, 90)
    assert torch.equal(y1.int_repr(), y2.int_repr())
    assert_qclose(y1, exact(F.conv3d, x, w, b, 0.03, 90, stride=[1, 2, 1], padding=1, groups=C))
    torch.ops.qplugin._set_cpu_isa("scalar")
    ys = torch.ops.qplugin.conv3d(x, torch.ops.qplugin.conv3d_prepack(w, b, *args), 0.03, 90)
    assert torch.equal(y1.int_repr(), ys.int_repr())
