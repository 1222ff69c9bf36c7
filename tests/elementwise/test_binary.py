"""Tests of torch.ops.qplugin.{add, add_relu, mul, mul_relu} in all overloads (Tensor, out=,
Scalar, Scalar2, Scalar_out, the deprecated add_out/add_scalar* names).

Oracles: the exact result (the qparams are doubles, i.e. exact dyadic rationals: the reference
below rounds (A*sa + B*sb)/so and A*B*sa*sb/so with Python integers, half to even) -- qplugin must
equal it everywhere; PyTorch's quantized ops (x86 engine) -- at most 1 apart (PyTorch rounds in
float and is off by one on 5-10% of elements for add, docs/oracle.md), and identical
output qparams, shape and memory format.
"""
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from _reference import INT_DTYPE, QRANGE  # noqa: E402,F401  (one QRANGE: tests/_sweeps.py)

import qplugin  # noqa: E402,F401
from _exact import codes, frac, round_half_even  # noqa: E402

torch.backends.quantized.engine = "x86"

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
]


# ------------------------------------------------------------------------------------------
# exact reference


def exact_binary(op, A, B, sa, sb, so, zo, dtype, relu=False):
    """Exact output codes for integer arrays A = qa - za, B = qb - zb (int64 numpy)."""
    A = A.astype(object)
    B = B.astype(object)
    pa, qa = frac(sa)
    pb, qb = frac(sb)
    po, qo = frac(so)
    if op == "add":
        # (A pa/qa + B pb/qb) / (po/qo) = (A pa qb + B pb qa) qo / (qa qb po)
        num = (A * (pa * qb) + B * (pb * qa)) * qo
        den = qa * qb * po
    else:
        num = A * B * (pa * pb * qo)
        den = qa * qb * po
    y = round_half_even(num, den) + zo
    lo, hi = QRANGE[dtype]
    if relu:
        lo = max(lo, zo)
    y = np.minimum(np.maximum(y, lo), hi)
    return y.astype(np.int64)


def qtensor(int_codes, scale, zp, dtype):
    return torch._make_per_tensor_quantized_tensor(
        torch.as_tensor(int_codes).to(INT_DTYPE[dtype]), scale, zp)


def rand_q(shape, scale, zp, dtype, seed, spread=3.0):
    g = torch.Generator().manual_seed(seed)
    return torch.quantize_per_tensor(torch.randn(shape, generator=g) * spread, scale, zp, dtype)


def check_exact(y, qa, qb, op, so, zo, relu=False):
    A = codes(qa) - qa.q_zero_point()
    B = codes(qb) - qb.q_zero_point()
    A, B = np.broadcast_arrays(A, B)
    ref = exact_binary(op, A, B, qa.q_scale(), qb.q_scale(), so, zo, qa.dtype, relu)
    got = codes(y)
    assert got.shape == ref.shape
    bad = np.flatnonzero(got != ref)
    assert bad.size == 0, (f"{bad.size} of {got.size} differ from the exact result; first at flat"
                           f" {bad[0]}: got {got.flat[bad[0]]}, exact {ref.flat[bad[0]]}")


def check_torch_close(y, ref):
    """qplugin vs PyTorch: same qparams/shape/dtype/strides, codes at most 1 apart."""
    assert y.dtype == ref.dtype and y.shape == ref.shape
    assert y.q_scale() == ref.q_scale() and y.q_zero_point() == ref.q_zero_point()
    assert y.stride() == ref.stride(), (y.stride(), ref.stride())
    d = np.abs(codes(y) - codes(ref))
    assert d.size == 0 or d.max() <= 1, f"max |qplugin - torch| = {d.max()}"


OPS = {
    ("add", False): (torch.ops.qplugin.add, torch.ops.quantized.add),
    ("add", True): (torch.ops.qplugin.add_relu, torch.ops.quantized.add_relu),
    ("mul", False): (torch.ops.qplugin.mul, torch.ops.quantized.mul),
    ("mul", True): (torch.ops.qplugin.mul_relu, torch.ops.quantized.mul_relu),
}

