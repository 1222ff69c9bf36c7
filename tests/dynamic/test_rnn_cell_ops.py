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
from _cells import (KINDS, MODULES, NGATES, call, check_bad_inputs, check_empty_batch,
                    check_module_runs_the_op, check_noncontiguous, check_steps, check_vs_reference,
                    check_vs_torch, hx as _hx, opname, ops, pairs, prepack, weights)
from _dyn_reference import linear_dynamic_exact


def _weights(kind, I, H, bias, per_channel=False, seed=0):
    def q(g, n, k):
        w = torch.randn(n, k, generator=g) * 0.3
        if per_channel:
            s = w.abs().amax(1).clamp_min(1e-3) / 127
            return torch.quantize_per_channel(w, s.double(), torch.zeros(n, dtype=torch.long), 0,
                                              torch.qint8)
        return torch.quantize_per_tensor(w, float(w.abs().max()) / 127, 0, torch.qint8)

    return weights(kind, I, H, bias, q, seed)


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


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("B,I,H", [(1, 5, 3), (4, 17, 8), (7, 64, 33)])
def test_cell_vs_exact(isa, kind, bias, per_channel, B, I, H):
    w = _weights(kind, I, H, bias, per_channel)
    check_vs_reference(kind, w, _exact, B, I, H, atol=2e-6, rtol=1e-6)


@requires_torch_ao
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("B,I,H", [(1, 5, 3), (4, 17, 8), (7, 64, 33)])
def test_cell_vs_torch(isa, kind, bias, per_channel, B, I, H):
    w = _weights(kind, I, H, bias, per_channel, seed=3)
    x = torch.randn(B, I, generator=torch.Generator().manual_seed(4)) * 2
    check_vs_torch(kind, x, _hx(kind, B, H, seed=5), w, atol=1e-5, rtol=1e-5)


@requires_torch_ao
@pytest.mark.parametrize("kind", KINDS)
def test_cell_vs_torch_steps(kind):
    """A few steps fed back, as a module would: errors must not grow apart from torch's."""
    I, H, B = 12, 10, 3
    w = _weights(kind, I, H, True, seed=6)
    check_steps(kind, w, I, H, B, steps=5, seed=7, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("kind", KINDS)
def test_cell_empty_batch(kind):
    check_empty_batch(kind, *prepack(ops, _weights(kind, 5, 4, True)), 5, 4)


@pytest.mark.parametrize("kind", KINDS)
def test_cell_noncontiguous(kind):
    check_noncontiguous(kind, *prepack(ops, _weights(kind, 6, 5, True)))


@pytest.mark.parametrize("kind", KINDS)
def test_cell_bad_inputs(kind):
    check_bad_inputs(kind, *prepack(ops, _weights(kind, 5, 4, True)))


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
    op = getattr(ops, opname(kind, fp16)).default
    torch.library.opcheck(op, _sample(kind, bias=bias, fp16=fp16),
                          test_utils=("test_schema", "test_faketensor",
                                      "test_aot_dispatch_dynamic"))


@pytest.mark.parametrize("fp16", [False, True], ids=["int8", "fp16"])
@pytest.mark.parametrize("kind", KINDS)
def test_fake_checks_match(kind, fp16):
    """The fake kernel raises on the same bad input, naming the op, and gives the real shapes."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    x, hx, p_ih, p_hh, b, b2 = _sample(kind, fp16=fp16)
    name = f"qplugin::{opname(kind, fp16)}"
    with FakeTensorMode() as mode:
        fx = mode.from_tensor(torch.randn(3, 6))
        fhx = [mode.from_tensor(t) for t in hx] if kind == "lstm" else mode.from_tensor(hx)
        b, b2 = mode.from_tensor(b), mode.from_tensor(b2)
        with pytest.raises(RuntimeError, match=name + r".*expected input of shape \[batch, 5\]"):
            call(ops, kind, fx, fhx, p_ih, p_hh, b, b2, fp16=fp16)
        out = call(ops, kind, mode.from_tensor(x), fhx, p_ih, p_hh, b, b2, fp16=fp16)
    for o, _ in pairs(out, out):
        assert o.shape == (3, 4) and o.dtype == torch.float32


@pytest.mark.parametrize("cls,kind", MODULES)
def test_int8_modules_run_the_ops(cls, kind, tmp_path):
    """qplugin.nn.dynamic's int8 cells are the op (eager, unbatched, TorchScript save/load)."""
    from qplugin.nn import dynamic as qnnd
    kw = {"nonlinearity": kind[4:]} if cls == "RNNCell" else {}
    check_module_runs_the_op(getattr(qnnd, cls)(7, 6, **kw), kind, tmp_path)
