"""Migration from torch.ao quantized models: from_torch_ao() (modules) and
load_torch_ao_state_dict() (checkpoints), for people holding models converted by
torch.ao.quantization.convert when PyTorch drops its quantized backend.
Changes with: the constructors / set_weight_bias / state-dict layout of every qplugin.nn module
named in _MIGRATIONS, tests/models/test_migration.py.

Reading a torch.ao module's weights (``mod.weight()``, ``mod.bias()``, ``mod.state_dict()``)
unpacks PyTorch's packed params with PyTorch's own unpack op (torch.ops.quantized.*_unpack).
This is the only place qplugin product code lets that happen, and only because the input *is* a
torch.ao model: the unpack is a memory copy, no kernel of PyTorch's runs on the migrated model.
The qplugin model itself never calls torch.ops.quantized.
"""
import collections
import copy
import warnings
from typing import Any, Callable, Dict, List, Mapping, Optional

import torch
from torch import nn

from .. import nn as qnn
from .._ao import torch_ao
from ..nn import intrinsic as qnni

# Migration is the one job here that needs torch.ao (its input is a torch.ao model): the table is
# empty when torch.ao cannot be imported, and then there is nothing to migrate from.
nnq = torch_ao("nn.quantized")
nniq = torch_ao("nn.intrinsic.quantized")

__all__ = ["from_torch_ao", "get_default_torch_ao_migrations", "load_torch_ao_state_dict"]


def _qparams(t: nn.Module):
    # torch.ao keeps scale/zero_point as Python numbers (Linear, Conv*, ELU, Softmax) or
    # as 0-d / [1] buffers (Quantize, BatchNorm, LayerNorm, Hardswish, ...): both become numbers.
    return float(t.scale), int(t.zero_point)


def _with_weights(qcls, ctor_args):
    """A builder: qcls(*args, **kwargs) for (args, kwargs) = ctor_args(t), with t's weight, bias
    and output qparams."""
    def build(t):
        args, kwargs = ctor_args(t)
        q = qcls(*args, **kwargs)
        q.set_weight_bias(t.weight(), t.bias())
        q.scale, q.zero_point = _qparams(t)
        return q
    return build


def _linear(qcls):
    return _with_weights(qcls, lambda t: ((t.in_features, t.out_features, t.bias() is not None),
                                          {}))


def _conv(qcls):
    def ctor_args(t):
        kwargs = dict(stride=t.stride, padding=t.padding, groups=t.groups,
                      bias=t.bias() is not None, dilation=t.dilation,
                      padding_mode=t.padding_mode)
        if t.transposed:
            kwargs["output_padding"] = t.output_padding
        return (t.in_channels, t.out_channels, t.kernel_size), kwargs
    return _with_weights(qcls, ctor_args)


def _batch_norm(qcls):
    def build(t):
        q = qcls(t.num_features, t.eps, t.momentum)
        with torch.no_grad():
            for name in ("weight", "bias", "running_mean", "running_var"):
                getattr(q, name).copy_(getattr(t, name))
        q.scale, q.zero_point = _qparams(t)
        return q
    return build


def _instance_norm(qcls):
    def build(t):
        q = qcls(t.num_features, t.weight, t.bias, *_qparams(t), eps=t.eps, momentum=t.momentum,
                 affine=t.affine, track_running_stats=t.track_running_stats)
        if t.track_running_stats:
            with torch.no_grad():
                q.running_mean.copy_(t.running_mean)
                q.running_var.copy_(t.running_var)
        return q
    return build


def _quantize(t):
    return qnn.Quantize(*_qparams(t), t.dtype)


def _qfunctional(t):
    q = qnn.QFunctional()
    q.scale, q.zero_point = _qparams(t)
    return q


def _embedding_bag(t):
    # torch.ao's EmbeddingBag keeps num_embeddings, embedding_dim, dtype, mode, pruned_weights and
    # include_last_offset (the float-only arguments are not stored). Its forward ignores `mode`
    # and always sums (PyTorch 2.13); the migrated module computes the stored mode as named.
    q = qnn.EmbeddingBag(t.num_embeddings, t.embedding_dim, mode=t.mode,
                         include_last_offset=t.include_last_offset, dtype=t.dtype)
    q.set_weight(t.weight())
    return q


def _embedding(t):
    # torch.ao's Embedding keeps only num_embeddings, embedding_dim and dtype.
    q = qnn.Embedding(t.num_embeddings, t.embedding_dim, dtype=t.dtype)
    q.set_weight(t.weight())
    return q


