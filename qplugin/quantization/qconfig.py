"""QConfig and its presets (≙ torch.ao.quantization.qconfig): which observer / fake-quant
constructors a module's activation and weight get. Same names, fields and defaults as torch.ao.
Changes with: observer.py, fake_quantize.py, _prepare.py, tests/quantization/test_qconfig.py.
"""
import warnings
from collections import namedtuple
from typing import Any, Optional

import torch
from torch import nn

from .fake_quantize import (
    FakeQuantize, FakeQuantizeBase, FusedMovingAvgObsFakeQuantize, default_dynamic_fake_quant,
    default_embedding_fake_quant, default_embedding_fake_quant_4bit, default_fake_quant,
    default_fused_act_fake_quant, default_fused_per_channel_wt_fake_quant,
    default_fused_wt_fake_quant, default_per_channel_weight_fake_quant,
    default_weight_fake_quant, fused_per_channel_wt_fake_quant_range_neg_127_to_127,
    fused_wt_fake_quant_range_neg_127_to_127)
from .observer import (
    HistogramObserver, MinMaxObserver, MovingAverageMinMaxObserver,
    MovingAveragePerChannelMinMaxObserver, NoopObserver, PerChannelMinMaxObserver,
    PlaceholderObserver, default_dynamic_quant_observer, default_float_qparams_observer,
    default_float_qparams_observer_4bit, default_observer, default_per_channel_weight_observer,
    default_placeholder_observer, default_weight_observer,
    per_channel_weight_observer_range_neg_127_to_127, weight_observer_range_neg_127_to_127)

__all__ = [
    "QConfig", "QConfigAny", "default_qconfig", "default_per_channel_qconfig",
    "default_dynamic_qconfig", "float16_dynamic_qconfig", "float16_static_qconfig",
    "per_channel_dynamic_qconfig", "float_qparams_weight_only_qconfig",
    "float_qparams_weight_only_qconfig_4bit", "default_quint8_weight_qconfig",
    "default_qat_qconfig", "default_dynamic_qat_qconfig", "default_weight_only_qconfig",
    "default_activation_only_qconfig", "default_qat_qconfig_v2",
    "default_symmetric_qnnpack_qconfig", "default_per_channel_symmetric_qnnpack_qconfig",
    "default_symmetric_qnnpack_qat_qconfig", "default_per_channel_symmetric_qnnpack_qat_qconfig",
    "default_embedding_qat_qconfig", "default_embedding_qat_qconfig_4bit",
    "get_default_qconfig", "get_default_qat_qconfig", "qconfig_equals",
]

_BACKENDS = ["fbgemm", "x86", "qnnpack", "onednn"]


class QConfig(namedtuple("QConfig", ["activation", "weight"])):
    r"""How to observe a module: ``activation`` and ``weight`` are observer (or fake-quant)
    *constructors* -- classes or ``Cls.with_args(...)`` -- called once per observed module
    (≙ torch.ao.quantization.QConfig)."""

    __slots__ = ()

    def __new__(cls, activation, weight):
        if isinstance(activation, nn.Module) or isinstance(weight, nn.Module):
            raise ValueError("qplugin.quantization.QConfig: expected observer classes or"
                             " constructors, got an observer instance; use"
                             " MyObserver.with_args(x=1) to bind constructor arguments")
        return super().__new__(cls, activation, weight)


QConfigAny = Optional[QConfig]

default_qconfig = QConfig(activation=default_observer, weight=default_weight_observer)
default_per_channel_qconfig = QConfig(activation=default_observer,
                                      weight=default_per_channel_weight_observer)
default_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer,
                                  weight=default_weight_observer)
float16_dynamic_qconfig = QConfig(
    activation=PlaceholderObserver.with_args(dtype=torch.float16, is_dynamic=True),
    weight=PlaceholderObserver.with_args(dtype=torch.float16))
