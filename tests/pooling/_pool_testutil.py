"""Helpers of the pooling/upsample tests: quantized inputs, the exact references, comparisons and
the ISA fixture. Self-contained (no conftest needed): each test file puts the repo root and this
directory on sys.path.
"""
import os
import sys
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import pytest  # noqa: E402
import torch  # noqa: E402

import qplugin  # noqa: E402,F401

torch.backends.quantized.engine = "x86"
warnings.filterwarnings("ignore", message=".*quantize_per_tensor.*")
warnings.filterwarnings("ignore", message=".*quantized tensor.*deprecated.*")

ISAS = ("scalar", "avx2", "avx512vnni")
QRANGE = {torch.quint8: (0, 255), torch.qint8: (-128, 127), torch.qint32: (-2**31, 2**31 - 1)}
DTYPES = (torch.quint8, torch.qint8, torch.qint32)


@pytest.fixture(autouse=True)
def one_thread():
    prev = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(prev)


@pytest.fixture(params=ISAS)
def isa(request):
    """Runs the test with the kernels of one ISA; skips when the CPU or QPLUGIN_CPU_ISA cannot."""
    got = torch.ops.qplugin._set_cpu_isa(request.param)
    if got != request.param:
        torch.ops.qplugin._set_cpu_isa("auto")
        pytest.skip(f"ISA {request.param} not available here (capped at {got})")
    yield got
    torch.ops.qplugin._set_cpu_isa("auto")


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


def assert_within1(y_codes, ref_codes, min_same=0.99):
    """At most 1 unit apart and at least min_same of the elements identical."""
    a = y_codes.to(torch.int64)
    b = ref_codes.to(torch.int64)
    assert a.shape == b.shape, (a.shape, b.shape)
    if a.numel() == 0:
        return
    d = (a - b).abs()
    worst = int(d.argmax())
    same = (d == 0).double().mean().item()
    assert d.max().item() <= 1, f"max diff {d.max().item()} at flat index {worst}"
    assert same >= min_same, f"only {same:.4f} identical (need {min_same})"
