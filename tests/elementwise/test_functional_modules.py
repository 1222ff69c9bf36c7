"""Tests of qplugin.nn.QFunctional / FloatFunctional (qplugin/nn/modules/functional_modules.py):
PyTorch's documentation examples, parity with torch.ao.nn.quantized.QFunctional, from_float
through torch.ao.quantization.prepare + qplugin.quantization.convert, state_dict (including
PyTorch's layout), torch.save, deepcopy, TorchScript save/load.
"""
import copy
import io
import re

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from _reference import assert_qclose  # noqa: E402
import torch.ao.nn.quantized as nnq  # noqa: E402
import torch.ao.quantization as tq  # noqa: E402
from torch import nn  # noqa: E402

import qplugin  # noqa: E402,F401
import qplugin.quantization as qquant  # noqa: E402
from qplugin.nn.modules.functional_modules import FloatFunctional, QFunctional  # noqa: E402

torch.backends.quantized.engine = "x86"

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]

# What qplugin.quantization's default mapping gains with this issue (until it is merged there).
MAPPING = dict(qquant.get_default_static_quant_module_mappings())
MAPPING.update({nnq.FloatFunctional: QFunctional, FloatFunctional: QFunctional})


def codes(q):
    return q.int_repr().numpy().astype(np.int64)


def rand_q(shape, scale, zp, seed, dtype=torch.quint8):
    g = torch.Generator().manual_seed(seed)
    return torch.quantize_per_tensor(torch.randn(shape, generator=g) * 3, scale, zp, dtype)


def test_docs_examples():
    f_add = FloatFunctional()
    a, b = torch.tensor(3.0), torch.tensor(4.0)
    assert f_add.add(a, b).item() == 7.0 == nnq.FloatFunctional().add(a, b).item()
    q_add = QFunctional()
    qa = torch.quantize_per_tensor(torch.tensor(3.0), 1.0, 0, torch.qint32)
    qb = torch.quantize_per_tensor(torch.tensor(4.0), 1.0, 0, torch.qint32)
    y = q_add.add(qa, qb)
    ref = nnq.QFunctional().add(qa, qb)
    assert_qclose(y, ref, exact=True)
    assert y.dequantize().item() == 7.0


def test_float_functional_is_torch_compatible():
    f = FloatFunctional()
    assert isinstance(f, nnq.FloatFunctional)
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    assert torch.equal(f.add(x, y), x + y)
    assert torch.equal(f.mul(x, y), x * y)
    assert torch.equal(f.cat([x, y], 1), torch.cat([x, y], 1))
    assert torch.equal(f.add_relu(x, y), torch.relu(x + y))
    assert torch.equal(f.add_scalar(x, 2.0), x + 2.0)
    assert torch.equal(f.mul_scalar(x, 2.0), x * 2.0)
    with pytest.raises(RuntimeError):
        f(x)


def test_qfunctional_ops_match_pytorch():
    ours, theirs = QFunctional(), nnq.QFunctional()
    for m in (ours, theirs):
        m.scale, m.zero_point = 0.0783, 121
    x = rand_q((2, 8, 5, 5), 0.05, 128, 1)
    y = rand_q((2, 8, 5, 5), 0.06, 120, 2)
    # Within one unit, no share bound: PyTorch's add rounds in float, off on 5-10% (docs/oracle.md).
    assert_qclose(ours.add(x, y), theirs.add(x, y), min_identical=0.0)
    assert_qclose(ours.add_relu(x, y), theirs.add_relu(x, y), min_identical=0.0)
    assert_qclose(ours.mul(x, y), theirs.mul(x, y), min_identical=0.0)
    assert_qclose(ours.cat([x, y], 1), theirs.cat([x, y], 1), min_identical=0.0)
    assert_qclose(ours.add_scalar(x, 0.7), theirs.add_scalar(x, 0.7), min_identical=0.0)
    assert_qclose(ours.mul_scalar(x, -1.5), theirs.mul_scalar(x, -1.5), exact=True)
    assert_qclose(ours.cat([x, x], dim=0), theirs.cat([x, x], dim=0), exact=True)
    a = rand_q((4, 6), 0.05, 128, 3)
    b = rand_q((6, 5), 0.05, 128, 4)
    r = ours.matmul(a, b)
    assert r.q_scale() == ours.scale.item() and r.shape == (4, 5)
    ref = torch.quantize_per_tensor(a.dequantize() @ b.dequantize(), 0.0783, 121, torch.quint8)
    assert np.abs(codes(r) - codes(ref)).max() <= 1
    with pytest.raises(RuntimeError, match=r"qplugin.nn.QFunctional: expected a call"):
        ours(x)


