"""The shape-specific fast paths of the vector ISAs, byte for byte against the scalar ISA and
within 1 unit of the exact float64 oracle:
- implicit GEMM (QGemmKernels::igemm, AVX2 and AVX512-VNNI): groups 1, dilation_w 1, weight zero points
  0; spans of KW * C_in bytes padded to a multiple of 4 (C_in = 3, 5), no padding but a padded
  span (the read past the last pixel), strides, dilation_h, conv3d, conv1d; on AVX2 the padded
  spans mostly copied into compact rows (run_igemm), read in place on both sides of its rule;
- depthwise 1x3x3 (DwConvArgs::w3): channels-last and NCHW input read in place (16-channel
  blocks with tails, widths below 4 and above 64, padding 0..2, stride_w 1 and 2, conv3d 1x3x3).
"""
from _conv_common import (  # noqa: E402,F401  (tests/conv/_conv_common.py)
    START_ISA, F, assert_qclose, exact, pytest, qplugin, torch, warnings)

_MF = {2: torch.channels_last, 3: torch.channels_last_3d}


def _require_isa(isa):
    """Skips the test when this CPU cannot run `isa` (the ISA is left as it was)."""
    if torch.ops.qplugin._set_cpu_isa(isa) != isa:
        torch.ops.qplugin._set_cpu_isa(START_ISA)
        pytest.skip(f"this CPU has no {isa}")
    torch.ops.qplugin._set_cpu_isa(START_ISA)