# (sa, za, sb, zb, so, zo): decimal scales whose ratios make many exact or near ties (where
# PyTorch's float rounding errs), dyadic ones (exact float math), and observer-like ones.
QPARAMS_U8 = [
    (0.05, 128, 0.04, 120, 0.1, 128),
    (0.03, 128, 0.07, 120, 0.1, 128),
    (0.05, 128, 0.05, 128, 0.1, 128),
    (0.0236220472, 131, 0.0411764706, 117, 0.0557377, 125),
    (0.125, 0, 0.5, 255, 0.25, 3),
    (1.7, 5, 0.003, 250, 0.02, 0),      # wildly different input scales
]


# (dtype, qparams (sa, za, sb, zb, so, zo)): every quint8 set of QPARAMS_U8 and three qint8 ones.
CODE_PAIR_CASES = ([(torch.quint8, qp) for qp in QPARAMS_U8]
                   + [(torch.qint8, qp) for qp in [(0.05, 3, 0.04, -7, 0.1, 0),
                                                   (0.03, -128, 0.07, 127, 0.11, -5),
                                                   (0.02, 0, 0.02, 0, 0.04, 0)]])


@pytest.mark.parametrize("op,relu", list(OPS))
@pytest.mark.parametrize("dtype,qp", CODE_PAIR_CASES,
                         ids=["-".join(map(str, (str(d)[6:],) + qp)) for d, qp in CODE_PAIR_CASES])
def test_all_code_pairs_exact(isa, op, relu, dtype, qp):
    """Every (a, b) code pair: identical to the exact result, within 1 of PyTorch."""
    sa, za, sb, zb, so, zo = qp
    lo, hi = QRANGE[dtype]
    grid = np.arange(lo, hi + 1)
    qa = qtensor(np.repeat(grid, 256).reshape(256, 256), sa, za, dtype)
    qb = qtensor(np.tile(grid, 256).reshape(256, 256), sb, zb, dtype)
    ours, theirs = OPS[(op, relu)]
    y = ours(qa, qb, so, zo)
    check_exact(y, qa, qb, op, so, zo, relu)
    check_torch_close(y, theirs(qa, qb, so, zo))


UNCHECKED = 7  # csrc/ops/quantized_cpu/path_counts.h kBinaryUnchecked
SCALED = 8  # kBinaryRationalScaled


def _observer_qparams(rng, dtype):
    lo, hi = QRANGE[dtype]
    s = rng.uniform(0.004, 0.08)
    return s, rng.randint(lo + 40, hi - 40)


@pytest.mark.parametrize("op,relu", list(OPS))
@pytest.mark.parametrize("dtype", [torch.quint8, torch.qint8])
def test_unchecked_fast_path_is_exact(isa, op, relu, dtype):
    """Large calls judge once per qparams whether the fast path may skip its per-lane tie check
    (ExactCtx::use_no_check: every code pair through the kernel with and without it, the float
    constants also moved by an ulp or a few). Observer-like qparams: all 65536 pairs, then a
    second, cached call on other codes, both exact; most draws run unchecked. The tie-heavy
    decimal scales (0.05, 0.05 -> 0.1) stay exact whichever path they take (mul_relu there runs
    unchecked: its float sums round onto the ties exactly)."""
    rng = np.random.default_rng(7 + (op == "mul") + 2 * relu + 4 * (dtype == torch.qint8))
    import random
    r = random.Random(int(rng.integers(1 << 30)))
    lo, hi = QRANGE[dtype]
    grid = np.arange(lo, hi + 1)
    ours = OPS[(op, relu)][0]
    counts = torch.ops.qplugin._kernel_path_counts
    unchecked = 0
    draws = 8
    for _ in range(draws):
        (sa, za), (sb, zb), (so, zo) = (_observer_qparams(r, dtype) for _ in range(3))
        if op == "mul":
            so = sa * sb * r.uniform(20, 60)
        qa = qtensor(np.repeat(grid, 256).reshape(256, 256), sa, za, dtype)
        qb = qtensor(np.tile(grid, 256).reshape(256, 256), sb, zb, dtype)
        before = counts()
        y = ours(qa, qb, so, zo)
        check_exact(y, qa, qb, op, so, zo, relu)
        qc = qtensor(rng.integers(lo, hi + 1, (200, 201)), sa, za, dtype)
        qd = qtensor(rng.integers(lo, hi + 1, (200, 201)), sb, zb, dtype)
        check_exact(ours(qc, qd, so, zo), qc, qd, op, so, zo, relu)
        after = counts()
        unchecked += after[UNCHECKED] - before[UNCHECKED]
    # Measured when this was written: 7-8 of 8 draws run unchecked (two calls each).
    assert unchecked >= draws, unchecked
    # Tie-heavy: ~7% of the mul lanes sit next to a tie.
    qe = qtensor(np.repeat(grid, 256).reshape(256, 256), 0.05, lo + 128, dtype)
    qf = qtensor(np.tile(grid, 256).reshape(256, 256), 0.05, lo + 128, dtype)
    check_exact(ours(qe, qf, 0.1, lo + 128), qe, qf, op, 0.1, lo + 128, relu)


