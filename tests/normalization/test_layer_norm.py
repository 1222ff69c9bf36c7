"""torch.ops.qplugin.layer_norm against torch.ops.quantized.layer_norm (x86 engine) and the exact
float64 reference (dequantize in float64, F.layer_norm, quantize round half to even): within 1
unit and >= 99% identical, on every ISA, byte-identical across ISAs and thread counts.
Changes with: csrc/ops/quantized_cpu/normalization_kernel.cpp, csrc/kernels/normalization/*.
"""

import pytest  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from _normalization_testutil import (  # noqa: F401  (one_thread: autouse fixture; pytestmark)
    assert_bad_input, assert_q, isas_to_compare, exact, one_thread, pytestmark, qtensor, QRANGE)

OP = torch.ops.qplugin.layer_norm
REF = torch.ops.quantized.layer_norm

SHAPES = [
    ((4, 768), [768]),         # BERT-base hidden size
    ((2, 3, 4096), [4096]),    # a large reduction
    ((3, 5, 7), [7]),          # rows shorter than one vector (tails only)
    ((2, 3, 4, 5), [4, 5]),    # 2-D normalized shape
    ((2, 97), [97]),           # vector body + odd tail
]
# (dtype, input zero point, output zero point): mid-range and the extremes.
QPARAMS = [
    (torch.quint8, 128, 120), (torch.quint8, 0, 0), (torch.quint8, 255, 255),
    (torch.qint8, 0, 3), (torch.qint8, -128, 127), (torch.qint8, 127, -128),
]


def _affine(kind, nshape, seed=1):
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(nshape, generator=g) * 1.5 if kind in ("both", "weight") else None
    b = torch.randn(nshape, generator=g) if kind in ("both", "bias") else None
    return w, b


def _exact_ln(x, nshape, w, b, eps, scale, zp):
    w64 = None if w is None else w.double()
    b64 = None if b is None else b.double()
    return exact(lambda t: F.layer_norm(t, nshape, w64, b64, eps), x, scale, zp)


@pytest.mark.parametrize("affine", ["both", "none", "weight"])
@pytest.mark.parametrize("dtype,zp_in,zp_out", QPARAMS)
@pytest.mark.parametrize("shape,nshape", SHAPES)
def test_matches_torch_and_exact(shape, nshape, dtype, zp_in, zp_out, affine):
    x = qtensor(shape, dtype, scale=0.04, zero_point=zp_in, seed=len(shape) + zp_in)
    w, b = _affine(affine, nshape)
    s_out = 0.03
    y = OP(x, nshape, w, b, 1e-5, s_out, zp_out)
    assert y.dtype == x.dtype and y.shape == x.shape and y.is_contiguous()
    assert_q(y, _exact_ln(x, nshape, w, b, 1e-5, s_out, zp_out), s_out, zp_out, what="exact")
    assert_q(y, REF(x, nshape, w, b, 1e-5, s_out, zp_out), s_out, zp_out, what="torch")


def test_long_rows_split_across_threads(isa):
    # Two rows of 70000 codes: fewer rows than threads * 4, so both passes run in chunks.
    x = qtensor((2, 70000), torch.quint8, scale=0.02, zero_point=100, seed=3, std=50)
    w, b = _affine("both", [70000])
    y = OP(x, [70000], w, b, 1e-5, 0.03, 128)
    assert_q(y, _exact_ln(x, [70000], w, b, 1e-5, 0.03, 128), 0.03, 128, what="exact")
    assert_q(y, REF(x, [70000], w, b, 1e-5, 0.03, 128), 0.03, 128, what="torch")


@pytest.mark.parametrize("eps", [1e-5, 0.0])
@pytest.mark.parametrize("dtype,code", [(torch.quint8, 0), (torch.quint8, 201), (torch.qint8, -128),
                                        (torch.qint8, 77)])
