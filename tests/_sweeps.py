# Seeded draws of shapes, layouts and quantization parameters for the op sweeps (hypothesis is not
# a dependency). Tests parametrize over `seed` (seeds()); conftest prints the seed of a failure.
# QPLUGIN_SWEEP=long draws more seeds over wider ranges. Changes with: tests/conftest.py.
import math
import os
import random

import torch

LONG = os.environ.get("QPLUGIN_SWEEP", "") == "long"

DTYPES = (torch.quint8, torch.qint8, torch.qint32)
INT8_DTYPES = (torch.quint8, torch.qint8)
QRANGE = {
    torch.quint8: (0, 255),
    torch.qint8: (-128, 127),
    torch.qint32: (-(2 ** 31), 2 ** 31 - 1),
}
INT_DTYPE = {torch.quint8: torch.uint8, torch.qint8: torch.int8, torch.qint32: torch.int32}
# Edge sizes: 1, odd, around the 16-wide vector bodies and the 64-pixel transpose blocks.
SIZES = (1, 2, 3, 15, 16, 17, 33, 63, 64, 65) + ((5, 7, 31, 32, 127, 129) if LONG else ())
# qint32 codes stay within zp +- QINT32_SPAN (and outputs within a similar number of units):
# PyTorch computes in float32, so beyond ~2**14 units its rounding (and qplugin's, which follows
# the same float32 formula for batch norm) drifts from the exact float64 reference.
QINT32_SPAN = 2 ** 14 if LONG else 2 ** 12
LAYOUTS_4D = ("contiguous", "channels_last", "transposed", "sliced", "channels_last_sliced",
              "offset", "broadcast")
LAYOUTS_2D = ("contiguous", "transposed", "sliced", "offset", "broadcast")


def seeds(short=4, long=40):
    """Seeds to parametrize a sweep over."""
    return list(range(long if LONG else short))


def layouts(rank):
    return LAYOUTS_4D if rank >= 4 else LAYOUTS_2D


def with_layout(q, layout):
    """A tensor equal to q (same sizes and values) in the given memory layout.

    contiguous; channels_last (4-D/5-D); transposed (dims 1 and -1 swapped in memory);
    sliced (every other element of the last dim, offset by one; also offset in dim 0);
    channels_last_sliced (a channels-last tensor sliced in the last dim: not dense, but strides
    like channels-last); offset (contiguous, at a nonzero storage offset);
    broadcast (the exception: q[:1] expanded along dim 0, stride 0, so the values repeat).
    """
    if layout == "broadcast":
        return q[:1].contiguous().expand(q.shape)
    if layout == "offset":
        big = torch._make_per_tensor_quantized_tensor(
            torch.zeros((q.numel() + 7,), dtype=INT_DTYPE[q.dtype]), q.q_scale(), q.q_zero_point())
        view = big[7:].view(q.shape)
        view.copy_(q)
        assert view.storage_offset() == 7 and view.is_contiguous()
        return view
    if layout == "contiguous":
        return q.contiguous()
    if layout == "channels_last":
        if q.dim() == 4:
            return q.contiguous(memory_format=torch.channels_last)
        if q.dim() == 5:
            return q.contiguous(memory_format=torch.channels_last_3d)
        return q.contiguous()
    if layout == "transposed":
        if q.dim() < 2:
            return q.contiguous()
        d0 = 0 if q.dim() == 2 else 1  # (N, C): swap N and C; otherwise C and the last dim
        return q.transpose(d0, -1).contiguous().transpose(d0, -1)
    if layout in ("sliced", "channels_last_sliced"):
        big_shape = list(q.shape)
        big_shape[-1] = 2 * big_shape[-1] + 1
        big_shape[0] = big_shape[0] + 1
        big = torch._make_per_tensor_quantized_tensor(
            torch.zeros(big_shape, dtype=INT_DTYPE[q.dtype]), q.q_scale(), q.q_zero_point())
        if layout == "channels_last_sliced" and q.dim() in (4, 5):
            fmt = torch.channels_last if q.dim() == 4 else torch.channels_last_3d
            big = big.contiguous(memory_format=fmt)
        view = big[1:][..., 1::2]
        # Quantized -> quantized with equal qparams copies the codes verbatim (a float round
        # trip would be lossy for qint32).
        view.copy_(q)
        assert torch.equal(view.int_repr(), q.int_repr())
        return view
    raise ValueError(f"unknown layout {layout!r}")


def make_q(codes, scale, zero_point, dtype):
    """A per-tensor quantized tensor holding exactly `codes` (an integer tensor)."""
    return torch._make_per_tensor_quantized_tensor(codes.to(INT_DTYPE[dtype]), scale, zero_point)


