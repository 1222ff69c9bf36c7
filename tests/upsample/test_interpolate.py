"""interpolate / upsample: nearest bit-identical to PyTorch (2d/3d), bilinear within 1 unit and
>= 99% identical to PyTorch, nearest-exact / linear / trilinear / 1-d nearest extensions against the
float op on dequantized input, size/scale rules, deprecation warnings, errors, every ISA."""
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))

import pytest  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from _reference import isas_to_compare  # noqa: E402
from _pool_testutil import DTYPES, assert_same, assert_qclose, one_thread, qtensor  # noqa
from qplugin.nn import _functional_upsample as qF  # noqa: E402
from _reference import torch_is_valid_oracle  # noqa: E402
from _sweeps import QRANGE  # noqa: E402

RESIZE = [dict(scale_factor=2), dict(scale_factor=0.5), dict(scale_factor=1.7),
          dict(scale_factor=(0.6, 2.5)), dict(size=(23, 9)), dict(size=11), dict(size=(5, 31))]


def exact_linear(x, **kw):
    """The real-number codes of a (bi/tri)linear resize: quantize(interp(dequantize(x))) with
    the same qparams is zp + round_half_even(interp(q - zp)), the weights summing to 1 (float64
    interpolation; its source weights are float64, so exact ties that float32 weights move
    land elsewhere: compare within 1 on >= 90%)."""
    zp = x.q_zero_point()
    v = F.interpolate(x.int_repr().to(torch.float64) - zp, **kw)
    lo, hi = QRANGE[x.dtype]
    return (torch.round(v).to(torch.int64) + zp).clamp(lo, hi)


def _f32_weights(n_in, n_out, align_corners, scale):
    """PyTorch's area_pixel_compute_scale / _source_index (linear, cubic=False) in float32."""
    f = torch.float32
    if align_corners:
        s = (torch.tensor(n_in - 1, dtype=f) / torch.tensor(n_out - 1, dtype=f) if n_out > 1
             else torch.tensor(0.0, dtype=f))
        src = s * torch.arange(n_out, dtype=f)
    else:
        s = (torch.tensor(1.0 / scale, dtype=f) if scale else
             torch.tensor(n_in, dtype=f) / torch.tensor(n_out, dtype=f))
        src = (s * (torch.arange(n_out, dtype=f) + 0.5) - 0.5).clamp(min=0)
    i0 = src.to(torch.int64).clamp(max=n_in - 1)
    i1 = i0 + (i0 < n_in - 1).to(torch.int64)
    l1 = src - i0.to(f)
    return i0, i1, 1 - l1, l1


def bilinear_f32(x, out_hw, scales, align_corners):
    """The numerics contract for bilinear in float32, step by step as PyTorch defines the weights:
    H = a0 * q[w0] + a1 * q[w1] per row, V = b0 * H[h0] + b1 * H[h1], y = zp + round(V - zp)
    (round half to even, clamp; with an even zp, round(V)). Raw codes as float32; each op
    rounded once, no fma."""
    q = x.int_repr().to(torch.float32)
    zp = x.q_zero_point()
    (H, W), (OH, OW) = x.shape[-2:], out_hw
    h0, h1, b0, b1 = _f32_weights(H, OH, align_corners, scales[0])
    w0, w1, a0, a1 = _f32_weights(W, OW, align_corners, scales[1])
    rows = a0 * q[..., w0] + a1 * q[..., w1]
    v = b0[:, None] * rows[..., h0, :] + b1[:, None] * rows[..., h1, :]
    lo, hi = QRANGE[x.dtype]
    # An even zp: round(v - zp) + zp == round(v) exactly; the kernels then round v itself.
    r = torch.round(v) if zp % 2 == 0 else torch.round(v - zp) + zp
    return r.to(torch.int64).clamp(lo, hi)


def _out_and_scales(x, kw):
    H, W = x.shape[-2:]
    if "size" in kw:
        s = kw["size"]
        s = (s, s) if isinstance(s, int) else s
        return tuple(s), (None, None)
    f = kw["scale_factor"]
    f = (f, f) if not isinstance(f, tuple) else f
    return (int(H * f[0]), int(W * f[1])), f


