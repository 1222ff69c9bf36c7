"""Tests of torch.ops.qplugin.{cat, cat_relu, cat_out, cat_relu_out}.

Oracles: PyTorch's quantized cat (x86 engine): identical where the qparams are equal (a pure
copy) and at most 1 apart otherwise (PyTorch requantizes through float); the exact requantization
(q - zi) * si / so rounded half to even, computed with Python integers.
"""
import os
import re
from fractions import Fraction

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from _reference import QRANGE  # noqa: E402,F401  (one QRANGE: tests/_sweeps.py)

import qplugin  # noqa: E402,F401
from _exact import codes, round_half_even  # noqa: E402

torch.backends.quantized.engine = "x86"

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
]


def rand_q(shape, scale, zp, dtype, seed, cl=False):
    g = torch.Generator().manual_seed(seed)
    x = torch.quantize_per_tensor(torch.randn(shape, generator=g) * 3, scale, zp, dtype)
    return x.contiguous(memory_format=torch.channels_last) if cl else x


def exact_requant(x, so, zo, relu=False):
    f = Fraction(x.q_scale()) / Fraction(so)
    num = (codes(x) - x.q_zero_point()).astype(object) * f.numerator
    y = round_half_even(num, f.denominator) + zo
    lo, hi = QRANGE[x.dtype]
    lo = max(lo, zo) if relu else lo
    return np.clip(y, lo, hi).astype(np.int64)


def exact_cat(xs, dim, so, zo, relu=False):
    return np.concatenate([exact_requant(x, so, zo, relu) for x in xs], axis=dim)


def same_layout(y, ref):
    assert y.shape == ref.shape and y.dtype == ref.dtype
    assert y.q_scale() == ref.q_scale() and y.q_zero_point() == ref.q_zero_point()
    assert y.is_contiguous() == ref.is_contiguous()
    assert y.is_contiguous(memory_format=torch.channels_last) == ref.is_contiguous(
        memory_format=torch.channels_last)


CASES = [
    # shapes, dim, channels_last per input
    ([(2, 128, 28, 28), (2, 128, 28, 28)], 1, (False, False)),
    ([(2, 128, 28, 28), (2, 128, 28, 28)], 1, (True, True)),
    ([(2, 16, 7, 9), (2, 8, 7, 9), (2, 3, 7, 9)], 1, (True, False, True)),
    ([(2, 16, 7, 9), (3, 16, 7, 9)], 0, (True, True)),
    ([(2, 16, 7, 9), (2, 16, 5, 9)], 2, (True, True)),
    ([(2, 16, 7, 9), (2, 16, 7, 1)], -1, (False, False)),
    ([(5,), (0,), (3,)], 0, (False, False, False)),
    ([(4, 6)], 1, (False,)),
]


@pytest.mark.parametrize("shapes,dim,cl", CASES)
@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("dtype", [torch.quint8, torch.qint8, torch.qint32])
def test_cat_equal_qparams_is_a_copy(isa, shapes, dim, cl, relu, dtype):
    zp = {torch.quint8: 128, torch.qint8: 3, torch.qint32: -5}[dtype]
    xs = [rand_q(s, 0.05, zp, dtype, i, c) for i, (s, c) in enumerate(zip(shapes, cl))]
    ours = torch.ops.qplugin.cat_relu if relu else torch.ops.qplugin.cat
    theirs = torch.ops.quantized.cat_relu if relu else torch.ops.quantized.cat
    y = ours(xs, dim, None, None)
    ref = theirs(xs, dim, None, None)
    same_layout(y, ref)
    assert np.array_equal(codes(y), codes(ref))
    y = ours(xs, dim, 0.05, zp)  # explicit, equal qparams
    assert np.array_equal(codes(y), codes(ref))


# Channels-last cat on C with rows of >= 32 channels, not multiples of 32: the short-row path's
# lut8_rows vector form (AVX2: whole vectors, then the row's last 32 bytes again).
REQUANT_CASES = CASES[2:5] + [
    ([(2, 40, 5, 6), (2, 64, 5, 6), (2, 33, 5, 6), (2, 5, 5, 6)], 1, (True, True, True, True)),
]


