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


def output_pool_stats() -> dict:
    """The pool of large output buffers of the dynamic ops (csrc/driver/output_pool.h): buffers of
    1 MB and more are reused instead of freshly mapped (and page-faulted) on every call.
    Returns idle_bytes, idle_buffers, reused, fresh (allocations since start) and limit_bytes
    (QPLUGIN_OUTPUT_POOL_MB, default 256; 0 turns the pool off)."""
    idle_bytes, idle_buffers, reused, fresh, limit = torch.ops.qplugin._output_pool_stats()
    return {"idle_bytes": idle_bytes, "idle_buffers": idle_buffers, "reused": reused,
            "fresh": fresh, "limit_bytes": limit}


def release_output_pool() -> int:
    """Frees the idle buffers of the output pool (live tensors are untouched); returns the bytes
    released. torch.cuda.empty_cache's counterpart."""
    return torch.ops.qplugin._release_output_pool()


def library_path() -> str:
    """Path of the loaded operator library (for C++ programs: load it with dlopen)."""
    return _library_path


__all__ = ["cpu_isa", "library_path", "output_pool_stats", "release_output_pool", "nn", "pt2", "quantization", "__version__"]
