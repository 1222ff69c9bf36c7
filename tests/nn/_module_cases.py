"""Shared cases of the module contract tests (tests/nn/test_module_contract.py) and the family
module tests (tests/activation/test_activation_foundation.py, tests/batch_norm/
test_batch_norm_modules.py): quantized inputs with uniform codes, a builder per module giving the
qplugin module, torch.ao's twin with the same state and an input. tests/conftest.py puts this
folder on sys.path.
"""
import pytest
import torch
import torch.ao.nn.intrinsic.quantized as nniq
import torch.ao.nn.quantized as nnq
import torch.ao.quantization as tq
from torch import nn

from qplugin import nn as qnn
from qplugin.nn import intrinsic as qnni
from _reference import assert_qclose


@pytest.fixture(autouse=True, scope="module")
def x86_engine():
    """The x86 engine for torch.ao's modules, restored after the module (import it as an autouse
    fixture)."""
    old = torch.backends.quantized.engine
    torch.backends.quantized.engine = "x86"
    yield
    torch.backends.quantized.engine = old


def assert_same_output(a, b):
    if a.is_quantized:
        assert_qclose(a, b, exact=True)
        assert a.stride() == b.stride()
    else:
        assert a.dtype == b.dtype and torch.equal(a, b)


def qinput(shape, dtype=torch.quint8, scale=0.0437, zero_point=None, seed=0):
    """A quantized tensor whose codes are uniform over the dtype's range ([-3000, 3000] for
    qint32): every code appears about equally often, so one input code on a rounding boundary
    (where PyTorch's float32 math and qplugin's double math may differ by 1) weighs 1/256 of the
    elements -- not the share of a crowded code of a gaussian input.

    Test scales are "generic" (0.0437, 0.0271, ...): with round decimal pairs such as 0.05 in and
    0.03 out, hardswish hits many exact .5 ties in real arithmetic, which float32 (PyTorch) and
    double (qplugin) break differently -- about 1.3% of the codes then differ by 1."""
    g = torch.Generator().manual_seed(seed)
    if zero_point is None:
        zero_point = {torch.quint8: 120, torch.qint8: -5, torch.qint32: 17}[dtype]
    lo, hi, int_dtype = {torch.quint8: (0, 255, torch.uint8), torch.qint8: (-128, 127, torch.int8),
                         torch.qint32: (-3000, 3000, torch.int32)}[dtype]
    codes = torch.randint(lo, hi + 1, shape, generator=g).to(int_dtype)
    return torch._make_per_tensor_quantized_tensor(codes, scale, zero_point)


def with_codes_of(x, seed=0):
    """qinput with the shape, dtype and qparams of the quantized tensor x."""
    return qinput(tuple(x.shape), x.dtype, x.q_scale(), x.q_zero_point(), seed)


def _randomize_bn(m, seed):
    g = torch.Generator().manual_seed(seed)
    c = m.num_features
    with torch.no_grad():
        m.weight.copy_(torch.rand(c, generator=g) + 0.5)
        m.bias.copy_(torch.randn(c, generator=g))
        m.running_mean.copy_(torch.randn(c, generator=g))
        m.running_var.copy_(torch.rand(c, generator=g) + 0.5)
    return m


def _out_zp(dtype):
    return {torch.quint8: 110, torch.qint8: 4, torch.qint32: -40}[dtype]


# Every module: (qplugin class, torch.ao class, build(dtype) -> (qplugin module, torch module,
# input), exact?). The torch module gets the same state (and qparams) as the qplugin one.
def _build_quantize(dtype):
    zp = _out_zp(dtype)
    x = torch.randn(4, 3, 64, generator=torch.Generator().manual_seed(1)) * 3
    return qnn.Quantize(0.05, zp, dtype), nnq.Quantize(0.05, zp, dtype), x


def _build_dequantize(dtype):
    return qnn.DeQuantize(), nnq.DeQuantize(), qinput((4, 3, 64), dtype)


def _build_relu6(dtype):
    return qnn.ReLU6(), nnq.ReLU6(), qinput((4, 3, 8, 8), dtype)


def _build_hardswish(dtype):
    zp = _out_zp(dtype)
    return qnn.Hardswish(0.0271, zp), nnq.Hardswish(0.0271, zp), qinput((4, 3, 8, 8), dtype)


def _build_elu(dtype):
    zp = _out_zp(dtype)
    return qnn.ELU(0.0271, zp, 0.8), nnq.ELU(0.0271, zp, 0.8), qinput((4, 3, 8, 8), dtype)


def _bn_builder(qcls, tcls, shape):
    def build(dtype):
        t = _randomize_bn(tcls(3), seed=7)
        t.scale = torch.tensor(0.0413)
        t.zero_point = torch.tensor(_out_zp(dtype))
        q = qcls(3)
        q.load_state_dict(t.state_dict())
        return q, t, qinput(shape, dtype)
    return build


