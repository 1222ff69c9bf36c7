"""Functional conv1d/conv2d/conv3d (≙ torch.ao.nn.quantized.functional.conv*d), for
qplugin.nn.functional to re-export. The weight is packed on every call, like PyTorch's; for
repeated use pack once (torch.ops.qplugin.conv2d_prepack) or use qplugin.nn.Conv2d.
Extension: padding_mode 'reflect', 'replicate', 'circular' (exact: copies quantized values).
Changes with: csrc/ops/conv.cpp, qplugin/nn/modules/conv.py.
"""
from typing import Optional

import torch
from torch import Tensor
from torch.nn.modules.utils import _pair, _single, _triple

from qplugin.nn.modules.conv import _pad_quantized, _reverse_repeat_padding

__all__ = ["conv1d", "conv2d", "conv3d"]


def _check(name: str, input: Tensor, weight: Tensor, dim: int, padding_mode: str, dtype):
    if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
        raise ValueError(f"qplugin.nn.functional.{name}: expected padding_mode 'zeros', 'reflect',"
                         f" 'replicate' or 'circular', got {padding_mode!r}")
    if dtype != torch.quint8:
        raise ValueError(f"qplugin.nn.functional.{name}: expected dtype torch.quint8, got {dtype}")
    if not input.is_quantized or input.dtype != torch.quint8:
        raise ValueError(f"qplugin.nn.functional.{name}: expected a torch.quint8 input, got "
                         f"{input.dtype}")
    if not weight.is_quantized or weight.dtype != torch.qint8:
        raise ValueError(f"qplugin.nn.functional.{name}: expected a torch.qint8 weight, got "
                         f"{weight.dtype}")
    if input.dim() != dim + 2:
        raise ValueError(f"qplugin.nn.functional.{name}: expected a {dim + 2}-D input, got "
                         f"{input.dim()}-D")


def _make_conv(dim: int, doc: str):
    """The public conv{dim}d: checks, the non-'zeros' padding of the codes, prepack and run."""
    name = f"conv{dim}d"
    ntuple = (_single, _pair, _triple)[dim - 1]

    def conv(input: Tensor, weight: Tensor, bias: Optional[Tensor], stride=1, padding=0,
             dilation=1, groups: int = 1, padding_mode: str = "zeros", scale: float = 1.0,
             zero_point: int = 0, dtype=torch.quint8) -> Tensor:
        _check(name, input, weight, dim, padding_mode, dtype)
        stride, padding, dilation = ntuple(stride), ntuple(padding), ntuple(dilation)
        if padding_mode != "zeros":
            input = _pad_quantized(input, _reverse_repeat_padding(list(padding)), padding_mode)
            padding = ntuple(0)
        ops = torch.ops.qplugin
        packed = getattr(ops, f"{name}_prepack")(weight, bias, stride, padding, dilation, groups)
        return getattr(ops, name)(input, packed, scale, zero_point)

    conv.__name__ = conv.__qualname__ = name
    conv.__doc__ = doc
    return conv


conv1d = _make_conv(1, r"""Quantized 1-d conv over (N, C, L) quint8 input with a
    (C_out, C_in/groups, k) qint8 weight and fp32 bias; output quint8 with
    ``scale``/``zero_point``. Packs per call.""")
conv2d = _make_conv(2, r"""Quantized 2-d conv (≙ torch.ao.nn.quantized.functional.conv2d).
    Packs per call.""")
conv3d = _make_conv(3, r"""Quantized 3-d conv (≙ torch.ao.nn.quantized.functional.conv3d).
    Packs per call.""")
