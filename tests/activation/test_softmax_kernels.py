"""Softmax on 8-bit codes (kernels/softmax): every ISA gives the bytes of the reference in
kernels/softmax/softmax.h, recomputed here in float64 with the same operations in the same order:

    etab[k] = exp(-k * s);  S = etab[k_0] + ... + etab[k_{D-1}] (sequential);
    y = clamp(rint((etab[k] / S) / os) + zp, qmin, qmax)

The vector kernels compute in float and send the lanes near a rounding tie to the reference;
these cases put lanes on and next to ties (rows of equal codes, where each lane is exactly 1/D),
cover both kernel forms (softmax over the innermost dim: rows; over another dim: columns) with
widths around the vector sizes, and the qparams where the fast path is off. PyTorch's own op is
compared within one unit in test_unary_ops.py."""
import math

import numpy as np
import pytest
import torch

QRANGE = {torch.quint8: (0, 255), torch.qint8: (-128, 127)}
INT = {torch.quint8: torch.uint8, torch.qint8: torch.int8}


def reference(x, dim, os, zp):
    """The kernels' reference on quantized x, float64, sequential sums (np.cumsum)."""
    s = x.q_scale()
    q = x.int_repr().numpy().astype(np.int64)
    q = np.moveaxis(q, dim, -1)
    etab = np.array([math.exp(-k * s) for k in range(256)])
    m = q.max(axis=-1, keepdims=True)
    e = etab[m - q]
    S = np.cumsum(e, axis=-1)[..., -1:]
    lo, hi = QRANGE[x.dtype]
    y = np.clip(np.rint((e / S) / os) + zp, lo, hi).astype(np.int64)
    return np.moveaxis(y, -1, dim)


def make(codes, scale, dtype):
    return torch._make_per_tensor_quantized_tensor(torch.as_tensor(codes).to(INT[dtype]), scale, 0)


def check(x, dim, os, zp):
    y = torch.ops.qplugin.softmax(x, dim, os, zp)
    got = y.int_repr().numpy().astype(np.int64)
    want = reference(x, dim % x.dim(), os, zp)
    bad = np.argwhere(got != want)
    assert bad.size == 0, f"{len(bad)} codes differ, first at {bad[0].tolist()}: " \
        f"{got[tuple(bad[0])]} vs {want[tuple(bad[0])]}"


def random_codes(shape, dtype, seed, spread=60):
    lo, hi = QRANGE[dtype]
    g = np.random.default_rng(seed)
    c = g.integers(max(lo, -spread), min(hi, spread) + 1 if lo < 0 else spread + 1, size=shape)
    return c


@pytest.mark.parametrize("dtype", [torch.quint8, torch.qint8])
@pytest.mark.parametrize("D", [1, 2, 7, 15, 16, 17, 31, 64, 65, 130, 300])
def test_rows_widths(isa, dtype, D):
    # Innermost dim: the rows form, vector blocks of 8/16/64 codes with partial last blocks.
    x = make(random_codes((5, D), dtype, D), 0.07, dtype)
    check(x, 1, 1 / 256, QRANGE[dtype][0])
    check(x, -1, 0.003, 7 if dtype == torch.quint8 else -3)


@pytest.mark.parametrize("dtype", [torch.quint8, torch.qint8])
@pytest.mark.parametrize("inner", [1, 3, 7, 8, 9, 15, 16, 17, 33, 100])
def test_columns_widths(isa, dtype, inner):
    # dim 1 of [2, D, inner]: the columns form, 8/16 columns per vector and the rest.
    for D in (1, 5, 40):
        x = make(random_codes((2, D, inner), dtype, inner * 100 + D), 0.05, dtype)
        check(x, 1, 1 / 256, QRANGE[dtype][0])
        check(x, 0, 0.004, 10 if dtype == torch.quint8 else 0)