# Zero points far outside the dtype's range are legal for quantized tensors (never produced by
# an observer). The AVX-512 mul takes a 16-bit product when code - z fits int16 and the
# reference otherwise: both sides of that limit (32768 / -32512), and beyond the int16 range.
# PyTorch's dequantize rejects such tensors, so only the exact reference applies.
@pytest.mark.parametrize("op,relu", list(OPS))
@pytest.mark.parametrize("za,zb,so", [(1000, -30000, 5.0), (32768, -32512, 2e3),
                                      (32769, 3, 50.0), (1000, -40000, 5e4), (70000, 3, 1e3)])
def test_all_code_pairs_out_of_range_zero_points(isa, op, relu, za, zb, so):
    grid = np.arange(256)
    qa = qtensor(np.repeat(grid, 256).reshape(256, 256), 0.1, za, torch.quint8)
    qb = qtensor(np.tile(grid, 256).reshape(256, 256), 0.1, zb, torch.quint8)
    y = OPS[(op, relu)][0](qa, qb, so, 3)
    check_exact(y, qa, qb, op, so, 3, relu)


def test_pytorch_add_is_off_on_decimal_scales():
    """Documents why the oracle is the exact result: PyTorch's add differs from it here."""
    grid = np.arange(256)
    qa = qtensor(np.repeat(grid, 256).reshape(256, 256), 0.05, 128, torch.quint8)
    qb = qtensor(np.tile(grid, 256).reshape(256, 256), 0.05, 128, torch.quint8)
    ref = exact_binary("add", codes(qa) - 128, codes(qb) - 128, 0.05, 0.05, 0.1, 128,
                       torch.quint8)
    share = float(np.mean(codes(torch.ops.quantized.add(qa, qb, 0.1, 128)) != ref))
    assert share > 0.01
    assert np.array_equal(codes(torch.ops.qplugin.add(qa, qb, 0.1, 128)), ref)


SHAPES = [
    ((2, 3, 4, 5), (2, 3, 4, 5)),
    ((2, 3, 4, 5), (3, 1, 5)),        # broadcast qb
    ((3, 1, 5), (2, 3, 4, 5)),        # broadcast qa
    ((2, 8, 6, 7), (1, 8, 1, 1)),     # per-channel
    ((2, 8, 6, 7), (2, 8, 6, 1)),     # inner broadcast
    ((4, 1), (1, 5)),                 # both broadcast
    ((7,), ()),                       # 0-dim
    ((0, 3), (0, 3)),                 # empty
    ((1000,), (1000,)),               # tails around the 64-element blocks
    ((131,), (1,)),
]


@pytest.mark.parametrize("op,relu", list(OPS))
@pytest.mark.parametrize("sha,shb", SHAPES, ids=lambda s: "x".join(map(str, s)) or "scalar")
@pytest.mark.parametrize("dtype", [torch.quint8, torch.qint8])
def test_broadcast_shapes(isa, op, relu, sha, shb, dtype):
    zp = 120 if dtype == torch.quint8 else -3
    qa = rand_q(sha, 0.05, zp, dtype, 1)
    qb = rand_q(shb, 0.07, zp + 2, dtype, 2)
    so, zo = (0.09, zp - 4) if op == "add" else (0.13, zp + 1)
    ours, theirs = OPS[(op, relu)]
    y = ours(qa, qb, so, zo)
    assert list(y.shape) == list(torch.broadcast_shapes(sha, shb))
    check_exact(y, qa, qb, op, so, zo, relu)
    check_torch_close(y, theirs(qa, qb, so, zo))


