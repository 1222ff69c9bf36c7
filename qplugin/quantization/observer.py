"""Observers (≙ torch.ao.quantization.observer): they record tensor statistics during
calibration and turn them into (scale, zero_point). Same classes, arguments, defaults,
buffers (state-dict layout, version 3) and arithmetic as torch.ao's, op for op, so the qparams are
bit-identical (tests/quantization/test_observers.py compares them). One deliberate difference: a
NaN in the observed tensor raises ValueError (torch.ao silently yields NaN scales or garbage).
Changes with: fake_quantize.py, qconfig.py, tests/quantization/test_observers.py.
"""
import warnings
from abc import ABCMeta, abstractmethod
from functools import partial
from typing import Any, Tuple

import torch
from torch import nn

__all__ = [
    "ObserverBase", "UniformQuantizationObserverBase", "MinMaxObserver",
    "MovingAverageMinMaxObserver", "PerChannelMinMaxObserver",
    "MovingAveragePerChannelMinMaxObserver", "HistogramObserver", "FixedQParamsObserver",
    "PlaceholderObserver", "NoopObserver", "default_observer", "default_placeholder_observer",
    "default_weight_observer", "weight_observer_range_neg_127_to_127",
    "default_histogram_observer", "default_per_channel_weight_observer",
    "per_channel_weight_observer_range_neg_127_to_127", "default_dynamic_quant_observer",
    "default_float_qparams_observer", "default_float_qparams_observer_4bit",
    "default_fixed_qparams_range_neg1to1_observer", "default_fixed_qparams_range_0to1_observer",
    "default_symmetric_fixed_qparams_observer", "default_affine_fixed_qparams_observer",
]

_EPS = torch.finfo(torch.float32).eps


class _PartialWrapper:
    """A constructor with bound arguments (``Cls.with_args(...)``); callable args are evaluated at
    each construction (``with_callable_args``). ≙ torch.ao's _PartialWrapper."""

    def __init__(self, p):
        self.p = p
        self.callable_args = {}

    def __call__(self, *args, **keywords):
        for arg_name in self.callable_args:
            if arg_name not in keywords:
                keywords = {**keywords, arg_name: self.callable_args[arg_name]()}
        return self.p(*args, **keywords)

    def __repr__(self):
        return self.p.__repr__() + self.callable_args.__repr__()

    def with_args(self, **kwargs):
        return _with_args(self, **kwargs)

    def with_callable_args(self, **kwargs):
        result = _PartialWrapper(p=self.p)
        result.callable_args = {**self.callable_args, **kwargs}
        return result


def _with_args(cls_or_self, **kwargs):
    return _PartialWrapper(partial(cls_or_self, **kwargs))


def _with_callable_args(cls_or_self, **kwargs):
    return _PartialWrapper(partial(cls_or_self)).with_callable_args(**kwargs)


ABC: Any = ABCMeta("ABC", (object,), {})

_PER_TENSOR = (torch.per_tensor_affine, torch.per_tensor_symmetric)
_PER_CHANNEL = (torch.per_channel_affine, torch.per_channel_symmetric,
                torch.per_channel_affine_float_qparams)


def _check_static(owner: str, is_dynamic: bool, qscheme=None, allowed=None, names="") -> None:
    """The observers that support neither dynamic quantization nor (`allowed`: when given)
    other qschemes than `allowed` (`names`)."""
    if allowed is not None and qscheme not in allowed:
        raise NotImplementedError(f"qplugin.quantization.{owner}: expected qscheme {names}, got"
                                  f" {qscheme}")
    if is_dynamic:
        raise NotImplementedError(f"qplugin.quantization.{owner}: dynamic quantization is not"
                                  " supported")


def _save_shaped(module, destination, prefix, names) -> None:
    """_save_to_state_dict's side of _adopt_saved_shapes: the buffers `names` written again after
    torch.nn's own saving, as torch.ao writes them (the buffer itself, whatever keep_vars)."""
    for name in names:
        destination[prefix + name] = getattr(module, name)


def _adopt_saved_shapes(state_dict, prefix, names, strict, missing_keys, adopt) -> None:
    """_load_from_state_dict of buffers whose shape the checkpoint decides (per-channel ranges
    and qparams, observer ranges): `adopt(name, saved)` makes the buffer fit each saved tensor
    present (resized or replaced) before torch.nn copies the values in; an absent one is
    reported missing when strict."""
    for name in names:
        key = prefix + name
        if key in state_dict:
            adopt(name, state_dict[key])
        elif strict:
            missing_keys.append(key)


def _check_no_nan(owner: str, lo: torch.Tensor, hi: torch.Tensor) -> None:
    # aminmax propagates NaN; torch.ao would go on to NaN scales (or fail converting them).
    if bool(torch.isnan(lo).any()) or bool(torch.isnan(hi).any()):
        raise ValueError(f"qplugin.quantization.{owner}: expected a tensor without NaN, got NaN "
                         "in the observed input; fix the model or data producing it")


