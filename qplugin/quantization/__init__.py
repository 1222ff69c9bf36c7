"""qplugin.quantization: the eager-mode calibration workflow of its own (≙ torch.ao.quantization,
same names, signatures, defaults and numerics, so migrating is a name swap): QConfig and presets
(qconfig.py), observers (observer.py), fake quantization (fake_quantize.py), QuantStub /
DeQuantStub / QuantWrapper (stubs.py), fused float modules and fuse_modules (fused.py), QAT
modules (qat.py), prepare / prepare_qat / propagate_qconfig_ / add_quant_dequant (_prepare.py),
and here convert(), which swaps observed float (and fused, QAT) modules for qplugin.nn modules,
and quantize() / quantize_qat(). _migrate.py: from_torch_ao() and load_torch_ao_state_dict().

Nothing here requires torch.ao: while it exists, models prepared by torch.ao.quantization convert
too (the mapping also holds torch.ao's float / fused / QAT classes; its observers and hooks are
recognised), through qplugin/_ao.py.
Changes with: the from_float of every module in the mapping (qplugin/nn, qplugin/nn/intrinsic),
tests/nn/test_conversion_foundation.py, tests/models/, tests/quantization/.
"""
import copy
import inspect
from typing import Any, Callable, Dict, Optional

import torch
from torch import nn
from torch.nn.utils.parametrize import type_before_parametrizations

from .. import nn as qnn
from .._tables import activation as _activation_table
from .._ao import torch_ao
from ..nn import intrinsic as qnni
from . import fused as _fused
from . import qat as _qat
from .fake_quantize import *  # noqa: F401,F403
from .fake_quantize import __all__ as _fq_all
from .fake_quantize import FakeQuantizeBase
from .fused import fuse_modules, fuse_modules_qat  # noqa: F401
from .observer import *  # noqa: F401,F403
from .observer import __all__ as _obs_all
from .observer import ObserverBase
from .qconfig import *  # noqa: F401,F403
from .qconfig import __all__ as _qconfig_all
from .stubs import DeQuantStub, QuantStub, QuantWrapper
from ._prepare import (  # noqa: E402
    DEFAULT_QAT_MODULE_MAPPINGS, _fused_bases, _is_activation_post_process,
    _observer_forward_hook, _observer_forward_pre_hook, add_quant_dequant,
    get_default_qat_module_mappings, prepare, prepare_qat, propagate_qconfig_)

__all__ = [
    "DEFAULT_MODULE_MAPPING",
    "DEFAULT_STATIC_QUANT_MODULE_MAPPINGS",
    "DeQuantStub",
    "QuantStub",
    "QuantWrapper",
    "add_quant_dequant",
    "convert",
    "from_torch_ao",
    "fuse_modules",
    "fuse_modules_qat",
    "get_default_qat_module_mappings",
    "get_default_qconfig_propagation_list",
    "get_default_static_quant_module_mappings",
    "get_default_torch_ao_migrations",
    "load_torch_ao_state_dict",
    "prepare",
    "prepare_qat",
    "propagate_qconfig_",
    "quantize",
    "quantize_qat",
    "swap_module",
] + _obs_all + _fq_all + _qconfig_all


