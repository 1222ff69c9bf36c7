"""qplugin.nn.intrinsic: fused quantized modules (≙ torch.ao.nn.intrinsic.quantized)."""
from .modules import BNReLU2d, BNReLU3d

__all__ = ["BNReLU2d", "BNReLU3d"]