def _qmin_qmax(quant_min, quant_max, has_customized_qrange: bool, dtype, reduce_range: bool):
    """The effective quantization range (≙ torch.ao.quantization.utils.calculate_qmin_qmax)."""
    if has_customized_qrange:
        qrange_len = quant_max - quant_min + 1
        if dtype in (torch.qint8, torch.int8) and not 0 < qrange_len <= 256:
            raise ValueError("qplugin.quantization: expected a quantization range of at most 256"
                             f" values for {dtype}, got [{quant_min}, {quant_max}]")
        if dtype in (torch.qint32, torch.int32) and not 0 < qrange_len <= 2 ** 32:
            raise ValueError("qplugin.quantization: expected a quantization range of at most 2^32"
                             f" values for {dtype}, got [{quant_min}, {quant_max}]")
        if reduce_range:
            quant_min, quant_max = quant_min // 2, quant_max // 2
        return quant_min, quant_max
    if dtype in (torch.qint8, torch.int8):
        return (-64, 63) if reduce_range else (-128, 127)
    if dtype in (torch.quint8, torch.uint8):
        return (0, 127) if reduce_range else (0, 255)
    if dtype in (torch.qint32, torch.int32):
        return -(2 ** 31), 2 ** 31 - 1
    if dtype == torch.uint16:
        return 0, 2 ** 16 - 1
    if dtype == torch.int16:
        return -(2 ** 15), 2 ** 15 - 1
    return 0, 15


class _QParamsModule(ABC):
    """The abstract interface of the observers and the fake-quant modules (fake_quantize.py)."""

    @abstractmethod
    def forward(self, x):
        pass

    @abstractmethod
    def calculate_qparams(self, **kwargs):
        pass


class ObserverBase(_QParamsModule, nn.Module):
    r"""Base observer: ``forward`` records statistics of its input (and returns it unchanged);
    ``calculate_qparams`` turns them into quantization parameters."""

    def __init__(self, dtype, is_dynamic: bool = False):
        super().__init__()
        self.dtype = dtype
        self.is_dynamic = is_dynamic

    with_args = classmethod(_with_args)
    with_callable_args = classmethod(_with_callable_args)


