"""qplugin's PyTorch 2 front door (docs/pt2.md): quantized activations as `QTensor` (plain
uint8/int8 codes plus qparams), for torch.export, torch.compile and AOTInductor.

    pmodel = qplugin.pt2.from_quantized(qmodel)     # a converted qplugin model, same modules
    ep = torch.export.export(pmodel, (x,))          # qplugin:: .plain ops on uint8/int8 tensors

The qplugin.nn modules call `torch.ops.qplugin.<op>` as on the TorchScript door; on QTensor
arguments the call runs the op's `.plain` overload (qplugin/pt2/_router.py).
"""
from ._qtensor import QTensor
from . import fake  # noqa: F401  (registers the fake classes and fake kernels)
from ._convert import DeQuantize, Quantize, from_quantized, to_quantized
from . import _router
from ._guards import skip_packed_params_guards

# The conv / linear modules route their packed-params ops in Python on a QTensor (see
# qplugin.nn.modules.utils._packed_op_call).
from qplugin.nn.modules import utils as _nn_utils
if not _nn_utils._PT2_ROUTER:
    _nn_utils._PT2_ROUTER.append((QTensor, _router.route_call))
_router.plans()  # built now, not in a compiled region

__all__ = ["QTensor", "Quantize", "DeQuantize", "from_quantized", "to_quantized",
           "skip_packed_params_guards"]