float16_static_qconfig = QConfig(activation=PlaceholderObserver.with_args(dtype=torch.float16),
                                 weight=PlaceholderObserver.with_args(dtype=torch.float16))
per_channel_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer,
                                      weight=default_per_channel_weight_observer)
float_qparams_weight_only_qconfig = QConfig(activation=default_placeholder_observer,
                                            weight=default_float_qparams_observer)
float_qparams_weight_only_qconfig_4bit = QConfig(activation=default_placeholder_observer,
                                                 weight=default_float_qparams_observer_4bit)
default_qat_qconfig = QConfig(activation=default_fake_quant, weight=default_weight_fake_quant)
default_dynamic_qat_qconfig = QConfig(activation=default_dynamic_fake_quant,
                                      weight=default_weight_fake_quant)
default_weight_only_qconfig = QConfig(activation=torch.nn.Identity,
                                      weight=default_weight_fake_quant)
default_activation_only_qconfig = QConfig(activation=default_fake_quant,
                                          weight=torch.nn.Identity)
default_qat_qconfig_v2 = QConfig(activation=default_fused_act_fake_quant,
                                 weight=default_fused_wt_fake_quant)
default_symmetric_qnnpack_qconfig = QConfig(
    activation=HistogramObserver.with_args(dtype=torch.qint8, reduce_range=False, eps=2 ** -12),
    weight=weight_observer_range_neg_127_to_127)
default_per_channel_symmetric_qnnpack_qconfig = QConfig(
    activation=HistogramObserver.with_args(dtype=torch.qint8, reduce_range=False, eps=2 ** -12),
    weight=per_channel_weight_observer_range_neg_127_to_127)
default_embedding_qat_qconfig = QConfig(activation=NoopObserver.with_args(dtype=torch.float32),
                                        weight=default_embedding_fake_quant)
default_embedding_qat_qconfig_4bit = QConfig(
    activation=NoopObserver.with_args(dtype=torch.float32),
    weight=default_embedding_fake_quant_4bit)
default_quint8_weight_qconfig = QConfig(activation=HistogramObserver, weight=MinMaxObserver)
_qnnpack_qat_act = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype=torch.qint8,
    reduce_range=False, eps=2 ** -12)
default_symmetric_qnnpack_qat_qconfig = QConfig(
    activation=_qnnpack_qat_act, weight=fused_wt_fake_quant_range_neg_127_to_127)
default_per_channel_symmetric_qnnpack_qat_qconfig = QConfig(
    activation=_qnnpack_qat_act, weight=fused_per_channel_wt_fake_quant_range_neg_127_to_127)


def _check_backend(owner: str, backend: str) -> None:
    if backend not in _BACKENDS:
        raise ValueError(f"qplugin.quantization.{owner}: expected backend in {_BACKENDS}, got"
                         f" {backend!r}")


def get_default_qconfig(backend: str = "x86", version: int = 0) -> QConfig:
    r"""The post-training static qconfig for `backend` (≙ torch.ao's): a HistogramObserver
    for activations (reduce_range for "x86"/"fbgemm"), per-channel symmetric qint8 weights
    ("qnnpack": per-tensor)."""
    _check_backend("get_default_qconfig", backend)
    if version != 0:
        raise ValueError("qplugin.quantization.get_default_qconfig: expected version 0, got"
                         f" {version}")
    if backend == "qnnpack":
        return QConfig(activation=HistogramObserver.with_args(reduce_range=False),
                       weight=default_weight_observer)
    if backend == "onednn":
        if not torch.cpu._is_vnni_supported():
            warnings.warn("Default qconfig of oneDNN backend with reduce_range of false may have"
                          " accuracy issues on CPU without Vector Neural Network Instruction"
                          " support.", stacklevel=2)
        return QConfig(activation=HistogramObserver.with_args(reduce_range=False),
                       weight=default_per_channel_weight_observer)
    return QConfig(activation=HistogramObserver.with_args(reduce_range=True),  # x86, fbgemm
                   weight=default_per_channel_weight_observer)


