"""torch.ops.qplugin.matmul (≙ quantized::matmul): exact integer product, requantized.

Oracles: the exact reference (float64 matmul of the dequantized codes, quantized round half to
even) -> bit for bit; torch.ops.quantized.matmul (dequantize, float32 matmul, quantize) -> within
1 (its float32 rounding differs from exact near .5). Shapes and broadcasting as torch.matmul.
Every ISA (ISA-independent: the same bytes).
"""
import pytest
import torch

from _reference import assert_qclose, assert_qequal, call_unmodified, dequantize64, quantize64

op = torch.ops.qplugin.matmul


def exact(a, b, scale, zp):
    return quantize64(torch.matmul(dequantize64(a), dequantize64(b)), scale, zp, a.dtype)


def _q(shape, dtype=torch.quint8, scale=0.05, zp=None, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.quint8:
        codes = torch.randint(0, 256, shape, generator=g, dtype=torch.uint8)
        zp = 128 if zp is None else zp
    else:
        codes = torch.randint(-128, 128, shape, generator=g, dtype=torch.int8)
        zp = 0 if zp is None else zp
    return torch._make_per_tensor_quantized_tensor(codes, scale, zp)


SHAPES = [((4, 5), (5, 6)), ((1, 1), (1, 1)), ((2, 3, 4, 5), (2, 3, 5, 6)), ((2, 3, 4, 5),
          (3, 5, 6)), ((4, 5), (2, 5, 6)), ((2, 1, 3, 7), (1, 4, 7, 2)), ((5,), (5,)),
          ((5,), (5, 6)), ((4, 5), (5,)), ((3, 4, 5), (5,)), ((0, 5), (5, 3)), ((4, 0), (0, 3)),
          ((17, 65), (65, 33)), ((2, 33, 300), (2, 300, 9))]


@pytest.mark.parametrize("i", range(len(SHAPES)))
@pytest.mark.parametrize("dtype", [torch.quint8, torch.qint8])
def test_exact_every_isa(isa, i, dtype):
    sa, sb = SHAPES[i]
    a = _q(sa, dtype, 0.05, 130 if dtype == torch.quint8 else 3, seed=i)
    b = _q(sb, dtype, 0.02, 120 if dtype == torch.quint8 else -7, seed=i + 50)
    scale, zp = (0.2, 100) if dtype == torch.quint8 else (0.2, -10)
    got = call_unmodified(op, a, b, scale, zp)
    assert got.dtype == dtype and got.is_contiguous()
    assert got.shape == torch.matmul(torch.zeros(sa), torch.zeros(sb)).shape
    assert_qequal(got, exact(a, b, scale, zp))


@pytest.mark.parametrize("i", range(len(SHAPES)))
@pytest.mark.parametrize("dtype", [torch.quint8, torch.qint8])
def test_vs_pytorch(i, dtype):
    sa, sb = SHAPES[i]
    a = _q(sa, dtype, 0.05, seed=i + 1)
    b = _q(sb, dtype, 0.03, seed=i + 2)
    ours = op(a, b, 0.1, 5)
    theirs = torch.ops.quantized.matmul(a, b, 0.1, 5)
    assert_qclose(ours, theirs)
    assert ours.stride() == theirs.stride() or ours.numel() == 0


def test_strided_operands_and_clamping():
    a = _q((6, 10), seed=1)[::2, 1:]          # non-contiguous rows
    b = _q((12, 9), seed=2).t()[:, :9]        # transposed view
    got = op(a, b, 0.01, 128)
    assert_qequal(got, exact(a, b, 0.01, 128))
    assert (got.int_repr() == 255).any() and (got.int_repr() == 0).any()


def test_large_k_is_exact():
    # K = 40000 with every (a - za)(b - zb) = 255 * 255: the int32 sum would overflow; the op
    # accumulates exactly.
    a = torch._make_per_tensor_quantized_tensor(torch.full((1, 40000), 255, dtype=torch.uint8),
                                                1.0, 0)
    b = torch._make_per_tensor_quantized_tensor(torch.full((40000, 1), 255, dtype=torch.uint8),
                                                1.0, 0)
    got = op(a, b, 2.6e7, 0)  # 40000 * 65025 = 2.601e9 -> 100.04 -> 100
    assert int(got.int_repr()) == 100


BAD = [
    (lambda: (torch.rand(2, 3), _q((3, 2)), 0.1, 0), r"expected qa to be a quantized tensor"),
    (lambda: (_q((2, 3)), torch.rand(3, 2), 0.1, 0), r"expected qb to be a quantized tensor"),
    (lambda: (_q((2, 3)), _q((3, 2), torch.qint8), 0.1, 0),
     r"expected qa and qb of the same dtype, got QUInt8 and QInt8"),
    (lambda: (torch.quantize_per_tensor(torch.rand(2, 3), 0.1, 0, torch.qint32),
              torch.quantize_per_tensor(torch.rand(3, 2), 0.1, 0, torch.qint32), 0.1, 0),
     r"expected qa of dtype QUInt8 or QInt8, got QInt32"),
    (lambda: (_q((2, 3)), _q((4, 2)), 0.1, 0), r"expected qb with 3 rows"),
    (lambda: (_q((2, 2, 3)), _q((3, 3, 2)), 0.1, 0), r"expected broadcastable batch dimensions"),
    (lambda: (_q(()), _q((3,)), 0.1, 0), r"expected qa and qb of rank >= 1, got 0-D and 1-D"),
    (lambda: (_q((2, 3)), _q((3, 2)), 0.0, 0), r"expected a finite, positive output_scale, got 0"),
    (lambda: (_q((2, 3)), _q((3, 2)), float("nan"), 0), r"expected a finite, positive"),
    (lambda: (_q((2, 3)), _q((3, 2)), 0.1, 256), r"expected output_zero_point in \[0, 255\]"),
    (lambda: (_q((2, 3), torch.qint8), _q((3, 2), torch.qint8), 0.1, 128),
     r"expected output_zero_point in \[-128, 127\] for QInt8, got 128"),
    (lambda: (torch.quantize_per_channel(torch.rand(2, 3), torch.tensor([0.1, 0.2]),
                                         torch.tensor([0, 0]), 0, torch.quint8), _q((3, 2)),
              0.1, 0), r"expected qa quantized per tensor"),
]


@pytest.mark.parametrize("i", range(len(BAD)))
def test_bad_inputs(i):
    make, pattern = BAD[i]
    with pytest.raises(RuntimeError, match=rf"qplugin::matmul: {pattern}"):
        op(*make())


def test_scripted():
    @torch.jit.script
    def f(a, b):
        return torch.ops.qplugin.matmul(a, b, 0.1, 3)
    a, b = _q((3, 4)), _q((4, 2), seed=3)
    assert_qequal(f(a, b), op(a, b, 0.1, 3))


@pytest.mark.parametrize("dtype", [torch.quint8, torch.qint8])
def test_ties_round_half_to_even(isa, dtype):
    # acc * sa * sb / scale lands exactly on k + 0.5 (all powers of two): round half to even,
    # through the packed path's finishing pass (kActLeakyRelu with slope 1).
    lo = 0 if dtype == torch.quint8 else -128
    zp = 0 if dtype == torch.quint8 else -100
    codes_a = torch.tensor([[1, 1, 1], [1, 2, 2], [3, 3, 1], [1, 0, 0]]) + lo
    codes_b = torch.ones(3, 5, dtype=torch.long) + lo
    codes_b[:, 1] = 0 + lo
    codes_b[0, 2] = 2 + lo
    cd = torch.uint8 if dtype == torch.quint8 else torch.int8
    a = torch._make_per_tensor_quantized_tensor(codes_a.to(cd), 0.5, lo)
    b = torch._make_per_tensor_quantized_tensor(codes_b.to(cd), 0.5, lo)
    # acc = 3, 5, 7, 1 (column 0): * 0.25 / 0.5 = 1.5, 2.5, 3.5, 0.5 -> 2, 2, 4, 0.
    got = op(a, b, 0.5, zp)
    assert (got.int_repr()[:, 0].long() - zp).tolist() == [2, 2, 4, 0]
    assert_qequal(got, exact(a, b, 0.5, zp))


@pytest.mark.parametrize("dtype", [torch.quint8, torch.qint8])
@pytest.mark.parametrize("K", [33025, 33026])
def test_full_range_at_the_int32_limit(isa, dtype, K):
    # |(a - za)(b - zb)| = 255 * 255 for every k: K = 33025 is the largest sum int32 holds
    # (the packed int32 GEMM, LinearPackedParams::kMaxExactI32K), 33026 goes to the int64 GEMM.
    if dtype == torch.quint8:
        a = torch._make_per_tensor_quantized_tensor(torch.full((2, K), 255, dtype=torch.uint8),
                                                    1.0, 0)
        b = torch._make_per_tensor_quantized_tensor(torch.zeros((K, 3), dtype=torch.uint8),
                                                    1.0, 255)
    else:
        a = torch._make_per_tensor_quantized_tensor(torch.full((2, K), -128, dtype=torch.int8),
                                                    1.0, 127)
        b = torch._make_per_tensor_quantized_tensor(torch.full((K, 3), 127, dtype=torch.int8),
                                                    1.0, -128)
    acc = -K * 255 * 255
    scale = 2.0 ** 24
    zp = 255 if dtype == torch.quint8 else 127  # keeps round(acc / scale) ~ -128 unclamped
    got = op(a, b, scale, zp)
    want = round(acc / scale) + zp  # no tie: acc is odd
    assert got.int_repr().long().unique().tolist() == [want]
    assert_qequal(got, exact(a, b, scale, zp))


def test_threads_give_the_same_bytes():
    a, b = _q((3, 70, 96), seed=5), _q((3, 96, 50), seed=6)
    old = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = op(a, b, 0.3, 7)
        torch.set_num_threads(2)
        two = op(a, b, 0.3, 7)
        a2, b2 = a[:1], b[:1]  # a single batch: the row blocks spread over the threads
        two_single = op(a2, b2, 0.3, 7)
    finally:
        torch.set_num_threads(old)
    assert_qequal(one, two)
    assert_qequal(two_single, one[:1])
