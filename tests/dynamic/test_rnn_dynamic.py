# qplugin.nn.dynamic.LSTM / GRU / LSTMCell / GRUCell / RNNCell against torch.ao's dynamic modules
# (the same weights: both quantize with the same observers) and the float modules, on every ISA:
# multi-layer, bidirectional, batch_first, PackedSequence, hx given or not, bad hx sizes.
import copy
import io

import pytest
import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

import qplugin.quantization as qq
from qplugin.nn import dynamic as qnnd

from _dyn_reference import torch_ao_dynamic


def _float(mode, **kw):
    torch.manual_seed(0)
    return getattr(torch.nn, mode)(**kw).eval()


def _torch_ao_twin(f, cls, dtype, q=None):
    """torch.ao's dynamic `cls` from float module f with the default qint8 or float16 dynamic
    qconfig (None without torch.ao); its repr equals qplugin's module q, if given."""
    nnqd, tq = torch_ao_dynamic()
    if nnqd is None:
        return None
    f.qconfig = tq.default_dynamic_qconfig if dtype == torch.qint8 else \
        tq.float16_dynamic_qconfig
    t = getattr(nnqd, cls).from_float(f)
    if q is not None:
        assert repr(q) == repr(t)
    return t


def _close(a, b, tol, what):
    d = (a - b).abs().max().item() if a.numel() else 0.0
    assert d <= tol, f"{what}: max diff {d} > {tol}"


CONFIGS = [dict(num_layers=1, bidirectional=False, batch_first=False),
           dict(num_layers=2, bidirectional=True, batch_first=False),
           dict(num_layers=2, bidirectional=False, batch_first=True)]


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
@pytest.mark.parametrize("cfg", CONFIGS)
@pytest.mark.parametrize("with_hx", [False, True])
@pytest.mark.parametrize("dtype", [torch.qint8, torch.float16])
def test_rnn_vs_float_and_torch_ao(isa, mode, cfg, with_hx, dtype):
    f = _float(mode, input_size=12, hidden_size=16, **cfg)
    f.qconfig = qq.default_dynamic_qconfig if dtype == torch.qint8 else qq.float16_dynamic_qconfig
    q = getattr(qnnd, mode).from_float(f)
    T, B = 7, 3
    x = torch.randn(B, T, 12) if cfg["batch_first"] else torch.randn(T, B, 12)
    D = 2 if cfg["bidirectional"] else 1
    hx = None
    if with_hx:
        h = torch.randn(cfg["num_layers"] * D, B, 16) * 0.5
        hx = (h, torch.randn_like(h) * 0.5) if mode == "LSTM" else h
    out, hn = q(x, hx)
    ref_out, ref_hn = f(x, hx)
    assert out.shape == ref_out.shape
    tol = 0.06 if dtype == torch.qint8 else 2e-3
    _close(out, ref_out, tol, "output vs float")
    if mode == "LSTM":
        _close(hn[0], ref_hn[0], tol, "h_n vs float")
        _close(hn[1], ref_hn[1], 2 * tol, "c_n vs float")
    else:
        _close(hn, ref_hn, tol, "h_n vs float")
    t = _torch_ao_twin(f, mode, dtype, q)
    if t is not None:
        t_out, t_hn = t(x, hx)
        # Same quantized weights and the same per-call activation quantization: the first step
        # agrees to float rounding; later steps may differ by a code where a float rounding
        # flips one (the hidden state feeds back), hence a small tolerance.
        _close(out, t_out, 1e-2 if dtype == torch.qint8 else 1e-5, "output vs torch.ao")
        for k, v in q.get_weight().items():
            tv = t.get_weight()[k]
            if dtype == torch.qint8:
                assert torch.equal(v.int_repr(), tv.int_repr()), k
            else:
                assert torch.equal(v, tv), k


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_packed_sequence(isa, mode, bidirectional):
    f = _float(mode, input_size=8, hidden_size=10, num_layers=2, bidirectional=bidirectional,
               batch_first=True)
    f.qconfig = qq.default_dynamic_qconfig
    q = getattr(qnnd, mode).from_float(f)
    x = torch.randn(4, 6, 8)
    lengths = torch.tensor([3, 6, 1, 5])
    packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    out, hn = q(packed)
    ref, ref_hn = f(packed)
    o, _ = pad_packed_sequence(out, batch_first=True)
    r, _ = pad_packed_sequence(ref, batch_first=True)
    _close(o, r, 0.06, "packed output vs float")
    h = hn[0] if mode == "LSTM" else hn
    rh = ref_hn[0] if mode == "LSTM" else ref_hn
    _close(h, rh, 0.06, "packed h_n vs float")
    # Each sequence alone (unpacked) gives the same output up to per-call quantization.
    for b in range(4):
        n = int(lengths[b])
        ob, hb = q(x[b:b + 1, :n])
        _close(o[b, :n], ob[0], 0.06, f"sequence {b}")
    t = _torch_ao_twin(f, mode, torch.qint8)
    if t is not None:
        tout, thn = t(packed)
        to, _ = pad_packed_sequence(tout, batch_first=True)
        _close(o, to, 1e-2, "packed output vs torch.ao")