# torch.ao quantized class -> builder of the qplugin module with the same hyperparameters,
# weights and output qparams. Keys are exact classes (subclasses are not assumed compatible).
_MIGRATIONS: Dict[type, Callable[[nn.Module], nn.Module]] = {} if nnq is None or nniq is None else {
    nnq.Quantize: _quantize,
    nnq.DeQuantize: lambda t: qnn.DeQuantize(),
    nnq.Linear: _linear(qnn.Linear),
    nniq.LinearReLU: _linear(qnni.LinearReLU),
    nnq.Conv1d: _conv(qnn.Conv1d),
    nnq.Conv2d: _conv(qnn.Conv2d),
    nnq.Conv3d: _conv(qnn.Conv3d),
    nniq.ConvReLU1d: _conv(qnni.ConvReLU1d),
    nniq.ConvReLU2d: _conv(qnni.ConvReLU2d),
    nniq.ConvReLU3d: _conv(qnni.ConvReLU3d),
    nnq.ConvTranspose1d: _conv(qnn.ConvTranspose1d),
    nnq.ConvTranspose2d: _conv(qnn.ConvTranspose2d),
    nnq.ConvTranspose3d: _conv(qnn.ConvTranspose3d),
    nnq.BatchNorm2d: _batch_norm(qnn.BatchNorm2d),
    nnq.BatchNorm3d: _batch_norm(qnn.BatchNorm3d),
    nniq.BNReLU2d: _batch_norm(qnni.BNReLU2d),
    nniq.BNReLU3d: _batch_norm(qnni.BNReLU3d),
    nnq.LayerNorm: lambda t: qnn.LayerNorm(t.normalized_shape, t.weight, t.bias, *_qparams(t),
                                           eps=t.eps, elementwise_affine=t.elementwise_affine),
    nnq.GroupNorm: lambda t: qnn.GroupNorm(t.num_groups, t.num_channels, t.weight, t.bias,
                                           *_qparams(t), eps=t.eps, affine=t.affine),
    nnq.InstanceNorm1d: _instance_norm(qnn.InstanceNorm1d),
    nnq.InstanceNorm2d: _instance_norm(qnn.InstanceNorm2d),
    nnq.InstanceNorm3d: _instance_norm(qnn.InstanceNorm3d),
    nnq.ReLU6: lambda t: qnn.ReLU6(t.inplace),
    nnq.Hardswish: lambda t: qnn.Hardswish(*_qparams(t)),
    nnq.ELU: lambda t: qnn.ELU(*_qparams(t), alpha=t.alpha),
    nnq.LeakyReLU: lambda t: qnn.LeakyReLU(*_qparams(t), negative_slope=t.negative_slope,
                                           inplace=t.inplace),
    nnq.Sigmoid: lambda t: qnn.Sigmoid(float(t.output_scale), int(t.output_zero_point)),
    nnq.Softmax: lambda t: qnn.Softmax(t.dim, *_qparams(t)),
    nnq.Dropout: lambda t: qnn.Dropout(t.p, t.inplace),
    nnq.QFunctional: _qfunctional,
    # A FloatFunctional left in a converted model (no qconfig) computes in float; qplugin's
    # subclass behaves the same and leaves no torch.ao.nn.quantized module behind.
    nnq.FloatFunctional: lambda t: qnn.FloatFunctional(),
}
if _MIGRATIONS:
    _MIGRATIONS[nnq.EmbeddingBag] = _embedding_bag
    _MIGRATIONS[nnq.Embedding] = _embedding


def get_default_torch_ao_migrations() -> Dict[type, Callable[[nn.Module], nn.Module]]:
    """A copy of the default table of :func:`from_torch_ao`: torch.ao quantized class -> function
    building the qplugin module from an instance (safe to extend)."""
    return dict(_MIGRATIONS)


def _is_torch_quantized_module(mod: nn.Module) -> bool:
    """A module of torch.ao.nn.quantized / intrinsic.quantized (not one of qplugin's subclasses),
    i.e. one that would keep the model on PyTorch's quantized backend. Reference modules
    (torch.ao.nn.quantized.reference) compute in float and are not counted."""
    mname = type(mod).__module__
    if mname.startswith(("torch.ao.nn.quantized.reference", "torch.nn.quantized.reference")):
        return False
    return mname.startswith(("torch.ao.nn.quantized", "torch.ao.nn.intrinsic.quantized",
                             "torch.nn.quantized", "torch.nn.intrinsic.quantized"))