class _FoldBatchNorm:
    """Mapping value for a non-QAT fused ``ConvBn*d`` / ``ConvBnReLU*d`` / ``LinearBn1d``
    (qplugin.quantization.fused or torch.ao.nn.intrinsic, made by ``fuse_modules`` in training
    mode): ``from_float`` folds the
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
            relu_cls = {1: _fused.ConvReLU1d, 2: _fused.ConvReLU2d, 3: _fused.ConvReLU3d}[
                len(conv.kernel_size)]
            folded = relu_cls(folded, mod[2])
        folded.qconfig = mod.qconfig
        folded.activation_post_process = mod.activation_post_process
        return self.qcls.from_float(folded, use_precomputed_fake_quant=use_precomputed_fake_quant)


# Float (observed) module class -> qplugin module class (≙ torch.ao.quantization's
# DEFAULT_STATIC_QUANT_MODULE_MAPPINGS). Keys are exact classes, as in torch's convert: qplugin's
# own stubs, fused and QAT classes, then (_add_torch_ao_keys) torch.ao's twins when importable.
DEFAULT_STATIC_QUANT_MODULE_MAPPINGS: Dict[Callable, Any] = {
    QuantStub: qnn.Quantize,
    DeQuantStub: qnn.DeQuantize,
    nn.BatchNorm2d: qnn.BatchNorm2d,
    nn.BatchNorm3d: qnn.BatchNorm3d,
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
    _fused.BNReLU2d: qnni.BNReLU2d,
    _fused.BNReLU3d: qnni.BNReLU3d,
    # Linear
    nn.Linear: qnn.Linear,
    nn.modules.linear.NonDynamicallyQuantizableLinear: qnn.Linear,
    _qat.Linear: qnn.Linear,
    _fused.LinearReLU: qnni.LinearReLU,
    _qat.LinearReLU: qnni.LinearReLU,
    _qat.LinearBn1d: qnn.Linear,
    # Convolution (plain, QAT, fused with BN folded, fused with ReLU)
    nn.Conv1d: qnn.Conv1d,
    nn.Conv2d: qnn.Conv2d,
    nn.Conv3d: qnn.Conv3d,
    _qat.Conv1d: qnn.Conv1d,
    _qat.Conv2d: qnn.Conv2d,
    _qat.Conv3d: qnn.Conv3d,
    _qat.ConvBn1d: qnn.Conv1d,
    _qat.ConvBn2d: qnn.Conv2d,
    _qat.ConvBn3d: qnn.Conv3d,
    _fused.ConvReLU1d: qnni.ConvReLU1d,
    _fused.ConvReLU2d: qnni.ConvReLU2d,
    _fused.ConvReLU3d: qnni.ConvReLU3d,
    _qat.ConvReLU1d: qnni.ConvReLU1d,
    _qat.ConvReLU2d: qnni.ConvReLU2d,
    _qat.ConvReLU3d: qnni.ConvReLU3d,
    _qat.ConvBnReLU1d: qnni.ConvReLU1d,
    _qat.ConvBnReLU2d: qnni.ConvReLU2d,
    _qat.ConvBnReLU3d: qnni.ConvReLU3d,
    nn.ConvTranspose1d: qnn.ConvTranspose1d,
    nn.ConvTranspose2d: qnn.ConvTranspose2d,
    nn.ConvTranspose3d: qnn.ConvTranspose3d,
    # Elementwise and activations (one entry per module row of qplugin/_tables/activation.py)
    **{row.torch_module: getattr(qnn, row.module) for row in _activation_table.ROWS if row.module},
    qnn.FloatFunctional: qnn.QFunctional,
    nn.PReLU: qnn.PReLU,
    nn.Dropout: qnn.Dropout,
    # Extension: fused ConvBn*d / ConvBnReLU*d / LinearBn1d from fuse_modules in *training*
    # mode, then a static prepare (torch.ao's mapping has no entry and leaves them float, so its
    # converted model fails on the quantized input): the batch norm is folded with its running
    # statistics at convert. (fuse_modules in eval mode folds it already, giving Conv*d /
    # ConvReLU*d / Linear; prepare_qat gives QAT modules, mapped above.)
    _fused.ConvBn1d: _FoldBatchNorm(qnn.Conv1d),
    _fused.ConvBn2d: _FoldBatchNorm(qnn.Conv2d),
    _fused.ConvBn3d: _FoldBatchNorm(qnn.Conv3d),
    _fused.ConvBnReLU1d: _FoldBatchNorm(qnni.ConvReLU1d),
    _fused.ConvBnReLU2d: _FoldBatchNorm(qnni.ConvReLU2d),
    _fused.ConvBnReLU3d: _FoldBatchNorm(qnni.ConvReLU3d),
    _fused.LinearBn1d: _FoldBatchNorm(qnn.Linear),
    # Embeddings (weight-only qconfig: float_qparams_weight_only_qconfig[_4bit])
    nn.Embedding: qnn.Embedding,
    nn.EmbeddingBag: qnn.EmbeddingBag,
    _qat.Embedding: qnn.Embedding,
    _qat.EmbeddingBag: qnn.EmbeddingBag,
}


def _add_torch_ao_keys(mapping: Dict[Callable, Any]) -> None:
    """While torch.ao imports, its stubs, FloatFunctional, fused and QAT classes map like
    qplugin's twins (a model prepared by torch.ao converts with qplugin's convert), plus the
    torch.ao-only fused patterns (ConvAdd2d, ConvAddReLU2d, LinearLeakyReLU, LinearTanh)."""
    twin_pkgs = {QuantStub.__module__: ("quantization",), _fused.__name__: ("nn.intrinsic",),
                 _qat.__name__: ("nn.qat", "nn.intrinsic.qat")}
    for key, value in list(mapping.items()):
        pkgs = ("nn.quantized",) if key is qnn.FloatFunctional else twin_pkgs.get(
            getattr(key, "__module__", None), ())
        for pkg in pkgs:
            ao = torch_ao(pkg)
            twin = getattr(ao, key.__name__, None) if ao is not None else None
            if isinstance(twin, type) and twin not in mapping:
                mapping[twin] = value
    nni = torch_ao("nn.intrinsic")
    if nni is not None:
        mapping.update({nni.ConvAdd2d: qnni.ConvAdd2d, nni.ConvAddReLU2d: qnni.ConvAddReLU2d,
                        nni.LinearLeakyReLU: qnni.LinearLeakyReLU,
                        nni.LinearTanh: qnni.LinearTanh})


_add_torch_ao_keys(DEFAULT_STATIC_QUANT_MODULE_MAPPINGS)
# The public name (issue #9); DEFAULT_STATIC_QUANT_MODULE_MAPPINGS (torch.ao's name) is the same
# dict.
DEFAULT_MODULE_MAPPING = DEFAULT_STATIC_QUANT_MODULE_MAPPINGS


from ._migrate import (  # noqa: E402
    from_torch_ao, get_default_torch_ao_migrations, load_torch_ao_state_dict)


def get_default_static_quant_module_mappings() -> Dict[Callable, Any]:
    """A copy of the default float -> qplugin module mapping (safe to extend)."""
    return copy.deepcopy(DEFAULT_STATIC_QUANT_MODULE_MAPPINGS)


def get_default_qconfig_propagation_list() -> set:
    """Module classes :func:`prepare` observes by default: every key of
    :data:`DEFAULT_STATIC_QUANT_MODULE_MAPPINGS` and of the QAT mapping, the recurrent modules
    and nn.Sequential (torch.ao's list is built the same way from its mappings), plus torch.ao's
    own list while it imports. torch.ao's list lacks the activations PyTorch never quantized --
    SiLU, GELU, Mish, Softplus, Tanh -- and Sigmoid / Softmax, pools, Upsample: without their
    observers their ``from_float`` would fail.

    For torch.ao's prepare: ``torch.ao.quantization.prepare(model,
    allow_list=qplugin.quantization.get_default_qconfig_propagation_list())``.
    """
    out = set(DEFAULT_STATIC_QUANT_MODULE_MAPPINGS) | set(DEFAULT_QAT_MODULE_MAPPINGS) | {
        nn.Sequential, nn.GRUCell, nn.LSTM, nn.GRU, nn.LSTMCell, nn.RNNCell}
    mappings = torch_ao("quantization.quantization_mappings")
    if mappings is not None:
        out |= set(mappings.get_default_qconfig_propagation_list())
    return out


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
    ``model.eval()``, :func:`prepare` (observers on every module with a qconfig whose class is in
    :func:`get_default_qconfig_propagation_list`), calibration by ``run_fn(model, *run_args)``,
    then :func:`convert` with `mapping`.

    Args:
        model: a float model whose (sub)modules carry ``qconfig`` attributes, with QuantStub /
            DeQuantStub marking the quantized region.
        run_fn: the calibration function, called as ``run_fn(prepared_model, *run_args)``.
        run_args: the extra positional arguments of `run_fn` (a tuple or list; another value is
            passed as the single argument).
        mapping: float class -> qplugin class; default :data:`DEFAULT_MODULE_MAPPING`.
        inplace: quantize `model` itself instead of a deep copy.

    Returns:
        The converted model.
    """
    return _prepare_run_convert("quantize", model, run_fn, run_args, inplace, False,
                                lambda m: prepare(m, inplace=True), mapping)


