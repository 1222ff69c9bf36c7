# Property tests of linear / linear_relu: random M (any leading dims), K, N around the kernels'
# blocks, strided/transposed/offset inputs, per-tensor and per-channel weights with any zero point,
# extreme activation zero points, tiny/huge scales, saturating codes; against the exact float64
# reference (within 1 unit, >= 99% identical) and the scalar kernels (byte-identical) on every
# ISA. Changes with: tests/fuzz/_fuzz.py, csrc/packed/linear_packed_params.*, csrc/kernels/gemm/*.
import pytest
import torch

from _fuzz import LAYOUTS, LONG, Case, cases, check, deq64, output_qparams, requant64

Q = torch.ops.qplugin


def draw_linear(seed):
    c = Case("linear", seed)
    kmax, nmax = (1100, 300) if LONG else (300, 80)
    K = c.choice((1, 2, 3, 4, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129,
                  c.randint(1, kmax), c.randint(1, kmax)))
    N = c.choice((1, 3, 8, 15, 16, 17, 31, 32, 33, 48, 64, 65, c.randint(1, nmax)))
    lead = c.choice(((c.size(1, 70 if LONG else 40),), (c.randint(1, 4), c.size(1, 9)),
                     (2, c.randint(1, 3), c.randint(1, 5))))
    shape = c.shrink((*lead, K), keep=(len(lead),))
    relu = c.chance(0.3)
    c.note(K=K, N=N, relu=relu)
    x = c.qtensor(shape, torch.quint8, c.scale(), c.zero_point(torch.quint8),
                  layouts=LAYOUTS[max(2, len(shape))])
    w = c.qweight((N, K))
    bias = None
    if c.chance(0.8):
        mag = x.q_scale() * float(deq64(w).abs().max() + 1e-30) * 64 * K ** 0.5
        bias = c.randn(N) * mag * c.choice((0.01, 1.0, 10.0))
    c.note(bias=bias is not None)
    v = deq64(x) @ deq64(w).T
    if bias is not None:
        v = v + bias.double()
    scale, zp = output_qparams(c, torch.relu(v) if relu else v)
    expected = requant64(v, scale, zp, torch.quint8, relu=relu)
    c.units = (torch.relu(v) if relu else v) / scale
    op = Q.linear_relu if relu else Q.linear
    # Prepack inside run(): a packed object keeps the kernel of the ISA current at prepack.
    return c, (lambda: op(x, Q.linear_prepack(w, bias), scale, zp)), expected


@pytest.mark.parametrize("seed", cases(40))
def test_fuzz_linear(isa, seed):
    case, run, expected = draw_linear(seed)
    check(case, isa, run, expected)
