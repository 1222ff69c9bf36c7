"""Functional forms of the resampling ops (re-exported by qplugin.nn.functional).

Mirrors torch.ao.nn.quantized.functional (interpolate, upsample, upsample_bilinear,
upsample_nearest: same signatures, defaults, errors and deprecation warnings) and adds the
interpolate modes PyTorch lacks for quantized tensors: 'nearest-exact', 'nearest' on 3-D input,
'linear' (3-D input) and 'trilinear' (5-D input). Input quantization parameters propagate to the
output. Every function calls torch.ops.qplugin only. Changes with: csrc/ops/upsample.cpp,
qplugin/nn/modules/upsample.py.
"""
import math
import warnings
from typing import List, Optional

import torch

__all__ = ["interpolate", "upsample", "upsample_bilinear", "upsample_nearest"]


_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "trilinear")


def _per_dim(input, value, convert, words) -> list:
    """`value` (one number, or a list/tuple of one per spatial dimension of `input`) as one
    number (made by `convert`) per spatial dimension; `words` name it in PyTorch's error."""
    dim = input.dim() - 2
    if isinstance(value, (list, tuple)):
        if len(value) != dim:
            name, of, in_name, letter = words
            raise ValueError(
                f"Input and {name} must have the same number of spatial dimensions, but got "
                f"input with spatial dimensions of {list(input.shape[2:])} and {of} {value}. "
                f"Please provide input tensor in (N, C, d1, d2, ...,dK) format and {in_name} in "
                f"({letter}1, {letter}2, ...,{letter}K) format.")
        return [convert(v) for v in value]
    return [convert(value)] * dim


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
        output_size = _per_dim(input, size, int, ("output", "output size of", "output size", "o"))
    elif scale_factor is not None:
        scale_factors = _per_dim(input, scale_factor, float,
                                 ("scale_factor", "scale_factor of shape", "scale_factor", "s"))
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