class UniformQuantizationObserverBase(ObserverBase):
    r"""Common base of the observers using uniform (affine or symmetric) quantization.

    Args:
        dtype: quantized dtype (torch.quint8, torch.qint8, ...).
        qscheme: per_tensor_affine / per_tensor_symmetric / per_channel_affine /
            per_channel_symmetric / per_channel_affine_float_qparams.
        reduce_range: halve the range (7-bit), as torch.ao (x86/fbgemm activations).
        quant_min, quant_max: custom range (both or neither); default the dtype's 8-bit range.
        factory_kwargs: device/dtype of the buffers.
        eps: the smallest scale (a buffer, as torch.ao's).
    """

    # Version 3 (torch.ao's numbering, shared by every observer): eps is a buffer; per-channel
    # observers keep min_val / max_val (version < 3: min_vals / max_vals).
    _version = 3
    eps: torch.Tensor

    def __init__(self, dtype=torch.quint8, qscheme=torch.per_tensor_affine, reduce_range=False,
                 quant_min=None, quant_max=None, factory_kwargs=None, eps=_EPS,
                 is_dynamic=False, **kwargs) -> None:
        factory_kwargs = torch.nn.factory_kwargs(factory_kwargs)
        super().__init__(dtype=dtype, is_dynamic=is_dynamic, **kwargs)
        self.qscheme = qscheme
        if reduce_range:
            warnings.warn("Please use quant_min and quant_max to specify the range for observers."
                          " reduce_range will be deprecated in a future release of PyTorch.",
                          stacklevel=2)
        self.reduce_range = reduce_range
        self.register_buffer("eps", torch.tensor([eps], **factory_kwargs))
        if qscheme not in _PER_TENSOR + _PER_CHANNEL:
            raise ValueError("qplugin.quantization: expected qscheme per_tensor_affine,"
                             " per_tensor_symmetric, per_channel_affine, per_channel_symmetric or"
                             f" per_channel_affine_float_qparams, got {qscheme}")
        allowed = (torch.qint8, torch.quint8, torch.quint4x2, torch.qint32, torch.int8,
                   torch.uint8, torch.int16, torch.int32, torch.float8_e5m2,
                   torch.float8_e4m3fn, torch.uint16)
        if dtype not in allowed:
            raise ValueError(f"qplugin.quantization: expected an observer dtype in {allowed},"
                             f" got {dtype}")
        self.has_customized_qrange = (quant_min is not None) and (quant_max is not None)
        if self.has_customized_qrange:
            if not quant_min <= 0 <= quant_max:
                raise ValueError("qplugin.quantization: expected quant_min <= 0 <= quant_max, got"
                                 f" [{quant_min}, {quant_max}]")
            if quant_min >= quant_max:
                raise ValueError("qplugin.quantization: expected quant_min < quant_max, got"
                                 f" [{quant_min}, {quant_max}]")
        self.quant_min, self.quant_max = _qmin_qmax(quant_min, quant_max,
                                                    self.has_customized_qrange, dtype,
                                                    reduce_range)

    def _register_min_max(self, factory_kwargs, per_channel: bool) -> None:
        """The running range buffers min_val / max_val (factory_kwargs as given to the
        constructor): empty per channel (the first input sizes them), else +inf / -inf."""
        factory_kwargs = torch.nn.factory_kwargs(factory_kwargs)
        for name, fill in (("min_val", float("inf")), ("max_val", float("-inf"))):
            self.register_buffer(name, torch.tensor([] if per_channel else fill,
                                                    **factory_kwargs))

    def _check_symmetric_reduce_range(self) -> None:
        """MinMax and per-channel observers (as torch.ao's): no reduce_range for symmetric
        quint8."""
        if self.qscheme in (torch.per_tensor_symmetric, torch.per_channel_symmetric) and \
                self.reduce_range and self.dtype == torch.quint8:
            raise NotImplementedError("qplugin.quantization: cannot reduce range for symmetric"
                                      " quantization for quint8")

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        version = local_metadata.get("version", None)
        if version is None or version == 1:  # eps became a buffer in version 2
            state_dict[prefix + "eps"] = torch.tensor([_EPS])
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    @torch.jit.export
    def _calculate_qparams(self, min_val: torch.Tensor,
                           max_val: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        r"""(scale, zero_point) for the range [min_val, max_val] (per tensor: 0-d; per channel:
        1-d), widened to include 0. The arithmetic is torch.ao's, operation for operation."""
        if not _check_min_max_valid(min_val, max_val):
            return (torch.tensor([1.0], device=min_val.device.type),
                    torch.tensor([0], device=min_val.device.type))
        quant_min, quant_max = self.quant_min, self.quant_max
        min_val_neg = torch.min(min_val, torch.zeros_like(min_val))
        max_val_pos = torch.max(max_val, torch.zeros_like(max_val))
        device = min_val_neg.device
        scale = torch.ones(min_val_neg.size(), dtype=torch.float32, device=device)
        zero_point = torch.zeros(min_val_neg.size(), dtype=torch.int64, device=device)
        if (self.qscheme == torch.per_tensor_symmetric
                or self.qscheme == torch.per_channel_symmetric):
            max_val_pos = torch.max(-min_val_neg, max_val_pos)
            scale = max_val_pos / (float(quant_max - quant_min) / 2)
            scale = torch.max(scale, self.eps)
            if self.dtype in [torch.quint8, torch.uint8]:
                if self.has_customized_qrange:
                    # the down-rounded midpoint of a custom range
                    zero_point = zero_point.new_full(zero_point.size(),
                                                     (quant_min + quant_max) // 2)
                else:
                    zero_point = zero_point.new_full(zero_point.size(), 128)
            elif self.dtype == torch.uint16:
                zero_point = zero_point.new_full(zero_point.size(), 2 ** 15)
        elif self.qscheme == torch.per_channel_affine_float_qparams:
            scale = (max_val - min_val) / float(quant_max - quant_min)
            scale = torch.where(scale > self.eps, scale, torch.ones_like(scale))
            # a float zero point: xq = round((x - min) / scale)
            zero_point = -1 * min_val / scale
        else:
            scale = (max_val_pos - min_val_neg) / float(quant_max - quant_min)
            scale = torch.max(scale, self.eps)
            zero_point = quant_min - torch.round(min_val_neg / scale).to(torch.int)
            zero_point = torch.clamp(zero_point, quant_min, quant_max)
        # 0-d results become 1-element tensors (FakeQuantize's buffers have that shape).
        if len(scale.shape) == 0:
            scale = torch.tensor([float(scale)], dtype=scale.dtype, device=device)
        if len(zero_point.shape) == 0:
            zero_point = torch.tensor([int(zero_point)], dtype=zero_point.dtype, device=device)
            if self.qscheme == torch.per_channel_affine_float_qparams:
                zero_point = torch.tensor([float(zero_point)], dtype=zero_point.dtype,
                                          device=device)
        return scale, zero_point

    @torch.jit.export
    def reset_min_max_vals(self):
        raise NotImplementedError("Cannot reset min/max values in the given observer.")


def _check_min_max_valid(min_val: torch.Tensor, max_val: torch.Tensor) -> bool:
    """False (with a warning) for a never-run observer; raises if min > max."""
    if min_val.numel() == 0 or max_val.numel() == 0:
        warnings.warn("must run observer before calling calculate_qparams. Returning default "
                      "values.", stacklevel=2)
        return False
    if min_val.dim() == 0 or max_val.dim() == 0:
        if min_val == float("inf") and max_val == float("-inf"):
            warnings.warn("must run observer before calling calculate_qparams. Returning default"
                          " values.", stacklevel=2)
            return False
        if min_val > max_val:
            raise ValueError(f"qplugin.quantization: expected min <= max, got min {min_val} and"
                             f" max {max_val}")
    elif bool(torch.any(min_val > max_val)):
        raise ValueError(f"qplugin.quantization: expected min <= max, got min {min_val} and max"
                         f" {max_val}")
    return True


class MinMaxObserver(UniformQuantizationObserverBase):
    r"""Per-tensor qparams from the running minimum and maximum of the observed tensors
    (≙ torch.ao.quantization.MinMaxObserver; same arguments)."""

    min_val: torch.Tensor
    max_val: torch.Tensor

    def __init__(self, dtype=torch.quint8, qscheme=torch.per_tensor_affine, reduce_range=False,
                 quant_min=None, quant_max=None, factory_kwargs=None, eps=_EPS,
                 is_dynamic=False, **kwargs) -> None:
        if qscheme not in _PER_TENSOR:
            raise NotImplementedError("qplugin.quantization: MinMaxObserver / MovingAverage"
                                      "MinMaxObserver: expected qscheme per_tensor_symmetric or"
                                      " per_tensor_affine, got"
                                      f" {qscheme}")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max, factory_kwargs=factory_kwargs,
                         eps=eps, is_dynamic=is_dynamic, **kwargs)
        self._register_min_max(factory_kwargs, per_channel=False)
        self._check_symmetric_reduce_range()

    def forward(self, x_orig):
        if x_orig.numel() == 0:
            return x_orig
        x = x_orig.detach().to(self.min_val.dtype)
        min_val_cur, max_val_cur = torch.aminmax(x)
        _check_no_nan("MinMaxObserver", min_val_cur, max_val_cur)
        min_val = torch.min(min_val_cur, self.min_val)
        max_val = torch.max(max_val_cur, self.max_val)
        self.min_val.copy_(min_val)
        self.max_val.copy_(max_val)
        return x_orig

    @torch.jit.export
    def calculate_qparams(self):
        return self._calculate_qparams(self.min_val, self.max_val)

    @torch.jit.export
    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"

    @torch.jit.export
    def reset_min_max_vals(self):
        self.min_val.copy_(torch.tensor(float("inf")))
        self.max_val.copy_(torch.tensor(float("-inf")))


class MovingAverageMinMaxObserver(MinMaxObserver):
    r"""Per-tensor qparams from moving averages of the minima and maxima:
    ``x_min = x_min + c * (min(X) - x_min)`` (the first tensor sets it), ``c`` the
    ``averaging_constant`` (≙ torch.ao.quantization.MovingAverageMinMaxObserver)."""

    def __init__(self, averaging_constant=0.01, dtype=torch.quint8,
                 qscheme=torch.per_tensor_affine, reduce_range=False, quant_min=None,
                 quant_max=None, eps=_EPS, is_dynamic=False, **kwargs) -> None:
        if qscheme not in _PER_TENSOR:
            raise NotImplementedError("qplugin.quantization: MinMaxObserver / MovingAverage"
                                      "MinMaxObserver: expected qscheme per_tensor_symmetric or"
                                      " per_tensor_affine, got"
                                      f" {qscheme}")
        self.averaging_constant = averaging_constant
        if is_dynamic and self.averaging_constant != 1:
            raise NotImplementedError("qplugin.quantization.MovingAverageMinMaxObserver: dynamic"
                                      " quantization needs averaging_constant 1, got"
                                      f" {self.averaging_constant}")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max, eps=eps,
                         is_dynamic=is_dynamic, **kwargs)

    def forward(self, x_orig):
        if x_orig.numel() == 0:
            return x_orig
        x = x_orig.detach().to(self.min_val.dtype)
        min_val = self.min_val
        max_val = self.max_val
        if min_val == float("inf") and max_val == float("-inf"):
            min_val, max_val = torch.aminmax(x)
            _check_no_nan("MovingAverageMinMaxObserver", min_val, max_val)
        else:
            min_val_cur, max_val_cur = torch.aminmax(x)
            _check_no_nan("MovingAverageMinMaxObserver", min_val_cur, max_val_cur)
            min_val = min_val + self.averaging_constant * (min_val_cur - min_val)
            max_val = max_val + self.averaging_constant * (max_val_cur - max_val)
        self.min_val.copy_(min_val)
        self.max_val.copy_(max_val)
        return x_orig


