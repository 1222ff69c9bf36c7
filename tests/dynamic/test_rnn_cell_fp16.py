# torch.ops.qplugin.quantized_{lstm,gru,rnn_tanh,rnn_relu}_cell_dynamic_fp16: the cell ops on
# float16 packed weights (qplugin.LinearPackedParamsFp16; schemas csrc/ops/rnn_dynamic.cpp, kernels
# csrc/ops/cpu/rnn_dynamic_kernel.cpp, fakes qplugin/_meta_dynamic.py), and the float16 cells of
# qplugin.nn.dynamic that run them.
# References:
# - torch.ao's: torch.ops.quantized.quantized_*_cell_dynamic on torch.ops.quantized.
#   linear_prepack_fp16 weights. PyTorch's fp16 dynamic path rounds the weights to fp16 (saturating
#   at +-65504) and computes in fp32 (fbgemm's fp16 GEMM widens the weights to fp32; its
#   accumulation order differs from ATen's fp32 linear, which qplugin uses), so the two agree to
#   fp32 rounding: torch.testing's default float32 tolerance (rtol 1.3e-6, atol 1e-5).
# - an independent float64 reference: the fp16-rounded weights, PyTorch's cell math in float64;
#   fp32 results agree to a few fp32 ulps of the gate sums (atol 2e-5 for |gates| ~ 10).
import pytest
import torch

from _block_torch_ao import requires_torch_ao

ops = torch.ops.qplugin
NGATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}
KINDS = list(NGATES)


def _opname(kind):
    return f"quantized_{kind}_cell_dynamic_fp16"


def _weights(kind, I, H, bias, seed=0):
    """Weights of torch.nn's scale (std ~ 1 / sqrt(fan_in)): gate sums of order 1."""
    g = torch.Generator().manual_seed(seed)
    G = NGATES[kind] * H
    w_ih = torch.randn(G, I, generator=g) / I ** 0.5
    w_hh = torch.randn(G, H, generator=g) / H ** 0.5
    b_ih = torch.randn(G, generator=g) if bias else None
    b_hh = torch.randn(G, generator=g) if bias else None
    return w_ih, b_ih, w_hh, b_hh


def _hx(kind, B, H, seed=1):
    g = torch.Generator().manual_seed(seed)
    h = torch.randn(B, H, generator=g) * 0.5
    if kind == "lstm":
        return [h, torch.randn(B, H, generator=g) * 0.5]
    return h


def _call(ns, kind, x, hx, p_ih, p_hh, b_ih=None, b_hh=None):
    name = _opname(kind) if ns is ops else f"quantized_{kind}_cell_dynamic"
    return getattr(ns, name)(x, hx, p_ih, p_hh, b_ih, b_hh)


def _pairs(out, ref):
    if isinstance(out, (tuple, list)):
        return list(zip(out, ref))
    return [(out, ref)]


def _f64_reference(kind, x, hx, w):
    """PyTorch's cell math in float64 over the fp16-rounded weights."""
    w_ih, b_ih, w_hh, b_hh = w

    def lin(a, wt, b):
        y = a.double() @ wt.clamp(-65504, 65504).half().double().t()
        return y + b.double() if b is not None else y

    h = hx[0] if kind == "lstm" else hx
    ig, hg = lin(x, w_ih, b_ih), lin(h, w_hh, b_hh)
    if kind == "lstm":
        i, f, gg, o = (hg + ig).chunk(4, 1)
        cy = f.sigmoid() * hx[1].double() + i.sigmoid() * gg.tanh()
        return o.sigmoid() * cy.tanh(), cy
    if kind == "gru":
        ic, hc = ig.chunk(3, 1), hg.chunk(3, 1)
        r = (hc[0] + ic[0]).sigmoid()
        z = (hc[1] + ic[1]).sigmoid()
        n = (ic[2] + hc[2] * r).tanh()
        return (h.double() - n) * z + n
    pre = hg + ig
    return pre.tanh() if kind == "rnn_tanh" else pre.relu()


SHAPES = [(1, 5, 3), (4, 17, 8), (7, 64, 33), (16, 256, 512)]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("B,I,H", SHAPES)
def test_cell_fp16_vs_float64(kind, bias, B, I, H):
    w = _weights(kind, I, H, bias)
    p_ih = ops.linear_prepack_fp16(w[0], w[1])
    p_hh = ops.linear_prepack_fp16(w[2], w[3])
    x = torch.randn(B, I, generator=torch.Generator().manual_seed(2))
    hx = _hx(kind, B, H)
    out = _call(ops, kind, x, hx, p_ih, p_hh)
    ref = _f64_reference(kind, x, hx, w)
    for o, r in _pairs(out, ref):
        assert o.shape == (B, H) and o.dtype == torch.float32
        torch.testing.assert_close(o.double(), r, atol=2e-5, rtol=1e-5)


