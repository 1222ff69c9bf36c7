"""qplugin.nn modules (≙ torch.ao.nn.quantized.modules). One file per family; exported from
qplugin/nn/__init__.py too."""
from .activation import *  # noqa: F401,F403  (qplugin/_tables/activation.py)
from .activation import __all__ as _activation_all
from .batchnorm import BatchNorm2d, BatchNorm3d
from .pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d, AdaptiveMaxPool2d,
                      AvgPool1d, AvgPool2d, AvgPool3d, MaxPool1d, MaxPool2d, MaxPool3d)
from .upsample import Upsample
from .quantize import DeQuantize, Quantize

__all__ = [
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveAvgPool3d",
    "AdaptiveMaxPool2d",
    "AvgPool1d",
    "AvgPool2d",
    "AvgPool3d",
    "BatchNorm2d",
    "BatchNorm3d",
    "DeQuantize",
    "MaxPool1d",
    "MaxPool2d",
    "MaxPool3d",
    "Quantize",
    "Upsample",
] + _activation_all
