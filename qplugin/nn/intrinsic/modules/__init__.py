"""Fused quantized modules, one file per family (≙ torch.ao.nn.intrinsic.quantized.modules)."""
from .bn_relu import BNReLU2d, BNReLU3d
from .conv_relu import ConvReLU1d, ConvReLU2d, ConvReLU3d
from .linear_relu import LinearReLU

__all__ = ["BNReLU2d", "BNReLU3d", "ConvReLU1d", "ConvReLU2d", "ConvReLU3d", "LinearReLU"]
