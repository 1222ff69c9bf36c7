"""Shared helpers of the conv tests: ISA fixture, input factory, exact float64 oracle."""
import sys

import warnings  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import qplugin  # noqa: E402,F401
from _reference import assert_qclose, gemm_oracle  # noqa: E402,F401  (tests/ is on sys.path: conftest.py)

warnings.filterwarnings("ignore", message=".*quantiz.*deprecated.*")
torch.backends.quantized.engine = "x86"
START_ISA = torch.ops.qplugin._cpu_isa()
ISAS = ["scalar", "avx2", "avx512vnni"]


def make(dim, N, Cin, Cout, S, k, groups, xzp=128, per_ch=False, wzp=0, transpose=False, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.quantize_per_tensor(torch.rand(N, Cin, *([S] * dim), generator=g) * 2, 0.02, xzp,
                                  torch.quint8)
    wshape = (Cin, Cout // groups) if transpose else (Cout, Cin // groups)
    wf = torch.randn(*wshape, *([k] * dim), generator=g) * 0.1
    axis = 1 if transpose else 0
    if per_ch:
        n = wshape[axis]
        w = torch.quantize_per_channel(wf, torch.rand(n, generator=g, dtype=torch.double) * 0.002
                                       + 0.001, torch.randint(-3, 4, (n,), generator=g), axis,
                                       torch.qint8)
    else:
        w = torch.quantize_per_tensor(wf, 0.002, wzp, torch.qint8)
    b = torch.randn(Cout, generator=g)
    return x, w, b


def exact(fn, x, w, b, osc, ozp, relu=False, **kw):
    """float64 op on dequantized inputs, quantized with round half to even (the exact oracle)."""
    y = fn(x.dequantize().double(), w.dequantize().double(), b.double(), **kw)
    q = torch.round(y / osc) + ozp
    if relu:
        q = torch.clamp(q, min=ozp)
    return torch.clamp(q, 0, 255).to(torch.int32)


def torch_oracle(r, ref_int, x, w, what=""):
    """PyTorch's output codes r where PyTorch is a valid oracle for this case, else the exact
    codes ref_int: PyTorch's AVX2 u8 x s8 kernels saturate on wide-range inputs, so its conv is
    exact on AVX-512 VNNI CPUs only (tests/_reference.py gemm_oracle, docs/oracle.md)."""
    return gemm_oracle(r.int_repr().to(torch.int32), ref_int.to(torch.int32), x.int_repr(),
                       w.int_repr(), what).to(torch.int32)