@requires_torch_ao
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("B,I,H", SHAPES)
def test_cell_fp16_vs_torch(kind, bias, B, I, H):
    # Weights beyond the fp16 range in a few places: both saturate them to +-65504.
    w = list(_weights(kind, I, H, bias, seed=3))
    w[0][0, 0], w[2][-1, -1] = 1e6, -7e4  # x[:, 0] is ~1e-5, h[:, -1] is zeroed below
    p_ih, p_hh = ops.linear_prepack_fp16(w[0], w[1]), ops.linear_prepack_fp16(w[2], w[3])
    t_ih = torch.ops.quantized.linear_prepack_fp16(w[0], w[1])
    t_hh = torch.ops.quantized.linear_prepack_fp16(w[2], w[3])
    x = torch.randn(B, I, generator=torch.Generator().manual_seed(4)) * 1e-5
    x[:, 1:] = torch.randn(B, I - 1, generator=torch.Generator().manual_seed(5))
    hx = _hx(kind, B, H, seed=6)
    (hx[0] if kind == "lstm" else hx)[:, -1] = 1e-6
    # The bias arguments are not read (biases come from the packed weights), as in PyTorch.
    out = _call(ops, kind, x, hx, p_ih, p_hh, w[1], w[3])
    ref = _call(torch.ops.quantized, kind, x, hx, t_ih, t_hh, w[1], w[3])
    for o, r in _pairs(out, ref):
        torch.testing.assert_close(o, r)


@requires_torch_ao
@pytest.mark.parametrize("kind", KINDS)
def test_cell_fp16_vs_torch_steps(kind):
    """Steps fed back, as a module would: the results must not drift apart from torch's."""
    I, H, B = 12, 10, 3
    w = _weights(kind, I, H, True, seed=7)
    p_ih, p_hh = ops.linear_prepack_fp16(w[0], w[1]), ops.linear_prepack_fp16(w[2], w[3])
    t_ih = torch.ops.quantized.linear_prepack_fp16(w[0], w[1])
    t_hh = torch.ops.quantized.linear_prepack_fp16(w[2], w[3])
    g = torch.Generator().manual_seed(8)
    hq = ht = _hx(kind, B, H, seed=9)
    for _ in range(8):
        x = torch.randn(B, I, generator=g)
        hq = _call(ops, kind, x, hq, p_ih, p_hh)
        ht = _call(torch.ops.quantized, kind, x, ht, t_ih, t_hh)
        for o, r in _pairs(hq, ht):
            torch.testing.assert_close(o, r)
        if kind == "lstm":
            hq, ht = list(hq), list(ht)


@pytest.mark.parametrize("kind", KINDS)
def test_cell_fp16_empty_and_noncontiguous(kind):
    w = _weights(kind, 6, 5, True)
    p_ih, p_hh = ops.linear_prepack_fp16(w[0], w[1]), ops.linear_prepack_fp16(w[2], w[3])
    for o, _ in _pairs(*(2 * [_call(ops, kind, torch.randn(0, 6), _hx(kind, 0, 5), p_ih,
                                    p_hh)])):
        assert o.shape == (0, 5)
    x = torch.randn(6, 4).t()
    hx = _hx(kind, 4, 5)
    hx_t = [t.t().contiguous().t() for t in hx] if kind == "lstm" else hx.t().contiguous().t()
    a = _call(ops, kind, x, hx_t, p_ih, p_hh)
    b = _call(ops, kind, x.contiguous(), hx, p_ih, p_hh)
    for o, r in _pairs(a, b):
        assert torch.equal(o, r)


