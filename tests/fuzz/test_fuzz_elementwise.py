# Property tests of add / add_relu / mul / mul_relu (broadcasting shapes, mixed layouts, per-input
# qparams incl. extreme zero points and tiny/huge scales) and cat (equal qparams: a pure copy,
# identical; requantizing: within 1 unit / >= 99% identical) against the exact float64
# reference, every ISA byte-identical to scalar. Changes with: tests/fuzz/_fuzz.py,
# csrc/ops/quantized_cpu/binary_kernel.cpp, cat_kernel.cpp.
import pytest
import torch

from _fuzz import LAYOUTS, LONG, Case, cases, check, deq64, output_qparams, requant64

Q = torch.ops.qplugin
DTYPES = (torch.quint8, torch.qint8)


def _shape(c):
    rank = c.randint(1, 5)
    return list(c.shrink([c.size(1, 70 if LONG else 24) for _ in range(rank)]))


def draw_binary(seed):
    c = Case("binary", seed)
    op = c.choice(("add", "add_relu", "mul", "mul_relu"))
    dtype = c.choice(DTYPES)
    shape = _shape(c)
    sb = list(shape)
    kind = c.choice(("same", "same", "broadcast_b", "broadcast_both", "lower_rank"))
    if kind == "broadcast_b":
        sb = [1 if c.chance(0.5) else n for n in sb]
    elif kind == "broadcast_both":
        sa = list(shape)
        for i in range(len(shape)):
            r = c.randint(0, 2)
            if r == 1:
                sa[i] = 1
            elif r == 2:
                sb[i] = 1
        shape = sa
    elif kind == "lower_rank":
        sb = sb[c.randint(0, len(sb) - 1):]
    c.note(op=op, broadcast=kind)
    a = c.qtensor(shape, dtype, c.scale(), c.zero_point(dtype),
                  layouts=LAYOUTS.get(len(shape), ("contiguous",)), name="a")
    if c.chance(0.15):
        b = a  # the same tensor twice (aliasing inputs)
        c.note(b="a")
    else:
        b = c.qtensor(sb, dtype, c.scale() if c.chance(0.7) else a.q_scale(),
                      c.zero_point(dtype), layouts=LAYOUTS.get(len(sb), ("contiguous",)),
                      name="b")
    relu = op.endswith("_relu")
    v = deq64(a) + deq64(b) if op.startswith("add") else deq64(a) * deq64(b)
    scale, zp = output_qparams(c, torch.relu(v) if relu else v, dtype)
    expected = requant64(v, scale, zp, dtype, relu=relu)
    c.units = (torch.relu(v) if relu else v) / scale
    fn = getattr(Q, op)
    return c, (lambda: fn(a, b, scale, zp)), expected


def draw_cat(seed):
    c = Case("cat", seed)
    dtype = c.choice(DTYPES)
    rank = c.randint(1, 5)
    base = list(c.shrink([c.size(1, 40 if LONG else 16) for _ in range(rank)],
                         max_numel=3000 if not LONG else 30000))
    dim = c.randint(-rank, rank - 1)
    n = c.randint(1, 5)
    same_qparams = c.chance(0.5)
    s0, z0 = c.scale(), c.zero_point(dtype)
    xs = []
    for i in range(n):
        shape = list(base)
        shape[dim] = c.randint(0 if c.chance(0.1) else 1, 9)
        s, z = (s0, z0) if same_qparams else (c.scale(), c.zero_point(dtype))
        xs.append(c.qtensor(shape, dtype, s, z, layouts=LAYOUTS.get(rank, ("contiguous",)),
                            name=f"x{i}"))
    relu = c.chance(0.3)
    out_given = not same_qparams or c.chance(0.3)
    c.note(dim=dim, n=n, same_qparams=same_qparams, relu=relu, out_qparams_given=out_given)
    v = torch.cat([deq64(x) for x in xs], dim)
    if out_given:
        scale, zp = output_qparams(c, torch.relu(v) if relu else v, dtype)
    else:
        scale, zp = s0, z0
    expected = requant64(v, scale, zp, dtype, relu=relu)
    c.units = (torch.relu(v) if relu else v) / scale
    fn = Q.cat_relu if relu else Q.cat
    # With every input's qparams equal to the output's there is no arithmetic: identical.
    exact = all(x.q_scale() == scale and x.q_zero_point() == zp for x in xs)
    return c, (lambda: fn(xs, dim, scale, zp)), expected, exact


@pytest.mark.parametrize("seed", cases(40))
def test_fuzz_binary(isa, seed):
    case, run, expected = draw_binary(seed)
    check(case, isa, run, expected)


@pytest.mark.parametrize("seed", cases(20))
def test_fuzz_cat(isa, seed):
    case, run, expected, exact = draw_cat(seed)
    check(case, isa, run, expected, exact=exact)
