# from_torch_ao / load_state_dict for torch.ao dynamic models (quantize_dynamic'ed): the same
# weights, the same outputs up to per-call quantization, no torch.ao module left.
import pytest
import torch
from torch import nn

import qplugin.quantization as qq
from qplugin.nn import dynamic as qnnd

tq = pytest.importorskip("torch.ao.quantization")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(12, 16, num_layers=2, bidirectional=True)
        self.gru = nn.GRU(32, 8)
        self.cell = nn.LSTMCell(8, 8)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        y = self.gru(self.lstm(x)[0])[0]
        h, _ = self.cell(y[-1])
        return self.fc(h)


@pytest.mark.parametrize("dtype", [torch.qint8, torch.float16])
def test_from_torch_ao_dynamic(dtype):
    torch.manual_seed(0)
    m = Net().eval()
    ao = tq.quantize_dynamic(m, dtype=dtype)
    q = qq.from_torch_ao(ao)
    assert isinstance(q.lstm, qnnd.LSTM) and isinstance(q.gru, qnnd.GRU)
    assert isinstance(q.cell, qnnd.LSTMCell) and isinstance(q.fc, qnnd.Linear)
    assert not any(type(s).__module__.startswith("torch.ao") for s in q.modules())
    x = torch.randn(6, 3, 12)
    y, ya = q(x), ao(x)
    assert ((y - ya).norm() / ya.norm()).item() < 1e-2
    direct = qq.quantize_dynamic(m, dtype=dtype)
    for k, v in direct.lstm.get_weight().items():
        w = q.lstm.get_weight()[k]
        assert torch.equal(v.int_repr() if v.is_quantized else v,
                           w.int_repr() if w.is_quantized else w), k


@pytest.mark.parametrize("dtype", [torch.qint8, torch.float16])
def test_load_torch_ao_rnn_state_dict(dtype):
    torch.manual_seed(0)
    f = nn.LSTM(6, 5, num_layers=2).eval()
    ao = tq.quantize_dynamic(nn.Sequential(f), dtype=dtype)[0]
    q = qnnd.LSTM(6, 5, num_layers=2, dtype=dtype)
    q.load_state_dict(ao.state_dict())
    x = torch.randn(4, 2, 6)
    torch.testing.assert_close(q(x)[0], ao(x)[0], rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
@pytest.mark.parametrize("dtype", [torch.qint8, torch.float16])
def test_rnn_state_dict_keys_are_torch_ao_layout(mode, dtype):
    # #17 item: the RNN state dict has torch.ao's keys (`_all_weight_values.<i>.param`, dtype
    # entries), and a torch.ao checkpoint (CellParams objects) loads into qplugin's module to the
    # same weights as from_float of the same float model. The other direction needs PyTorch's
    # CellParams / LinearPackedParamsBase objects, which only torch.ops.quantized can create
    # (product code never calls it): qplugin saves (w_ih, b_ih, w_hh, b_hh) tuples instead.
    torch.manual_seed(0)
    f = getattr(nn, mode)(6, 5, num_layers=2, bidirectional=True).eval()
    ao = tq.quantize_dynamic(nn.Sequential(f), dtype=dtype)[0]
    q = getattr(qnnd, mode)(6, 5, num_layers=2, bidirectional=True, dtype=dtype)
    assert set(q.state_dict()) == set(ao.state_dict())
    q.load_state_dict(ao.state_dict())
    direct = qq.quantize_dynamic(nn.Sequential(f), dtype=dtype)[0]
    x = torch.randn(4, 2, 6)
    assert torch.equal(q(x)[0], direct(x)[0])
    torch.testing.assert_close(q(x)[0], ao(x)[0], rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("mode", ["LSTMCell", "GRUCell", "RNNCell"])
@pytest.mark.parametrize("dtype", [torch.qint8, torch.float16])
def test_cell_state_dict_torch_ao_layout(mode, dtype):
    # Cells save torch.ao's keys (_packed_weight_ih / _packed_weight_hh, as (w, b) pairs) and load
    # torch.ao's (packed objects), qplugin's, and the earlier qplugin `_params.param` tuple.
    torch.manual_seed(0)
    f = nn.Sequential(getattr(nn, mode)(4, 3)).eval()
    ao = tq.quantize_dynamic(f, dtype=dtype)[0]
    direct = qq.quantize_dynamic(f, dtype=dtype)[0]
    sd = direct.state_dict()
    assert set(sd) == set(ao.state_dict()) == {"_packed_weight_ih", "_packed_weight_hh"}
    x = torch.randn(2, 4)
    first = (lambda r: r[0] if isinstance(r, tuple) else r)
    want = first(direct(x))
    for source in (ao.state_dict(), sd):
        q = getattr(qnnd, mode)(4, 3, dtype=dtype)
        q.load_state_dict(source)
        assert torch.equal(first(q(x)), want)
    w_ih, b_ih = sd["_packed_weight_ih"]
    w_hh, b_hh = sd["_packed_weight_hh"]
    old = getattr(qnnd, mode)(4, 3, dtype=dtype)
    old.load_state_dict({"_params.param": (w_ih, b_ih, w_hh, b_hh)})
    assert torch.equal(first(old(x)), want)
    torch.testing.assert_close(want, first(ao(x)), rtol=1e-2, atol=1e-2)
