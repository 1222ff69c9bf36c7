"""qplugin.nn pooling/resampling modules: parity with the float modules on quantized input (what
torch.ao's convert leaves), pinned reprs, from_float, TorchScript save/load, convert.
Changes with: qplugin/nn/modules/pooling.py, qplugin/quantization/__init__.py.
"""
import copy
import io

import pytest  # noqa: E402
import torch  # noqa: E402
from expecttest import TestCase  # noqa: E402
from torch import nn  # noqa: E402

from _pool_testutil import one_thread, qtensor  # noqa: E402,F401
from _reference import script_round_trip  # noqa: E402
import qplugin  # noqa: E402
from qplugin import nn as qnn  # noqa: E402

# (float module, input shape, channels_last); the float module on the quantized input is
# torch.ao's converted behaviour (aten's QuantizedCPU kernels).
CASES = [
    (nn.MaxPool1d(3, 2, 1), (2, 5, 17), False),
    (nn.MaxPool2d(3, 2, 1), (2, 5, 13, 11), False),
    (nn.MaxPool2d((2, 3), ceil_mode=True, dilation=(1, 2)), (1, 6, 12, 13), True),
    (nn.AvgPool2d(3, 2, 1), (2, 7, 13, 11), True),
    (nn.AvgPool2d(2, count_include_pad=False, divisor_override=3), (1, 3, 8, 9), False),
    (nn.AvgPool3d(2, 1), (1, 3, 4, 5, 6), False),
    (nn.AdaptiveAvgPool2d((3, None)), (2, 4, 10, 7), False),
    (nn.AdaptiveAvgPool2d(1), (2, 70, 7, 7), True),
    (nn.AdaptiveAvgPool3d((2, 3, 1)), (1, 3, 5, 7, 4), False),
    (nn.Upsample(scale_factor=2), (1, 4, 5, 6), True),
    (nn.Upsample(size=(7, 9), mode="bilinear"), (1, 4, 5, 6), False),
    (nn.Upsample(scale_factor=1.7, mode="bilinear", align_corners=True), (1, 4, 5, 6), True),
    (nn.Upsample(scale_factor=2, mode="nearest"), (1, 2, 3, 4, 5), False),
]
# Extensions (no aten quantized kernel): compared with the float module on dequantized input.
EXT_CASES = [
    (nn.MaxPool3d(2, 2, 1), (1, 3, 5, 6, 7)),
    (nn.AvgPool1d(3, 2, 1), (2, 3, 11)),
    (nn.AdaptiveAvgPool1d(4), (2, 3, 11)),
    (nn.AdaptiveMaxPool2d((3, 2)), (2, 3, 7, 8)),
    (nn.Upsample(scale_factor=2, mode="linear"), (2, 3, 7)),
]


def _q(shape, cl):
    x = qtensor(shape)
    if cl:
        x = x.contiguous(memory_format=torch.channels_last if len(shape) == 4
                         else torch.channels_last_3d)
    return x


def _swap(fm):
    return getattr(qnn, type(fm).__name__).from_float(fm)


@pytest.mark.parametrize("fm, shape, cl", CASES, ids=lambda v: repr(v) if isinstance(v, nn.Module) else None)
def test_module_matches_float_module_on_quantized_input(fm, shape, cl):
    x = _q(shape, cl)
    qm = _swap(fm)
    y, ref = qm(x), fm(x)
    assert y.shape == ref.shape and y.stride() == ref.stride()
    assert (y.q_scale(), y.q_zero_point(), y.dtype) == (ref.q_scale(), ref.q_zero_point(), ref.dtype)
    d = (y.int_repr().int() - ref.int_repr().int()).abs()
    assert d.max() <= 1 and (d == 0).float().mean() >= 0.99
    if isinstance(fm, (nn.MaxPool1d, nn.MaxPool2d)) or fm.__class__ is nn.Upsample and fm.mode == "nearest":
        assert torch.equal(y.int_repr(), ref.int_repr())
    # float input runs the float op (pools in float regions of a converted model keep working)
    xf = x.dequantize()
    assert torch.equal(qm(xf), fm(xf))


@pytest.mark.parametrize("fm, shape", EXT_CASES, ids=lambda v: repr(v) if isinstance(v, nn.Module) else None)
def test_extension_modules_match_float_reference(fm, shape):
    x = _q(shape, False)
    y = _swap(fm)(x)
    ref = torch.quantize_per_tensor(fm(x.dequantize()), x.q_scale(), x.q_zero_point(), x.dtype)
    assert ((y.int_repr().int() - ref.int_repr().int()).abs() <= 1).all()


def test_module_torchscript_save_load_and_copies():
    for fm, shape, cl in CASES + [(m, s, False) for m, s in EXT_CASES]:
        qm = _swap(fm)
        x = _q(shape, cl)
        ref = qm(x)
        sm, loaded = script_round_trip(qm)
        for m in (sm, loaded, copy.deepcopy(qm), copy.copy(qm)):
            assert torch.equal(m(x).int_repr(), ref.int_repr()), repr(qm)
        assert qm.state_dict() == {} and loaded.state_dict() == {}
        buf = io.BytesIO()
        torch.save(qm, buf)
        buf.seek(0)
        assert torch.equal(torch.load(buf, weights_only=False)(x).int_repr(), ref.int_repr())