class PerChannelMinMaxObserver(UniformQuantizationObserverBase):
    r"""Per-channel qparams (along ``ch_axis``) from the running per-channel minima and maxima
    (≙ torch.ao.quantization.PerChannelMinMaxObserver)."""

    min_val: torch.Tensor
    max_val: torch.Tensor

    def __init__(self, ch_axis=0, dtype=torch.quint8, qscheme=torch.per_channel_affine,
                 reduce_range=False, quant_min=None, quant_max=None, factory_kwargs=None,
                 eps=_EPS, is_dynamic=False, **kwargs) -> None:
        _check_static(type(self).__name__, is_dynamic, qscheme, _PER_CHANNEL,
                      "per_channel_symmetric, per_channel_affine or"
                      " per_channel_affine_float_qparams")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max, factory_kwargs=factory_kwargs,
                         eps=eps, is_dynamic=is_dynamic, **kwargs)
        self.ch_axis = ch_axis
        self._register_min_max(factory_kwargs, per_channel=True)
        self._check_symmetric_reduce_range()

    def forward(self, x_orig):
        return self._forward(x_orig, "PerChannelMinMaxObserver")

    def _channel_rows(self, x_orig: torch.Tensor) -> torch.Tensor:
        x = x_orig.detach()
        if not -x.dim() <= self.ch_axis < x.dim():
            raise ValueError(f"qplugin.quantization: per-channel observer: expected ch_axis in"
                             f" [{-x.dim()}, {x.dim() - 1}] for a {x.dim()}-D input, got"
                             f" {self.ch_axis}")
        new_axis_list = [i for i in range(x.dim())]
        new_axis_list[self.ch_axis] = 0
        new_axis_list[0] = self.ch_axis
        y = x.permute(new_axis_list)
        # Needed to match the dtype of min/max buffers (≙ torch.ao, which casts after permute).
        y = y.to(self.min_val.dtype)
        return torch.flatten(y, start_dim=1)

    def _forward(self, x_orig, owner: str):
        """Records the per-channel minima and maxima of x_orig (the first tensor sets them; then
        _combine) and returns it; `owner` names the observer in errors."""
        if x_orig.numel() == 0:
            return x_orig
        min_val = self.min_val
        max_val = self.max_val
        y = self._channel_rows(x_orig)
        min_val_cur, max_val_cur = torch.aminmax(y, dim=1)
        _check_no_nan(owner, min_val_cur, max_val_cur)
        if min_val.numel() == 0 or max_val.numel() == 0:
            min_val, max_val = min_val_cur, max_val_cur
        else:
            min_val, max_val = self._combine(min_val, max_val, min_val_cur, max_val_cur)
        self.min_val.resize_(min_val.shape)
        self.max_val.resize_(max_val.shape)
        self.min_val.copy_(min_val)
        self.max_val.copy_(max_val)
        return x_orig

    def _combine(self, min_val: torch.Tensor, max_val: torch.Tensor, min_val_cur: torch.Tensor,
                 max_val_cur: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        return torch.min(min_val_cur, min_val), torch.max(max_val_cur, max_val)

    @torch.jit.export
    def calculate_qparams(self):
        return self._calculate_qparams(self.min_val, self.max_val)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        version = local_metadata.get("version", None)
        names = ("min_vals", "max_vals") if version is not None and version < 3 else (
            "min_val", "max_val")
        bufs = dict(zip(names, ("min_val", "max_val")))
        # the buffers start empty: resize to the saved per-channel shape
        _adopt_saved_shapes(state_dict, prefix, names, strict, missing_keys,
                            lambda name, saved: getattr(self, bufs[name]).resize_(saved.shape))
        if names[0] != "min_val":
            for old, new in zip(names, ("min_val", "max_val")):
                if prefix + old in state_dict:
                    state_dict[prefix + new] = state_dict.pop(prefix + old)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs)

    @torch.jit.export
    def reset_min_max_vals(self):
        self.min_val = torch.rand(0)
        self.max_val = torch.rand(0)