@pytest.mark.parametrize("kind", KINDS)
def test_cell_fp16_bad_inputs(kind):
    I, H, B = 5, 4, 3
    w = _weights(kind, I, H, True)
    p_ih, p_hh = ops.linear_prepack_fp16(w[0], w[1]), ops.linear_prepack_fp16(w[2], w[3])
    name = f"qplugin::{_opname(kind)}"
    x, hx = torch.randn(B, I), _hx(kind, B, H)

    def bad(x_, hx_, p_ih_=p_ih, p_hh_=p_hh, match="", exc=RuntimeError):
        with pytest.raises(exc, match=match):
            _call(ops, kind, x_, hx_, p_ih_, p_hh_)

    bad(torch.randn(B, I + 1), hx, match=name + r".*expected input of shape \[batch, 5\]")
    bad(torch.randn(I), hx, match=name + ".*expected input of shape")
    bad(x.double(), hx, match=name + ".*expected a float32 input")
    bad(torch.quantize_per_tensor(x, 0.1, 0, torch.quint8), hx,
        match=name + ".*expected a float32 input")
    bad(x, hx, p_hh, p_ih, match=name + ".*expected w_")
    # int8 packed weights are the other op's: the class is part of the schema.
    q = ops.linear_prepack(torch.quantize_per_tensor(w[0], 0.05, 0, torch.qint8), w[1])
    bad(x, hx, q, p_hh, match="LinearPackedParams")
    if kind == "lstm":
        bad(x, hx[:1], match=name + r".*expected hx = \[h, c\] \(2 tensors\), got 1")
        bad(x, [hx[0], torch.randn(B, H + 1)],
            match=name + r".*expected cell state of shape \[3, 4\]")
    else:
        bad(x, torch.randn(B + 1, H), match=name + r".*expected hidden state of shape \[3, 4\]")
        bad(x, hx.double(), match=name + ".*expected a float32 hidden state")


# opcheck and the fake kernels' checks of the _fp16 ops: test_rnn_cell_ops.py (parametrized
# over int8 and float16 packed weights).


@pytest.mark.parametrize("cls,kind", [("LSTMCell", "lstm"), ("GRUCell", "gru"),
                                      ("RNNCell", "rnn_tanh"), ("RNNCell", "rnn_relu")])
def test_fp16_modules_run_the_ops(cls, kind, tmp_path):
    """qplugin.nn.dynamic's float16 cells are the _fp16 ops (eager, unbatched, TorchScript)."""
    from qplugin.nn import dynamic as qnnd
    kw = {"nonlinearity": kind[4:]} if cls == "RNNCell" else {}
    m = getattr(qnnd, cls)(7, 6, dtype=torch.float16, **kw)
    x, hx = torch.randn(3, 7), _hx(kind, 3, 6)
    want = _call(ops, kind, x, hx, m._params.ih, m._params.hh)
    got = m(x, tuple(hx) if kind == "lstm" else hx)
    one = m(x[0], tuple(t[0] for t in hx) if kind == "lstm" else hx[0])
    path = tmp_path / "cell.pt"
    scripted = torch.jit.script(m)
    meth = {"lstm": "lstm_cell", "gru": "gru_cell"}.get(kind, "rnn_cell")
    assert _opname(kind) in getattr(scripted._params, meth).code
    torch.jit.save(scripted, str(path))
    loaded = torch.jit.load(str(path))
    again = loaded(x, tuple(hx) if kind == "lstm" else hx)
    for o, r in _pairs(got, want) + _pairs(again, want):
        assert torch.equal(o, r)
    # Unbatched: the module unsqueezes (a 1-row GEMM: BLAS may round differently from 3 rows).
    want1 = _call(ops, kind, x[:1], [t[:1] for t in hx] if kind == "lstm" else hx[:1],
                  m._params.ih, m._params.hh)
    for o, r in _pairs(one, want1):
        assert o.shape == (6,) and torch.equal(o, r[0])


@requires_torch_ao
@pytest.mark.parametrize("cls,nonlinearity", [("LSTMCell", "tanh"), ("GRUCell", "tanh"),
                                               ("RNNCell", "tanh"), ("RNNCell", "relu")])
def test_fp16_modules_vs_torch_ao(cls, nonlinearity):
    import torch.ao.nn.quantized.dynamic as nnqd
    import torch.ao.quantization as tq

    import qplugin.quantization as qq
    from qplugin.nn import dynamic as qnnd
    kw = {"nonlinearity": nonlinearity} if cls == "RNNCell" else {}
    torch.manual_seed(0)
    f = getattr(torch.nn, cls)(256, 512, **kw).eval()
    f.qconfig = qq.float16_dynamic_qconfig
    q = getattr(qnnd, cls).from_float(f)
    f.qconfig = tq.float16_dynamic_qconfig
    t = getattr(nnqd, cls).from_float(f)
    assert repr(q) == repr(t)
    for B in (1, 16):
        x = torch.randn(B, 256)
        h = torch.randn(B, 512) * 0.5
        hx = (h, torch.randn(B, 512) * 0.5) if cls == "LSTMCell" else h
        for o, r in _pairs(q(x, hx), t(x, hx)):
            torch.testing.assert_close(o, r)
        for o, r in _pairs(q(x), t(x)):  # hx None
            torch.testing.assert_close(o, r)
