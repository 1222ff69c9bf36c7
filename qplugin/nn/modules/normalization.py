"""Quantized normalization modules (≙ torch.ao.nn.quantized.LayerNorm, GroupNorm,
InstanceNorm1d/2d/3d) running torch.ops.qplugin.layer_norm / group_norm / instance_norm.

Changes with: csrc/ops/normalization.cpp (the ops), qplugin/nn/_functional_normalization.py,
tests/normalization/test_normalization_modules.py (reprs, state dicts, fixtures).

Same constructor signatures, attributes, from_float and from_reference as torch.ao's; the classes
subclass the float modules as torch.ao's do. Differences, all extensions:
  * scale (float64) and zero_point (int64) are buffers, so they survive state_dict, torch.save and
    TorchScript round trips exactly; extra_repr shows them.
  * weight/bias are stored as Parameters with requires_grad=False (any tensor is accepted).
  * InstanceNorm*d accept unbatched input (one rank less), as the float modules do, and check the
    rank; from_float of a float InstanceNorm with track_running_stats=True keeps the running
    statistics and normalizes with them (what the float module does in eval mode) through
    torch.ops.qplugin.quantized_batch_norm. torch.ao drops them and silently uses the input's
    statistics instead.
"""
import math
from typing import Optional

import torch

from qplugin.nn.modules.utils import _check_zero_point, _QuantizedName

__all__ = [
    "LayerNorm",
    "GroupNorm",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "InstanceNorm3d",
]

# Version of the qplugin state-dict layout written by every class here (see _save_to_state_dict).
_QPLUGIN_NORM_VERSION = 1


def _as_param(t: Optional[torch.Tensor], who: str, arg: str) -> Optional[torch.nn.Parameter]:
    if t is None:
        return None
    if not isinstance(t, torch.Tensor) or t.is_quantized or not t.is_floating_point():
        got = type(t).__name__ if not isinstance(t, torch.Tensor) else str(t.dtype)
        raise TypeError(f"qplugin.nn.{who}: expected {arg} to be a floating-point tensor or None, "
                        f"got {got}")
    return torch.nn.Parameter(t.detach(), requires_grad=False)


def _check_scale(who: str, scale) -> float:
    s = float(scale)
    if not (math.isfinite(s) and s > 0):
        raise ValueError(f"qplugin.nn.{who}: expected a finite, positive scale, got {s}")
    return s


def _register_qparams(mod: torch.nn.Module, who: str, scale, zero_point, device) -> None:
    mod.register_buffer("scale", torch.tensor(_check_scale(who, scale), dtype=torch.float64,
                                              device=device))
    zp = _check_zero_point(f"qplugin.nn.{who}", zero_point)
    mod.register_buffer("zero_point", torch.tensor(zp, dtype=torch.int64, device=device))


def _observed_qparams(cls, mod):
    """(scale, zero_point) of an observed float module, with a clear error otherwise."""
    float_cls = cls._FLOAT_MODULE
    if not isinstance(mod, float_cls):
        raise TypeError(f"qplugin.nn.{cls.__name__}.from_float: expected an observed "
                        f"{float_cls.__module__}.{float_cls.__name__}, got "
                        f"{type(mod).__module__}.{type(mod).__name__}")
    obs = getattr(mod, "activation_post_process", None)
    if obs is None:
        raise ValueError(f"qplugin.nn.{cls.__name__}.from_float: expected the float module to "
                         "have an activation_post_process observer, got none; run "
                         "qplugin.quantization.prepare (with a qconfig) and calibrate first")
    scale, zero_point = obs.calculate_qparams()
    return float(scale), int(zero_point)


def _qparams_repr(mod) -> str:
    return f"scale={float(mod.scale)}, zero_point={int(mod.zero_point)}"


class _VersionedStateDict(_QuantizedName):
    """State-dict hooks and the repr name shared by the classes here (Python only; TorchScript
    never calls them)."""

    # State-dict layout of each version (keys under the module's prefix). The metadata "version"
    # is the class's _version: LayerNorm and GroupNorm 1; InstanceNorm*d 2, continuing
    # _NormBase's numbering (its version 2 added num_batches_tracked).
    #
    #   qplugin version 1 (LayerNorm/GroupNorm _version 1, InstanceNorm*d _version 2)
    #   ├── weight        float, normalized_shape or [C]   (absent when None)
    #   ├── bias          float, normalized_shape or [C]   (absent when None)
    #   ├── scale         float64 scalar   (torch.ao's float32 scalar loads too)
    #   ├── zero_point    int64 scalar
    #   └── running_mean, running_var, num_batches_tracked   (InstanceNorm*d with
    #                                                         track_running_stats=True only)
    #
    # This is torch.ao.nn.quantized's layout, so its checkpoints load unchanged.
    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        version = local_metadata.get("version", None)
        if version is not None and version > self._version:
            error_msgs.append(
                f"qplugin.nn.{type(self).__name__}: expected a state dict of version <= "
                f"{self._version}, got version {version} (saved by a newer qplugin); upgrade "
                "qplugin to load it")
            return
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)