def quantize_qat(model: nn.Module, run_fn: Callable, run_args: Any,
                 inplace: bool = False) -> nn.Module:
    r"""Quantization-aware training in one call (≙ torch.ao.quantization.quantize_qat):
    ``model.train()``, :func:`prepare_qat` (qplugin's QAT modules and fake quants),
    ``run_fn(model, *run_args)`` (the training loop), then :func:`convert` into qplugin modules.

    As :func:`quantize`, the observers also go on the modules torch.ao's default list misses
    (:func:`get_default_qconfig_propagation_list`: e.g. pooling outputs, SiLU, GELU), so the
    fake-quantized training differs slightly from torch.ao's quantize_qat on such models.

    Args:
        model: a float model with ``qconfig`` attributes (a QAT qconfig, e.g.
            ``qplugin.quantization.get_default_qat_qconfig("x86")``), fused with
            ``fuse_modules_qat`` if wanted.
        run_fn: the training function, called as ``run_fn(prepared_model, *run_args)``.
        run_args: its extra positional arguments (as in :func:`quantize`).
        inplace: work on `model` itself instead of a deep copy.

    Returns:
        The converted model.
    """
    return _prepare_run_convert("quantize_qat", model, run_fn, run_args, inplace, True,
                                lambda m: prepare_qat(m, inplace=True), None)