class MovingAveragePerChannelMinMaxObserver(PerChannelMinMaxObserver):
    r"""Per-channel qparams from moving averages of the per-channel minima and maxima
    (≙ torch.ao.quantization.MovingAveragePerChannelMinMaxObserver)."""

    def __init__(self, averaging_constant=0.01, ch_axis=0, dtype=torch.quint8,
                 qscheme=torch.per_channel_affine, reduce_range=False, quant_min=None,
                 quant_max=None, eps=_EPS, is_dynamic=False, **kwargs) -> None:
        super().__init__(ch_axis=ch_axis, dtype=dtype, qscheme=qscheme,
                         reduce_range=reduce_range, quant_min=quant_min, quant_max=quant_max,
                         eps=eps, is_dynamic=is_dynamic, **kwargs)
        self.averaging_constant = averaging_constant

    def forward(self, x_orig):
        return self._forward(x_orig, "MovingAveragePerChannelMinMaxObserver")

    def _combine(self, min_val: torch.Tensor, max_val: torch.Tensor, min_val_cur: torch.Tensor,
                 max_val_cur: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        return (min_val + self.averaging_constant * (min_val_cur - min_val),
                max_val + self.averaging_constant * (max_val_cur - max_val))


class HistogramObserver(UniformQuantizationObserverBase):
    r"""Per-tensor qparams from a running histogram of the values: the range is narrowed by
    torch.ao's search minimising the L2 quantization error of the histogram
    (≙ torch.ao.quantization.HistogramObserver; the same search, step for step). Infinite values
    are ignored with a warning, as torch.ao does."""

    histogram: torch.Tensor
    min_val: torch.Tensor
    max_val: torch.Tensor

    def __init__(self, bins: int = 2048, dtype: torch.dtype = torch.quint8,
                 qscheme=torch.per_tensor_affine, reduce_range=False, quant_min=None,
                 quant_max=None, factory_kwargs=None, eps=_EPS, is_dynamic=False,
                 **kwargs) -> None:
        _check_static("HistogramObserver", is_dynamic, qscheme, _PER_TENSOR,
                      "per_tensor_symmetric or per_tensor_affine")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max, factory_kwargs=factory_kwargs,
                         eps=eps, is_dynamic=is_dynamic, **kwargs)
        self.bins = bins
        self.register_buffer("histogram", torch.zeros(self.bins,
                                                      **torch.nn.factory_kwargs(factory_kwargs)))
        self._register_min_max(factory_kwargs, per_channel=False)
        self.dst_nbins = 2 ** torch.iinfo(self.dtype).bits
        self.upsample_rate = 16  # reduces the error of upscaling the histogram

    def _get_norm(self, delta_begin: torch.Tensor, delta_end: torch.Tensor,
                  density: torch.Tensor) -> torch.Tensor:
        # integral of x^2 over [delta_begin, delta_end], times the density
        norm = (delta_end * delta_end * delta_end - delta_begin * delta_begin * delta_begin) / 3
        return density * norm

    def _compute_quantization_error(self, next_start_bin: int, next_end_bin: int):
        """L2 error of quantizing the histogram into dst_nbins bins over
        [next_start_bin, next_end_bin]."""
        bin_width = (self.max_val.item() - self.min_val.item()) / self.bins
        dst_bin_width = bin_width * (next_end_bin - next_start_bin + 1) / self.dst_nbins
        if dst_bin_width == 0.0:
            return 0.0
        src_bin = torch.arange(self.bins, device=self.histogram.device)
        src_bin_begin = (src_bin - next_start_bin) * bin_width
        src_bin_end = src_bin_begin + bin_width
        dst_bin_of_begin = torch.clamp(
            torch.div(src_bin_begin, dst_bin_width, rounding_mode="floor"), 0,
            self.dst_nbins - 1)
        dst_bin_of_begin_center = (dst_bin_of_begin + 0.5) * dst_bin_width
        dst_bin_of_end = torch.clamp(
            torch.div(src_bin_end, dst_bin_width, rounding_mode="floor"), 0, self.dst_nbins - 1)
        density = self.histogram / bin_width
        norm = torch.zeros(self.bins, device=self.histogram.device)
        delta_begin = src_bin_begin - dst_bin_of_begin_center
        delta_end = dst_bin_width / 2
        norm += self._get_norm(delta_begin,
                               torch.ones(self.bins, device=self.histogram.device) * delta_end,
                               density)
        norm += (dst_bin_of_end - dst_bin_of_begin - 1) * self._get_norm(
            torch.tensor(-dst_bin_width / 2), torch.tensor(dst_bin_width / 2), density)
        dst_bin_of_end_center = dst_bin_of_end * dst_bin_width + dst_bin_width / 2
        delta_begin = -dst_bin_width / 2
        delta_end = src_bin_end - dst_bin_of_end_center
        norm += self._get_norm(torch.tensor(delta_begin), delta_end, density)
        return norm.sum().item()

    def _non_linear_param_search(self) -> Tuple[torch.Tensor, torch.Tensor]:
        """Narrows [min_val, max_val] greedily from the side with fewer values, stepping the
        cumulative share by 1e-5, while the quantization error keeps falling."""
        if self.histogram.size()[0] != self.bins:
            raise ValueError("qplugin.quantization.HistogramObserver: expected a histogram of"
                             f" {self.bins} bins, got {self.histogram.size()[0]}")
        bin_width = (self.max_val - self.min_val) / self.bins
        total = torch.sum(self.histogram).item()
        cSum = torch.cumsum(self.histogram, dim=0)
        stepsize = 1e-5
        alpha = 0.0
        beta = 1.0
        start_bin = 0
        end_bin = self.bins - 1
        norm_min = float("inf")
        while alpha < beta:
            next_alpha = alpha + stepsize
            next_beta = beta - stepsize
            left = start_bin
            right = end_bin
            while left < end_bin and cSum[left] < next_alpha * total:
                left = left + 1
            while right > start_bin and cSum[right] > next_beta * total:
                right = right - 1
            next_start_bin = start_bin
            next_end_bin = end_bin
            if (left - start_bin) > (end_bin - right):
                next_start_bin = left
                alpha = next_alpha
            else:
                next_end_bin = right
                beta = next_beta
            if next_start_bin == start_bin and next_end_bin == end_bin:
                continue
            norm = self._compute_quantization_error(next_start_bin, next_end_bin)
            if norm > norm_min:
                break
            norm_min = norm
            start_bin = next_start_bin
            end_bin = next_end_bin
        new_min = self.min_val + bin_width * start_bin
        new_max = self.min_val + bin_width * (end_bin + 1)
        return new_min, new_max

    def _upscale_histogram(self, histogram: torch.Tensor, orig_min: torch.Tensor,
                           orig_max: torch.Tensor, update_min: torch.Tensor,
                           update_max: torch.Tensor):
        # Spread each bin over upsample_rate sub-bins, then re-bin their midpoints on the new
        # range.
        histogram = histogram.repeat_interleave(self.upsample_rate) / self.upsample_rate
        bin_size = (orig_max - orig_min) / (self.bins * self.upsample_rate)
        mid_points_histogram = torch.linspace(
            orig_min, orig_max, self.bins * self.upsample_rate + 1,
            device=orig_min.device)[:-1].to(histogram.device) + 0.5 * bin_size
        boundaries_new_histogram = torch.linspace(
            update_min, update_max, self.bins + 1, device=update_min.device).to(histogram.device)
        bucket_assignments = torch.bucketize(mid_points_histogram, boundaries_new_histogram,
                                             right=True) - 1
        bucket_assignments[bucket_assignments >= self.bins] = self.bins - 1
        bucket_assignments[bucket_assignments < 0] = 0
        return torch.bincount(bucket_assignments, weights=histogram, minlength=self.bins)

    def _combine_histograms(self, orig_hist: torch.Tensor, orig_min: torch.Tensor,
                            orig_max: torch.Tensor, update_hist: torch.Tensor,
                            update_min: torch.Tensor, update_max: torch.Tensor) -> torch.Tensor:
        if update_min == orig_min and update_max == orig_max:
            return orig_hist + update_hist
        if orig_min == orig_max:
            bin_value = torch.sum(orig_hist)
            transformed_orig_hist = torch.histc(orig_min, bins=self.bins, min=update_min,
                                                max=update_max) * bin_value
            return transformed_orig_hist + update_hist
        transformed_orig_hist = self._upscale_histogram(orig_hist, orig_min, orig_max,
                                                        update_min, update_max)
        return update_hist + transformed_orig_hist

    def reset_histogram(self, x: torch.Tensor, min_val: torch.Tensor,
                        max_val: torch.Tensor) -> None:
        self.min_val.resize_(min_val.shape)
        self.min_val.copy_(min_val)
        self.max_val.resize_(max_val.shape)
        self.max_val.copy_(max_val)
        new_histogram = torch.histc(x, self.bins, min=min_val, max=max_val)
        self.histogram.detach_().resize_(new_histogram.shape)
        self.histogram.copy_(new_histogram)

    def forward(self, x_orig: torch.Tensor) -> torch.Tensor:
        if x_orig.numel() == 0:
            return x_orig
        x = x_orig.detach()
        x_min, x_max = torch.aminmax(x)
        _check_no_nan("HistogramObserver", x_min, x_max)
        if x_min == -torch.inf or x_max == torch.inf:
            warnings.warn("torch.inf detected in input tensor, ignoring input", stacklevel=2)
            x = x[x.abs() != torch.inf]
            if x.numel() == 0:
                return x_orig
            x_min, x_max = torch.aminmax(x)
        current_min = self.min_val
        current_max = self.max_val
        is_uninitialized = self.min_val == float("inf") or self.max_val == float("-inf")
        if is_uninitialized:
            self.reset_histogram(x, x_min, x_max)
        else:
            new_min = torch.min(current_min, x_min).detach()
            new_max = torch.max(current_max, x_max).detach()
            update_histogram = torch.histc(x, self.bins, min=new_min,
                                           max=new_max).to(self.histogram.device)
            if new_min == current_min and new_max == current_max:
                combined_histogram = self.histogram + update_histogram
                self.histogram.detach_().resize_(combined_histogram.shape)
                self.histogram.copy_(combined_histogram)
            else:
                combined_histogram = self._combine_histograms(
                    self.histogram, current_min, current_max, update_histogram, new_min,
                    new_max)
                self.histogram.detach_().resize_(combined_histogram.shape)
                self.histogram.copy_(combined_histogram)
                self.min_val.detach_().resize_(new_min.shape)
                self.min_val.copy_(new_min)
                self.max_val.detach_().resize_(new_max.shape)
                self.max_val.copy_(new_max)
        return x_orig

    @torch.jit.export
    def calculate_qparams(self):
        if self.min_val == float("inf") and self.max_val == float("-inf"):
            warnings.warn("must run observer before calling calculate_qparams. Returning default"
                          " scale and zero point ", stacklevel=2)
            return (torch.tensor([1.0], device=self.min_val.device.type),
                    torch.tensor([0], device=self.min_val.device.type))
        if self.bins != len(self.histogram):
            raise ValueError("qplugin.quantization.HistogramObserver: expected a histogram of"
                             f" {self.bins} bins, got {len(self.histogram)}")
        new_min, new_max = self._non_linear_param_search()
        return self._calculate_qparams(new_min, new_max)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        _save_shaped(self, destination, prefix, ("min_val", "max_val"))

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        version = local_metadata.get("version", None)
        if version is None or version < 3:  # uninitialized min/max were shape [0] before v3
            for name, fill in (("min_val", float("inf")), ("max_val", float("-inf"))):
                if prefix + name in state_dict and \
                        state_dict[prefix + name].shape == torch.Size([0]):
                    state_dict[prefix + name] = torch.tensor(fill)
        _adopt_saved_shapes(state_dict, prefix, ("min_val", "max_val"), strict, missing_keys,
                            lambda name, saved: setattr(self, name, saved))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"


