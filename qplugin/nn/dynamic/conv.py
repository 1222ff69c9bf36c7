"""qplugin.nn.dynamic.Conv1d/2d/3d and ConvTranspose1d/2d/3d (≙ torch.ao.nn.quantized.dynamic
Conv*): float input and output, the weight quantized once (qint8, per tensor or per channel), the
input quantized per call by torch.ops.qplugin.conv*_dynamic (reduce_range=True by default, as
torch.ao's forward).

They are qplugin.nn's static convs (constructor, state dict, TorchScript state, pickling, repr)
with a float forward, as torch.ao's are nnq's. Numerics are PyTorch's: the conv result is
requantized with the *input's* per-call scale and zero point before it is returned as float, so
it is clamped to the input's range and rounded to its step (PyTorch warns of "poor numerical
accuracy" for these modules; qplugin reproduces the numerics, not the warning).

Changes with: csrc/ops/conv_dynamic.cpp (schemas), csrc/ops/cpu/conv_dynamic_kernel.cpp,
qplugin/nn/modules/conv.py (the base classes), qplugin/quantization/_dynamic.py (migration),
tests/dynamic/test_conv_dynamic.py.
The state-dict layout is torch.ao's (version 3: weight, bias, scale, zero_point), so checkpoints
load both ways.
"""
from typing import List

import torch
import torch.nn.functional as F

from qplugin.nn.modules import conv as _conv
from qplugin.nn.modules.conv import _quantize_conv_weight, _reverse_repeat_padding
from qplugin.nn.modules.utils import _dynamic_weight_observer, _plain_op_call

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]


def _dynamic_from_float(cls, mod, use_precomputed_fake_quant, transposed):
    """torch.ao's nnq._ConvNd / _ConvTransposeNd.from_float for a dynamic qconfig: an exact
    float module with a qconfig (its weight observer; None: the default dynamic qconfig), no
    activation observer needed (scale/zero_point stay 1.0/0 unless one with a quantized dtype is
    attached, as torch.ao)."""
    ft = cls._FLOAT_MODULE
    where = f"qplugin.nn.dynamic.{cls.__name__}.from_float"
    if hasattr(mod, "weight_fake_quant"):  # a QAT module (torch.ao takes these too)
        wpp = mod.weight_fake_quant
    else:
        if type(mod) is not ft:
            raise TypeError(f"{where}: expected {ft.__module__}.{ft.__name__}, got "
                            f"{type(mod).__name__}")
        if not hasattr(mod, "qconfig"):
            raise ValueError(f"{where}: expected a module with a qconfig (e.g. "
                             "qplugin.quantization.default_dynamic_qconfig)")
        wpp = _dynamic_weight_observer(mod.qconfig)()
    if not use_precomputed_fake_quant:
        wpp(mod.weight)
    if wpp.dtype != torch.qint8:
        raise ValueError(f"{where}: expected a weight observer of dtype torch.qint8 (dynamic "
                         f"convs have no float16 form, as in torch.ao), got {wpp.dtype}")
    qweight = _quantize_conv_weight(mod.weight.float(), wpp, 1 if transposed else 0)
    bias = None if mod.bias is None else mod.bias.detach().float()
    q = cls._like(mod)
    q.set_weight_bias(qweight, bias)
    app = getattr(mod, "activation_post_process", None)
    if app is not None and getattr(app, "dtype", torch.float) != torch.float:
        s, z = app.calculate_qparams()
        q.scale = float(s)
        q.zero_point = int(z)
    return q


def _check_rank(where: str, input: torch.Tensor, rank: int, shape: str) -> None:
    if len(input.shape) != rank:
        raise ValueError(f"qplugin.nn.dynamic.{where}: expected a {rank}-D input {shape}, got "
                         f"{len(input.shape)}-D")


def _checked_padded(where: str, input: torch.Tensor, rank: int, shape: str,
                    padding: List[int], padding_mode: str) -> torch.Tensor:
    """The rank check and the non-'zeros' padding (of the float input) of Conv1d/2d/3d.forward."""
    _check_rank(where, input, rank, shape)
    if padding_mode != "zeros":
        input = F.pad(input, _reverse_repeat_padding(padding), mode=padding_mode)
    return input


class _DynamicConv:
    """_get_name and from_float of the dynamic convs, mixed in before qplugin.nn's static conv
    class (whose constructor, state and TorchScript state they keep); the forwards stay written
    out per class, for TorchScript's literal op names."""

    _TRANSPOSED = False

    def _get_name(self):
        return "DynamicQuantized" + self._NAME

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        r"""From a float ``nn.Conv{1,2,3}d`` / ``nn.ConvTranspose{1,2,3}d`` with a dynamic qconfig
        (per tensor or per channel)."""
        return _dynamic_from_float(cls, mod, use_precomputed_fake_quant, cls._TRANSPOSED)


