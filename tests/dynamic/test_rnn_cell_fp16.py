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
from _cells import (KINDS, MODULES, call, check_bad_inputs, check_empty_batch,
                    check_module_runs_the_op, check_noncontiguous, check_steps, check_vs_reference,
                    check_vs_torch, hx as _hx, ops, pairs, prepack, weights)


def _weights(kind, I, H, bias, seed=0):
    """Weights of torch.nn's scale (std ~ 1 / sqrt(fan_in)): gate sums of order 1."""
    return weights(kind, I, H, bias, lambda g, n, k: torch.randn(n, k, generator=g) / k ** 0.5,
                   seed)


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
    check_vs_reference(kind, w, _f64_reference, B, I, H, fp16=True, atol=2e-5, rtol=1e-5)


@requires_torch_ao
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("B,I,H", SHAPES)
def test_cell_fp16_vs_torch(kind, bias, B, I, H):
    # Weights beyond the fp16 range in a few places: both saturate them to +-65504.
    w = list(_weights(kind, I, H, bias, seed=3))
    w[0][0, 0], w[2][-1, -1] = 1e6, -7e4  # x[:, 0] is ~1e-5, h[:, -1] is zeroed below
    x = torch.randn(B, I, generator=torch.Generator().manual_seed(4)) * 1e-5
    x[:, 1:] = torch.randn(B, I - 1, generator=torch.Generator().manual_seed(5))
    hx = _hx(kind, B, H, seed=6)
    (hx[0] if kind == "lstm" else hx)[:, -1] = 1e-6
    check_vs_torch(kind, x, hx, w, fp16=True)


@requires_torch_ao
@pytest.mark.parametrize("kind", KINDS)
def test_cell_fp16_vs_torch_steps(kind):
    """Steps fed back, as a module would: the results must not drift apart from torch's."""
    I, H, B = 12, 10, 3
    w = _weights(kind, I, H, True, seed=7)
    check_steps(kind, w, I, H, B, steps=8, seed=8, fp16=True)


@pytest.mark.parametrize("kind", KINDS)
def test_cell_fp16_empty_and_noncontiguous(kind):
    w = _weights(kind, 6, 5, True)
    p_ih, p_hh = prepack(ops, w, fp16=True)
    check_empty_batch(kind, p_ih, p_hh, 6, 5, fp16=True)
    check_noncontiguous(kind, p_ih, p_hh, fp16=True)


@pytest.mark.parametrize("kind", KINDS)
def test_cell_fp16_bad_inputs(kind):
    w = _weights(kind, 5, 4, True)
    p_ih, p_hh = prepack(ops, w, fp16=True)
    check_bad_inputs(kind, p_ih, p_hh, fp16=True)
    # int8 packed weights are the other op's: the class is part of the schema.
    q = ops.linear_prepack(torch.quantize_per_tensor(w[0], 0.05, 0, torch.qint8), w[1])
    with pytest.raises(RuntimeError, match="LinearPackedParams"):
        call(ops, kind, torch.randn(3, 5), _hx(kind, 3, 4), q, p_hh, fp16=True)


# opcheck and the fake kernels' checks of the _fp16 ops: test_rnn_cell_ops.py (parametrized
# over int8 and float16 packed weights).


@pytest.mark.parametrize("cls,kind", MODULES)
def test_fp16_modules_run_the_ops(cls, kind, tmp_path):
    """qplugin.nn.dynamic's float16 cells are the _fp16 ops (eager, unbatched, TorchScript)."""
    from qplugin.nn import dynamic as qnnd
    kw = {"nonlinearity": kind[4:]} if cls == "RNNCell" else {}
    check_module_runs_the_op(getattr(qnnd, cls)(7, 6, dtype=torch.float16, **kw), kind,
                             tmp_path, fp16=True)


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
        for o, r in pairs(q(x, hx), t(x, hx)):
            torch.testing.assert_close(o, r)
        for o, r in pairs(q(x), t(x)):  # hx None
            torch.testing.assert_close(o, r)