class FixedQParamsObserver(ObserverBase):
    r"""Fixed ``scale`` / ``zero_point`` (outputs of sigmoid, tanh, softmax in QAT;
    ≙ torch.ao.quantization.FixedQParamsObserver)."""

    scale: torch.Tensor
    zero_point: torch.Tensor

    def __init__(self, scale, zero_point, dtype=torch.quint8, qscheme=torch.per_tensor_affine,
                 quant_min=0, quant_max=255, is_dynamic=False, **kwargs):
        _check_static("FixedQParamsObserver", is_dynamic)
        super().__init__(dtype=dtype, is_dynamic=is_dynamic, **kwargs)
        self.quant_min = quant_min
        self.quant_max = quant_max
        self.register_buffer("scale", torch.tensor([scale], dtype=torch.float))
        self.register_buffer("zero_point", torch.tensor([zero_point], dtype=torch.int))
        self.dtype = dtype
        self.qscheme = qscheme

    def forward(self, X):
        return X

    @torch.jit.export
    def calculate_qparams(self):
        return self.scale, self.zero_point


class _PassThroughObserver(ObserverBase):
    """Records nothing: forward returns its input."""

    def forward(self, x):
        return x


class PlaceholderObserver(_PassThroughObserver):
    r"""Records nothing; carries ``dtype`` (and ``is_dynamic``) to the converted module
    (float16 or dynamic quantization; ≙ torch.ao.quantization.PlaceholderObserver)."""

    def __init__(self, dtype=torch.float32, custom_op_name="", compute_dtype=None,
                 quant_min=None, quant_max=None, qscheme=None, eps=None,
                 is_dynamic=False) -> None:
        super().__init__(dtype=dtype, is_dynamic=is_dynamic)
        if qscheme is None:
            qscheme = torch.per_tensor_affine
        if eps is None:
            eps = _EPS
        self.qscheme = qscheme
        self.quant_min = quant_min
        self.quant_max = quant_max
        self.eps = eps
        self.custom_op = custom_op_name
        if compute_dtype:
            # torch.ao warns here and (by a slip) keeps is_dynamic as passed; so does qplugin
            warnings.warn("Please use `is_dynamic` instead of `compute_dtype`. `compute_dtype`"
                          " will be deprecated in a future release of PyTorch.", stacklevel=2)

    @torch.jit.export
    def extra_repr(self):
        return f"dtype={self.dtype}, is_dynamic={self.is_dynamic}"

    @torch.jit.export
    def calculate_qparams(self):
        raise RuntimeError("qplugin.quantization.PlaceholderObserver: calculate_qparams should"
                           " not be called for PlaceholderObserver")


