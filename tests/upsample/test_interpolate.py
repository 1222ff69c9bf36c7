"""interpolate / upsample: nearest bit-identical to PyTorch (2d/3d), bilinear within 1 unit and
>= 99% identical to PyTorch, nearest-exact / linear / trilinear / 1-d nearest extensions against the
float op on dequantized input, size/scale rules, deprecation warnings, errors, every ISA."""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "pooling"))

import pytest  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from _pool_testutil import DTYPES, assert_same, assert_within1, isa, one_thread, qtensor  # noqa
from qplugin.nn import _functional_pool as qF  # noqa: E402

RESIZE = [dict(scale_factor=2), dict(scale_factor=0.5), dict(scale_factor=1.7),
          dict(scale_factor=(0.6, 2.5)), dict(size=(23, 9)), dict(size=11), dict(size=(5, 31))]


def float_ref(x, **kw):
    # float32 on purpose: PyTorch computes source indices and weights in the input's dtype, and
    # the quantized kernels (PyTorch's and ours) use float32 weights; a float64 reference moves
    # exact ties (e.g. scale 2.5) and disagrees with both on up to 7% of elements.
    y = F.interpolate(x.dequantize(), **kw)
    return torch.quantize_per_tensor(y, x.q_scale(), x.q_zero_point(), x.dtype)


