# qplugin.CellParams and its makers torch.ops.qplugin.make_quantized_cell_params{,_dynamic,_fp16}
# (≙ torch.ops.quantized's), consumed by torch.ops.qplugin.quantized_lstm / quantized_gru
# (≙ torch.quantized_lstm / torch.quantized_gru, .input and .data). Schemas
# csrc/ops/rnn_dynamic.cpp, class csrc/packed/cell_params.h, kernels
# csrc/ops/cpu/rnn_dynamic_kernel.cpp, fakes qplugin/_meta_dynamic.py.
# Oracles: torch.quantized_lstm / torch.quantized_gru on PyTorch's cell params made from the same
# weights (int8 dynamic: reduce_range, so torch's AVX2 pair sums cannot saturate; float16: fp32
# rounding, torch.testing's default tolerance; legacy make_quantized_cell_params: 8-bit
# activations, compared where no u8 x s8 pair sum can saturate int16, and against an exact
# reference everywhere), and an exact per-step reference (tests/dynamic/_dyn_reference.py).
import io

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.nn.utils.rnn import pack_padded_sequence

from _block_torch_ao import requires_torch_ao
from _dyn_reference import choose_qparams, linear_dynamic_exact, quantize_codes

ops = torch.ops.qplugin
GATES = {"lstm": 4, "gru": 3}


def _float_weights(mode, I, H, seed):
    g = torch.Generator().manual_seed(seed)
    G = GATES[mode] * H
    return (torch.randn(G, I, generator=g) / I ** 0.5, torch.randn(G, H, generator=g) / H ** 0.5,
            torch.randn(G, generator=g) * 0.1, torch.randn(G, generator=g) * 0.1)


def _qint8(w):
    return torch.quantize_per_tensor(w, float(w.abs().max()) / 127, 0, torch.qint8)


def _layers(mode, I, H, num_layers, D, seed=0):
    """Float weights of every layer and direction (layer-major), PyTorch's input sizes."""
    return [_float_weights(mode, I if i < D else D * H, H, seed + i)
            for i in range(num_layers * D)]


def _params(ns, kind, weights):
    """CellParams of ns (qplugin or torch.ops.quantized) for every layer: kind 'dynamic' (int8,
    reduce_range), 'fp16' or 'legacy' (make_quantized_cell_params on float weights)."""
    out = []
    for w_ih, w_hh, b_ih, b_hh in weights:
        if kind == "legacy":
            out.append(ns.make_quantized_cell_params(w_ih, w_hh, b_ih, b_hh))
        elif kind == "dynamic":
            p_ih = ns.linear_prepack(_qint8(w_ih), b_ih)
            p_hh = ns.linear_prepack(_qint8(w_hh), b_hh)
            out.append(ns.make_quantized_cell_params_dynamic(p_ih, p_hh, b_ih, b_hh, True))
        else:
            out.append(ns.make_quantized_cell_params_fp16(ns.linear_prepack_fp16(w_ih, b_ih),
                                                         ns.linear_prepack_fp16(w_hh, b_hh)))
    return out


def _run(fn, mode, x, hx, params, num_layers, bidirectional, batch_first=False,
         batch_sizes=None, **kw):
    h = hx if mode == "gru" else list(hx)
    if batch_sizes is not None:
        return fn.data(x, batch_sizes, h, params, True, num_layers, 0.0, False, bidirectional,
                       **kw)
    return fn.input(x, h, params, True, num_layers, 0.0, False, bidirectional, batch_first, **kw)


def _ops(ns, mode):
    if ns is ops:
        return getattr(ops, f"quantized_{mode}")
    return getattr(torch.ops.aten, f"quantized_{mode}")


def _states(mode, L, B, H, seed=1):
    g = torch.Generator().manual_seed(seed)
    h = torch.randn(L, B, H, generator=g) * 0.5
    return h if mode == "gru" else (h, torch.randn(L, B, H, generator=g) * 0.5)