@pytest.mark.parametrize("dtype", [torch.quint8, torch.qint8])
@pytest.mark.parametrize("dim", [0, 1])
def test_exact_ties(isa, dtype, dim):
    """Rows of equal codes: every lane is exactly 1/D. With os = 1/256 and D = 512, 1/D / os is
    0.5 (a tie, half to even gives 0); D = 5 * 2^k gives 256/D = 51.2 / 2^k, and other D values
    near-ties. The fast path must send them to the reference."""
    lo = QRANGE[dtype][0]
    for D in (2, 3, 5, 10, 20, 40, 80, 160, 320, 512, 640, 1024):
        n = 24
        c = np.full((n, D), lo + 3)
        c[::3, ::2] = lo + 4  # a second value in some rows: ties of another kind
        x = make(c if dim == 1 else c.T.copy(), 0.5, dtype)
        for os, zp in ((1 / 256, lo), (1 / 512, lo), (0.001, lo + 1), (1 / 100, lo)):
            check(x, dim, os, zp)


@pytest.mark.parametrize("dtype", [torch.quint8, torch.qint8])
def test_scales_and_zero_points(isa, dtype):
    lo, hi = QRANGE[dtype]
    x = make(random_codes((3, 37, 19), dtype, 5, spread=120), 0.02, dtype)
    for s_in in (1e-6, 0.02, 1.0, 40.0):  # exp(-k s) from ~1 down to underflow
        xs = make(x.int_repr(), s_in, dtype)
        for os, zp in ((1 / 256, lo), (1e-4, lo), (1e-30, lo), (0.5, hi), (2.0, lo), (1e30, lo),
                       (1 / 256, hi), (1 / 256, (lo + hi) // 2)):
            # 1e-30 / 1e30: outside the float fast path's bounds (the reference everywhere).
            check(xs, 2, os, zp)
            check(xs, 1, os, zp)


def test_large_and_strided(isa):
    # More columns than one task (threads) and channels-last input (made contiguous first).
    x = make(random_codes((2, 24, 40, 50), torch.quint8, 9), 0.1, torch.quint8)
    check(x, 1, 1 / 256, 0)
    xc = x.contiguous(memory_format=torch.channels_last)
    check(xc, 1, 1 / 256, 0)
    check(xc, 3, 1 / 256, 0)
    # A long innermost row (the rows form's sum in another order, D = 5000).
    x = make(random_codes((3, 5000), torch.qint8, 10, spread=127), 0.01, torch.qint8)
    check(x, 1, 1 / 256, -128)


def test_threads_give_the_same_bytes(isa):
    x = make(random_codes((4, 64, 33, 35), torch.quint8, 11), 0.06, torch.quint8)
    old = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        a = torch.ops.qplugin.softmax(x, 1, 1 / 256, 0).int_repr()
        torch.set_num_threads(2)
        b = torch.ops.qplugin.softmax(x, 1, 1 / 256, 0).int_repr()
    finally:
        torch.set_num_threads(old)
    assert torch.equal(a, b)


@pytest.mark.parametrize("dtype", [torch.quint8, torch.qint8])
@pytest.mark.parametrize("dim", [0, 1])
def test_near_ties(isa, dtype, dim):
    """Output scales chosen so that one lane's quotient (etab[k] / S) / os is k + 0.5 up to the
    double rounding of os: the reference rounds it either way, and the float fast path (error
    ~1e-7 relative) cannot tell; every such lane must come out as the reference's."""
    lo = QRANGE[dtype][0]
    g = np.random.default_rng(3 + dim)
    for D in (3, 7, 13, 16, 19, 33, 64, 100):
        c = lo + g.integers(0, 6, size=(24, D))
        s = 0.3
        x = make(c if dim == 1 else c.T.copy(), s, dtype)
        etab = np.array([math.exp(-k * s) for k in range(256)])
        for row in range(0, 24, 5):
            e = etab[c[row].max() - c[row]]
            S = np.cumsum(e)[-1]
            for t0, half in ((0, 10.5), (D // 2, 37.5), (D - 1, 100.5)):
                os = (e[t0] / S) / half
                check(x, dim, os, lo)
                check(x, dim, np.nextafter(os, 0), lo)
                check(x, dim, np.nextafter(os, 1), lo)
