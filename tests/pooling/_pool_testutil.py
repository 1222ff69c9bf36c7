"""Helpers of the pooling/upsample tests: quantized inputs, the exact references, a bit-identity
check with layout. The `isa` fixture is tests/conftest.py's; assert_qclose and QRANGE are
tests/_reference.py's (re-exported here). tests/conftest.py puts this folder on sys.path.
"""
import warnings

import pytest  # noqa: E402
import torch  # noqa: E402
from _reference import QRANGE, assert_qclose  # noqa: E402,F401  (one QRANGE: tests/_sweeps.py)
from _reference import one_thread  # noqa: E402,F401  (the autouse fixture, re-exported)

import qplugin  # noqa: E402,F401

torch.backends.quantized.engine = "x86"
warnings.filterwarnings("ignore", message=".*quantize_per_tensor.*")
warnings.filterwarnings("ignore", message=".*quantized tensor.*deprecated.*")

ISAS = ("scalar", "avx2", "avx512vnni")
DTYPES = (torch.quint8, torch.qint8, torch.qint32)


def qtensor(shape, dtype=torch.quint8, scale=0.05, zero_point=None, seed=0, channels_last=False,
            spread=40.0):
    """Quantized tensor with codes drawn around the zero point (clamped to the dtype range)."""
    g = torch.Generator().manual_seed(seed)
    lo, hi = QRANGE[dtype]
    if zero_point is None:
        zero_point = {torch.quint8: 120, torch.qint8: -5, torch.qint32: 7}[dtype]
    codes = (torch.randn(shape, generator=g, dtype=torch.float64) * spread + zero_point).round()
    codes = codes.clamp(max(lo, -10**6), min(hi, 10**6))
    x = torch._make_per_tensor_quantized_tensor(
        codes.to({torch.quint8: torch.uint8, torch.qint8: torch.int8,
                  torch.qint32: torch.int32}[dtype]), scale, zero_point)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last if len(shape) == 4
                         else torch.channels_last_3d)
    return x


def codes_minus_zp(x):
    return x.int_repr().to(torch.float64) - x.q_zero_point()


def requant_codes(v, like):
    """round_half_even(v) + zp, clamped: v is a float64 tensor in code units minus zp."""
    lo, hi = QRANGE[like.dtype]
    return (torch.round(v) + like.q_zero_point()).clamp(lo, hi).to(torch.int64)


def assert_same(y, ref, layout=True):
    """Bit-identical codes, same shape, qparams and (optionally) memory layout."""
    assert y.shape == ref.shape, (y.shape, ref.shape)
    assert y.dtype == ref.dtype
    assert y.q_scale() == ref.q_scale() and y.q_zero_point() == ref.q_zero_point()
    if layout:
        assert y.stride() == ref.stride(), (y.stride(), ref.stride())
    torch.testing.assert_close(y.int_repr(), ref.int_repr(), rtol=0, atol=0)


