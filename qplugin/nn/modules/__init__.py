"""qplugin.nn modules (≙ torch.ao.nn.quantized.modules). One file per family; exported from
qplugin/nn/__init__.py too."""
from .activation import ELU, Hardswish, ReLU6
from .batchnorm import BatchNorm2d, BatchNorm3d
from .quantize import DeQuantize, Quantize

__all__ = [
    "BatchNorm2d",
    "BatchNorm3d",
    "DeQuantize",
    "ELU",
    "Hardswish",
    "Quantize",
    "ReLU6",
]
