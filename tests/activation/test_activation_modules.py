"""Tests of the activation modules of qplugin/nn/modules/activation.py (LeakyReLU, Sigmoid,
Softmax, Dropout ≙ torch.ao.nn.quantized; SiLU, GELU, Tanh, Mish, Softplus: extensions):
forward = the op, parity with PyTorch's modules, from_float through torch.ao.quantization.prepare
and qplugin.quantization.convert, state_dict (and PyTorch's layouts), pinned reprs, TorchScript
save/load, deepcopy and torch.save.
"""
import copy
import io
from collections import OrderedDict

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from _reference import assert_qclose  # noqa: E402
import torch.ao.nn.quantized as nnq  # noqa: E402
import torch.ao.quantization as tq  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

import qplugin  # noqa: E402,F401
import qplugin.quantization as qquant  # noqa: E402
from qplugin.nn.modules import activation as qa  # noqa: E402

torch.backends.quantized.engine = "x86"

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]

# The float -> qplugin module mapping this issue adds to qplugin.quantization, and the modules
# torch.ao.quantization.prepare must observe (its default list lacks the extensions).
NEW_MAPPING = {nn.LeakyReLU: qa.LeakyReLU, nn.Sigmoid: qa.Sigmoid, nn.Softmax: qa.Softmax,
               nn.Dropout: qa.Dropout, nn.SiLU: qa.SiLU, nn.GELU: qa.GELU, nn.Tanh: qa.Tanh,
               nn.Mish: qa.Mish, nn.Softplus: qa.Softplus}
MAPPING = dict(qquant.get_default_static_quant_module_mappings())
MAPPING.update(NEW_MAPPING)
ALLOW = tq.get_default_qconfig_propagation_list() | set(NEW_MAPPING)


def codes(q):
    return q.int_repr().numpy().astype(np.int64)


def rand_q(shape, scale=0.05, zp=120, seed=0, dtype=torch.quint8):
    g = torch.Generator().manual_seed(seed)
    return torch.quantize_per_tensor(torch.randn(shape, generator=g) * 3, scale, zp, dtype)


def modules():
    return {
        "LeakyReLU": (qa.LeakyReLU(0.03, 7, 0.2),
                      lambda x: torch.ops.qplugin.leaky_relu(x, 0.2, False, 0.03, 7)),
        "Sigmoid": (qa.Sigmoid(1 / 256, 0), lambda x: torch.ops.qplugin.sigmoid(x, 1 / 256, 0)),
        "Softmax": (qa.Softmax(1, 1 / 256, 0),
                    lambda x: torch.ops.qplugin.softmax(x, 1, 1 / 256, 0)),
        "Dropout": (qa.Dropout(0.3), lambda x: x),
        "SiLU": (qa.SiLU(0.02, 9), lambda x: torch.ops.qplugin.silu(x, 0.02, 9)),
        "GELU": (qa.GELU(0.02, 9, "tanh"), lambda x: torch.ops.qplugin.gelu(x, 0.02, 9, "tanh")),
        "Tanh": (qa.Tanh(2 / 256, 128), lambda x: torch.ops.qplugin.tanh(x, 2 / 256, 128)),
        "Mish": (qa.Mish(0.02, 9), lambda x: torch.ops.qplugin.mish(x, 0.02, 9)),
        "Softplus": (qa.Softplus(0.02, 9, 2.0, 5.0),
                     lambda x: torch.ops.qplugin.softplus(x, 0.02, 9, 2.0, 5.0)),
    }