@pytest.mark.parametrize("kw", RESIZE)
@pytest.mark.parametrize("cl", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_nearest2d_matches_torch(isa, kw, cl, dtype):
    x = qtensor((2, 13, 10, 12), dtype, channels_last=cl)
    assert_same(qF.interpolate(x, mode="nearest", **kw), F.interpolate(x, mode="nearest", **kw))


@pytest.mark.parametrize("kw", RESIZE[:5])
@pytest.mark.parametrize("cl", [False, True])
def test_nearest_exact2d_matches_torch(isa, kw, cl):
    x = qtensor((2, 7, 10, 12), channels_last=cl)
    assert_same(qF.interpolate(x, mode="nearest-exact", **kw),
                F.interpolate(x, mode="nearest-exact", **kw))


@pytest.mark.parametrize("kw", [dict(scale_factor=2), dict(scale_factor=(0.5, 1.5, 3)),
                                dict(size=(3, 7, 5))])
@pytest.mark.parametrize("cl", [False, True])
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_nearest3d_matches_torch(isa, kw, cl, mode):
    x = qtensor((2, 5, 4, 6, 5), channels_last=cl)
    assert_same(qF.interpolate(x, mode=mode, **kw), F.interpolate(x, mode=mode, **kw))


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_nearest1d_extension(isa, mode):
    x = qtensor((2, 5, 17))
    for kw in (dict(scale_factor=2), dict(scale_factor=0.7), dict(size=40)):
        y = qF.interpolate(x, mode=mode, **kw)
        torch.testing.assert_close(y.dequantize(), F.interpolate(x.dequantize(), mode=mode, **kw),
                                   rtol=0, atol=0)


@pytest.mark.parametrize("kw", RESIZE)
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("cl", [False, True])
@pytest.mark.parametrize("dtype", [torch.quint8, torch.qint8])
def test_bilinear_matches_torch(isa, kw, align_corners, cl, dtype):
    x = qtensor((2, 13, 10, 12), dtype, channels_last=cl)
    y = qF.interpolate(x, mode="bilinear", align_corners=align_corners, **kw)
    ref = F.interpolate(x, mode="bilinear", align_corners=align_corners, **kw)
    assert y.shape == ref.shape and y.stride() == ref.stride()
    assert (y.q_scale(), y.q_zero_point()) == (ref.q_scale(), ref.q_zero_point())
    assert_within1(y.int_repr(), ref.int_repr(), 0.99)
    # The float op on dequantized input rounds near-ties differently (it interpolates
    # (x - zp) * scale, we and PyTorch interpolate raw codes): within 1, >= 90% identical.
    assert_within1(y.int_repr(), float_ref(x, mode="bilinear", align_corners=align_corners,
                                           **kw).int_repr(), 0.9)


def test_bilinear_qint32_within1():
    x = qtensor((1, 3, 6, 7), torch.qint32)
    y = qF.interpolate(x, scale_factor=2, mode="bilinear")
    ref = F.interpolate(x, scale_factor=2, mode="bilinear")
    assert_within1(y.int_repr(), ref.int_repr(), 0.95)


@pytest.mark.parametrize("align_corners", [False, True])
def test_linear_and_trilinear_extensions(isa, align_corners):
    x = qtensor((2, 5, 17))
    for kw in (dict(scale_factor=2), dict(scale_factor=0.6), dict(size=29)):
        y = qF.interpolate(x, mode="linear", align_corners=align_corners, **kw)
        assert_within1(y.int_repr(), float_ref(x, mode="linear", align_corners=align_corners,
                                               **kw).int_repr(), 0.9)
    for cl in (False, True):
        x = qtensor((2, 4, 5, 6, 7), channels_last=cl)
        for kw in (dict(scale_factor=2), dict(size=(3, 9, 4))):
            y = qF.interpolate(x, mode="trilinear", align_corners=align_corners, **kw)
            assert_within1(y.int_repr(), float_ref(x, mode="trilinear",
                                                   align_corners=align_corners, **kw).int_repr(),
                           0.9)


def test_isas_byte_identical():
    x = qtensor((2, 37, 21, 19), torch.qint8, seed=9)
    variants = [x, x.contiguous(memory_format=torch.channels_last), x[:, :, ::2]]
    outs = {}
    for name in ("scalar", "avx2", "avx512vnni"):
        if torch.ops.qplugin._set_cpu_isa(name) != name:
            continue
        outs[name] = [f(t).int_repr() for t in variants for f in (
            lambda t: qF.interpolate(t, scale_factor=1.7, mode="bilinear"),
            lambda t: qF.interpolate(t, size=(40, 9), mode="bilinear", align_corners=True),
            lambda t: qF.interpolate(t, scale_factor=2, mode="nearest"))]
    torch.ops.qplugin._set_cpu_isa("auto")
    for v in outs.values():
        for a, b in zip(v, outs["scalar"]):
            assert torch.equal(a, b)


def test_deprecated_forms():
    x = qtensor((1, 3, 5, 6))
    with pytest.warns(UserWarning, match="upsample is deprecated"):
        y = qF.upsample(x, scale_factor=2)
    assert_same(y, F.interpolate(x, scale_factor=2))
    with pytest.warns(UserWarning, match="upsample_bilinear is deprecated"):
        y = qF.upsample_bilinear(x, size=(9, 8))
    assert_within1(y.int_repr(), F.interpolate(x, size=(9, 8), mode="bilinear",
                                               align_corners=True).int_repr())
    with pytest.warns(UserWarning, match="upsample_nearest is deprecated"):
        y = qF.upsample_nearest(x, size=7)
    assert_same(y, F.interpolate(x, size=7))


@pytest.mark.parametrize("fn, exc, msg", [
    (lambda x: qF.interpolate(x, size=4, scale_factor=2), ValueError, "only one of size"),
    (lambda x: qF.interpolate(x), ValueError, "either size or scale_factor"),
    (lambda x: qF.interpolate(x, size=(3, 4, 5)), ValueError, "same number of spatial"),
    (lambda x: qF.interpolate(x, scale_factor=(2,)), ValueError, "same number of spatial"),
    (lambda x: qF.interpolate(x, scale_factor=0.1), ValueError, "positive output sizes"),
    (lambda x: qF.interpolate(x, size=2, mode="linear"), NotImplementedError, "linear mode needs 3D"),
    (lambda x: qF.interpolate(x, size=2, mode="trilinear"), NotImplementedError, "needs 5D"),
    (lambda x: qF.interpolate(x, size=2, mode="bicubic"), NotImplementedError, "expected mode"),
    (lambda x: qF.interpolate(x, size=2, align_corners=True), ValueError, "align_corners"),
    (lambda x: qF.interpolate(x.dequantize(), size=2), ValueError, "must be quantized"),
    (lambda x: torch.ops.qplugin.upsample_nearest2d(x, [0, 3]), RuntimeError,
     "expected positive output sizes"),
    (lambda x: torch.ops.qplugin.upsample_bilinear2d(x[0], [2, 3], False), RuntimeError,
     "expected a 4-D (N, C, H, W) input"),
    (lambda x: torch.ops.qplugin.upsample_nearest2d(x.dequantize(), [2, 3]), RuntimeError,
     "expected input to be a quantized tensor"),
])
def test_bad_input(fn, exc, msg):
    x = qtensor((1, 2, 4, 4))
    with pytest.raises(exc, match=re.escape(msg)):
        fn(x)
