r"""Functional interface of qplugin.nn (≙ torch.ao.nn.quantized.functional) on torch.ops.qplugin.

Same names, arguments and checks as PyTorch's; ``relu6`` is a qplugin extension (PyTorch has no
quantized functional relu6). All functions are TorchScript-compatible. Changes with:
qplugin/ops.py, qplugin/nn/modules/activation.py.
"""
from typing import List

import torch
from torch import Tensor

__all__: List[str] = [
    "hardswish", "elu", "relu6", "layer_norm", "group_norm", "instance_norm",
    "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool2d",
    "interpolate", "upsample", "upsample_bilinear", "upsample_nearest",
    "linear", "conv1d", "conv2d", "conv3d",
    "hardsigmoid", "hardtanh", "leaky_relu", "celu", "threshold", "clamp", "sigmoid", "tanh",
    "gelu", "silu", "mish", "softplus", "softmax",
]

# The non-quantized input check is in Python (ValueError, as PyTorch's functional); everything
# else (dtype, qscheme, qparams) is checked by the op ("qplugin::<op>: expected ...").


def hardswish(input: Tensor, scale: float, zero_point: int) -> Tensor:
    r"""Quantized :func:`~torch.nn.functional.hardswish` (≙
    :func:`torch.ao.nn.quantized.functional.hardswish`).

    Args:
        input: quantized input (torch.quint8, torch.qint8 or torch.qint32)
        scale: quantization scale of the output tensor
        zero_point: quantization zero point of the output tensor

    Returns:
        The quantized output, same shape and dtype as the input.
    """
    if not input.is_quantized:
        raise ValueError("qplugin.nn.functional.hardswish: expected a quantized input tensor"
                         " (torch.quint8, torch.qint8 or torch.qint32), got a non-quantized"
                         " tensor; quantize it first (torch.quantize_per_tensor or"
                         " qplugin.nn.Quantize)")
    return torch.ops.qplugin.hardswish(input, scale, zero_point)


def elu(input: Tensor, scale: float, zero_point: int, alpha: float = 1.0) -> Tensor:
    r"""Quantized :func:`~torch.nn.functional.elu` (≙
    :func:`torch.ao.nn.quantized.functional.elu`).

    Args:
        input: quantized input (torch.quint8, torch.qint8 or torch.qint32)
        scale: quantization scale of the output tensor
        zero_point: quantization zero point of the output tensor
        alpha: the alpha constant. Default: 1.0

    Returns:
        The quantized output, same shape and dtype as the input (contiguous).
    """
    if not input.is_quantized:
        raise ValueError("qplugin.nn.functional.elu: expected a quantized input tensor"
                         " (torch.quint8, torch.qint8 or torch.qint32), got a non-quantized"
                         " tensor; quantize it first (torch.quantize_per_tensor or"
                         " qplugin.nn.Quantize)")
    return torch.ops.qplugin.elu(input, scale, zero_point, alpha)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    r"""Quantized :func:`~torch.nn.functional.relu6`: ``min(max(q, zero_point), q(6))``, keeping
    the input's qparams. A qplugin extension (torch.ao.nn.quantized.functional has no relu6;
    PyTorch users call ``torch.ops.quantized.relu6`` or ``torch.nn.functional.relu6``).

    Args:
        input: quantized input (torch.quint8, torch.qint8 or torch.qint32)
        inplace: write the result into ``input`` and return it. Default: ``False``

    Returns:
        The quantized output with the input's shape, dtype, scale and zero point.
    """
    if not input.is_quantized:
        raise ValueError("qplugin.nn.functional.relu6: expected a quantized input tensor"
                         " (torch.quint8, torch.qint8 or torch.qint32), got a non-quantized"
                         " tensor; quantize it first (torch.quantize_per_tensor or"
                         " qplugin.nn.Quantize)")
    return torch.ops.qplugin.relu6(input, inplace)


from ._functional_norm import group_norm, instance_norm, layer_norm  # noqa: E402,F401
from ._functional_pool import (  # noqa: E402,F401
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_avg_pool3d,
    adaptive_max_pool2d,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    interpolate,
    max_pool1d,
    max_pool2d,
    max_pool3d,
    upsample,
    upsample_bilinear,
    upsample_nearest,
)
from ._functional_linear import linear  # noqa: E402,F401
from ._functional_conv import conv1d, conv2d, conv3d  # noqa: E402,F401
from ._functional_elementwise import (  # noqa: E402,F401
    celu,
    clamp,
    gelu,
    hardsigmoid,
    hardtanh,
    leaky_relu,
    mish,
    sigmoid,
    silu,
    softmax,
    softplus,
    tanh,
    threshold,
)