def from_torch_ao(model: nn.Module, inplace: bool = False,
                  mapping: Optional[Mapping[type, Callable[[nn.Module], nn.Module]]] = None,
                  strict: bool = True) -> nn.Module:
    r"""Turns a model converted by ``torch.ao.quantization.convert`` (torch.ao.nn.quantized
    modules with PyTorch's packed weights) into the qplugin equivalent with the same weights,
    biases, output qparams and hyperparameters, so it gives the same outputs without PyTorch's
    quantized backend.

    Args:
        model: the converted torch.ao model (or a single torch.ao quantized module).
        inplace: swap the submodules of `model` itself instead of a deep copy.
        mapping: torch.ao class -> function(module) returning its qplugin replacement; extends
            (and overrides) :func:`get_default_torch_ao_migrations`.
        strict: raise ``NotImplementedError`` on a torch.ao quantized module qplugin has no
            counterpart for (e.g. ``PReLU``, ``ConvAdd2d``, dynamic modules), since leaving it
            would keep the model on torch.ops.quantized; ``False`` leaves such modules alone.

    Returns:
        The migrated model (`model` itself when `inplace`, unless `model` is itself a torch.ao
        module, which is returned replaced).

    Float modules (nn.ReLU, nn.Identity, pooling and upsampling applied to quantized tensors,
    containers) are left as they are: they run on quantized tensors through ATen, as in the
    torch.ao model. Weights are read with the torch.ao modules' own ``weight()`` / ``bias()``,
    i.e. PyTorch's unpack op (see the module docstring).
    """
    if not isinstance(model, nn.Module):
        raise TypeError("qplugin.quantization.from_torch_ao: expected a torch.nn.Module, got"
                        f" {type(model).__name__}")
    table = dict(_MIGRATIONS)
    if mapping is not None:
        if not isinstance(mapping, Mapping):
            raise TypeError("qplugin.quantization.from_torch_ao: expected mapping to be a dict of"
                            " torch.ao class -> builder function, got"
                            f" {type(mapping).__name__}")
        table.update(mapping)
    if strict:
        # Checked before anything changes, so a failing in-place call leaves `model` as it was.
        found = _first_unsupported(model, "", table)
        if found is not None:
            path, mod = found
            raise NotImplementedError(
                "qplugin.quantization.from_torch_ao: expected torch.ao quantized modules qplugin"
                f" has a counterpart for, got {type(mod).__module__}.{type(mod).__qualname__} at"
                f" {path or '<root>'!r}; pass mapping={{{type(mod).__name__}: fn}} to supply one,"
                " or strict=False to leave it on PyTorch's backend")
    if not inplace:
        # Copy everything but the modules about to be replaced: those are only read (by the
        # builders), and a deepcopy of a torch.ao conv would drop its hooks (its __deepcopy__
        # goes through the TorchScript tuple state).
        memo = {id(m): m for m in model.modules() if type(m) in table}
        model = copy.deepcopy(model, memo)
    root = _migrate_one(model, table)
    if root is not model:
        return root
    _migrate_children(model, table)
    return model


def _first_unsupported(mod: nn.Module, path: str, table):
    """(path, module) of the first torch.ao quantized module without a builder, not looking
    inside modules that will be replaced (e.g. nnq.Linear's LinearPackedParams), or None."""
    if type(mod) in table:
        return None
    if _is_torch_quantized_module(mod):
        return path, mod
    for name, child in mod.named_children():
        found = _first_unsupported(child, f"{path}.{name}" if path else name, table)
        if found is not None:
            return found
    return None


def _migrate_one(mod: nn.Module, table) -> nn.Module:
    build = table.get(type(mod))
    if build is None:
        return mod
    new = build(mod)
    new.train(mod.training)
    for hook in mod._forward_pre_hooks.values():
        new.register_forward_pre_hook(hook)
    for hook in mod._forward_hooks.values():
        new.register_forward_hook(hook)
    return new


def _migrate_children(module: nn.Module, table) -> None:
    for name, child in list(module.named_children()):
        new = _migrate_one(child, table)
        if new is child:
            _migrate_children(child, table)
        else:
            module._modules[name] = new


# Modules whose torch.ao state dict lacks the output qparams: PyTorch keeps them as plain
# attributes (docs/oracle.md), so a torch.ao checkpoint cannot carry them.
_QPARAMS_NOT_IN_TORCH_STATE_DICT = (qnn.ELU, qnn.Sigmoid, qnn.Softmax)


