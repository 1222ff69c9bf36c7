# Property tests of layer_norm (1-3 normalized dims), group_norm and instance_norm: random shapes,
# layouts, dtypes, affine or not, eps, extreme zero points and tiny/huge scales, against the exact
# float64 reference (within 1 unit, >= 99% identical) and the scalar kernels (byte-identical) on
# every ISA. Changes with: tests/fuzz/_fuzz.py, csrc/ops/quantized_cpu/normalization_kernel.cpp,
# csrc/kernels/norm/*.
import pytest
import torch
import torch.nn.functional as F

from _fuzz import LAYOUTS, LONG, Case, cases, check, deq64, output_qparams, requant64

Q = torch.ops.qplugin
DTYPES = (torch.quint8, torch.qint8)


def _affine(c, shape):
    w = c.randn(*shape) * c.choice((0.1, 1.0, 3.0)) if c.chance(0.7) else None
    b = c.randn(*shape) * c.choice((0.1, 1.0)) if c.chance(0.7) else None
    c.note(weight=w is not None, bias=b is not None)
    return w, b


def draw_norm(seed):
    c = Case("norm", seed)
    kind = c.choice(("layer", "layer", "group", "instance"))
    dtype = c.choice(DTYPES)
    eps = c.choice((1e-5, 1e-5, 1e-3, 1e-12, 0.5))
    hi = 80 if LONG else 40
    if kind == "layer":
        rank = c.randint(2, 5)
        shape = [c.size(1, hi) for _ in range(rank)]
        if c.chance(0.3):
            shape[-1] = c.choice((96, 127, 128, 129, 768 if LONG else 257))
        nd = c.randint(1, min(3, rank - 1))
        shape = list(c.shrink(shape, keep=(rank - 1,)))
        nshape = shape[-nd:]
        c.note(kind=kind, normalized_shape=nshape, eps=eps)
    else:
        rank = c.randint(3, 5)
        groups = c.randint(1, 6) if kind == "group" else None
        cpg = c.randint(1, 8)
        C = groups * cpg if kind == "group" else c.randint(1, 24)
        shape = [c.randint(1, 3), C] + [c.size(1, 20 if LONG else 12) for _ in range(rank - 2)]
        shape = list(c.shrink(shape, keep=(1,)))
        nshape = [C]
        c.note(kind=kind, num_groups=groups, eps=eps)
    x = c.qtensor(shape, dtype, c.scale(), c.zero_point(dtype),
                  layouts=LAYOUTS.get(len(shape), ("contiguous",)))
    w, b = _affine(c, nshape)
    x64 = deq64(x)
    w64 = None if w is None else w.double()
    b64 = None if b is None else b.double()
    if kind == "layer":
        v = F.layer_norm(x64, nshape, w64, b64, eps)
        args = (nshape, w, b, eps)
        fn = Q.layer_norm
    elif kind == "group":
        v = F.group_norm(x64, groups, w64, b64, eps)
        args = (groups, w, b, eps)
        fn = Q.group_norm
    else:
        v = F.instance_norm(x64, weight=w64, bias=b64, eps=eps)
        args = (w, b, eps)
        fn = Q.instance_norm
    scale, zp = output_qparams(c, v, dtype)
    expected = requant64(v, scale, zp, dtype)
    return c, (lambda: fn(x, *args, scale, zp)), expected


@pytest.mark.parametrize("seed", cases(45))
def test_fuzz_norm(isa, seed):
    case, run, expected = draw_norm(seed)
    check(case, isa, run, expected)
