"""qplugin: int8 inference for PyTorch as a self-contained custom-op plugin.

Ops live under torch.ops.qplugin; modules mirroring torch.ao.nn.quantized under qplugin.nn.
"""
import torch

from . import _loader

__version__ = "0.1.0"

_library_path = _loader.load()

from . import nn  # noqa: E402
from . import quantization  # noqa: E402
from . import _meta_dynamic  # noqa: E402,F401  (fake kernels of the dynamic ops, #17)
from . import pt2  # noqa: E402  (PT2 door: fake classes and fake kernels, docs/pt2.md)


def cpu_isa() -> str:
    """The kernel ISA in use: 'scalar', 'avx2' or 'avx512vnni' (QPLUGIN_CPU_ISA may lower it)."""
    return torch.ops.qplugin._cpu_isa()


def library_path() -> str:
    """Path of the loaded operator library (for C++ programs: load it with dlopen)."""
    return _library_path


__all__ = ["cpu_isa", "library_path", "nn", "pt2", "quantization", "__version__"]
