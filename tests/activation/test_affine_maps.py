"""Byte maps computed instead of looked up (kernels::PwAffine8, the AVX2 tier's pw_affine8):
leaky_relu, hardsigmoid and threshold as one or two affine pieces (select / max / min) or a byte
select, planned per table (ops/quantized_cpu/unary_lut.h plan_affine) and used only when the
plan reproduces the op's exact 256-entry table on every code. Every result is compared byte for
byte with the scalar tier (the table lookup of the exact double map), on many qparams (ties of
the exact map included), at lengths around the 32-byte step and the 4096-code planning
threshold, in place, strided and channels-last; `_kernel_path_counts` shows which path and form
ran, so a plan that stopped being found (or a tier that stopped computing) fails here too.
Plans are fixed point first (PwAffine8::fixed) and float pieces where no fixed form fits; with
QPLUGIN_BYTE_MAP_FORM=float at load only the float pieces, and test_float_pieces_in_a_child runs
this module (and cat's computed requantization) that way.
"""
import os
import random
import subprocess
import sys

import pytest
import torch

import qplugin  # noqa: F401
from conftest import SESSION_ISA

ops = torch.ops.qplugin
COMPUTE_MIN = 4096  # unary_lut.h kComputeMin


def _codes(dtype, n, seed, offset=0):
    g = torch.Generator().manual_seed(seed)
    raw = torch.randint(0, 256, (n + offset,), generator=g, dtype=torch.int32)
    base = (raw - 128).to(torch.int8) if dtype == torch.qint8 else raw.to(torch.uint8)
    return base[offset:]


def _q(base, scale, zp):
    return torch._make_per_tensor_quantized_tensor(base, scale, zp)


def _all_codes(dtype, reps=20):
    """Every code, shuffled, reps times (>= COMPUTE_MIN codes)."""
    raw = torch.arange(256, dtype=torch.int32).repeat(reps)
    raw = raw[torch.randperm(raw.numel(), generator=torch.Generator().manual_seed(reps))]
    return (raw - 128).to(torch.int8) if dtype == torch.qint8 else raw.to(torch.uint8)


FORMS = ("one", "select", "max", "min", "keep")  # kernels::PwAffine8::Mode order


# kernels::byte_map_fixed() as this process loaded it.
FIXED = os.environ.get("QPLUGIN_BYTE_MAP_FORM", "fixed") != "float"


def _ran(fn):
    """fn()'s result, the form its 8-bit map ran in (None: looked up, or one of FORMS) and
    whether that plan was in fixed point (the last path count, kUnaryFixed)."""
    before = ops._kernel_path_counts()
    out = fn()
    diff = [a - b for a, b in zip(ops._kernel_path_counts(), before)]
    forms = diff[:1 + len(FORMS)]
    assert sum(forms) == 1, diff
    form = None if forms[0] else FORMS[forms.index(1) - 1]
    fixed = diff[-1] == 1
    assert diff[-1] in (0, 1) and (form is not None or not fixed), diff
    assert FIXED or not fixed, "QPLUGIN_BYTE_MAP_FORM=float, yet a fixed-point plan ran"
    return out, form, fixed


def _form(fn):
    """fn()'s result and the form its 8-bit map ran in: None (looked up) or one of FORMS."""
    out, form, _ = _ran(fn)
    return out, form


def _computed(fn):
    """fn()'s result and whether the 8-bit map was computed (pw_affine8) rather than looked up."""
    out, form = _form(fn)
    return out, form is not None


def _scalar(isa, fn):
    torch.ops.qplugin._set_cpu_isa("scalar")
    try:
        return fn()
    finally:
        torch.ops.qplugin._set_cpu_isa(isa)


def _same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.q_scale() == want.q_scale() and got.q_zero_point() == want.q_zero_point()
    assert torch.equal(got.int_repr(), want.int_repr())


def _check(isa, fn):
    """fn() on `isa` equals the scalar tier; returns whether it computed."""
    got, computed = _computed(fn)
    _same(got, _scalar(isa, fn))
    if isa != "avx2":
        assert not computed, "only the avx2 tier has pw_affine8"
    return computed


def _zp(dtype, rng):
    return rng.randint(0, 255) if dtype == torch.quint8 else rng.randint(-128, 127)