REPRS = {
    "LeakyReLU": "QuantizedLeakyReLU(scale=0.03, zero_point=7, negative_slope=0.2)",
    "Sigmoid": "Sigmoid(scale=0.00390625, zero_point=0)",
    "Softmax": "QuantizedSoftmax(dim=1, scale=0.00390625, zero_point=0)",
    "Dropout": "QuantizedDropout(p=0.3, inplace=False)",
    "SiLU": "QuantizedSiLU(scale=0.02, zero_point=9)",
    "GELU": "QuantizedGELU(scale=0.02, zero_point=9, approximate='tanh')",
    "Tanh": "QuantizedTanh(scale=0.0078125, zero_point=128)",
    "Mish": "QuantizedMish(scale=0.02, zero_point=9)",
    "Softplus": "QuantizedSoftplus(scale=0.02, zero_point=9, beta=2.0, threshold=5.0)",
}


@pytest.mark.parametrize("name", list(REPRS))
def test_forward_repr_state_dict_script(name):
    m, op = modules()[name]
    x = rand_q((2, 8, 5, 5), seed=1).contiguous(memory_format=torch.channels_last)
    y = m(x)
    assert torch.equal(y.int_repr(), op(x).int_repr()) and y.q_scale() == op(x).q_scale()
    assert repr(m) == REPRS[name]
    # state_dict round trip into a module built with other qparams
    other = {"Dropout": qa.Dropout(0.3)}.get(name)
    if other is None:
        other = type(m)(*([1, 0.5, 3] if name == "Softmax" else [0.5, 3]))
        other.load_state_dict(m.state_dict())
        assert other.scale.item() == m.scale.item()
        assert other.zero_point.item() == m.zero_point.item()
        assert set(m.state_dict()) == {"scale", "zero_point"}
        assert m.state_dict()["scale"].dtype == torch.float64
    # TorchScript save/load, deepcopy, torch.save
    s = torch.jit.script(m)
    buf = io.BytesIO()
    torch.jit.save(s, buf)
    buf.seek(0)
    loaded = torch.jit.load(buf)
    assert torch.equal(loaded(x).int_repr(), y.int_repr()) and loaded(x).q_scale() == y.q_scale()
    assert torch.equal(copy.deepcopy(m)(x).int_repr(), y.int_repr())
    buf = io.BytesIO()
    torch.save(m, buf)
    buf.seek(0)
    assert torch.equal(torch.load(buf, weights_only=False)(x).int_repr(), y.int_repr())


def test_parity_with_pytorch_modules():
    x = rand_q((2, 8, 5, 5), seed=2)
    # nnq.LeakyReLU keeps its scale in a float32 buffer (0.03 -> 0.029999999329...).
    assert_qclose(qa.LeakyReLU(float(torch.tensor(0.03)), 7, 0.2)(x),
                  nnq.LeakyReLU(0.03, 7, 0.2)(x), min_identical=0.95)
    assert_qclose(qa.Sigmoid(1 / 256, 0)(x), nnq.Sigmoid(1 / 256, 0)(x))
    assert_qclose(qa.Softmax(1, 1 / 256, 0)(x), nnq.Softmax(1, 1 / 256, 0)(x))
    assert qa.Dropout(0.5)(x) is x and nnq.Dropout(0.5)(x) is x
    # Softmax without dim: PyTorch's legacy choice (dim 1 for 4-D), with its warning.
    with pytest.warns(UserWarning):
        assert_qclose(qa.Softmax(None, 1 / 256, 0)(x), nnq.Softmax(None, 1 / 256, 0)(x))


def test_pytorch_state_dicts_load():
    m = qa.LeakyReLU(0.5, 3)
    m.load_state_dict(nnq.LeakyReLU(0.03, 7).state_dict())  # float32 scale buffer
    assert abs(m.scale.item() - 0.03) < 1e-9 and m.zero_point.item() == 7
    s = qa.Sigmoid(0.01, 4)
    s.load_state_dict(nnq.Sigmoid(1 / 256, 0).state_dict())  # empty: qparams are attributes
    assert s.scale.item() == 0.01 and s.output_scale == 0.01 and s.output_zero_point == 4


