"""Float fused modules (≙ torch.ao.nn.intrinsic: ConvReLU*d, ConvBn*d, ConvBnReLU*d,
LinearReLU, LinearBn1d, BNReLU*d -- sequential containers marking a pattern that converts as one
unit) and fuse_modules / fuse_modules_qat (≙ torch.ao.quantization.fuse_modules*), with the
batch norm folded into the conv/linear in eval mode (torch.nn.utils.fusion, core PyTorch).
Changes with: qat.py (the QAT forms of these), __init__.py and _prepare.py (mapping tables), qplugin/_ao.py,
tests/quantization/test_fuse.py.
"""
import copy
from typing import Callable, Dict, List, Optional

import torch
from torch import nn
from torch.nn.utils.fusion import fuse_conv_bn_eval, fuse_linear_bn_eval
from torch.nn.utils.parametrize import type_before_parametrizations

__all__ = [
    "BNReLU2d", "BNReLU3d", "ConvBn1d", "ConvBn2d", "ConvBn3d", "ConvBnReLU1d", "ConvBnReLU2d",
    "ConvBnReLU3d", "ConvReLU1d", "ConvReLU2d", "ConvReLU3d", "LinearBn1d", "LinearReLU",
    "fuse_known_modules", "fuse_modules", "fuse_modules_qat", "get_fuser_method",
]


def _fused_base():
    # While torch.ao exists, also a torch.ao.nn.intrinsic._FusedModule (itself a bare
    # nn.Sequential subclass), only so that torch.ao.quantization.prepare observes qplugin's
    # fused modules as one unit; without torch.ao, nn.Sequential.
    from .._ao import torch_ao
    nni = torch_ao("nn.intrinsic")
    return nni._FusedModule if nni is not None else nn.Sequential


class _FusedModule(_fused_base()):
    """Base of the fused float modules: converted as one unit (convert does not descend)."""


def _fused(name: str, parts):
    """A fused container class taking modules of the given types, in order."""

    def __init__(self, *mods):
        if len(mods) != len(parts) or not all(
                type_before_parametrizations(m) is t for m, t in zip(mods, parts)):
            got = ", ".join(type_before_parametrizations(m).__name__ for m in mods)
            want = ", ".join(t.__name__ for t in parts)
            raise TypeError(f"qplugin.quantization.fused.{name}: expected ({want}), got ({got})")
        _FusedModule.__init__(self, *mods)

    return type(name, (_FusedModule,), {"__init__": __init__, "__module__": __name__,
                                         "__qualname__": name,
                                         "__doc__": f"Fused {' + '.join(t.__name__ for t in parts)}"
                                                    " (float; ≙ torch.ao.nn.intrinsic."
                                                    f"{name})."})


ConvReLU1d = _fused("ConvReLU1d", (nn.Conv1d, nn.ReLU))
ConvReLU2d = _fused("ConvReLU2d", (nn.Conv2d, nn.ReLU))
ConvReLU3d = _fused("ConvReLU3d", (nn.Conv3d, nn.ReLU))
ConvBn1d = _fused("ConvBn1d", (nn.Conv1d, nn.BatchNorm1d))
ConvBn2d = _fused("ConvBn2d", (nn.Conv2d, nn.BatchNorm2d))
ConvBn3d = _fused("ConvBn3d", (nn.Conv3d, nn.BatchNorm3d))
ConvBnReLU1d = _fused("ConvBnReLU1d", (nn.Conv1d, nn.BatchNorm1d, nn.ReLU))
ConvBnReLU2d = _fused("ConvBnReLU2d", (nn.Conv2d, nn.BatchNorm2d, nn.ReLU))
ConvBnReLU3d = _fused("ConvBnReLU3d", (nn.Conv3d, nn.BatchNorm3d, nn.ReLU))
LinearReLU = _fused("LinearReLU", (nn.Linear, nn.ReLU))
LinearBn1d = _fused("LinearBn1d", (nn.Linear, nn.BatchNorm1d))
BNReLU2d = _fused("BNReLU2d", (nn.BatchNorm2d, nn.ReLU))
BNReLU3d = _fused("BNReLU3d", (nn.BatchNorm3d, nn.ReLU))

