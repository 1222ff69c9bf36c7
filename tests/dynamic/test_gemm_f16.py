# qplugin's fp16-weight GEMM (csrc/kernels/dynamic/gemm_f16.h) behind linear_dynamic_fp16 /
# linear_relu_dynamic_fp16 and the fp16 RNN cells. Its numerics are a definition: per output,
# s = +0; s = fma(a[m][k], float(w[n][k]), s) for k in order; then + bias, then ReLU; identical
# bits on every ISA and thread count. Oracles: that chain computed here in float64 (each step is
# round-to-float32 of the exact a*w + s: a*w of a float32 and an fp16 value is exact in float64,
# and the sum is exact in float64 whenever the exponents of s and a*w are within 18 of each other,
# which holds for these draws), the scalar tier (std::fma) for every vector tier, and PyTorch's
# fbgemm fp16 GEMM within float rounding (it splits k into blocks, so its sums round differently).
import pytest
import torch

from _reference import isas_to_compare, using_isa

ops = torch.ops.qplugin

# (M, K, N): row remainders 1..5 and full 6-row tiles; N across 1..4 panels of 16 columns, partial
# panels, more than one 64-column block; K = 1 and odd K; from 192 rows and 8 column blocks of 64
# on, the AVX2 kernel's converted-weight path, whose K ranges of 512 store and reload the
# accumulators (K = 1100: two whole ranges and a partial one; 520 columns: a partial last panel;
# 197 rows: row blocks of 96 and a partial last row tile).
SHAPES = [(1, 1, 1), (1, 7, 5), (2, 16, 16), (3, 33, 17), (4, 64, 31), (5, 20, 48), (6, 9, 64),
          (7, 64, 100), (11, 40, 65), (13, 128, 97), (1, 256, 300), (25, 30, 70), (12, 1, 3),
          (14, 1100, 23), (197, 1100, 520), (192, 1, 513)]