def _net():
    """QuantStub -> every activation of the family -> DeQuantStub, as one Sequential (named
    children, so the converted modules are reachable by name)."""
    return nn.Sequential(OrderedDict([
        ("quant", tq.QuantStub()), ("lrelu", nn.LeakyReLU(0.1)), ("silu", nn.SiLU()),
        ("gelu", nn.GELU(approximate="tanh")), ("mish", nn.Mish()),
        ("softplus", nn.Softplus(beta=2.0, threshold=4.0)), ("tanh", nn.Tanh()),
        ("sigmoid", nn.Sigmoid()), ("drop", nn.Dropout(0.2)), ("softmax", nn.Softmax(dim=1)),
        ("dequant", tq.DeQuantStub())]))


def test_from_float_through_prepare_and_convert():
    torch.manual_seed(0)
    net = _net().eval()
    net.qconfig = tq.default_qconfig
    p = tq.prepare(net, allow_list=ALLOW)
    xs = [torch.randn(2, 6, 5, 5) * 2 for _ in range(3)]
    for x in xs:
        p(x)
    q = qquant.convert(p, mapping=MAPPING)
    for name, cls in [("lrelu", qa.LeakyReLU), ("silu", qa.SiLU), ("gelu", qa.GELU),
                      ("mish", qa.Mish), ("softplus", qa.Softplus), ("tanh", qa.Tanh),
                      ("sigmoid", qa.Sigmoid), ("drop", qa.Dropout), ("softmax", qa.Softmax)]:
        mod = getattr(q, name)
        assert type(mod) is cls, (name, type(mod))
        if name != "drop":
            s, z = getattr(p, name).activation_post_process.calculate_qparams()
            assert mod.scale.item() == float(s) and mod.zero_point.item() == int(z)
    assert q.lrelu.negative_slope == 0.1 and q.gelu.approximate == "tanh"
    assert q.softplus.beta == 2.0 and q.softplus.threshold == 4.0 and q.softmax.dim == 1
    assert q.drop.p == 0.2
    # The quantized model tracks the float one; each layer is the exact requantized float op.
    x = xs[0]
    assert (q(x) - net(x)).abs().max().item() < 0.05
    y = q.quant(x)
    for name, f in [("lrelu", lambda v: F.leaky_relu(v, 0.1)), ("silu", F.silu),
                    ("gelu", lambda v: F.gelu(v, approximate="tanh")), ("mish", F.mish),
                    ("softplus", lambda v: F.softplus(v, 2.0, 4.0)), ("tanh", torch.tanh),
                    ("sigmoid", torch.sigmoid), ("softmax", lambda v: torch.softmax(v, 1))]:
        mod = getattr(q, name)
        out = mod(y)
        v = f((y.int_repr().double() - y.q_zero_point()) * y.q_scale())
        ref = (torch.round(v / mod.scale.item()) + mod.zero_point.item()).clamp(0, 255)
        assert torch.equal(out.int_repr().long(), ref.long()), name
        y = out
    s = torch.jit.script(q)
    assert torch.equal(s(x), q(x))


def test_constructor_and_from_float_errors():
    with pytest.raises(ValueError, match=r"expected a finite, positive scale"):
        qa.SiLU(0.0, 3)
    with pytest.raises(ValueError, match=r"expected zero_point to be an integer"):
        qa.Mish(0.1, 2.5)
    with pytest.raises(ValueError, match=r"expected approximate 'none' or 'tanh'"):
        qa.GELU(0.1, 0, "erf")
    with pytest.raises(ValueError, match=r"expected a nonzero beta"):
        qa.Softplus(0.1, 0, beta=0.0)
    with pytest.raises(TypeError, match=r"expected an observed torch.nn.modules.activation.SiLU"):
        qa.SiLU.from_float(nn.ReLU())
    with pytest.raises(ValueError, match=r"output observer"):
        qa.Tanh.from_float(nn.Tanh())
    m = qa.SiLU(0.1, 3)
    m.scale = 0.25
    assert m.scale.item() == 0.25 and m.scale.dtype == torch.float64