def torch_or_exact(ref, exact):
    """PyTorch's codes where they are a valid oracle (within 1 of the exact codes, >= 99%
    identical), else the exact codes: torch 2.13 rounds raw codes instead of codes relative to
    the zero point and sends ties the wrong way when zp is odd; torch 2.14 does not
    (docs/oracle.md)."""
    codes = ref.int_repr()
    return codes if torch_is_valid_oracle(codes, exact) else exact


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


@pytest.mark.parametrize("dtype,C", [(torch.quint8, 16), (torch.quint8, 48), (torch.qint8, 32),
                                     (torch.quint8, 5), (torch.qint32, 4), (torch.qint32, 3)])
@pytest.mark.parametrize("size", [(14, 18), (7, 18), (21, 18), (14, 9)])
@pytest.mark.parametrize("threads", [1, 2])
def test_nearest2d_channels_last_doubled_width(dtype, C, size, threads):
    # Channels-last nearest with the width doubled copies each input pixel to two output pixels,
    # and an output row whose next row has the same source row writes both in one pass: pixels
    # of a multiple of 16 bytes (16-byte moves) and not, heights doubled, kept, tripled and
    # halved-then-doubled, and 2 threads, whose row chunks may split a pair of rows.
    x = qtensor((3, C, 7, 9), dtype, channels_last=True)
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        got = torch.ops.qplugin.upsample_nearest2d(x, list(size))
    finally:
        torch.set_num_threads(old)
    want = torch.ops.aten.upsample_nearest2d(x, list(size))
    assert got.is_contiguous(memory_format=torch.channels_last)
    assert torch.equal(got.int_repr(), want.int_repr())


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
    # (1) The contract in float32 with PyTorch's float32 weights: bit for bit.
    out_hw, scales = _out_and_scales(x, kw)
    want = bilinear_f32(x, out_hw, scales, align_corners)
    assert torch.equal(y.int_repr().to(torch.int64), want)
    # (2) PyTorch where it is a valid oracle: torch 2.13 rounds raw codes, not codes relative to
    # the zero point, and is off on ties when zp is odd (qint8 here); 2.14 is valid throughout.
    assert_qclose(y.int_repr(), torch_or_exact(ref, want), min_identical=0.99)
    # (3) The real-number result (float64 weights: moves the ties float32 weights make): within
    # 1, >= 90% identical. (The float32 op on dequantized input is no reference here: the
    # product (q - zp) * scale in float32 breaks exact ties at random.)
    assert_qclose(y.int_repr(), exact_linear(x, mode="bilinear", align_corners=align_corners,
                                              **kw), min_identical=0.9)


def test_bilinear_qint32_within1():
    x = qtensor((1, 3, 6, 7), torch.qint32)
    y = qF.interpolate(x, scale_factor=2, mode="bilinear")
    ref = F.interpolate(x, scale_factor=2, mode="bilinear")
    exact = exact_linear(x, scale_factor=2, mode="bilinear")
    assert_qclose(y.int_repr(), exact, min_identical=0.95)
    assert_qclose(y.int_repr(), torch_or_exact(ref, exact), min_identical=0.95)


@pytest.mark.parametrize("align_corners", [False, True])
def test_linear_and_trilinear_extensions(isa, align_corners):
    x = qtensor((2, 5, 17))
    for kw in (dict(scale_factor=2), dict(scale_factor=0.6), dict(size=29)):
        y = qF.interpolate(x, mode="linear", align_corners=align_corners, **kw)
        assert_qclose(y.int_repr(), float_ref(x, mode="linear", align_corners=align_corners,
                                               **kw).int_repr(), min_identical=0.9)
    for cl in (False, True):
        x = qtensor((2, 4, 5, 6, 7), channels_last=cl)
        for kw in (dict(scale_factor=2), dict(size=(3, 9, 4))):
            y = qF.interpolate(x, mode="trilinear", align_corners=align_corners, **kw)
            assert_qclose(y.int_repr(), float_ref(x, mode="trilinear",
                                                   align_corners=align_corners, **kw).int_repr(),
                           min_identical=0.9)


