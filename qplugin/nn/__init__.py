"""qplugin.nn: quantized modules mirroring torch.ao.nn.quantized (same names, arguments,
defaults), running on torch.ops.qplugin. Fused modules: qplugin.nn.intrinsic; functional forms:
qplugin.nn.functional."""
from . import functional  # noqa: F401
from . import modules as _modules
from .modules import *  # noqa: F401,F403  (activation (from its table), batch norm, pooling, ...)
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
from . import intrinsic  # noqa: F401,E402  (after .modules: its classes derive from them)
from . import dynamic  # noqa: F401,E402  (qplugin.nn.dynamic: dynamic quantization, #17)

__all__ = list(_modules.__all__) + [
    "Conv1d",
    "Conv2d",
    "Conv3d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "ConvTranspose3d",
    "Embedding",
    "EmbeddingBag",
    "FloatFunctional",
    "GroupNorm",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "InstanceNorm3d",
    "LayerNorm",
    "Linear",
    "PReLU",
    "QFunctional",
    "functional",
    "intrinsic",
    "dynamic",
]
