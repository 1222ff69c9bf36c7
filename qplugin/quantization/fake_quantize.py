"""Fake quantization for quantization-aware training (≙ torch.ao.quantization.fake_quantize):
FakeQuantize (observer + quantize-dequantize in float), FixedQParamsFakeQuantize,
FusedMovingAvgObsFakeQuantize, the enable/disable helpers and the default_* presets. The
arithmetic is ATen's float fake-quant ops (torch.fake_quantize_per_{tensor,channel}_affine,
torch.fused_moving_avg_obs_fake_quant), the ones torch.ao calls: those are float ops of core
PyTorch, not part of the legacy quantized stack.
Changes with: observer.py, qconfig.py, tests/quantization/test_fake_quantize.py.
"""
import re
from typing import Any, Tuple

import torch
from torch.nn import Module

from .observer import (
    FixedQParamsObserver, HistogramObserver, MovingAverageMinMaxObserver,
    MovingAveragePerChannelMinMaxObserver, _QParamsModule, _adopt_saved_shapes, _save_shaped,
    _with_args, _with_callable_args,
    default_fixed_qparams_range_0to1_observer, default_fixed_qparams_range_neg1to1_observer)

__all__ = [
    "FakeQuantizeBase", "FakeQuantize", "FixedQParamsFakeQuantize",
    "FusedMovingAvgObsFakeQuantize", "disable_fake_quant", "disable_observer",
    "enable_fake_quant", "enable_observer", "default_fake_quant", "default_weight_fake_quant",
    "default_dynamic_fake_quant", "default_fixed_qparams_range_neg1to1_fake_quant",
    "default_fixed_qparams_range_0to1_fake_quant", "default_symmetric_fixed_qparams_fake_quant",
    "default_affine_fixed_qparams_fake_quant", "default_per_channel_weight_fake_quant",
    "default_embedding_fake_quant", "default_embedding_fake_quant_4bit",
    "default_histogram_fake_quant", "default_fused_act_fake_quant",
    "default_fused_wt_fake_quant", "default_fused_per_channel_wt_fake_quant",
    "fused_wt_fake_quant_range_neg_127_to_127",
    "fused_per_channel_wt_fake_quant_range_neg_127_to_127",
]

_PER_CHANNEL = (torch.per_channel_symmetric, torch.per_channel_affine,
                torch.per_channel_affine_float_qparams)
_PER_TENSOR = (torch.per_tensor_symmetric, torch.per_tensor_affine)
_SYMMETRIC = (torch.per_tensor_symmetric, torch.per_channel_symmetric)

class FakeQuantizeBase(_QParamsModule, Module):
    r"""Base of the fake-quant modules: ``fake_quant_enabled`` / ``observer_enabled`` buffers
    (uint8, as torch.ao's, so that DDP replicates them) and their switches."""

    fake_quant_enabled: torch.Tensor
    observer_enabled: torch.Tensor

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("fake_quant_enabled", torch.tensor([1], dtype=torch.uint8))
        self.register_buffer("observer_enabled", torch.tensor([1], dtype=torch.uint8))

    # torch.ao's four switches; each disable_* is its enable_*(False).
    @torch.jit.export
    def enable_fake_quant(self, enabled: bool = True) -> None:
        self.fake_quant_enabled[0] = 1 if enabled else 0

    @torch.jit.export
    def enable_observer(self, enabled: bool = True) -> None:
        self.observer_enabled[0] = 1 if enabled else 0

    @torch.jit.export
    def disable_fake_quant(self):
        self.enable_fake_quant(False)

    @torch.jit.export
    def disable_observer(self):
        self.enable_observer(False)

    with_args = classmethod(_with_args)
    with_callable_args = classmethod(_with_callable_args)