def test_lstm_bad_inputs():
    q = qnnd.LSTM(6, 5, num_layers=2)
    with pytest.raises(RuntimeError, match=r"qplugin.nn.dynamic.LSTM: expected hidden\[0\] of "
                                           r"size \(2, 3, 5\), got \(1, 3, 5\)"):
        q(torch.randn(4, 3, 6), (torch.zeros(1, 3, 5), torch.zeros(2, 3, 5)))
    with pytest.raises(RuntimeError, match=r"expected input.size\(-1\) == input_size = 6, got 7"):
        q(torch.randn(4, 3, 7))
    with pytest.raises(RuntimeError, match=r"expected input with 3 dimensions, got 2"):
        q(torch.randn(4, 6))
    g = qnnd.GRU(6, 5)
    with pytest.raises(RuntimeError, match=r"qplugin.nn.dynamic.GRU: expected hidden\[0\] of "
                                           r"size \(1, 3, 5\)"):
        g(torch.randn(4, 3, 6), torch.zeros(1, 2, 5))
    x = torch.randn(4, 3, 6)
    x[2, 1, 3] = float("nan")
    with pytest.raises(RuntimeError, match=r"qplugin::quantized_lstm_layer_dynamic: expected a "
                                           r"finite input"):
        q(x)


def test_empty_sequence_and_batch():
    q = qnnd.LSTM(6, 5)
    out, (h, c) = q(torch.randn(0, 3, 6))
    assert out.shape == (0, 3, 5) and torch.equal(h, torch.zeros(1, 3, 5))
    out, (h, c) = q(torch.randn(4, 0, 6))
    assert out.shape == (4, 0, 5) and h.shape == (1, 0, 5)


@pytest.mark.parametrize("cls", ["LSTMCell", "GRUCell", "RNNCell"])
@pytest.mark.parametrize("dtype", [torch.qint8, torch.float16])
def test_cells(isa, cls, dtype):
    kw = {"nonlinearity": "relu"} if cls == "RNNCell" else {}
    torch.manual_seed(1)
    f = getattr(torch.nn, cls)(10, 12, **kw).eval()
    f.qconfig = qq.default_dynamic_qconfig if dtype == torch.qint8 else qq.float16_dynamic_qconfig
    q = getattr(qnnd, cls).from_float(f)
    x = torch.randn(5, 10)
    h = torch.randn(5, 12) * 0.5
    hx = (h, torch.randn(5, 12) * 0.5) if cls == "LSTMCell" else h
    tol = 0.06 if dtype == torch.qint8 else 2e-3
    for args in ((x,), (x, hx)):
        out, ref = q(*args), f(*args)
        if cls == "LSTMCell":
            _close(out[0], ref[0], tol, "h")
            _close(out[1], ref[1], tol, "c")
        else:
            _close(out, ref, tol, "h")
    # Unbatched input as torch's cells.
    one = q(x[0], None)
    assert (one[0] if cls == "LSTMCell" else one).shape == (12,)
    t = _torch_ao_twin(f, cls, dtype, q)
    if t is not None:
        o, to = q(x, hx), t(x, hx)
        o = o[0] if cls == "LSTMCell" else o
        to = to[0] if cls == "LSTMCell" else to
        _close(o, to, 1e-4 if dtype == torch.qint8 else 1e-5, "vs torch.ao")
    with pytest.raises(RuntimeError, match=r"expected hidden state of shape \(5, 12\)"):
        q(x, torch.zeros(5, 11) if cls != "LSTMCell" else (torch.zeros(5, 11), torch.zeros(5, 11)))


