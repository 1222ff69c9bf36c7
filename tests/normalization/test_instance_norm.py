"""torch.ops.qplugin.instance_norm against torch.ops.quantized.instance_norm (x86 engine) and the
exact float64 reference (dequantize in float64, F.instance_norm, quantize round half to even):
within 1 unit and >= 99% identical, both memory formats, on every ISA, byte-identical across ISAs.
Changes with: csrc/ops/quantized_cpu/normalization_kernel.cpp, csrc/kernels/normalization/*.
"""

import pytest  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from _normalization_testutil import (  # noqa: F401  (one_thread: autouse fixture; pytestmark)
    affine_params, assert_bad_input, assert_q, isas_to_compare, exact, one_thread, pytestmark,
    qtensor)

OP = torch.ops.qplugin.instance_norm
REF = torch.ops.quantized.instance_norm

# (shape, channels_last)
SHAPES = [
    ((2, 5, 17), False),             # InstanceNorm1d input
    ((2, 20, 7, 9), False),          # C not a multiple of 16, small planes
    ((2, 20, 7, 9), True),
    ((2, 16, 40, 40), False),        # planes of >= 1024 pixels: the table path where it applies
    ((2, 16, 40, 40), True),
    ((1, 3, 4, 5, 6), False),        # InstanceNorm3d input
    ((1, 3, 4, 5, 6), True),
]
QPARAMS = [(torch.quint8, 128, 120), (torch.quint8, 255, 0), (torch.qint8, -128, 127),
           (torch.qint8, 10, -128)]


def _check(x, w, b, s_out, zp_out):
    y = OP(x, w, b, 1e-5, s_out, zp_out)
    assert y.dtype == x.dtype and y.shape == x.shape
    if x.dim() in (4, 5) and not x.is_contiguous():
        assert y.is_contiguous(memory_format=torch.channels_last if x.dim() == 4
                               else torch.channels_last_3d)
    w64 = None if w is None else w.double()
    b64 = None if b is None else b.double()
    want = exact(lambda t: F.instance_norm(t, weight=w64, bias=b64, eps=1e-5), x, s_out, zp_out)
    assert_q(y, want, s_out, zp_out, what="exact")
    assert_q(y, REF(x, w, b, 1e-5, s_out, zp_out), s_out, zp_out, what="torch")
    return y


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("dtype,zp_in,zp_out", QPARAMS)
@pytest.mark.parametrize("shape,cl", SHAPES)
def test_matches_torch_and_exact(shape, cl, dtype, zp_in, zp_out, affine):
    x = qtensor(shape, dtype, scale=0.04, zero_point=zp_in, seed=shape[1] + zp_in, channels_last=cl)
    _check(x, *affine_params(affine, shape[1]), 0.03, zp_out)


@pytest.mark.parametrize("cl", [False, True])
def test_issue_shape_64x112x112(cl):
    # The issue's case: 64 planes of 112 x 112, batch 1.
    x = qtensor((1, 64, 112, 112), torch.quint8, scale=0.05, zero_point=128, seed=31, std=40,
                channels_last=cl)
    _check(x, *affine_params(True, 64), 0.03, 128)


def test_one_large_plane(isa):
    # One plane of 300 x 300 codes: fewer planes than threads, the chunked path.
    x = qtensor((1, 1, 300, 300), torch.qint8, scale=0.02, zero_point=-20, seed=5, std=50)
    _check(x, *affine_params(True, 1), 0.03, 0)


@pytest.mark.parametrize("cl", [False, True])
def test_constant_planes(cl):
    N, C = 2, 24
    codes = torch.arange(N * C, dtype=torch.float64).mul(37).remainder(256).sub(128)
    codes = codes.to(torch.int8).view(N, C, 1, 1).expand(N, C, 33, 33).contiguous()
    x = torch._make_per_tensor_quantized_tensor(codes, 0.05, -7)
    if cl:
        x = x.contiguous(memory_format=torch.channels_last)
    w, b = affine_params(True, C, seed=4)
    for eps in (1e-5, 0.0):
        y = OP(x, w, b, eps, 0.02, 3)
        want = torch.clamp(torch.round(b.double() / 0.02) + 3, -128, 127).to(torch.int64)
        assert torch.equal(y.int_repr().to(torch.int64), want.view(1, C, 1, 1).expand(N, C, 33, 33))


