"""Fake kernels of the conv `.plain` overloads (csrc/ops/conv.cpp): qx uint8 codes (N, C, [D,] H, W)
or (N, C, L) for the 1-d ops, result uint8 codes in channels-last layout (a 1-d result is the
channels-last 4-d result with H = 1 squeezed, strides included), as the real kernels
(packed/conv_packed_params.cpp apply, ops/quantized_cpu/conv_kernel.cpp). conv2d_add[_relu].plain
also takes qaccum (uint8 codes of the output's shape, any layout) and its qparams.
Changes with: csrc/packed/conv_packed_params.cpp (apply's checks and output sizes),
qplugin/pt2/routes/conv.py.
"""
import torch

from . import _util
from .packed import packed_view


def _out_size(op, w, i, n_in, spatial_in):
    """Output extent of spatial dim i (of the packed object's 2 or 3) for an input extent n_in."""
    k = w.weight_shape[2 + i]
    s, p, d, o = w.strides[i], w.paddings[i], w.dilations[i], w.output_paddings[i]
    span = d * (k - 1) + 1
    if w.transposed:
        out = 0 if n_in == 0 else (n_in - 1) * s + span + o - 2 * p
    else:
        out = (n_in + 2 * p - span) // s + 1 if n_in + 2 * p >= span else 0
    torch._check(out > 0 or n_in == 0, lambda: f"qplugin::{op}: expected the (dilated) kernel "
                 f"to fit in the padded input, got input shape {list(spatial_in)}, kernel {k}, "
                 f"padding {p}, dilation {d} (output size {out})")
    return out


def _conv_fake(name, spatial, transposed, one_d):
    op = f"{name}.plain"
    rank = 3 if one_d else spatial + 2

    def fake(qx, qx_scale, qx_zero_point, packed_weight, output_scale, output_zero_point):
        w = packed_view(packed_weight)
        torch._check(w.transposed == transposed, lambda: f"qplugin::{op}: expected packed "
                     "weights of a " + ("transposed conv (conv_transpose*_prepack)" if transposed
                                        else "conv (conv*_prepack)") + ", got " +
                     ("a transposed conv's" if w.transposed else "a conv's"))
        _util.check_codes(op, "qx", qx)
        _util.check_qparams(op, "qx", qx_scale, qx_zero_point, torch.uint8)
        torch._check(qx.dim() == rank, lambda: f"qplugin::{op}: expected a {rank}-D input, got "
                     f"{qx.dim()}-D (shape {list(qx.shape)})")
        x = qx.unsqueeze(2) if one_d else qx
        n_sp = len(w.strides)  # 2 (Conv2dPackedParams, also 1-d) or 3
        torch._check(x.dim() == n_sp + 2, lambda: f"qplugin::{op}: expected a {n_sp + 2}-D input")
        torch._check(x.shape[1] == w.in_channels(), lambda: f"qplugin::{op}: expected input with "
                     f"{w.in_channels()} channels (dim 1), got {x.shape[1]}")
        _util.check_output_qparams(op, output_scale, output_zero_point)
        sp = list(x.shape[2:])
        out = [x.shape[0], w.out_channels()] + [_out_size(op, w, i, sp[i], sp)
                                               for i in range(n_sp)]
        mf = torch.channels_last_3d if n_sp == 3 else torch.channels_last
        y = torch.empty(out, dtype=torch.uint8, device=qx.device, memory_format=mf)
        return y.squeeze(2) if one_d else y
    return fake


_OPS = [  # (name, spatial of the packed class, transposed, 1-d)
    ("conv1d", 2, False, True), ("conv1d_relu", 2, False, True),
    ("conv2d", 2, False, False), ("conv2d_relu", 2, False, False),
    ("conv3d", 3, False, False), ("conv3d_relu", 3, False, False),
    ("conv_transpose1d", 2, True, True), ("conv_transpose2d", 2, True, False),
    ("conv_transpose3d", 3, True, False),
]
for _name, _sp, _tr, _1d in _OPS:
    _util.register(f"qplugin::{_name}.plain", _conv_fake(_name, _sp, _tr, _1d))


def _conv_add_fake(name):
    """conv2d_add[_relu].plain: the checks of conv_kernel.cpp's conv2d_add_core that need no data,
    in its order; result [N, C_out, OH, OW] uint8, channels last."""
    op = f"{name}.plain"

    def fake(qx, qx_scale, qx_zero_point, qaccum, qaccum_scale, qaccum_zero_point,
             packed_weight, output_scale, output_zero_point):
        w = packed_view(packed_weight)
        torch._check(not w.transposed, lambda: f"qplugin::{op}: expected packed weights of a "
                     "conv (conv*_prepack), got a transposed conv's")
        _util.check_codes(op, "qx", qx)
        _util.check_qparams(op, "qx", qx_scale, qx_zero_point, torch.uint8)
        _util.check_codes(op, "qaccum", qaccum)
        _util.check_qparams(op, "qaccum", qaccum_scale, qaccum_zero_point, torch.uint8)
        torch._check(qx.dim() == 4, lambda: f"qplugin::{op}: expected a 4-D input qx (N, C, H, "
                     f"W), got {qx.dim()}-D (shape {list(qx.shape)})")
        _util.check_output_qparams(op, output_scale, output_zero_point)
        cin = w.in_channels()
        torch._check(qx.shape[1] == cin, lambda: f"qplugin::{op}: expected an input with {cin} "
                     f"channels (the weight's in_channels), got {qx.shape[1]} (input shape "
                     f"{list(qx.shape)})")
        n, _, h, wd = qx.shape
        kh, kw = w.weight_shape[2], w.weight_shape[3]
        (sh, sw), (ph, pw), (dh, dw) = w.strides, w.paddings, w.dilations
        rh, rw = h + 2 * ph - dh * (kh - 1) - 1, wd + 2 * pw - dw * (kw - 1) - 1
        torch._check(rh >= 0 and rw >= 0, lambda: f"qplugin::{op}: expected an input at least "
                     f"as large as the dilated kernel after padding, got input {h}x{wd}, kernel "
                     f"{kh}x{kw}, padding {ph}x{pw}, dilation {dh}x{dw}")
        out = [n, w.out_channels(), rh // sh + 1, rw // sw + 1]
        torch._check(qaccum.dim() == 4, lambda: f"qplugin::{op}: expected qaccum of the output's "
                     f"shape {out}, got {list(qaccum.shape)}")
        for i in range(4):
            torch._check(qaccum.shape[i] == out[i], lambda: f"qplugin::{op}: expected qaccum of "
                         f"the output's shape {out}, got {list(qaccum.shape)}")
        return torch.empty(out, dtype=torch.uint8, device=qx.device,
                           memory_format=torch.channels_last)
    return fake


for _name in ("conv2d_add", "conv2d_add_relu"):
    _util.register(f"qplugin::{_name}.plain", _conv_add_fake(_name))
