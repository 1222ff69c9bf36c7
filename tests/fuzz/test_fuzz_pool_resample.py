# Property tests of pooling (max/avg 1d/2d/3d with kernel/stride/padding/dilation/ceil_mode/
# count_include_pad/divisor_override, adaptive avg 1d/2d/3d, adaptive max 2d) and resampling
# (nearest, nearest-exact, linear/bilinear/trilinear, align_corners) over random shapes, layouts,
# dtypes and qparams: max pooling and nearest resampling identical to the reference (no
# arithmetic), average pooling identical to the exact average (qplugin's documented claim, see
# tests/pooling/test_avg_pool.py), the rest within 1 unit / >= 99% identical; every ISA
# byte-identical to scalar. Changes with: tests/fuzz/_fuzz.py, csrc/ops/quantized_cpu/pooling_*,
# upsample_*.
import math

import pytest
import torch
import torch.nn.functional as F

from _fuzz import LAYOUTS, LONG, Case, cases, check
from _reference import using_isa
from _sweeps import INT_DTYPE, QRANGE

Q = torch.ops.qplugin
DTYPES = (torch.quint8, torch.qint8)


def _input(c, dim):
    dtype = c.choice(DTYPES)
    smax = {1: 60 if LONG else 30, 2: 24 if LONG else 13, 3: 10 if LONG else 7}[dim]
    spatial = [c.size(1, smax) for _ in range(dim)]
    chans = c.size(1, 40 if LONG else 20)
    shape = [c.choice((1, 2, 3)), chans, *spatial]
    if c.chance(0.15):
        shape = shape[1:]  # unbatched (C, spatial...)
    shape = c.shrink(shape, keep=tuple(range(len(shape) - dim, len(shape))))
    layouts = LAYOUTS.get(len(shape), ("contiguous", "transposed", "sliced", "offset"))
    x = c.qtensor(shape, dtype, c.scale(), c.zero_point(dtype), layouts=layouts)
    return x


def _codes64(x):
    # Contiguous: the float references (e.g. max_pool3d) reject some strided layouts. With the
    # canonical strides too: a contiguous tensor with size-1 dims can keep odd strides, and
    # F.max_pool3d then took an unbatched (22, 2, 1, 1) input of strides (2, 1, 2, 2) for
    # channels-last and refused it (QPLUGIN_FUZZ_OFFSET=1400000 max_pool seed 1400266).
    return x.int_repr().to(torch.float64).contiguous().view(-1).view(x.shape)


def _as_q(codes64, like):
    qmin, qmax = QRANGE[like.dtype]
    r = codes64.clamp(qmin, qmax).to(torch.int64).to(INT_DTYPE[like.dtype]).contiguous()
    return torch._make_per_tensor_quantized_tensor(r, like.q_scale(), like.q_zero_point())