def _draws(seed, n, dtype):
    rng = random.Random(seed)
    for _ in range(n):
        s = rng.choice([0.01, 0.037, 0.05, 0.1, 1 / 256, 0.2, 0.003])
        if rng.random() < 0.5:
            s *= rng.uniform(0.5, 2.0)
        yield s, _zp(dtype, rng), rng


@pytest.mark.parametrize("dtype", [torch.quint8, torch.qint8])
def test_every_code_many_qparams(isa, dtype):
    """Every code through each op, 40 qparams draws each: bytes of the scalar tier, computed or
    not (ties of the exact map make some plans impossible; those fall back to the lookup)."""
    x_codes = _all_codes(dtype)
    computed = {"leaky_relu": 0, "leaky_relu same qparams": 0, "hardsigmoid": 0, "threshold": 0}
    fixed = dict.fromkeys(computed, 0)
    for s, zp, rng in (_draws(1000 + (dtype == torch.qint8), 40, dtype)):
        x = _q(x_codes, s, zp)
        os_ = rng.choice([0.02, 0.05, 1 / 128, s * rng.uniform(0.3, 3.0)])
        oz = _zp(dtype, rng)
        alpha = rng.choice([0.01, 0.1, 0.2, 0.3, 0.0, 1.0, 1.5, -0.5, 0.125, 0.013])
        th, val = rng.uniform(-4, 4), rng.uniform(-4, 4)
        cases = {
            "leaky_relu": lambda: ops.leaky_relu(x, alpha, False, os_, oz),
            "leaky_relu same qparams": lambda: ops.leaky_relu(x, alpha, False, s, zp),
            "hardsigmoid": lambda: ops.hardsigmoid(x),
            "threshold": lambda: ops.threshold(x, th, val),
        }
        for name, fn in cases.items():
            got, form, fx = _ran(fn)
            _same(got, _scalar(isa, fn))
            assert form is None or isa == "avx2", "only the avx2 tier has pw_affine8"
            computed[name] += form is not None
            fixed[name] += fx
    if isa == "avx2":
        # Measured when this was written: 40/40 for hardsigmoid and threshold, most leaky_relu
        # draws (ties of the exact map at decimal scales defeat some plans).
        assert computed["hardsigmoid"] == 40 and computed["threshold"] == 40, computed
        assert computed["leaky_relu"] >= 20 and computed["leaky_relu same qparams"] >= 8, computed
    if isa == "avx2" and FIXED:
        # The fixed-point plans (threshold's keep form is bytes only: never fixed), at least the
        # counts measured when they were written (these draws are seeded), so a fixed plan that
        # stopped fitting fails here.
        want = {torch.quint8: (40, 35, 21), torch.qint8: (39, 35, 19)}[dtype]
        got = (fixed["hardsigmoid"], fixed["leaky_relu"], fixed["leaky_relu same qparams"])
        assert all(g >= w for g, w in zip(got, want)) and fixed["threshold"] == 0, (fixed, computed)


@pytest.mark.parametrize("dtype", [torch.quint8, torch.qint8])
def test_lengths_offsets_and_tails(isa, dtype):
    """Lengths around the planning threshold and the 32-code step, at odd offsets: the tail
    (n % 32 codes) runs the vector body on a padded copy."""
    zp = 131 if dtype == torch.quint8 else 3
    for n in [COMPUTE_MIN - 1, COMPUTE_MIN, COMPUTE_MIN + 1, COMPUTE_MIN + 31, COMPUTE_MIN + 32,
              COMPUTE_MIN + 33, 5000, 10007]:
        for off in (0, 1, 7):
            x = _q(_codes(dtype, n, seed=n + off, offset=off), 0.037, zp)
            c1 = _check(isa, lambda: ops.leaky_relu(x, 0.2, False, 0.0213, zp - 11))
            c2 = _check(isa, lambda: ops.hardsigmoid(x))
            c3 = _check(isa, lambda: ops.threshold(x, 0.13, -0.5))
            if isa == "avx2":
                assert (c1, c2, c3) == ((n >= COMPUTE_MIN,) * 3), (n, off, c1, c2, c3)