def _layouts(x):
    return {
        "contig": x,
        "cl": x.contiguous(memory_format=torch.channels_last),
        "strided": x.transpose(2, 3).contiguous().transpose(2, 3),  # H and W strides swapped
    }


@pytest.mark.parametrize("la", ["contig", "cl", "strided"])
@pytest.mark.parametrize("lb", ["contig", "cl", "strided"])
def test_memory_formats(isa, la, lb):
    qa = _layouts(rand_q((2, 16, 9, 11), 0.05, 128, torch.quint8, 3))[la]
    qb = _layouts(rand_q((2, 16, 9, 11), 0.06, 125, torch.quint8, 4))[lb]
    for (op, relu), (ours, theirs) in OPS.items():
        y = ours(qa, qb, 0.08, 127)
        check_exact(y, qa, qb, op, 0.08, 127, relu)
        ref = theirs(qa, qb, 0.08, 127)
        assert y.is_contiguous() == ref.is_contiguous()
        assert y.is_contiguous(memory_format=torch.channels_last) == ref.is_contiguous(
            memory_format=torch.channels_last)
        check_torch_close(y, ref)


def test_non_contiguous_views(isa):
    base = rand_q((4, 10, 12), 0.05, 128, torch.quint8, 5)
    qa = base[:, ::2, 1::3]                  # strided view
    qb = rand_q((4, 5, 4), 0.04, 100, torch.quint8, 6)
    qb = qb.permute(0, 2, 1).contiguous().permute(0, 2, 1)
    y = torch.ops.qplugin.add(qa, qb, 0.1, 120)
    check_exact(y, qa, qb, "add", 0.1, 120)
    qc = rand_q((4, 1, 12), 0.05, 128, torch.quint8, 7).expand(4, 10, 12)  # expanded input
    y = torch.ops.qplugin.mul(base, qc, 0.2, 128)
    check_exact(y, base, qc, "mul", 0.2, 128)


@pytest.mark.parametrize("op,relu", list(OPS))
def test_qint32(op, relu):
    qa = rand_q((3, 50), 0.5, 7, torch.qint32, 8, spread=1e4)
    qb = rand_q((50,), 0.25, -3, torch.qint32, 9, spread=1e4)
    so, zo = (0.3, 11) if op == "add" else (7.0, -2)
    ours, theirs = OPS[(op, relu)]
    y = ours(qa, qb, so, zo)
    check_exact(y, qa, qb, op, so, zo, relu)
    d = np.abs(codes(y) - codes(theirs(qa, qb, so, zo)))
    if op == "mul":
        # PyTorch multiplies the qint32 codes in int32: it wraps around once |A*B| >= 2^31.
        A, B = np.broadcast_arrays(codes(qa) - 7, codes(qb) + 3)
        wraps = np.abs(A * B) >= 2**31
        assert wraps.any() and d[wraps].max() > 1
        d = d[~wraps]
        # ... and rounds in float32: for outputs beyond 2^24 its codes are off by a few units.
        tol = np.abs(codes(y))[~wraps] * 2.0**-22 + 1
        assert (d <= tol).all()
        return
    assert d.max() <= 1


def test_qint32_docs_example():
    """The QFunctional docstring example: qint32 3 + 4 with scale 1, zero point 0."""
    a = torch.quantize_per_tensor(torch.tensor(3.0), 1.0, 0, torch.qint32)
    b = torch.quantize_per_tensor(torch.tensor(4.0), 1.0, 0, torch.qint32)
    y = torch.ops.qplugin.add(a, b, 1.0, 0)
    ref = torch.ops.quantized.add(a, b, 1.0, 0)
    assert y.dequantize().item() == 7.0 == ref.dequantize().item()
    assert y.shape == ref.shape == torch.Size([])