class NoopObserver(_PassThroughObserver):
    r"""Does nothing; passes its dtype to ``from_float`` (float16 weights;
    ≙ torch.ao.quantization.NoopObserver)."""

    def __init__(self, dtype=torch.float16, custom_op_name="") -> None:
        super().__init__(dtype=dtype, is_dynamic=False)
        self.dtype = dtype
        self.custom_op = custom_op_name

    @torch.jit.export
    def calculate_qparams(self):
        raise RuntimeError("qplugin.quantization.NoopObserver: calculate_qparams should not be"
                           " called for NoopObserver")


# Presets (≙ torch.ao.quantization.observer.default_*; same arguments).
default_observer = MinMaxObserver.with_args(quant_min=0, quant_max=127)
default_placeholder_observer = PlaceholderObserver
default_weight_observer = MinMaxObserver.with_args(dtype=torch.qint8,
                                                   qscheme=torch.per_tensor_symmetric)
weight_observer_range_neg_127_to_127 = MinMaxObserver.with_args(
    dtype=torch.qint8, qscheme=torch.per_tensor_symmetric, quant_min=-127, quant_max=127,
    eps=2 ** -12)
default_histogram_observer = HistogramObserver.with_args(quant_min=0, quant_max=127)
default_per_channel_weight_observer = PerChannelMinMaxObserver.with_args(
    dtype=torch.qint8, qscheme=torch.per_channel_symmetric)