def _prepare_run_convert(name: str, model: nn.Module, run_fn: Callable, run_args: Any,
                         inplace: bool, train: bool, prepare_fn: Callable,
                         mapping) -> nn.Module:
    """quantize / quantize_qat: checks, copy, train or eval mode, prepare_fn, run_fn, convert."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"qplugin.quantization.{name}: expected a torch.nn.Module, got"
                        f" {type(model).__name__}")
    if not callable(run_fn):
        raise TypeError(f"qplugin.quantization.{name}: expected run_fn to be callable, got"
                        f" {type(run_fn).__name__}")
    if not inplace:
        model = copy.deepcopy(model)
    if train:
        model.train()
    else:
        model.eval()
    prepare_fn(model)
    run_fn(model, *_as_args(run_args))
    convert(model, mapping, inplace=True)
    return model


def _as_args(run_args: Any):
    return tuple(run_args) if isinstance(run_args, (tuple, list)) else (run_args,)


def _convert(module: nn.Module, mapping: Dict[Callable, Any],
             use_precomputed_fake_quant: bool) -> None:
    reassign = {}
    fused_bases = _fused_bases()
    for name, child in module.named_children():
        # A fused module is swapped as one unit: do not descend into its members.
        if not isinstance(child, fused_bases):
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
    """qplugin's observer hook, or torch.ao's (by identity when importable, else by name)."""
    if fn is (_observer_forward_pre_hook if pre else _observer_forward_hook):
        return True
    name = "_observer_forward_pre_hook" if pre else "_observer_forward_hook"
    tq = torch_ao("quantization.quantize")
    known = getattr(tq, name, None) if tq is not None else None
    if known is not None:
        return fn is known
    return getattr(fn, "__name__", "") == name and "torch.ao" in getattr(fn, "__module__", "")


def _is_observer(mod: Any) -> bool:
    return _is_activation_post_process(mod)


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

# Dynamic quantization (#17): quantize_dynamic and its mapping live in _dynamic.py.
from ._dynamic import (  # noqa: E402
    DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS, get_default_dynamic_quant_module_mappings,
    quantize_dynamic)

__all__ += ["DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS", "get_default_dynamic_quant_module_mappings",
            "quantize_dynamic"]
