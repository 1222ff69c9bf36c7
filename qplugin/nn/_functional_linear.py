"""qplugin.nn.functional.linear (≙ torch.ao.nn.quantized.functional.linear); re-exported by
qplugin/nn/functional.py. Changes with: csrc/ops/linear.cpp.
"""
import torch
from torch import Tensor

__all__ = ["linear"]


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None,
           scale: float | None = None, zero_point: int | None = None) -> Tensor:
    r"""Applies ``y = x A^T + b`` on quantized tensors: ``input`` quint8 ``(N, *, in_features)``,
    ``weight`` qint8 ``(out_features, in_features)`` (per tensor, or per channel along axis 0),
    ``bias`` fp32 ``(out_features)`` or None.

    The weight is packed on every call, like torch.ao.nn.quantized.functional.linear's. For
    repeated use pack it once (``torch.ops.qplugin.linear_prepack``) and call
    ``torch.ops.qplugin.linear``, or use :class:`qplugin.nn.Linear`.

    Args:
        input: quint8 tensor of shape ``(N, *, in_features)``.
        weight: qint8 tensor of shape ``(out_features, in_features)``.
        bias: float32 tensor of shape ``(out_features)``, or None.
        scale: output scale; defaults to the input's.
        zero_point: output zero point; defaults to the input's.

    Returns:
        A quint8 tensor of shape ``(N, *, out_features)``.
    """
    if scale is None:
        scale = input.q_scale()
    if zero_point is None:
        zero_point = input.q_zero_point()
    packed = torch.ops.qplugin.linear_prepack(weight, bias)
    return torch.ops.qplugin.linear(input, packed, scale, zero_point)