CONFIGS = [dict(num_layers=1, bidirectional=False, batch_first=False),
           dict(num_layers=2, bidirectional=True, batch_first=False),
           dict(num_layers=2, bidirectional=False, batch_first=True)]


@requires_torch_ao
@pytest.mark.parametrize("mode", ["lstm", "gru"])
@pytest.mark.parametrize("kind", ["dynamic", "fp16"])
@pytest.mark.parametrize("cfg", CONFIGS)
def test_stacked_vs_torch(isa, mode, kind, cfg):
    I, H, T, B = 12, 16, 6, 3
    D = 2 if cfg["bidirectional"] else 1
    L = cfg["num_layers"]
    weights = _layers(mode, I, H, L, D)
    x = torch.randn(B, T, I) if cfg["batch_first"] else torch.randn(T, B, I)
    hx = _states(mode, L * D, B, H)
    kw = {} if mode == "gru" else {"dtype": torch.qint8 if kind == "dynamic" else torch.float16,
                                   "use_dynamic": True}
    ours = _run(_ops(ops, mode), mode, x, hx, _params(ops, kind, weights), L,
                cfg["bidirectional"], cfg["batch_first"], **kw)
    theirs = _run(_ops(torch.ops.quantized, mode), mode, x, hx,
                  _params(torch.ops.quantized, kind, weights), L, cfg["bidirectional"],
                  cfg["batch_first"], **kw)
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert o.shape == t.shape and o.dtype == torch.float32
        if kind == "fp16":
            torch.testing.assert_close(o, t)
        else:
            # int8: the same codes and exact accumulators; the hidden state feeds back, so a float
            # rounding that flips one activation code moves later steps by about a code's worth.
            torch.testing.assert_close(o, t, atol=1e-2, rtol=0)


