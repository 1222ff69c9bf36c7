"""The padding-skipping implicit GEMM (driver/conv_gemm.cpp run_igemm_skip, QGemmKernels::igemm;
AVX2 and AVX512-VNNI): output pixels grouped by the taps that land inside the input, each group reading
only those taps and subtracting the input zero point times exactly their weight sums. Byte for
byte against the scalar ISA (im2col over the zero-point-padded input) and within 1 unit of the
exact float64 oracle, on the shapes where the grouping can go wrong: padding wider than the
kernel's reach (outputs with no tap inside: the bias alone), asymmetric reach (pad 2 with a 3x3),
strides and dilation_h that give every border position its own group, a 1x1 kernel with padding,
conv3d with padded depth planes, several images per group, more than one 64-column panel, zero
points 0 / 37 / 255 (the zero-point term is the part the skipping changes), ReLU, the exact
int32 path of conv2d_add, and two threads.
"""
from _conv_common import (  # noqa: E402,F401  (tests/conv/_conv_common.py)
    START_ISA, F, assert_qclose, exact, pytest, qplugin, torch, warnings)

_MF = {2: torch.channels_last, 3: torch.channels_last_3d}


VECTOR_ISAS = ["avx2", "avx512vnni"]  # the ISAs with an igemm


def _need(isa):
    if torch.ops.qplugin._set_cpu_isa(isa) != isa:
        torch.ops.qplugin._set_cpu_isa(START_ISA)
        pytest.skip(f"this CPU has no {isa} (or QPLUGIN_CPU_ISA holds it below)")
    torch.ops.qplugin._set_cpu_isa(START_ISA)


