"""Upsampling module (≙ torch.nn.Upsample) running on torch.ops.qplugin, so that
qplugin.quantization.convert routes a model's upsampling through qplugin's kernels. Like the
pooling modules (pooling.py): derives from its float module (same constructor, defaults,
attributes, extra_repr), no state (the output keeps the input's qparams), a float input runs the
float op. Changes with: qplugin/nn/_functional_upsample.py, csrc/ops/upsample.cpp,
qplugin/quantization/__init__.py (mapping), tests/upsample/.
"""
import math
from typing import List, Optional

import torch
import torch.nn.functional as F
from torch import Tensor

from .utils import _FromFloat

__all__ = ["Upsample"]


class Upsample(_FromFloat, torch.nn.Upsample):
    r"""Upsampling of a quantized 3-D, 4-D or 5-D input (≙ :class:`torch.nn.Upsample`, with
    torch.nn.functional.interpolate's size and scale rules). Modes on quantized input:
    ``'nearest'`` and ``'bilinear'`` (as PyTorch's quantized kernels) plus the extensions
    ``'nearest-exact'``, ``'linear'`` and ``'trilinear'``; others raise NotImplementedError.
    Output qparams = input's."""

    _FLOAT_MODULE = torch.nn.Upsample
    _CONFIG = ("size", "scale_factor", "mode", "align_corners", "recompute_scale_factor")
    _size: List[int]
    _sf: List[float]
    _recompute: bool
    _ac: bool

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode, align_corners, recompute_scale_factor)
        owner = f"qplugin.nn.{type(self).__name__}"
        self._size = [] if self.size is None else (
            [int(s) for s in self.size] if isinstance(self.size, (list, tuple))
            else [int(self.size)])
        self._sf = [] if self.scale_factor is None else (
            [float(s) for s in self.scale_factor] if isinstance(self.scale_factor, (list, tuple))
            else [float(self.scale_factor)])
        # Optional constants do not refine in TorchScript: plain bools for forward.
        self._recompute = bool(self.recompute_scale_factor)
        self._ac = bool(self.align_corners)
        if self.size is not None and self.scale_factor is not None:
            raise ValueError(f"{owner}: only one of size or scale_factor should be defined")

    def forward(self, input: Tensor) -> Tensor:
        if not input.is_quantized:
            return F.interpolate(input, self.size, self.scale_factor, self.mode,
                                 self.align_corners,
                                 recompute_scale_factor=self.recompute_scale_factor)
        dim = input.dim() - 2
        if self.mode not in ["nearest", "nearest-exact", "linear", "bilinear", "trilinear"]:
            raise NotImplementedError("qplugin.nn.Upsample: expected mode in nearest,"
                                      " nearest-exact, linear, bilinear, trilinear for quantized"
                                      " input, got " + self.mode)
        if dim < 1 or dim > 3:
            raise ValueError("qplugin.nn.Upsample: expected a 3-D, 4-D or 5-D input (N, C, ...),"
                             " got " + str(input.dim()) + "-D")
        scales: List[Optional[float]] = [None for _ in range(dim)]
        if len(self._size) > 0:
            out = self._size * dim if len(self._size) == 1 else self._size
            if len(out) != dim:
                raise ValueError("qplugin.nn.Upsample: expected size of " + str(dim) +
                                 " spatial dimensions, got " + str(self._size))
        else:
            sf = self._sf * dim if len(self._sf) == 1 else self._sf
            if len(sf) != dim:
                raise ValueError("qplugin.nn.Upsample: expected scale_factor of " + str(dim) +
                                 " spatial dimensions, got " + str(self._sf))
            out = [int(math.floor(float(input.size(i + 2)) * sf[i])) for i in range(dim)]
            if not self._recompute:
                for i in range(dim):
                    scales[i] = sf[i]
        if self.mode == "nearest":
            if dim == 1:
                return torch.ops.qplugin.upsample_nearest1d(input, out, scales[0])
            if dim == 2:
                return torch.ops.qplugin.upsample_nearest2d(input, out, scales[0], scales[1])
            return torch.ops.qplugin.upsample_nearest3d(input, out, scales[0], scales[1],
                                                        scales[2])
        if self.mode == "nearest-exact":
            if dim == 1:
                return torch.ops.qplugin._upsample_nearest_exact1d(input, out, scales[0])
            if dim == 2:
                return torch.ops.qplugin._upsample_nearest_exact2d(input, out, scales[0],
                                                                   scales[1])
            return torch.ops.qplugin._upsample_nearest_exact3d(input, out, scales[0], scales[1],
                                                               scales[2])
        ac = self._ac
        if self.mode == "linear" and dim == 1:
            return torch.ops.qplugin.upsample_linear1d(input, out, ac, scales[0])
        if self.mode == "bilinear" and dim == 2:
            return torch.ops.qplugin.upsample_bilinear2d(input, out, ac, scales[0], scales[1])
        if self.mode == "trilinear" and dim == 3:
            return torch.ops.qplugin.upsample_trilinear3d(input, out, ac, scales[0], scales[1],
                                                          scales[2])
        raise NotImplementedError("qplugin.nn.Upsample: mode " + self.mode + " does not take a " +
                                  str(input.dim()) + "-D input")
