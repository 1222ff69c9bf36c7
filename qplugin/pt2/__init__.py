"""qplugin's PyTorch 2 front door (docs/pt2.md): quantized activations as `QTensor` (plain
uint8/int8 codes plus qparams), for torch.export, torch.compile and AOTInductor.

Built so far: the carrier. The plain-tensor ops, `from_quantized` / `to_quantized` and the
exported-model tests follow (issue #15).
"""
from ._qtensor import QTensor
from . import fake  # noqa: F401  (registers the fake classes and fake kernels)

__all__ = ["QTensor"]
