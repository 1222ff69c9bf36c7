"""Functional linear (≙ torch.ao.nn.quantized.functional.linear), for qplugin.nn.functional to
re-export. TorchScript-compatible. Changes with: csrc/ops/linear.cpp,
qplugin/nn/modules/linear.py.
"""
from typing import Optional

import torch
from torch import Tensor

__all__ = ["linear"]


def linear(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
           scale: Optional[float] = None, zero_point: Optional[int] = None) -> Tensor:
    r"""Quantized :func:`~torch.nn.functional.linear`, ``y = x W^T + b`` (≙
    :func:`torch.ao.nn.quantized.functional.linear`).

    The weight is packed on every call, like PyTorch's functional form. For repeated use pack
    it once (``torch.ops.qplugin.linear_prepack``) and call ``torch.ops.qplugin.linear``, or use
    :class:`qplugin.nn.Linear`.

    Args:
        input: quint8 tensor of shape ``(N, *, in_features)``.
        weight: qint8 tensor of shape ``(out_features, in_features)``, quantized per tensor or
            per channel along dim 0.
        bias: float32 tensor of shape ``(out_features)``, or None.
        scale: output scale; default: the input's.
        zero_point: output zero point; default: the input's.

    Returns:
        A quint8 tensor of shape ``(N, *, out_features)``.
    """
    if not input.is_quantized:
        raise ValueError("qplugin.nn.functional.linear: expected a quantized input tensor"
                         " (torch.quint8), got a non-quantized tensor; quantize it first"
                         " (torch.quantize_per_tensor or qplugin.nn.Quantize)")
    if scale is None:
        scale = input.q_scale()
    if zero_point is None:
        zero_point = input.q_zero_point()
    packed = torch.ops.qplugin.linear_prepack(weight, bias)
    return torch.ops.qplugin.linear(input, packed, scale, zero_point)
