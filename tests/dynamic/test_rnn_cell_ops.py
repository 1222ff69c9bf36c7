# torch.ops.qplugin.quantized_{lstm,gru,rnn_tanh,rnn_relu}_cell_dynamic (≙ torch.ops.quantized's
# cell ops on qplugin's LinearPackedParams; schemas csrc/ops/rnn_dynamic.cpp, kernels
# csrc/ops/cpu/rnn_dynamic_kernel.cpp, fakes qplugin/_meta_dynamic.py).
# Oracles: an exact reference on every ISA (the two GEMMs by _dyn_reference.linear_dynamic_exact,
# then PyTorch's cell math in the same op order) and torch.ops.quantized's cell ops on the same
# qint8 weights. The cells quantize activations to 7 bits (reduce_range, as PyTorch's), so torch's
# AVX2 u8 x s8 pair sums cannot saturate (TORCH_ORACLE_NOTES.md): torch is a valid oracle here.
import pytest
import torch

from _block_torch_ao import requires_torch_ao
from _dyn_reference import linear_dynamic_exact

ops = torch.ops.qplugin
NGATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}
KINDS = list(NGATES)


def _opname(kind, fp16=False):
    return f"quantized_{kind}_cell_dynamic" + ("_fp16" if fp16 else "")


def _weights(kind, I, H, bias, per_channel=False, seed=0):
    g = torch.Generator().manual_seed(seed)
    G = NGATES[kind] * H

    def q(n, k):
        w = torch.randn(n, k, generator=g) * 0.3
        if per_channel:
            s = w.abs().amax(1).clamp_min(1e-3) / 127
            return torch.quantize_per_channel(w, s.double(), torch.zeros(n, dtype=torch.long), 0,
                                              torch.qint8)
        return torch.quantize_per_tensor(w, float(w.abs().max()) / 127, 0, torch.qint8)

    w_ih, w_hh = q(G, I), q(G, H)
    b_ih = torch.randn(G, generator=g) if bias else None
    b_hh = torch.randn(G, generator=g) if bias else None
    return w_ih, b_ih, w_hh, b_hh


def _hx(kind, B, H, seed=1):
    g = torch.Generator().manual_seed(seed)
    h = torch.randn(B, H, generator=g) * 0.5
    if kind == "lstm":
        return [h, torch.randn(B, H, generator=g) * 0.5]
    return h


def _call(ns, kind, x, hx, p_ih, p_hh, b_ih=None, b_hh=None, fp16=False):
    return getattr(ns, _opname(kind, fp16))(x, hx, p_ih, p_hh, b_ih, b_hh)


def _exact(kind, x, hx, w):
    """PyTorch's cell math (aten/src/ATen/native/RNN.cpp) over the exact dynamic linear."""
    w_ih, b_ih, w_hh, b_hh = w
    h = hx[0] if kind == "lstm" else hx
    ig = linear_dynamic_exact(x, w_ih, b_ih, True)
    hg = linear_dynamic_exact(h, w_hh, b_hh, True)
    if kind == "lstm":
        ch = hg.add_(ig).unsafe_chunk(4, 1)
        i, f, gg, o = ch[0].sigmoid_(), ch[1].sigmoid_(), ch[2].tanh_(), ch[3].sigmoid_()
        cy = (f * hx[1]).add_(i * gg)
        return o * cy.tanh(), cy
    if kind == "gru":
        ic, hc = ig.unsafe_chunk(3, 1), hg.unsafe_chunk(3, 1)
        r = hc[0].add_(ic[0]).sigmoid_()
        z = hc[1].add_(ic[1]).sigmoid_()
        n = ic[2].add(hc[2].mul_(r)).tanh_()
        return (h - n).mul_(z).add_(n)
    pre = hg.add_(ig)
    return pre.tanh() if kind == "rnn_tanh" else pre.relu()


def _pairs(out, ref):
    if isinstance(out, (tuple, list)):
        return list(zip(out, ref))
    return [(out, ref)]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("B,I,H", [(1, 5, 3), (4, 17, 8), (7, 64, 33)])
def test_cell_vs_exact(isa, kind, bias, per_channel, B, I, H):
    w = _weights(kind, I, H, bias, per_channel)
    p_ih, p_hh = ops.linear_prepack(w[0], w[1]), ops.linear_prepack(w[2], w[3])
    x = torch.randn(B, I, generator=torch.Generator().manual_seed(2))
    hx = _hx(kind, B, H)
    out = _call(ops, kind, x, hx, p_ih, p_hh)
    ref = _exact(kind, x, hx, w)
    for o, r in _pairs(out, ref):
        assert o.shape == (B, H) and o.dtype == torch.float32
        torch.testing.assert_close(o, r, atol=2e-6, rtol=1e-6)


