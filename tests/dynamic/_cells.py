# Shared helpers of the dynamic RNN cell-op tests: test_rnn_cell_ops.py (int8 packed weights) and
# test_rnn_cell_fp16.py (float16 packed weights, the `_fp16` ops): weights, hidden states, the
# op call, output pairing, the fed-back steps against torch and the modules' op check.
import pytest
import torch

ops = torch.ops.qplugin
NGATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}
KINDS = list(NGATES)
# (module class, cell kind) for qplugin.nn.dynamic's cells.
MODULES = [("LSTMCell", "lstm"), ("GRUCell", "gru"), ("RNNCell", "rnn_tanh"),
           ("RNNCell", "rnn_relu")]


def opname(kind, fp16=False):
    return f"quantized_{kind}_cell_dynamic" + ("_fp16" if fp16 else "")


def weights(kind, I, H, bias, weight, seed=0):
    """(w_ih, b_ih, w_hh, b_hh) for `kind`; weight(g, rows, cols) draws one weight from g."""
    g = torch.Generator().manual_seed(seed)
    G = NGATES[kind] * H
    w_ih, w_hh = weight(g, G, I), weight(g, G, H)
    b_ih = torch.randn(G, generator=g) if bias else None
    b_hh = torch.randn(G, generator=g) if bias else None
    return w_ih, b_ih, w_hh, b_hh


def hx(kind, B, H, seed=1):
    g = torch.Generator().manual_seed(seed)
    h = torch.randn(B, H, generator=g) * 0.5
    if kind == "lstm":
        return [h, torch.randn(B, H, generator=g) * 0.5]
    return h


def call(ns, kind, x, hx_, p_ih, p_hh, b_ih=None, b_hh=None, fp16=False):
    """ns.<cell op>(...); fp16 picks qplugin's `_fp16` op (torch's cell ops take either)."""
    return getattr(ns, opname(kind, fp16))(x, hx_, p_ih, p_hh, b_ih, b_hh)


def pairs(out, ref):
    if isinstance(out, (tuple, list)):
        return list(zip(out, ref))
    return [(out, ref)]


def prepack(ns, w, fp16=False):
    """(w_ih, b_ih, w_hh, b_hh) -> ns's packed (ih, hh): int8 (qint8 w) or float16 (float w)."""
    pack = ns.linear_prepack_fp16 if fp16 else ns.linear_prepack
    return pack(w[0], w[1]), pack(w[2], w[3])


def check_vs_reference(kind, w, reference, B, I, H, fp16=False, **tol):
    """The op on the weights w against reference(kind, x, hx, w), compared in its dtype."""
    packed = prepack(ops, w, fp16)
    x = torch.randn(B, I, generator=torch.Generator().manual_seed(2))
    h = hx(kind, B, H)
    out = call(ops, kind, x, h, *packed, fp16=fp16)
    ref = reference(kind, x, h, w)
    for o, r in pairs(out, ref):
        assert o.shape == (B, H) and o.dtype == torch.float32
        torch.testing.assert_close(o.to(r.dtype), r, **tol)


def check_vs_torch(kind, x, h, w, fp16=False, **tol):
    """The op against torch's cell op on the same weights w (packed by each)."""
    packed, t_packed = prepack(ops, w, fp16), prepack(torch.ops.quantized, w, fp16)
    # The bias arguments are not read (biases come from the packed weights), as in PyTorch.
    out = call(ops, kind, x, h, *packed, w[1], w[3], fp16=fp16)
    ref = call(torch.ops.quantized, kind, x, h, *t_packed, w[1], w[3])
    for o, r in pairs(out, ref):
        torch.testing.assert_close(o, r, **tol)


def check_steps(kind, w, I, H, B, steps, seed, fp16=False, **tol):
    """Steps fed back, as a module would: qplugin's and torch's results on the weights w must not
    drift apart. x draws from seed, the first hidden state from seed + 1."""
    packed, t_packed = prepack(ops, w, fp16), prepack(torch.ops.quantized, w, fp16)
    g = torch.Generator().manual_seed(seed)
    hq = ht = hx(kind, B, H, seed=seed + 1)
    for _ in range(steps):
        x = torch.randn(B, I, generator=g)
        hq = call(ops, kind, x, hq, *packed, fp16=fp16)
        ht = call(torch.ops.quantized, kind, x, ht, *t_packed)
        for o, r in pairs(hq, ht):
            torch.testing.assert_close(o, r, **tol)
        if kind == "lstm":
            hq, ht = list(hq), list(ht)