def get_default_qat_qconfig(backend: str = "x86", version: int = 1) -> QConfig:
    r"""The quantization-aware-training qconfig for `backend` (≙ torch.ao's): version 1 uses
    FusedMovingAvgObsFakeQuantize, version 0 FakeQuantize with a moving-average observer."""
    _check_backend("get_default_qat_qconfig", backend)
    if version not in (0, 1):
        raise ValueError("qplugin.quantization.get_default_qat_qconfig: expected version 0 or 1,"
                         f" got {version}")
    fq = FusedMovingAvgObsFakeQuantize if version == 1 else FakeQuantize
    act_kwargs = dict(observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255)
    if backend in ("x86", "fbgemm"):
        act_kwargs["reduce_range"] = True
    elif backend == "qnnpack":
        act_kwargs["reduce_range"] = False
    if backend == "qnnpack":
        weight = default_fused_wt_fake_quant if version == 1 else default_weight_fake_quant
    else:
        weight = (default_fused_per_channel_wt_fake_quant if version == 1
                  else default_per_channel_weight_fake_quant)
    return QConfig(activation=fq.with_args(**act_kwargs), weight=weight)


def _partial_wrapper_equals(a, b) -> bool:
    if hasattr(a, "p") and hasattr(b, "p"):
        return (a.p.func == b.p.func and a.p.args == b.p.args and a.p.keywords == b.p.keywords
                and a.callable_args == b.callable_args)
    return a == b


def qconfig_equals(q1: QConfigAny, q2: QConfigAny) -> bool:
    """Whether two qconfigs name the same constructors with the same arguments."""
    if q1 is None or q2 is None:
        return q1 == q2
    return (_partial_wrapper_equals(q1.activation, q2.activation)
            and _partial_wrapper_equals(q1.weight, q2.weight))


def _assert_valid_qconfig(qconfig: QConfigAny, mod: nn.Module) -> None:
    """Per-channel weight observers are not supported for ConvTranspose (as torch.ao)."""
    if qconfig is None or qconfig.weight is None:
        return
    if isinstance(mod, (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)):
        obs = qconfig.weight()
        per_channel = (PerChannelMinMaxObserver, MovingAveragePerChannelMinMaxObserver)
        if isinstance(obs, per_channel) or type(obs).__name__ in (
                "PerChannelMinMaxObserver", "MovingAveragePerChannelMinMaxObserver"):
            raise ValueError("qplugin.quantization: per-channel weight observers are not"
                             f" supported for {type(mod).__name__} (as in torch.ao); use a"
                             " per-tensor weight observer")


def _add_module_to_qconfig_obs_ctr(qconfig: QConfigAny, module: Optional[nn.Module]) -> Any:
    """The qconfig with constructors that create observers on the module's device (when the
    observer takes factory_kwargs), as torch.ao's prepare does."""
    if module is None or qconfig is None or qconfig._fields != ("activation", "weight"):
        return qconfig

    def device_kwargs():
        devices = {p.device for p in module.parameters()} | {b.device for b in module.buffers()}
        device = next(iter(devices)) if devices else None
        return None if device is None else {"device": device}

    def on_device(ctr):
        try:
            ctr.with_args(factory_kwargs=None)()
            return ctr.with_callable_args(factory_kwargs=device_kwargs)
        except (AttributeError, TypeError):  # no with_args, or no factory_kwargs argument
            return ctr

    return QConfig(on_device(qconfig.activation), on_device(qconfig.weight))


def _activation_is_memoryless(qconfig: QConfig) -> bool:
    """A moving-average observer with averaging constant 1 (it observes the module's input:
    a pre-hook, as torch.ao)."""
    act = qconfig.activation()
    if hasattr(act, "activation_post_process") and isinstance(act, nn.Module) and \
            "FakeQuantize" in type(act).__name__:
        act = act.activation_post_process
    return hasattr(act, "averaging_constant") and act.averaging_constant == 1
