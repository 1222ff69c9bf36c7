# quantize_per_tensor.plain / dequantize.plain, the PT2 door's graph boundaries: bit for bit what
# torch.quantize_per_tensor(...).int_repr() and .dequantize() give (torch 2.13 on x86 rounds
# fma(x, 1/scale, zp) once, ties to even; NaN and +inf -> qmax, -inf -> qmin), on ties, values
# next to ties, huge values, NaN/inf, both dtypes, every size class (vector body, tails, the
# parallel split) and layout; opcheck; bad inputs name the op.
# Changes with: csrc/ops/cpu/quantize_kernel.cpp, csrc/ops/quantize.cpp, qplugin/pt2/fake/quantize.py.
import math

import pytest
import torch

import qplugin  # noqa: F401

Q = torch.ops.qplugin
DTYPES = [(torch.quint8, torch.uint8, 0, 255), (torch.qint8, torch.int8, -128, 127)]
SCALES = [1.0, 0.1, 0.05, 1 / 3, 0.0078125, 0.017, 2.5e-4, 3.7, 123.456, 1e-6]


# torch 2.13 (FBGEMM's legacy Quantize on x86) rounds fma(x, 1/scale, zp) once: the rule
# qplugin's quantize_per_tensor.plain implements on every ISA. torch 2.14.1 rounds x * (1/scale)
# first and then adds zp (another result at exact ties when zp is odd) and wraps through int32
# for |x / scale| >= 2^31 and NaN (1e30 -> code 0, -inf -> 127: garbage), so the bit-exact
# comparisons run only against a torch with 2.13's rule (the 2.13 CI stage runs them on the
# same kernels; the kernels do not depend on the torch version). docs/deviations.md.
TORCH_FMA_RULE = torch.quantize_per_tensor(torch.tensor([0.5]), 1.0, 1,
                                           torch.quint8).int_repr().item() == 2
requires_fma_rule = pytest.mark.skipif(
    not TORCH_FMA_RULE, reason="this torch's quantize_per_tensor rounds x/scale before adding "
    "the zero point and wraps huge values through int32 (torch 2.14); qplugin keeps torch "
    "2.13's single-rounding rule, checked against 2.13")


def _values(scale, seed):
    g = torch.Generator().manual_seed(seed)
    parts = [
        torch.randn(3000, generator=g) * 80 * scale,                          # in range and out
        torch.randint(-700, 700, (1500,), generator=g).float() * 0.5 * scale,  # ties (x.5 codes)
    ]
    ties = parts[1]
    parts.append(torch.nextafter(ties, torch.full_like(ties, math.inf)))       # next to ties
    parts.append(torch.nextafter(ties, torch.full_like(ties, -math.inf)))
    parts.append(torch.tensor([0.0, -0.0, 1e-45, -1e-45, 1e30, -1e30, 3e38, -3e38,
                               math.inf, -math.inf, math.nan, -math.nan, 2.0**31, -2.0**31,
                               2.0**31 * scale, -(2.0**31) * scale]))
    return torch.cat(parts)


@requires_fma_rule
@pytest.mark.parametrize("qdtype,cdtype,lo,hi", DTYPES, ids=["quint8", "qint8"])
def test_quantize_bit_exact_with_torch(qdtype, cdtype, lo, hi, isa):
    n = 0
    for i, scale in enumerate(SCALES):
        x = _values(scale, i)
        for zp in (lo, 0 if lo < 0 else 1, 3, (lo + hi) // 2, hi):
            want = torch.quantize_per_tensor(x, scale, zp, qdtype).int_repr()
            for d in (cdtype, qdtype):  # both spellings of the code dtype
                got = Q.quantize_per_tensor.plain(x, scale, zp, d)
                assert got.dtype == cdtype
                bad = (got != want).nonzero().flatten()
                assert bad.numel() == 0, (scale, zp, x[bad[:5]].tolist(), got[bad[:5]].tolist(),
                                          want[bad[:5]].tolist())
                n += x.numel()
    assert n > 750_000  # 10 scales x 5 zero points x 2 spellings x 7516 values


def test_quantize_nonfinite(isa):
    # 45 values: the vector bodies (32 / 16 per step) and the tails both meet them.
    x = torch.tensor([math.nan, math.inf, -math.inf] * 15)
    assert Q.quantize_per_tensor.plain(x, 0.1, 3, torch.uint8).tolist() == [255, 255, 0] * 15
    assert Q.quantize_per_tensor.plain(x, 0.1, -3, torch.int8).tolist() == [127, 127, -128] * 15


def test_quantize_ties_to_even(isa):
    # codes = x / scale + zp with x / scale exactly k + 0.5: even k wins.
    x = torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5, -2.5])
    assert Q.quantize_per_tensor.plain(x, 1.0, 10, torch.uint8).tolist() == [10, 12, 12, 10, 8, 8]
    # and the fma: x * (1/scale) + zp rounds once (not x * inv rounded, then + zp)
    assert torch.equal(Q.quantize_per_tensor.plain(x, 1.0, 10, torch.uint8),
                       torch.quantize_per_tensor(x, 1.0, 10, torch.quint8).int_repr())