def test_constant_rows(dtype, code, eps):
    # Variance 0: the normalized value is exactly 0, so the output is the quantized bias (also
    # for eps = 0, where float layer_norm gives 0/0).
    n = 768
    codes = torch.full((3, n), code, dtype=torch.uint8 if dtype == torch.quint8 else torch.int8)
    x = torch._make_per_tensor_quantized_tensor(codes, 0.05, 10 if dtype == torch.quint8 else 0)
    w, b = _affine("both", [n], seed=5)
    zp_out = 128 if dtype == torch.quint8 else 0
    y = OP(x, [n], w, b, eps, 0.02, zp_out)
    lo, hi = QRANGE[dtype]
    want = torch.clamp(torch.round(b.double() / 0.02) + zp_out, lo, hi).to(torch.int64)
    assert torch.equal(y.int_repr().to(torch.int64), want.expand(3, n))
    if eps > 0:
        assert_q(y, REF(x, [n], w, b, eps, 0.02, zp_out), 0.02, zp_out, what="torch")


def test_isas_byte_identical():
    isas = isas_to_compare()
    cases = [((4, 768), [768], torch.quint8, 128), ((2, 3, 4096), [4096], torch.qint8, -5),
             ((5, 7), [7], torch.quint8, 0), ((2, 3, 4, 33), [4, 33], torch.qint8, 127),
             ((2, 70000), [70000], torch.quint8, 255)]
    for shape, nshape, dtype, zp in cases:
        x = qtensor(shape, dtype, scale=0.05, zero_point=zp, seed=7, std=60)
        w, b = _affine("both", nshape, seed=9)
        outs = {}
        for name in isas:
            torch.ops.qplugin._set_cpu_isa(name)
            outs[name] = OP(x, nshape, w, b, 1e-5, 0.01, 7 if dtype == torch.qint8 else 130)
        torch.ops.qplugin._set_cpu_isa("auto")
        for name in isas:
            assert torch.equal(outs[name].int_repr(), outs["scalar"].int_repr()), (shape, name)


def test_thread_counts_identical():
    x = qtensor((2, 70000), torch.quint8, seed=11, std=40)
    x2 = qtensor((64, 768), torch.qint8, zero_point=0, seed=12)
    prev = torch.get_num_threads()
    try:
        outs = []
        for t in (1, 2, 3):
            torch.set_num_threads(t)
            outs.append((OP(x, [70000], None, None, 1e-5, 0.02, 128).int_repr(),
                         OP(x2, [768], None, None, 1e-5, 0.02, 0).int_repr()))
    finally:
        torch.set_num_threads(prev)
    for o in outs[1:]:
        assert torch.equal(o[0], outs[0][0]) and torch.equal(o[1], outs[0][1])


def test_qint32():
    x = qtensor((3, 4, 50), torch.qint32, scale=1e-3, zero_point=-7, std=3e5, mean=1e4, seed=2)
    w, b = _affine("both", [4, 50])
    y = OP(x, [4, 50], w, b, 1e-5, 1e-4, 11)
    assert y.dtype == torch.qint32
    assert_q(y, _exact_ln(x, [4, 50], w, b, 1e-5, 1e-4, 11), 1e-4, 11, what="exact")
    assert_q(y, REF(x, [4, 50], w, b, 1e-5, 1e-4, 11), 1e-4, 11, what="torch")


def test_noncontiguous_and_channels_last_input(isa):
    x = qtensor((2, 16, 6, 40), torch.quint8, seed=4, channels_last=True)
    w, b = _affine("both", [40])
    y = OP(x, [40], w, b, 1e-5, 0.03, 128)
    assert y.is_contiguous()  # PyTorch's layout: contiguous output
    assert torch.equal(y.int_repr(), OP(x.contiguous(), [40], w, b, 1e-5, 0.03, 128).int_repr())
    xt = qtensor((40, 6), torch.qint8, zero_point=0, seed=5).t()
    yt = OP(xt, [40], None, None, 1e-5, 0.03, 0)
    assert torch.equal(yt.int_repr(), OP(xt.contiguous(), [40], None, None, 1e-5, 0.03, 0).int_repr())