class _Net(nn.Module):
    def __init__(self, functional_cls):
        super().__init__()
        self.quant = tq.QuantStub()
        self.f_add = functional_cls()
        self.f_mul = functional_cls()
        self.f_cat = functional_cls()
        self.f_relu = functional_cls()
        self.dequant = tq.DeQuantStub()

    def forward(self, x):
        x = self.quant(x)
        y = self.f_add.add(x, x)
        y = self.f_mul.mul(y, x)
        y = self.f_cat.cat([y, x], 1)
        y = self.f_relu.add_relu(y, y)
        y = self.f_add.add_scalar(y, 0.25)
        y = self.f_mul.mul_scalar(y, 2.0)
        return self.dequant(y)


def _prepared(functional_cls, seed=0):
    torch.manual_seed(seed)
    m = _Net(functional_cls).eval()
    m.qconfig = tq.default_qconfig
    p = tq.prepare(m)
    for _ in range(3):
        p(torch.randn(2, 4, 6, 6))
    return p


@pytest.mark.parametrize("functional_cls", [FloatFunctional, nnq.FloatFunctional])
def test_convert_swaps_float_functional(functional_cls):
    p = _prepared(functional_cls)
    assert p.f_add.activation_post_process.__class__.__name__ == "MinMaxObserver"
    q = qquant.convert(p, mapping=MAPPING)
    for name in ("f_add", "f_mul", "f_cat", "f_relu"):
        mod = getattr(q, name)
        assert type(mod) is QFunctional
        s, z = getattr(p, name).activation_post_process.calculate_qparams()
        assert mod.scale.item() == float(s) and mod.zero_point.item() == int(z)
    # PyTorch's convert on the same model built with its own FloatFunctional (same seed, same
    # calibration data, so the same observers).
    ref = tq.convert(_prepared(nnq.FloatFunctional))
    x = torch.randn(2, 4, 6, 6, generator=torch.Generator().manual_seed(5))
    got, want = q(x), ref(x)
    # Six chained ops, each within one code of PyTorch: a few output steps at most.
    step = q.f_mul.scale.item() * 2.0
    assert (got - want).abs().max().item() <= 4 * step + 1e-6
    assert re.search(r"\(f_add\): QFunctional\(\s+scale=[0-9.e-]+, zero_point=\d+", repr(q))


def test_state_dict_round_trip_and_pytorch_layout():
    m = QFunctional()
    m.scale, m.zero_point = 0.0123456789, 77
    sd = m.state_dict()
    assert set(sd) == {"scale", "zero_point"}
    n = QFunctional()
    n.load_state_dict(sd)
    assert n.scale.item() == 0.0123456789 and n.zero_point.item() == 77
    t = nnq.QFunctional()
    t.scale, t.zero_point = 0.5, 3
    n.load_state_dict(t.state_dict())  # PyTorch's layout (0-d float32 scale)
    assert n.scale.item() == 0.5 and n.zero_point.item() == 3
    buf = io.BytesIO()
    torch.save(m, buf)
    buf.seek(0)
    m2 = torch.load(buf, weights_only=False)
    assert m2.scale.item() == m.scale.item() and m2.zero_point.item() == 77
    m3 = copy.deepcopy(m)
    assert m3.scale.item() == m.scale.item()
    with pytest.raises(ValueError, match=r"expected a finite, positive scale"):
        m.scale = 0.0


def test_torchscript_save_load():
    q = qquant.convert(_prepared(FloatFunctional), mapping=MAPPING)
    x = torch.randn(2, 4, 6, 6)
    s = torch.jit.script(q)
    buf = io.BytesIO()
    torch.jit.save(s, buf)
    buf.seek(0)
    loaded = torch.jit.load(buf)
    assert torch.equal(loaded(x), q(x))
    assert torch.equal(s(x), q(x))


def test_from_float_errors():
    with pytest.raises(TypeError, match=r"expected an observed"):
        QFunctional.from_float(nn.ReLU())
    with pytest.raises(ValueError, match=r"output observer"):
        QFunctional.from_float(FloatFunctional())  # Identity, no calculate_qparams


def test_other_pytorch_doc_examples_agree():
    """The remaining examples of the PyTorch documentation named by the issue, with qplugin.nn
    (ReLU6 on a qint32 tensor; Quantize / DeQuantize)."""
    from qplugin import nn as qnn
    x = torch.quantize_per_tensor(torch.randn(2), 1.0, 0, dtype=torch.qint32)
    assert torch.equal(qnn.ReLU6()(x).int_repr(), nnq.ReLU6()(x).int_repr())
    t = torch.tensor([[1., -1.], [1., -1.]])
    qt, ref = qnn.Quantize(1.0, 2, torch.qint8)(t), nnq.Quantize(1.0, 2, torch.qint8)(t)
    assert torch.equal(qt.int_repr(), ref.int_repr())
    assert qt.q_scale() == ref.q_scale() and qt.q_zero_point() == ref.q_zero_point()
    assert torch.equal(qnn.DeQuantize()(qt), nnq.DeQuantize()(ref))
