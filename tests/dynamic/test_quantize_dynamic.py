# qplugin.quantization.quantize_dynamic (≙ torch.ao.quantization.quantize_dynamic): qconfig_spec
# forms, dtypes, mapping, inplace; end to end on a small BERT-like encoder and an LSTM model
# (outputs within 1e-2 relative of torch.ao's quantize_dynamic, and of fp32 within int8 error).
import pytest
import torch
from torch import nn

import qplugin.quantization as qq
from qplugin.nn import dynamic as qnnd

from _dyn_reference import torch_ao_dynamic
from _models import Encoder


class LSTMModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(32, 48, num_layers=2)
        self.fc = nn.Linear(48, 10)

    def forward(self, x):
        return self.fc(self.lstm(x)[0])


def _rel(a, b):
    return ((a - b).norm() / b.norm()).item()


def test_swaps_and_keeps():
    torch.manual_seed(0)
    m = Encoder().eval()
    q = qq.quantize_dynamic(m)
    assert isinstance(q.head, qnnd.Linear) and isinstance(q.blocks[0].fc1, qnnd.Linear)
    assert isinstance(q.blocks[0].ln1, nn.LayerNorm)
    assert isinstance(m.head, nn.Linear), "not inplace: the original is unchanged"
    q16 = qq.quantize_dynamic(m, dtype=torch.float16)
    assert q16.head._packed_params.dtype == torch.float16
    # A set of names / types.
    qs = qq.quantize_dynamic(m, {"head"})
    assert isinstance(qs.head, qnnd.Linear) and isinstance(qs.blocks[0].fc1, nn.Linear)
    # A dict with a per-channel qconfig.
    qd = qq.quantize_dynamic(m, {nn.Linear: qq.per_channel_dynamic_qconfig})
    assert qd.head.weight().qscheme() == torch.per_channel_affine
    # inplace.
    m2 = Encoder().eval()
    out = qq.quantize_dynamic(m2, inplace=True)
    assert out is m2 and isinstance(m2.head, qnnd.Linear)
    with pytest.raises(ValueError, match=r"quantize_dynamic: expected dtype torch.qint8 or "
                                         r"torch.float16"):
        qq.quantize_dynamic(m, dtype=torch.quint4x2)


def test_mapping_and_default():
    mapping = qq.get_default_dynamic_quant_module_mappings()
    for cls in (nn.Linear, nn.LSTM, nn.GRU, nn.LSTMCell, nn.GRUCell, nn.RNNCell):
        assert cls in mapping
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(8, 8), nn.LSTM(8, 8)).eval()
    q = qq.quantize_dynamic(m, mapping={nn.Linear: qnnd.Linear})
    assert isinstance(q[0], qnnd.Linear) and isinstance(q[1], nn.LSTM)


def _end_to_end(m, x, dtype):
    """quantize_dynamic(m): within int8 (fp16) error of fp32 and 1e-2 of torch.ao's; (q, q(x))."""
    ref = m(x)
    q = qq.quantize_dynamic(m, dtype=dtype)
    y = q(x)
    assert _rel(y, ref) < (0.05 if dtype == torch.qint8 else 1e-3)
    _, tq = torch_ao_dynamic()
    if tq is not None:
        t = tq.quantize_dynamic(m, dtype=dtype)
        assert _rel(y, t(x)) < 1e-2
    return q, y


@pytest.mark.parametrize("dtype", [torch.qint8, torch.float16])
def test_bert_like_end_to_end(isa, dtype):
    torch.manual_seed(0)
    m = Encoder().eval()
    x = torch.randn(3, 20, 64)
    q, y = _end_to_end(m, x, dtype)
    sm = torch.jit.script(q)
    assert torch.equal(sm(x), y)


@pytest.mark.parametrize("dtype", [torch.qint8, torch.float16])
def test_lstm_model_end_to_end(isa, dtype):
    torch.manual_seed(0)
    m = LSTMModel().eval()
    q, _ = _end_to_end(m, torch.randn(15, 4, 32), dtype)
    assert isinstance(q.lstm, qnnd.LSTM)
