"""torch.ops.qplugin.group_norm against torch.ops.quantized.group_norm (x86 engine) and the exact
float64 reference (dequantize in float64, F.group_norm, quantize round half to even): within 1
unit and >= 99% identical, both memory formats, on every ISA, byte-identical across ISAs.
Changes with: csrc/ops/quantized_cpu/normalization_kernel.cpp, csrc/kernels/normalization/*.
"""

import pytest  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from _normalization_testutil import (  # noqa: F401  (one_thread: autouse fixture; pytestmark)
    affine_params, assert_bad_input, assert_q, isas_to_compare, exact, one_thread, pytestmark,
    qtensor, QRANGE)

OP = torch.ops.qplugin.group_norm
REF = torch.ops.quantized.group_norm

# (shape, num_groups, channels_last)
SHAPES = [
    ((2, 6, 5), 3, False),             # 3-D
    ((2, 20, 7, 9), 5, False),         # C not a multiple of 16, small planes
    ((2, 20, 7, 9), 5, True),
    ((2, 32, 33, 33), 8, False),       # planes of >= 1024 pixels: the table path where it applies
    ((2, 32, 33, 33), 8, True),
    ((1, 24, 3, 4, 5), 6, False),      # 5-D
    ((1, 24, 3, 4, 5), 6, True),       # channels_last_3d (PyTorch returns contiguous)
    ((3, 80, 2, 2), 80, True),         # one channel per group, C > 64
]
QPARAMS = [(torch.quint8, 128, 120), (torch.quint8, 0, 255), (torch.qint8, -128, 127),
           (torch.qint8, 127, -128)]


def _exact_gn(x, G, w, b, eps, scale, zp):
    w64 = None if w is None else w.double()
    b64 = None if b is None else b.double()
    return exact(lambda t: F.group_norm(t, G, w64, b64, eps), x, scale, zp)


def _check(x, G, w, b, s_out, zp_out, torch_too=True):
    y = OP(x, G, w, b, 1e-5, s_out, zp_out)
    assert y.dtype == x.dtype and y.shape == x.shape
    cl = x.dim() in (4, 5) and not x.is_contiguous() and x.is_contiguous(
        memory_format=torch.channels_last if x.dim() == 4 else torch.channels_last_3d)
    if cl:  # the output keeps a channels-last input's layout
        assert y.is_contiguous(memory_format=torch.channels_last if x.dim() == 4
                               else torch.channels_last_3d)
    else:
        assert y.is_contiguous()
    assert_q(y, _exact_gn(x, G, w, b, 1e-5, s_out, zp_out), s_out, zp_out, what="exact")
    if torch_too:
        assert_q(y, REF(x, G, w, b, 1e-5, s_out, zp_out), s_out, zp_out, what="torch")
    return y


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("dtype,zp_in,zp_out", QPARAMS)
@pytest.mark.parametrize("shape,G,cl", SHAPES)
def test_matches_torch_and_exact(shape, G, cl, dtype, zp_in, zp_out, affine):
    x = qtensor(shape, dtype, scale=0.04, zero_point=zp_in, seed=G + zp_in, channels_last=cl)
    w, b = affine_params(affine, shape[1])
    _check(x, G, w, b, 0.03, zp_out)


@pytest.mark.parametrize("dtype,zp_in,zp_out", [(torch.quint8, 128, 128), (torch.qint8, -3, 0)])
@pytest.mark.parametrize("cl", [False, True])
def test_issue_shape_256x56x56(cl, dtype, zp_in, zp_out):
    # The issue's case: 32 groups of 8 x 56 x 56 codes, batch 1.
    x = qtensor((1, 256, 56, 56), dtype, scale=0.05, zero_point=zp_in, seed=21, std=40,
                channels_last=cl)
    w, b = affine_params(True, 256)
    _check(x, 32, w, b, 0.03, zp_out)


def test_one_large_group_and_2d_input(isa):
    # One group of 32 x 48 x 48 = 73728 codes: fewer groups than threads, the chunked path.
    x = qtensor((1, 32, 48, 48), torch.quint8, scale=0.02, zero_point=100, seed=5, std=50)
    w, b = affine_params(True, 32)
    _check(x, 1, w, b, 0.03, 128)
    _check(x.contiguous(memory_format=torch.channels_last), 1, w, b, 0.03, 128)
    # (N, C): accepted as float group_norm does (PyTorch's quantized op wants >= 3-D).
    x2 = qtensor((5, 12), torch.qint8, zero_point=0, seed=6)
    _check(x2, 4, *affine_params(True, 12), 0.03, 0, torch_too=False)