@pytest.mark.parametrize("shapes,dim,cl", REQUANT_CASES)
@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("dtype", [torch.quint8, torch.qint8, torch.qint32])
def test_cat_requantizes_exactly(isa, shapes, dim, cl, relu, dtype):
    zp = {torch.quint8: 128, torch.qint8: 3, torch.qint32: -5}[dtype]
    xs = [rand_q(s, 0.03 + 0.02 * i, zp - i, dtype, 10 + i, c)
          for i, (s, c) in enumerate(zip(shapes, cl))]
    so, zo = 0.07, zp + 1
    ours = torch.ops.qplugin.cat_relu if relu else torch.ops.qplugin.cat
    theirs = torch.ops.quantized.cat_relu if relu else torch.ops.quantized.cat
    y = ours(xs, dim, so, zo)
    ref = theirs(xs, dim, so, zo)
    same_layout(y, ref)
    assert np.array_equal(codes(y), exact_cat(xs, dim, so, zo, relu))
    assert np.abs(codes(y) - codes(ref)).max() <= 1


@pytest.mark.parametrize("relu", [False, True])
def test_cat_out(isa, relu):
    xs = [rand_q((2, 8, 5, 5), 0.05, 128, torch.quint8, 20, True),
          rand_q((2, 4, 5, 5), 0.04, 120, torch.quint8, 21, True)]
    fn = torch.ops.qplugin.cat_relu_out if relu else torch.ops.qplugin.cat_out
    for fmt in (torch.contiguous_format, torch.channels_last):
        out = torch._empty_affine_quantized((2, 12, 5, 5), scale=0.06, zero_point=125,
                                            dtype=torch.quint8, memory_format=fmt)
        r = fn(xs, 1, out=out)
        assert r is out
        assert out.q_scale() == 0.06 and out.q_zero_point() == 125
        assert np.array_equal(codes(out), exact_cat(xs, 1, 0.06, 125, relu))
    # Non-dense out.
    big = torch._empty_affine_quantized((2, 12, 5, 10), scale=0.06, zero_point=125,
                                        dtype=torch.quint8)
    fn(xs, 1, out=big[..., ::2])
    assert np.array_equal(codes(big[..., ::2]), exact_cat(xs, 1, 0.06, 125, relu))


def test_cat_errors():
    a = rand_q((2, 3, 4), 0.1, 0, torch.quint8, 1)
    with pytest.raises(RuntimeError, match=r"qplugin::cat: expected a non-empty list"):
        torch.ops.qplugin.cat([], 0, None, None)
    with pytest.raises(RuntimeError, match=r"qplugin::cat: expected qx\[1\] of dtype QUInt8"):
        torch.ops.qplugin.cat([a, rand_q((2, 3, 4), 0.1, 0, torch.qint8, 2)], 0, None, None)
    with pytest.raises(RuntimeError, match=r"qplugin::cat: expected qx\[1\] with 3 dimensions"):
        torch.ops.qplugin.cat([a, rand_q((2, 3), 0.1, 0, torch.quint8, 2)], 0, None, None)
    with pytest.raises(RuntimeError, match=r"expected qx\[1\] of size 3 at dimension 1"):
        torch.ops.qplugin.cat([a, rand_q((2, 5, 4), 0.1, 0, torch.quint8, 2)], 0, None, None)
    with pytest.raises(RuntimeError,
                       match=r"expected dim in \[-3, 2\] \(qx\[0\] has 3 dimensions\), got 3"):
        torch.ops.qplugin.cat([a, a], 3, None, None)
    with pytest.raises(RuntimeError, match=r"qplugin::cat: expected qx\[0\] to be a quantized"):
        torch.ops.qplugin.cat([torch.randn(2), torch.randn(2)], 0, None, None)
    with pytest.raises(RuntimeError,
                       match=r"qplugin::cat_relu: expected qx\[1\] to be a quantized"):
        torch.ops.qplugin.cat_relu([a, torch.randn(2, 3, 4)], 0, None, None)
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(RuntimeError, match=r"expected a finite, positive output_scale"):
            torch.ops.qplugin.cat([a, a], 0, bad, 0)
    out = torch._empty_affine_quantized((4, 3, 4), scale=0.1, zero_point=0, dtype=torch.qint8)
    with pytest.raises(RuntimeError, match=r"qplugin::cat_out: expected out of dtype QUInt8"):
        torch.ops.qplugin.cat_out([a, a], 0, out=out)
    out = torch._empty_affine_quantized((5, 3, 4), scale=0.1, zero_point=0, dtype=torch.quint8)
    with pytest.raises(RuntimeError, match=r"qplugin::cat_out: expected out of shape"):
        torch.ops.qplugin.cat_out([a, a], 0, out=out)


