"""qplugin.nn.intrinsic: fused quantized modules (≙ torch.ao.nn.intrinsic.quantized)."""
from .modules import BNReLU2d, BNReLU3d, ConvReLU1d, ConvReLU2d, ConvReLU3d, LinearReLU

__all__ = ["BNReLU2d", "BNReLU3d", "ConvReLU1d", "ConvReLU2d", "ConvReLU3d", "LinearReLU"]