@requires_torch_ao
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("B,I,H", [(1, 5, 3), (4, 17, 8), (7, 64, 33)])
def test_cell_vs_torch(isa, kind, bias, per_channel, B, I, H):
    w = _weights(kind, I, H, bias, per_channel, seed=3)
    p_ih, p_hh = ops.linear_prepack(w[0], w[1]), ops.linear_prepack(w[2], w[3])
    t_ih = torch.ops.quantized.linear_prepack(w[0], w[1])
    t_hh = torch.ops.quantized.linear_prepack(w[2], w[3])
    x = torch.randn(B, I, generator=torch.Generator().manual_seed(4)) * 2
    hx = _hx(kind, B, H, seed=5)
    # The bias arguments are not read (biases come from the packed weights), as in PyTorch.
    out = _call(ops, kind, x, hx, p_ih, p_hh, w[1], w[3])
    ref = _call(torch.ops.quantized, kind, x, hx, t_ih, t_hh, w[1], w[3])
    for o, r in _pairs(out, ref):
        torch.testing.assert_close(o, r, atol=1e-5, rtol=1e-5)


@requires_torch_ao
@pytest.mark.parametrize("kind", KINDS)
def test_cell_vs_torch_steps(kind):
    """A few steps fed back, as a module would: errors must not grow apart from torch's."""
    I, H, B = 12, 10, 3
    w = _weights(kind, I, H, True, seed=6)
    p_ih, p_hh = ops.linear_prepack(w[0], w[1]), ops.linear_prepack(w[2], w[3])
    t_ih = torch.ops.quantized.linear_prepack(w[0], w[1])
    t_hh = torch.ops.quantized.linear_prepack(w[2], w[3])
    g = torch.Generator().manual_seed(7)
    hq = ht = _hx(kind, B, H, seed=8)
    for _ in range(5):
        x = torch.randn(B, I, generator=g)
        hq = _call(ops, kind, x, hq, p_ih, p_hh)
        ht = _call(torch.ops.quantized, kind, x, ht, t_ih, t_hh)
        for o, r in _pairs(hq, ht):
            torch.testing.assert_close(o, r, atol=1e-5, rtol=1e-5)
        if kind == "lstm":
            hq, ht = list(hq), list(ht)


@pytest.mark.parametrize("kind", KINDS)
def test_cell_empty_batch(kind):
    w = _weights(kind, 5, 4, True)
    p_ih, p_hh = ops.linear_prepack(w[0], w[1]), ops.linear_prepack(w[2], w[3])
    out = _call(ops, kind, torch.randn(0, 5), _hx(kind, 0, 4), p_ih, p_hh)
    for o, _ in _pairs(out, out):
        assert o.shape == (0, 4)


@pytest.mark.parametrize("kind", KINDS)
def test_cell_noncontiguous(kind):
    w = _weights(kind, 6, 5, True)
    p_ih, p_hh = ops.linear_prepack(w[0], w[1]), ops.linear_prepack(w[2], w[3])
    x = torch.randn(6, 4).t()
    hx = _hx(kind, 4, 5)
    hx_t = [t.t().contiguous().t() for t in hx] if kind == "lstm" else hx.t().contiguous().t()
    a = _call(ops, kind, x, hx_t, p_ih, p_hh)
    b = _call(ops, kind, x.contiguous(), hx, p_ih, p_hh)
    for o, r in _pairs(a, b):
        assert torch.equal(o, r)


@pytest.mark.parametrize("kind", KINDS)
def test_cell_bad_inputs(kind):
    I, H, B = 5, 4, 3
    w = _weights(kind, I, H, True)
    p_ih, p_hh = ops.linear_prepack(w[0], w[1]), ops.linear_prepack(w[2], w[3])
    name = f"qplugin::{_opname(kind)}"
    x, hx = torch.randn(B, I), _hx(kind, B, H)

    def bad(x_, hx_, p_ih_=p_ih, p_hh_=p_hh, match=""):
        with pytest.raises(RuntimeError, match=name + ".*" + match):
            _call(ops, kind, x_, hx_, p_ih_, p_hh_)

    bad(torch.randn(B, I + 1), hx, match=r"expected input of shape \[batch, 5\]")
    bad(torch.randn(I), hx, match="expected input of shape")  # unbatched: the module unsqueezes
    bad(x.double(), hx, match="expected a float32 input")
    bad(torch.randint(0, 5, (B, I)), hx, match="expected a float32 input")
    bad(torch.quantize_per_tensor(x, 0.1, 0, torch.quint8), hx, match="expected a float32 input")
    # Weights swapped: w_hh then has I inputs and the gate count check fails.
    bad(x, hx, p_hh, p_ih, match="expected w_")
    if kind == "lstm":
        bad(x, hx[:1], match=r"expected hx = \[h, c\] \(2 tensors\), got 1")
        bad(x, hx + [hx[0]], match="got 3")
        bad(x, [hx[0], torch.randn(B, H + 1)], match=r"expected cell state of shape \[3, 4\]")
        bad(x, [hx[0].double(), hx[1]], match="expected a float32 hidden state")
        bad(x, [torch.randn(B + 1, H), hx[1]], match=r"expected hidden state of shape \[3, 4\]")
    else:
        bad(x, torch.randn(B, H + 1), match=r"expected hidden state of shape \[3, 4\]")
        bad(x, torch.randn(B + 1, H), match=r"expected hidden state of shape \[3, 4\]")
        bad(x, torch.randn(H), match=r"expected hidden state of shape \[3, 4\]")
        bad(x, hx.double(), match="expected a float32 hidden state")


