"""Helpers of the normalization tests (tests/normalization/test_*.py): quantized inputs drawn in
code space, the exact float64 reference, the within-1 comparison and the ISA fixture.
Self-contained (no conftest): each test file puts the repo root and this directory on sys.path.
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
warnings.filterwarnings("ignore", message=".*quantize_per_tensor.*deprecated.*")
warnings.filterwarnings("ignore", message=".*quantized tensor.*deprecated.*")

ISAS = ("scalar", "avx2", "avx512vnni")
QRANGE = {torch.quint8: (0, 255), torch.qint8: (-128, 127), torch.qint32: (-2**31, 2**31 - 1)}
INT_DTYPE = {torch.quint8: torch.uint8, torch.qint8: torch.int8, torch.qint32: torch.int32}


@pytest.fixture(autouse=True)
def one_thread():
    """One intra-op thread unless a test asks for more: the machine may be shared, and a parallel
    region waits for its slowest (descheduled) thread. Restores the previous count."""
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


def available_isas():
    out = []
    for name in ISAS:
        if torch.ops.qplugin._set_cpu_isa(name) == name:
            out.append(name)
    torch.ops.qplugin._set_cpu_isa("auto")
    return out


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


def dequant64(q):
    return (q.int_repr().to(torch.float64) - q.q_zero_point()) * q.q_scale()


def exact(fn, q, scale, zero_point):
    """Codes of the exact reference: fn on the float64 dequantized input, quantized with
    (scale, zero_point), round half to even, clamped to the dtype."""
    lo, hi = QRANGE[q.dtype]
    y = fn(dequant64(q))
    return torch.clamp(torch.round(y / scale) + zero_point, lo, hi).to(torch.int64)


def assert_q(actual, expected, scale, zero_point, *, max_diff=1, min_identical=0.99, what=""):
    """actual: quantized tensor; expected: quantized tensor or int codes. At most max_diff apart
    and at least min_identical of the elements identical; reports the worst index."""
    assert actual.q_scale() == scale and actual.q_zero_point() == zero_point, (
        f"{what}: qparams ({actual.q_scale()}, {actual.q_zero_point()}) != ({scale}, {zero_point})")
    e = expected.int_repr() if expected.is_quantized else expected
    a = actual.int_repr().to(torch.int64)
    assert a.shape == e.shape, f"{what}: shape {tuple(a.shape)} != {tuple(e.shape)}"
    if a.numel() == 0:
        return
    d = (a - e.to(torch.int64)).abs()
    worst = int(d.max())
    share = float((d == 0).to(torch.float64).mean())
    idx = tuple(int(i) for i in torch.unravel_index(torch.argmax(d), d.shape))
    assert worst <= max_diff and share >= min_identical, (
        f"{what}: max |diff| {worst} at {idx} (got {int(a[idx])}, expected {int(e[idx])}), "
        f"{share:.4%} identical (need <= {max_diff} and >= {min_identical:.0%})")


def identical_share(a, b):
    ai = a.int_repr().to(torch.int64) if a.is_quantized else a.to(torch.int64)
    bi = b.int_repr().to(torch.int64) if b.is_quantized else b.to(torch.int64)
    return float((ai == bi).to(torch.float64).mean()) if ai.numel() else 1.0
