"""Pooling modules (≙ torch.nn.MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, ...; Upsample: upsample.py)
running on torch.ops.qplugin, so that qplugin.quantization.convert routes a model's pools
through qplugin's kernels (torch.ao's convert leaves the float modules, which reach aten's
quantized kernels). Changes with: qplugin/nn/_functional_pool.py, csrc/ops/pooling.cpp,
qplugin/quantization/__init__.py (mapping), tests/pooling/test_pool_modules.py.

Each class derives from its float module: same constructor, defaults, attributes, __constants__
and extra_repr; no state (the output keeps the input's qparams). A float input runs the float op,
as the float module would: convert swaps every mapped module that has a qconfig, including pools
in float regions of a model (after a DeQuantStub), which torch.ao's convert leaves working.
The configuration is read once, at construction (as lists the ops take); build a new module (or
use from_float) to change it.
"""
from typing import List

import torch
import torch.nn.functional as F
from torch import Tensor

from .utils import _FromFloat

__all__ = [
    "MaxPool1d", "MaxPool2d", "MaxPool3d",
    "AvgPool1d", "AvgPool2d", "AvgPool3d",
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool2d",
]


def _ints(owner: str, value, n: int, name: str) -> List[int]:
    v = list(value) if isinstance(value, (list, tuple)) else [value] * n
    if len(v) == 1:
        v = v * n
    if len(v) != n or not all(isinstance(i, int) and not isinstance(i, bool) for i in v):
        raise ValueError(f"{owner}: expected {name} to be an int or a sequence of {n} ints, got"
                         f" {value!r}")
    return [int(i) for i in v]


def _adaptive(owner: str, value, n: int) -> List[int]:
    """output_size as n ints, -1 for None (keep the input size)."""
    v = list(value) if isinstance(value, (list, tuple)) else [value] * n
    if len(v) != n or not all(i is None or (isinstance(i, int) and not isinstance(i, bool))
                              for i in v):
        raise ValueError(f"{owner}: expected output_size to be an int, None or a sequence of {n}"
                         f" of them, got {value!r}")
    return [-1 if i is None else int(i) for i in v]


def _resolve(input: Tensor, out: List[int]) -> List[int]:
    n = len(out)
    return [input.size(input.dim() - n + i) if out[i] < 0 else out[i] for i in range(n)]


def _no_indices(owner: str, return_indices: bool) -> None:
    if return_indices:
        raise NotImplementedError(f"{owner}: return_indices is not supported for quantized"
                                  " tensors (as PyTorch's quantized max pooling)")


class _PoolNd(_FromFloat):
    """The shared construction of the pools: each per-dimension class keeps a literal forward
    (TorchScript compiles it with the op of its dimension); the configuration lists that forward
    passes are read here, once."""

    _NDIM = 0

    def _owner(self) -> str:
        return f"qplugin.nn.{type(self).__name__}"

    def _lists(self, *names: str) -> List[List[int]]:
        """The float module's `names` attributes as _NDIM ints each."""
        return [_ints(self._owner(), getattr(self, name), self._NDIM, name) for name in names]


class _MaxPoolNd(_PoolNd):
    _CONFIG = ("kernel_size", "stride", "padding", "dilation", "return_indices", "ceil_mode")
    _k: List[int]
    _s: List[int]
    _p: List[int]
    _d: List[int]

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False) -> None:
        _no_indices(self._owner(), return_indices)
        super().__init__(kernel_size, stride, padding, dilation, return_indices, ceil_mode)
        self._k, self._s, self._p, self._d = self._lists("kernel_size", "stride", "padding",
                                                         "dilation")


class _AvgPoolNd(_PoolNd):
    """AvgPool2d/3d (AvgPool1d has no divisor_override)."""

    _CONFIG = ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad",
               "divisor_override")
    _k: List[int]
    _s: List[int]
    _p: List[int]

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None) -> None:
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad,
                         divisor_override)
        self._k, self._s, self._p = self._lists("kernel_size", "stride", "padding")


class _AdaptivePoolNd(_PoolNd):
    _CONFIG = ("output_size",)
    _out: List[int]

    def __init__(self, output_size) -> None:
        super().__init__(output_size)
        self._out = _adaptive(self._owner(), self.output_size, self._NDIM)


class MaxPool1d(_MaxPoolNd, torch.nn.MaxPool1d):
    r"""1D max pooling of a quantized (C, L) or (N, C, L) input (≙ :class:`torch.nn.MaxPool1d`;
    `return_indices` is not supported). Output qparams = input's."""

    _FLOAT_MODULE = torch.nn.MaxPool1d
    _NDIM = 1

    def forward(self, input: Tensor) -> Tensor:
        if input.is_quantized:
            return torch.ops.qplugin.max_pool1d(input, self._k, self._s, self._p, self._d,
                                                self.ceil_mode)
        return F.max_pool1d(input, self._k, self._s, self._p, self._d, self.ceil_mode)


class MaxPool2d(_MaxPoolNd, torch.nn.MaxPool2d):
    r"""2D max pooling of a quantized (C, H, W) or (N, C, H, W) input (≙
    :class:`torch.nn.MaxPool2d`; `return_indices` is not supported). Output qparams = input's."""

    _FLOAT_MODULE = torch.nn.MaxPool2d
    _NDIM = 2

    def forward(self, input: Tensor) -> Tensor:
        if input.is_quantized:
            return torch.ops.qplugin.max_pool2d(input, self._k, self._s, self._p, self._d,
                                                self.ceil_mode)
        return F.max_pool2d(input, self._k, self._s, self._p, self._d, self.ceil_mode)