class _DynamicConvTranspose(_DynamicConv):
    _TRANSPOSED = True


class Conv1d(_DynamicConv, _conv.Conv1d):
    r"""Dynamically quantized 1-d conv (≙ torch.ao.nn.quantized.dynamic.Conv1d): float
    (N, C, L) in and out; ``reduce_range`` (constructor) is accepted and ignored, as torch.ao."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None,
                 reduce_range=True):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode)

    def forward(self, input: torch.Tensor, reduce_range: bool = True) -> torch.Tensor:
        input = _checked_padded("Conv1d", input, 3, "(N, C, L)", list(self.padding[:1]),
                                self.padding_mode)
        if torch.jit.is_scripting():
            return torch.ops.qplugin.conv1d_dynamic(input, self._packed_params, reduce_range)
        return _plain_op_call(torch.ops.qplugin.conv1d_dynamic.default,
                              (input, self._packed_params, reduce_range))


class Conv2d(_DynamicConv, _conv.Conv2d):
    r"""Dynamically quantized 2-d conv (≙ torch.ao.nn.quantized.dynamic.Conv2d): float
    (N, C, H, W) in, float out (channels-last, as torch.ao's)."""

    def forward(self, input: torch.Tensor, reduce_range: bool = True) -> torch.Tensor:
        input = _checked_padded("Conv2d", input, 4, "(N, C, H, W)", list(self.padding),
                                self.padding_mode)
        if torch.jit.is_scripting():
            return torch.ops.qplugin.conv2d_dynamic(input, self._packed_params, reduce_range)
        return _plain_op_call(torch.ops.qplugin.conv2d_dynamic.default,
                              (input, self._packed_params, reduce_range))


class Conv3d(_DynamicConv, _conv.Conv3d):
    r"""Dynamically quantized 3-d conv (≙ torch.ao.nn.quantized.dynamic.Conv3d): float
    (N, C, D, H, W) in, float out (channels-last-3d, as torch.ao's)."""

    def forward(self, input: torch.Tensor, reduce_range: bool = True) -> torch.Tensor:
        input = _checked_padded("Conv3d", input, 5, "(N, C, D, H, W)", list(self.padding),
                                self.padding_mode)
        if torch.jit.is_scripting():
            return torch.ops.qplugin.conv3d_dynamic(input, self._packed_params, reduce_range)
        return _plain_op_call(torch.ops.qplugin.conv3d_dynamic.default,
                              (input, self._packed_params, reduce_range))


class ConvTranspose1d(_DynamicConvTranspose, _conv.ConvTranspose1d):
    r"""Dynamically quantized transposed 1-d conv (≙ torch.ao.nn.quantized.dynamic
    .ConvTranspose1d): float (N, C, L) in and out; per-channel weights along axis 1."""

    def forward(self, input: torch.Tensor, reduce_range: bool = True) -> torch.Tensor:
        _check_rank("ConvTranspose1d", input, 3, "(N, C, L)")
        if torch.jit.is_scripting():
            return torch.ops.qplugin.conv_transpose1d_dynamic(input, self._packed_params,
                                                              reduce_range)
        return _plain_op_call(torch.ops.qplugin.conv_transpose1d_dynamic.default,
                              (input, self._packed_params, reduce_range))


class ConvTranspose2d(_DynamicConvTranspose, _conv.ConvTranspose2d):
    r"""Dynamically quantized transposed 2-d conv (≙ torch.ao.nn.quantized.dynamic
    .ConvTranspose2d): float (N, C, H, W) in, float out (channels-last)."""

    def forward(self, input: torch.Tensor, reduce_range: bool = True) -> torch.Tensor:
        _check_rank("ConvTranspose2d", input, 4, "(N, C, H, W)")
        if torch.jit.is_scripting():
            return torch.ops.qplugin.conv_transpose2d_dynamic(input, self._packed_params,
                                                              reduce_range)
        return _plain_op_call(torch.ops.qplugin.conv_transpose2d_dynamic.default,
                              (input, self._packed_params, reduce_range))


class ConvTranspose3d(_DynamicConvTranspose, _conv.ConvTranspose3d):
    r"""Dynamically quantized transposed 3-d conv (≙ torch.ao.nn.quantized.dynamic
    .ConvTranspose3d): float (N, C, T, H, W) in, float out (channels-last-3d)."""

    def forward(self, input: torch.Tensor, reduce_range: bool = True) -> torch.Tensor:
        _check_rank("ConvTranspose3d", input, 5, "(N, C, T, H, W)")
        if torch.jit.is_scripting():
            return torch.ops.qplugin.conv_transpose3d_dynamic(input, self._packed_params,
                                                              reduce_range)
        return _plain_op_call(torch.ops.qplugin.conv_transpose3d_dynamic.default,
                              (input, self._packed_params, reduce_range))