class LayerNorm(_VersionedStateDict, torch.nn.LayerNorm):
    r"""Quantized :class:`~torch.nn.LayerNorm` (≙ torch.ao.nn.quantized.LayerNorm).

    Additional args:
        * **scale** - quantization scale of the output, type: double.
        * **zero_point** - quantization zero point of the output, type: long.
    """

    _FLOAT_MODULE = torch.nn.LayerNorm
    _version = 1

    def __init__(self, normalized_shape, weight, bias, scale, zero_point, eps=1e-5,
                 elementwise_affine=True, device=None, dtype=None) -> None:
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__(normalized_shape, eps=eps, elementwise_affine=elementwise_affine,
                         **factory_kwargs)
        self.weight = _as_param(weight, "LayerNorm", "weight")
        self.bias = _as_param(bias, "LayerNorm", "bias")
        for arg, t in (("weight", self.weight), ("bias", self.bias)):
            if t is not None and tuple(t.shape) != tuple(self.normalized_shape):
                raise ValueError(f"qplugin.nn.LayerNorm: expected {arg} of shape "
                                 f"{list(self.normalized_shape)} (normalized_shape), got "
                                 f"{list(t.shape)}")
        _register_qparams(self, "LayerNorm", scale, zero_point, device)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return torch.ops.qplugin.layer_norm(input, list(self.normalized_shape), self.weight,
                                            self.bias, self.eps, float(self.scale),
                                            int(self.zero_point))

    def extra_repr(self):
        return f"{super().extra_repr()}, {_qparams_repr(self)}"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        scale, zero_point = _observed_qparams(cls, mod)
        return cls(mod.normalized_shape, mod.weight, mod.bias, scale, zero_point, mod.eps,
                   mod.elementwise_affine)

    @classmethod
    def from_reference(cls, mod, scale, zero_point):
        return cls(mod.normalized_shape, mod.weight, mod.bias, float(scale), int(zero_point),
                   mod.eps, mod.elementwise_affine)


class GroupNorm(_VersionedStateDict, torch.nn.GroupNorm):
    r"""Quantized :class:`~torch.nn.GroupNorm` (≙ torch.ao.nn.quantized.GroupNorm).

    Additional args:
        * **scale** - quantization scale of the output, type: double.
        * **zero_point** - quantization zero point of the output, type: long.
    """

    _FLOAT_MODULE = torch.nn.GroupNorm
    _version = 1
    __constants__ = ["num_groups", "num_channels", "eps", "affine"]

    def __init__(self, num_groups, num_channels, weight, bias, scale, zero_point, eps=1e-5,
                 affine=True, device=None, dtype=None) -> None:
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__(num_groups, num_channels, eps, affine, **factory_kwargs)
        self.weight = _as_param(weight, "GroupNorm", "weight")
        self.bias = _as_param(bias, "GroupNorm", "bias")
        # As in PyTorch, num_channels is metadata: weight and bias are checked against the
        # input's channel count by the op at forward time (qplugin::group_norm: expected weight
        # of shape [C] ...), not against num_channels here.
        _register_qparams(self, "GroupNorm", scale, zero_point, device)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return torch.ops.qplugin.group_norm(input, self.num_groups, self.weight, self.bias,
                                            self.eps, float(self.scale), int(self.zero_point))

    def extra_repr(self):
        return f"{super().extra_repr()}, {_qparams_repr(self)}"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        scale, zero_point = _observed_qparams(cls, mod)
        return cls(mod.num_groups, mod.num_channels, mod.weight, mod.bias, scale, zero_point,
                   mod.eps, mod.affine)

    @classmethod
    def from_reference(cls, mod, scale, zero_point):
        return cls(mod.num_groups, mod.num_channels, mod.weight, mod.bias, float(scale),
                   int(zero_point), mod.eps, mod.affine)


