"""The AMX-INT8 form of the avx512vnni GEMM (kernels/gemm/qgemm_u8s8_32x32c4_amx.cpp): on a CPU
with AMX every call of at least 16 rows goes through TDPBUSD tiles; it must give the bytes of the
zmm (VPDPBUSD) kernels, which the rest of the suite checks against the scalar tier and the exact
reference. Covered: rows around the 16-row tiles and the 512-row staging blocks, K around the
64-byte steps (the staged last window, Kp < 64, K % 4 != 0), columns around 16/32/64, extreme
codes and weights, per-tensor weight zero points (row sums), the float and int32 epilogues, and
the conv paths (segments in whole 64-byte steps read in place or staged, the linear staging with
skipped padding taps, groups, strides, dilation, 3-D, transposed), one and two threads.
Skipped where the CPU (or the OS) has no AMX, or QPLUGIN_AMX=0."""
import itertools

import pytest
import torch

import qplugin  # noqa: F401
from _reference import using_threads  # tests/ is on sys.path (conftest.py)

Q = torch.ops.qplugin


@pytest.fixture(autouse=True)
def amx():
    if torch.ops.qplugin._cpu_isa() != "avx512vnni" or not Q._set_amx(True):
        pytest.skip("no AMX-INT8 here (CPU, OS permission, QPLUGIN_AMX=0 or a lower ISA)")
    yield
    Q._set_amx(True)


def both(fn):
    """fn() with AMX on, then off: the two results."""
    assert Q._set_amx(True)
    on = fn()
    Q._set_amx(False)
    try:
        off = fn()
    finally:
        Q._set_amx(True)
    return on, off


def _extreme_codes(shape, g, lo=0, hi=256):
    codes = torch.randint(lo, hi, shape, generator=g)
    pick = torch.rand(shape, generator=g)
    codes[pick < 0.15] = lo
    codes[pick > 0.85] = hi - 1
    return codes


def _linear_inputs(M, K, N, seed, wzp=None):
    g = torch.Generator().manual_seed(seed)
    x = torch._make_per_tensor_quantized_tensor(_extreme_codes((M, K), g).to(torch.uint8), 0.02, 7)
    wi = _extreme_codes((N, K), g, -128, 128).to(torch.int8)
    if wzp is None:
        w = torch._make_per_channel_quantized_tensor(
            wi, torch.rand(N, generator=g, dtype=torch.double) * 1e-4 + 1e-4,
            torch.zeros(N, dtype=torch.long), 0)
    else:
        w = torch._make_per_tensor_quantized_tensor(wi, 1e-4, wzp)
    return x, w, torch.randn(N, generator=g)


SIZES = list(itertools.product([16, 17, 31, 32, 33, 47, 100], [1, 3, 4, 60, 64, 65, 127, 128, 200],
                               [1, 16, 17, 32, 33, 64, 65, 130]))


# staged rows (K % 64 != 0) take AMX for 128+ columns and K >= 128 (qgemm_amx.h)
STAGED = [(40, 200, 130), (33, 129, 256), (100, 300, 128), (17, 1000, 200), (530, 130, 128)]
# ... and for 128+ rows with K >= 32 and K x columns >= 14336 (kStagedMinKN): one step of Kp <= 64
# (K % 4 != 0 among them), two steps whose last window overlaps, exactly at both thresholds, and
# (150, 72, 199) just below kStagedMinKN (the zmm kernel: the same bytes either way) (one
# thread: two would split the rows or the columns below them; test_linear_staged_many_rows)
STAGED_MANY_ROWS = [(128, 32, 448), (130, 40, 400), (256, 61, 240), (129, 127, 113),
                    (200, 100, 144), (300, 112, 136), (150, 72, 199)]


@pytest.mark.parametrize("M,K,N", SIZES[::3] + STAGED
                         + [(530, 64, 40), (513, 100, 20), (16, 4096, 70)])