# opcheck and the fake kernels' checks, for the int8 cell ops and their _fp16 forms
# (test_rnn_cell_fp16.py has the fp16 numerics).
def _sample(kind, B=3, I=5, H=4, bias=True, fp16=False):
    w = _weights(kind, I, H, bias)
    if fp16:
        p_ih = ops.linear_prepack_fp16(w[0].dequantize(), w[1])
        p_hh = ops.linear_prepack_fp16(w[2].dequantize(), w[3])
    else:
        p_ih, p_hh = ops.linear_prepack(w[0], w[1]), ops.linear_prepack(w[2], w[3])
    b = torch.randn(NGATES[kind] * H)
    return (torch.randn(B, I), _hx(kind, B, H), p_ih, p_hh, b, b.clone())


@pytest.mark.parametrize("fp16", [False, True], ids=["int8", "fp16"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("bias", [True, False])
def test_opcheck(kind, bias, fp16):
    op = getattr(ops, _opname(kind, fp16)).default
    torch.library.opcheck(op, _sample(kind, bias=bias, fp16=fp16),
                          test_utils=("test_schema", "test_faketensor",
                                      "test_aot_dispatch_dynamic"))


@pytest.mark.parametrize("fp16", [False, True], ids=["int8", "fp16"])
@pytest.mark.parametrize("kind", KINDS)
def test_fake_checks_match(kind, fp16):
    """The fake kernel raises on the same bad input, naming the op, and gives the real shapes."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    x, hx, p_ih, p_hh, b, b2 = _sample(kind, fp16=fp16)
    name = f"qplugin::{_opname(kind, fp16)}"
    with FakeTensorMode() as mode:
        fx = mode.from_tensor(torch.randn(3, 6))
        fhx = [mode.from_tensor(t) for t in hx] if kind == "lstm" else mode.from_tensor(hx)
        b, b2 = mode.from_tensor(b), mode.from_tensor(b2)
        with pytest.raises(RuntimeError, match=name + r".*expected input of shape \[batch, 5\]"):
            _call(ops, kind, fx, fhx, p_ih, p_hh, b, b2, fp16=fp16)
        out = _call(ops, kind, mode.from_tensor(x), fhx, p_ih, p_hh, b, b2, fp16=fp16)
    for o, _ in _pairs(out, out):
        assert o.shape == (3, 4) and o.dtype == torch.float32


@pytest.mark.parametrize("cls,kind", [("LSTMCell", "lstm"), ("GRUCell", "gru"),
                                      ("RNNCell", "rnn_tanh"), ("RNNCell", "rnn_relu")])
def test_int8_modules_run_the_ops(cls, kind, tmp_path):
    """qplugin.nn.dynamic's int8 cells are the op (eager, unbatched, TorchScript save/load)."""
    from qplugin.nn import dynamic as qnnd
    kw = {"nonlinearity": kind[4:]} if cls == "RNNCell" else {}
    m = getattr(qnnd, cls)(7, 6, **kw)
    x, hx = torch.randn(3, 7), _hx(kind, 3, 6)
    want = _call(ops, kind, x, hx, m._params.ih, m._params.hh)
    got = m(x, tuple(hx) if kind == "lstm" else hx)
    one = m(x[0], tuple(t[0] for t in hx) if kind == "lstm" else hx[0])
    path = tmp_path / "cell.pt"
    torch.jit.save(torch.jit.script(m), str(path))
    loaded = torch.jit.load(str(path))
    again = loaded(x, tuple(hx) if kind == "lstm" else hx)
    for o, r in _pairs(got, want) + _pairs(again, want):
        assert torch.equal(o, r)
    # Unbatched: the module unsqueezes (one row is quantized alone: its own qparams).
    want1 = _call(ops, kind, x[:1], [t[:1] for t in hx] if kind == "lstm" else hx[:1],
                  m._params.ih, m._params.hh)
    for o, r in _pairs(one, want1):
        assert o.shape == (6,) and torch.equal(o, r[0])
