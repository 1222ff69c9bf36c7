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
from .modules.pooling import (  # noqa: F401
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveAvgPool3d,
    AdaptiveMaxPool2d,
    AvgPool1d,
    AvgPool2d,
    AvgPool3d,
    MaxPool1d,
    MaxPool2d,
    MaxPool3d,
    Upsample,
)
from .modules.normalization import (  # noqa: F401
    GroupNorm,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    LayerNorm,
)
from .modules.linear import Linear  # noqa: F401
from .modules.prelu import PReLU  # noqa: F401
from .modules.conv import (  # noqa: F401
    Conv1d,
    Conv2d,
    Conv3d,
    ConvTranspose1d,
    ConvTranspose2d,
    ConvTranspose3d,
)
from .modules.functional_modules import FloatFunctional, QFunctional  # noqa: F401
from .modules.embedding_ops import Embedding, EmbeddingBag  # noqa: F401
from .modules.activation_ext import (  # noqa: F401
    GELU,
    Dropout,
    LeakyReLU,
    Mish,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Tanh,
)
from . import intrinsic  # noqa: F401,E402  (after .modules: its classes derive from them)
from . import dynamic  # noqa: F401,E402  (qplugin.nn.dynamic: dynamic quantization, #17)

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
    "Conv1d",
    "Conv2d",
    "Conv3d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "ConvTranspose3d",
    "DeQuantize",
    "ELU",
    "Embedding",
    "EmbeddingBag",
    "GroupNorm",
    "Hardswish",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "InstanceNorm3d",
    "LayerNorm",
    "Linear",
    "MaxPool1d",
    "MaxPool2d",
    "MaxPool3d",
    "PReLU",
    "Quantize",
    "ReLU6",
    "Upsample",
    "FloatFunctional",
    "QFunctional",
    "GELU",
    "Dropout",
    "LeakyReLU",
    "Mish",
    "Sigmoid",
    "SiLU",
    "Softmax",
    "Softplus",
    "Tanh",
    "functional",
    "intrinsic",
    "dynamic",
]
