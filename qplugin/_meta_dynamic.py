"""Fake (meta) kernels of the dynamic ops (float in, float out), for FakeTensor tracing
(torch.compile / torch.export) and torch.library.opcheck: the output shape is the input's with
the last dimension replaced by out_features; the RNN layer ops return [T, B, H] (or packed rows)
and the last states; the dynamic convs return PyTorch's conv / transposed-conv output shape
(channels-last for 2-d/3-d, as the real kernel), the cell ops return the next hidden (and cell)
state [B, H] with the real kernel's checks (ops/cpu/rnn_dynamic_kernel.cpp cell_gates), read from
the packed object's
__obj_flatten__ view (the _fp16 cells the same on the fp16 class); the stacked-layer ops
quantized_lstm / quantized_gru (.input / .data) return [T, B, D * H] (or packed rows) and the
stacked last states, with the CellParams shapes checked layer by layer (qplugin/pt2/fake/packed.py: weight_shape, stride(), padding(),
output_padding(), dilation(), groups()). The linear packed-params objects are read through their
in_features() / out_features() methods, which a FakeScriptObject forwards to the real object.
Changes with: csrc/ops/linear_dynamic.cpp, csrc/ops/rnn_dynamic.cpp, csrc/ops/conv_dynamic.cpp
(schemas and checks).
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


def _conv_fake(op, dim, transposed):
    hint = {1: "(N, C, L)", 2: "(N, C, H, W)", 3: "(N, C, D, H, W)"}[dim]

    def fake(x, w, reduce_range=False):
        torch._check(x.dtype == torch.float32,
                     lambda: f"qplugin::{op}: expected a float32 input, got {x.dtype}")
        torch._check(x.dim() == dim + 2, lambda: f"qplugin::{op}: expected a {dim + 2}-D input "
                     f"{hint}, got {x.dim()}-D (shape {tuple(x.shape)})")
        # Shape and config from the packed object's __obj_flatten__ view (packed_view): a
        # FakeScriptObject under torch.export / torch.compile answers no unpack(), and a real
        # object (opcheck) gives the same view.
        from qplugin.pt2.fake.packed import packed_view
        w = packed_view(w)
        wshape = tuple(w.weight_shape)
        groups = int(w.groups())
        # The packed 1-d ops live on the 2-d class with H = 1: drop that leading spatial entry.
        drop = 1 if dim == 1 else 0
        k = list(wshape[2 + drop:])
        stride, padding = list(w.stride())[drop:], list(w.padding())[drop:]
        dilation, out_pad = list(w.dilation())[drop:], list(w.output_padding())[drop:]
        c_in = wshape[0] if transposed else wshape[1] * groups
        c_out = wshape[1] * groups if transposed else wshape[0]
        torch._check(x.shape[1] == c_in, lambda: f"qplugin::{op}: expected an input with "
                     f"{c_in} channels, got {x.shape[1]}")
        out = []
        for i in range(dim):
            n = x.shape[2 + i]
            if transposed:
                out.append((n - 1) * stride[i] - 2 * padding[i] + dilation[i] * (k[i] - 1)
                           + (out_pad[i] if out_pad else 0) + 1)
            else:
                out.append((n + 2 * padding[i] - dilation[i] * (k[i] - 1) - 1) // stride[i] + 1)
        if dim == 1:  # channels-last (N, C, 1, L) squeezed, as the real kernel (and PyTorch)
            return torch.empty((x.shape[0], c_out, 1, out[0]), dtype=torch.float32,
                               device=x.device, memory_format=torch.channels_last).squeeze(2)
        fmt = torch.channels_last if dim == 2 else torch.channels_last_3d
        return torch.empty((x.shape[0], c_out, *out), dtype=torch.float32, device=x.device,
                           memory_format=fmt)
    return fake


def _cell_fake(op, ngates):
    """The cell ops' checks (ops/cpu/rnn_dynamic_kernel.cpp cell_gates, same messages); shapes
    from the packed objects through packed_view (never unpack(): a FakeScriptObject has none)."""
    from qplugin.pt2.fake.packed import packed_view

    def check(x, h, c, w_ih, w_hh):
        w_ih, w_hh = packed_view(w_ih), packed_view(w_hh)
        I, Gi = int(w_ih.in_features()), int(w_ih.out_features())
        H, G = int(w_hh.in_features()), int(w_hh.out_features())
        torch._check(G == ngates * H, lambda: f"qplugin::{op}: expected w_hh of shape "
                     f"[{ngates * H}, {H}] ({ngates} x hidden_size, hidden_size), got [{G}, {H}]")
        torch._check(Gi == ngates * H, lambda: f"qplugin::{op}: expected w_ih with "
                     f"{ngates * H} output features ({ngates} x hidden_size), got {Gi}")
        torch._check(x.dtype == torch.float32,
                     lambda: f"qplugin::{op}: expected a float32 input, got {x.dtype}")
        torch._check(x.dim() == 2 and x.shape[1] == I, lambda: f"qplugin::{op}: expected input "
                     f"of shape [batch, {I}], got {list(x.shape)}; unsqueeze(0) an unbatched "
                     "input")
        B = x.shape[0]
        for s, what in ((h, "hidden state"), (c, "cell state")):
            if s is None:
                continue
            torch._check(s.dtype == torch.float32,
                         lambda: f"qplugin::{op}: expected a float32 {what}, got {s.dtype}")
            torch._check(s.dim() == 2 and s.shape[0] == B and s.shape[1] == H,
                         lambda: f"qplugin::{op}: expected {what} of shape [{B}, {H}], got "
                         f"{list(s.shape)}")
        return x.new_empty((B, H))
    return check


def _register():
    lib = torch.library
    for op in ("linear_dynamic", "linear_relu_dynamic", "linear_dynamic_fp16",
               "linear_relu_dynamic_fp16"):
        lib.register_fake(f"qplugin::{op}", _linear_fake(op))
    for dim in (1, 2, 3):
        for transposed in (False, True):
            op = f"conv_transpose{dim}d_dynamic" if transposed else f"conv{dim}d_dynamic"
            lib.register_fake(f"qplugin::{op}", _conv_fake(op, dim, transposed))

    def rnn_fake(x, batch_sizes, h0, *rest):
        H = h0.shape[1]
        rows = (x.shape[0], H) if batch_sizes is not None else (x.shape[0], x.shape[1], H)
        return x.new_empty(rows), h0.new_empty(h0.shape)

    def _lstm(x, batch_sizes, h0, c0, w_ih, w_hh, reverse=False, reduce_range=True):
        out, h = rnn_fake(x, batch_sizes, h0)
        return out, h, c0.new_empty(c0.shape)

    def _gru(x, batch_sizes, h0, w_ih, w_hh, reverse=False, reduce_range=True):
        return rnn_fake(x, batch_sizes, h0)

    # int8 and float16 layers: the same shapes (the fp16 forms have no reduce_range).
    for suffix in ("", "_fp16"):
        lib.register_fake(f"qplugin::quantized_lstm_layer_dynamic{suffix}")(_lstm)
        lib.register_fake(f"qplugin::quantized_gru_layer_dynamic{suffix}")(_gru)

    def register_lstm_cell(op):
        lstm_cell = _cell_fake(op, 4)

        @lib.register_fake(f"qplugin::{op}")
        def _lstm_cell(x, hx, w_ih, w_hh, bias_ih, bias_hh):
            torch._check(len(hx) == 2, lambda: f"qplugin::{op}: expected hx = [h, c] (2 tensors), "
                         f"got {len(hx)} tensors")
            return lstm_cell(x, hx[0], hx[1], w_ih, w_hh), hx[1].new_empty((x.shape[0],
                                                                             hx[1].shape[1]))

    register_lstm_cell("quantized_lstm_cell_dynamic")
    register_lstm_cell("quantized_lstm_cell_dynamic_fp16")

    for base, ngates in (("quantized_gru_cell_dynamic", 3), ("quantized_rnn_tanh_cell_dynamic", 1),
                         ("quantized_rnn_relu_cell_dynamic", 1)):
        for op in (base, base + "_fp16"):
            check = _cell_fake(op, ngates)

            def fake(x, hx, w_ih, w_hh, b_ih, b_hh, check=check):
                return check(x, hx, None, w_ih, w_hh)
            lib.register_fake(f"qplugin::{op}", fake)

    for lstm in (True, False):
        for data in (False, True):
            lib.register_fake(f"qplugin::quantized_{'lstm' if lstm else 'gru'}."
                              f"{'data' if data else 'input'}", _stacked_fake(lstm, data))


def _stacked_fake(lstm, data):
    """quantized_lstm / quantized_gru over CellParams (ops/cpu/rnn_dynamic_kernel.cpp stacked):
    the argument checks of the real kernel that the shapes need, same messages."""
    from qplugin.pt2.fake.packed import packed_view
    op = "quantized_lstm" if lstm else "quantized_gru"
    G = 4 if lstm else 3

    def fake(*args, dtype=None, use_dynamic=False):
        if data:
            x, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidir = args
            batch_first = False
        else:
            x, hx, params, has_biases, num_layers, dropout, train, bidir, batch_first = args
            batch_sizes = None
        if lstm:
            torch._check(len(hx) == 2, lambda: f"qplugin::{op}: expected hx = [h0, c0] "
                         f"(2 tensors), got {len(hx)} tensors")
            h0 = hx[0]
        else:
            h0 = hx
        torch._check(has_biases, lambda: f"qplugin::{op}: expected has_biases=True, got False")
        D = 2 if bidir else 1
        L = num_layers * D
        torch._check(len(params) == L, lambda: f"qplugin::{op}: expected {L} CellParams "
                     f"(num_layers x num_directions), got {len(params)}")
        torch._check(h0.dim() == 3 and h0.shape[0] == L, lambda: f"qplugin::{op}: expected h0 "
                     f"of shape [{L}, batch, hidden_size] (num_layers x num_directions first), "
                     f"got {list(h0.shape)}")
        torch._check(x.dtype == torch.float32,
                     lambda: f"qplugin::{op}: expected a float32 input, got {x.dtype}")
        H = h0.shape[2]
        in_size = x.shape[-1]
        for i in range(L):
            p = packed_view(params[i])
            (gi, k), (gh, kh) = p.w_ih_shape, p.w_hh_shape
            want_in = in_size if i < D else D * H
            torch._check(gh == G * H and kh == H, lambda: f"qplugin::{op}: expected w_hh of "
                         f"shape [{G * H}, {H}] (gates x hidden_size), got [{gh}, {kh}]")
            torch._check(gi == G * H, lambda: f"qplugin::{op}: expected w_ih with {G * H} "
                         f"output features (the gates), got {gi}")
            torch._check(k == want_in, lambda: f"qplugin::{op}: expected input_size {k} in "
                         f"the last dimension, got {want_in}")
        if data:
            out = x.new_empty((x.shape[0], D * H))
        else:
            T, B = (x.shape[1], x.shape[0]) if batch_first else (x.shape[0], x.shape[1])
            out = x.new_empty((T, B, D * H))
            if batch_first:
                out = out.transpose(0, 1)
        res = (out, h0.new_empty(h0.shape))
        if lstm:
            res = res + (hx[1].new_empty(hx[1].shape),)
        return res
    return fake


_register()