def load_torch_ao_state_dict(qplugin_model: nn.Module, state_dict: Mapping[str, Any],
                             strict: bool = True):
    r"""Loads a state dict saved from a torch.ao-converted model
    (``torch.save(torch_ao_model.state_dict(), path)``) into a qplugin-converted model of the
    same architecture (from :func:`qplugin.quantization.convert` or :func:`from_torch_ao`).

    The key layouts already agree module by module (qplugin.nn keeps torch.ao.nn.quantized's
    state-dict format: ``_packed_params._packed_params`` = (qint8 weight, fp32 bias) for Linear,
    ``weight``/``bias`` for Conv*, ``scale``/``zero_point`` everywhere), so this is
    ``load_state_dict`` plus the checks that make a mismatch loud:

    - every key of `state_dict` must be used and every key of the model present (`strict`);
    - PyTorch's ELU, Sigmoid and Softmax do not save their output scale/zero_point (plain
      attributes in torch.ao): those modules keep the qparams they have, and a ``UserWarning``
      names them -- calibrate/convert the qplugin model with the same observers, or migrate the
      whole module with :func:`from_torch_ao`, to get them.

    Args:
        qplugin_model: the target model (modified in place).
        state_dict: the torch.ao model's state dict (the dict is not modified).
        strict: as in ``nn.Module.load_state_dict``.

    Returns:
        ``NamedTuple`` with ``missing_keys`` and ``unexpected_keys`` (as ``load_state_dict``).
    """
    if not isinstance(qplugin_model, nn.Module):
        raise TypeError("qplugin.quantization.load_torch_ao_state_dict: expected a torch.nn.Module,"
                        f" got {type(qplugin_model).__name__}")
    if not isinstance(state_dict, Mapping):
        raise TypeError("qplugin.quantization.load_torch_ao_state_dict: expected a state dict"
                        f" (a Mapping of key -> tensor), got {type(state_dict).__name__}")
    leftover = [f"{n or '<root>'} ({type(m).__module__}.{type(m).__qualname__})"
                for n, m in qplugin_model.named_modules() if _is_torch_quantized_module(m)
                and not (nnq is not None and isinstance(m, nnq.FloatFunctional))]  # float arithmetic: harmless
    if leftover:
        raise ValueError("qplugin.quantization.load_torch_ao_state_dict: expected a qplugin model,"
                         " got one with torch.ao quantized modules: " + ", ".join(leftover)
                         + "; migrate it with qplugin.quantization.from_torch_ao first")
    missing_qparams: List[str] = []
    for name, m in qplugin_model.named_modules():
        if isinstance(m, _QPARAMS_NOT_IN_TORCH_STATE_DICT):
            prefix = f"{name}." if name else ""
            if prefix + "scale" not in state_dict:
                missing_qparams.append(name or "<root>")
    metadata = getattr(state_dict, "_metadata", None)
    # load_state_dict's hooks pop keys from the dict: keep the caller's dict intact.
    sd = collections.OrderedDict(state_dict)
    if metadata is not None:
        sd._metadata = copy.deepcopy(metadata)
    result = qplugin_model.load_state_dict(sd, strict=strict)
    if missing_qparams:
        warnings.warn(
            "qplugin.quantization.load_torch_ao_state_dict: the state dict has no output"
            " scale/zero_point for " + ", ".join(missing_qparams) + " (torch.ao's ELU, Sigmoid"
            " and Softmax do not save them); these modules keep their current qparams",
            UserWarning, stacklevel=2)
    return result


def _as_torch_ao_prepared(model: nn.Module) -> nn.Module:
    """A copy of a model prepared (and calibrated) with qplugin.quantization.prepare that
    torch.ao.quantization.convert can convert: qplugin's stubs, FloatFunctional and fused float
    modules become their torch.ao twins (same children and attributes) and qplugin's observer
    hooks torch.ao's. The observers stay qplugin's (torch.ao's from_float only calls
    ``calculate_qparams``). For comparison paths (the demo's torch.ao row, tests); needs torch.ao.
    """
    from .._ao import torch_ao
    from . import fused as _fused
    from . import _prepare as _q
    from .stubs import DeQuantStub, QuantStub
    tq = torch_ao("quantization")
    nni = torch_ao("nn.intrinsic")
    tqq = torch_ao("quantization.quantize")
    if tq is None or nni is None or nnq is None or tqq is None:
        raise RuntimeError("qplugin.quantization: torch.ao.quantization is not available here")
    twins = {QuantStub: tq.QuantStub, DeQuantStub: tq.DeQuantStub,
             qnn.FloatFunctional: nnq.FloatFunctional}
    for name in _fused.__all__:
        cls = getattr(_fused, name)
        if isinstance(cls, type) and hasattr(nni, name):
            twins[cls] = getattr(nni, name)
    hooks = {_q._observer_forward_hook: tqq._observer_forward_hook,
             _q._observer_forward_pre_hook: tqq._observer_forward_pre_hook}
    out = copy.deepcopy(model)
    for m in out.modules():
        if type(m) in twins:
            m.__class__ = twins[type(m)]
        for hook_dict in (m._forward_hooks, m._forward_pre_hooks):
            for k, fn in list(hook_dict.items()):
                if fn in hooks:
                    hook_dict[k] = hooks[fn]
    return out


def _torch_ao_convert(model: nn.Module) -> nn.Module:
    """torch.ao.quantization.convert of a model prepared with qplugin (via
    :func:`_as_torch_ao_prepared`), then qplugin's observers and hooks removed from the modules
    torch.ao leaves float (its own cleanup only knows its own observers). Comparison only."""
    from .._ao import torch_ao
    from . import _remove_qconfig
    out = torch_ao("quantization").convert(_as_torch_ao_prepared(model))
    _remove_qconfig(out)
    return out