def _inputs(dim, N, Cin, Cout, spatial, k, xzp, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.quantize_per_tensor(torch.rand(N, Cin, *spatial, generator=g) * 2.5 - 0.5 * (xzp > 0),
                                  0.02, xzp, torch.quint8)
    w = torch.quantize_per_channel(torch.randn(Cout, Cin, *k, generator=g) * 0.1,
                                   torch.rand(Cout, generator=g, dtype=torch.double) * 0.002 + 0.001,
                                   torch.zeros(Cout, dtype=torch.long), 0, torch.qint8)
    b = torch.randn(Cout, generator=g) * 3
    return x, w, b


def _conv(dim, x, w, b, s, p, d, isa, relu=False):
    torch.ops.qplugin._set_cpu_isa(isa)
    try:
        packed = getattr(torch.ops.qplugin, f"conv{dim}d_prepack")(w, b, s, p, d, 1)
        op = getattr(torch.ops.qplugin, f"conv{dim}d_relu" if relu else f"conv{dim}d")
        return op(x, packed, 0.05, 90)
    finally:
        torch.ops.qplugin._set_cpu_isa(START_ISA)


# (dim, N, Cin, Cout, spatial, kernel, stride, padding, dilation); C_in a multiple of 4 but one
SKIP = [
    (2, 8, 64, 64, (7, 7), (3, 3), (1, 1), (1, 1), (1, 1)),      # ResNet-18 layer4-like
    (2, 2, 16, 70, (5, 6), (3, 3), (1, 1), (2, 2), (1, 1)),      # reach 2 of 3 taps, 2 panels
    (2, 1, 8, 9, (4, 5), (1, 1), (1, 1), (2, 1), (1, 1)),        # 1x1 with padding: bias-only borders
    (2, 3, 12, 20, (9, 8), (3, 3), (2, 2), (4, 4), (1, 1)),      # pad > reach: empty groups
    (2, 1, 20, 130, (11, 13), (5, 3), (3, 2), (2, 1), (2, 1)),   # dilation_h, odd strides, 3 panels
    (2, 2, 4, 5, (1, 1), (3, 3), (1, 1), (1, 1), (1, 1)),        # 1x1 image: only the centre tap
    (2, 1, 32, 16, (3, 17), (3, 7), (1, 1), (1, 3), (1, 1)),     # wide kernel, every w group
    (2, 2, 16, 16, (6, 6), (3, 3), (1, 1), (0, 0), (1, 1)),      # no padding: one group
    (3, 2, 8, 24, (4, 5, 6), (3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1)),
    (3, 1, 16, 8, (3, 4, 4), (3, 2, 3), (2, 1, 1), (2, 1, 0), (2, 1, 1)),
    (1, 3, 24, 40, (9,), (5,), (1,), (3,), (1,)),
    # K = 2304: B chunks of 80 columns, so 3 chunks with C_out 200 (full-range rows widened
    # once for all chunks on AVX2); with and without padding (segments that do not cover K)
    (2, 2, 256, 200, (6, 6), (3, 3), (1, 1), (1, 1), (1, 1)),
    (2, 1, 256, 200, (6, 7), (3, 3), (1, 1), (0, 0), (1, 1)),
    # C_in 9: spans of 4 * 9 = 36 bytes are whole k-groups but taps are not; the padded path
    (2, 3, 9, 4, (8, 10), (2, 4), (1, 1), (0, 1), (1, 1)),
]


@pytest.mark.parametrize("isa", VECTOR_ISAS)
@pytest.mark.parametrize("xzp", [0, 37, 255])
@pytest.mark.parametrize("case", SKIP)
def test_pad_skip_matches_scalar_and_oracle(case, xzp, isa):
    _need(isa)
    dim, N, Cin, Cout, sp, k, s, p, d = case
    x, w, b = _inputs(dim, N, Cin, Cout, sp, k, xzp, seed=Cin + xzp)
    s, p, d = list(s), list(p), list(d)
    fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[dim]
    for relu in (False, True):
        for fmt in ("nchw", "cl"):
            xx = x.contiguous(memory_format=_MF[dim]) if fmt == "cl" and dim in _MF else x
            y = _conv(dim, xx, w, b, s, p, d, isa, relu)
            ys = _conv(dim, xx, w, b, s, p, d, "scalar", relu)
            assert torch.equal(y.int_repr(), ys.int_repr()), (fmt, relu)
            assert_qclose(y, exact(fn, xx, w, b, 0.05, 90, relu=relu, stride=s, padding=p,
                                   dilation=d))


@pytest.mark.parametrize("isa", VECTOR_ISAS)
def test_pad_skip_border_outputs_are_the_bias(isa):
    """Kernel 1, padding 2: the two outer rings of outputs read only padding, so their value is
    the requantized bias; a wrong zero-point term for that (empty) group shows here."""
    _need(isa)
    x, w, b = _inputs(2, 2, 8, 9, (4, 5), (1, 1), 200, seed=3)
    y = _conv(2, x, w, b, [1, 1], [2, 2], [1, 1], isa)
    ring = torch.ones(8, 9, dtype=torch.bool)
    ring[2:6, 2:7] = False
    want = torch.clamp(torch.round(b.double() / 0.05) + 90, 0, 255).to(torch.uint8)
    codes = y.int_repr()
    for n in range(2):
        assert torch.equal(codes[n][:, ring], want[:, None].expand(9, int(ring.sum())))


@pytest.mark.parametrize("isa", VECTOR_ISAS)
def test_pad_skip_two_threads(isa):
    _need(isa)
    x, w, b = _inputs(2, 4, 32, 96, (14, 14), (3, 3), 37, seed=5)
    xx = x.contiguous(memory_format=torch.channels_last)
    ys = _conv(2, xx, w, b, [1, 1], [1, 1], [1, 1], "scalar")
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        y = _conv(2, xx, w, b, [1, 1], [1, 1], [1, 1], isa)
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(y.int_repr(), ys.int_repr())


@pytest.mark.parametrize("isa", VECTOR_ISAS)
@pytest.mark.parametrize("relu", [False, True])
def test_pad_skip_exact_int32_path(relu, isa):
    """conv2d_add finishes in double from the driver's exact int32 accumulators (out_i32), which
    the skipping path writes through its output-row list."""
    _need(isa)
    x, w, b = _inputs(2, 2, 16, 24, (6, 7), (3, 3), 37, seed=9)
    acc = torch.quantize_per_tensor(torch.rand(2, 24, 6, 7) * 2, 0.02, 50, torch.quint8)
    op = torch.ops.qplugin.conv2d_add_relu if relu else torch.ops.qplugin.conv2d_add
    outs = []
    for each in (isa, "scalar"):
        torch.ops.qplugin._set_cpu_isa(each)
        try:
            packed = torch.ops.qplugin.conv2d_prepack(w, b, [1, 1], [1, 1], [1, 1], 1)
            outs.append(op(x, acc, packed, 0.05, 90))
        finally:
            torch.ops.qplugin._set_cpu_isa(START_ISA)
    assert torch.equal(outs[0].int_repr(), outs[1].int_repr())
    conv = F.conv2d(x.dequantize().double(), w.dequantize().double(), b.double(), padding=1)
    v = conv + acc.dequantize().double()
    if relu:
        v = torch.relu(v)
    want = torch.clamp(torch.round(v / 0.05) + 90, 0, 255)
    assert (outs[0].int_repr().double() - want).abs().max() <= 1


@pytest.mark.parametrize("outliers", [0, 3, 40, -1])
@pytest.mark.parametrize("case", [SKIP[0], SKIP[3], SKIP[4], SKIP[8]])
def test_pad_skip_7bit_input_with_outliers(case, outliers):
    """AVX2's three tiles on skipped K ranges: bytes <= 127 (VPMADDUBSW on A in place), a few
    above (the same, plus corrections of the k-groups holding them at their packed K positions),
    and many above (outliers = -1: the widened tile, the skipped ranges zeros)."""
    _need("avx2")
    dim, N, Cin, Cout, sp, k, s, p, d = case
    g = torch.Generator().manual_seed(21 + outliers)
    codes = torch.randint(0, 128, (N, Cin, *sp), generator=g, dtype=torch.uint8)
    flat = codes.view(-1)
    if outliers < 0:
        flat[::2] = 255
    elif outliers:
        idx = torch.randperm(flat.numel(), generator=g)[:outliers]
        flat[idx] = 200 + torch.randint(0, 56, (outliers,), generator=g, dtype=torch.uint8)
        flat[0] = 255  # the first pixel: a corner group's row
    x = torch._make_per_tensor_quantized_tensor(codes, 0.02, 21)
    _, w, b = _inputs(dim, N, Cin, Cout, sp, k, 21, seed=4)
    wi = w.int_repr()
    wi.view(-1)[::3] = -128  # the s16 pair-sum bound's worst weights
    wi.view(-1)[1::3] = 127
    w = torch._make_per_channel_quantized_tensor(wi, w.q_per_channel_scales(),
                                                 w.q_per_channel_zero_points(), 0)
    s, p, d = list(s), list(p), list(d)
    fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[dim]
    xx = x.contiguous(memory_format=_MF[dim]) if dim in _MF else x
    y = _conv(dim, xx, w, b, s, p, d, "avx2")
    ys = _conv(dim, xx, w, b, s, p, d, "scalar")
    assert torch.equal(y.int_repr(), ys.int_repr())
    assert_qclose(y, exact(fn, xx, w, b, 0.05, 90, stride=s, padding=p, dilation=d))
