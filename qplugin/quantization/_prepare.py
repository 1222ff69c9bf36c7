"""prepare / prepare_qat / propagate_qconfig_ / add_quant_dequant (≙ the same functions of
torch.ao.quantization.quantize): attach qconfigs, swap float modules for QAT ones, insert
observers with forward hooks. convert / quantize / quantize_qat live in __init__.py (they need
the qplugin.nn mapping). Observers of torch.ao (a torch.ao qconfig) work here too.
Changes with: __init__.py (convert, mappings), qconfig.py, fused.py, qat.py,
tests/quantization/test_workflow.py. (Not named quantize.py: that name is the function.)
"""
import copy
import warnings
from typing import Any, Callable, Dict, Optional, Set

import torch
from torch import nn
from torch.nn.utils.parametrize import is_parametrized, type_before_parametrizations

from .._ao import classes, torch_ao
from . import fused as _fused
from . import qat as _qat
from .fake_quantize import (FakeQuantizeBase, default_fixed_qparams_range_0to1_fake_quant,
                            default_fixed_qparams_range_neg1to1_fake_quant)
from .observer import ObserverBase
from .qconfig import (_activation_is_memoryless, _add_module_to_qconfig_obs_ctr,
                      _assert_valid_qconfig)
from .stubs import DeQuantStub, QuantWrapper

__all__ = ["add_quant_dequant", "get_default_qat_module_mappings", "prepare", "prepare_qat",
           "propagate_qconfig_"]

# Float class -> QAT class (≙ torch.ao's DEFAULT_QAT_MODULE_MAPPINGS); torch.ao's fused float
# classes map to qplugin's QAT classes too (their from_float accepts both).
DEFAULT_QAT_MODULE_MAPPINGS: Dict[Callable, Any] = {
    nn.Conv2d: _qat.Conv2d,
    nn.Conv3d: _qat.Conv3d,
    nn.Linear: _qat.Linear,
    nn.modules.linear.NonDynamicallyQuantizableLinear: _qat.Linear,
    _fused.ConvBn1d: _qat.ConvBn1d,
    _fused.ConvBn2d: _qat.ConvBn2d,
    _fused.ConvBn3d: _qat.ConvBn3d,
    _fused.ConvBnReLU1d: _qat.ConvBnReLU1d,
    _fused.ConvBnReLU2d: _qat.ConvBnReLU2d,
    _fused.ConvBnReLU3d: _qat.ConvBnReLU3d,
    _fused.ConvReLU2d: _qat.ConvReLU2d,
    _fused.ConvReLU3d: _qat.ConvReLU3d,
    _fused.LinearReLU: _qat.LinearReLU,
    _fused.LinearBn1d: _qat.LinearBn1d,
}
_nni = torch_ao("nn.intrinsic")
if _nni is not None:
    for _k in list(DEFAULT_QAT_MODULE_MAPPINGS):
        _twin = getattr(_nni, _k.__name__, None) if _k.__module__ == _fused.__name__ else None
        if _twin is not None:
            DEFAULT_QAT_MODULE_MAPPINGS[_twin] = DEFAULT_QAT_MODULE_MAPPINGS[_k]

# Modules whose output observer in training is a fixed-qparams fake quant (≙ torch.ao's
# DEFAULT_MODULE_TO_ACT_POST_PROCESS).
_MODULE_TO_ACT_POST_PROCESS: Dict[Callable, Callable] = {
    nn.Hardsigmoid: default_fixed_qparams_range_0to1_fake_quant,
    nn.Sigmoid: default_fixed_qparams_range_0to1_fake_quant,
    nn.Softmax: default_fixed_qparams_range_0to1_fake_quant,
    nn.Tanh: default_fixed_qparams_range_neg1to1_fake_quant,
}


def get_default_qat_module_mappings() -> Dict[Callable, Any]:
    """A copy of the float -> QAT module mapping prepare_qat uses."""
    return copy.deepcopy(DEFAULT_QAT_MODULE_MAPPINGS)


def _fused_bases():
    nni = torch_ao("nn.intrinsic")
    return (_fused._FusedModule,) + ((nni._FusedModule,) if nni is not None else ())


def _is_activation_post_process(mod) -> bool:
    """An observer or fake quant of qplugin's or torch.ao's."""
    if isinstance(mod, (ObserverBase, FakeQuantizeBase)):
        return True
    tq = torch_ao("quantization")
    return tq is not None and isinstance(mod, (tq.ObserverBase, tq.FakeQuantizeBase))


