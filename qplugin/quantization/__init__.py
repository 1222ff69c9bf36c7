"""qplugin.quantization: convert() swaps the observed float (and fused) modules that
torch.ao.quantization.prepare leaves behind for qplugin.nn modules, like
torch.ao.quantization.convert does for torch.ao.nn.quantized -- but into modules that run on
torch.ops.qplugin. The swap is implemented here (torch's convert is not called). Also:
quantize()/quantize_qat() (one-call flows) and, in _migrate.py, from_torch_ao() and
load_torch_ao_state_dict() (models and checkpoints converted by torch.ao).
Changes with: the from_float of every module in the mapping (qplugin/nn, qplugin/nn/intrinsic),
tests/nn/test_conversion_foundation.py, tests/models/.
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
    "DEFAULT_MODULE_MAPPING",
    "DEFAULT_STATIC_QUANT_MODULE_MAPPINGS",
    "convert",
    "from_torch_ao",
    "get_default_qconfig_propagation_list",
    "get_default_static_quant_module_mappings",
    "get_default_torch_ao_migrations",
    "load_torch_ao_state_dict",
    "quantize",
    "quantize_qat",
    "swap_module",
]


class _FoldBatchNorm:
    """Mapping value for a non-QAT fused ``ConvBn*d`` / ``ConvBnReLU*d`` / ``LinearBn1d``
    (torch.ao.nn.intrinsic, made by ``fuse_modules`` in training mode): ``from_float`` folds the
    batch norm's running statistics into a copy of the conv (linear) and hands it, with the fused
    module's qconfig and output observer, to ``qcls.from_float``."""

    def __init__(self, qcls):
        self.qcls = qcls
        self.__name__ = f"_FoldBatchNorm({qcls.__name__})"

    def __repr__(self):
        return self.__name__

    def __eq__(self, other):
        return isinstance(other, _FoldBatchNorm) and other.qcls is self.qcls

    def __hash__(self):
        return hash((_FoldBatchNorm, self.qcls))

    def __deepcopy__(self, memo):
        return self  # immutable (get_default_static_quant_module_mappings deep-copies)

    def from_float(self, mod, use_precomputed_fake_quant=False):
        from torch.nn.utils.fusion import fuse_conv_bn_weights, fuse_linear_bn_weights
        conv, bn = mod[0], mod[1]
        folded = copy.deepcopy(conv)
        if isinstance(conv, nn.Linear):
            w, b = fuse_linear_bn_weights(conv.weight, conv.bias, bn.running_mean,
                                          bn.running_var, bn.eps, bn.weight, bn.bias)
        else:
            w, b = fuse_conv_bn_weights(conv.weight, conv.bias, bn.running_mean, bn.running_var,
                                        bn.eps, bn.weight, bn.bias, transpose=False)
        folded.weight, folded.bias = w, b
        if len(mod) > 2 and isinstance(mod[2], nn.ReLU):  # ConvBnReLU: conv, bn, relu
            relu_cls = {1: nni.ConvReLU1d, 2: nni.ConvReLU2d, 3: nni.ConvReLU3d}[
                len(conv.kernel_size)]
            folded = relu_cls(folded, mod[2])
        folded.qconfig = mod.qconfig
        folded.activation_post_process = mod.activation_post_process
        return self.qcls.from_float(folded, use_precomputed_fake_quant=use_precomputed_fake_quant)


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
    nni.LinearLeakyReLU: qnni.LinearLeakyReLU,
    nni.LinearTanh: qnni.LinearTanh,
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
    nni.ConvAdd2d: qnni.ConvAdd2d,
    nni.ConvAddReLU2d: qnni.ConvAddReLU2d,
    nn.ConvTranspose1d: qnn.ConvTranspose1d,
    nn.ConvTranspose2d: qnn.ConvTranspose2d,
    nn.ConvTranspose3d: qnn.ConvTranspose3d,
    # Elementwise and activations
    torch.ao.nn.quantized.FloatFunctional: qnn.QFunctional,
    qnn.FloatFunctional: qnn.QFunctional,
    nn.LeakyReLU: qnn.LeakyReLU,
    nn.PReLU: qnn.PReLU,
    nn.Sigmoid: qnn.Sigmoid,
    nn.Softmax: qnn.Softmax,
    nn.Dropout: qnn.Dropout,
    nn.SiLU: qnn.SiLU,
    nn.GELU: qnn.GELU,
    nn.Tanh: qnn.Tanh,
    nn.Mish: qnn.Mish,
    nn.Softplus: qnn.Softplus,
    # Extension: fused ConvBn*d / ConvBnReLU*d / LinearBn1d from fuse_modules in *training*
    # mode, then a static prepare (torch.ao's mapping has no entry and leaves them float, so its
    # converted model fails on the quantized input): the batch norm is folded with its running
    # statistics at convert. (fuse_modules in eval mode folds it already, giving Conv*d /
    # ConvReLU*d / Linear; prepare_qat gives torch.ao.nn.intrinsic.qat modules, mapped above.)
    nni.ConvBn1d: _FoldBatchNorm(qnn.Conv1d),
    nni.ConvBn2d: _FoldBatchNorm(qnn.Conv2d),
    nni.ConvBn3d: _FoldBatchNorm(qnn.Conv3d),
    nni.ConvBnReLU1d: _FoldBatchNorm(qnni.ConvReLU1d),
    nni.ConvBnReLU2d: _FoldBatchNorm(qnni.ConvReLU2d),
    nni.ConvBnReLU3d: _FoldBatchNorm(qnni.ConvReLU3d),
    nni.LinearBn1d: _FoldBatchNorm(qnn.Linear),
    # Embeddings (weight-only qconfig: float_qparams_weight_only_qconfig[_4bit])
    nn.Embedding: qnn.Embedding,
    nn.EmbeddingBag: qnn.EmbeddingBag,
    nnqat.Embedding: qnn.Embedding,
    nnqat.EmbeddingBag: qnn.EmbeddingBag,
}
# The public name (issue #9); DEFAULT_STATIC_QUANT_MODULE_MAPPINGS (torch.ao's name) is the same
# dict.
DEFAULT_MODULE_MAPPING = DEFAULT_STATIC_QUANT_MODULE_MAPPINGS


