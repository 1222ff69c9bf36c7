# Drop-in details that PyTorch's own module tests and users' code rely on: _get_name() / repr
# names equal torch.ao's (type(m).__module__ tells qplugin's apart), integral float zero points
# accepted by every module constructor that takes one (non-integral ones refused), and
# GroupNorm's num_channels as metadata (weight/bias checked against the input at forward time).
# Changes with: qplugin/nn/modules/*.py, qplugin/nn/intrinsic/modules/*.py.
import inspect

import pytest
import torch

import torch.ao.nn.intrinsic.quantized as nniq  # noqa: E402
import torch.ao.nn.quantized as nnq  # noqa: E402

import qplugin  # noqa: E402,F401
from qplugin import nn as qnn  # noqa: E402
from qplugin.nn import intrinsic as qnni  # noqa: E402
from qplugin._tables import activation as activation_table  # noqa: E402

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]

# qplugin extensions with no torch.ao.nn.quantized module: named "Quantized<Name>" like the rest.
# Read from the op table (a new extension row needs no edit here).
_EXTENSIONS = {r.module for r in activation_table.ROWS if r.extension and r.module}
# Modules PyTorch quantizes with the float module itself (torch.nn.X works on quantized input;
# its name is the class name): qplugin's are named like them.
_FLOAT_NAMED = {"AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d",
                "AdaptiveMaxPool2d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "MaxPool1d",
                "MaxPool3d", "Upsample"}


def _name_of(cls):
    # _get_name() reads the class only (never instance state), so an uninitialised instance does.
    return cls._get_name(object.__new__(cls))


def _module_classes(mod):
    return {n: getattr(mod, n) for n in mod.__all__
            if inspect.isclass(getattr(mod, n)) and issubclass(getattr(mod, n), torch.nn.Module)}


@pytest.mark.parametrize("ours,theirs", [(qnn, nnq), (qnni, nniq)])
def test_get_name_equals_torch_ao(ours, theirs):
    checked = 0
    for name, cls in _module_classes(ours).items():
        got = _name_of(cls)
        assert type(object.__new__(cls)).__module__.startswith("qplugin.")
        if hasattr(theirs, name):
            assert got == _name_of(getattr(theirs, name)), name
            checked += 1
        elif name in _EXTENSIONS:
            assert got == "Quantized" + name, name
        elif name in _FLOAT_NAMED:
            assert got == _name_of(getattr(torch.nn, name)) == name, name
        else:
            pytest.fail(f"{name}: no torch.ao counterpart and not a listed extension")
    assert checked >= (28 if ours is qnn else 6)
    assert "QPlugin" not in repr(qnn.Linear(3, 4))


def test_pytorch_style_checks_pass():
    # The checks of PyTorch's test_quantized_module.py, verbatim in spirit.
    qlinear = qnn.Linear(5, 3)
    assert "QuantizedLinear" in str(qlinear)
    qconv = qnn.Conv2d(4, 6, 3)
    assert qconv._get_name() == "QuantizedConv2d" == nnq.Conv2d(4, 6, 3)._get_name()
    assert qnni.ConvReLU2d(4, 6, 3)._get_name() == "QuantizedConvReLU2d"
    assert qnni.LinearReLU(3, 2)._get_name() == "QuantizedLinearReLU"
    assert qnn.ConvTranspose2d(4, 4, 2)._get_name() == "QuantizedConvTranspose2d"
    # Same repr as PyTorch's where the printed configuration is the same.
    assert repr(qnn.Linear(5, 3)) == repr(nnq.Linear(5, 3))
    assert repr(qnn.Conv2d(4, 6, 3, stride=2)) == repr(nnq.Conv2d(4, 6, 3, stride=2))
    assert repr(qnn.MaxPool2d(3, 2)) == repr(nnq.MaxPool2d(3, 2))


# --- integral float zero points ------------------------------------------------------------------

def _x(zp=3, shape=(2, 4, 5, 5)):
    g = torch.Generator().manual_seed(0)
    return torch.quantize_per_tensor(torch.randn(shape, generator=g), 0.05, zp, torch.quint8)


# name -> (qplugin factory(zero_point), torch factory(zero_point) or None, input)
def _w4():
    # Parameters: torch.ao's norm modules assign them to registered parameters (plain tensors
    # raise there); qplugin's accept either.
    return torch.nn.Parameter(torch.ones(4) * 1.5), torch.nn.Parameter(torch.zeros(4) + 0.25)


def _w5():
    return torch.nn.Parameter(torch.ones(5)), torch.nn.Parameter(torch.zeros(5))


