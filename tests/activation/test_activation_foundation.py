"""The foundation activation modules and functional forms against torch.ao (ReLU6, Hardswish,
ELU; their cross-module contract -- state dicts, fixtures, TorchScript, pickling, reprs, bad
input -- is tests/nn/test_module_contract.py; the table-driven checks of every activation are
tests/activation/test_table.py): in-place ReLU6, ELU's exact scale, PyTorch's float zero point,
the functional forms.
"""
import pytest
import torch
import torch.ao.nn.quantized as nnq
import torch.ao.nn.quantized.functional as tqF

from qplugin import nn as qnn
from qplugin.nn import functional as qF
from _reference import assert_qclose
from _module_cases import DTYPES, _dtype_id, _out_zp, _qparams, assert_same_output, qinput

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]


def test_relu6_inplace_matches_torch_ao():
    x = qinput((4, 3, 8, 8))
    xq, xt = x.clone(), x.clone()
    yq = qnn.ReLU6(inplace=True)(xq)
    yt = nnq.ReLU6(inplace=True)(xt)
    assert yq.data_ptr() == xq.data_ptr()
    assert_qclose(yq, yt, exact=True)
    assert_qclose(xq, xt, exact=True)


def test_elu_keeps_scale_exactly():
    # PyTorch's ELU keeps the Python float; qplugin's float64 buffer keeps it too.
    y = qnn.ELU(0.1, 3)(qinput((4,)))
    assert y.q_scale() == 0.1 == nnq.ELU(0.1, 3)(qinput((4,))).q_scale()


def test_load_torch_ao_hardswish_with_float_zero_point():
    # PyTorch's Hardswish applies its dtype argument to zero_point too (a float64 zero_point).
    t = nnq.Hardswish(0.0271, 9, dtype=torch.float64)
    assert t.zero_point.dtype == torch.float64
    m = qnn.Hardswish(1.0, 0)
    m.load_state_dict(t.state_dict())
    assert _qparams(m) == (float(torch.tensor(0.0271)), 9)
    assert m.zero_point.dtype == torch.int64 and m.scale.dtype == torch.float32


def test_torchscript_relu6_inplace():
    scripted = torch.jit.script(qnn.ReLU6(inplace=True))
    x = qinput((2, 3, 4))
    x2 = x.clone()
    y = scripted(x2)
    assert y.data_ptr() == x2.data_ptr()
    assert_qclose(y, nnq.ReLU6()(x), exact=True)


@pytest.mark.parametrize("dtype", DTYPES, ids=_dtype_id)
def test_functional_matches_torch_ao(dtype):
    x = qinput((4, 3, 8, 8), dtype)
    zp = _out_zp(dtype)
    assert_qclose(qF.hardswish(x, 0.0271, zp), tqF.hardswish(x, 0.0271, zp))
    assert_qclose(qF.elu(x, 0.0271, zp, 0.6), tqF.elu(x, 0.0271, zp, 0.6))
    assert_qclose(qF.elu(x, 0.0271, zp), tqF.elu(x, 0.0271, zp))
    # relu6 is an extension: the oracle is torch.ops.quantized.relu6 (what nnq.ReLU6 calls).
    assert_qclose(qF.relu6(x), nnq.ReLU6()(x), exact=True)
    x2 = x.clone()
    assert qF.relu6(x2, inplace=True).data_ptr() == x2.data_ptr()


def test_functional_rejects_float_input_and_scripts():
    xf = torch.randn(3)
    for fn, args in ((qF.hardswish, (0.1, 0)), (qF.elu, (0.1, 0)), (qF.relu6, ())):
        name = fn.__name__
        with pytest.raises(ValueError, match=rf"qplugin.nn.functional.{name}: expected a"
                                             r" quantized input tensor \(torch.quint8,"
                                             r" torch.qint8 or torch.qint32\), got a"
                                             r" non-quantized tensor"):
            fn(xf, *args)
        scripted = torch.jit.script(fn)
        x = qinput((2, 5))
        assert_same_output(scripted(x, *args), fn(x, *args))
        with pytest.raises(torch.jit.Error, match=rf"qplugin.nn.functional.{name}: expected"):
            scripted(xf, *args)