@pytest.mark.parametrize("n", [1, 7, 8, 9, 15, 16, 17, 63, 65, 32767, 32769, 200003])
def test_quantize_sizes(n, isa):
    x = torch.randn(n, generator=torch.Generator().manual_seed(n)) * 5
    x[::7] = torch.randint(-40, 40, x[::7].shape).float() * 0.25  # ties at scale 0.5
    for qd, cd, zp in ((torch.quint8, torch.uint8, 128), (torch.qint8, torch.int8, 0)):
        want = torch.quantize_per_tensor(x, 0.5, zp, qd).int_repr()
        assert torch.equal(Q.quantize_per_tensor.plain(x, 0.5, zp, cd), want)


@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "channels_last_3d",
                                    "transposed", "strided"])
def test_quantize_layouts(layout):
    g = torch.Generator().manual_seed(3)
    if layout == "channels_last":
        x = torch.randn(2, 5, 4, 3, generator=g).contiguous(memory_format=torch.channels_last)
    elif layout == "channels_last_3d":
        x = torch.randn(2, 5, 2, 4, 3, generator=g).contiguous(
            memory_format=torch.channels_last_3d)
    elif layout == "transposed":
        x = torch.randn(6, 9, generator=g).t()
    elif layout == "strided":
        x = torch.randn(4, 10, generator=g)[:, ::3]
    else:
        x = torch.randn(3, 4, 5, generator=g)
    qx = torch.quantize_per_tensor(x, 0.02, 100, torch.quint8)
    got = Q.quantize_per_tensor.plain(x, 0.02, 100, torch.uint8)
    assert torch.equal(got, qx.int_repr())
    assert got.stride() == qx.stride()
    back = Q.dequantize.plain(got, 0.02, 100)
    want = qx.dequantize()
    assert torch.equal(back, want) and back.stride() == want.stride()


@pytest.mark.parametrize("qdtype,cdtype,lo,hi", DTYPES, ids=["quint8", "qint8"])
def test_dequantize_bit_exact_with_torch(qdtype, cdtype, lo, hi):
    codes = torch.arange(lo, hi + 1, dtype=torch.int32).to(cdtype).repeat(3)
    for scale in SCALES + [0.1234567, 1e-3, 1e3]:
        for zp in (lo, 0 if lo < 0 else 1, 77, hi):
            q = torch._make_per_tensor_quantized_tensor(codes, scale, zp)
            assert q.dtype == qdtype
            got = Q.dequantize.plain(codes, scale, zp)
            assert got.dtype == torch.float32
            assert torch.equal(got, q.dequantize()), (scale, zp)


@requires_fma_rule
def test_quantize_dequantize_roundtrip_mutation_check():
    # The bit-exact tests can fail: rounding x / scale in double instead gives other codes.
    # Values at and next to code ties (random values almost never land where the two differ).
    x = _values(0.017, 0)
    got = Q.quantize_per_tensor.plain(x, 0.017, 5, torch.uint8)
    alt = torch.clamp(torch.round(x.double() / 0.017) + 5, 0, 255).to(torch.uint8)
    assert not torch.equal(got, alt)
    assert torch.equal(got, torch.quantize_per_tensor(x, 0.017, 5, torch.quint8).int_repr())