def _propagate_qconfig_helper(module, qconfig_dict, qconfig_parent=None, prefix="",
                              prepare_custom_config_dict=None):
    module_qconfig = qconfig_dict.get(type_before_parametrizations(module), qconfig_parent)
    module_qconfig = qconfig_dict.get(prefix, module_qconfig)
    module_qconfig = getattr(module, "qconfig", module_qconfig)
    _assert_valid_qconfig(module_qconfig, module)
    qconfig_with_device_check = _add_module_to_qconfig_obs_ctr(module_qconfig, module)
    module.qconfig = qconfig_with_device_check
    for name, child in module.named_children():
        module_prefix = prefix + "." + name if prefix else name
        if prepare_custom_config_dict is None or not (
                name in prepare_custom_config_dict.get("non_traceable_module_name", [])
                or type(child) in prepare_custom_config_dict.get("non_traceable_module_class",
                                                                 [])):
            _propagate_qconfig_helper(child, qconfig_dict, qconfig_with_device_check,
                                      module_prefix)


def propagate_qconfig_(module, qconfig_dict=None, prepare_custom_config_dict=None):
    r"""Gives every submodule a ``qconfig`` attribute: its own, else the one `qconfig_dict` names
    for its type or qualified name, else its parent's (≙ torch.ao's propagate_qconfig_)."""
    _propagate_qconfig_helper(module, qconfig_dict or {},
                              prepare_custom_config_dict=prepare_custom_config_dict or {})


def _observer_forward_hook(self, input, output):
    """Forward hook: observe the output."""
    return self.activation_post_process(output)


def _observer_forward_pre_hook(self, input):
    """Forward pre-hook: observe the input (memoryless activation observers)."""
    return self.activation_post_process(input[0])


def _register_activation_post_process_hook(module, pre_hook=False):
    if pre_hook:
        module.register_forward_pre_hook(_observer_forward_pre_hook, prepend=True)
    else:
        module.register_forward_hook(_observer_forward_hook, prepend=True)


def _get_unique_devices_(module):
    return {p.device for p in module.parameters() if p.device.type != "meta"} | {
        p.device for p in module.buffers() if p.device.type != "meta"}


def _has_no_children_ignoring_parametrizations(module):
    if len(module._modules) == 0:
        return True
    if is_parametrized(module):
        return len(module._modules) == 1 and "parametrizations" in module._modules
    return False


def _add_observer_(module, qconfig_propagation_list, non_leaf_module_list=None, device=None,
                   custom_module_class_mapping=None):
    if custom_module_class_mapping is None:
        custom_module_class_mapping = {}
    if device is None:
        devices = _get_unique_devices_(module)
        if len(devices) > 1:
            raise ValueError("qplugin.quantization.prepare: expected a module on one device, got"
                             f" {sorted(map(str, devices))}")
        device = next(iter(devices)) if devices else None

    def get_activation_post_process(qconfig, special=None):
        activation = qconfig.activation() if special is None else special()
        if device is not None:
            activation.to(device)
        return activation

    def needs_observation(m):
        return hasattr(m, "qconfig") and m.qconfig is not None

    dequant_stubs = classes("quantization.DeQuantStub")

    def insert_activation_post_process(m, special=None):
        if needs_observation(m) and not isinstance(m, dequant_stubs):
            m.add_module("activation_post_process",
                         get_activation_post_process(m.qconfig, special))
            _register_activation_post_process_hook(
                m, pre_hook=_activation_is_memoryless(m.qconfig))

    functional = classes("nn.quantized.FloatFunctional")
    nnq = torch_ao("nn.quantized")
    if nnq is not None:
        functional = functional + (nnq.QFunctional,)
    from ..nn import QFunctional
    functional = functional + (QFunctional,)
    fused_bases = _fused_bases()
    for name, child in module.named_children():
        t = type_before_parametrizations(child)
        if t is nn.Dropout:
            continue
        if issubclass(t, functional):
            if needs_observation(child):
                child.activation_post_process = get_activation_post_process(child.qconfig)
        elif isinstance(child, fused_bases):
            if needs_observation(child):
                insert_activation_post_process(child)
        elif non_leaf_module_list is not None and t in non_leaf_module_list:
            if needs_observation(child):
                insert_activation_post_process(child)
        elif child.training and type(child) in _MODULE_TO_ACT_POST_PROCESS:
            insert_activation_post_process(child, _MODULE_TO_ACT_POST_PROCESS[type(child)])
        elif needs_observation(child) and t in custom_module_class_mapping:
            observed = custom_module_class_mapping[t].from_float(child)
            setattr(module, name, observed)
            insert_activation_post_process(observed)
        else:
            _add_observer_(child, qconfig_propagation_list, non_leaf_module_list, device,
                           custom_module_class_mapping)
    t = type_before_parametrizations(module)
    if (_has_no_children_ignoring_parametrizations(module)
            and not isinstance(module, nn.Sequential) and t in qconfig_propagation_list):
        insert_activation_post_process(module)
    if (hasattr(module, "weight_fake_quant") and not isinstance(module, nn.Sequential)
            and t in qconfig_propagation_list):
        insert_activation_post_process(module)


