"""qplugin.nn: quantized modules mirroring torch.ao.nn.quantized (same names, arguments,
defaults), running on torch.ops.qplugin. Fused modules: qplugin.nn.intrinsic; functional forms:
qplugin.nn.functional."""
from . import functional  # noqa: F401
from .modules import (  # noqa: F401
    BatchNorm2d,
    BatchNorm3d,
    DeQuantize,
    ELU,
    Hardswish,
    Quantize,
    ReLU6,
)
from .modules.normalization import (  # noqa: F401
    GroupNorm,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    LayerNorm,
)
from . import intrinsic  # noqa: F401,E402  (after .modules: its classes derive from them)

__all__ = [
    "BatchNorm2d",
    "BatchNorm3d",
    "DeQuantize",
    "ELU",
    "GroupNorm",
    "Hardswish",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "InstanceNorm3d",
    "LayerNorm",
    "Quantize",
    "ReLU6",
    "functional",
    "intrinsic",
]