class MaxPool3d(_MaxPoolNd, torch.nn.MaxPool3d):
    r"""3D max pooling of a quantized (C, D, H, W) or (N, C, D, H, W) input (≙
    :class:`torch.nn.MaxPool3d`; extension: PyTorch has no quantized max_pool3d kernel).
    Output qparams = input's."""

    _FLOAT_MODULE = torch.nn.MaxPool3d
    _NDIM = 3

    def forward(self, input: Tensor) -> Tensor:
        if input.is_quantized:
            return torch.ops.qplugin.max_pool3d(input, self._k, self._s, self._p, self._d,
                                                self.ceil_mode)
        return F.max_pool3d(input, self._k, self._s, self._p, self._d, self.ceil_mode)


class AvgPool1d(_PoolNd, torch.nn.AvgPool1d):
    r"""1D average pooling of a quantized input (≙ :class:`torch.nn.AvgPool1d`; extension).
    Output qparams = input's."""

    _FLOAT_MODULE = torch.nn.AvgPool1d
    _CONFIG = ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad")
    _NDIM = 1
    _k: List[int]
    _s: List[int]
    _p: List[int]

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True) -> None:
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad)
        self._k, self._s, self._p = self._lists("kernel_size", "stride", "padding")

    def forward(self, input: Tensor) -> Tensor:
        if input.is_quantized:
            return torch.ops.qplugin.avg_pool1d(input, self._k, self._s, self._p, self.ceil_mode,
                                                self.count_include_pad)
        return F.avg_pool1d(input, self._k, self._s, self._p, self.ceil_mode,
                            self.count_include_pad)


class AvgPool2d(_AvgPoolNd, torch.nn.AvgPool2d):
    r"""2D average pooling of a quantized input (≙ :class:`torch.nn.AvgPool2d`). Output
    qparams = input's."""

    _FLOAT_MODULE = torch.nn.AvgPool2d
    _NDIM = 2

    def forward(self, input: Tensor) -> Tensor:
        if input.is_quantized:
            return torch.ops.qplugin.avg_pool2d(input, self._k, self._s, self._p, self.ceil_mode,
                                                self.count_include_pad, self.divisor_override)
        return F.avg_pool2d(input, self._k, self._s, self._p, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class AvgPool3d(_AvgPoolNd, torch.nn.AvgPool3d):
    r"""3D average pooling of a quantized input (≙ :class:`torch.nn.AvgPool3d`). The output is
    channels_last_3d, as PyTorch's quantized avg_pool3d. Output qparams = input's."""

    _FLOAT_MODULE = torch.nn.AvgPool3d
    _NDIM = 3

    def forward(self, input: Tensor) -> Tensor:
        if input.is_quantized:
            return torch.ops.qplugin.avg_pool3d(input, self._k, self._s, self._p, self.ceil_mode,
                                                self.count_include_pad, self.divisor_override)
        return F.avg_pool3d(input, self._k, self._s, self._p, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class AdaptiveAvgPool1d(_AdaptivePoolNd, torch.nn.AdaptiveAvgPool1d):
    r"""1D adaptive average pooling of a quantized input (≙ :class:`torch.nn.AdaptiveAvgPool1d`;
    extension). Output qparams = input's."""

    _FLOAT_MODULE = torch.nn.AdaptiveAvgPool1d
    _NDIM = 1

    def forward(self, input: Tensor) -> Tensor:
        if input.is_quantized:
            return torch.ops.qplugin.adaptive_avg_pool1d(input, _resolve(input, self._out))
        return F.adaptive_avg_pool1d(input, _resolve(input, self._out))


class AdaptiveAvgPool2d(_AdaptivePoolNd, torch.nn.AdaptiveAvgPool2d):
    r"""2D adaptive average pooling of a quantized input (≙ :class:`torch.nn.AdaptiveAvgPool2d`;
    None entries keep the input size). Output qparams = input's."""

    _FLOAT_MODULE = torch.nn.AdaptiveAvgPool2d
    _NDIM = 2

    def forward(self, input: Tensor) -> Tensor:
        if input.is_quantized:
            return torch.ops.qplugin.adaptive_avg_pool2d(input, _resolve(input, self._out))
        return F.adaptive_avg_pool2d(input, _resolve(input, self._out))


class AdaptiveAvgPool3d(_AdaptivePoolNd, torch.nn.AdaptiveAvgPool3d):
    r"""3D adaptive average pooling of a quantized input (≙ :class:`torch.nn.AdaptiveAvgPool3d`;
    None entries keep the input size). Output qparams = input's."""

    _FLOAT_MODULE = torch.nn.AdaptiveAvgPool3d
    _NDIM = 3

    def forward(self, input: Tensor) -> Tensor:
        if input.is_quantized:
            return torch.ops.qplugin.adaptive_avg_pool3d(input, _resolve(input, self._out))
        return F.adaptive_avg_pool3d(input, _resolve(input, self._out))


class AdaptiveMaxPool2d(_AdaptivePoolNd, torch.nn.AdaptiveMaxPool2d):
    r"""2D adaptive max pooling of a quantized input (≙ :class:`torch.nn.AdaptiveMaxPool2d`;
    extension: PyTorch has no quantized kernel; `return_indices` is not supported). Output
    qparams = input's."""

    _FLOAT_MODULE = torch.nn.AdaptiveMaxPool2d
    _CONFIG = ("output_size", "return_indices")
    _NDIM = 2

    def __init__(self, output_size, return_indices=False) -> None:
        _no_indices(self._owner(), return_indices)
        super().__init__(output_size)  # return_indices: False, its default

    def forward(self, input: Tensor) -> Tensor:
        if input.is_quantized:
            return torch.ops.qplugin.adaptive_max_pool2d(input, _resolve(input, self._out))
        return F.adaptive_max_pool2d(input, _resolve(input, self._out))