def test_saturation_and_relu_bounds(isa):
    qa = qtensor(np.array([0, 255, 128, 255, 0]), 1.0, 0, torch.quint8)
    qb = qtensor(np.array([0, 255, 0, 200, 1]), 1.0, 0, torch.quint8)
    assert codes(torch.ops.qplugin.add(qa, qb, 1.0, 0)).tolist() == [0, 255, 128, 255, 1]
    assert codes(torch.ops.qplugin.add_relu(qa, qb, 1.0, 100)).tolist() == [100, 255, 228, 255, 101]
    assert codes(torch.ops.qplugin.mul(qa, qb, 1.0, 0)).tolist() == [0, 255, 0, 255, 0]
    # Huge ratios (float clamp path) and tiny ones.
    qa = rand_q((300,), 1.0, 128, torch.quint8, 10, spread=50)
    qb = rand_q((300,), 1e-3, 128, torch.quint8, 11)
    for so in (1e-9, 1e9, 3e-5):
        for (op, relu), (ours, _) in OPS.items():
            check_exact(ours(qa, qb, so, 128), qa, qb, op, so, 128, relu)


# ------------------------------------------------------------------------------------------
# out=


OUT_OPS = {
    ("add", False): [torch.ops.qplugin.add.out, torch.ops.qplugin.add_out],
    ("add", True): [torch.ops.qplugin.add_relu.out, torch.ops.qplugin.add_relu_out],
    ("mul", False): [torch.ops.qplugin.mul.out, torch.ops.qplugin.mul_out],
    ("mul", True): [torch.ops.qplugin.mul_relu.out, torch.ops.qplugin.mul_relu_out],
}


@pytest.mark.parametrize("op,relu", list(OUT_OPS))
def test_out_variants(isa, op, relu):
    qa = rand_q((2, 8, 5, 6), 0.05, 128, torch.quint8, 12)
    qb = rand_q((8, 1, 6), 0.04, 120, torch.quint8, 13)
    for fn in OUT_OPS[(op, relu)]:
        for fmt in (torch.contiguous_format, torch.channels_last):
            out = torch._empty_affine_quantized((2, 8, 5, 6), scale=0.09, zero_point=126,
                                                dtype=torch.quint8, memory_format=fmt)
            r = fn(qa, qb, out=out)
            assert r is out
            assert out.q_scale() == 0.09 and out.q_zero_point() == 126
            check_exact(out, qa, qb, op, 0.09, 126, relu)
        # A non-dense out (a strided view) goes through a temporary.
        big = torch._empty_affine_quantized((2, 8, 5, 12), scale=0.09, zero_point=126,
                                            dtype=torch.quint8)
        view = big[..., ::2]
        fn(qa, qb, out=view)
        check_exact(view, qa, qb, op, 0.09, 126, relu)


def test_out_in_place_aliasing(isa):
    qa = rand_q((3, 300), 0.05, 128, torch.quint8, 14)
    qb = rand_q((3, 300), 0.05, 128, torch.quint8, 15)
    for op, fn in (("add", torch.ops.qplugin.add.out), ("mul", torch.ops.qplugin.mul.out)):
        a = torch._make_per_tensor_quantized_tensor(qa.int_repr().clone(), 0.05, 128)
        expect = exact_binary(op, codes(a) - 128, codes(qb) - 128, 0.05, 0.05, 0.05, 128,
                              torch.quint8)
        fn(a, qb, out=a)   # out aliases qa exactly: in place
        assert np.array_equal(codes(a), expect)
        b = torch._make_per_tensor_quantized_tensor(qb.int_repr().clone(), 0.05, 128)
        expect = exact_binary(op, codes(qa) - 128, codes(b) - 128, 0.05, 0.05, 0.05, 128,
                              torch.quint8)
        fn(qa, b, out=b)
        assert np.array_equal(codes(b), expect)
    # Partial overlap: out is a shifted view of the input.
    base = torch._make_per_tensor_quantized_tensor(qa.int_repr().flatten().clone(), 0.05, 128)
    x = base[:800]
    expect = exact_binary("add", codes(x) - 128, codes(x) - 128, 0.05, 0.05, 0.05, 128,
                          torch.quint8)
    torch.ops.qplugin.add.out(x, x, out=base[100:900])
    assert np.array_equal(codes(base[100:900]), expect)