def _inputs(dim, N, Cin, Cout, spatial, k, groups, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.quantize_per_tensor(torch.rand(N, Cin, *spatial, generator=g) * 2, 0.02, 37,
                                  torch.quint8)
    n = Cout
    w = torch.quantize_per_channel(torch.randn(Cout, Cin // groups, *k, generator=g) * 0.1,
                                   torch.rand(n, generator=g, dtype=torch.double) * 0.002 + 0.001,
                                   torch.zeros(n, dtype=torch.long), 0, torch.qint8)
    b = torch.randn(Cout, generator=g)
    return x, w, b


def _run(dim, x, w, b, stride, pad, dil, groups, isa):
    got = torch.ops.qplugin._set_cpu_isa(isa)
    try:
        p = getattr(torch.ops.qplugin, f"conv{dim}d_prepack")(w, b, stride, pad, dil, groups)
        return getattr(torch.ops.qplugin, f"conv{dim}d")(x, p, 0.05, 90), got
    finally:
        torch.ops.qplugin._set_cpu_isa(START_ISA)


def _check(dim, x, w, b, stride, pad, dil, groups, isa="avx512vnni"):
    for fmt in ("nchw", "cl"):
        xx = x.contiguous(memory_format=_MF[dim]) if fmt == "cl" and dim in _MF else x
        y, _ = _run(dim, xx, w, b, stride, pad, dil, groups, isa)
        ys, _ = _run(dim, xx, w, b, stride, pad, dil, groups, "scalar")
        assert torch.equal(y.int_repr(), ys.int_repr()), fmt
        fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[dim]
        assert_qclose(y, exact(fn, xx, w, b, 0.05, 90, stride=stride, padding=pad, dilation=dil,
                              groups=groups))


# (dim, N, Cin, Cout, spatial, kernel, stride, padding, dilation)
IGEMM = [
    (2, 1, 3, 64, (23, 21), (7, 7), (2, 2), (3, 3), (1, 1)),   # stem-like, span 21 -> 24
    # 7 * 3 * 48 = 1008 and 7 * 3 * 49 = 1029 zero products a pixel: the two sides of the AVX2
    # driver's kIgemmPadMacs (run_igemm), which only 7-bit input with Cout < 32 consults.
    (2, 1, 3, 48, (15, 16), (7, 7), (2, 2), (3, 3), (1, 1)),
    (2, 2, 3, 49, (15, 16), (7, 7), (2, 2), (3, 3), (1, 1)),
    (2, 2, 3, 5, (6, 7), (3, 3), (1, 1), (0, 0), (1, 1)),      # no padding, padded span
    (2, 1, 5, 70, (9, 12), (3, 2), (2, 3), (1, 0), (2, 1)),    # dilation_h, odd strides
    (2, 1, 16, 16, (1, 1), (3, 3), (1, 1), (1, 1), (1, 1)),    # 1x1 image, all padding
    (2, 3, 8, 8, (6, 6), (1, 1), (2, 2), (0, 0), (1, 1)),      # 1x1 kernel, stride 2
    (3, 1, 16, 16, (4, 9, 7), (3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1)),
    (3, 2, 3, 7, (5, 6, 5), (2, 3, 3), (2, 1, 2), (0, 1, 2), (2, 1, 1)),
    (1, 2, 17, 9, (30,), (3,), (1,), (1,), (1,)),
]


@pytest.mark.parametrize("isa", ["avx2", "avx512vnni"])
@pytest.mark.parametrize("case", IGEMM)
def test_igemm_matches_scalar_and_oracle(case, isa):
    dim, N, Cin, Cout, sp, k, s, p, d = case
    _require_isa(isa)
    x, w, b = _inputs(dim, N, Cin, Cout, sp, k, 1, seed=len(sp) + Cin)
    _check(dim, x, w, b, list(s), list(p), list(d), 1, isa)


# (dim, N, C, spatial, stride, padding)
DW3 = [
    (2, 1, 144, (7, 8), (1, 1), (1, 1)),
    (2, 2, 17, (5, 3), (1, 1), (2, 2)),      # width 3 < 4, channel tail
    (2, 1, 15, (4, 130), (1, 1), (1, 0)),    # width > 64 (several chunks), one block
    (2, 1, 33, (9, 70), (2, 1), (0, 2)),
    (2, 1, 16, (8, 9), (2, 2), (1, 1)),      # stride_w 2
    (2, 1, 1, (3, 3), (1, 1), (1, 1)),       # one channel
    (3, 1, 20, (3, 5, 6), (2, 1, 1), (1, 1, 1)),  # conv3d 1x3x3, padded depth planes
]


@pytest.mark.parametrize("case", DW3)
def test_depthwise_3x3_matches_scalar_and_oracle(case):
    dim, N, C, sp, s, p = case
    if torch.ops.qplugin._set_cpu_isa("avx512vnni") != "avx512vnni":
        torch.ops.qplugin._set_cpu_isa(START_ISA)
        pytest.skip("this CPU has no avx512vnni")
    torch.ops.qplugin._set_cpu_isa(START_ISA)
    k = (1, 3, 3) if dim == 3 else (3, 3)
    x, w, b = _inputs(dim, N, C, C, sp, k, C, seed=C)
    _check(dim, x, w, b, list(s), list(p), [1] * dim, C)


# Output qparams that saturate on both sides (scale 0.004: most outputs fall outside [0, 255]),
# with and without ReLU and with output zero points 0 / 90 / 255: the depthwise 3x3 path leaves
# the clamp to its saturating packs when [lo, hi] is the whole uint8 range (no ReLU, or ReLU with
# zero point 0) and clamps in float otherwise; both against the scalar ISA and the exact oracle.
@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("out_zp", [0, 90, 255])
def test_depthwise_3x3_saturating_outputs(relu, out_zp):
    if torch.ops.qplugin._set_cpu_isa("avx512vnni") != "avx512vnni":
        torch.ops.qplugin._set_cpu_isa(START_ISA)
        pytest.skip("this CPU has no avx512vnni")
    torch.ops.qplugin._set_cpu_isa(START_ISA)
    x, w, b = _inputs(2, 1, 48, 48, (13, 70), (3, 3), 48, seed=7)
    b = b * 3
    op = torch.ops.qplugin.conv2d_relu if relu else torch.ops.qplugin.conv2d
    for fmt in ("nchw", "cl"):
        xx = x.contiguous(memory_format=torch.channels_last) if fmt == "cl" else x
        outs = []
        for isa in ("avx512vnni", "scalar"):
            torch.ops.qplugin._set_cpu_isa(isa)
            try:
                p = torch.ops.qplugin.conv2d_prepack(w, b, [1, 1], [1, 1], [1, 1], 48)
                outs.append(op(xx, p, 0.004, out_zp))
            finally:
                torch.ops.qplugin._set_cpu_isa(START_ISA)
        y, ys = outs
        assert torch.equal(y.int_repr(), ys.int_repr()), fmt
        codes = y.int_repr()
        assert (codes == 0).any() and (codes == 255).any() or out_zp in (0, 255) or relu, fmt
        assert_qclose(y, exact(F.conv2d, xx, w, b, 0.004, out_zp, relu=relu, stride=[1, 1],
                              padding=[1, 1], dilation=[1, 1], groups=48))


@pytest.mark.parametrize("outliers", [0, 3, 40])
@pytest.mark.parametrize("isa", ["avx2", "avx512vnni"])
@pytest.mark.parametrize("case", IGEMM[:6] + IGEMM[7:])  # not the 1x1 kernel
def test_igemm_7bit_input(case, isa, outliers):
    """Input bytes within [0, 127] (what a reduce_range x86/fbgemm qconfig calibrates to): the
    AVX2 kernel takes its VPMADDUBSW tile (exact there, see qgemm_u8s8_6x8c4_avx2.cpp), here with
    weights at -128 / 127 and inputs at 127 half of the time."""
    dim, N, Cin, Cout, sp, k, s, p, d = case
    _require_isa(isa)
    g = torch.Generator().manual_seed(11)
    a = torch.randint(0, 128, (N, Cin, *sp), generator=g, dtype=torch.uint8)
    a[torch.rand(a.shape, generator=g) < 0.5] = 127
    flat = a.view(-1)  # a few bytes above 127 (the corrected k-groups of the AVX2 kernel)
    idx = torch.randint(0, flat.numel(), (min(outliers, flat.numel()),), generator=g)
    flat[idx] = torch.tensor([255, 128], dtype=torch.uint8).repeat(len(idx))[:len(idx)]
    x = torch._make_per_tensor_quantized_tensor(a, 0.02, 0)
    wi = torch.randint(-128, 128, (Cout, Cin, *k), generator=g, dtype=torch.int8)
    r = torch.rand(wi.shape, generator=g)
    wi[r < 0.4] = -128
    wi[r > 0.6] = 127
    w = torch._make_per_channel_quantized_tensor(
        wi, torch.rand(Cout, generator=g, dtype=torch.double) * 0.002 + 0.001,
        torch.zeros(Cout, dtype=torch.long), 0)
    _check(dim, x, w, torch.randn(Cout, generator=g), list(s), list(p), list(d), 1, isa)


# Implicit-GEMM cases whose segments (KW x C_in bytes) hold at least 16 k-groups, the shortest
# k-loop the AVX2 pair steps take: 24 groups a segment, 27 (an odd group left per segment), a
# conv1d of 72 groups, a conv3d; Cout 24 and 40 leave a panel without a partner.
PAIR_IGEMM = [
    (2, 1, 32, 24, (7, 9), (3, 3), (1, 1), (1, 1), (1, 1)),
    (2, 2, 36, 40, (6, 8), (3, 3), (1, 2), (1, 1), (1, 1)),
    (1, 1, 96, 32, (20,), (3,), (1,), (1,), (1,)),
    (3, 1, 24, 16, (3, 5, 6), (3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1)),
]


@pytest.mark.parametrize("spikes", [0.0, 0.05])
@pytest.mark.parametrize("isa", ["avx2", "avx512vnni"])
@pytest.mark.parametrize("case", IGEMM + PAIR_IGEMM)
def test_igemm_7bit_pair_steps(case, isa, spikes):
    """7-bit input with per-channel symmetric weights as an observer gives them (Gaussian, each
    output channel's largest magnitude at 127): the AVX2 kernel's packing pairs most k-group
    pairs of these weights, and its 7-bit tiles add two groups' VPMADDUBSW products in s16 before
    widening (exact under the weight bound its packing checks; qgemm_u8s8_6x8c4_avx2.cpp), here
    through the implicit GEMM's segments (pairs never straddle a segment) and the 6-row two-panel
    loop. `spikes`: a fraction of the weights set to +-127, which leaves octets at random places
    unpaired. Byte for byte against the scalar ISA and within 1 unit of the oracle."""
    dim, N, Cin, Cout, sp, k, s, p, d = case
    _require_isa(isa)
    g = torch.Generator().manual_seed(Cout * 13 + Cin)
    a = torch.randint(0, 128, (N, Cin, *sp), generator=g, dtype=torch.uint8)
    a[torch.rand(a.shape, generator=g) < 0.5] = 127
    x = torch._make_per_tensor_quantized_tensor(a, 0.02, 0)
    wf = torch.randn(Cout, Cin, *k, generator=g)
    wi = torch.round(wf / wf.flatten(1).abs().amax(1).view(-1, *[1] * (wf.dim() - 1)) * 127)
    r = torch.rand(wi.shape, generator=g)
    wi[r < spikes / 2] = -127
    wi[r > 1 - spikes / 2] = 127
    w = torch._make_per_channel_quantized_tensor(
        wi.to(torch.int8), torch.rand(Cout, generator=g, dtype=torch.double) * 0.002 + 0.001,
        torch.zeros(Cout, dtype=torch.long), 0)
    _check(dim, x, w, torch.randn(Cout, generator=g), list(s), list(p), list(d), 1, isa)


@pytest.mark.parametrize("outliers", [3, 40])
@pytest.mark.parametrize("isa", ["avx2", "avx512vnni"])
@pytest.mark.parametrize("case", PAIR_IGEMM)
def test_igemm_pair_steps_with_outliers(case, isa, outliers):
    """As test_igemm_7bit_pair_steps, with a few input bytes above 127 (128 and 255): the AVX2
    kernel's row tiles holding them still take pair steps, and each outlier's octet that the
    loop paired is corrected after it (qgemm_u8s8_6x8c4_avx2.cpp, ubsw_pair_fix), octets counted
    from each segment's first k-group (36 channels: segments of 27 groups, the second starting at
    an odd group). Weights at the pair bound in every octet of every segment (258, in K order:
    (kd, kh) segments of KW x C_in bytes), so that the outliers saturate their pair sums and wrap
    the s16 sum. Byte for byte against the scalar ISA and within 1 unit of the oracle."""
    dim, N, Cin, Cout, sp, k, s, p, d = case
    _require_isa(isa)
    g = torch.Generator().manual_seed(Cout * 17 + Cin + outliers)
    a = torch.randint(0, 128, (N, Cin, *sp), generator=g, dtype=torch.uint8)
    a[torch.rand(a.shape, generator=g) < 0.5] = 127
    flat = a.view(-1)
    idx = torch.randint(0, flat.numel(), (outliers,), generator=g)
    flat[idx] = torch.tensor([255, 128], dtype=torch.uint8).repeat(outliers)[:outliers]
    # And the last channel of one pixel: the last k-group of a segment for the output pixels
    # that read it at kw = KW - 1, a segment's odd last group when it has one (taken alone).
    # (An odd w: read at kw = KW - 1 by stride-2 rows too.)
    a[(0, Cin - 1) + tuple(v // 2 for v in sp[:-1]) + (sp[-1] // 2 | 1,)] = 255
    x = torch._make_per_tensor_quantized_tensor(a, 0.02, 0)
    span = k[-1] * Cin
    nseg = 1
    for t in k[:-1]:
        nseg *= t
    wk = torch.zeros(Cout, nseg, span, dtype=torch.int8)  # K order: segment, then kw * Cin + c
    for n in range(Cout):
        lane, sign = n % 2, 1 if (n // 2) % 2 == 0 else -1
        big = 127 if sign > 0 else -128
        for o in range(span // 8):
            base = 8 * o + 2 * lane
            # The small weight in the octet's first group: then a segment's odd last group (two
            # big weights) and the next segment's first group also meet the bound, so that the
            # packing flags that cross-segment pair, which the loop must still not take.
            for kk, v in zip((base, base + 4, base + 5), (sign * (258 - 2 * abs(big)), big, big)):
                wk[n, :, kk] = v
        if span % 8 >= 4:  # the odd last group: its own pair of big weights
            wk[n, :, 8 * (span // 8) + 2 * lane] = big
            wk[n, :, 8 * (span // 8) + 2 * lane + 1] = big
    wi = wk.view(Cout, *k[:-1], k[-1], Cin).movedim(-1, 1).contiguous()
    # Per-channel scales that put each channel's largest exact sum 100 codes from the output
    # zero point (input zero point 0: padding adds nothing).
    fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[dim]
    acc = fn(a.double(), wi.double(), stride=list(s), padding=list(p), dilation=list(d))
    top = acc.abs().transpose(0, 1).reshape(Cout, -1).amax(1).clamp(min=1)
    w = torch._make_per_channel_quantized_tensor(
        wi, (100.0 * 0.05 / 0.02 / top).double(), torch.zeros(Cout, dtype=torch.long), 0)
    _check(dim, x, w, torch.zeros(Cout), list(s), list(p), list(d), 1, isa)


# (dim, N, Cin, Cout, spatial, kernel, stride, padding, dilation): full-range inputs take the
# AVX2 kernel's widened VPMADDWD tile; on the implicit GEMM it reads A widened once per region
# of the call (qgemm_u8s8_6x8c4_avx2.cpp, WideRegions) where that is faster: one or two panels,
# four or more segments, or segments of at most 64 bytes; the last case keeps the row tile by
# row tile widening (longer segments over eight panels).
WIDE_IGEMM = [
    (3, 1, 16, 16, (6, 30, 30), (3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1)),  # row blocks
    # crossing input planes (regions refused there, built in the others)
    (3, 2, 8, 12, (5, 6, 7), (3, 3, 3), (1, 2, 1), (0, 1, 1), (2, 1, 1)),  # partial panel
    (2, 1, 16, 16, (20, 23), (3, 3), (1, 1), (1, 1), (1, 1)),       # two panels
    (2, 2, 16, 32, (11, 13), (3, 3), (2, 1), (1, 1), (1, 1)),       # 48-byte segments
    (2, 1, 4, 8, (30, 31), (5, 5), (1, 1), (2, 2), (1, 1)),         # five 20-byte segments
    (1, 2, 16, 16, (50,), (3,), (1,), (1,), (1,)),                   # conv1d, one segment
    (2, 1, 64, 64, (9, 10), (3, 3), (1, 1), (1, 1), (1, 1)),        # row tile by row tile
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("isa", ["avx2", "avx512vnni"])
@pytest.mark.parametrize("case", WIDE_IGEMM)
def test_igemm_full_range_input(case, isa, threads):
    """Input bytes over all of [0, 255] (input zero point 37, so padding is not zero bytes) and
    weights over all of [-128, 127], including 255 x -128 products: byte for byte against the
    scalar ISA and within 1 unit of the float64 oracle, 1 and 2 threads. Per-channel weight
    scales put each channel's largest exact sum 100 codes from the output zero point, so the
    outputs are not clamped flat."""
    dim, N, Cin, Cout, sp, k, s, p, d = case
    _require_isa(isa)
    g = torch.Generator().manual_seed(Cout * 31 + Cin + dim)
    a = torch.randint(0, 256, (N, Cin, *sp), generator=g, dtype=torch.uint8)
    a.view(-1)[:: 7] = 255
    _check_extreme(dim, a, 37, Cout, k, g, list(s), list(p), list(d), isa, threads)


def _check_extreme(dim, a, zp, Cout, k, g, s, p, d, isa, threads):
    """_check on the codes `a` (input zero point zp) with weights over all of [-128, 127] (every
    fifth -128) whose per-channel scales put each channel's largest exact sum 100 codes from the
    output zero point, at `threads` threads."""
    x = torch._make_per_tensor_quantized_tensor(a, 0.02, zp)
    wi = torch.randint(-128, 128, (Cout, a.shape[1], *k), generator=g, dtype=torch.int8)
    wi.view(-1)[:: 5] = -128
    fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[dim]
    acc = fn(a.double() - zp, wi.double(), stride=s, padding=p, dilation=d)
    top = acc.abs().transpose(0, 1).reshape(Cout, -1).amax(1).clamp(min=1)
    w = torch._make_per_channel_quantized_tensor(
        wi, (100.0 * 0.05 / 0.02 / top).double(), torch.zeros(Cout, dtype=torch.long), 0)
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        _check(dim, x, w, torch.randn(Cout, generator=g), s, p, d, 1, isa)
    finally:
        torch.set_num_threads(old)


# Padded spans (KW x C_in not a multiple of 4) on the AVX2 driver (run_igemm): copied into compact
# rows (K = taps x C_in rounded up once) unless the input is 7-bit, Cout < 32 and the spans' pad
# costs under 1024 zero products a pixel (then read in place). (dim, N, Cin, Cout, spatial,
# kernel, stride, padding): 3x3 s2 stems (spans of 9 bytes), a 7x7 stem (21: two 16-byte moves),
# an 11x11 (33: three), C_in = 1 (5-byte spans), a conv3d (nine spans), 15x15 kernels with
# 45-byte spans at Cout 22 / 23 (990 / 1035 zero products a pixel), a 1-row kernel (one span:
# nothing to compact).
COMPACT = [
    (2, 1, 3, 32, (33, 30), (3, 3), (2, 2), (1, 1)),
    (2, 2, 3, 16, (20, 17), (3, 3), (2, 2), (1, 1)),
    (2, 1, 3, 64, (23, 21), (7, 7), (2, 2), (3, 3)),
    (2, 1, 3, 8, (26, 27), (11, 11), (4, 4), (2, 2)),
    (2, 1, 1, 24, (12, 13), (5, 5), (1, 1), (2, 2)),
    (3, 1, 3, 33, (4, 9, 8), (3, 3, 3), (1, 2, 1), (1, 1, 0)),
    (2, 1, 3, 22, (17, 16), (15, 15), (1, 1), (7, 7)),
    (2, 1, 3, 23, (17, 16), (15, 15), (1, 1), (7, 7)),
    (2, 2, 5, 40, (1, 31), (1, 5), (1, 2), (0, 2)),
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("input_range", ["full", "7bit"])
@pytest.mark.parametrize("isa", ["avx2", "avx512vnni"])
@pytest.mark.parametrize("case", COMPACT)
def test_igemm_padded_spans(case, isa, input_range, threads):
    """Convs whose KW x C_in spans are not whole k-groups, on input bytes over all of [0, 255]
    (zero point 37, so padding is not zero bytes) or within [0, 127] (zero point 100; the AVX2
    conv then finds its whole input 7-bit), weights over all of [-128, 127]: byte for byte
    against the scalar ISA and within 1 unit of the float64 oracle, 1 and 2 threads."""
    dim, N, Cin, Cout, sp, k, s, p = case
    _require_isa(isa)
    g = torch.Generator().manual_seed(Cout * 7 + Cin + dim)
    hi, zp = (256, 37) if input_range == "full" else (128, 100)
    a = torch.randint(0, hi, (N, Cin, *sp), generator=g, dtype=torch.uint8)
    a.view(-1)[:: 7] = hi - 1
    _check_extreme(dim, a, zp, Cout, k, g, list(s), list(p), [1] * dim, isa, threads)