def test_empty_and_weight_dtypes():
    e = OP(qtensor((0, 8)), [8], None, None, 1e-5, 0.1, 0)
    assert e.shape == (0, 8) and e.dtype == torch.quint8
    x = qtensor((3, 64), seed=6)
    w, b = _affine("both", [64])
    y32 = OP(x, [64], w, b, 1e-5, 0.03, 128)
    y64 = OP(x, [64], w.double(), b.double(), 1e-5, 0.03, 128)  # converted to float32
    assert torch.equal(y32.int_repr(), y64.int_repr())
    yb = OP(x, [64], None, b, 1e-5, 0.03, 128)  # bias only
    assert_q(yb, _exact_ln(x, [64], None, b, 1e-5, 0.03, 128), 0.03, 128, what="bias only")


def test_schema_mirrors_torch():
    ours = str(OP.default._schema).replace("qplugin::", "")
    theirs = str(REF.default._schema).replace("quantized::", "")
    assert ours == theirs


def test_opcheck_schema():
    # Quantized tensors cannot go through FakeTensor in torch 2.13 ("quantized nyi in meta
    # tensors"), so opcheck is limited to the schema check (STYLE.md section 8).
    x = qtensor((2, 3, 8))
    w, b = _affine("both", [8])
    torch.library.opcheck(OP.default, (x, [8], w, b, 1e-5, 0.1, 3), test_utils=("test_schema",))


def _bad_cases():
    x = qtensor((2, 3, 8))
    w8 = torch.ones(8)
    return [
        (lambda: OP(x, [7], None, None, 1e-5, 0.1, 0), "trailing dimensions match normalized_shape"),
        (lambda: OP(x, [3, 7], None, None, 1e-5, 0.1, 0), "trailing dimensions match normalized_shape"),
        (lambda: OP(x, [1, 2, 3, 8], None, None, 1e-5, 0.1, 0), "trailing dimensions"),
        (lambda: OP(x, [], None, None, 1e-5, 0.1, 0), "non-empty normalized_shape"),
        (lambda: OP(x, [8], torch.ones(7), None, 1e-5, 0.1, 0), "expected weight of shape \\[8\\]"),
        (lambda: OP(x, [8], w8, torch.ones(1, 8), 1e-5, 0.1, 0), "expected bias of shape \\[8\\]"),
        (lambda: OP(x, [8], torch.ones(8, dtype=torch.int64), None, 1e-5, 0.1, 0),
         "expected weight to be a floating-point tensor"),
        (lambda: OP(x, [8], None, None, 1e-5, float("nan"), 0), "finite, positive output_scale"),
        (lambda: OP(x, [8], None, None, 1e-5, 0.0, 0), "finite, positive output_scale"),
        (lambda: OP(x, [8], None, None, 1e-5, -0.1, 0), "finite, positive output_scale"),
        (lambda: OP(x, [8], None, None, 1e-5, float("inf"), 0), "finite, positive output_scale"),
        (lambda: OP(x, [8], None, None, 1e-5, 0.1, 256), "output_zero_point in \\[0, 255\\]"),
        (lambda: OP(x, [8], None, None, -1.0, 0.1, 0), "non-negative eps"),
        (lambda: OP(x.dequantize(), [8], None, None, 1e-5, 0.1, 0), "to be a quantized tensor"),
        (lambda: OP(torch.quantize_per_channel(torch.randn(2, 8), torch.ones(2) * 0.1,
                                               torch.zeros(2, dtype=torch.long), 0, torch.quint8),
                    [8], None, None, 1e-5, 0.1, 0), "quantized per tensor"),
    ]


@pytest.mark.parametrize("case", range(len(_bad_cases())))
def test_bad_inputs(case):
    assert_bad_input(*_bad_cases()[case], "layer_norm")
