"""The AVX2 kernel's sign tile (qgemm_u8s8_6x8c4_avx2.cpp, mode 3): calls of one full-range row
(bytes over [0, 255]) with K >= 128 multiply a' = a - o by the weights as |w| * (a' * sign(w))
(VPABSB, VPSIGNB, VPMADDUBSW), exact while a' stays in [-127, 127]: o = 128 without bytes 0,
o = 127 without bytes 255, and with both, the bytes 0 taken as -127 and their k-groups corrected
after the k-loop (at most 1 in 16 of them; more keep the widened tile). These cases aim at each
branch and at the ends: a = 0 against w = -128 (a' * w = 16384, the largest pair sums), columns of
-128 and of 127, K not a multiple of 4, one and two panels, threads.
Oracle: the exact integer reference requantized with qplugin's float32 formula (bit-exact), and
for float outputs (dynamic linear) the scalar ISA's result, byte for byte.
"""
import warnings

import pytest
import torch

import qplugin  # noqa: F401
from _reference import exact_linear_u8 as _reference, using_threads  # (tests/ on sys.path)

warnings.filterwarnings("ignore", message=".*quantiz.*deprecated.*")

ops = torch.ops.qplugin
START_ISA = ops._cpu_isa()


def _weights(K, N, g):
    """[N, K] int8 over [-128, 127]; column 0 all -128, column 1 all 127 (when N > 2)."""
    wi = torch.randint(-128, 128, (N, K), generator=g, dtype=torch.int8)
    if N > 2:
        wi[0] = -128
        wi[1] = 127
    return wi


