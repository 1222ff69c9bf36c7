"""The batch norm modules (qplugin.nn.BatchNorm2d/3d, intrinsic.BNReLU2d/3d) beyond their
cross-module contract (tests/nn/test_module_contract.py): from_float shares the float module's
parameters, from_reference against torch.ao, affine=False. The ops: tests/batch_norm/
test_batch_norm.py.
"""
import pytest
import torch
import torch.ao.nn.intrinsic as nni
import torch.ao.nn.intrinsic.quantized as nniq
import torch.ao.nn.quantized as nnq
from torch import nn

from qplugin import nn as qnn
from qplugin.nn import intrinsic as qnni
from _reference import assert_qclose
from _module_cases import (_observed, _qparams, _randomize_bn, _randomize_bn_stats,
                           assert_same_output, qinput)

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]


def test_from_float_shares_bn_parameters():
    obs = _observed(_randomize_bn(nn.BatchNorm2d(4), seed=11), torch.randn(4, 4, 8, 8))
    q = qnn.BatchNorm2d.from_float(obs)
    assert q.weight is obs.weight and q.running_var is obs.running_var
    # qparams are stored 0-d whatever the observer returns ([1]-shaped float32 / int32)
    assert q.scale.shape == () and q.scale.dtype == torch.float32
    assert q.zero_point.shape == () and q.zero_point.dtype == torch.int64


def test_from_reference_matches_torch():
    t_bn = _randomize_bn(nn.BatchNorm2d(3), seed=5)
    scale, zp = torch.tensor(0.04), torch.tensor(100)
    q = qnn.BatchNorm2d.from_reference(t_bn, scale, zp)
    r = nnq.BatchNorm2d.from_reference(t_bn, scale, zp)
    x = qinput((4, 3, 8, 8))
    assert_qclose(q(x), r(x))
    fused = nni.BNReLU2d(_randomize_bn(nn.BatchNorm2d(3), seed=6), nn.ReLU())
    q = qnni.BNReLU2d.from_reference(fused, scale, zp)
    r = nniq.BNReLU2d.from_reference(fused, scale, zp)
    assert_qclose(q(x), r(x))
    # Python numbers work too (PyTorch's BatchNorm from_reference needs tensors).
    q = qnn.BatchNorm3d.from_reference(_randomize_bn(nn.BatchNorm3d(3), seed=8), 0.04, 100)
    assert _qparams(q) == (pytest.approx(0.04), 100)
    for qcls, tcls, fcls in ((qnn.Hardswish, nnq.Hardswish, nn.Hardswish),
                             (qnn.ELU, nnq.ELU, lambda: nn.ELU(0.5))):
        f = fcls()
        q, r = qcls.from_reference(f, 0.0271, 7), tcls.from_reference(f, 0.0271, 7)
        assert_qclose(q(x), r(x))


def test_from_float_affine_false_batch_norm():
    """A float BatchNorm without weight/bias converts (the op treats None as 1/0; PyTorch's
    quantized batch norm op rejects None)."""
    x = torch.randn(2, 3, 4, 4)
    obs = _observed(_randomize_bn_stats(nn.BatchNorm2d(3, affine=False)), x)
    q = qnn.BatchNorm2d.from_float(obs)
    assert q.weight is None and q.bias is None
    xq = torch.quantize_per_tensor(x, 0.05, 128, torch.quint8)
    ref = torch.quantize_per_tensor(
        torch.nn.functional.batch_norm(xq.dequantize(), obs.running_mean, obs.running_var,
                                       eps=obs.eps), float(q.scale), int(q.zero_point),
        torch.quint8)
    assert_qclose(q(xq), ref)
    assert_same_output(torch.jit.script(q)(xq), q(xq))