CTORS = {
    "Hardswish": (lambda z: qnn.Hardswish(0.04, z), lambda z: nnq.Hardswish(0.04, z), _x),
    # torch.ao's ELU, Sigmoid and Softmax keep zero_point as a plain attribute and pass it to an
    # int argument: 7.0 fails there at forward time; qplugin accepts it (a harmless extension).
    "ELU": (lambda z: qnn.ELU(0.04, z, 0.5), None, _x),
    "LeakyReLU": (lambda z: qnn.LeakyReLU(0.04, z, 0.1), lambda z: nnq.LeakyReLU(0.04, z, 0.1), _x),
    "Sigmoid": (lambda z: qnn.Sigmoid(1 / 256, z), None, _x),
    "Softmax": (lambda z: qnn.Softmax(1, 1 / 256, z), None, _x),
    "SiLU": (lambda z: qnn.SiLU(0.04, z), None, _x),
    "GELU": (lambda z: qnn.GELU(0.04, z), None, _x),
    "Tanh": (lambda z: qnn.Tanh(1 / 128, z), None, _x),
    "Mish": (lambda z: qnn.Mish(0.04, z), None, _x),
    "Softplus": (lambda z: qnn.Softplus(0.04, z), None, _x),
    "LayerNorm": (lambda z: qnn.LayerNorm([5], *_w5(), 0.05, z),
                  lambda z: nnq.LayerNorm([5], *_w5(), 0.05, z), _x),
    "GroupNorm": (lambda z: qnn.GroupNorm(2, 4, *_w4(), 0.05, z),
                  lambda z: nnq.GroupNorm(2, 4, *_w4(), 0.05, z), _x),
    "InstanceNorm2d": (lambda z: qnn.InstanceNorm2d(4, *_w4(), 0.05, z, affine=True),
                       lambda z: nnq.InstanceNorm2d(4, *_w4(), 0.05, z, affine=True), _x),
    "Quantize": (lambda z: qnn.Quantize(0.05, z, torch.quint8),
                 lambda z: nnq.Quantize(0.05, z, torch.quint8),
                 lambda: torch.randn(2, 4, 5, 5)),
}


@pytest.mark.parametrize("name", sorted(CTORS))
def test_integral_float_zero_point_accepted(name):
    ours, theirs, make_x = CTORS[name]
    x = make_x()
    want = ours(7)(x)
    for z in (7.0, torch.tensor(7.0), torch.tensor([7.0], dtype=torch.float64)):
        m = ours(z)
        assert int(m.zero_point) == 7 and m.zero_point.dtype == torch.int64, name
        y = m(x)
        assert torch.equal(y.int_repr(), want.int_repr()) and y.q_zero_point() == 7, name
    if theirs is not None:  # PyTorch accepts the same and computes the same codes
        t = theirs(7.0)(x)
        assert t.q_zero_point() == 7
        assert (t.int_repr().int() - want.int_repr().int()).abs().max() <= 1, name


@pytest.mark.parametrize("name", sorted(CTORS))
def test_non_integral_zero_point_refused(name):
    ours = CTORS[name][0]
    for z in (7.5, float("nan"), float("inf"), torch.tensor(0.5)):
        with pytest.raises(ValueError, match=r"expected zero_point to be an integer \(an int or an"
                                             r" integral float\), got"):
            ours(z)
    with pytest.raises(TypeError, match=r"expected zero_point to be an int"):
        ours("7")


def test_from_reference_zero_point():
    import torch.ao.nn.quantized.reference as nnqr
    qparams = {"qscheme": torch.per_tensor_affine, "dtype": torch.qint8, "scale": 0.1,
               "zero_point": 0}
    for name, fl in (("Linear", torch.nn.Linear(4, 3)), ("Conv2d", torch.nn.Conv2d(2, 3, 1))):
        ref = getattr(nnqr, name).from_float(fl, qparams)
        cls = getattr(qnn, name)
        assert cls.from_reference(ref, 0.2, 5.0).zero_point == 5
        with pytest.raises(ValueError, match=rf"qplugin.nn.{name}.from_reference: expected "
                                             r"output_zero_point to be an integer"):
            cls.from_reference(ref, 0.2, 5.5)


# --- GroupNorm: num_channels is metadata ---------------------------------------------------------

def test_group_norm_num_channels_is_metadata_like_torch():
    w, b = torch.nn.Parameter(torch.rand(4) + 0.5), torch.nn.Parameter(torch.randn(4))
    x = _x(3, (2, 4, 3, 3))
    ours = qnn.GroupNorm(2, 2, w, b, 0.05, 10)
    theirs = nnq.GroupNorm(2, 2, w, b, 0.05, 10)
    y, t = ours(x), theirs(x)
    assert y.shape == t.shape == x.shape
    assert (y.int_repr().int() - t.int_repr().int()).abs().max() <= 1
    # The same as the module built with the input's channel count.
    assert torch.equal(y.int_repr(), qnn.GroupNorm(2, 4, w, b, 0.05, 10)(x).int_repr())
    assert ours.num_channels == 2 and "QuantizedGroupNorm(2, 2" in repr(ours)
    # A weight that does not fit the input is refused at forward time, clearly.
    bad = qnn.GroupNorm(2, 4, torch.ones(6), torch.zeros(6), 0.05, 10)
    with pytest.raises(RuntimeError, match=r"qplugin::group_norm: expected weight .*6"):
        bad(x)
    # And a state dict round trip keeps the metadata and the weights.
    m = qnn.GroupNorm(2, 2, torch.ones(4), torch.zeros(4), 1.0, 0)
    m.load_state_dict(ours.state_dict())
    assert torch.equal(m(x).int_repr(), y.int_repr())
    s = torch.jit.script(ours)
    assert torch.equal(s(x).int_repr(), y.int_repr())