def test_forms(isa):
    """Each plan form on its own: one piece (hardsigmoid; leaky_relu with slope 1), max (slope
    below 1, negative too), min (slope above 1), keep (threshold), and the degenerate thresholds
    that keep every code or none (one piece)."""
    x = _q(_all_codes(torch.quint8), 0.05, 100)
    xs = _q(_all_codes(torch.qint8), 0.05, -20)
    cases = [
        ("one", lambda: ops.hardsigmoid(x)),
        ("one", lambda: ops.leaky_relu(x, 1.0, False, 0.0437, 90)),
        ("max", lambda: ops.leaky_relu(x, 0.3, False, 0.0437, 90)),
        ("max", lambda: ops.leaky_relu(xs, -0.5, False, 0.0437, -9)),
        ("min", lambda: ops.leaky_relu(x, 2.5, False, 0.09, 200)),
        ("keep", lambda: ops.threshold(x, 0.0, 0.0)),
        ("keep", lambda: ops.threshold(xs, 1.2, -3.0)),
        ("one", lambda: ops.threshold(x, -100.0, 1.0)),  # every code kept
        ("one", lambda: ops.threshold(x, 100.0, 2.0)),  # every code replaced
        ("keep", lambda: ops.threshold(x, 0.0, 1000.0)),  # value beyond the range (clamped code)
    ]
    for form, fn in cases:
        got, ran = _form(fn)
        _same(got, _scalar(isa, fn))
        assert ran == (form if isa == "avx2" else None)


def test_fixed_point_forms(isa):
    """Fixed-point plans by form, u8 and s8, against the scalar tier: one piece (hardsigmoid; a
    slope of exactly 1, the kernel's multiply-free piece), max (slopes below 1, negative too;
    with the input's qparams piece 1 is multiply-free), min (slopes above 1) and select (qparams
    found by a search where max and min miss a code: ties of the exact map). Under
    QPLUGIN_BYTE_MAP_FORM=float the same bytes come from the float pieces or the lookup."""
    xu, xs = _all_codes(torch.quint8), _all_codes(torch.qint8)
    cases = [
        ("one", lambda: ops.hardsigmoid(_q(xu, 0.05, 100))),
        ("one", lambda: ops.hardsigmoid(_q(xs, 0.0123, -20))),
        ("one", lambda: ops.leaky_relu(_q(xu, 0.05, 100), 1.0, False, 0.05, 97)),  # slope 1
        ("one", lambda: ops.leaky_relu(_q(xs, 0.05, -20), 1.0, False, 0.05, -9)),
        ("max", lambda: ops.leaky_relu(_q(xu, 0.05, 100), 0.3, False, 0.0437, 90)),
        ("max", lambda: ops.leaky_relu(_q(xs, 0.05, -20), -0.5, False, 0.0437, -9)),
        ("max", lambda: ops.leaky_relu(_q(xu, 0.0312, 128), 0.01, False, 0.0312, 128)),
        ("max", lambda: ops.leaky_relu(_q(xs, 0.0312, 5), 0.2, False, 0.0312, 5)),
        ("min", lambda: ops.leaky_relu(_q(xu, 0.0654471511390448, 173), 1.5, False,
                                       0.14039819637084036, 57)),
        ("min", lambda: ops.leaky_relu(_q(xs, 0.030307447205141048, -52), 1.5, False,
                                       0.05975592759205842, 67)),
        ("min", lambda: ops.leaky_relu(_q(xu, 0.058270573135736546, 168), 2.934289805039625,
                                       False, 0.058270573135736546, 168)),  # input's qparams
        ("min", lambda: ops.leaky_relu(_q(xs, 0.04621731287665151, 27), 1.6883627977019744,
                                       False, 0.04621731287665151, 27)),
        ("select", lambda: ops.leaky_relu(_q(xu, 0.032190106001900275, 252), -0.5, False,
                                          0.032190106001900275, 252)),
        ("select", lambda: ops.leaky_relu(_q(xu, 0.03839071229495851, 12), 1.5, False,
                                          0.03839071229495851, 12)),
        ("select", lambda: ops.leaky_relu(_q(xs, 0.07211689689709276, 124), -0.5, False,
                                          0.07211689689709276, 124)),
        # new qparams (a slope of 1/3 and 1/2 in code space: both pieces multiplied)
        ("select", lambda: ops.leaky_relu(_q(xu, 0.0675825379972793, 31), -0.5, False,
                                          0.20274761399183788, 225)),
        ("select", lambda: ops.leaky_relu(_q(xu, 0.0399030560417583, 70), -0.5, False,
                                          0.0798061120835166, 253)),
    ]
    for i, (form, fn) in enumerate(cases):
        got, ran, fixed = _ran(fn)
        _same(got, _scalar(isa, fn))
        if isa != "avx2":
            assert ran is None
        elif FIXED:
            assert (ran, fixed) == (form, True), i