class FakeQuantize(FakeQuantizeBase):
    r"""Observes its input (when ``observer_enabled``) and returns
    ``(clamp(round(x / scale + zero_point), quant_min, quant_max) - zero_point) * scale``
    (when ``fake_quant_enabled``) (≙ torch.ao.quantization.FakeQuantize; same arguments).

    Args:
        observer: observer class (or ``with_args`` constructor) computing scale and zero point.
        quant_min, quant_max: the quantized range (passed to the observer).
        is_dynamic: a placeholder for dynamic quantization.
        **observer_kwargs: further observer arguments.
    """

    scale: torch.Tensor
    zero_point: torch.Tensor

    def __init__(self, observer=MovingAverageMinMaxObserver, quant_min=None, quant_max=None,
                 is_dynamic=False, **observer_kwargs):
        super().__init__()
        if quant_min is not None and quant_max is not None:
            if quant_min > quant_max:
                raise ValueError("qplugin.quantization.FakeQuantize: expected quant_min <="
                                 f" quant_max, got {quant_min} > {quant_max}")
            dtype = observer_kwargs.get("dtype", torch.quint8)
            if hasattr(observer, "p"):  # a with_args constructor may carry the dtype
                dtype = getattr(getattr(observer, "p", {}), "keywords", {}).get("dtype", dtype)
            if torch.iinfo(dtype).min > quant_min or quant_max > torch.iinfo(dtype).max:
                raise ValueError("qplugin.quantization.FakeQuantize: expected [quant_min,"
                                 f" quant_max] within {dtype}'s range, got [{quant_min},"
                                 f" {quant_max}]")
            observer_kwargs.update({"quant_min": quant_min, "quant_max": quant_max})
        observer_kwargs["is_dynamic"] = is_dynamic
        self.activation_post_process = observer(**observer_kwargs)
        self.quant_min = self.activation_post_process.quant_min
        self.quant_max = self.activation_post_process.quant_max
        self.is_dynamic = self.activation_post_process.is_dynamic
        zero_point_dtype = torch.float if (self.activation_post_process.qscheme
                                           == torch.per_channel_affine_float_qparams) else torch.int
        self.register_buffer("scale", torch.tensor([1.0], dtype=torch.float))
        self.register_buffer("zero_point", torch.tensor([0], dtype=zero_point_dtype))
        self.dtype = self.activation_post_process.dtype
        self.qscheme = self.activation_post_process.qscheme
        self.ch_axis = getattr(self.activation_post_process, "ch_axis", -1)
        if self.qscheme not in _PER_CHANNEL + _PER_TENSOR:
            raise ValueError("qplugin.quantization.FakeQuantize: expected a per-channel or"
                             f" per-tensor qscheme, got {self.qscheme}")
        self.is_per_channel = self.qscheme in _PER_CHANNEL

    @torch.jit.export
    def calculate_qparams(self):
        return self.activation_post_process.calculate_qparams()

    def forward(self, X):
        if self.observer_enabled[0] == 1:
            self.activation_post_process(X.detach())
            _scale, _zero_point = self.calculate_qparams()
            _scale = _scale.to(self.scale.device)
            _zero_point = _zero_point.to(self.zero_point.device)
            if self.scale.shape != _scale.shape:
                self.scale.resize_(_scale.shape)
                self.zero_point.resize_(_zero_point.shape)
            self.scale.copy_(_scale)
            self.zero_point.copy_(_zero_point)
        if self.fake_quant_enabled[0] == 1:
            if self.is_per_channel:
                X = torch.fake_quantize_per_channel_affine(
                    X, self.scale, self.zero_point, self.ch_axis,
                    self.activation_post_process.quant_min,
                    self.activation_post_process.quant_max)
            else:
                X = torch.fake_quantize_per_tensor_affine(
                    X, self.scale, self.zero_point, self.activation_post_process.quant_min,
                    self.activation_post_process.quant_max)
        return X

    @torch.jit.export
    def extra_repr(self):
        return (f"fake_quant_enabled={self.fake_quant_enabled}, observer_enabled="
                f"{self.observer_enabled}, quant_min={self.activation_post_process.quant_min}, "
                f"quant_max={self.activation_post_process.quant_max}, dtype={self.dtype}, "
                f"qscheme={self.qscheme}, ch_axis={self.ch_axis}, scale={self.scale}, "
                f"zero_point={self.zero_point}")

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        _save_shaped(self, destination, prefix, ("scale", "zero_point"))

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        # scale / zero_point may be per-channel in the checkpoint: resize before copying.
        _adopt_saved_shapes(state_dict, prefix, ("scale", "zero_point"), strict, missing_keys,
                            lambda name, saved: getattr(self, name).resize_(saved.shape))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)