# Qparams whose calls leave more than 1 lane in 64 undecided get a table of all 65536 exact
# results after such a call (kernels/binary/binary_plan.h, ExactCtx::after_call), and every lane
# of the later calls is looked up. The first call builds it, the later ones use it: each call must
# stay exact. Undecided rates of these inputs (measured on avx512vnni, 0.9% to 24%) fall on both
# sides of 1 in 64, so both paths run. Shapes with tails (6771 and 4403 elements), a broadcast
# operand, and the in-place out= form.
# For mul the vector kernels then take the rational form of binary.h when it holds on all pairs
# (sa*sb/so near a fraction N/Dn: 0.05*0.05/0.05 = 1/20 and 0.1*0.1/0.2 = 1/20 from above,
# 0.05*0.05/0.1 = 1/40 from above, 0.7*0.1/0.1 = 7/10 from below), so its lanes on and next to
# the fraction's half-integers are checked here against the exact results.
@pytest.mark.parametrize("op,relu", list(OPS))
@pytest.mark.parametrize("dtype", [torch.quint8, torch.qint8])
@pytest.mark.parametrize("sa,sb,so", [(0.03, 0.025, 0.05), (0.05, 0.05, 0.05), (0.1, 0.1, 0.2),
                                      (0.05, 0.05, 0.1), (0.7, 0.1, 0.1)])
def test_tie_heavy_scales_through_the_exact_table(isa, op, relu, dtype, sa, sb, so):
    za, zb, zo = (10, 12, 3) if dtype == torch.quint8 else (-5, 7, 1)
    fn = OPS[(op, relu)][0]
    qa = rand_q((3, 37, 61), sa, za, dtype, 21)
    qb = rand_q((3, 37, 61), sb, zb, dtype, 22)
    qc = rand_q((1, 37, 1), sb, zb, dtype, 23)  # broadcast over the other dims
    qd = rand_q((7, 629), sa, za, dtype, 24)
    for _ in range(3):  # the table is built after the first call and used by the next
        check_exact(fn(qa, qb, so, zo), qa, qb, op, so, zo, relu)
        check_exact(fn(qa, qc, so, zo), qa, qc, op, so, zo, relu)
        check_exact(fn(qc, qa, so, zo), qc, qa, op, so, zo, relu)
        check_exact(fn(qd, qd, so, zo), qd, qd, op, so, zo, relu)
    if not relu:  # in place: out is qa itself (so its qparams are the output's)
        out_fn = getattr(torch.ops.qplugin, op).out
        for _ in range(3):
            a = torch._make_per_tensor_quantized_tensor(qa.int_repr().clone(), sa, za)
            expect = exact_binary(op, codes(a) - za, codes(qb) - zb, sa, sb, sa, za, dtype)
            out_fn(a, qb, out=a)
            assert np.array_equal(codes(a), expect)


# ------------------------------------------------------------------------------------------
# Tensor x Scalar


def _t(c):
    return torch.tensor(c, dtype=torch.float64)  # .Tensor overloads take the scalar as a tensor


def _scalar_forms(op, relu):
    """Every qplugin form of <op>(_relu) with a scalar: <op>.Scalar, .Scalar2 (scalar first),
    <op>_scalar and its .Tensor overload."""
    suffix = "_relu" if relu else ""
    packet = getattr(torch.ops.qplugin, op + suffix)
    scalar = getattr(torch.ops.qplugin, f"{op}_scalar{suffix}")
    return [lambda x, c: packet.Scalar(x, c), lambda x, c: packet.Scalar2(c, x),
            lambda x, c: scalar(x, c), lambda x, c: scalar.Tensor(x, _t(c))]


SCALAR_KINDS = [(op, relu) for op in ("add", "mul") for relu in (False, True)]
SCALAR_FORMS = {k: _scalar_forms(*k) for k in SCALAR_KINDS}
# PyTorch's: quantized.<op>_scalar(_relu).
TORCH_SCALAR = {(op, relu): getattr(torch.ops.quantized, f"{op}_scalar{'_relu' if relu else ''}")
                for op, relu in SCALAR_KINDS}


def exact_scalar(op, x, c, y):
    """Exact codes of the scalar forms given PyTorch's output qparams (taken from y)."""
    q = codes(x)
    s, z = x.q_scale(), x.q_zero_point()
    s2, z2 = y.q_scale(), y.q_zero_point()
    lo, hi = QRANGE[x.dtype]
    if op == "add":
        cq = round(c / s)  # Python's round is half to even, as nearbyint
        if s2 == s:
            return q
        ps, qs = frac(s)
        p2, q2 = frac(s2)
        num = (q - z + cq).astype(object) * (ps * q2)
        return np.clip(round_half_even(num, qs * p2) + z2, lo, hi).astype(np.int64)
    if c > 0:
        return q
    if c == 0:
        return np.zeros_like(q)
    return lo + hi - q


