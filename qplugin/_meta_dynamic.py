"""Fake (meta) kernels of the dynamic ops (float in, float out), for FakeTensor tracing
(torch.compile / torch.export) and torch.library.opcheck: the output shape is the input's with
the last dimension replaced by out_features; the RNN layer ops return [T, B, H] (or packed rows)
and the last states. The packed-params objects are read through their in_features() /
out_features() methods, which a FakeScriptObject forwards to the real object.
Changes with: csrc/ops/linear_dynamic.cpp, csrc/ops/rnn_dynamic.cpp (schemas and checks).
"""
import torch

__all__ = []


def _features(w):
    return int(w.in_features()), int(w.out_features())


def _linear_fake(op):
    def fake(x, w, *args):
        K, N = _features(w)
        torch._check(x.dtype == torch.float32,
                     lambda: f"qplugin::{op}: expected a float32 input, got {x.dtype}")
        torch._check(x.dim() >= 2, lambda: f"qplugin::{op}: expected input of rank >= 2 "
                     f"(batch, ..., in_features), got {x.dim()}-D")
        torch._check(x.shape[-1] == K, lambda: f"qplugin::{op}: expected input with "
                     f"in_features = {K} in its last dimension, got {x.shape[-1]}")
        return x.new_empty((*x.shape[:-1], N))
    return fake


def _register():
    lib = torch.library
    for op in ("linear_dynamic", "linear_relu_dynamic", "linear_dynamic_fp16",
               "linear_relu_dynamic_fp16"):
        lib.register_fake(f"qplugin::{op}", _linear_fake(op))

    def rnn_fake(x, batch_sizes, h0, *rest):
        H = h0.shape[1]
        rows = (x.shape[0], H) if batch_sizes is not None else (x.shape[0], x.shape[1], H)
        return x.new_empty(rows), h0.new_empty(h0.shape)

    @lib.register_fake("qplugin::quantized_lstm_layer_dynamic")
    def _lstm(x, batch_sizes, h0, c0, w_ih, w_hh, reverse=False, reduce_range=True):
        out, h = rnn_fake(x, batch_sizes, h0)
        return out, h, c0.new_empty(c0.shape)

    @lib.register_fake("qplugin::quantized_gru_layer_dynamic")
    def _gru(x, batch_sizes, h0, w_ih, w_hh, reverse=False, reduce_range=True):
        return rnn_fake(x, batch_sizes, h0)


_register()
