"""Fused quantized modules, one file per family (≙ torch.ao.nn.intrinsic.quantized.modules)."""
from .bn_relu import BNReLU2d, BNReLU3d
from .conv_add import ConvAdd2d, ConvAddReLU2d
from .conv_relu import ConvReLU1d, ConvReLU2d, ConvReLU3d
from .linear_relu import LinearLeakyReLU, LinearReLU, LinearTanh

__all__ = ["BNReLU2d", "BNReLU3d", "ConvAdd2d", "ConvAddReLU2d", "ConvReLU1d", "ConvReLU2d",
           "ConvReLU3d", "LinearLeakyReLU", "LinearReLU", "LinearTanh"]