@pytest.mark.parametrize("op,relu", list(SCALAR_FORMS))
@pytest.mark.parametrize("dtype", [torch.quint8, torch.qint8, torch.qint32])
@pytest.mark.parametrize("c", [0.3, -0.3, 0.0, 2.5, -7.25, 100.0, -100.0])
def test_scalar_forms(isa, op, relu, dtype, c):
    zp = {torch.quint8: 100, torch.qint8: -20, torch.qint32: 5}[dtype]
    x = rand_q((2, 4, 5, 9), 0.05, zp, dtype, 16).contiguous(memory_format=torch.channels_last)
    ref = TORCH_SCALAR[(op, relu)](x, c)
    for fn in SCALAR_FORMS[(op, relu)]:
        y = fn(x, c)
        assert y.q_scale() == ref.q_scale() and y.q_zero_point() == ref.q_zero_point()
        assert y.stride() == ref.stride()
        expect = exact_scalar(op, x, c, ref)
        if relu and not (op == "mul" and c == 0):
            expect = np.maximum(expect, ref.q_zero_point())
        assert np.array_equal(codes(y), expect)
        assert np.abs(codes(y) - codes(ref)).max() <= 1


@pytest.mark.parametrize("op,relu", list(SCALAR_FORMS))
def test_scalar_out(op, relu):
    x = rand_q((3, 7), 0.05, 100, torch.quint8, 17)
    name = {("add", False): "add", ("add", True): "add_relu", ("mul", False): "mul",
            ("mul", True): "mul_relu"}[(op, relu)]
    dep = {("add", False): "add_scalar", ("add", True): "add_scalar_relu",
           ("mul", False): "mul_scalar", ("mul", True): "mul_scalar_relu"}[(op, relu)]
    for c in (0.7, -0.7, 90.0):
        ref = TORCH_SCALAR[(op, relu)](x, c)
        for call in (lambda o: getattr(torch.ops.qplugin, name).Scalar_out(x, c, out=o),
                     lambda o: getattr(torch.ops.qplugin, dep + "_out")(x, c, out=o),
                     lambda o: getattr(torch.ops.qplugin, dep + "_out").Tensor(
                         x, _t(c), out=o)):
            out = torch._empty_affine_quantized((3, 7), scale=1.0, zero_point=0,
                                                dtype=torch.quint8)
            r = call(out)
            assert r is out
            assert out.q_scale() == ref.q_scale() and out.q_zero_point() == ref.q_zero_point()
            assert np.abs(codes(out) - codes(ref)).max() <= 1


# ------------------------------------------------------------------------------------------
# errors