MODULES = {
    "Quantize": (_build_quantize, True),
    "DeQuantize": (_build_dequantize, True),
    "ReLU6": (_build_relu6, True),
    "Hardswish": (_build_hardswish, False),
    "ELU": (_build_elu, False),
    "BatchNorm2d": (_bn_builder(qnn.BatchNorm2d, nnq.BatchNorm2d, (4, 3, 8, 8)), False),
    "BatchNorm3d": (_bn_builder(qnn.BatchNorm3d, nnq.BatchNorm3d, (2, 3, 4, 4, 8)), False),
    "BNReLU2d": (_bn_builder(qnni.BNReLU2d, nniq.BNReLU2d, (4, 3, 8, 8)), False),
    "BNReLU3d": (_bn_builder(qnni.BNReLU3d, nniq.BNReLU3d, (2, 3, 4, 4, 8)), False),
}


QUANTIZED_INPUT_MODULES = [n for n in MODULES if n != "Quantize"]


DTYPES = [torch.quint8, torch.qint8, torch.qint32]


def _dtype_id(d):
    return str(d).replace("torch.", "")


def _qparams(m):
    """(scale, zero_point) as Python numbers whatever their storage (buffer, [1] buffer, float)."""
    if not hasattr(m, "scale"):
        return None
    return float(m.scale), int(m.zero_point)


def _fresh(name):
    """A module of the same class as MODULES[name]'s, with other constructor qparams."""
    return {
        "Quantize": lambda: qnn.Quantize(1.0, 0, torch.quint8),
        "DeQuantize": qnn.DeQuantize,
        "ReLU6": qnn.ReLU6,
        "Hardswish": lambda: qnn.Hardswish(1.0, 0),
        "ELU": lambda: qnn.ELU(1.0, 0, 0.8),
        "BatchNorm2d": lambda: qnn.BatchNorm2d(3),
        "BatchNorm3d": lambda: qnn.BatchNorm3d(3),
        "BNReLU2d": lambda: qnni.BNReLU2d(3),
        "BNReLU3d": lambda: qnni.BNReLU3d(3),
    }[name]()


def _observed(mod, example):
    """mod with a calibrated output observer, as prepare leaves it."""
    mod.eval()
    mod.qconfig = tq.default_qconfig
    wrapper = nn.Sequential(mod)
    wrapper.qconfig = tq.default_qconfig
    prepared = tq.prepare(wrapper)
    prepared(example)
    return prepared[0]


def _randomize_bn_stats(m):
    with torch.no_grad():
        m.running_mean.uniform_(-1, 1)
        m.running_var.uniform_(0.5, 2)
    return m


# The float models of the conversion tests (tests/nn/test_conversion_foundation.py, the
# from_float cases of tests/nn/test_module_contract.py): every module of the first families
# between the stubs, batch norm + ReLU fused.
class Chain2d(nn.Module):
    """QuantStub -> BatchNorm2d -> ReLU6 -> Hardswish -> ELU -> (BatchNorm2d + ReLU, fused)
    -> DeQuantStub, with a nested block to check the recursion."""

    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()
        self.bn = nn.BatchNorm2d(4)
        self.relu6 = nn.ReLU6()
        self.hardswish = nn.Hardswish()
        self.block = nn.Sequential(nn.ELU(alpha=0.7))
        self.bn2 = nn.BatchNorm2d(4)
        self.relu = nn.ReLU()
        self.dequant = tq.DeQuantStub()

    def forward(self, x):
        x = self.block(self.hardswish(self.relu6(self.bn(self.quant(x)))))
        return self.dequant(self.relu(self.bn2(x)))


class Chain3d(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()
        self.bn = nn.BatchNorm3d(3)
        self.hardswish = nn.Hardswish()
        self.bn2 = nn.BatchNorm3d(3)
        self.relu = nn.ReLU()
        self.dequant = tq.DeQuantStub()

    def forward(self, x):
        return self.dequant(self.relu(self.bn2(self.hardswish(self.bn(self.quant(x))))))


CHAINS = {"2d": (Chain2d, (4, 4, 8, 8)), "3d": (Chain3d, (2, 3, 4, 4, 8))}


def prepare_chain(model, shape, seed):
    """model (eval, batch norms set) fused, prepared with the x86 qconfig, calibrated on three
    batches of `shape` drawn from seed."""
    model = tq.fuse_modules(model, [["bn2", "relu"]])
    model.qconfig = tq.get_default_qconfig("x86")
    prepared = tq.prepare(model)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _ in range(3):
            prepared(torch.randn(shape, generator=g) * 2 + 0.3)
    return prepared
