# Property tests of layer_norm (1-3 normalized dims), group_norm and instance_norm: random shapes,
# layouts, dtypes, affine or not, eps, extreme zero points and tiny/huge scales, against the exact
# float64 reference (within 1 unit, >= 99% identical) and the scalar kernels (byte-identical) on
# every ISA. Changes with: tests/fuzz/_fuzz.py, csrc/ops/quantized_cpu/normalization_kernel.cpp,
# csrc/kernels/normalization/*.
import pytest
import torch

from _fuzz import LAYOUTS, LONG, Case, cases, check, output_qparams, requant64

Q = torch.ops.qplugin
DTYPES = (torch.quint8, torch.qint8)


def _affine(c, shape):
    w = c.randn(*shape) * c.choice((0.1, 1.0, 3.0)) if c.chance(0.7) else None
    b = c.randn(*shape) * c.choice((0.1, 1.0)) if c.chance(0.7) else None
    c.note(weight=w is not None, bias=b is not None)
    return w, b


def normalized64(x, kind, nshape, groups, w, b, eps):
    """The exact normalization in float64, in code units: (c - mean) / sqrt(var + eps / s^2)
    equals (x - mean_x) / sqrt(var_x + eps) for x = (c - zp) * s, and with integer codes the
    sum is exact, so a constant group gives exactly 0 (F.layer_norm/group_norm in float64 leave
    ~1e-17 there, which an output scale of 1e-12 turns into garbage: QPLUGIN_FUZZ=long found
    it). Two-pass variance. instance_norm is group_norm with one channel per group (and no
    "more than 1 spatial element" rule)."""
    c = x.int_repr().to(torch.float64)
    shape = c.shape
    if kind == "layer":
        flat = c.reshape(-1, *nshape).reshape(-1, int(torch.tensor(nshape).prod()))
    else:
        g = shape[1] if kind == "instance" else groups
        flat = c.reshape(shape[0], g, -1).reshape(shape[0] * g, -1)
    mean = flat.sum(1, keepdim=True) / flat.shape[1]
    d = flat - mean
    var = (d * d).sum(1, keepdim=True) / flat.shape[1]
    y = (d / torch.sqrt(var + eps / x.q_scale() ** 2)).reshape(shape)
    if kind == "layer":
        aff = list(nshape)
    else:
        aff = [shape[1]] + [1] * (len(shape) - 2)
    if w is not None:
        y = y * w.double().reshape(aff)
    if b is not None:
        y = y + b.double().reshape(aff)
    return y


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
    v = normalized64(x, kind, nshape, groups if kind == "group" else None, w, b, eps)
    if kind == "layer":
        args = (nshape, w, b, eps)
        fn = Q.layer_norm
    elif kind == "group":
        args = (groups, w, b, eps)
        fn = Q.group_norm
    else:
        args = (w, b, eps)
        fn = Q.instance_norm
    scale, zp = output_qparams(c, v, dtype)
    expected = requant64(v, scale, zp, dtype)
    c.units = v / scale
    # Inputs of two codes (only qmin / qmax) or a narrow band give a few distinct outputs: one of
    # them within float32 reach of a tie can be > 1% of the elements (group norm of qmin / qmax
    # codes: 5 of 396 at 45.4999976 units, QPLUGIN_FUZZ_OFFSET=1900000 seed 1900008, the same
    # bytes on every ISA). There every differing element must sit within _fuzz.TIE of a tie.
    c.ties_any_size = c.params.get("x_codes") in ("extremes", "near_zp")
    return c, (lambda: fn(x, *args, scale, zp)), expected


@pytest.mark.parametrize("seed", cases(45))
def test_fuzz_norm(isa, seed):
    case, run, expected = draw_norm(seed)
    check(case, isa, run, expected)