@pytest.mark.parametrize("cl", [False, True])
@pytest.mark.parametrize("eps", [1e-5, 0.0])
def test_constant_groups(cl, eps):
    # Each group constant (a different code per group): variance 0, output = quantized bias.
    N, C, G = 2, 16, 4
    codes = torch.arange(N * G, dtype=torch.float64).mul(29).remainder(256).to(torch.uint8)
    codes = codes.view(N, G, 1, 1, 1).expand(N, G, C // G, 40, 40).reshape(N, C, 40, 40)
    x = torch._make_per_tensor_quantized_tensor(codes.contiguous(), 0.05, 77)
    if cl:
        x = x.contiguous(memory_format=torch.channels_last)
    w, b = affine_params(True, C, seed=4)
    y = OP(x, G, w, b, eps, 0.02, 128)
    want = torch.clamp(torch.round(b.double() / 0.02) + 128, 0, 255).to(torch.int64)
    assert torch.equal(y.int_repr().to(torch.int64), want.view(1, C, 1, 1).expand(N, C, 40, 40))


def test_isas_byte_identical():
    isas = isas_to_compare()
    for shape, G, cl in SHAPES + [((1, 256, 56, 56), 32, False), ((1, 256, 56, 56), 32, True),
                                  ((1, 32, 48, 48), 1, False)]:
        for dtype, zp in ((torch.quint8, 250), (torch.qint8, -100)):
            x = qtensor(shape, dtype, scale=0.05, zero_point=zp, seed=7, std=60, channels_last=cl)
            w, b = affine_params(True, shape[1], seed=9)
            outs = {}
            for name in isas:
                torch.ops.qplugin._set_cpu_isa(name)
                outs[name] = OP(x, G, w, b, 1e-5, 0.01, 5)
            torch.ops.qplugin._set_cpu_isa("auto")
            for name in isas:
                assert torch.equal(outs[name].int_repr(), outs["scalar"].int_repr()), (shape, cl, name)
            # Both layouts give the same bytes.
            if cl:
                assert torch.equal(outs["scalar"].int_repr(),
                                   OP(x.contiguous(), G, w, b, 1e-5, 0.01, 5).int_repr())


def test_qint32_and_thread_counts():
    x = qtensor((2, 8, 5, 5), torch.qint32, scale=1e-3, zero_point=-7, std=3e5, mean=1e4, seed=2)
    w, b = affine_params(True, 8)
    _check(x, 4, w, b, 1e-4, 11)
    _check(x.contiguous(memory_format=torch.channels_last), 4, w, b, 1e-4, 11)
    xs = [qtensor((1, 64, 40, 40), torch.quint8, seed=3), qtensor((1, 64, 40, 40), torch.quint8,
                                                                   seed=3, channels_last=True)]
    prev = torch.get_num_threads()
    try:
        outs = []
        for t in (1, 2, 3):
            torch.set_num_threads(t)
            outs.append([OP(x, 4, w.repeat(8), b.repeat(8), 1e-5, 0.02, 128).int_repr() for x in xs])
    finally:
        torch.set_num_threads(prev)
    for o in outs[1:]:
        assert all(torch.equal(a, r) for a, r in zip(o, outs[0]))


def test_noncontiguous_and_empty():
    x = qtensor((2, 8, 6, 10), seed=8)[:, :, :, ::2]
    y = OP(x, 2, None, None, 1e-5, 0.03, 128)
    assert torch.equal(y.int_repr(), OP(x.contiguous(), 2, None, None, 1e-5, 0.03, 128).int_repr())
    e = OP(qtensor((0, 8, 3, 3)), 2, None, None, 1e-5, 0.1, 0)
    assert e.shape == (0, 8, 3, 3)


def test_schema_mirrors_torch():
    ours = str(OP.default._schema).replace("qplugin::", "")
    theirs = str(REF.default._schema).replace("quantized::", "")
    assert ours == theirs


def test_opcheck_schema():
    # Quantized tensors cannot go through FakeTensor in torch 2.13 ("quantized nyi in meta
    # tensors"), so opcheck is limited to the schema check (STYLE.md section 8).
    x = qtensor((2, 8, 6, 6), channels_last=True)
    w, b = affine_params(True, 8)
    torch.library.opcheck(OP.default, (x, 2, w, b, 1e-5, 0.1, 3), test_utils=("test_schema",))


def _bad_cases():
    x = qtensor((2, 6, 4, 4))
    return [
        (lambda: OP(x, 4, None, None, 1e-5, 0.1, 0), "channels to be divisible by num_groups"),
        (lambda: OP(x, 0, None, None, 1e-5, 0.1, 0), "positive num_groups"),
        (lambda: OP(x, -2, None, None, 1e-5, 0.1, 0), "positive num_groups"),
        (lambda: OP(x, 3, torch.ones(5), None, 1e-5, 0.1, 0), "weight of shape \\[6\\]"),
        (lambda: OP(x, 3, None, torch.ones(6, 1), 1e-5, 0.1, 0), "bias of shape \\[6\\]"),
        (lambda: OP(qtensor((6,)), 3, None, None, 1e-5, 0.1, 0), "at least 2 dimensions"),
        (lambda: OP(x, 3, None, None, 1e-5, float("nan"), 0), "finite, positive output_scale"),
        (lambda: OP(x, 3, None, None, 1e-5, 0.0, 0), "finite, positive output_scale"),
        (lambda: OP(x, 3, None, None, 1e-5, -1.0, 0), "finite, positive output_scale"),
        (lambda: OP(x, 3, None, None, 1e-5, 0.1, -1), "output_zero_point in \\[0, 255\\]"),
        (lambda: OP(x, 3, None, None, float("nan"), 0.1, 0), "non-negative eps"),
        (lambda: OP(x.dequantize(), 3, None, None, 1e-5, 0.1, 0), "to be a quantized tensor"),
    ]


@pytest.mark.parametrize("case", range(len(_bad_cases())))
def test_bad_inputs(case):
    assert_bad_input(*_bad_cases()[case], "group_norm")
