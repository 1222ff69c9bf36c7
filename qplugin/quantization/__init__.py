"""qplugin.quantization: convert() swaps the observed float (and fused) modules that
torch.ao.quantization.prepare leaves behind for qplugin.nn modules, like
torch.ao.quantization.convert does for torch.ao.nn.quantized -- but into modules that run on
torch.ops.qplugin. The swap is implemented here (torch's convert is not called).
Changes with: the from_float of every module in the mapping (qplugin/nn, qplugin/nn/intrinsic).
"""
import copy
import inspect
from typing import Any, Callable, Dict, Optional

import torch
import torch.ao.nn.intrinsic as nni
import torch.ao.nn.quantized  # noqa: F401  (FloatFunctional is a mapping key)
import torch.ao.nn.intrinsic.qat as nniqat
import torch.ao.nn.qat as nnqat
from torch import nn
from torch.ao.quantization import DeQuantStub, QuantStub
from torch.nn.utils.parametrize import type_before_parametrizations

try:
    # The hooks torch.ao.quantization.prepare registers (private in torch): recognised by
    # identity when importable, else by name.
    from torch.ao.quantization.quantize import (
        _observer_forward_hook,
        _observer_forward_pre_hook,
    )
except ImportError:  # pragma: no cover - depends on the torch version
    _observer_forward_hook = _observer_forward_pre_hook = None

from .. import nn as qnn
from ..nn import intrinsic as qnni

__all__ = [
    "DEFAULT_STATIC_QUANT_MODULE_MAPPINGS",
    "convert",
    "get_default_qconfig_propagation_list",
    "get_default_static_quant_module_mappings",
    "swap_module",
]

# Float (observed) module class -> qplugin module class (≙ torch.ao.quantization's
# DEFAULT_STATIC_QUANT_MODULE_MAPPINGS). Keys are exact classes, as in torch's convert.
DEFAULT_STATIC_QUANT_MODULE_MAPPINGS: Dict[Callable, Any] = {
    QuantStub: qnn.Quantize,
    DeQuantStub: qnn.DeQuantize,
    nn.BatchNorm2d: qnn.BatchNorm2d,
    nn.BatchNorm3d: qnn.BatchNorm3d,
    nn.ELU: qnn.ELU,
    nn.Hardswish: qnn.Hardswish,
    nn.ReLU6: qnn.ReLU6,
    nn.LayerNorm: qnn.LayerNorm,
    nn.GroupNorm: qnn.GroupNorm,
    nn.InstanceNorm1d: qnn.InstanceNorm1d,
    nn.InstanceNorm2d: qnn.InstanceNorm2d,
    nn.InstanceNorm3d: qnn.InstanceNorm3d,
    nn.MaxPool1d: qnn.MaxPool1d,
    nn.MaxPool2d: qnn.MaxPool2d,
    nn.MaxPool3d: qnn.MaxPool3d,
    nn.AvgPool1d: qnn.AvgPool1d,
    nn.AvgPool2d: qnn.AvgPool2d,
    nn.AvgPool3d: qnn.AvgPool3d,
    nn.AdaptiveAvgPool1d: qnn.AdaptiveAvgPool1d,
    nn.AdaptiveAvgPool2d: qnn.AdaptiveAvgPool2d,
    nn.AdaptiveAvgPool3d: qnn.AdaptiveAvgPool3d,
    nn.AdaptiveMaxPool2d: qnn.AdaptiveMaxPool2d,
    nn.Upsample: qnn.Upsample,
    nni.BNReLU2d: qnni.BNReLU2d,
    nni.BNReLU3d: qnni.BNReLU3d,
    # Linear
    nn.Linear: qnn.Linear,
    nn.modules.linear.NonDynamicallyQuantizableLinear: qnn.Linear,
    nnqat.Linear: qnn.Linear,
    nni.LinearReLU: qnni.LinearReLU,
    nniqat.LinearReLU: qnni.LinearReLU,
    nniqat.LinearBn1d: qnn.Linear,
    # Convolution (plain, QAT, fused with BN folded, fused with ReLU)
    nn.Conv1d: qnn.Conv1d,
    nn.Conv2d: qnn.Conv2d,
    nn.Conv3d: qnn.Conv3d,
    nnqat.Conv1d: qnn.Conv1d,
    nnqat.Conv2d: qnn.Conv2d,
    nnqat.Conv3d: qnn.Conv3d,
    nniqat.ConvBn1d: qnn.Conv1d,
    nniqat.ConvBn2d: qnn.Conv2d,
    nniqat.ConvBn3d: qnn.Conv3d,
    nni.ConvReLU1d: qnni.ConvReLU1d,
    nni.ConvReLU2d: qnni.ConvReLU2d,
    nni.ConvReLU3d: qnni.ConvReLU3d,
    nniqat.ConvReLU1d: qnni.ConvReLU1d,
    nniqat.ConvReLU2d: qnni.ConvReLU2d,
    nniqat.ConvReLU3d: qnni.ConvReLU3d,
    nniqat.ConvBnReLU1d: qnni.ConvReLU1d,
    nniqat.ConvBnReLU2d: qnni.ConvReLU2d,
    nniqat.ConvBnReLU3d: qnni.ConvReLU3d,
    nn.ConvTranspose1d: qnn.ConvTranspose1d,
    nn.ConvTranspose2d: qnn.ConvTranspose2d,
    nn.ConvTranspose3d: qnn.ConvTranspose3d,
    # Elementwise and activations
    torch.ao.nn.quantized.FloatFunctional: qnn.QFunctional,
    qnn.FloatFunctional: qnn.QFunctional,
    nn.LeakyReLU: qnn.LeakyReLU,
    nn.Sigmoid: qnn.Sigmoid,
    nn.Softmax: qnn.Softmax,
    nn.Dropout: qnn.Dropout,
    nn.SiLU: qnn.SiLU,
    nn.GELU: qnn.GELU,
    nn.Tanh: qnn.Tanh,
    nn.Mish: qnn.Mish,
    nn.Softplus: qnn.Softplus,
    # Embeddings (weight-only qconfig: float_qparams_weight_only_qconfig[_4bit])
    nn.Embedding: qnn.Embedding,
    nn.EmbeddingBag: qnn.EmbeddingBag,
    nnqat.Embedding: qnn.Embedding,
    nnqat.EmbeddingBag: qnn.EmbeddingBag,
}