class _InstanceNormBase(_VersionedStateDict):
    """Shared body of InstanceNorm1d/2d/3d (mixed into the float classes below).

    Additional args (of the three classes):
        * **scale** - quantization scale of the output, type: double.
        * **zero_point** - quantization zero point of the output, type: long.
    """

    _version = 2

    def __init__(self, num_features, weight, bias, scale, zero_point, eps=1e-5, momentum=0.1,
                 affine=False, track_running_stats=False, device=None, dtype=None) -> None:
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__(num_features, eps, momentum, affine, track_running_stats,
                         **factory_kwargs)
        self._qinit(num_features, weight, bias, scale, zero_point, device)

    def _qinit(self, num_features, weight, bias, scale, zero_point, device):
        who = type(self).__name__
        self.weight = _as_param(weight, who, "weight")
        self.bias = _as_param(bias, who, "bias")
        for arg, t in (("weight", self.weight), ("bias", self.bias)):
            if t is not None and tuple(t.shape) != (num_features,):
                raise ValueError(f"qplugin.nn.{who}: expected {arg} of shape [{num_features}] "
                                 f"(num_features), got {list(t.shape)}")
        _register_qparams(self, who, scale, zero_point, device)

    def _forward_nd(self, input: torch.Tensor, who: str, n: int, dims: str) -> torch.Tensor:
        """forward of InstanceNorm{n}d: an unbatched ({dims}) or batched (N, {dims}) input
        (each class keeps a literal forward naming its own arguments, for TorchScript)."""
        if input.dim() == n + 1:
            return self._normalize(input.unsqueeze(0)).squeeze(0)
        if input.dim() != n + 2:
            raise ValueError(f"{who}: expected a {n + 1}-D ({dims}) or {n + 2}-D "
                             f"(N, {dims}) input, got {input.dim()}-D")
        return self._normalize(input)

    def _normalize(self, input: torch.Tensor) -> torch.Tensor:
        if self.track_running_stats and self.running_mean is not None \
                and self.running_var is not None:
            # Eval-mode float semantics: normalize with the running statistics.
            return torch.ops.qplugin.quantized_batch_norm(
                input, self.weight, self.bias, self.running_mean, self.running_var, self.eps,
                float(self.scale), int(self.zero_point))
        return torch.ops.qplugin.instance_norm(input, self.weight, self.bias, self.eps,
                                               float(self.scale), int(self.zero_point))

    def extra_repr(self):
        return f"{super().extra_repr()}, {_qparams_repr(self)}"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        scale, zero_point = _observed_qparams(cls, mod)
        new_mod = cls(mod.num_features, mod.weight, mod.bias, scale, zero_point, mod.eps,
                      mod.momentum, mod.affine, mod.track_running_stats)
        new_mod._copy_running_stats(mod)
        return new_mod

    @classmethod
    def from_reference(cls, mod, scale, zero_point):
        new_mod = cls(mod.num_features, mod.weight, mod.bias, float(scale), int(zero_point),
                      mod.eps, mod.momentum, mod.affine, mod.track_running_stats)
        new_mod._copy_running_stats(mod)
        return new_mod

    def _copy_running_stats(self, mod):
        if self.track_running_stats and getattr(mod, "running_mean", None) is not None:
            with torch.no_grad():
                self.running_mean.copy_(mod.running_mean)
                self.running_var.copy_(mod.running_var)
                self.num_batches_tracked.copy_(mod.num_batches_tracked)


class InstanceNorm1d(_InstanceNormBase, torch.nn.InstanceNorm1d):
    r"""Quantized :class:`~torch.nn.InstanceNorm1d` (≙ torch.ao.nn.quantized.InstanceNorm1d).
    Input (N, C, L) or unbatched (C, L).
    Additional args: ``scale``, ``zero_point`` (see :class:`_InstanceNormBase`)."""

    _FLOAT_MODULE = torch.nn.InstanceNorm1d

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return self._forward_nd(input, "qplugin.nn.InstanceNorm1d", 1, "C, L")


class InstanceNorm2d(_InstanceNormBase, torch.nn.InstanceNorm2d):
    r"""Quantized :class:`~torch.nn.InstanceNorm2d` (≙ torch.ao.nn.quantized.InstanceNorm2d).
    Input (N, C, H, W) or unbatched (C, H, W); channels-last input gives channels-last output.
    Additional args: ``scale``, ``zero_point`` (see :class:`_InstanceNormBase`)."""

    _FLOAT_MODULE = torch.nn.InstanceNorm2d

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return self._forward_nd(input, "qplugin.nn.InstanceNorm2d", 2, "C, H, W")


class InstanceNorm3d(_InstanceNormBase, torch.nn.InstanceNorm3d):
    r"""Quantized :class:`~torch.nn.InstanceNorm3d` (≙ torch.ao.nn.quantized.InstanceNorm3d).
    Input (N, C, D, H, W) or unbatched (C, D, H, W); channels_last_3d input keeps its layout.
    Additional args: ``scale``, ``zero_point`` (see :class:`_InstanceNormBase`)."""

    _FLOAT_MODULE = torch.nn.InstanceNorm3d

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return self._forward_nd(input, "qplugin.nn.InstanceNorm3d", 3, "C, D, H, W")