def prepare(model, inplace=False, allow_list=None, observer_non_leaf_module_list=None,
            prepare_custom_config_dict=None):
    r"""Propagates qconfigs and attaches an observer (``activation_post_process`` with a forward
    hook) to every module with a qconfig whose class is in `allow_list`
    (≙ torch.ao.quantization.prepare; same arguments).

    Args:
        model: the float model (``qconfig`` attributes set on it or its submodules).
        inplace: modify `model` instead of a deep copy.
        allow_list: classes to observe; default
            :func:`qplugin.quantization.get_default_qconfig_propagation_list` (torch.ao's default
            list plus every class qplugin converts: so, unlike torch.ao's default, SiLU, GELU,
            pools... are observed and convert too).
        observer_non_leaf_module_list: non-leaf classes to observe as a whole.
        prepare_custom_config_dict: ``{"float_to_observed_custom_module_class": {...}}``.

    Returns:
        The prepared model.
    """
    if not isinstance(model, nn.Module):
        raise TypeError("qplugin.quantization.prepare: expected a torch.nn.Module, got"
                        f" {type(model).__name__}")
    custom = (prepare_custom_config_dict or {}).get("float_to_observed_custom_module_class", {})
    if not inplace:
        model = copy.deepcopy(model)
    if allow_list is None:
        from . import get_default_qconfig_propagation_list
        allow_list = get_default_qconfig_propagation_list()
    propagate_qconfig_(model, qconfig_dict=None)
    if not any(hasattr(m, "qconfig") and m.qconfig for m in model.modules()):
        warnings.warn("None of the submodule got qconfig applied. Make sure you passed correct"
                      " configuration through `qconfig_dict` or by assigning the `.qconfig`"
                      " attribute directly on submodules", stacklevel=2)
    _add_observer_(model, allow_list, observer_non_leaf_module_list,
                   custom_module_class_mapping=custom)
    return model


def prepare_qat(model, mapping=None, inplace=False):
    r"""Swaps float (and fused) modules for QAT modules and attaches fake-quant observers
    (≙ torch.ao.quantization.prepare_qat). `model` must be in training mode.

    Args:
        model: the float model with ``qconfig`` attributes (a QAT qconfig, e.g.
            ``get_default_qat_qconfig("x86")``), fused with :func:`fuse_modules_qat` if wanted.
        mapping: float class -> QAT class; default :func:`get_default_qat_module_mappings`.
        inplace: modify `model` instead of a deep copy.
    """
    if not isinstance(model, nn.Module):
        raise TypeError("qplugin.quantization.prepare_qat: expected a torch.nn.Module, got"
                        f" {type(model).__name__}")
    if not model.training:
        raise ValueError("qplugin.quantization.prepare_qat: expected a model in training mode;"
                         " call model.train() first")
    if mapping is None:
        mapping = get_default_qat_module_mappings()
    if not inplace:
        model = copy.deepcopy(model)
    from . import convert
    propagate_qconfig_(model, qconfig_dict=None)
    convert(model, mapping=mapping, inplace=True, remove_qconfig=False)
    prepare(model, observer_non_leaf_module_list=set(mapping.values()), inplace=True)
    return model


def add_quant_dequant(module):
    r"""Wraps every leaf module that has a qconfig in a :class:`QuantWrapper` (≙ torch.ao's)."""
    if _has_no_children_ignoring_parametrizations(module) and getattr(module, "qconfig", None):
        return QuantWrapper(module)
    for name, child in module.named_children():
        module._modules[name] = add_quant_dequant(child)
    return module
