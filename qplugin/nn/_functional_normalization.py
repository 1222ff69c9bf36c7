"""Functional forms of the quantized normalization ops, for qplugin.nn.functional to re-export
(torch.ao.nn.quantized.functional has none; these follow torch.nn.functional's argument order,
plus the output quantization parameters). Changes with: csrc/ops/normalization.cpp,
qplugin/nn/modules/normalization.py.

scale and zero_point are keyword-only and required: a normalized output's range has nothing to
do with the input's, so there is no sensible default.
"""
from typing import List, Optional

import torch
from torch import Tensor

__all__ = ["layer_norm", "group_norm", "instance_norm"]


def layer_norm(input: Tensor, normalized_shape: List[int], weight: Optional[Tensor] = None,
               bias: Optional[Tensor] = None, eps: float = 1e-5, *, scale: float,
               zero_point: int) -> Tensor:
    r"""Quantized layer normalization over the trailing ``normalized_shape`` dimensions.

    Args:
        input: quantized tensor (quint8, qint8 or qint32), per-tensor affine.
        normalized_shape: the trailing dimensions to normalize over.
        weight, bias: optional float tensors of shape ``normalized_shape``.
        eps: added to the variance.
        scale, zero_point: quantization parameters of the output.

    Returns:
        A contiguous quantized tensor of ``input``'s shape and dtype.
    """
    return torch.ops.qplugin.layer_norm(input, normalized_shape, weight, bias, eps, scale,
                                        zero_point)


def group_norm(input: Tensor, num_groups: int, weight: Optional[Tensor] = None,
               bias: Optional[Tensor] = None, eps: float = 1e-5, *, scale: float,
               zero_point: int) -> Tensor:
    r"""Quantized group normalization of an (N, C, *) input over ``num_groups`` channel groups.

    Args:
        input: quantized tensor (quint8, qint8 or qint32), per-tensor affine, at least 2-D.
        num_groups: number of groups; must divide C.
        weight, bias: optional float tensors of shape [C].
        eps: added to the variance.
        scale, zero_point: quantization parameters of the output.

    Returns:
        A quantized tensor of ``input``'s shape and dtype, channels-last if the input is.
    """
    return torch.ops.qplugin.group_norm(input, num_groups, weight, bias, eps, scale, zero_point)


def instance_norm(input: Tensor, weight: Optional[Tensor] = None, bias: Optional[Tensor] = None,
                  eps: float = 1e-5, *, scale: float, zero_point: int) -> Tensor:
    r"""Quantized instance normalization of an (N, C, L...) input (statistics per sample and
    channel; at least 3-D).

    Args:
        input: quantized tensor (quint8, qint8 or qint32), per-tensor affine.
        weight, bias: optional float tensors of shape [C].
        eps: added to the variance.
        scale, zero_point: quantization parameters of the output.

    Returns:
        A quantized tensor of ``input``'s shape and dtype, channels-last if the input is.
    """
    return torch.ops.qplugin.instance_norm(input, weight, bias, eps, scale, zero_point)
