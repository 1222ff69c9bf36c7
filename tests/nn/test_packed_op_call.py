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


# The dynamic modules (float in, float out) take the same shortcut (_plain_op_call), for every
# tensor argument: an LSTM cell's hidden state may be a subclass while its input is not.
def _dynamic_cases():
    from qplugin.nn import dynamic as qnnd
    torch.manual_seed(0)
    lin = qnnd.Linear(12, 5)
    lin.set_weight_bias(torch.quantize_per_tensor(torch.randn(5, 12), 0.02, 0, torch.qint8),
                        torch.randn(5))
    lin16 = qnnd.Linear(12, 5, dtype=torch.float16)
    lin16.set_weight_bias(torch.randn(5, 12), torch.randn(5))
    conv = qnnd.Conv2d(3, 4, 3)
    conv.set_weight_bias(torch.quantize_per_tensor(torch.randn(4, 3, 3, 3), 0.02, 0,
                                                   torch.qint8), torch.randn(4))
    lstm = qnnd.LSTM(6, 7, num_layers=2)
    gru = qnnd.GRU(6, 7, bidirectional=True)
    cell = qnnd.LSTMCell(6, 7)
    gcell = qnnd.GRUCell(6, 7)
    rcell = qnnd.RNNCell(6, 7, nonlinearity="relu")
    x2, x4, xs, h = (torch.randn(3, 12), torch.randn(2, 3, 6, 6), torch.randn(4, 3, 6),
                     torch.randn(3, 7))
    xc = torch.randn(3, 6)
    return [("linear", lin, (x2,),
             lambda: torch.ops.qplugin.linear_dynamic(x2, lin._packed_params._packed_params,
                                                      True)),
            ("linear_fp16", lin16, (x2,),
             lambda: torch.ops.qplugin.linear_dynamic_fp16(
                 x2, lin16._packed_params._packed_params)),
            ("conv2d", conv, (x4,),
             lambda: torch.ops.qplugin.conv2d_dynamic(x4, conv._packed_params, True)),
            ("lstm", lstm, (xs,), None), ("gru", gru, (xs,), None),
            ("lstm_cell", cell, (xc, (h, h.clone())), None),
            ("gru_cell", gcell, (xc, h), None), ("rnn_cell", rcell, (xc, h), None)]


def _flat(out):
    if isinstance(out, torch.Tensor):
        return [torch.Tensor(out) if type(out) is not torch.Tensor else out]
    return [t for o in out for t in _flat(o)]


def _slow_call(mod, args):
    """The module's result with the shortcut never taken (as before it existed)."""
    from qplugin.nn.modules import utils
    orig = utils._plain_tensors
    utils._plain_tensors = lambda args: False
    try:
        return mod(*args)
    finally:
        utils._plain_tensors = orig


@pytest.mark.parametrize("i", range(8))
def test_dynamic_plain_input_same_result_and_state_restored(i):
    name, mod, args, op = _dynamic_cases()[i]
    assert torch._C._is_torch_function_enabled()
    got = mod(*args)
    assert torch._C._is_torch_function_enabled()
    want = _slow_call(mod, args)
    for g, w in zip(_flat(got), _flat(want), strict=True):
        assert type(g) is torch.Tensor
        assert torch.equal(g, w), name
    if op is not None:
        assert torch.equal(got, op()), name


@pytest.mark.parametrize("i", range(8))
def test_dynamic_subclass_argument_still_sees_its_torch_function(i):
    name, mod, args, _ = _dynamic_cases()[i]
    want = mod(*args)
    # The subclass on the last tensor argument: the hidden state of a cell, else the input.
    last = args[-1]
    if isinstance(last, tuple):
        sub = (last[0], last[1].as_subclass(_Tagged))
    else:
        sub = last.as_subclass(_Tagged)
    _Tagged.calls.clear()
    got = mod(*args[:-1], sub)
    assert any("qplugin" in c or "dynamic" in c or "lstm" in c or "gru" in c or "rnn" in c
               for c in _Tagged.calls), (name, _Tagged.calls)
    for g, w in zip(_flat(got), _flat(want), strict=True):
        assert torch.equal(g, w), name


def test_dynamic_bad_input_error_unchanged():
    lin = _dynamic_cases()[0][1]
    with pytest.raises(RuntimeError, match="qplugin"):
        lin(torch.randn(3, 11))  # wrong in_features: the op's own error
    assert torch._C._is_torch_function_enabled()


def test_scripted_dynamic_modules_unchanged():
    # TorchScript takes the literal op calls (the is_scripting branch): same results.
    for name, mod, args, _ in _dynamic_cases():
        if name in ("lstm", "gru"):
            continue  # scripted through their own tests (tests/dynamic/test_rnn_dynamic.py)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            scripted = torch.jit.script(mod)
        for g, w in zip(_flat(scripted(*args)), _flat(mod(*args)), strict=True):
            assert torch.equal(g, w), name