@requires_torch_ao
@pytest.mark.parametrize("mode", ["lstm", "gru"])
@pytest.mark.parametrize("kind", ["dynamic", "fp16"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_stacked_packed_vs_torch(mode, kind, bidirectional):
    I, H, T, B, L = 8, 10, 6, 4, 2
    D = 2 if bidirectional else 1
    weights = _layers(mode, I, H, L, D, seed=5)
    x = torch.randn(B, T, I)
    packed = pack_padded_sequence(x, torch.tensor([6, 5, 3, 1]), batch_first=True)
    hx = _states(mode, L * D, B, H, seed=6)
    ours = _run(_ops(ops, mode), mode, packed.data, hx, _params(ops, kind, weights), L,
                bidirectional, batch_sizes=packed.batch_sizes)
    theirs = _run(_ops(torch.ops.quantized, mode), mode, packed.data, hx,
                  _params(torch.ops.quantized, kind, weights), L, bidirectional,
                  batch_sizes=packed.batch_sizes)
    for o, t in zip(ours, theirs):
        assert o.shape == t.shape
        if kind == "fp16":
            torch.testing.assert_close(o, t)
        else:
            torch.testing.assert_close(o, t, atol=1e-2, rtol=0)


def _exact_lstm(x, h, c, w, reduce_range):
    """One layer, forward, exact dynamic linears (the qint8 weights in w), PyTorch's cell math."""
    w_ih, b_ih, w_hh, b_hh = w
    outs = []
    for t in range(x.shape[0]):
        gates = linear_dynamic_exact(h, w_hh, b_hh, reduce_range).add_(
            linear_dynamic_exact(x[t], w_ih, b_ih, reduce_range))
        i, f, g, o = gates.unsafe_chunk(4, 1)
        c = (f.sigmoid() * c).add_(i.sigmoid() * g.tanh())
        h = o.sigmoid() * c.tanh()
        outs.append(h)
    return torch.stack(outs), h, c


def _exact_lstm_stepwise_input(x, h, c, w, reduce_range):
    """As _exact_lstm, but the input projection of all steps in one quantization (as the layer
    loop and PyTorch's CPU path)."""
    w_ih, b_ih, w_hh, b_hh = w
    ig = linear_dynamic_exact(x, w_ih, b_ih, reduce_range)
    outs = []
    for t in range(x.shape[0]):
        gates = linear_dynamic_exact(h, w_hh, b_hh, reduce_range).add_(ig[t])
        i, f, g, o = gates.unsafe_chunk(4, 1)
        c = (f.sigmoid() * c).add_(i.sigmoid() * g.tanh())
        h = o.sigmoid() * c.tanh()
        outs.append(h)
    return torch.stack(outs), h, c


@pytest.mark.parametrize("I,H,B,T", [(5, 4, 2, 3), (64, 33, 7, 5), (256, 512, 16, 4)])
def test_legacy_vs_exact(isa, I, H, B, T):
    """make_quantized_cell_params: float weights quantized inside, 8-bit activations."""
    w_ih, w_hh, b_ih, b_hh = _float_weights("lstm", I, H, seed=I)
    p = ops.make_quantized_cell_params(w_ih, w_hh, b_ih, b_hh)
    q_ih, qb_ih, q_hh, qb_hh = p.unpack()
    assert p.dtype() == "qint8" and p.reduce_range() is False
    assert torch.equal(qb_ih, b_ih) and torch.equal(qb_hh, b_hh)
    g = torch.Generator().manual_seed(T)
    x, h, c = (torch.randn(T, B, I, generator=g), torch.randn(1, B, H, generator=g),
               torch.randn(1, B, H, generator=g))
    out, hn, cn = ops.quantized_lstm(x, [h, c], [p], True, 1, 0.0, False, False, False)
    ref = _exact_lstm_stepwise_input(x, h[0], c[0], (q_ih, b_ih, q_hh, b_hh), False)
    torch.testing.assert_close(out, ref[0], atol=2e-6, rtol=1e-6)
    torch.testing.assert_close(hn[0], ref[1], atol=2e-6, rtol=1e-6)
    torch.testing.assert_close(cn[0], ref[2], atol=2e-6, rtol=1e-6)


def _max_pair_sum(x2d, qweight):
    """The largest |a[k] * w[k] + a[k+1] * w[k+1]| over the u8 activation codes a of x2d (8-bit
    dynamic qparams) and the s8 codes w: above 32767 AVX2's vpmaddubsw saturates."""
    mn, mx = float(x2d.min()), float(x2d.max())
    s, zp = choose_qparams(mn, mx, False)
    a = quantize_codes(x2d, s, zp, 255)
    w = qweight.int_repr().long()
    K = a.shape[1] - a.shape[1] % 2
    prod = a[:, None, :K] * w[None, :, :K]
    return int((prod[..., 0::2] + prod[..., 1::2]).abs().max())


@requires_torch_ao
@pytest.mark.parametrize("I,H,B,T", [(5, 4, 2, 3), (16, 8, 3, 2)])
def test_legacy_vs_torch(I, H, B, T):
    """Against torch.ops.quantized.make_quantized_cell_params + torch.quantized_lstm: the same
    weight codes, scale and zero point; the same outputs where torch cannot saturate."""
    w_ih, w_hh, b_ih, b_hh = _float_weights("lstm", I, H, seed=I + 1)
    p = ops.make_quantized_cell_params(w_ih, w_hh, b_ih, b_hh)
    tp = torch.ops.quantized.make_quantized_cell_params(w_ih, w_hh, b_ih, b_hh)
    # PyTorch's legacy state: ([w_ih codes, w_hh codes, b_ih, b_hh, col offsets x2],
    # [scale_ih, scale_hh], [zp_ih, zp_hh], []).
    tensors, scales, zps = tp.__getstate__()[0][1:4]
    q_ih, _, q_hh, _ = p.unpack()
    assert torch.equal(q_ih.int_repr(), tensors[0]) and torch.equal(q_hh.int_repr(), tensors[1])
    assert [q_ih.q_scale(), q_hh.q_scale()] == scales
    assert [q_ih.q_zero_point(), q_hh.q_zero_point()] == zps
    # Inputs torch's 8-bit path cannot saturate on (AVX2 vpmaddubsw adds u8 x s8 products in
    # pairs into int16): x, h >= 0 (zero point 0) with every odd column 0, so each pair sum is one
    # product, |a * w| <= 255 * 128 < 32768. The even columns span the whole code range.
    g = torch.Generator().manual_seed(7)
    x = torch.randn(1, B, I, generator=g).abs()
    h = torch.randn(1, B, H, generator=g).abs()
    c = torch.randn(1, B, H, generator=g)
    x[..., 1::2] = 0
    h[..., 1::2] = 0
    # One step: the operands torch quantizes are x and h themselves.
    assert _max_pair_sum(x[0], q_ih) <= 32767 and _max_pair_sum(h[0], q_hh) <= 32767
    ours = ops.quantized_lstm(x, [h, c], [p], True, 1, 0.0, False, False, False)
    theirs = torch.quantized_lstm(x, [h, c], [tp], True, 1, 0.0, False, False, False)
    for o, t in zip(ours, theirs):
        torch.testing.assert_close(o, t, atol=1e-6, rtol=1e-6)


def test_dynamic_params_hold_the_objects():
    w_ih, w_hh, b_ih, b_hh = _float_weights("gru", 6, 5, seed=2)
    p_ih, p_hh = ops.linear_prepack(_qint8(w_ih), b_ih), ops.linear_prepack(_qint8(w_hh), b_hh)
    p = ops.make_quantized_cell_params_dynamic(p_ih, p_hh, torch.empty(0), torch.empty(0))
    assert p.dtype() == "qint8" and p.reduce_range() is False  # the schema's default
    u = p.unpack()
    assert torch.equal(u[0].int_repr(), p_ih.unpack()[0].int_repr()) and torch.equal(u[1], b_ih)
    assert torch.equal(u[2].int_repr(), p_hh.unpack()[0].int_repr()) and torch.equal(u[3], b_hh)
    # The CellParams' layer equals the layer op on the same packed weights.
    x, h = torch.randn(4, 2, 6), torch.randn(1, 2, 5)
    out, hn = ops.quantized_gru(x, h, [p], True, 1, 0.0, False, False, False)
    ref_out, ref_h = ops.quantized_gru_layer_dynamic(x, None, h[0], p_ih, p_hh, False, False)
    assert torch.equal(out, ref_out) and torch.equal(hn[0], ref_h)
    f = ops.make_quantized_cell_params_fp16(ops.linear_prepack_fp16(w_ih, None),
                                            ops.linear_prepack_fp16(w_hh, b_hh))
    assert f.dtype() == "float16" and f.unpack()[1] is None
    assert torch.equal(f.unpack()[0], w_ih.half().float())


@pytest.mark.parametrize("kind", ["dynamic", "fp16", "legacy"])
def test_serialization(kind, tmp_path):
    """Pickled unpacked (torch.save, deepcopy, TorchScript save/load): the loaded params run the
    same."""
    import copy
    weights = _layers("lstm", 6, 5, 2, 1, seed=3)
    params = _params(ops, kind, weights)

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.params = params

        def forward(self, x: torch.Tensor, h: torch.Tensor, c: torch.Tensor):
            return torch.ops.qplugin.quantized_lstm(x, [h, c], self.params, True, 2, 0.0, False,
                                                    False, False)

    m = M()
    x, h, c = torch.randn(3, 2, 6), torch.randn(2, 2, 5), torch.randn(2, 2, 5)
    want = m(x, h, c)
    path = tmp_path / "m.pt"
    torch.jit.save(torch.jit.script(m), str(path))
    buf = io.BytesIO()
    torch.save(params, buf)
    buf.seek(0)
    for loaded in (torch.jit.load(str(path)), M()):
        if not isinstance(loaded, torch.jit.ScriptModule):
            loaded.params = torch.load(buf, weights_only=False)
        for o, r in zip(loaded(x, h, c), want):
            assert torch.equal(o, r)
    for a, b in zip(params, copy.deepcopy(params)):
        assert a == b and a.__getstate__() is not None
    assert not (params[0] == params[1])


def test_setstate_rejects_bad_states():
    p = _params(ops, "dynamic", _layers("gru", 4, 3, 1, 1))[0]
    (state, qualname) = p.__getstate__()
    bad = [((2,) + state[1:], "expected state version 1, got 2; the state was written by a newer"),
           (state[:6], "expected a version-1 state .* of 7 elements, got 6"),
           ((1, "int4") + state[2:], "expected the weight dtype 'qint8' or 'float16', got 'int4'"),
           (state[:6] + (1,), "expected reduce_range \\(a bool\\)")]
    for s, msg in bad:
        with pytest.raises(RuntimeError, match="qplugin::CellParams.__setstate__: " + msg):
            p._get_method("__setstate__")(s)


def test_bad_inputs():
    w_ih, w_hh, b_ih, b_hh = _float_weights("lstm", 6, 5, seed=4)
    mk = ops.make_quantized_cell_params
    with pytest.raises(RuntimeError, match="qplugin::make_quantized_cell_params: expected a "
                                           "float32 w_ih, got Double"):
        mk(w_ih.double(), w_hh, b_ih, b_hh)
    with pytest.raises(RuntimeError, match="qplugin::make_quantized_cell_params: expected a "
                                           "float32 w_hh, got QInt8"):
        mk(w_ih, _qint8(w_hh), b_ih, b_hh)
    with pytest.raises(RuntimeError, match=r"qplugin::make_quantized_cell_params: expected b_hh "
                                           r"of shape \[20\]"):
        mk(w_ih, w_hh, b_ih, b_hh[:3])
    with pytest.raises(RuntimeError, match="qplugin::make_quantized_cell_params: expected a "
                                           "finite w_ih, got nan"):
        mk(w_ih.clone().fill_(float("nan")), w_hh, b_ih, b_hh)
    with pytest.raises(RuntimeError, match="qplugin::make_quantized_cell_params: expected w_ih "
                                           "and w_hh with the same number of output features"):
        mk(w_ih[:8], w_hh, b_ih[:8], b_hh)
    p_ih, p_hh = ops.linear_prepack(_qint8(w_ih), b_ih), ops.linear_prepack(_qint8(w_hh), b_hh)
    with pytest.raises(RuntimeError, match="qplugin::make_quantized_cell_params_dynamic: "
                                           "expected w_ih and w_hh with the same number"):
        ops.make_quantized_cell_params_dynamic(
            p_ih, ops.linear_prepack(_qint8(w_hh[:15]), None), b_ih, b_hh)
    with pytest.raises(RuntimeError, match="qplugin::make_quantized_cell_params_fp16: "
                                           r"expected w_hh of shape \[gates x hidden_size"):
        ops.make_quantized_cell_params_fp16(ops.linear_prepack_fp16(w_ih[:14]),
                                            ops.linear_prepack_fp16(w_hh[:14, :3]))

    p = ops.make_quantized_cell_params_dynamic(p_ih, p_hh, b_ih, b_hh)
    x, h = torch.randn(3, 2, 6), torch.randn(1, 2, 5)
    lstm = ops.quantized_lstm

    def bad(match, *args, exc=RuntimeError, **kw):
        with pytest.raises(exc, match="qplugin::quantized_lstm: " + match):
            lstm(*args, **kw)

    bad("expected has_biases=True", x, [h, h], [p], False, 1, 0.0, False, False, False)
    bad("expected 2 CellParams", x, [h, h], [p], True, 1, 0.0, False, True, False)
    bad("expected 2 CellParams", x, [h, h], [p], True, 2, 0.0, False, False, False)
    bad("dropout in training mode is not supported", x, [h.expand(2, 2, 5)] * 2, [p, p], True,
        2, 0.5, True, False, False, exc=NotImplementedError)
    bad(r"expected hx = \[h0, c0\] \(2 tensors\), got 1", x, [h], [p], True, 1, 0.0, False,
        False, False)
    bad(r"expected h0 of shape \[1, batch, hidden_size\]", x, [h[0], h], [p], True, 1, 0.0,
        False, False, False)
    bad("expected dtype None, torch.int8, torch.qint8 or torch.float16, got Float", x, [h, h],
        [p], True, 1, 0.0, False, False, False, dtype=torch.float)
    bad("expected a 3-D input", x[0], [h, h], [p], True, 1, 0.0, False, False, False)
    bad("expected input_size 6 in the last dimension, got 7", torch.randn(3, 2, 7), [h, h], [p],
        True, 1, 0.0, False, False, False)
    bad(r"expected hidden state of shape \[2, 5\]", x, [torch.randn(1, 3, 5)] * 2, [p], True, 1,
        0.0, False, False, False)
    bad("expected a float32 input", x.double(), [h, h], [p], True, 1, 0.0, False, False, False)
    # A GRU's CellParams (3 gates) in an LSTM: the gate count is checked per layer.
    g = _params(ops, "dynamic", _layers("gru", 6, 5, 1, 1))
    bad(r"expected w_hh of shape \[20, 5\]", x, [h, h], g, True, 1, 0.0, False, False, False)
    with pytest.raises(RuntimeError, match="qplugin::quantized_gru: expected 1 CellParams"):
        ops.quantized_gru(x, h, g + g, True, 1, 0.0, False, False, False)


@pytest.mark.parametrize("mode", ["lstm", "gru"])
@pytest.mark.parametrize("data,batch_first", [(False, False), (False, True), (True, False)])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_fake(mode, data, bidirectional, batch_first):
    """The fake kernels give the real ops' shapes, strides and dtypes (FakeTensorMode over real
    CellParams) and raise the real checks."""
    I, H, T, B, L = 6, 5, 4, 3, 2
    D = 2 if bidirectional else 1
    params = _params(ops, "dynamic", _layers(mode, I, H, L, D, seed=8))
    x = torch.randn(B, T, I) if batch_first else torch.randn(T, B, I)
    bs = None
    if data:
        packed = pack_padded_sequence(x, torch.tensor([4, 3, 1]))
        x, bs = packed.data, packed.batch_sizes
    hx = _states(mode, L * D, B, H)
    real = _run(_ops(ops, mode), mode, x, hx, params, L, bidirectional, batch_first, bs)
    with FakeTensorMode() as fm:
        fhx = fm.from_tensor(hx) if mode == "gru" else tuple(fm.from_tensor(t) for t in hx)
        bs = None if bs is None else fm.from_tensor(bs)
        fake = _run(_ops(ops, mode), mode, fm.from_tensor(x), fhx, params, L, bidirectional,
                    batch_first, bs)
        with pytest.raises(RuntimeError, match=f"qplugin::quantized_{mode}: expected "
                                               f"{L * D} CellParams"):
            _run(_ops(ops, mode), mode, fm.from_tensor(x), fhx, params[:1], L, bidirectional,
                 batch_first, bs)
    assert len(fake) == len(real)
    for f, r in zip(fake, real):
        assert f.shape == r.shape and f.stride() == r.stride() and f.dtype == r.dtype


@pytest.mark.parametrize("mode", ["lstm", "gru"])
@pytest.mark.parametrize("data", [False, True])
@pytest.mark.parametrize("kind", ["dynamic", "fp16"])
def test_opcheck(mode, data, kind):
    """torch.library.opcheck (schema, FakeTensor, AOT dispatch, autograd registration) of the
    stacked ops over a 2-layer bidirectional stack."""
    I, H, T, B, L = 6, 5, 4, 3, 2
    params = _params(ops, kind, _layers(mode, I, H, L, 2, seed=9))
    x = torch.randn(T, B, I)
    h = torch.randn(L * 2, B, H)
    hx = h if mode == "gru" else [h, torch.randn_like(h)]
    packet = _ops(ops, mode)
    if data:
        packed = pack_padded_sequence(x, torch.tensor([4, 2, 2]))
        op, args = packet.data, (packed.data, packed.batch_sizes, hx, params, True, L, 0.0,
                                 False, True)
    else:
        op, args = packet.input, (x, hx, params, True, L, 0.0, False, True, False)
    torch.library.opcheck(op, args)