@pytest.mark.skipif(not FIXED or SESSION_ISA not in ("avx2", "avx512vnni"),
                    reason="runs the float pieces itself (in a child); needs the avx2 tier")
def test_float_pieces_in_a_child():
    """This module and cat's computed requantization with QPLUGIN_BYTE_MAP_FORM=float at load
    (kernels::byte_map_fixed): the float pieces, which fixed point otherwise mostly replaces,
    give the scalar tier's bytes in every form, and no plan is in fixed point."""
    here = os.path.dirname(os.path.abspath(__file__))
    cat_tests = os.path.join(here, "..", "elementwise", "test_cat.py")
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
         os.path.abspath(__file__), cat_tests, "-k", "not in_a_child and (affine or computed)"],
        env=dict(os.environ, QPLUGIN_BYTE_MAP_FORM="float"), capture_output=True, text=True,
        timeout=900)
    assert r.returncode == 0 and " passed" in r.stdout, (r.stdout[-3000:], r.stderr[-3000:])


def test_float_clamp_for_large_ratios(isa):
    """Input scale far above the output's: |r| leaves int32 before the clamp, so the plan clamps
    in float (fclamp); the result saturates exactly like the table."""
    x = _q(_all_codes(torch.quint8), 1e6, 128)
    xs = _q(_all_codes(torch.qint8), 1e6, 0)
    for fn in (lambda: ops.leaky_relu(x, 0.1, False, 1e-3, 7),
               lambda: ops.leaky_relu(xs, 0.5, False, 1e-3, -7),
               lambda: ops.hardsigmoid(_q(_all_codes(torch.quint8), 3e4, 128))):
        assert _check(isa, fn) == (isa == "avx2")


def test_coefficients_beyond_float(isa):
    """A slope beyond float's range (scales 1e30 -> 1e-30): no plan, the table is looked up."""
    x = _q(_all_codes(torch.quint8), 1e30, 128)
    got, ran = _form(lambda: ops.leaky_relu(x, 0.1, False, 1e-30, 7))
    _same(got, _scalar(isa, lambda: ops.leaky_relu(x, 0.1, False, 1e-30, 7)))
    assert ran is None


def test_in_place_and_layouts(isa):
    """leaky_relu in place (same qparams) writes the computed bytes into its input; strided and
    channels-last inputs give the scalar tier's bytes and layout."""
    base = _q(_codes(torch.quint8, 2 * 16 * 24 * 24, seed=3), 0.04, 120).reshape(2, 16, 24, 24)
    want = _scalar(isa, lambda: ops.leaky_relu(base.clone(), 0.2, False, 0.04, 120))
    y = base.clone()
    before = y.int_repr().clone()
    out, computed = _computed(lambda: ops.leaky_relu(y, 0.2, True, 0.04, 120))
    assert computed == (isa == "avx2")
    assert out.data_ptr() == y.data_ptr()
    assert torch.equal(y.int_repr(), want.int_repr())
    assert not torch.equal(y.int_repr(), before)
    cl = base.contiguous(memory_format=torch.channels_last)
    for v in (cl, base[:, ::2], base.transpose(2, 3)):
        _check(isa, lambda: ops.leaky_relu(v, 0.2, False, 0.03, 110))
        _check(isa, lambda: ops.threshold(v, 0.1, 0.7))
        got = ops.hardsigmoid(v)
        want = _scalar(isa, lambda: ops.hardsigmoid(v))
        _same(got, want)
        assert got.stride() == want.stride()


def test_small_inputs_look_up(isa):
    """Below the planning threshold the table is looked up on every tier."""
    x = _q(_codes(torch.quint8, COMPUTE_MIN - 1, seed=9), 0.05, 128)
    assert not _check(isa, lambda: ops.hardsigmoid(x))
