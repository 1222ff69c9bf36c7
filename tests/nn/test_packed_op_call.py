"""qplugin.nn's packed-op forwards (conv, linear and their fused forms) call their op with subclass
torch functions disabled on a plain torch.Tensor input (qplugin/nn/modules/utils.py,
_packed_op_call: torch's lookup of __torch_function__ on the torchbind packed params raises and
catches a C++ exception on every call). The shortcut must not change what a tensor subclass sees,
must not leak its disabled state, and must give the same result as the plain op call."""
import warnings

import pytest
import torch

import qplugin  # noqa: F401
from qplugin import nn as qnn

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]


def _modules():
    conv = qnn.Conv2d(8, 16, 3, padding=1)
    lin = qnn.Linear(12, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x4 = torch.quantize_per_tensor(torch.rand(2, 8, 5, 6), 0.02, 3, torch.quint8)
        x2 = torch.quantize_per_tensor(torch.rand(3, 12), 0.02, 3, torch.quint8)
    return [(conv, x4, lambda x: torch.ops.qplugin.conv2d(x, conv._packed_params, conv.scale,
                                                            conv.zero_point)),
            (lin, x2, lambda x: torch.ops.qplugin.linear(x, lin._packed_params._packed_params,
                                                           lin.scale, lin.zero_point))]


class _Tagged(torch.Tensor):
    calls = []

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cls.calls.append(getattr(func, "__name__", str(func)))
        return super().__torch_function__(func, types, args, kwargs or {})


@pytest.mark.parametrize("i", [0, 1])
def test_plain_input_same_result_and_state_restored(i):
    mod, x, op = _modules()[i]
    assert torch._C._is_torch_function_enabled()
    got = mod(x)
    assert torch._C._is_torch_function_enabled()  # the disabled state does not leak
    assert torch.equal(got.int_repr(), op(x).int_repr())
    assert (got.q_scale(), got.q_zero_point()) == (mod.scale, mod.zero_point)


@pytest.mark.parametrize("i", [0, 1])
def test_subclass_input_still_sees_its_torch_function(i):
    mod, x, op = _modules()[i]
    xs = x.as_subclass(_Tagged)
    _Tagged.calls.clear()
    got = mod(xs)
    assert any("qplugin" in c or "conv" in c or "linear" in c for c in _Tagged.calls), \
        _Tagged.calls
    assert torch.equal(torch.Tensor(got).int_repr() if isinstance(got, _Tagged)
                       else got.int_repr(), op(x).int_repr())


def test_bad_input_error_unchanged():
    conv = _modules()[0][0]
    with pytest.raises(RuntimeError, match="qplugin"):
        conv(torch.rand(2, 8, 5, 6))  # float input: the op's own error
    assert torch._C._is_torch_function_enabled()