from ._migrate import (  # noqa: E402
    from_torch_ao, get_default_torch_ao_migrations, load_torch_ao_state_dict)


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


def quantize(model: nn.Module, run_fn: Callable, run_args: Any,
             mapping: Optional[Dict[Callable, Any]] = None, inplace: bool = False) -> nn.Module:
    r"""Post-training static quantization in one call (≙ torch.ao.quantization.quantize):
    ``model.eval()``, ``torch.ao.quantization.prepare`` (observers on every module with a
    qconfig whose class is in :func:`get_default_qconfig_propagation_list`), calibration by
    ``run_fn(model, *run_args)``, then :func:`convert` with `mapping`.

    Args:
        model: a float model whose (sub)modules carry ``qconfig`` attributes, with QuantStub /
            DeQuantStub marking the quantized region, as for torch.ao.
        run_fn: the calibration function, called as ``run_fn(prepared_model, *run_args)``.
        run_args: the extra positional arguments of `run_fn` (a tuple or list; another value is
            passed as the single argument).
        mapping: float class -> qplugin class; default :data:`DEFAULT_MODULE_MAPPING`.
        inplace: quantize `model` itself instead of a deep copy.

    Returns:
        The converted model.
    """
    import torch.ao.quantization as tq
    if not isinstance(model, nn.Module):
        raise TypeError("qplugin.quantization.quantize: expected a torch.nn.Module, got"
                        f" {type(model).__name__}")
    if not callable(run_fn):
        raise TypeError("qplugin.quantization.quantize: expected run_fn to be callable, got"
                        f" {type(run_fn).__name__}")
    if not inplace:
        model = copy.deepcopy(model)
    model.eval()
    tq.prepare(model, inplace=True, allow_list=get_default_qconfig_propagation_list())
    run_fn(model, *_as_args(run_args))
    convert(model, mapping, inplace=True)
    return model


def quantize_qat(model: nn.Module, run_fn: Callable, run_args: Any,
                 inplace: bool = False) -> nn.Module:
    r"""Quantization-aware training in one call (≙ torch.ao.quantization.quantize_qat):
    ``model.train()``, swap to torch.ao's QAT modules (fake-quantized float modules: PyTorch's
    QAT mapping) with fake-quant observers, ``run_fn(model, *run_args)`` (the training loop),
    then :func:`convert` into qplugin modules.

    As :func:`quantize`, the observers also go on the modules torch's list misses
    (:func:`get_default_qconfig_propagation_list`: e.g. pooling outputs, SiLU, GELU), so the
    fake-quantized training differs slightly from torch.ao's quantize_qat on such models.

    Args:
        model: a float model with ``qconfig`` attributes (a QAT qconfig, e.g.
            ``torch.ao.quantization.get_default_qat_qconfig("x86")``), fused with
            ``fuse_modules_qat`` if wanted.
        run_fn: the training function, called as ``run_fn(prepared_model, *run_args)``.
        run_args: its extra positional arguments (as in :func:`quantize`).
        inplace: work on `model` itself instead of a deep copy.

    Returns:
        The converted model.
    """
    import torch.ao.quantization as tq
    from torch.ao.quantization.quantization_mappings import get_default_qat_module_mappings
    if not isinstance(model, nn.Module):
        raise TypeError("qplugin.quantization.quantize_qat: expected a torch.nn.Module, got"
                        f" {type(model).__name__}")
    if not callable(run_fn):
        raise TypeError("qplugin.quantization.quantize_qat: expected run_fn to be callable, got"
                        f" {type(run_fn).__name__}")
    if not inplace:
        model = copy.deepcopy(model)
    model.train()
    # ≙ torch.ao.quantization.prepare_qat, with qplugin's observation list. The float -> QAT
    # swap is PyTorch's (QAT modules compute in float); nothing quantized of PyTorch's runs.
    qat_mapping = get_default_qat_module_mappings()
    tq.propagate_qconfig_(model, qconfig_dict=None)
    tq.convert(model, mapping=qat_mapping, inplace=True, remove_qconfig=False)
    tq.prepare(model, observer_non_leaf_module_list=set(qat_mapping.values()), inplace=True,
               allow_list=get_default_qconfig_propagation_list())
    run_fn(model, *_as_args(run_args))
    convert(model, inplace=True)
    return model


def _as_args(run_args: Any):
    return tuple(run_args) if isinstance(run_args, (tuple, list)) else (run_args,)


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
