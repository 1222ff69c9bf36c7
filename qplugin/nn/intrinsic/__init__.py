"""qplugin.nn.intrinsic: fused quantized modules (≙ torch.ao.nn.intrinsic.quantized)."""
from .modules import (BNReLU2d, BNReLU3d, ConvAdd2d, ConvAddReLU2d, ConvReLU1d, ConvReLU2d,
                      ConvReLU3d, LinearLeakyReLU, LinearReLU, LinearTanh)

__all__ = ["BNReLU2d", "BNReLU3d", "ConvAdd2d", "ConvAddReLU2d", "ConvReLU1d", "ConvReLU2d",
           "ConvReLU3d", "LinearLeakyReLU", "LinearReLU", "LinearTanh"]