def _window(c, dim, spatial, dilated, fit_unpadded=False):
    """kernel, stride, padding, dilation per dim, fitting the padded input (fit_unpadded: the
    unpadded input, which float avg_pool3d -- the reference -- requires)."""
    k, s, p, d = [], [], [], []
    for i in range(dim):
        ki = c.randint(1, max(1, min(5, spatial[i] + 2)))
        di = c.choice((1, 1, 2)) if dilated else 1
        pi = c.randint(0, ki // 2)
        while (di * (ki - 1) + 1 > spatial[i] + (0 if fit_unpadded else 2 * pi)
               and (ki > 1 or di > 1)):
            if di > 1:
                di -= 1
            else:
                ki -= 1
            pi = min(pi, ki // 2)
        k.append(ki)
        s.append(c.choice((1, 1, 2, 3)) if c.chance(0.8) else ki)
        p.append(pi)
        d.append(di)
    return k, s, p, d


def draw_max_pool(seed):
    c = Case("max_pool", seed)
    dim = c.choice((1, 2, 2, 3))
    x = _input(c, dim)
    k, s, p, d = _window(c, dim, x.shape[-dim:], dilated=True)
    ceil = c.chance(0.4)
    c.note(dim=dim, kernel=k, stride=s, padding=p, dilation=d, ceil_mode=ceil)
    fn = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[dim]
    ref = fn(_codes64(x), k, s, p, d, ceil)
    # A dilated window can skip over the whole input: the float op gives -inf there, qplugin
    # raises (tests/fuzz/test_fuzz_regressions.py: test_max_pool_window_in_padding_only_raises).
    empty_window = bool(torch.isinf(ref).any())
    c.note(empty_window=empty_window)
    op = getattr(Q, f"max_pool{dim}d")
    return c, (lambda: op(x, k, s, p, d, ceil)), (None if empty_window else _as_q(ref, x))


def draw_avg_pool(seed):
    c = Case("avg_pool", seed)
    dim = c.choice((1, 2, 2, 3))
    x = _input(c, dim)
    k, s, p, _ = _window(c, dim, x.shape[-dim:], dilated=False, fit_unpadded=dim == 3)
    ceil = c.chance(0.4)
    cip = c.chance(0.5)
    dov = c.choice((None, None, None, 1, 3, 7)) if dim > 1 else None
    c.note(dim=dim, kernel=k, stride=s, padding=p, ceil_mode=ceil, count_include_pad=cip,
           divisor_override=dov)
    fn = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}[dim]
    args = (_codes64(x) - x.q_zero_point(), k, s, p, ceil, cip)
    v = fn(*args) if dim == 1 else fn(*args, dov)
    expected = _as_q(torch.round(v) + x.q_zero_point(), x)
    op = getattr(Q, f"avg_pool{dim}d")
    if dim == 1:
        return c, (lambda: op(x, k, s, p, ceil, cip)), expected
    return c, (lambda: op(x, k, s, p, ceil, cip, dov)), expected


def draw_adaptive(seed):
    c = Case("adaptive_pool", seed)
    kind = c.choice(("avg1", "avg2", "avg2", "avg3", "max2"))
    dim = int(kind[-1])
    x = _input(c, dim)
    out = [c.randint(1, max(1, 2 * n)) for n in x.shape[-dim:]]
    c.note(kind=kind, output_size=out)
    if kind == "max2":
        expected = _as_q(F.adaptive_max_pool2d(_codes64(x), out), x)
        return c, (lambda: Q.adaptive_max_pool2d(x, out)), expected, True
    fn = {1: F.adaptive_avg_pool1d, 2: F.adaptive_avg_pool2d, 3: F.adaptive_avg_pool3d}[dim]
    v = fn(_codes64(x) - x.q_zero_point(), out)
    expected = _as_q(torch.round(v) + x.q_zero_point(), x)
    op = getattr(Q, f"adaptive_avg_pool{dim}d")
    return c, (lambda: op(x, out)), expected, False


def _nearest_ref(codes, in_sizes, size, scales, exact):
    """nearest / nearest-exact as PyTorch's quantized kernels compute them
    (aten/src/ATen/native/UpSample.h, nearest_idx / nearest_neighbor_exact_compute_source_index):
    per dimension, with s = float(1 / scale) or float(in) / out in float32, source index
    min(floorf(o * s), in - 1) (nearest; out == in copies and out == 2 in halves the index
    whatever scale is given) or min(floorf(float((o + 0.5) * s)), in - 1) (nearest-exact).
    Not F.interpolate: where o * in / out (or (o + 0.5) * in / out) is an integer in exact
    arithmetic, float32 puts it on either side, and PyTorch's float kernels land on the other side
    for some sizes, e.g. 1-d nearest-exact 56 -> 99 at output 49, nearest 56 -> 92 at output 23
    (QPLUGIN_FUZZ=long with QPLUGIN_FUZZ_OFFSET: resample seeds 100437, 100472, 1200045,
    1300178); they also use a given scale where nearest_idx copies (seed 397). torch's quantized
    2-d ops and qplugin agree on all of these."""
    out = codes
    for d, (n, o, f) in enumerate(zip(in_sizes, size, scales)):
        pos = torch.arange(o, dtype=torch.float64)
        if not exact and o == n:
            idx = pos.long()
        elif not exact and o == 2 * n:
            idx = pos.long() // 2
        else:
            s = (torch.tensor(1.0 / f, dtype=torch.float64).float() if f is not None and f > 0
                 else torch.tensor(n, dtype=torch.float32) / o)
            src = ((pos + 0.5) * s.double()).float() if exact else pos.float() * s
            idx = src.floor().clamp(0, n - 1).long()
        out = out.index_select(out.dim() - len(in_sizes) + d, idx)
    return out


def draw_resample(seed):
    c = Case("resample", seed)
    mode = c.choice(("nearest", "nearest", "nearest-exact", "linear"))
    dim = c.choice((1, 2, 2, 3))
    x = _input(c, dim)
    in_sizes = list(x.shape[-dim:])
    if x.dim() == dim + 1:  # the ops take batched input only
        x = x.unsqueeze(0)
    if c.chance(0.5):
        size = [c.randint(1, 3 * n + 2) for n in in_sizes]
        scales = [None] * dim
    else:
        scales = [c.choice((0.5, 2.0, 3.0, 1.5, 0.75, c.log_uniform(0.3, 3.5))) for _ in in_sizes]
        # The output must be non-empty: floor(n * scale) >= 1.
        scales = [f if math.floor(n * f) >= 1 else c.choice((1.0, 2.0, 2.5))
                  for n, f in zip(in_sizes, scales)]
        size = [max(1, int(math.floor(n * f))) for n, f in zip(in_sizes, scales)]
    align = c.chance(0.5) if mode == "linear" else None
    c.note(mode=mode, dim=dim, size=size, scales=scales, align_corners=align)
    if mode in ("nearest", "nearest-exact"):
        # No arithmetic: the codes gathered by PyTorch's index rule (_nearest_ref), identical.
        expected = _as_q(_nearest_ref(_codes64(x), in_sizes, size, scales,
                                      mode == "nearest-exact"), x)
        name = {"nearest": "upsample_nearest", "nearest-exact": "_upsample_nearest_exact"}[mode]
        op = getattr(Q, f"{name}{dim}d")
        args = (size, *scales)
        return c, (lambda: op(x, *args)), expected, True
    fmode = {1: "linear", 2: "bilinear", 3: "trilinear"}[dim]
    kw = {"size": size} if scales[0] is None else {"scale_factor": scales,
                                                   "recompute_scale_factor": False}
    # Not the exact reference, on purpose (QPLUGIN_FUZZ=long, NOTES_robust.md): (1) PyTorch's and
    # qplugin's kernels compute source positions and weights in float32 (as
    # tests/upsample/test_interpolate.py's reference does): float64 ones move values sitting at
    # ties and disagree on up to 3% of the elements. The rounding is the exact rule: the
    # interpolated code - zp, half to even, plus zp (docs/oracle.md; torch 2.13 rounds the raw
    # code instead and is off on ties with an odd zero point;
    # tests/fuzz/test_fuzz_regressions.py pins the exact rule on such ties).
    zp = x.q_zero_point()
    v = F.interpolate((_codes64(x) - zp).float(), mode=fmode, align_corners=align, **kw).double()
    expected = _as_q(torch.round(v) + zp, x)
    # Interpolating few distinct codes (x_codes='extremes' or 'near_zp') gives few distinct
    # values: where one sits near a tie, every element holding it may round apart between the
    # kernels' and F.interpolate's float32 weights, > 1% of the elements. So here, at any size,
    # every differing element must be within _fuzz.TIE of a tie in float64 (and within 1 unit).
    c.units = F.interpolate(_codes64(x), mode=fmode, align_corners=align, **kw)
    c.ties_any_size = True
    name = {1: "upsample_linear1d", 2: "upsample_bilinear2d", 3: "upsample_trilinear3d"}[dim]
    op = getattr(Q, name)
    args = (size, align, *scales)
    return c, (lambda: op(x, *args)), expected, False


@pytest.mark.parametrize("seed", cases(25))
def test_fuzz_max_pool(isa, seed):
    case, run, expected = draw_max_pool(seed)
    if expected is None:
        with using_isa(isa), pytest.raises(RuntimeError, match="expected every pooling window "
                                           "to cover at least one input element"):
            run()
        return
    check(case, isa, run, expected, exact=True)


@pytest.mark.parametrize("seed", cases(25))
def test_fuzz_avg_pool(isa, seed):
    case, run, expected = draw_avg_pool(seed)
    check(case, isa, run, expected, exact=True)


@pytest.mark.parametrize("seed", cases(20))
def test_fuzz_adaptive_pool(isa, seed):
    case, run, expected, exact = draw_adaptive(seed)
    check(case, isa, run, expected, exact=exact)


@pytest.mark.parametrize("seed", cases(25))
def test_fuzz_resample(isa, seed):
    case, run, expected, exact = draw_resample(seed)
    check(case, isa, run, expected, exact=exact)