def test_isas_byte_identical():
    x = qtensor((2, 37, 21, 19), torch.qint8, seed=9)
    variants = [x, x.contiguous(memory_format=torch.channels_last), x[:, :, ::2]]
    outs = {}
    for name in isas_to_compare():
        torch.ops.qplugin._set_cpu_isa(name)
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
    assert_qclose(y.int_repr(), F.interpolate(x, size=(9, 8), mode="bilinear",
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


# Scale factors whose weights are all multiples of 1/8 (align_corners=False): the kernels take
# exact int16 passes there (pool_dispatch.h lerp_h8 / lerp_v8), which must give the float32
# contract's bytes. Extreme codes (runs of the dtype's ends, so sums reach 8 * 255 and 64 * 255),
# zero points at both ends and odd ones (ties rounded relative to zp), channel counts around the
# vector widths in channels-last, and sizes given instead of factors (size = 2H gives the same
# weights).
DYADIC = [dict(scale_factor=2), dict(scale_factor=4), dict(scale_factor=(2, 4)),
          dict(scale_factor=(4, 2)), dict(size=(14, 44))]


def _extreme_codes(shape, dtype, zp, seed):
    g = torch.Generator().manual_seed(seed)
    lo, hi = QRANGE[dtype]
    codes = torch.randint(lo, hi + 1, shape, generator=g)
    pick = torch.rand(shape, generator=g)
    codes[pick < 0.25] = lo
    codes[pick > 0.75] = hi
    return torch._make_per_tensor_quantized_tensor(
        codes.to(torch.uint8 if dtype == torch.quint8 else torch.int8), 0.1, zp)


@pytest.mark.parametrize("kw", DYADIC)
@pytest.mark.parametrize("dtype,zp", [(torch.quint8, 0), (torch.quint8, 1), (torch.quint8, 128),
                                      (torch.quint8, 255), (torch.qint8, -128), (torch.qint8, -1),
                                      (torch.qint8, 0), (torch.qint8, 127)])
@pytest.mark.parametrize("C,cl", [(3, False), (1, True), (15, True), (33, True), (64, True)])
def test_dyadic_scales_give_the_float_contract_bytes(isa, kw, dtype, zp, C, cl):
    x = _extreme_codes((2, C, 7, 11), dtype, zp, seed=C + zp)
    if cl:
        x = x.contiguous(memory_format=torch.channels_last)
    y = qF.interpolate(x, mode="bilinear", align_corners=False, **kw)
    out_hw, scales = _out_and_scales(x, kw)
    assert torch.equal(y.int_repr().to(torch.int64), bilinear_f32(x, out_hw, scales, False))
    if zp % 2 == 0:  # torch 2.13 rounds raw codes, so with an odd zp its ties go the other way
        ref = F.interpolate(x, mode="bilinear", align_corners=False, **kw)
        assert torch.equal(y.int_repr(), ref.int_repr())


@pytest.mark.parametrize("zp", [0, 3, 255])
def test_dyadic_linear1d_and_threads(isa, zp):
    """upsample_linear1d x2 / x4 (the height table is the identity: dyadic too), and two threads
    splitting the output rows."""
    x = _extreme_codes((3, 5, 50), torch.quint8, zp, seed=zp)
    for f in (2, 4):
        y = qF.interpolate(x, scale_factor=f, mode="linear")
        want = bilinear_f32(x.unsqueeze(2), (1, 50 * f), (1.0, f), False).squeeze(2)
        assert torch.equal(y.int_repr().to(torch.int64), want)
    x2 = _extreme_codes((2, 40, 16, 16), torch.quint8, zp, seed=7).contiguous(
        memory_format=torch.channels_last)
    y1 = qF.interpolate(x2, scale_factor=2, mode="bilinear")
    old = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        y2 = qF.interpolate(x2, scale_factor=2, mode="bilinear")
    finally:
        torch.set_num_threads(old)
    assert torch.equal(y1.int_repr(), y2.int_repr())
    assert torch.equal(y1.int_repr().to(torch.int64), bilinear_f32(x2, (32, 32), (2, 2), False))
