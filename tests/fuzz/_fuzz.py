# Shared machinery of the property tests in tests/fuzz/: seeded case draws (shapes, memory layouts,
# qparams including extreme zero points and tiny/huge scales), exact float64 references and the
# per-case check (within 1 unit and >= 99% identical to the exact reference, DESIGN.md numerics
# contract; identical for ops with no arithmetic; every ISA byte-identical to scalar).
# QPLUGIN_FUZZ=long: many more seeds and bigger shapes. Changes with: tests/_sweeps.py,
# tests/_reference.py, every tests/fuzz/test_fuzz_*.py.
#
# The oracle is deliberately not PyTorch's quantized ops: their AVX2 kernels saturate int16 pair
# sums (docs/oracle.md; FBGEMM_ENABLE_INSTRUCTIONS=AVX2 reproduces it here), and the fuzz
# draws exactly the full-range inputs where that shows.
import math
import os
import random

import torch

from _reference import assert_bytes_equal, assert_qclose, using_isa
from _sweeps import INT_DTYPE, QRANGE, with_layout

LONG = os.environ.get("QPLUGIN_FUZZ", "") == "long"
# Element budget of one drawn tensor: CI keeps every case in milliseconds.
MAX_NUMEL = 60_000 if LONG else 6_000


# CI: 3 x `base` seeds per test (about 10 s on an idle 2-core machine, about a minute under heavy
# load); QPLUGIN_FUZZ=long: 25 x `base`, with 10x the element budget.
CI_FACTOR, LONG_FACTOR = 3, 25


# QPLUGIN_FUZZ_OFFSET=n: seeds from n on instead of 0 (fresh cases for an exploratory run; a
# failing seed reruns as printed, with the same offset or any offset below it).
OFFSET = int(os.environ.get("QPLUGIN_FUZZ_OFFSET", "0"))


def cases(base):
    """Seeds to parametrize a fuzz test over (each seed is one case)."""
    return list(range(OFFSET, OFFSET + (LONG_FACTOR if LONG else CI_FACTOR) * base))