def test_linear_matches_zmm_kernel(M, K, N):
    x, w, b = _linear_inputs(M, K, N, seed=M * 131 + K * 7 + N)
    p = Q.linear_prepack(w, b)
    on, off = both(lambda: Q.linear(x, p, 0.02, 120).int_repr())
    assert torch.equal(on, off)
    # not a degenerate output (saturated or constant) where the sizes allow variety
    assert on.unique().numel() >= min(8, on.numel() // 2) or K == 1  # K = 1: few products


@pytest.mark.parametrize("M,K,N", STAGED_MANY_ROWS)
@pytest.mark.parametrize("wzp", [None, 5])
def test_linear_staged_many_rows(M, K, N, wzp):
    x, w, b = _linear_inputs(M, K, N, seed=M + K * 3 + N, wzp=wzp)
    p = Q.linear_prepack(w, b)
    with using_threads(1):
        on, off = both(lambda: Q.linear(x, p, 0.02, 120).int_repr())
    assert torch.equal(on, off)
    assert on.unique().numel() >= 8


# Calls of one 16-column tile take four row tiles a pass (narrow_block): 1..4 tiles in the last
# pass (M % 64), K in one and several 64-byte steps, with and without weight zero points.
@pytest.mark.parametrize("M", [16, 31, 48, 64, 65, 100, 129, 530])
@pytest.mark.parametrize("K", [64, 192])
@pytest.mark.parametrize("wzp", [None, 9])
def test_narrow_linear_matches_zmm_kernel(M, K, wzp):
    x, w, b = _linear_inputs(M, K, 16, seed=M + K, wzp=wzp)
    p = Q.linear_prepack(w, b)
    on, off = both(lambda: Q.linear(x, p, 0.02, 120).int_repr())
    assert torch.equal(on, off)
    assert on.unique().numel() >= 8
    xf = torch.randn(M, K, generator=torch.Generator().manual_seed(M)) * 3
    on, off = both(lambda: Q.linear_dynamic(xf, p, False))  # float output
    assert torch.equal(on, off)


@pytest.mark.parametrize("M,K,N", [(16, 64, 16), (40, 65, 33), (64, 200, 130), (100, 3, 17)])
@pytest.mark.parametrize("wzp", [-128, 5, 127])
def test_linear_weight_zero_point_row_sums(M, K, N, wzp):
    x, w, b = _linear_inputs(M, K, N, seed=K + N + wzp, wzp=wzp)
    p = Q.linear_prepack(w, b)
    on, off = both(lambda: Q.linear_relu(x, p, 0.4, 30).int_repr())
    assert torch.equal(on, off)


# (200, 100, 160): staged rows by kStagedMinKN (run on one thread so that the call keeps them)
@pytest.mark.parametrize("M,K,N", [(16, 64, 16), (33, 129, 70), (200, 768, 96), (200, 100, 160)])
def test_float_and_int32_epilogues(M, K, N):
    with using_threads(1):
        _float_and_int32_epilogues(M, K, N)


def _float_and_int32_epilogues(M, K, N):
    x, w, b = _linear_inputs(M, K, N, seed=3)
    p = Q.linear_prepack(w, b)
    on, off = both(lambda: Q.linear_tanh(x, p, 0.01, 128).int_repr())  # int32 accumulators
    assert torch.equal(on, off)
    pd = Q.linear_prepack(w, b)
    xf = torch.randn(M, K, generator=torch.Generator().manual_seed(4)) * 3
    on, off = both(lambda: Q.linear_dynamic(xf, pd, False))  # float output (FMA epilogue)
    assert torch.equal(on, off)
    on, off = both(lambda: Q.linear_relu_dynamic(xf, pd, False))  # with the ReLU
    assert torch.equal(on, off) and (on == 0).any() and (on > 0).any()


def test_linear_threads():
    x, w, b = _linear_inputs(300, 256, 190, seed=9)
    p = Q.linear_prepack(w, b)
    with using_threads(2):
        on, off = both(lambda: Q.linear(x, p, 0.02, 120).int_repr())
    assert torch.equal(on, off)


def _conv(dim, N, Cin, Cout, S, k, stride, pad, dil, groups, cl, seed, transpose=False):
    g = torch.Generator().manual_seed(seed)
    x = torch._make_per_tensor_quantized_tensor(
        _extreme_codes((N, Cin, *([S] * dim)), g).to(torch.uint8), 0.02, 47)
    if cl:
        x = x.contiguous(memory_format=torch.channels_last if dim == 2 else torch.channels_last_3d)
    wshape = (Cin, Cout // groups) if transpose else (Cout, Cin // groups)
    wi = _extreme_codes((*wshape, *([k] * dim)), g, -128, 128).to(torch.int8)
    n = wshape[1] * groups if transpose else Cout
    w = torch._make_per_channel_quantized_tensor(
        wi, torch.rand(wshape[1 if transpose else 0], generator=g, dtype=torch.double) * 1e-4
        + 1e-4, torch.zeros(wshape[1 if transpose else 0], dtype=torch.long), 1 if transpose else 0)
    b = torch.randn(n, generator=g)
    v = lambda t: [t] * dim  # noqa: E731
    if transpose:
        pk = Q.conv_transpose2d_prepack(w, b, v(stride), v(pad), v(0), v(dil), groups)
        return lambda: Q.conv_transpose2d(x, pk, 0.3, 100).int_repr()
    prep = Q.conv2d_prepack if dim == 2 else Q.conv3d_prepack
    op = Q.conv2d if dim == 2 else Q.conv3d
    pk = prep(w, b, v(stride), v(pad), v(dil), groups)
    return lambda: op(x, pk, 0.3, 100).int_repr()


# (N, Cin, Cout, S, k, stride, pad, dil, groups): Cin 64/128 take the in-place segment path
# (64-byte steps), 32/96 with up to 128 output channels 32-byte steps, 3/16 with 128+ output
# channels the linear staging (fewer: the zmm kernel), 3 (padded spans of one length) steps of
# that length; S chosen so row tiles straddle output rows and runs of 4..15 rows make partial
# in-place tiles (S = 6: runs of exactly 4 inside, kMinRun; S = 5: runs of 3, staged).
CONVS = [(2, 64, 64, 13, 3, 1, 1, 1, 1), (1, 128, 40, 9, 3, 1, 1, 1, 1),
         (3, 64, 96, 11, 3, 2, 1, 1, 1), (2, 64, 64, 10, 1, 1, 0, 1, 1),
         (1, 3, 64, 30, 7, 2, 3, 1, 1), (2, 16, 33, 12, 3, 1, 1, 1, 1),
         (1, 96, 70, 9, 5, 1, 2, 1, 1), (2, 128, 64, 12, 3, 1, 2, 2, 1),
         (2, 128, 128, 9, 3, 1, 1, 1, 2), (1, 64, 17, 20, 3, 1, 0, 1, 1),
         (4, 256, 80, 5, 3, 1, 1, 1, 1), (1, 72, 64, 17, 3, 2, 0, 1, 1),
         (2, 32, 64, 12, 3, 1, 1, 1, 1), (1, 96, 128, 11, 3, 1, 1, 1, 1),
         (1, 16, 128, 12, 3, 1, 1, 1, 1), (1, 3, 160, 20, 7, 2, 3, 1, 1),
         (1, 64, 64, 10, 3, 1, 1, 1, 1), (2, 64, 48, 14, 3, 1, 1, 1, 1),
         (2, 64, 32, 6, 3, 1, 1, 1, 1), (2, 64, 32, 5, 3, 1, 1, 1, 1)]


# 16 output channels (narrow_block, four row tiles of one column tile) on the in-place paths:
# 48-byte segment steps (C_in 16), 64- and 32-byte steps, partial tiles (planes of 10..13 pixels a
# row).
NARROW_CONVS = [(2, 16, 16, 13, 3, 1, 1, 1, 1), (1, 64, 16, 12, 3, 1, 1, 1, 1),
                (2, 32, 16, 10, 3, 1, 1, 1, 1), (3, 128, 16, 11, 1, 1, 0, 1, 1)]


@pytest.mark.parametrize("case", CONVS + NARROW_CONVS)
@pytest.mark.parametrize("cl", [False, True])
def test_conv2d_matches_zmm_kernel(case, cl):
    fn = _conv(2, *case, cl=cl, seed=sum(case))
    on, off = both(fn)
    assert torch.equal(on, off)
    assert on.min() < 100 < on.max()


# 1x1 convs with C_in % 64 != 0 (MobileNet-like channel counts): the gemm's staged rows for 128+
# rows (kStagedMinKN), C_in 112 (two K steps) and 40 (one), one thread (whole rows and columns
# per call), both input layouts.
@pytest.mark.parametrize("case", [(1, 112, 136, 12, 1, 1, 0, 1, 1), (2, 40, 400, 9, 1, 1, 0, 1, 1)])
@pytest.mark.parametrize("cl", [False, True])
def test_conv1x1_staged_many_rows(case, cl):
    fn = _conv(2, *case, cl=cl, seed=sum(case))
    with using_threads(1):
        on, off = both(fn)
    assert torch.equal(on, off)
    assert on.min() < 100 < on.max()


@pytest.mark.parametrize("cl", [False, True])
def test_conv3d_and_transposed(cl):
    on, off = both(_conv(3, 1, 64, 32, 6, 3, 1, 1, 1, 1, cl, seed=5))
    assert torch.equal(on, off)
    on, off = both(_conv(2, 2, 64, 48, 9, 4, 2, 1, 1, 1, cl, seed=6, transpose=True))
    assert torch.equal(on, off)


# 16 output channels (narrow_block): conv3d; and 80 output channels on 2 threads, whose column
# blocks can leave a call of the last 16 columns.
@pytest.mark.parametrize("cl", [False, True])
def test_narrow_conv3d_and_split_columns(cl):
    on, off = both(_conv(3, 1, 16, 16, 7, 3, 1, 1, 1, 1, cl, seed=12))
    assert torch.equal(on, off)
    fn = _conv(2, 4, 64, 80, 15, 3, 1, 1, 1, 1, cl, seed=13)
    with using_threads(2):
        on, off = both(fn)
    assert torch.equal(on, off)


def test_conv_threads():
    fn = _conv(2, 4, 64, 64, 15, 3, 1, 1, 1, 1, True, seed=8)
    with using_threads(2):
        on, off = both(fn)
    assert torch.equal(on, off)


def test_set_amx_reports_state():
    assert Q._amx_enabled()
    assert Q._set_amx(False) is False and not Q._amx_enabled()
    assert Q._set_amx(True) is True and Q._amx_enabled()