class Draw:
    """Seeded draws. Every method consumes the same generator, so one seed fixes a whole case."""

    def __init__(self, seed):
        self.seed = seed
        self.rng = random.Random(seed)
        self.gen = torch.Generator().manual_seed(seed)

    def __repr__(self):
        return f"Draw(seed={self.seed}, long={LONG})"

    def choice(self, seq):
        return seq[self.rng.randrange(len(seq))]

    def size(self):
        return self.choice(SIZES)

    def shape(self, rank, max_numel=40_000):
        """(N, C, spatial...) with edge sizes, shrunk until it has at most max_numel elements."""
        if rank == 1:
            return (self.rng.choice((1, 15, 16, 17, 63, 64, 65, 1000, 4099)),)
        shape = [self.rng.choice((1, 2, 3))] + [self.size() for _ in range(rank - 1)]
        while math.prod(shape) > max_numel:
            i = max(range(1, rank), key=lambda j: shape[j])
            new = shape[i] // 2
            shape[i] = new + 1 if new > 1 and new % 2 == 0 else max(1, new)  # stays odd
        return tuple(shape)

    def scale(self, lo=1e-4, hi=10.0):
        """Log-uniform in [lo, hi]; one time in five exactly an endpoint."""
        if self.rng.random() < 0.2:
            return self.rng.choice((lo, hi))
        return math.exp(self.rng.uniform(math.log(lo), math.log(hi)))

    def activation_scale(self):
        """An input scale for relu6/hardswish/elu: mostly one whose 8-bit range covers the
        functions' bends (-3, 0, 3, 6) at a few to a hundred codes per unit; one time in five
        an extreme (1e-4 or 10)."""
        r = self.rng.random()
        if r < 0.2:
            return self.rng.choice((1e-4, 10.0))
        if r < 0.5:
            return self.nice_scale()
        return math.exp(self.rng.uniform(math.log(0.005), math.log(0.2)))

    def nice_scale(self):
        """A round scale: such scales put many exact ties (x.5) in requantization, where
        round-half-even and float-vs-double differences show."""
        return self.rng.choice((1 / 64, 1 / 32, 1 / 16, 0.01, 0.02, 0.025, 0.03, 0.05, 0.1))

    def zero_point(self, dtype, extreme=1 / 3, lo=0.0, hi=1.0):
        """8-bit: qmin or qmax with probability `extreme`, else uniform over the [lo, hi]
        fraction of the range. qint32 stays moderate so PyTorch's float arithmetic is still
        exact enough to serve as the oracle."""
        qmin, qmax = QRANGE[dtype]
        if dtype == torch.qint32:
            # PyTorch adds the output zero point in float32: beyond a few thousand its rounding
            # is off (qplugin's is not), and it stops being a usable oracle.
            return self.rng.randint(-1000, 1000)
        if self.rng.random() < extreme:
            return self.rng.choice((qmin, qmax))
        width = qmax - qmin
        return self.rng.randint(qmin + round(lo * width), qmin + round(hi * width))

    def codes(self, shape, dtype, zero_point):
        """Integer codes: the full 8-bit range; for qint32 zp +- QINT32_SPAN."""
        if dtype == torch.qint32:
            lo, hi = zero_point - QINT32_SPAN, zero_point + QINT32_SPAN
        else:
            lo, hi = QRANGE[dtype]
        return torch.randint(lo, hi + 1, shape, generator=self.gen, dtype=torch.int64)

    def qtensor(self, shape, dtype, scale=None, zero_point=None, layout="contiguous"):
        scale = self.scale() if scale is None else scale
        zero_point = self.zero_point(dtype) if zero_point is None else zero_point
        q = make_q(self.codes(shape, dtype, zero_point), scale, zero_point, dtype)
        return with_layout(q, layout)

    def randn(self, *shape, dtype=torch.float32):
        return torch.randn(*shape, generator=self.gen, dtype=dtype)

    def rand(self, *shape, dtype=torch.float32):
        return torch.rand(*shape, generator=self.gen, dtype=dtype)

    def bn_params(self, x):
        """weight, bias, mean, var (float32, [C]) scaled to x's dequantized range, so that the
        normalized output is neither all clamped nor all zero."""
        C = x.shape[1]
        zp, s = x.q_zero_point(), x.q_scale()
        qmin, qmax = QRANGE[x.dtype]
        if x.dtype == torch.qint32:
            span = QINT32_SPAN
        else:
            span = (qmax - qmin) / 2
        center = ((qmin + qmax) / 2 - zp) * s if x.dtype != torch.qint32 else 0.0
        spread = span * s / 2
        mean = center + self.randn(C) * spread / 2
        var = (spread ** 2) * (0.25 + self.rand(C) * 2)
        weight = self.randn(C) + 0.1 * torch.sign(self.randn(C))
        bias = self.randn(C)
        return weight, bias, mean.float(), var.float()

    def bn_output_qparams(self, x):
        """Output scale a few times the normalized output's step, zero point anywhere."""
        dtype = x.dtype
        span = QINT32_SPAN if dtype == torch.qint32 else 127.5
        # normalized values are ~N(0, 4) (weight ~1, |x - mean| ~ 2 sigma); spread them over
        # a fraction to all of the output range.
        scale = 4.0 / span * math.exp(self.rng.uniform(math.log(0.5), math.log(8.0)))
        return scale, self.zero_point(dtype)