class Case:
    """Seeded draws for one fuzz case; records every drawn parameter so a failure message says
    exactly what ran (``repr(case)``)."""

    def __init__(self, family, seed):
        self.family = family
        self.seed = seed
        self.rng = random.Random(f"{family}:{seed}")
        self.gen = torch.Generator().manual_seed(self.rng.getrandbits(63))
        self.params = {}

    def __repr__(self):
        p = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return (f"fuzz case {self.family} seed={self.seed} "
                f"(QPLUGIN_FUZZ={'long' if LONG else 'short'}): {p}")

    def note(self, **kw):
        self.params.update(kw)

    # -- scalars --------------------------------------------------------------------------------
    def choice(self, seq):
        return seq[self.rng.randrange(len(seq))]

    def randint(self, lo, hi):
        return self.rng.randint(lo, hi)

    def chance(self, p):
        return self.rng.random() < p

    def log_uniform(self, lo, hi):
        return math.exp(self.rng.uniform(math.log(lo), math.log(hi)))

    def scale(self, lo=1e-6, hi=1e4):
        """Log-uniform in [lo, hi]; one time in five exactly an endpoint (tiny/huge)."""
        if self.chance(0.2):
            return self.choice((lo, hi))
        return self.log_uniform(lo, hi)

    def zero_point(self, dtype, extreme=0.4):
        qmin, qmax = QRANGE[dtype]
        if self.chance(extreme):
            return self.choice((qmin, qmax))
        return self.randint(qmin, qmax)

    def size(self, lo=1, hi=None):
        hi = hi if hi is not None else (40 if LONG else 17)
        if self.chance(0.3):
            return self.choice(tuple(s for s in (1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64,
                                                 65) if lo <= s <= hi) or (lo,))
        return self.randint(lo, hi)

    # -- tensors --------------------------------------------------------------------------------
    def codes(self, shape, dtype, zero_point):
        """Full-range 8-bit codes; sometimes concentrated at the extremes (saturation), or in a
        narrow band around the zero point (small values), or within the lower 128 codes
        ("low7": a quint8 tensor of bytes <= 127, which the AVX2 GEMM multiplies with VPMADDUBSW)
        with a few, 0.1-5%, in the upper half ("low7_outliers": the tiles it corrects after the
        k-loop, kernels/gemm/qgemm_u8s8_6x8c4_avx2.cpp, or widens)."""
        qmin, qmax = QRANGE[dtype]
        kind = self.choice(("uniform", "uniform", "uniform", "extremes", "near_zp", "low7",
                            "low7_outliers"))
        if kind.startswith("low7"):
            c = torch.randint(qmin, qmin + 128, shape, generator=self.gen)
            if kind == "low7_outliers":
                p = self.choice((0.001, 0.01, 0.05))
                hit = torch.rand(shape, generator=self.gen) < p
                c = torch.where(hit, torch.randint(qmin + 128, qmax + 1, shape,
                                                   generator=self.gen), c)
        elif kind == "extremes":
            bits = torch.randint(0, 2, shape, generator=self.gen)
            c = torch.where(bits.bool(), qmax, qmin)
        elif kind == "near_zp":
            c = (torch.randint(-6, 7, shape, generator=self.gen) + zero_point).clamp(qmin, qmax)
        else:
            c = torch.randint(qmin, qmax + 1, shape, generator=self.gen)
        return c, kind

    def qtensor(self, shape, dtype, scale, zero_point, layouts=("contiguous",), name="x"):
        c, kind = self.codes(shape, dtype, zero_point)
        q = torch._make_per_tensor_quantized_tensor(c.to(INT_DTYPE[dtype]), scale, zero_point)
        layout = self.choice(layouts)
        self.note(**{f"{name}_shape": tuple(shape), f"{name}_dtype": str(dtype).split(".")[-1],
                     f"{name}_scale": scale, f"{name}_zp": zero_point, f"{name}_codes": kind,
                     f"{name}_layout": layout})
        return with_layout(q, layout)

    def qweight(self, shape, axis=0):
        """A qint8 weight of drawn codes (self.codes), or a third of the time codes as an observer
        gives them ("observer": Gaussian, each slice along axis scaled to a largest magnitude of
        127, sometimes with 1% of the codes at +-127: the weights whose k-group pairs the AVX2
        GEMM multiplies in s16, kernels/gemm/qgemm_u8s8_6x8c4_avx2.cpp); half the time per
        channel along axis (scales in [1e-5, 1], zero points mostly 0, sometimes extreme), else
        per tensor."""
        if self.chance(0.33):
            g = torch.randn(shape, generator=self.gen)
            red = [d for d in range(len(shape)) if d != axis]
            m = g.abs().amax(dim=red, keepdim=True).clamp_min(1e-12) if red else g.abs()
            wcodes = torch.round(g / m.clamp_min(1e-12) * 127)
            wkind = "observer"
            if self.chance(0.3):
                hit = torch.rand(shape, generator=self.gen) < 0.01
                wcodes = torch.where(hit, torch.sign(g) * 127, wcodes)
                wkind = "observer_spiky"
        else:
            wcodes, wkind = self.codes(shape, torch.qint8, 0)
        wcodes = wcodes.to(torch.int8)
        per_channel = self.chance(0.5)
        if per_channel:
            nch = shape[axis]
            scales = torch.tensor([self.scale(1e-5, 1.0) for _ in range(nch)], dtype=torch.float64)
            zps = torch.tensor([self.zero_point(torch.qint8, extreme=0.1) if self.chance(0.3) else 0
                                for _ in range(nch)], dtype=torch.int64)
            w = torch._make_per_channel_quantized_tensor(wcodes, scales, zps, axis)
        else:
            w = torch._make_per_tensor_quantized_tensor(
                wcodes, self.scale(1e-5, 1.0),
                self.zero_point(torch.qint8) if self.chance(0.3) else 0)
        self.note(w_codes=wkind, per_channel=per_channel)
        return w

    def randn(self, *shape):
        return torch.randn(*shape, generator=self.gen, dtype=torch.float32)

    def shrink(self, shape, max_numel=None, keep=()):
        """Halves the largest dims (not those in keep) until the shape fits the element budget."""
        shape = list(shape)
        max_numel = max_numel or MAX_NUMEL
        while math.prod(shape) > max_numel:
            cand = [i for i in range(len(shape)) if i not in keep and shape[i] > 1]
            if not cand:
                break
            i = max(cand, key=lambda j: shape[j])
            shape[i] = max(1, shape[i] // 2)
        return tuple(shape)


LAYOUTS = {
    2: ("contiguous", "transposed", "sliced", "offset"),
    3: ("contiguous", "transposed", "sliced", "offset"),
    4: ("contiguous", "channels_last", "transposed", "sliced", "channels_last_sliced", "offset"),
    5: ("contiguous", "channels_last", "transposed", "sliced", "channels_last_sliced", "offset"),
}


# -- exact references ---------------------------------------------------------------------------

def deq64(q):
    """Exact float64 dequantization, per tensor or per channel (any axis)."""
    c = q.int_repr().to(torch.float64)
    if q.qscheme() in (torch.per_tensor_affine, torch.per_tensor_symmetric):
        return (c - q.q_zero_point()) * q.q_scale()
    axis = q.q_per_channel_axis()
    shape = [1] * q.dim()
    shape[axis] = q.shape[axis]
    zp = q.q_per_channel_zero_points().to(torch.float64).reshape(shape)
    sc = q.q_per_channel_scales().to(torch.float64).reshape(shape)
    return (c - zp) * sc


def requant64(v, scale, zero_point, dtype, relu=False):
    """Quantized tensor of float64 values v: clamp(round_half_even(v / scale) + zp), relu as a
    floor at zp (= quantizing relu(v))."""
    assert v.dtype == torch.float64
    assert not torch.isnan(v).any(), "the float reference produced NaN"
    qmin, qmax = QRANGE[dtype]
    if relu:
        qmin = max(qmin, zero_point)
    r = (torch.round(v / scale) + zero_point).clamp(qmin, qmax)
    return torch._make_per_tensor_quantized_tensor(
        r.to(torch.int64).to(INT_DTYPE[dtype]).contiguous(), scale, zero_point)


def output_qparams(case, v, dtype=torch.quint8, name="out"):
    """Output qparams for a float64 result v: usually a scale spreading v over the code range
    (zero point where 0 falls), sometimes a much finer scale (saturating outputs), a much coarser
    one (few codes), or an extreme zero point."""
    qmin, qmax = QRANGE[dtype]
    if v.numel():
        lo, hi = min(float(v.min()), 0.0), max(float(v.max()), 0.0)
    else:
        lo, hi = -1.0, 1.0
    span = hi - lo
    if not span > 0:
        span = 1.0
    # Slightly more than span / (qmax - qmin): an exact fit puts the extremes exactly on a
    # rounding tie, where float32 and float64 legitimately round apart -- on every element that
    # holds the extreme value, which for few distinct values is far more than 1% (QPLUGIN_FUZZ=long:
    # a layer norm over 2 elements).
    scale = span / (qmax - qmin) * case.rng.uniform(1.001, 1.05)
    kind = case.choice(("fit", "fit", "fit", "fine", "coarse", "extreme_zp"))
    if kind == "fine":
        scale /= case.log_uniform(4, 100)
    elif kind == "coarse":
        scale *= case.log_uniform(4, 100)
    # Keep the scale a float32 number (the kernels compute in float32) and away from denormals.
    scale = float(torch.tensor(max(scale, 1e-30), dtype=torch.float32))
    if kind == "extreme_zp":
        zp = case.choice((qmin, qmax))
    else:
        zp = int(min(qmax, max(qmin, round(qmin - lo / scale))))
    case.note(**{f"{name}_scale": scale, f"{name}_zp": zp, f"{name}_kind": kind})
    return scale, zp


# -- the per-case check ---------------------------------------------------------------------

# Below SMALL elements the ">= 99% identical" share means "no element differs", stricter than the
# contract means it: there, every element that differs (by 1) must instead be one whose exact
# value (case.units = exact result / output scale) is within TIE of a rounding tie, where
# float32 evaluation may legitimately round the other way (QPLUGIN_FUZZ=long found such cases:
# layer_norm of 2 elements giving +-127.4999997 units, a conv with 88 outputs).
SMALL = 100
TIE = 1e-3


def _explained_by_ties(got, expected, units, any_size=False):
    if units is None or (got.numel() >= SMALL and not any_size) or got.shape != expected.shape:
        return False
    a = got.int_repr().to(torch.int64)
    e = expected.int_repr().to(torch.int64)
    d = (a - e).abs()
    if int(d.max()) > 1 or got.q_scale() != expected.q_scale() or (
            got.q_zero_point() != expected.q_zero_point()):
        return False
    u = units.reshape(d.shape)[d != 0]
    return bool(((u - torch.floor(u) - 0.5).abs() <= TIE).all())


def check(case, isa, run, expected, exact=False, msg=""):
    """run() on `isa` within 1 unit and >= 99% identical to `expected` (identical if exact), and
    byte-identical (codes, qparams, strides) to run() on the scalar kernels."""
    where = f"{case!r} isa={isa}{' ' + msg if msg else ''}"
    with using_isa(isa):
        got = run()
    if exact:
        assert_qclose(got, expected, max_diff=0, min_identical=1.0, msg=where)
    else:
        try:
            assert_qclose(got, expected, max_diff=1, min_identical=0.99, msg=where)
        except AssertionError:
            if not _explained_by_ties(got, expected, getattr(case, "units", None),
                                      getattr(case, "ties_any_size", False)):
                raise
    if isa != "scalar":
        with using_isa("scalar"):
            ref = run()
        assert_bytes_equal(got, ref, msg=f"{where}: vs scalar")
    return got


def check_float(case, isa, run, expected, tol, msg=""):
    """For ops with float outputs (embedding bags): within tol of the float64 reference, and
    bit-identical to the scalar path."""
    where = f"{case!r} isa={isa}{' ' + msg if msg else ''}"
    with using_isa(isa):
        got = run()
    assert got.dtype == torch.float32 and got.shape == expected.shape, (
        f"{where}: {got.dtype} {tuple(got.shape)} vs {tuple(expected.shape)}")
    if got.numel():
        # tol: a number, or a tensor of expected's shape (a bound per element)
        diff = (got.double() - expected).abs()
        tolv = torch.as_tensor(tol, dtype=torch.float64).expand_as(diff)
        worst = int((diff - tolv).argmax())
        d, t = float(diff.reshape(-1)[worst]), float(tolv.reshape(-1)[worst])
        assert d <= t, (
            f"{where}: |diff| {d} > {t} at flat index {worst}: "
            f"got {float(got.reshape(-1)[worst])}, expected {float(expected.reshape(-1)[worst])}")
    if isa != "scalar":
        with using_isa("scalar"):
            ref = run()
        assert torch.equal(got.view(torch.int32), ref.view(torch.int32)) and (
            got.stride() == ref.stride()), f"{where}: not bit-identical to scalar"
    return got