def test_from_float_copies_config_and_checks_class():
    fm = nn.MaxPool2d((3, 2), stride=1, padding=(1, 0), dilation=2, ceil_mode=True)
    fm.qconfig = torch.ao.quantization.default_qconfig
    qm = qnn.MaxPool2d.from_float(fm, use_precomputed_fake_quant=True)
    for k in ("kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices"):
        assert getattr(qm, k) == getattr(fm, k)
    qa = qnn.AvgPool2d.from_float(nn.AvgPool2d(3, None, 1, True, False, 5))
    assert (qa.stride, qa.ceil_mode, qa.count_include_pad, qa.divisor_override) == (3, True, False, 5)
    with pytest.raises(TypeError, match="expected an observed torch.nn.modules.pooling.MaxPool2d"):
        qnn.MaxPool2d.from_float(nn.AvgPool2d(2))
    with pytest.raises(NotImplementedError, match="return_indices"):
        qnn.MaxPool2d.from_float(nn.MaxPool2d(2, return_indices=True))
    with pytest.raises(NotImplementedError, match="mode"):
        qnn.Upsample(scale_factor=2, mode="bicubic")(qtensor((1, 2, 3, 3)))


class _Model(nn.Module):
    def __init__(self, averaging):
        super().__init__()
        self.quant = torch.ao.quantization.QuantStub()
        self.pool = nn.MaxPool2d(3, 2, 1)
        self.avg = nn.AvgPool2d(2) if averaging else nn.MaxPool2d(1)
        self.up = nn.Upsample(scale_factor=2, mode="bilinear" if averaging else "nearest")
        self.gap = nn.AdaptiveAvgPool2d(1) if averaging else nn.Identity()
        self.dequant = torch.ao.quantization.DeQuantStub()
        self.tail = nn.MaxPool2d(1)  # float region: after the DeQuantStub

    def forward(self, x):
        x = self.gap(self.up(self.avg(self.pool(self.quant(x)))))
        return self.tail(self.dequant(x))


@pytest.mark.parametrize("averaging", [False, True])
def test_convert_swaps_pools_and_matches_torch_ao(averaging):
    # Pools get a qconfig from prepare but no observer (they keep the input's qparams); convert
    # swaps them on the qconfig alone. Max pool / nearest chains equal torch.ao's bit for bit;
    # averaging and bilinear are within one quantization step (qplugin rounds the exact value).
    torch.backends.quantized.engine = "x86"
    m = _Model(averaging).eval()
    m.qconfig = torch.ao.quantization.get_default_qconfig("x86")
    prepared = torch.ao.quantization.prepare(m)
    assert hasattr(prepared.pool, "qconfig")
    assert not hasattr(prepared.pool, "activation_post_process")
    x = torch.randn(2, 8, 20, 18)
    prepared(x)
    ao = torch.ao.quantization.convert(copy.deepcopy(prepared))
    qp = qplugin.quantization.convert(prepared)
    assert type(ao.pool) is nn.MaxPool2d  # torch.ao leaves the float module
    names = (("pool", qnn.MaxPool2d), ("avg", qnn.AvgPool2d if averaging else qnn.MaxPool2d),
             ("up", qnn.Upsample), ("tail", qnn.MaxPool2d))
    for name, cls in names + ((("gap", qnn.AdaptiveAvgPool2d),) if averaging else ()):
        assert type(getattr(qp, name)) is cls
        assert not hasattr(getattr(qp, name), "qconfig")
    sm = torch.jit.script(qp)
    step = prepared.quant.activation_post_process.calculate_qparams()[0].item()
    for t in (x, torch.randn(1, 8, 17, 16)):
        ref = ao(t)
        for y in (qp(t), sm(t)):
            if averaging:
                assert (y - ref).abs().max() <= step * 1.001
            else:
                assert torch.equal(y, ref)


class TestPoolModuleRepr(TestCase):
    def test_reprs(self):
        self.assertExpectedInline(repr(qnn.MaxPool2d(3, 2, 1)), """MaxPool2d(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=False)""")
        self.assertExpectedInline(repr(qnn.MaxPool1d(3)), """MaxPool1d(kernel_size=3, stride=3, padding=0, dilation=1, ceil_mode=False)""")
        self.assertExpectedInline(repr(qnn.MaxPool3d((1, 2, 3), ceil_mode=True)), """MaxPool3d(kernel_size=(1, 2, 3), stride=(1, 2, 3), padding=0, dilation=1, ceil_mode=True)""")
        self.assertExpectedInline(repr(qnn.AvgPool1d(3)), """AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))""")
        self.assertExpectedInline(repr(qnn.AvgPool2d(3, 1, 1, divisor_override=2)), """AvgPool2d(kernel_size=3, stride=1, padding=1)""")
        self.assertExpectedInline(repr(qnn.AvgPool3d(2)), """AvgPool3d(kernel_size=2, stride=2, padding=0)""")
        self.assertExpectedInline(repr(qnn.AdaptiveAvgPool1d(4)), """AdaptiveAvgPool1d(output_size=4)""")
        self.assertExpectedInline(repr(qnn.AdaptiveAvgPool2d((None, 3))), """AdaptiveAvgPool2d(output_size=(None, 3))""")
        self.assertExpectedInline(repr(qnn.AdaptiveAvgPool3d(1)), """AdaptiveAvgPool3d(output_size=1)""")
        self.assertExpectedInline(repr(qnn.AdaptiveMaxPool2d(2)), """AdaptiveMaxPool2d(output_size=2)""")
        self.assertExpectedInline(repr(qnn.Upsample(scale_factor=2, mode="bilinear")), """Upsample(scale_factor=2.0, mode='bilinear')""")
        self.assertExpectedInline(repr(qnn.Upsample(size=(3, 4))), """Upsample(size=(3, 4), mode='nearest')""")

    def test_reprs_mirror_float_modules(self):
        for fm, _, _ in CASES:
            self.assertEqual(repr(_swap(fm)), repr(fm))
        for fm, _ in EXT_CASES:
            self.assertEqual(repr(_swap(fm)), repr(fm))