def get_default_static_quant_module_mappings() -> Dict[Callable, Any]:
    """A copy of the default float -> qplugin module mapping (safe to extend)."""
    return copy.deepcopy(DEFAULT_STATIC_QUANT_MODULE_MAPPINGS)


def get_default_qconfig_propagation_list() -> set:
    """Module classes that ``torch.ao.quantization.prepare`` should observe for qplugin: torch's
    default list plus every key of :data:`DEFAULT_STATIC_QUANT_MODULE_MAPPINGS` (torch's list lacks
    the activations PyTorch never quantized -- SiLU, GELU, Mish, Softplus, Tanh -- and Sigmoid /
    Softmax, so their observers would be missing and their ``from_float`` would fail).

    Use: ``prepare(model, allow_list=qplugin.quantization.get_default_qconfig_propagation_list())``.
    """
    from torch.ao.quantization.quantization_mappings import (
        get_default_qconfig_propagation_list as _torch_list)
    return set(_torch_list()) | set(DEFAULT_STATIC_QUANT_MODULE_MAPPINGS)


def convert(module: nn.Module, mapping: Optional[Dict[Callable, Any]] = None,
            inplace: bool = False, remove_qconfig: bool = True, *,
            use_precomputed_fake_quant: bool = False) -> nn.Module:
    r"""Swaps every observed submodule whose class is in `mapping` for
    ``mapping[cls].from_float(submodule)`` (≙ torch.ao.quantization.convert, same arguments
    where they overlap).

    Args:
        module: a model prepared with torch.ao.quantization.prepare (observers attached to the
            modules with a qconfig) and calibrated.
        mapping: float class -> qplugin class; default
            :data:`DEFAULT_STATIC_QUANT_MODULE_MAPPINGS`. Modules whose class is not a key (or
            that have no qconfig) are left as they are.
        inplace: mutate `module` instead of converting a deep copy.
        remove_qconfig: afterwards drop every ``qconfig`` attribute and observer (and their
            hooks), as torch's convert does.
        use_precomputed_fake_quant: passed to each ``from_float`` that accepts it.

    Returns:
        The converted model (`module` itself when `inplace`).

    Fused modules (torch.ao.nn.intrinsic, e.g. BNReLU2d from fuse_modules) are swapped as one
    unit; forward pre-hooks and non-observer forward hooks move to the new modules.
    """
    if not isinstance(module, nn.Module):
        raise TypeError("qplugin.quantization.convert: expected a torch.nn.Module, got"
                        f" {type(module).__name__}")
    if mapping is None:
        mapping = DEFAULT_STATIC_QUANT_MODULE_MAPPINGS
    elif not isinstance(mapping, dict):
        raise TypeError("qplugin.quantization.convert: expected mapping to be a dict of float"
                        f" module class -> qplugin module class, got {type(mapping).__name__}")
    if not inplace:
        module = copy.deepcopy(module)
    _convert(module, mapping, use_precomputed_fake_quant)
    if remove_qconfig:
        _remove_qconfig(module)
    return module