def test_errors():
    qa = rand_q((2, 3), 0.1, 0, torch.quint8, 18)
    with pytest.raises(RuntimeError, match=r"qplugin::add: expected broadcastable shapes"):
        torch.ops.qplugin.add(qa, rand_q((4,), 0.1, 0, torch.quint8, 1), 0.1, 0)
    with pytest.raises(RuntimeError, match=r"qplugin::mul: expected qb of dtype QUInt8"):
        torch.ops.qplugin.mul(qa, rand_q((2, 3), 0.1, 0, torch.qint8, 1), 0.1, 0)
    with pytest.raises(RuntimeError, match=r"qplugin::add_relu: expected qa to be a quantized"):
        torch.ops.qplugin.add_relu(torch.randn(2, 3), qa, 0.1, 0)
    with pytest.raises(RuntimeError, match=r"qplugin::add: expected qb to be a quantized"):
        torch.ops.qplugin.add(qa, torch.randn(2, 3), 0.1, 0)
    for bad in (float("nan"), 0.0, -0.1, float("inf")):
        with pytest.raises(RuntimeError, match=r"qplugin::add: expected a finite, positive"):
            torch.ops.qplugin.add(qa, qa, bad, 0)
    with pytest.raises(RuntimeError, match=r"expected output_zero_point in \[0, 255\]"):
        torch.ops.qplugin.mul(qa, qa, 0.1, 256)
    out = torch._empty_affine_quantized((2, 3), scale=0.1, zero_point=0, dtype=torch.qint8)
    with pytest.raises(RuntimeError, match=r"qplugin::add.out: expected out of dtype QUInt8"):
        torch.ops.qplugin.add.out(qa, qa, out=out)
    out = torch._empty_affine_quantized((3, 2), scale=0.1, zero_point=0, dtype=torch.quint8)
    with pytest.raises(RuntimeError, match=r"qplugin::add.out: expected out of shape \[2, 3\]"):
        torch.ops.qplugin.add.out(qa, qa, out=out)
    with pytest.raises(RuntimeError, match=r"expected a finite scalar"):
        torch.ops.qplugin.add_scalar(qa, float("nan"))
    with pytest.raises(RuntimeError, match=r"expected b to be a one-element"):
        torch.ops.qplugin.mul_scalar.Tensor(qa, torch.ones(2))
    pc = torch.quantize_per_channel(torch.randn(2, 3), torch.tensor([0.1, 0.2]),
                                    torch.tensor([0, 0]), 0, torch.quint8)
    with pytest.raises(RuntimeError, match=r"quantized per tensor"):
        torch.ops.qplugin.add(pc, pc, 0.1, 0)


# Tie-heavy qparams on every code pair (65536 elements): the first call builds the exact table,
# the later ones take the rational form of binary.h where it holds on all pairs (add: ratios 3/5
# and 1/2, 1/2 and 1/5, 6/10 twice; mul: 1/40 from above, 7/10 from below), including its exact
# ties (a = za with a ratio of exactly 1/2: half to even before the zero point is added, odd and
# even zero points) and a ReLU clamp. mul on the vector tiers (1/40 from above with and without
# ReLU, 3/20 and 7/10 from below): the scaled form (one multiply and a round to nearest), counted
# by _kernel_path_counts on the calls after the first (which builds the table, kept per qparams).
@pytest.mark.parametrize("dtype", [torch.quint8, torch.qint8])
@pytest.mark.parametrize("op,relu,sa,sb,so,zs", [
    ("add", False, 0.03, 0.025, 0.05, (10, 12, 3)),
    ("add", False, 0.03, 0.025, 0.05, (10, 12, 4)),
    ("add", True, 0.05, 0.02, 0.1, (7, 9, 5)),
    ("add", False, 0.03, 0.03, 0.05, (0, 0, 1)),
    ("mul", False, 0.05, 0.05, 0.1, (10, 12, 3)),
    ("mul", True, 0.05, 0.05, 0.1, (10, 12, 4)),
    ("mul", False, 0.2, 0.3, 0.4, (10, 12, 3)),
    ("mul", True, 0.7, 0.1, 0.1, (4, 6, 2)),
])
def test_rational_form_on_every_code_pair(isa, dtype, op, relu, sa, sb, so, zs):
    za, zb, zo = zs
    if dtype == torch.qint8:
        za, zb, zo = za - 128, zb - 128, zo - 128
    lo = -128 if dtype == torch.qint8 else 0
    c = torch.arange(256) + lo
    a = c.repeat_interleave(256).to(INT_DTYPE[dtype])
    b = c.repeat(256).to(INT_DTYPE[dtype])
    qa = torch._make_per_tensor_quantized_tensor(a, sa, za)
    qb = torch._make_per_tensor_quantized_tensor(b, sb, zb)
    fn = OPS[(op, relu)][0]
    before = torch.ops.qplugin._kernel_path_counts()[SCALED]
    # The first call on half the pairs: below the size where the tie check may be skipped
    # (ExactCtx::use_no_check), so the table is built from its undecided lanes.
    check_exact(fn(qa[:32768], qb[:32768], so, zo), qa[:32768], qb[:32768], op, so, zo, relu)
    for _ in range(2):
        check_exact(fn(qa, qb, so, zo), qa, qb, op, so, zo, relu)
    scaled = torch.ops.qplugin._kernel_path_counts()[SCALED] - before
    if op == "mul" and isa != "scalar":
        assert scaled >= 2
    else:
        assert scaled == 0
