"""Functional forms of the pooling ops (re-exported by qplugin.nn.functional; resampling:
_functional_upsample.py).

Mirrors torch.ao.nn.quantized.functional (max_pool1d, max_pool2d, avg_pool2d, avg_pool3d,
adaptive_avg_pool2d, adaptive_avg_pool3d: same signatures, defaults and errors) and adds the
extensions PyTorch lacks in that module or for quantized tensors: max_pool3d, avg_pool1d,
adaptive_avg_pool1d, adaptive_max_pool2d. Input quantization parameters propagate to the output.
Every function calls torch.ops.qplugin only. Changes with: csrc/ops/pooling.cpp.
"""
from typing import List

import torch
from torch import Tensor

__all__ = [
    "max_pool1d", "max_pool2d", "max_pool3d",
    "avg_pool1d", "avg_pool2d", "avg_pool3d",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool2d",
]


def _ntuple(x, n: int, name: str) -> List[int]:
    if isinstance(x, (list, tuple)):
        v = [int(i) for i in x]
        if len(v) == 1:
            v = v * n
        if len(v) != n:
            raise ValueError(f"expected {name} to be an int or a sequence of {n} ints, got {x!r}")
        return v
    return [int(x)] * n


def _stride(stride, n: int) -> List[int]:
    if stride is None:
        return []
    if isinstance(stride, (list, tuple)) and len(stride) == 0:
        return []
    return _ntuple(stride, n, "stride")


def _check_quantized(input: Tensor, name: str) -> None:
    if not isinstance(input, Tensor) or not input.is_quantized:
        raise ValueError(f"Input to 'qplugin.nn.functional.{name}' must be quantized!")


def _max_pool(n, name, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    if return_indices:
        raise NotImplementedError("return_indices is not yet implemented!")
    k = _ntuple(kernel_size, n, "kernel_size")
    s = _stride(stride, n)
    p = _ntuple(padding, n, "padding")
    d = _ntuple(dilation, n, "dilation")
    op = getattr(torch.ops.qplugin, name)
    return op(input, k, s, p, d, bool(ceil_mode))


def _avg_pool(n, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
              *divisor_override):
    op = getattr(torch.ops.qplugin, f"avg_pool{n}d")
    return op(input, _ntuple(kernel_size, n, "kernel_size"), _stride(stride, n),
              _ntuple(padding, n, "padding"), bool(ceil_mode), bool(count_include_pad),
              *divisor_override)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    r"""Applies a 1D max pooling over a quantized input (C, L) or (N, C, L).

    .. note:: The input quantization parameters are propagated to the output.
    """
    return _max_pool(1, "max_pool1d", input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    r"""Applies a 2D max pooling over a quantized input (C, H, W) or (N, C, H, W).

    .. note:: The input quantization parameters are propagated to the output.
    """
    return _max_pool(2, "max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    r"""Applies a 3D max pooling over a quantized input (C, D, H, W) or (N, C, D, H, W).
    Extension (torch.ao.nn.quantized.functional has no max_pool3d).

    .. note:: The input quantization parameters are propagated to the output.
    """
    return _max_pool(3, "max_pool3d", input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    r"""1D average pooling of a quantized input (C, L) or (N, C, L). Extension.

    .. note:: The input quantization parameters propagate to the output.
    """
    _check_quantized(input, "avg_pool1d")
    return _avg_pool(1, input, kernel_size, stride, padding, ceil_mode, count_include_pad)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    r"""Applies 2D average-pooling in :math:`kH \times kW` regions by step size
    :math:`sH \times sW`; see torch.ao.nn.quantized.functional.avg_pool2d.

    .. note:: The input quantization parameters propagate to the output.
    """
    if not input.is_quantized:
        raise ValueError("Input to 'quantized.avg_pool2d' must be quantized!")
    return _avg_pool(2, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    r"""Applies 3D average-pooling in :math:`kD \times kH \times kW` regions; see
    torch.ao.nn.quantized.functional.avg_pool3d. The output is channels_last_3d, as PyTorch's.

    .. note:: The input quantization parameters propagate to the output.
    """
    if not input.is_quantized:
        raise ValueError("Input to 'quantized.avg_pool3d' must be quantized!")
    return _avg_pool(3, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def _adaptive_size(input: Tensor, output_size, n: int) -> List[int]:
    if isinstance(output_size, (list, tuple)):
        if len(output_size) != n:
            raise ValueError(f"output_size must be an int or a sequence of {n} ints (None keeps "
                             f"the input size), got {output_size!r}")
        sizes = list(output_size)
    else:
        sizes = [output_size] * n
    return [int(input.size(input.dim() - n + i)) if v is None else int(v)
            for i, v in enumerate(sizes)]


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    r"""1D adaptive average pooling of a quantized input. Extension.

    .. note:: The input quantization parameters propagate to the output.
    """
    _check_quantized(input, "adaptive_avg_pool1d")
    return torch.ops.qplugin.adaptive_avg_pool1d(input, _adaptive_size(input, output_size, 1))


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    r"""Applies a 2D adaptive average pooling over a quantized input.

    .. note:: The input quantization parameters propagate to the output.

    Args:
        output_size: the target output size (single integer or double-integer tuple; None
            entries keep the input size)
    """
    if not input.is_quantized:
        raise ValueError("Input to 'quantized.functional.adaptive_avg_pool2d' must be quantized!")
    return torch.ops.qplugin.adaptive_avg_pool2d(input, _adaptive_size(input, output_size, 2))


def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:
    r"""Applies a 3D adaptive average pooling over a quantized input.

    .. note:: The input quantization parameters propagate to the output.
    """
    if not input.is_quantized:
        raise ValueError("Input to 'quantized.functional.adaptive_avg_pool3d' must be quantized!")
    return torch.ops.qplugin.adaptive_avg_pool3d(input, _adaptive_size(input, output_size, 3))


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False) -> Tensor:
    r"""2D adaptive max pooling of a quantized input. Extension (PyTorch has no quantized
    kernel); indices are not supported.

    .. note:: The input quantization parameters propagate to the output.
    """
    if return_indices:
        raise NotImplementedError("return_indices is not yet implemented!")
    _check_quantized(input, "adaptive_max_pool2d")
    return torch.ops.qplugin.adaptive_max_pool2d(input, _adaptive_size(input, output_size, 2))