def _convert(module: nn.Module, mapping: Dict[Callable, Any],
             use_precomputed_fake_quant: bool) -> None:
    reassign = {}
    for name, child in module.named_children():
        # A fused module is swapped as one unit: do not descend into its members.
        if not isinstance(child, nni._FusedModule):
            _convert(child, mapping, use_precomputed_fake_quant)
        reassign[name] = swap_module(child, mapping, use_precomputed_fake_quant)
    for name, new_child in reassign.items():
        module._modules[name] = new_child


def swap_module(mod: nn.Module, mapping: Dict[Callable, Any],
                use_precomputed_fake_quant: bool = False) -> nn.Module:
    """`mapping[type(mod)].from_float(mod)` if `mod` has a qconfig and its class is mapped, else
    `mod` itself. Hooks (except the observer hook) and the device move to the new module."""
    if getattr(mod, "qconfig", None) is None:
        return mod
    qcls = mapping.get(type_before_parametrizations(mod))
    if qcls is None:
        return mod
    if "use_precomputed_fake_quant" in inspect.signature(qcls.from_float).parameters:
        new_mod = qcls.from_float(mod, use_precomputed_fake_quant=use_precomputed_fake_quant)
    else:
        new_mod = qcls.from_float(mod)
    # Pre-hooks run on the quantized input now; forward hooks other than the observer's on the
    # quantized output (as torch's convert).
    for pre_hook in mod._forward_pre_hooks.values():
        new_mod.register_forward_pre_hook(pre_hook)
    for hook in mod._forward_hooks.values():
        if not _is_observer_hook(hook, pre=False):
            new_mod.register_forward_hook(hook)
    devices = {p.device for p in mod.parameters() if p.device.type != "meta"} | {
        b.device for b in mod.buffers() if b.device.type != "meta"}
    if len(devices) > 1:
        raise ValueError("qplugin.quantization.convert: expected the parameters and buffers of"
                         f" {type(mod).__name__} on one device, got {sorted(map(str, devices))}")
    if devices:
        new_mod.to(next(iter(devices)))
    return new_mod


def _is_observer_hook(fn: Callable, pre: bool) -> bool:
    known = _observer_forward_pre_hook if pre else _observer_forward_hook
    if known is not None:
        return fn is known
    return getattr(fn, "__name__", "") == (  # pragma: no cover
        "_observer_forward_pre_hook" if pre else "_observer_forward_hook")


def _is_observer(mod: Any) -> bool:
    from torch.ao.quantization import FakeQuantizeBase, ObserverBase
    return isinstance(mod, (ObserverBase, FakeQuantizeBase))


def _remove_qconfig(module: nn.Module) -> None:
    """Drop qconfig attributes, observers and observer hooks (≙ torch's _remove_qconfig)."""
    for child in module.children():
        _remove_qconfig(child)
    if hasattr(module, "qconfig"):
        del module.qconfig
    if hasattr(module, "activation_post_process") and _is_observer(
            module.activation_post_process):
        delattr(module, "activation_post_process")
    for hooks, pre in ((module._forward_pre_hooks, True), (module._forward_hooks, False)):
        for handle_id in [h for h, fn in hooks.items() if _is_observer_hook(fn, pre)]:
            hooks.pop(handle_id)