OPCHECK = [
    ("q-uint8", Q.quantize_per_tensor.plain, (torch.randn(3, 4), 0.05, 7, torch.uint8)),
    ("q-int8-cl", Q.quantize_per_tensor.plain,
     (torch.randn(2, 3, 4, 5).contiguous(memory_format=torch.channels_last), 0.05, -7,
      torch.int8)),
    ("q-quint8", Q.quantize_per_tensor.plain, (torch.randn(5), 0.05, 7, torch.quint8)),
    ("dq-uint8", Q.dequantize.plain, (torch.randint(0, 256, (3, 4), dtype=torch.uint8), 0.05, 7)),
    ("dq-int8-cl", Q.dequantize.plain,
     (torch.randint(-128, 128, (2, 3, 4, 5), dtype=torch.int8).contiguous(
         memory_format=torch.channels_last), 0.05, -7)),
]


@pytest.mark.parametrize("case", range(len(OPCHECK)), ids=[c[0] for c in OPCHECK])
def test_opcheck(case):
    _, op, args = OPCHECK[case]
    torch.library.opcheck(op, args, test_utils=("test_schema", "test_faketensor",
                                                "test_aot_dispatch_dynamic"))


BAD = [
    (lambda: Q.quantize_per_tensor.plain(torch.randn(3).double(), 0.1, 0, torch.uint8),
     r"qplugin::quantize_per_tensor\.plain: expected self of dtype torch.float32, got Double"),
    (lambda: Q.quantize_per_tensor.plain(torch.arange(3, dtype=torch.uint8), 0.1, 0, torch.uint8),
     r"qplugin::quantize_per_tensor\.plain: expected self of dtype torch.float32, got Byte"),
    (lambda: Q.quantize_per_tensor.plain(
        torch.quantize_per_tensor(torch.randn(3), 0.1, 0, torch.quint8), 0.1, 0, torch.uint8),
     r"qplugin::quantize_per_tensor\.plain: expected self of dtype torch.float32, got a "
     r"quantized QUInt8"),
    (lambda: Q.quantize_per_tensor.plain(torch.randn(3), 0.1, 0, torch.int32),
     r"qplugin::quantize_per_tensor\.plain: expected dtype torch.uint8 or torch.int8"),
    (lambda: Q.quantize_per_tensor.plain(torch.randn(3), 0.0, 0, torch.uint8),
     r"qplugin::quantize_per_tensor\.plain: expected a finite, positive scale"),
    (lambda: Q.quantize_per_tensor.plain(torch.randn(3), -0.5, 0, torch.uint8),
     r"qplugin::quantize_per_tensor\.plain: expected a finite, positive scale"),
    (lambda: Q.quantize_per_tensor.plain(torch.randn(3), math.inf, 0, torch.uint8),
     r"qplugin::quantize_per_tensor\.plain: expected a finite, positive scale"),
    (lambda: Q.quantize_per_tensor.plain(torch.randn(3), 1e-300, 0, torch.uint8),
     r"qplugin::quantize_per_tensor\.plain: expected a finite, positive scale"),
    (lambda: Q.quantize_per_tensor.plain(torch.randn(3), 0.1, 256, torch.uint8),
     r"qplugin::quantize_per_tensor\.plain: expected zero_point in \[0, 255\]"),
    (lambda: Q.quantize_per_tensor.plain(torch.randn(3), 0.1, 128, torch.int8),
     r"qplugin::quantize_per_tensor\.plain: expected zero_point in \[-128, 127\]"),
    (lambda: Q.dequantize.plain(torch.randn(3), 0.1, 0),
     r"qplugin::dequantize\.plain: expected self of dtype Byte or Char .*got Float"),
    (lambda: Q.dequantize.plain(torch.arange(3, dtype=torch.int32), 0.1, 0),
     r"qplugin::dequantize\.plain: expected self of dtype Byte or Char"),
    (lambda: Q.dequantize.plain(torch.quantize_per_tensor(torch.randn(3), 0.1, 0, torch.quint8),
                                0.1, 0),
     r"qplugin::dequantize\.plain: expected self to be a plain tensor of codes"),
    (lambda: Q.dequantize.plain(torch.zeros(3, dtype=torch.uint8), 0.0, 0),
     r"qplugin::dequantize\.plain: expected a finite, positive self_scale"),
    (lambda: Q.dequantize.plain(torch.zeros(3, dtype=torch.int8), 0.1, 200),
     r"qplugin::dequantize\.plain: expected self_zero_point in \[-128, 127\]"),
]


@pytest.mark.parametrize("case", range(len(BAD)))
def test_bad_input_names_the_op(case):
    call, msg = BAD[case]
    with pytest.raises(RuntimeError, match=msg):
        call()