def test_isas_byte_identical():
    isas = isas_to_compare()
    for shape, cl in SHAPES + [((1, 64, 112, 112), False), ((1, 64, 112, 112), True)]:
        for dtype, zp in ((torch.quint8, 3), (torch.qint8, 100)):
            x = qtensor(shape, dtype, scale=0.05, zero_point=zp, seed=7, std=60, channels_last=cl)
            w, b = affine_params(True, shape[1], seed=9)
            outs = {}
            for name in isas:
                torch.ops.qplugin._set_cpu_isa(name)
                outs[name] = OP(x, w, b, 1e-5, 0.01, -3 if dtype == torch.qint8 else 140)
            torch.ops.qplugin._set_cpu_isa("auto")
            for name in isas:
                assert torch.equal(outs[name].int_repr(), outs["scalar"].int_repr()), (shape, cl, name)


def test_qint32_and_threads():
    x = qtensor((2, 3, 7, 5), torch.qint32, scale=1e-3, zero_point=5, std=3e5, mean=-1e4, seed=2)
    _check(x, *affine_params(True, 3), 1e-4, -11)
    x = qtensor((1, 32, 64, 64), torch.quint8, seed=3)
    xc = x.contiguous(memory_format=torch.channels_last)
    prev = torch.get_num_threads()
    try:
        outs = []
        for t in (1, 2):
            torch.set_num_threads(t)
            outs.append((OP(x, None, None, 1e-5, 0.02, 128).int_repr(),
                         OP(xc, None, None, 1e-5, 0.02, 128).int_repr()))
    finally:
        torch.set_num_threads(prev)
    assert torch.equal(outs[0][0], outs[1][0]) and torch.equal(outs[0][1], outs[1][1])


def test_schema_mirrors_torch():
    ours = str(OP.default._schema).replace("qplugin::", "")
    theirs = str(REF.default._schema).replace("quantized::", "")
    assert ours == theirs


def test_opcheck_schema():
    # Quantized tensors cannot go through FakeTensor in torch 2.13 ("quantized nyi in meta
    # tensors"), so opcheck is limited to the schema check (STYLE.md section 8).
    x = qtensor((2, 8, 6, 6))
    w, b = affine_params(True, 8)
    torch.library.opcheck(OP.default, (x, w, b, 1e-5, 0.1, 3), test_utils=("test_schema",))


def _bad_cases():
    x = qtensor((2, 6, 4, 4))
    return [
        (lambda: OP(qtensor((6, 4)), None, None, 1e-5, 0.1, 0), "at least 3 dimensions.*got 2-D"),
        (lambda: OP(x, torch.ones(5), None, 1e-5, 0.1, 0), "weight of shape \\[6\\]"),
        (lambda: OP(x, None, torch.ones(7), 1e-5, 0.1, 0), "bias of shape \\[6\\]"),
        (lambda: OP(x, None, None, 1e-5, float("nan"), 0), "finite, positive output_scale"),
        (lambda: OP(x, None, None, 1e-5, 0.0, 0), "finite, positive output_scale"),
        (lambda: OP(x, None, None, 1e-5, -0.5, 0), "finite, positive output_scale"),
        (lambda: OP(x, None, None, -1e-3, 0.1, 0), "non-negative eps"),
        (lambda: OP(x.dequantize(), None, None, 1e-5, 0.1, 0), "to be a quantized tensor"),
    ]


@pytest.mark.parametrize("case", range(len(_bad_cases())))
def test_bad_inputs(case):
    assert_bad_input(*_bad_cases()[case], "instance_norm")