_CONV_RELU = {nn.Conv1d: ConvReLU1d, nn.Conv2d: ConvReLU2d, nn.Conv3d: ConvReLU3d}
_CONV_BN = {nn.Conv1d: ConvBn1d, nn.Conv2d: ConvBn2d, nn.Conv3d: ConvBn3d}
_CONV_BN_RELU = {nn.Conv1d: ConvBnReLU1d, nn.Conv2d: ConvBnReLU2d, nn.Conv3d: ConvBnReLU3d}


def _check_bn(owner, mod, bn, out):
    if mod.training != bn.training:
        raise ValueError(f"qplugin.quantization.{owner}: expected {type(mod).__name__} and"
                         f" {type(bn).__name__} in the same mode (train or eval)")
    if not bn.training:
        return
    if bn.num_features != out:
        raise ValueError(f"qplugin.quantization.{owner}: expected the batch norm's num_features"
                         f" ({bn.num_features}) to equal the output channels ({out})")
    if not bn.affine or not bn.track_running_stats:
        raise ValueError(f"qplugin.quantization.{owner}: expected a batch norm with affine=True"
                         " and track_running_stats=True")


def fuse_conv_bn(is_qat, conv, bn):
    """Conv + BN: a ConvBn*d (QAT) or the conv with the batch norm folded in (eval)."""
    _check_bn("fuse_conv_bn", conv, bn, conv.out_channels)
    if is_qat:
        return _CONV_BN[type(conv)](conv, bn)
    return fuse_conv_bn_eval(conv, bn)


def fuse_conv_bn_relu(is_qat, conv, bn, relu):
    """Conv + BN + ReLU: a ConvBnReLU*d (QAT) or ConvReLU*d of the folded conv (eval)."""
    _check_bn("fuse_conv_bn_relu", conv, bn, conv.out_channels)
    if is_qat:
        return _CONV_BN_RELU[type(conv)](conv, bn, relu)
    return _CONV_RELU[type(conv)](fuse_conv_bn_eval(conv, bn), relu)


def fuse_linear_bn(is_qat, linear, bn):
    """Linear + BatchNorm1d: a LinearBn1d (QAT) or the folded Linear (eval)."""
    _check_bn("fuse_linear_bn", linear, bn, linear.out_features)
    if is_qat:
        return LinearBn1d(linear, bn)
    return fuse_linear_bn_eval(linear, bn)


def fuse_convtranspose_bn(is_qat, convt, bn):
    """ConvTranspose + BN, eval only (folded)."""
    _check_bn("fuse_convtranspose_bn", convt, bn, convt.out_channels)
    if is_qat:
        raise NotImplementedError("qplugin.quantization.fuse_modules_qat: fusing ConvTranspose"
                                  " + BatchNorm is not supported in QAT (as in torch.ao)")
    return fuse_conv_bn_eval(convt, bn, transpose=True)


def _seq2(cls):
    return lambda is_qat, m1, m2: cls(m1, m2)


_DEFAULT_OP_LIST_TO_FUSER_METHOD: Dict[tuple, Callable] = {
    (nn.Conv1d, nn.BatchNorm1d): fuse_conv_bn,
    (nn.Conv1d, nn.BatchNorm1d, nn.ReLU): fuse_conv_bn_relu,
    (nn.Conv2d, nn.BatchNorm2d): fuse_conv_bn,
    (nn.Conv2d, nn.BatchNorm2d, nn.ReLU): fuse_conv_bn_relu,
    (nn.Conv3d, nn.BatchNorm3d): fuse_conv_bn,
    (nn.Conv3d, nn.BatchNorm3d, nn.ReLU): fuse_conv_bn_relu,
    (nn.Conv1d, nn.ReLU): _seq2(ConvReLU1d),
    (nn.Conv2d, nn.ReLU): _seq2(ConvReLU2d),
    (nn.Conv3d, nn.ReLU): _seq2(ConvReLU3d),
    (nn.Linear, nn.BatchNorm1d): fuse_linear_bn,
    (nn.Linear, nn.ReLU): _seq2(LinearReLU),
    (nn.BatchNorm2d, nn.ReLU): _seq2(BNReLU2d),
    (nn.BatchNorm3d, nn.ReLU): _seq2(BNReLU3d),
    (nn.ConvTranspose1d, nn.BatchNorm1d): fuse_convtranspose_bn,
    (nn.ConvTranspose2d, nn.BatchNorm2d): fuse_convtranspose_bn,
    (nn.ConvTranspose3d, nn.BatchNorm3d): fuse_convtranspose_bn,
}