def _input(K, kind, g):
    """One row of K bytes; `kind` picks the offset branch (see the module docstring)."""
    if kind == "no_zero":  # o = 128
        a = torch.randint(1, 256, (1, K), generator=g, dtype=torch.uint8)
        a[0, -1] = 255
    elif kind == "no_255":  # o = 127, bytes 0 in every k-group
        a = torch.randint(0, 255, (1, K), generator=g, dtype=torch.uint8)
        a[0, ::3] = 0
    elif kind == "both_few":  # o = 128, a few bytes 0 corrected (at most 1 in 16 k-groups)
        a = torch.randint(1, 256, (1, K), generator=g, dtype=torch.uint8)
        a[0, -1] = 255
        for k in (0, 1, K - 2, K // 2):  # two in the first group, one in the last
            a[0, k] = 0
    elif kind == "both_many":  # too many groups to correct: the widened tile
        a = torch.randint(0, 256, (1, K), generator=g, dtype=torch.uint8)
        a[0, ::5] = 0
        a[0, 1] = 255
    elif kind == "extremes":  # 0 and 255 only
        a = torch.where(torch.rand(1, K, generator=g) < 0.5, 0, 255).to(torch.uint8)
    elif kind == "around128":  # a' of -1, 0, 1 (VPSIGNB's three cases)
        a = torch.randint(127, 130, (1, K), generator=g, dtype=torch.uint8)
        a[0, 0] = 255  # full range: keep the call off the 7-bit tiles
    else:
        raise AssertionError(kind)
    return a


def _quantized(K, N, kind, seed, w_zp):
    g = torch.Generator().manual_seed(seed)
    wi = _weights(K, N, g)
    sc = torch.rand(N, generator=g, dtype=torch.double) * 0.01 + 0.002
    zps = torch.randint(-5, 6, (N,), generator=g) if w_zp else torch.zeros(N, dtype=torch.long)
    w = torch._make_per_channel_quantized_tensor(wi, sc, zps, 0)
    a = _input(K, kind, g)
    x = torch._make_per_tensor_quantized_tensor(a, 0.02, int(seed % 256))
    b = torch.randn(N, generator=g)
    return x, w, b


KINDS = ["no_zero", "no_255", "both_few", "both_many", "extremes", "around128"]


@pytest.mark.parametrize("K,N", [(124, 8), (128, 8), (130, 9), (131, 17), (515, 16),
                                 (515, 63), (1024, 200), (4099, 40)])
@pytest.mark.parametrize("kind", KINDS)
def test_sign_tile_exact(isa, K, N, kind):
    """u8 and relu outputs, per-channel weight zero points 0 and not."""
    for w_zp in (False, True):
        x, w, b = _quantized(K, N, kind, seed=K * 31 + N + w_zp, w_zp=w_zp)
        scale = 0.0004 * K ** 0.5 * 30
        p = ops.linear_prepack(w, b)
        got = ops.linear(x, p, scale, 120).int_repr()
        assert torch.equal(got, _reference(x, w, b, scale, 120)), (isa, K, N, kind, w_zp)
        got = ops.linear_relu(x, p, scale, 120).int_repr()
        assert torch.equal(got, _reference(x, w, b, scale, 120, relu=True)), (K, N, kind, w_zp)


def test_sign_tile_worst_pairs(isa):
    """Pair sums at the ends of what the tile forms: a = 1 (a' = -127, o = 128) and a = 254
    (a' = 127, o = 127) against columns of -128 (|w| = 128: pairs of +-32512) and of 127; a = 255
    with one corrected 0 (o = 128), and a = 0 throughout (the widened tile)."""
    K, N = 256, 12
    g = torch.Generator().manual_seed(5)
    wi = torch.randint(-128, 128, (N, K), generator=g, dtype=torch.int8)
    wi[0, :] = -128
    wi[1, :] = 127
    wi[2, ::2] = -128
    wi[3, 1::2] = -128
    w = torch._make_per_channel_quantized_tensor(
        wi, torch.full((N,), 1e-4, dtype=torch.double), torch.zeros(N, dtype=torch.long), 0)
    b = torch.zeros(N)
    p = ops.linear_prepack(w, b)
    for a_val, last in ((1, 255), (254, 0), (255, 0), (0, 255)):
        a = torch.full((1, K), a_val, dtype=torch.uint8)
        a[0, -1] = last
        x = torch._make_per_tensor_quantized_tensor(a, 0.5, 0)
        got = ops.linear(x, p, 1.0, 128).int_repr()
        assert torch.equal(got, _reference(x, w, b, 1.0, 128)), a_val


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("K,N", [(200, 33), (768, 130), (4096, 1030)])
def test_sign_tile_float_output_matches_scalar(K, N, threads):
    """Dynamic linear (float output, full-range quantized input) with one row: the same bits as
    the scalar ISA's packing, with and without relu."""
    if ops._set_cpu_isa("avx2") != "avx2":
        ops._set_cpu_isa(START_ISA)
        pytest.skip("this CPU has no avx2")
    try:
        g = torch.Generator().manual_seed(K + N)
        wi = _weights(K, N, g)
        w = torch._make_per_channel_quantized_tensor(
            wi, torch.rand(N, generator=g, dtype=torch.double) * 0.01 + 0.001,
            torch.zeros(N, dtype=torch.long), 0)
        b = torch.randn(N, generator=g)
        xs = torch.randn(1, K, generator=g) * 3
        p_avx2 = ops.linear_prepack(w, b)
        ops._set_cpu_isa("scalar")
        p_scalar = ops.linear_prepack(w, b)
        with using_threads(threads):
            for reduce_range in (False, True):
                want = ops.linear_dynamic(xs, p_scalar, reduce_range)
                got = ops.linear_dynamic(xs, p_avx2, reduce_range)
                assert torch.equal(got, want), reduce_range
            want = ops.linear_relu_dynamic(xs, p_scalar, False)
            got = ops.linear_relu_dynamic(xs, p_avx2, False)
            assert torch.equal(got, want)
    finally:
        ops._set_cpu_isa(START_ISA)


def test_sign_tile_leaves_inputs_alone(isa):
    x, w, b = _quantized(300, 24, "both_few", seed=3, w_zp=False)
    xr, wr = x.int_repr().clone(), w.int_repr().clone()
    p = ops.linear_prepack(w, b)
    ops.linear(x, p, 0.2, 10)
    assert torch.equal(x.int_repr(), xr) and torch.equal(w.int_repr(), wr)
    assert torch.equal(ops.linear_unpack(p)[0].int_repr(), wr)
