"""Functional forms of the pooling and resampling ops (re-exported by qplugin.nn.functional).

Mirrors torch.ao.nn.quantized.functional (max_pool1d, max_pool2d, avg_pool2d, avg_pool3d,
adaptive_avg_pool2d, adaptive_avg_pool3d, interpolate, upsample, upsample_bilinear,
upsample_nearest: same signatures, defaults, errors and deprecation warnings) and adds the
extensions PyTorch lacks in that module or for quantized tensors: max_pool3d, avg_pool1d,
adaptive_avg_pool1d, adaptive_max_pool2d and the interpolate modes 'nearest-exact', 'linear'
(3-D input) and 'trilinear' (5-D input). Input quantization parameters propagate to the output.
Every function calls torch.ops.qplugin only. Changes with: csrc/ops/{pooling,upsample}.cpp.
"""
import math
import warnings
from typing import List, Optional

import torch
from torch import Tensor

__all__ = [
    "max_pool1d", "max_pool2d", "max_pool3d",
    "avg_pool1d", "avg_pool2d", "avg_pool3d",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool2d",
    "interpolate", "upsample", "upsample_bilinear", "upsample_nearest",
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
    return torch.ops.qplugin.avg_pool1d(input, _ntuple(kernel_size, 1, "kernel_size"),
                                        _stride(stride, 1), _ntuple(padding, 1, "padding"),
                                        bool(ceil_mode), bool(count_include_pad))


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    r"""Applies 2D average-pooling in :math:`kH \times kW` regions by step size
    :math:`sH \times sW`; see torch.ao.nn.quantized.functional.avg_pool2d.

    .. note:: The input quantization parameters propagate to the output.
    """
    if not input.is_quantized:
        raise ValueError("Input to 'quantized.avg_pool2d' must be quantized!")
    return torch.ops.qplugin.avg_pool2d(input, _ntuple(kernel_size, 2, "kernel_size"),
                                        _stride(stride, 2), _ntuple(padding, 2, "padding"),
                                        bool(ceil_mode), bool(count_include_pad), divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    r"""Applies 3D average-pooling in :math:`kD \times kH \times kW` regions; see
    torch.ao.nn.quantized.functional.avg_pool3d. The output is channels_last_3d, as PyTorch's.

    .. note:: The input quantization parameters propagate to the output.
    """
    if not input.is_quantized:
        raise ValueError("Input to 'quantized.avg_pool3d' must be quantized!")
    return torch.ops.qplugin.avg_pool3d(input, _ntuple(kernel_size, 3, "kernel_size"),
                                        _stride(stride, 3), _ntuple(padding, 3, "padding"),
                                        bool(ceil_mode), bool(count_include_pad), divisor_override)


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


_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "trilinear")


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    r"""Down/up samples the quantized input to the given :attr:`size` or :attr:`scale_factor`,
    with torch.nn.functional.interpolate's size and scale rules.

    Modes: ``'nearest'`` and ``'bilinear'`` (as torch.ao.nn.quantized.functional.interpolate)
    plus the extensions ``'nearest-exact'`` (3-D, 4-D, 5-D input), ``'nearest'`` on 3-D input,
    ``'linear'`` (3-D input) and ``'trilinear'`` (5-D input).

    .. note:: The input quantization parameters propagate to the output.
    """
    if not input.is_quantized:
        raise ValueError("Input to 'quantized.interpolate' must be quantized!")
    if mode not in _MODES:
        raise NotImplementedError(
            f"qplugin interpolate: expected mode in {', '.join(_MODES)}, got {mode!r}")
    if mode in ("nearest", "nearest-exact"):
        if align_corners is not None:
            raise ValueError(
                "align_corners option can only be set with the interpolating modes: "
                "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    dim = input.dim() - 2
    if dim not in (1, 2, 3):
        raise ValueError(f"qplugin interpolate: expected a 3-D, 4-D or 5-D input (N, C, ...), "
                         f"got {input.dim()}-D")
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    output_size: Optional[List[int]] = None
    scale_factors: Optional[List[float]] = None
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(
                    "Input and output must have the same number of spatial dimensions, but got "
                    f"input with spatial dimensions of {list(input.shape[2:])} and output size of "
                    f"{size}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                    "output size in (o1, o2, ...,oK) format.")
            output_size = [int(s) for s in size]
        else:
            output_size = [int(size)] * dim
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(
                    "Input and scale_factor must have the same number of spatial dimensions, but "
                    f"got input with spatial dimensions of {list(input.shape[2:])} and "
                    f"scale_factor of shape {scale_factor}. Please provide input tensor in (N, C, "
                    "d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format.")
            scale_factors = [float(s) for s in scale_factor]
        else:
            scale_factors = [float(scale_factor)] * dim
        for i in range(dim):
            # Hostile sizes (csrc/common/checks.h): a non-finite or huge factor would overflow the
            # int conversion below, or ask the op for an implausible output.
            f = scale_factors[i]
            if not math.isfinite(f) or float(input.size(i + 2)) * f > 1099511627776.0:
                raise RuntimeError(
                    f"qplugin::interpolate: expected finite scale factors giving output sizes of "
                    f"at most 2^40 (qplugin's per-tensor element limit), got scale_factor="
                    f"{scale_factor} for input {list(input.shape)}")
        output_size = [int(math.floor(float(input.size(i + 2)) * scale_factors[i]))
                       for i in range(dim)]
    else:
        raise ValueError("either size or scale_factor should be defined")
    for s in output_size:
        if s > 1099511627776:  # 2^40, the ops' element limit (csrc/common/checks.h)
            raise RuntimeError(f"qplugin::interpolate: expected output sizes of at most 2^40 "
                               f"(qplugin's per-tensor element limit), got {output_size} "
                               f"(input {list(input.shape)}, size={size})")
        if s <= 0:
            raise ValueError(f"qplugin interpolate: expected positive output sizes, got "
                             f"{output_size} (input {list(input.shape)}, size={size}, "
                             f"scale_factor={scale_factor})")
    sf = scale_factors if scale_factors is not None else [None] * dim
    if mode == "nearest":
        op = [torch.ops.qplugin.upsample_nearest1d, torch.ops.qplugin.upsample_nearest2d,
              torch.ops.qplugin.upsample_nearest3d][dim - 1]
        return op(input, output_size, *sf)
    if mode == "nearest-exact":
        op = [torch.ops.qplugin._upsample_nearest_exact1d,
              torch.ops.qplugin._upsample_nearest_exact2d,
              torch.ops.qplugin._upsample_nearest_exact3d][dim - 1]
        return op(input, output_size, *sf)
    need = {"linear": 1, "bilinear": 2, "trilinear": 3}[mode]
    if dim != need:
        raise NotImplementedError(
            f"Got {input.dim()}D input, but {mode} mode needs {need + 2}D input")
    op = [torch.ops.qplugin.upsample_linear1d, torch.ops.qplugin.upsample_bilinear2d,
          torch.ops.qplugin.upsample_trilinear3d][dim - 1]
    return op(input, output_size, bool(align_corners), *sf)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    r"""Deprecated alias of :func:`interpolate` (as torch.ao.nn.quantized.functional.upsample).

    .. note:: The input quantization parameters propagate to the output.
    """
    warnings.warn(
        "nn.quantized.functional.upsample is deprecated. Use nn.quantized.functional.interpolate "
        "instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_bilinear(input, size=None, scale_factor=None):
    r"""Deprecated: ``interpolate(..., mode='bilinear', align_corners=True)``.

    .. note:: The input quantization parameters propagate to the output.
    """
    warnings.warn(
        "nn.quantized.functional.upsample_bilinear is deprecated. Use "
        "nn.quantized.functional.interpolate instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def upsample_nearest(input, size=None, scale_factor=None):
    r"""Deprecated: ``interpolate(..., mode='nearest')``.

    .. note:: The input quantization parameters propagate to the output.
    """
    warnings.warn(
        "nn.quantized.functional.upsample_nearest is deprecated. Use "
        "nn.quantized.functional.interpolate instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")
