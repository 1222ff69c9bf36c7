"""Fused quantized modules, one file per family (≙ torch.ao.nn.intrinsic.quantized.modules)."""
from .bn_relu import BNReLU2d, BNReLU3d

__all__ = ["BNReLU2d", "BNReLU3d"]