def test_cat_per_channel_message_matches_torch():
    # PyTorch's test_cat checks per-channel inputs with assertRaisesRegex(RuntimeError,
    # "supported.*cat"); qplugin keeps its own form and carries PyTorch's key words.
    a = rand_q((2, 3, 4), 0.1, 0, torch.quint8, 1)
    pc = torch.quantize_per_channel(torch.randn(2, 3, 4), torch.tensor([0.1, 0.2, 0.3]),
                                    torch.tensor([0, 1, 2]), 1, torch.quint8)
    for op in (torch.ops.qplugin.cat, torch.ops.qplugin.cat_relu):
        for xs, idx in (([pc, pc], 0), ([a, pc], 1)):
            before = pc.int_repr().clone()
            with pytest.raises(RuntimeError, match=r"supported.*cat") as ei:
                op(xs, 1, 0.1, 0)
            assert re.search(rf"qplugin::{op.__name__}: expected qx\[{idx}\] quantized per tensor"
                             r" \(torch.per_tensor_affine\), got per_channel_affine",
                             str(ei.value)), str(ei.value)
            assert torch.equal(pc.int_repr(), before)
    # The same regex matches PyTorch's own message (so the two are interchangeable in tests).
    with pytest.raises(RuntimeError, match=r"supported.*cat"):
        torch.ops.quantized.cat([pc, pc], 1, 0.1, 0)


# Requantized inputs of >= 4096 codes (unary_lut.h's kComputeMin) on tiers with pw_affine8: the
# table computed (one affine piece, confirmed on all 256 codes) instead of looked up, in the long-row
# path (NCHW), the short-row path in L1 blocks (channels-last on C, rows not dividing the block),
# and a short-row call whose rows exceed the block (9000 channels). Every code occurs.
LARGE_REQUANT_CASES = [
    ([(2, 128, 28, 28), (2, 128, 28, 28)], 1, (False, False)),
    ([(2, 128, 28, 28), (2, 128, 28, 28)], 1, (True, True)),
    ([(2, 40, 16, 16), (2, 33, 16, 16), (2, 8, 16, 16)], 1, (True, True, True)),
    ([(2, 9000, 1, 2), (2, 3, 1, 2)], 1, (True, True)),
]


@pytest.mark.parametrize("shapes,dim,cl", LARGE_REQUANT_CASES)
@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("dtype", [torch.quint8, torch.qint8])
def test_cat_requantizes_computed(isa, shapes, dim, cl, relu, dtype):
    zp = {torch.quint8: 128, torch.qint8: 3}[dtype]
    xs = []
    for i, (s, c) in enumerate(zip(shapes, cl)):
        x = rand_q(s, 0.03 + 0.02 * i, zp - i, dtype, 20 + i, c)
        flat = x.int_repr().flatten()
        n = min(256, flat.numel())  # every code where the input is large enough
        lo = -128 if dtype == torch.qint8 else 0
        flat[:n] = torch.arange(lo, lo + n).to(flat.dtype)
        x = torch._make_per_tensor_quantized_tensor(
            flat.reshape(x.shape).contiguous(), x.q_scale(), x.q_zero_point())
        xs.append(x.contiguous(memory_format=torch.channels_last) if c else x)
    so, zo = 0.07, zp + 1
    ours = torch.ops.qplugin.cat_relu if relu else torch.ops.qplugin.cat
    before = torch.ops.qplugin._kernel_path_counts()
    y = ours(xs, dim, so, zo)
    counts = [a - b for a, b in zip(torch.ops.qplugin._kernel_path_counts(), before)]
    diff = counts[:6]
    assert np.array_equal(codes(y), exact_cat(xs, dim, so, zo, relu))
    ref = (torch.ops.quantized.cat_relu if relu else torch.ops.quantized.cat)(xs, dim, so, zo)
    same_layout(y, ref)
    large = sum(1 for x in xs if x.numel() >= 4096)
    assert sum(diff) == len(xs), diff  # every input requantized (none has the output's qparams)
    if isa != "avx2":
        assert diff[0] == len(xs), diff  # scalar and avx512vnni look up (no pw_affine8)
    else:
        assert diff[1] == large and diff[0] == len(xs) - large, diff  # one piece, computed
        # in fixed point (the last count) unless QPLUGIN_BYTE_MAP_FORM=float at load
        fixed = os.environ.get("QPLUGIN_BYTE_MAP_FORM", "fixed") != "float"
        assert counts[-1] == (large if fixed else 0), counts