def check_module_runs_the_op(m, kind, tmp_path, fp16=False):
    """qplugin.nn.dynamic's cell m (7 -> 6) is the op: eager, unbatched, TorchScript save/load."""
    x, h = torch.randn(3, 7), hx(kind, 3, 6)
    want = call(ops, kind, x, h, m._params.ih, m._params.hh, fp16=fp16)
    got = m(x, tuple(h) if kind == "lstm" else h)
    one = m(x[0], tuple(t[0] for t in h) if kind == "lstm" else h[0])
    path = tmp_path / "cell.pt"
    scripted = torch.jit.script(m)
    meth = {"lstm": "lstm_cell", "gru": "gru_cell"}.get(kind, "rnn_cell")
    assert opname(kind, fp16) + "(" in getattr(scripted._params, meth).code
    torch.jit.save(scripted, str(path))
    loaded = torch.jit.load(str(path))
    again = loaded(x, tuple(h) if kind == "lstm" else h)
    for o, r in pairs(got, want) + pairs(again, want):
        assert torch.equal(o, r)
    # Unbatched: the module unsqueezes (int8: one row is quantized alone, its own qparams; fp16:
    # a 1-row GEMM, which BLAS may round differently from 3 rows).
    want1 = call(ops, kind, x[:1], [t[:1] for t in h] if kind == "lstm" else h[:1],
                 m._params.ih, m._params.hh, fp16=fp16)
    for o, r in pairs(one, want1):
        assert o.shape == (6,) and torch.equal(o, r[0])


def check_empty_batch(kind, p_ih, p_hh, I, H, fp16=False):
    out = call(ops, kind, torch.randn(0, I), hx(kind, 0, H), p_ih, p_hh, fp16=fp16)
    for o, _ in pairs(out, out):
        assert o.shape == (0, H)


def check_noncontiguous(kind, p_ih, p_hh, fp16=False):
    """Transposed (non-contiguous) x [4, 6] and hidden states [4, 5] give the contiguous result."""
    x = torch.randn(6, 4).t()
    h = hx(kind, 4, 5)
    h_t = [t.t().contiguous().t() for t in h] if kind == "lstm" else h.t().contiguous().t()
    a = call(ops, kind, x, h_t, p_ih, p_hh, fp16=fp16)
    b = call(ops, kind, x.contiguous(), h, p_ih, p_hh, fp16=fp16)
    for o, r in pairs(a, b):
        assert torch.equal(o, r)


def check_bad_inputs(kind, p_ih, p_hh, fp16=False):
    """The op's input checks, for weights packed as I=5 -> H=4; batch 3."""
    I, H, B = 5, 4, 3
    name = f"qplugin::{opname(kind, fp16)}"
    x, h = torch.randn(B, I), hx(kind, B, H)

    def bad(x_, hx_, p_ih_=p_ih, p_hh_=p_hh, match=""):
        with pytest.raises(RuntimeError, match=name + ".*" + match):
            call(ops, kind, x_, hx_, p_ih_, p_hh_, fp16=fp16)

    bad(torch.randn(B, I + 1), h, match=r"expected input of shape \[batch, 5\]")
    bad(torch.randn(I), h, match="expected input of shape")  # unbatched: the module unsqueezes
    bad(x.double(), h, match="expected a float32 input")
    bad(torch.randint(0, 5, (B, I)), h, match="expected a float32 input")
    bad(torch.quantize_per_tensor(x, 0.1, 0, torch.quint8), h, match="expected a float32 input")
    # Weights swapped: w_hh then has I inputs and the gate count check fails.
    bad(x, h, p_hh, p_ih, match="expected w_")
    if kind == "lstm":
        bad(x, h[:1], match=r"expected hx = \[h, c\] \(2 tensors\), got 1")
        bad(x, h + [h[0]], match="got 3")
        bad(x, [h[0], torch.randn(B, H + 1)], match=r"expected cell state of shape \[3, 4\]")
        bad(x, [h[0].double(), h[1]], match="expected a float32 hidden state")
        bad(x, [torch.randn(B + 1, H), h[1]], match=r"expected hidden state of shape \[3, 4\]")
    else:
        bad(x, torch.randn(B, H + 1), match=r"expected hidden state of shape \[3, 4\]")
        bad(x, torch.randn(B + 1, H), match=r"expected hidden state of shape \[3, 4\]")
        bad(x, torch.randn(H), match=r"expected hidden state of shape \[3, 4\]")
        bad(x, h.double(), match="expected a float32 hidden state")