def test_rnn_state_dict_and_save():
    f = _float("LSTM", input_size=8, hidden_size=10, num_layers=2, bidirectional=True)
    f.qconfig = qq.default_dynamic_qconfig
    q = qnnd.LSTM.from_float(f)
    x = torch.randn(5, 2, 8)
    y = q(x)[0]
    q2 = qnnd.LSTM(8, 10, num_layers=2, bidirectional=True)
    q2.load_state_dict(q.state_dict())
    assert torch.equal(q2(x)[0], y)
    buf = io.BytesIO()
    torch.save(q, buf)
    buf.seek(0)
    assert torch.equal(torch.load(buf, weights_only=False)(x)[0], y)
    assert torch.equal(copy.deepcopy(q)(x)[0], y)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
@pytest.mark.parametrize("dtype", [torch.qint8, torch.float16])
def test_rnn_torchscript(mode, dtype, tmp_path):
    f = _float(mode, input_size=8, hidden_size=10, num_layers=2, bidirectional=True,
               batch_first=True)
    f.qconfig = qq.default_dynamic_qconfig if dtype == torch.qint8 else qq.float16_dynamic_qconfig
    q = getattr(qnnd, mode).from_float(f)
    x = torch.randn(3, 5, 8)
    y, hn = q(x)
    # Like torch.nn.LSTM, the overloaded forward (Tensor / PackedSequence) is resolved at the
    # call site: script the module inside a model.
    dense, packed_model = _Dense(q), _Packed(q)
    sm = torch.jit.script(dense)
    assert torch.equal(sm(x), y)
    path = str(tmp_path / "rnn.pt")
    torch.jit.save(sm, path)
    assert torch.equal(torch.jit.load(path)(x), y)
    packed = pack_padded_sequence(x, torch.tensor([5, 2, 4]), batch_first=True,
                                  enforce_sorted=False)
    sp = torch.jit.script(packed_model)
    torch.jit.save(sp, path)
    assert torch.equal(torch.jit.load(path)(packed), q(packed)[0].data)


class _Dense(torch.nn.Module):
    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, x):
        return self.rnn(x)[0]


class _Packed(torch.nn.Module):
    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, x: torch.nn.utils.rnn.PackedSequence):
        return self.rnn(x)[0].data


@pytest.mark.parametrize("cls", ["LSTMCell", "GRUCell", "RNNCell"])
def test_cells_torchscript(cls, tmp_path):
    torch.manual_seed(1)
    f = getattr(torch.nn, cls)(10, 12).eval()
    f.qconfig = qq.default_dynamic_qconfig
    q = getattr(qnnd, cls).from_float(f)
    x = torch.randn(5, 10)
    sm = torch.jit.script(q)
    path = str(tmp_path / "cell.pt")
    torch.jit.save(sm, path)
    out, ref = torch.jit.load(path)(x), q(x)
    if cls == "LSTMCell":
        assert torch.equal(out[0], ref[0]) and torch.equal(out[1], ref[1])
    else:
        assert torch.equal(out, ref)