class FixedQParamsFakeQuantize(FakeQuantize):
    r"""Fake quantization with fixed qparams from a :class:`FixedQParamsObserver`
    (≙ torch.ao.quantization.FixedQParamsFakeQuantize)."""

    def __init__(self, observer):
        super().__init__(observer=observer)
        if type(self.activation_post_process) is not FixedQParamsObserver:
            raise TypeError(f"qplugin.quantization.{self.__class__.__name__}: expected a"
                            " FixedQParamsObserver, got"
                            f" {type(self.activation_post_process).__name__}")
        self._observer_ctr = observer
        self.scale = self.activation_post_process.scale
        self.zero_point = self.activation_post_process.zero_point
        if self.qscheme not in _PER_TENSOR:
            raise ValueError("qplugin.quantization.FixedQParamsFakeQuantize: expected a"
                             f" per-tensor qscheme, got {self.qscheme}")

    @torch.jit.export
    def calculate_qparams(self):
        return self.scale, self.zero_point

    @torch.jit.export
    def extra_repr(self):
        return (f"fake_quant_enabled={self.fake_quant_enabled}, observer_enabled="
                f"{self.observer_enabled}, scale={self.scale}, zero_point={self.zero_point}, "
                f"dtype={self.dtype}, quant_min={self.activation_post_process.quant_min}, "
                f"quant_max={self.activation_post_process.quant_max}, qscheme={self.qscheme}")


class FusedMovingAvgObsFakeQuantize(FakeQuantize):
    r"""FakeQuantize with a moving-average min/max observer, observation and fake quantization
    in one ATen call (torch.fused_moving_avg_obs_fake_quant, as torch.ao's; ≙
    torch.ao.quantization.FusedMovingAvgObsFakeQuantize). Its observer semantics: the running
    min/max are updated only while ``observer_enabled``, qparams recomputed from them, then the
    input is fake-quantized while ``fake_quant_enabled``."""

    def __init__(self, observer: Any = MovingAverageMinMaxObserver, quant_min: int = 0,
                 quant_max: int = 255, **observer_kwargs: Any) -> None:
        super().__init__(observer, quant_min, quant_max, **observer_kwargs)
        if not isinstance(self.activation_post_process,
                          (MovingAverageMinMaxObserver, MovingAveragePerChannelMinMaxObserver)):
            raise TypeError("qplugin.quantization.FusedMovingAvgObsFakeQuantize: expected a"
                            " MovingAverageMinMaxObserver or"
                            " MovingAveragePerChannelMinMaxObserver, got"
                            f" {type(self.activation_post_process).__name__}")
        self.register_buffer("fake_quant_enabled", torch.tensor([1], dtype=torch.long))
        self.register_buffer("observer_enabled", torch.tensor([1], dtype=torch.long))
        self.is_symmetric_quant = self.activation_post_process.qscheme in _SYMMETRIC

    @torch.jit.export
    def calculate_qparams(self) -> Tuple[torch.Tensor, torch.Tensor]:
        return self.activation_post_process.calculate_qparams()

    @torch.jit.export
    def extra_repr(self) -> str:
        return (f"fake_quant_enabled={self.fake_quant_enabled}, observer_enabled="
                f"{self.observer_enabled}, scale={self.scale}, zero_point={self.zero_point}, "
                f"dtype={self.dtype}, quant_min={self.activation_post_process.quant_min}, "
                f"quant_max={self.activation_post_process.quant_max}, qscheme={self.qscheme}, "
                f"reduce_range={self.activation_post_process.reduce_range}")

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        if self.observer_enabled[0] == 1 and X.numel() > 0:
            lo, hi = torch.aminmax(X.detach())
            if bool(torch.isnan(lo)) or bool(torch.isnan(hi)):
                raise ValueError("qplugin.quantization.FusedMovingAvgObsFakeQuantize: expected a"
                                 " tensor without NaN, got NaN in the observed input")
        return torch.fused_moving_avg_obs_fake_quant(
            X, self.observer_enabled, self.fake_quant_enabled,
            self.activation_post_process.min_val, self.activation_post_process.max_val,
            self.scale, self.zero_point, self.activation_post_process.averaging_constant,
            self.activation_post_process.quant_min, self.activation_post_process.quant_max,
            self.ch_axis, self.is_per_channel, self.is_symmetric_quant)