def get_fuser_method(op_list, additional_fuser_method_mapping=None):
    """The function fusing modules of the types `op_list` (a tuple of classes)."""
    mapping = {**_DEFAULT_OP_LIST_TO_FUSER_METHOD, **(additional_fuser_method_mapping or {})}
    fuser = mapping.get(op_list)
    if fuser is None:
        names = ", ".join(t.__name__ for t in op_list)
        raise NotImplementedError(f"qplugin.quantization.fuse_modules: cannot fuse ({names});"
                                  " supported: conv-bn, conv-bn-relu, conv-relu, linear-bn,"
                                  " linear-relu, bn-relu, convtranspose-bn")
    return fuser


def fuse_known_modules(mod_list, is_qat, additional_fuser_method_mapping=None):
    """Fuses `mod_list` into its first element's place; the others become nn.Identity. Forward
    pre-hooks of the first and forward hooks of the last module move to the fused one."""
    types = tuple(type_before_parametrizations(m) for m in mod_list)
    fused = get_fuser_method(types, additional_fuser_method_mapping)(is_qat, *mod_list)
    for pre_hook_fn in mod_list[0]._forward_pre_hooks.values():
        fused.register_forward_pre_hook(pre_hook_fn)
    mod_list[0]._forward_pre_hooks.clear()
    for hook_fn in mod_list[-1]._forward_hooks.values():
        fused.register_forward_hook(hook_fn)
    mod_list[-1]._forward_hooks.clear()
    new_mod: List[Optional[nn.Module]] = [fused]
    for _ in range(1, len(mod_list)):
        identity = nn.Identity()
        identity.training = mod_list[0].training
        new_mod.append(identity)
    return new_mod


def _get_module(model, key):
    for s in key.split("."):
        model = getattr(model, s)
    return model


def _set_module(model, key, module):
    *parents, last = key.split(".")
    for s in parents:
        model = getattr(model, s)
    setattr(model, last, module)


def _fuse_modules(model, modules_to_fuse, is_qat, inplace=False, fuser_func=fuse_known_modules,
                  fuse_custom_config_dict=None):
    if not isinstance(model, nn.Module):
        raise TypeError("qplugin.quantization.fuse_modules: expected a torch.nn.Module, got"
                        f" {type(model).__name__}")
    if not inplace:
        model = copy.deepcopy(model)
    extra = (fuse_custom_config_dict or {}).get("additional_fuser_method_mapping", {})
    groups = [modules_to_fuse] if all(isinstance(m, str) for m in modules_to_fuse) else \
        modules_to_fuse
    for group in groups:
        try:
            mods = [_get_module(model, key) for key in group]
        except AttributeError as e:
            raise ValueError(f"qplugin.quantization.fuse_modules: no submodule named in {group}"
                             f" ({e})") from None
        for key, new in zip(group, fuser_func(mods, is_qat, extra)):
            _set_module(model, key, new)
    return model


def fuse_modules(model, modules_to_fuse, inplace=False, fuser_func=fuse_known_modules,
                 fuse_custom_config_dict=None):
    r"""Fuses lists of submodules (given by name) for post-training quantization
    (≙ torch.ao.quantization.fuse_modules): conv-bn, conv-bn-relu, conv-relu, linear-bn,
    linear-relu, bn-relu. In eval mode the batch norm is folded into the conv / linear with its
    running statistics. `modules_to_fuse` is a list of names or a list of such lists."""
    return _fuse_modules(model, modules_to_fuse, False, inplace, fuser_func,
                         fuse_custom_config_dict)


def fuse_modules_qat(model, modules_to_fuse, inplace=False, fuser_func=fuse_known_modules,
                     fuse_custom_config_dict=None):
    r"""As :func:`fuse_modules`, for quantization-aware training: conv-bn(-relu) and linear-bn
    become ConvBn*d / ConvBnReLU*d / LinearBn1d (the batch norm stays, for prepare_qat)."""
    return _fuse_modules(model, modules_to_fuse, True, inplace, fuser_func,
                         fuse_custom_config_dict)