per_channel_weight_observer_range_neg_127_to_127 = PerChannelMinMaxObserver.with_args(
    dtype=torch.qint8, qscheme=torch.per_channel_symmetric, quant_min=-127, quant_max=127,
    eps=2 ** -12)
default_dynamic_quant_observer = PlaceholderObserver.with_args(
    dtype=torch.quint8, quant_min=0, quant_max=255, is_dynamic=True)
default_float_qparams_observer = PerChannelMinMaxObserver.with_args(
    dtype=torch.quint8, qscheme=torch.per_channel_affine_float_qparams, ch_axis=0)
default_float_qparams_observer_4bit = PerChannelMinMaxObserver.with_args(
    dtype=torch.quint4x2, qscheme=torch.per_channel_affine_float_qparams, ch_axis=0)
default_fixed_qparams_range_neg1to1_observer = FixedQParamsObserver.with_args(
    scale=2.0 / 256.0, zero_point=128, dtype=torch.quint8, quant_min=0, quant_max=255)
default_fixed_qparams_range_0to1_observer = FixedQParamsObserver.with_args(
    scale=1.0 / 256.0, zero_point=0, dtype=torch.quint8, quant_min=0, quant_max=255)
default_symmetric_fixed_qparams_observer = default_fixed_qparams_range_neg1to1_observer
default_affine_fixed_qparams_observer = default_fixed_qparams_range_0to1_observer
