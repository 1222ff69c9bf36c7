"""adaptive_avg_pool1d/2d/3d and adaptive_max_pool2d: exact reference (float64 adaptive average of
codes - zp, round half to even), PyTorch within 1 / >= 99% for quint8 (PyTorch's int8 rounding
differs from the exact value on ~3% of elements), max exactly the float op on dequantized input."""
import re

import pytest  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from _pool_testutil import (DTYPES, assert_qclose, codes_minus_zp, one_thread,  # noqa
                            qtensor, requant_codes)
from qplugin.nn import _functional_pool as qF  # noqa: E402

SIZES2 = [1, 3, (5, 7), (13, 4), (None, 2), (26, 30)]


@pytest.mark.parametrize("size", SIZES2)
@pytest.mark.parametrize("cl", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_adaptive_avg_pool2d(size, cl, dtype):
    x = qtensor((2, 19, 13, 15), dtype, channels_last=cl)
    y = qF.adaptive_avg_pool2d(x, size)
    ref = F.adaptive_avg_pool2d(x, size)
    assert y.shape == ref.shape
    if y.shape[-2:] != (1, 1):
        assert y.stride() == ref.stride()
    exact = requant_codes(F.adaptive_avg_pool2d(codes_minus_zp(x), size), x)
    assert torch.equal(y.int_repr().long(), exact)
    # PyTorch's int8/int32 rounding is off by one on up to ~25% (exact reference above).
    assert_qclose(y.int_repr(), ref.int_repr(),
                  min_identical=0.99 if dtype == torch.quint8 else 0.0)


@pytest.mark.parametrize("size", [1, (2, 3, 4), (None, 5, 1)])
@pytest.mark.parametrize("cl", [False, True])
def test_adaptive_avg_pool3d(size, cl):
    x = qtensor((2, 6, 5, 7, 9), channels_last=cl)
    y = qF.adaptive_avg_pool3d(x, size)
    exact = requant_codes(F.adaptive_avg_pool3d(codes_minus_zp(x), size), x)
    assert torch.equal(y.int_repr().long(), exact)
    assert_qclose(y.int_repr(), F.adaptive_avg_pool3d(x, size).int_repr())


@pytest.mark.parametrize("size", [1, 4, 11, 40])
def test_adaptive_avg_pool1d_extension(size):
    x = qtensor((3, 5, 23))
    y = qF.adaptive_avg_pool1d(x, size)
    assert torch.equal(y.int_repr().long(),
                       requant_codes(F.adaptive_avg_pool1d(codes_minus_zp(x), size), x))


@pytest.mark.parametrize("size", [1, (3, 5), (13, 15), (20, 7)])
@pytest.mark.parametrize("cl", [False, True])
def test_adaptive_max_pool2d_extension(size, cl):
    x = qtensor((2, 9, 13, 15), torch.qint8, channels_last=cl)
    y = qF.adaptive_max_pool2d(x, size)
    torch.testing.assert_close(y.dequantize(), F.adaptive_max_pool2d(x.dequantize(), size),
                               rtol=0, atol=0)
    assert (y.q_scale(), y.q_zero_point()) == (x.q_scale(), x.q_zero_point())


def test_global_pool_isas_identical():
    x = qtensor((3, 300, 7, 7), torch.qint8, seed=4)
    outs = []
    for name in ("scalar", "avx2", "avx512vnni"):
        if torch.ops.qplugin._set_cpu_isa(name) == name:
            outs.append(qF.adaptive_avg_pool2d(x, 1).int_repr())
    torch.ops.qplugin._set_cpu_isa("auto")
    for o in outs:
        assert torch.equal(o, outs[0])


@pytest.mark.parametrize("hw", [(1, 1), (5, 6), (4, 8), (3, 11), (7, 7), (1, 63), (8, 8),
                                (5, 13), (9, 9), (10, 20)])
@pytest.mark.parametrize("planes", [1, 7, 8, 9, 16, 23, 33])
@pytest.mark.parametrize("dtype", [torch.quint8, torch.qint8])
def test_global_pool_every_isa_exact(hw, planes, dtype):
    """NCHW global average (plane_avg): plane sizes below, at and around 32 bytes (the AVX2
    kernel's chunk, whose last 1..31 bytes are the 32 bytes ending at the plane's end with the
    summed ones masked off) and 64 (AVX-512), plane counts around the batches of 8 (AVX2) and 16
    (AVX-512) planes whose averages are rounded together. Every tier gives the exact bytes."""
    x = qtensor((1, planes, *hw), dtype, seed=planes + hw[0] * 100 + hw[1])
    exact = requant_codes(F.adaptive_avg_pool2d(codes_minus_zp(x), 1), x)
    tried = []
    try:
        for name in ("scalar", "avx2", "avx512vnni"):
            if torch.ops.qplugin._set_cpu_isa(name) == name:
                tried.append(name)
                y = qF.adaptive_avg_pool2d(x, 1)
                assert torch.equal(y.int_repr().long(), exact), name
    finally:
        torch.ops.qplugin._set_cpu_isa("auto")
    assert tried


@pytest.mark.parametrize("fn, msg", [
    (lambda x: qF.adaptive_avg_pool2d(x, 0), "expected positive output sizes"),
    (lambda x: qF.adaptive_avg_pool2d(x, (2, -1)), "expected positive output sizes"),
    (lambda x: torch.ops.qplugin.adaptive_avg_pool2d(x, [2, 2, 2]), "output_size of 2 ints"),
    (lambda x: qF.adaptive_avg_pool2d(x.dequantize(), 2), "must be quantized"),
    (lambda x: qF.adaptive_max_pool2d(x, 2, return_indices=True), "return_indices"),
])
def test_adaptive_bad_input(fn, msg):
    x = qtensor((1, 2, 4, 4))
    with pytest.raises((RuntimeError, ValueError, NotImplementedError), match=re.escape(msg)):
        fn(x)