_FAKE_QUANT_SCRIPT_NAMES = (
    "qplugin.quantization.fake_quantize.FakeQuantize",
    "qplugin.quantization.fake_quantize.FusedMovingAvgObsFakeQuantize",
    "torch.ao.quantization.fake_quantize.FakeQuantize",
    "torch.ao.quantization.fake_quantize.FusedMovingAvgObsFakeQuantize")


def _is_fake_quant(mod) -> bool:
    """qplugin's or torch.ao's fake-quant module (eager or scripted)."""
    if isinstance(mod, FakeQuantizeBase):
        return True
    if isinstance(mod, torch.jit.RecursiveScriptModule):
        suffix = mod._c.qualified_name.split(".", 1)[1]
        return re.sub(r"\.___torch_mangle_\d+", "", suffix) in _FAKE_QUANT_SCRIPT_NAMES
    from .._ao import torch_ao
    tq = torch_ao("quantization")
    return tq is not None and isinstance(mod, tq.FakeQuantizeBase)


def _switch(name: str, doc: str):
    """The function for ``model.apply``: calls the fake-quant modules' method `name`."""
    def switch(mod):
        if _is_fake_quant(mod):
            getattr(mod, name)()

    switch.__name__ = switch.__qualname__ = name
    switch.__doc__ = doc
    return switch


disable_fake_quant = _switch(
    "disable_fake_quant",
    """``model.apply(disable_fake_quant)``: fake-quant modules pass their input through.""")
enable_fake_quant = _switch("enable_fake_quant", """``model.apply(enable_fake_quant)``.""")
disable_observer = _switch(
    "disable_observer",
    """``model.apply(disable_observer)``: fake-quant modules stop updating their qparams.""")
enable_observer = _switch("enable_observer", """``model.apply(enable_observer)``.""")


# Presets (≙ torch.ao.quantization.fake_quantize.default_*; same arguments).
default_fake_quant = FakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, dtype=torch.quint8,
    qscheme=torch.per_tensor_affine, reduce_range=True)
default_weight_fake_quant = FakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype=torch.qint8,
    qscheme=torch.per_tensor_symmetric, reduce_range=False)
default_dynamic_fake_quant = FakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, is_dynamic=True,
    dtype=torch.quint8, averaging_constant=1)
default_fixed_qparams_range_neg1to1_fake_quant = FixedQParamsFakeQuantize.with_args(
    observer=default_fixed_qparams_range_neg1to1_observer)
default_fixed_qparams_range_0to1_fake_quant = FixedQParamsFakeQuantize.with_args(
    observer=default_fixed_qparams_range_0to1_observer)
default_symmetric_fixed_qparams_fake_quant = default_fixed_qparams_range_neg1to1_fake_quant
default_affine_fixed_qparams_fake_quant = default_fixed_qparams_range_0to1_fake_quant
default_per_channel_weight_fake_quant = FakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127,
    dtype=torch.qint8, qscheme=torch.per_channel_symmetric, reduce_range=False, ch_axis=0)
default_embedding_fake_quant = FakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver,
    qscheme=torch.per_channel_affine_float_qparams, dtype=torch.quint8, quant_min=0,
    quant_max=255, ch_axis=0, averaging_constant=1)
default_embedding_fake_quant_4bit = FakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver,
    qscheme=torch.per_channel_affine_float_qparams, ch_axis=0, dtype=torch.quint4x2,
    averaging_constant=1)
default_histogram_fake_quant = FakeQuantize.with_args(
    observer=HistogramObserver, quant_min=0, quant_max=255, dtype=torch.quint8,
    qscheme=torch.per_tensor_affine, reduce_range=True)
default_fused_act_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, dtype=torch.quint8)
default_fused_wt_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype=torch.qint8,
    qscheme=torch.per_tensor_symmetric)
default_fused_per_channel_wt_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127,
    dtype=torch.qint8, qscheme=torch.per_channel_symmetric)
fused_wt_fake_quant_range_neg_127_to_127 = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-127, quant_max=127, dtype=torch.qint8,
    qscheme=torch.per_tensor_symmetric, eps=2 ** -12)
fused_per_channel_wt_fake_quant_range_neg_127_to_127 = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-127, quant_max=127,
    dtype=torch.qint8, qscheme=torch.per_channel_symmetric, eps=2 ** -12)
