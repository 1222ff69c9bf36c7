"""Quantized activation modules (≙ torch.ao.nn.quantized.{ReLU6, Hardswish, ELU}) on
torch.ops.qplugin.{relu6, hardswish, elu}. Changes with: qplugin/nn/functional.py, qplugin/ops.py,
tests/nn/test_modules_foundation.py, tests/fixtures/make_fixtures.py.
"""
from typing import Any, Dict, List

import torch

from .utils import (
    _check_bool,
    _check_float_dtype,
    _check_float_module,
    _check_real,
    _check_scale,
    _check_zero_point,
    _observer_qparams,
    _QParamsMixin,
    _scale_buffer,
)

__all__ = ["ReLU6", "Hardswish", "ELU"]


class ReLU6(torch.nn.ReLU):
    r"""Applies :math:`\text{ReLU6}(x) = \min(\max(x_0, x), q(6))` element-wise, where
    :math:`x_0` is the input's zero point and :math:`q(6)` the quantized representation of 6.

    The output keeps the input's scale and zero point (no requantization), so it has no state.
    Same interface as :class:`torch.ao.nn.quantized.ReLU6`.

    Args:
        inplace: write the result into the input tensor. Default: ``False``

    Shape:
        - Input: :math:`(N, *)`, a quantized tensor (quint8, qint8 or qint32)
        - Output: :math:`(N, *)`, same shape and qparams as the input
    """

    _version = 1
    _FLOAT_MODULE = torch.nn.ReLU6

    def __init__(self, inplace: bool = False) -> None:
        _check_bool("qplugin.nn.ReLU6", inplace, "inplace")
        super().__init__(inplace)
        self.inplace = inplace

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return torch.ops.qplugin.relu6(input, self.inplace)

    def _get_name(self):
        return "QuantizedReLU6"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """A ReLU6 from an (observed) torch.nn.ReLU6; its observer is not needed: ReLU6 keeps the
        input's qparams. `use_precomputed_fake_quant` is accepted for torch.ao compatibility."""
        _check_float_module("qplugin.nn.ReLU6.from_float", mod, (cls._FLOAT_MODULE,))
        return cls(bool(mod.inplace))


class Hardswish(_QParamsMixin, torch.nn.Hardswish):
    r"""Quantized :class:`~torch.nn.Hardswish` (≙ :class:`torch.ao.nn.quantized.Hardswish`).

    Args:
        scale: quantization scale of the output tensor
        zero_point: quantization zero point of the output tensor
        device, dtype: factory arguments of the ``scale`` buffer (dtype: floating point only;
            ``zero_point`` is always int64, unlike PyTorch's, where dtype applies to it too)
    """

    _version = 1
    _FLOAT_MODULE = torch.nn.Hardswish
    scale: torch.Tensor
    zero_point: torch.Tensor

    def __init__(self, scale, zero_point, device=None, dtype=None) -> None:
        owner = "qplugin.nn.Hardswish"
        scale = _check_scale(owner, scale)
        zero_point = _check_zero_point(owner, zero_point)
        _check_float_dtype(owner, dtype)
        super().__init__()
        self.register_buffer("scale", _scale_buffer(owner, scale, device=device, dtype=dtype))
        self.register_buffer("zero_point", torch.tensor(zero_point, device=device,
                                                        dtype=torch.long))

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return torch.ops.qplugin.hardswish(input, float(self.scale), int(self.zero_point))

    def _get_name(self):
        return "QuantizedHardswish"

    # State-dict layout (same keys as torch.ao.nn.quantized.Hardswish):
    #
    #   version 1 (qplugin 0.1)
    #   |--- scale       : 0-d float32 tensor (the factory dtype)
    #   |--- zero_point  : 0-d int64 tensor
    #
    # Loading also accepts one-element scale/zero_point of any shape and dtype (PyTorch's
    # zero_point takes the factory dtype, so it may be floating), and a dict without them
    # (the constructor's values are kept).
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)

    def _load_from_state_dict(self, state_dict: Dict[str, Any], prefix: str, local_metadata,
                              strict: bool, missing_keys: List[str], unexpected_keys: List[str],
                              error_msgs: List[str]) -> None:
        self._load_qparams(state_dict, prefix, error_msgs)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """A Hardswish from an observed torch.nn.Hardswish (qplugin.quantization.prepare or torch.ao's output):
        the output qparams come from its activation_post_process."""
        owner = "qplugin.nn.Hardswish.from_float"
        _check_float_module(owner, mod, (cls._FLOAT_MODULE,))
        scale, zero_point = _observer_qparams(owner, mod)
        return cls(scale, zero_point)

    @classmethod
    def from_reference(cls, mod, scale, zero_point):
        _check_float_module("qplugin.nn.Hardswish.from_reference", mod, (cls._FLOAT_MODULE,))
        return cls(float(scale), zero_point)


class ELU(_QParamsMixin, torch.nn.ELU):
    r"""Quantized :class:`~torch.nn.ELU` (≙ :class:`torch.ao.nn.quantized.ELU`).

    Args:
        scale: quantization scale of the output tensor
        zero_point: quantization zero point of the output tensor
        alpha: the alpha constant. Default: 1.0

    Unlike PyTorch's (plain attributes, lost by ``state_dict``), ``scale`` and ``zero_point``
    are buffers; ``scale`` is float64 so the float given here is kept exactly, as PyTorch's
    attribute keeps it.
    """

    _version = 1
    _FLOAT_MODULE = torch.nn.ELU
    scale: torch.Tensor
    zero_point: torch.Tensor

    def __init__(self, scale, zero_point, alpha=1.0) -> None:
        owner = "qplugin.nn.ELU"
        scale = _check_scale(owner, scale)
        zero_point = _check_zero_point(owner, zero_point)
        alpha = _check_real(owner, alpha, "alpha")
        super().__init__(alpha)
        self.register_buffer("scale", _scale_buffer(owner, scale, dtype=torch.float64))
        self.register_buffer("zero_point", torch.tensor(zero_point, dtype=torch.long))

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return torch.ops.qplugin.elu(input, float(self.scale), int(self.zero_point), self.alpha)

    def _get_name(self):
        return "QuantizedELU"

    # State-dict layout:
    #
    #   version 1 (qplugin 0.1)
    #   |--- scale       : 0-d float64 tensor
    #   |--- zero_point  : 0-d int64 tensor
    #
    #   torch.ao.nn.quantized.ELU (metadata version 1 too): empty -- scale/zero_point are plain
    #   attributes there. Loading such a dict keeps the constructor's scale and zero_point.
    #   alpha is a constructor argument, not state (as in torch.nn.ELU).
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)

    def _load_from_state_dict(self, state_dict: Dict[str, Any], prefix: str, local_metadata,
                              strict: bool, missing_keys: List[str], unexpected_keys: List[str],
                              error_msgs: List[str]) -> None:
        self._load_qparams(state_dict, prefix, error_msgs)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """An ELU from an observed torch.nn.ELU (qplugin.quantization.prepare or torch.ao's output): the
        output qparams come from its activation_post_process, alpha from the module."""
        owner = "qplugin.nn.ELU.from_float"
        _check_float_module(owner, mod, (cls._FLOAT_MODULE,))
        scale, zero_point = _observer_qparams(owner, mod)
        return cls(scale, zero_point, mod.alpha)

    @classmethod
    def from_reference(cls, mod, scale, zero_point):
        _check_float_module("qplugin.nn.ELU.from_reference", mod, (cls._FLOAT_MODULE,))
        return cls(float(scale), zero_point, mod.alpha)