def test_empty():
    x = torch.empty(0, 3)
    y = Q.quantize_per_tensor.plain(x, 0.1, 0, torch.uint8)
    assert y.shape == (0, 3) and y.dtype == torch.uint8
    assert Q.dequantize.plain(y, 0.1, 0).shape == (0, 3)


# ---------------------------------------------------------------------------------------------
# Both doors' Quantize modules: qplugin.nn.Quantize (TorchScript door, quantized-dtype output) and
# qplugin.pt2.Quantize (QTensor output) run qplugin's kernel, so they give the same bytes on every
# torch version, at ties and on huge values too (torch 2.14's quantize_per_tensor rounds those
# differently from 2.13, docs/deviations.md).


def _torch214_rule(x, scale, zp, lo, hi):
    """torch 2.14.1's rounding away from huge values: round(x * (1/scale)) first, then + zp."""
    inv = torch.tensor(1.0 / torch.tensor(scale, dtype=torch.float32).item(), dtype=torch.float32)
    r = torch.round(x * inv)  # float32 product, ties to even
    return (r.double() + zp).clamp(lo, hi)


@pytest.mark.parametrize("qdtype,cdtype,lo,hi", DTYPES, ids=["quint8", "qint8"])
def test_doors_quantize_to_the_same_bytes(qdtype, cdtype, lo, hi, isa):
    from torch.utils._python_dispatch import TorchDispatchMode

    import qplugin.pt2
    from qplugin.pt2 import QTensor

    class Calls(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.names = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.names.append(str(func))
            return func(*args, **(kwargs or {}))

    discriminating = 0
    for i, scale in enumerate(SCALES):
        x = _values(scale, 100 + i)
        for zp in (lo, 3, -5 if lo < 0 else 5, (lo + hi) // 2, hi):
            legacy = qplugin.nn.Quantize(scale, zp, qdtype)
            pt2 = qplugin.pt2.Quantize.from_quantized(legacy)
            scripted = torch.jit.script(legacy)
            with Calls() as calls:
                lq = legacy(x)
            # qplugin's kernel, not torch's quantize_per_tensor (whose rounding moved in 2.14).
            assert "qplugin.quantize_per_tensor.plain" in calls.names, calls.names
            assert not any(n.startswith("aten.quantize_per_tensor") for n in calls.names)
            s = float(legacy.scale)  # its float32 buffer's value, as torch.ao's Quantize
            assert lq.dtype == qdtype and (lq.q_scale(), lq.q_zero_point()) == (s, zp)
            codes = lq.int_repr()
            assert codes.dtype == cdtype
            pq = pt2(x)
            assert isinstance(pq, QTensor) and (pq.scale, pq.zero_point) == (s, zp)
            assert torch.equal(pq.int_data, codes)
            sq = scripted(x)
            assert sq.dtype == qdtype and torch.equal(sq.int_repr(), codes)
            assert torch.equal(codes, Q.quantize_per_tensor.plain(x, s, zp, cdtype))
            # The values hold ties where 2.14's order of rounding gives other codes (odd zp).
            finite = x.abs() < 1e6 * scale
            alt = _torch214_rule(x[finite], s, zp, lo, hi)
            discriminating += int((alt != codes[finite].double()).sum())
    assert discriminating > 1000, discriminating


def test_doors_quantize_keep_layout_and_script():
    import qplugin.pt2

    x = torch.randn(2, 5, 4, 3).contiguous(memory_format=torch.channels_last)
    legacy = qplugin.nn.Quantize(0.03, 7, torch.quint8)
    scripted = torch.jit.script(legacy)
    assert "qplugin::quantize_per_tensor" in str(scripted.graph)
    for q in (legacy(x), scripted(x)):
        # the memory format torch.quantize_per_tensor gives (a model's conv reads it as is)
        assert q.stride() == x.stride()
        assert torch.equal(q.int_repr(), qplugin.pt2.Quantize(0.03, 7)(x).int_data)
    # qint32 stays on torch.quantize_per_tensor (qplugin's kernel makes 8-bit codes only).
    x32 = torch.tensor([1.0, -2.25, 1e3])
    q32 = qplugin.nn.Quantize(0.5, 3, torch.qint32)(x32)
    assert q32.dtype == torch.qint32
    want = torch.quantize_per_tensor(x32, 0.5, 3, torch.qint32).int_repr()
    assert torch.equal(q32.int_repr(), want)
