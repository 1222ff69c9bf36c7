"""Helpers of the normalization tests (tests/normalization/test_*.py): quantized inputs drawn in
code space, the exact float64 reference, a qparams-checking front of _reference.assert_qclose.
The `isa` fixture is tests/conftest.py's; tests/conftest.py puts this folder on sys.path.
"""
import re
import warnings

import pytest  # noqa: E402
import torch  # noqa: E402
from _reference import INT_DTYPE, QRANGE  # noqa: E402,F401  (one QRANGE: tests/_sweeps.py)
from _reference import assert_qclose, isas_to_compare  # noqa: F401  (byte-identity tests)
from _reference import one_thread  # noqa: F401  (the autouse fixture, re-exported)

import qplugin  # noqa: E402,F401

torch.backends.quantized.engine = "x86"
warnings.filterwarnings("ignore", message=".*quantize_per_tensor.*deprecated.*")
warnings.filterwarnings("ignore", message=".*quantized tensor.*deprecated.*")

ISAS = ("scalar", "avx2", "avx512vnni")

# The folder's warning filter (torch.ao's quantized ops and modules warn that they are
# deprecated): each test file imports it as its own `pytestmark`.
pytestmark = pytest.mark.filterwarnings("ignore:.*deprecated")


def qtensor(shape, dtype=torch.quint8, scale=0.05, zero_point=128, seed=0, mean=None, std=30.0,
            channels_last=False):
    """A quantized tensor whose codes are drawn directly (normal around `mean` codes, clamped),
    so extreme zero points still get a spread of codes."""
    g = torch.Generator().manual_seed(seed)
    lo, hi = QRANGE[dtype]
    if mean is None:
        mean = (max(lo, -300) + min(hi, 300)) / 2
    codes = torch.randn(shape, generator=g, dtype=torch.float64) * std + mean
    codes = codes.round().clamp(max(lo, -2**31), min(hi, 2**31 - 1)).to(INT_DTYPE[dtype])
    q = torch._make_per_tensor_quantized_tensor(codes, scale, zero_point)
    if channels_last:
        q = q.contiguous(memory_format=torch.channels_last if len(shape) == 4
                         else torch.channels_last_3d)
    return q


def affine_params(affine, C, seed=1):
    """(weight, bias) of C channels drawn from seed, or (None, None) when not affine."""
    if not affine:
        return None, None
    g = torch.Generator().manual_seed(seed)
    return torch.randn(C, generator=g) * 1.5, torch.randn(C, generator=g)


def assert_bad_input(fn, msg, op):
    """fn() raises a RuntimeError whose first line is "qplugin::<op>: expected ..." matching the
    regular expression msg."""
    with pytest.raises(RuntimeError) as info:
        fn()
    text = str(info.value).splitlines()[0]
    assert text.startswith(f"qplugin::{op}: expected") and re.search(msg, text), text


def dequant64(q):
    return (q.int_repr().to(torch.float64) - q.q_zero_point()) * q.q_scale()


def exact(fn, q, scale, zero_point):
    """Codes of the exact reference: fn on the float64 dequantized input, quantized with
    (scale, zero_point), round half to even, clamped to the dtype."""
    lo, hi = QRANGE[q.dtype]
    y = fn(dequant64(q))
    return torch.clamp(torch.round(y / scale) + zero_point, lo, hi).to(torch.int64)


def assert_q(actual, expected, scale, zero_point, *, max_diff=1, min_identical=0.99, what=""):
    """actual has qparams (scale, zero_point) and agrees with expected (a quantized tensor or int
    codes) as _reference.assert_qclose says."""
    assert actual.q_scale() == scale and actual.q_zero_point() == zero_point, (
        f"{what}: qparams ({actual.q_scale()}, {actual.q_zero_point()}) != ({scale}, {zero_point})")
    assert_qclose(actual, expected.int_repr() if expected.is_quantized else expected, max_diff,
                  min_identical, msg=what)


def identical_share(a, b):
    ai = a.int_repr().to(torch.int64) if a.is_quantized else a.to(torch.int64)
    bi = b.int_repr().to(torch.int64) if b.is_quantized else b.to(torch.int64)
    return float((ai == bi).to(torch.float64).mean()) if ai.numel() else 1.0
