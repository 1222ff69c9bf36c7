r"""Functional interface of qplugin.nn (≙ torch.ao.nn.quantized.functional) on torch.ops.qplugin.

Same names, arguments and checks as PyTorch's. The activations (one per row of
qplugin/_tables/activation.py) are in _functional_activation.py. All functions are
TorchScript-compatible.
"""
from typing import List

__all__: List[str] = [
    "layer_norm", "group_norm", "instance_norm",
    "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool2d",
    "interpolate", "upsample", "upsample_bilinear", "upsample_nearest",
    "linear", "conv1d", "conv2d", "conv3d",
]

from ._functional_normalization import group_norm, instance_norm, layer_norm  # noqa: E402,F401
from ._functional_pool import (  # noqa: E402,F401
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_avg_pool3d,
    adaptive_max_pool2d,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    max_pool1d,
    max_pool2d,
    max_pool3d,
)
from ._functional_upsample import (  # noqa: E402,F401
    interpolate,
    upsample,
    upsample_bilinear,
    upsample_nearest,
)
from ._functional_linear import linear  # noqa: E402,F401
from ._functional_conv import conv1d, conv2d, conv3d  # noqa: E402,F401
from . import _functional_activation  # noqa: E402
from ._functional_activation import *  # noqa: E402,F401,F403

__all__ += _functional_activation.__all__  # one per row of qplugin/_tables/activation.py
