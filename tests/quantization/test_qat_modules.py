"""qplugin.quantization.qat modules against torch.ao's QAT modules, one by one: from the same
float (fused) module with the same qconfig and the same random state, the same forward, gradients
and to_float; from_float takes qplugin's and torch.ao's fused float classes; bad inputs.
Changes with: qplugin/quantization/qat.py, fused.py.
"""
import pytest
import torch
from torch import nn

import qplugin.quantization as qq
from _block_torch_ao import BLOCKED, requires_torch_ao

tq = None if BLOCKED else pytest.importorskip("torch.ao.quantization")
pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]


def _bn(n, d):
    bn = {1: nn.BatchNorm1d, 2: nn.BatchNorm2d, 3: nn.BatchNorm3d}[d](n)
    g = torch.Generator().manual_seed(3)
    with torch.no_grad():
        bn.running_mean.copy_(torch.randn(n, generator=g) * 0.1)
        bn.running_var.copy_(torch.rand(n, generator=g) + 0.5)
    return bn


def _conv(d):
    return getattr(nn, f"Conv{d}d")(2, 4, 3, padding=1)


# name -> (float module factory taking the fused namespace, input shape)
CASES = {
    "Linear": (lambda F: nn.Linear(6, 5), (3, 6), "nn.qat"),
    "Conv2d": (lambda F: _conv(2), (2, 2, 5, 5), "nn.qat"),
    "Conv3d": (lambda F: _conv(3), (2, 2, 4, 4, 4), "nn.qat"),
    "LinearReLU": (lambda F: F.LinearReLU(nn.Linear(6, 5), nn.ReLU()), (3, 6), "nn.intrinsic.qat"),
    "LinearBn1d": (lambda F: F.LinearBn1d(nn.Linear(6, 5), _bn(5, 1)), (3, 6), "nn.intrinsic.qat"),
    "ConvReLU2d": (lambda F: F.ConvReLU2d(_conv(2), nn.ReLU()), (2, 2, 5, 5), "nn.intrinsic.qat"),
    "ConvReLU3d": (lambda F: F.ConvReLU3d(_conv(3), nn.ReLU()), (2, 2, 4, 4, 4),
                   "nn.intrinsic.qat"),
}
for _d, _shape in ((1, (2, 2, 7)), (2, (2, 2, 5, 5)), (3, (2, 2, 4, 4, 4))):
    CASES[f"ConvBn{_d}d"] = (lambda F, d=_d: getattr(F, f"ConvBn{d}d")(_conv(d), _bn(4, d)),
                             _shape, "nn.intrinsic.qat")
    CASES[f"ConvBnReLU{_d}d"] = (
        lambda F, d=_d: getattr(F, f"ConvBnReLU{d}d")(_conv(d), _bn(4, d), nn.ReLU()), _shape,
        "nn.intrinsic.qat")


@requires_torch_ao
@pytest.mark.parametrize("name", sorted(CASES))
def test_qat_module_matches_torch_ao(name):
    factory, shape, pkg = CASES[name]
    import importlib
    ao_qat = importlib.import_module("torch.ao.nn." + pkg.split(".", 1)[1])
    ao_fused = importlib.import_module("torch.ao.nn.intrinsic")
    outs = []
    for which in ("qplugin", "torch.ao"):
        torch.manual_seed(0)
        w = qq if which == "qplugin" else tq
        f = factory(qq.fused if which == "qplugin" else ao_fused).train()
        f.qconfig = w.get_default_qat_qconfig("x86")
        w.propagate_qconfig_(f)  # torch.ao's fused from_float reads the child's qconfig
        cls = getattr(qq.qat if which == "qplugin" else ao_qat, name)
        m = cls.from_float(f)
        x = torch.randn(shape, generator=torch.Generator().manual_seed(1), requires_grad=True)
        y = m(x)
        y.sum().backward()
        outs.append((y.detach(), x.grad, m.to_float()(x.detach()).detach()))
    for a, b in zip(*outs):
        assert torch.equal(a, b)


@requires_torch_ao
def test_qat_from_float_takes_torch_ao_fused_modules():
    import torch.ao.nn.intrinsic as nni
    f = nni.ConvBnReLU2d(_conv(2), _bn(4, 2), nn.ReLU()).train()
    f.qconfig = qq.get_default_qat_qconfig("x86")
    assert type(qq.qat.ConvBnReLU2d.from_float(f)) is qq.qat.ConvBnReLU2d


def test_qat_bad_inputs():
    with pytest.raises(TypeError, match="from_float: expected"):
        f = nn.Linear(2, 2)
        f.qconfig = qq.default_qat_qconfig
        qq.qat.ConvBn2d.from_float(f)
    with pytest.raises(ValueError, match="expected a module with a qconfig"):
        qq.qat.ConvReLU2d.from_float(qq.fused.ConvReLU2d(_conv(2), nn.ReLU()))
    with pytest.raises(ValueError, match="per_channel_affine_float_qparams"):
        qq.qat.Embedding(10, 4, qconfig=qq.default_qat_qconfig)


def test_freeze_and_update_bn_stats():
    f = qq.fused.ConvBn2d(_conv(2), _bn(4, 2)).train()
    f.qconfig = qq.get_default_qat_qconfig("x86")
    m = qq.qat.ConvBn2d.from_float(f)
    before = m.bn.running_mean.clone()
    m.apply(qq.qat.freeze_bn_stats)
    m(torch.randn(2, 2, 5, 5))
    assert torch.equal(m.bn.running_mean, before)
    m.apply(qq.qat.update_bn_stats)
    m(torch.randn(2, 2, 5, 5))
    assert not torch.equal(m.bn.running_mean, before)


def test_embedding_qat_converts():
    from qplugin import nn as qnn
    e = nn.Embedding(12, 4)
    e.qconfig = qq.default_embedding_qat_qconfig
    q = qq.qat.Embedding.from_float(e)
    idx = torch.tensor([1, 5, 7])
    q(idx)
    qe = qnn.Embedding.from_float(q)
    assert torch.allclose(qe(idx), q(idx), atol=0.05)