def _draw(M, K, N, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(M, K, generator=g)
    w = torch.randn(N, K, generator=g) * 0.1
    b = torch.randn(N, generator=g)
    return x, w, b


def chain_reference(x, w, b, relu):
    """The definition in float64 steps rounded to float32 (see the header)."""
    a = x.double()
    wh = w.half().double()
    s = torch.zeros(x.shape[0], w.shape[0], dtype=torch.float32)
    for k in range(x.shape[1]):
        s = (s.double() + a[:, k:k + 1] * wh[:, k]).float()
    if b is not None:
        s = s + b
    if relu:
        s = torch.where(s < 0, torch.zeros_like(s), s)
    return s


def _call(x, p, relu):
    return (ops.linear_relu_dynamic_fp16 if relu else ops.linear_dynamic_fp16)(x, p)


@pytest.mark.parametrize("M,K,N", SHAPES)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("relu", [False, True])
def test_gemm_f16_is_the_chain(isa, M, K, N, bias, relu):
    x, w, b = _draw(M, K, N, seed=M * 10007 + K * 101 + N)
    b = b if bias else None
    y = _call(x, ops.linear_prepack_fp16(w, b), relu)
    assert torch.equal(y, chain_reference(x, w, b, relu)), (
        f"max diff {(y - chain_reference(x, w, b, relu)).abs().max().item()}")


def test_gemm_f16_isas_identical():
    isas = isas_to_compare()
    shapes = SHAPES + [(64, 768, 200), (100, 1000, 33), (9, 4096, 20)]
    for M, K, N in shapes:
        x, w, b = _draw(M, K, N, seed=M + K + N)
        p = ops.linear_prepack_fp16(w, b)
        outs = {}
        for isa in isas:
            with using_isa(isa):
                outs[isa] = (_call(x, p, False), _call(x, p, True))
        for isa in isas:
            for got, want in zip(outs[isa], outs["scalar"]):
                assert torch.equal(got, want), f"{isa} vs scalar at {(M, K, N)}"


def test_gemm_f16_threads_identical():
    x, w, b = _draw(300, 512, 600, seed=3)
    p = ops.linear_prepack_fp16(w, b)
    prev = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        y1 = _call(x, p, False)
        torch.set_num_threads(2)
        y2 = _call(x, p, False)
    finally:
        torch.set_num_threads(prev)
    assert torch.equal(y1, y2)


@pytest.mark.parametrize("relu", [False, True])
def test_gemm_f16_close_to_torch(relu):
    try:
        tp_fn = torch.ops.quantized.linear_prepack_fp16
    except Exception:
        pytest.skip("torch.ops.quantized unavailable")
    x, w, b = _draw(37, 1000, 130, seed=11)
    y = _call(x, ops.linear_prepack_fp16(w, b), relu)
    tfn = (torch.ops.quantized.linear_relu_dynamic_fp16 if relu
           else torch.ops.quantized.linear_dynamic_fp16)
    yt = tfn(x, tp_fn(w, b))
    ref = chain_reference(x, w, b, relu)
    # Both are fp32 sums of the same exact products; they differ by float rounding only.
    torch.testing.assert_close(y, yt, rtol=1e-5, atol=1e-5)
    assert torch.equal(y, ref)


def test_gemm_f16_weight_values_exact(isa):
    # Identity input picks single weights: y[m][n] = float(fp16(w[n][m])) exactly, including fp16
    # subnormals, the saturation at +-65504, signed zeros' magnitude and inf (w = +-inf saturates).
    vals = torch.tensor([0.0, -0.0, 1.0, -2.5, 6.0e-8, -3.0e-7, 5.9e-5, 1e-3, 65504.0, 1e9,
                         -1e9, 0.333333, 7.0e4, 1e-9], dtype=torch.float32)
    K = vals.numel()
    w = vals.repeat(3, 1)
    w[1] = vals.flip(0)
    w[2] = -vals
    p = ops.linear_prepack_fp16(w, None)
    y = ops.linear_dynamic_fp16(torch.eye(K), p)
    expected = w.clamp(-65504, 65504).half().float().t()
    assert torch.equal(y.abs(), expected.abs())
    nz = expected != 0
    assert torch.equal(y[nz], expected[nz])


def test_gemm_f16_nonfinite(isa):
    # NaN and inf propagate as in the float chain; ReLU keeps NaN (torch.relu does too).
    x, w, b = _draw(8, 40, 35, seed=5)
    x[1, 3] = float("nan")
    x[2, 7] = float("inf")
    x[4, 0] = -float("inf")
    w[5, 9] = float("nan")
    p = ops.linear_prepack_fp16(w, b)
    for relu in (False, True):
        y = _call(x, p, relu)
        ref = torch.nn.functional.linear(x.double(), w.half().double(), b.double())
        if relu:
            ref = torch.where(ref < 0, torch.zeros_like(ref), ref)
        assert torch.equal(torch.isnan(y), torch.isnan(ref))
        assert torch.equal(torch.isposinf(y), torch.isposinf(ref))
        assert torch.equal(torch.isneginf(y), torch.isneginf(ref))
        assert torch.isnan(y[:, 5]).all()


def test_gemm_f16_layouts(isa):
    x, w, b = _draw(60, 48, 70, seed=9)
    p = ops.linear_prepack_fp16(w, b)
    y = ops.linear_dynamic_fp16(x, p)
    xt = x.t().contiguous().t()  # non-contiguous view
    assert not xt.is_contiguous()
    assert torch.equal(ops.linear_dynamic_fp16(xt, p), y)
    y3 = ops.linear_dynamic_fp16(x.reshape(3, 4, 5, 48), p)
    assert y3.shape == (3, 4, 5, 70)
    assert torch.equal(y3.reshape(60, 70), y)
    assert ops.linear_dynamic_fp16(torch.randn(0, 48), p).shape == (0, 70)
    x_before = x.clone()
    ops.linear_relu_dynamic_fp16(x, p)
    assert torch.equal(x, x_before)


def test_gemm_f16_k0_and_n0(isa):
    # in_features = 0: every output is its bias (an empty sum), exactly; out_features = 0: an empty
    # output. (torch.ops.quantized.linear_dynamic_fp16 returns uninitialized memory for K = 0 on
    # torch 2.13, so the oracle here is the definition.)
    b = torch.randn(5)
    y = ops.linear_dynamic_fp16(torch.randn(3, 0), ops.linear_prepack_fp16(torch.randn(5, 0), b))
    assert torch.equal(y, b.expand(3, 5))
    p0 = ops.linear_prepack_fp16(torch.randn(5, 0), None)
    y0 = ops.linear_dynamic_fp16(torch.randn(3, 0), p0)
    assert torch.equal(y0, torch.zeros(3, 5))
    assert ops.linear_dynamic_fp16(torch.randn(3, 4),
                                   ops.linear_prepack_fp16(torch.randn(0, 4), None)).shape == (3, 0)
