"""Quantized activation modules beyond ReLU6/Hardswish/ELU: LeakyReLU, Sigmoid, Softmax, Dropout
(≙ torch.ao.nn.quantized) and the extensions PyTorch lacks for quantized tensors: SiLU, GELU,
Tanh, Mish, Softplus. Ops: csrc/ops/activation_ext.cpp. Output qparams are buffers (they survive
state_dict round trips, unlike PyTorch's Sigmoid/Softmax attributes); every module is
TorchScript-able. Changes with: qplugin/nn/_functional_elementwise.py, qplugin/quantization
(float -> qplugin mapping), tests/elementwise/test_activation_modules.py.
"""
from typing import Any, Dict, List, Optional

import torch

from .utils import (
    _check_bool,
    _check_float_module,
    _check_real,
    _check_scale,
    _check_zero_point,
    _observer_qparams,
    _QParamsMixin,
    _scale_buffer,
)

__all__ = ["LeakyReLU", "Sigmoid", "Softmax", "Dropout", "SiLU", "GELU", "Tanh", "Mish",
           "Softplus"]


class _OutputQParams(_QParamsMixin):
    """Buffers `scale` (float64: the float given is kept exactly) and `zero_point` (int64), the
    output qparams; versioned state-dict loading through _QParamsMixin."""

    _version = 1
    scale: torch.Tensor
    zero_point: torch.Tensor

    def _init_qparams(self, owner: str, scale: Any, zero_point: Any) -> None:
        scale = _check_scale(owner, scale)
        zero_point = _check_zero_point(owner, zero_point)
        self.register_buffer("scale", _scale_buffer(owner, scale, dtype=torch.float64))
        self.register_buffer("zero_point", torch.tensor(zero_point, dtype=torch.long))

    def _qparams_repr(self) -> str:
        return f"scale={float(self.scale)}, zero_point={int(self.zero_point)}"

    # State-dict layout (every module of this file):
    #
    #   version 1 (qplugin 0.1)
    #   |--- scale       : 0-d float64 tensor
    #   |--- zero_point  : 0-d int64 tensor
    #
    #   PyTorch's LeakyReLU writes the same keys (float32 scale): loadable. PyTorch's Sigmoid and
    #   Softmax keep their qparams as attributes (empty state dict): loading such a dict keeps the
    #   constructor's values. Constructor options (negative_slope, dim, approximate, ...) are not
    #   state, as in torch.nn.
    def _load_from_state_dict(self, state_dict: Dict[str, Any], prefix: str, local_metadata,
                              strict: bool, missing_keys: List[str], unexpected_keys: List[str],
                              error_msgs: List[str]) -> None:
        self._load_qparams(state_dict, prefix, error_msgs)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    @classmethod
    def _observed(cls, mod):
        owner = f"qplugin.nn.{cls.__name__}.from_float"
        _check_float_module(owner, mod, (cls._FLOAT_MODULE,))
        return _observer_qparams(owner, mod)


class LeakyReLU(_OutputQParams, torch.nn.LeakyReLU):
    r"""Quantized :class:`~torch.nn.LeakyReLU` (≙ :class:`torch.ao.nn.quantized.LeakyReLU`).

    Args:
        scale, zero_point: output qparams
        negative_slope: slope of the negative part. Default: 1e-2
        inplace: accepted for compatibility; as PyTorch's, a new tensor is returned when the
            output qparams differ from the input's. Default: ``False``
        device, dtype: accepted for compatibility (the buffers are float64/int64 on the CPU)
    """

    _FLOAT_MODULE = torch.nn.LeakyReLU

    def __init__(self, scale: float, zero_point: int, negative_slope: float = 1e-2,
                 inplace: bool = False, device=None, dtype=None) -> None:
        owner = "qplugin.nn.LeakyReLU"
        negative_slope = _check_real(owner, negative_slope, "negative_slope")
        _check_bool(owner, inplace, "inplace")
        super().__init__(negative_slope, inplace)
        self._init_qparams(owner, scale, zero_point)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return torch.ops.qplugin.leaky_relu(input, self.negative_slope, self.inplace,
                                            float(self.scale), int(self.zero_point))

    def _get_name(self):
        return "QuantizedLeakyReLU"

    def extra_repr(self):
        return f"{self._qparams_repr()}, negative_slope={self.negative_slope}" + (
            ", inplace=True" if self.inplace else "")

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        scale, zero_point = cls._observed(mod)
        return cls(scale, zero_point, mod.negative_slope, mod.inplace)

    @classmethod
    def from_reference(cls, mod, scale, zero_point):
        return cls(float(scale), zero_point, mod.negative_slope, mod.inplace)


class Sigmoid(_OutputQParams, torch.nn.Sigmoid):
    r"""Quantized :class:`~torch.nn.Sigmoid` (≙ :class:`torch.ao.nn.quantized.Sigmoid`, same
    constructor: ``Sigmoid(output_scale, output_zero_point)``; the values are the buffers
    ``scale``/``zero_point``, also readable as ``output_scale``/``output_zero_point``)."""

    _FLOAT_MODULE = torch.nn.Sigmoid
    __jit_unused_properties__ = ["output_scale", "output_zero_point"]

    def __init__(self, output_scale: float, output_zero_point: int) -> None:
        super().__init__()
        self._init_qparams("qplugin.nn.Sigmoid", output_scale, output_zero_point)

    @property
    def output_scale(self) -> float:
        return float(self.scale)

    @property
    def output_zero_point(self) -> int:
        return int(self.zero_point)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return torch.ops.qplugin.sigmoid(input, float(self.scale), int(self.zero_point))

    def _get_name(self):
        return "Sigmoid"

    def extra_repr(self):
        return self._qparams_repr()

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """From an observed torch.nn.Sigmoid (prepare attaches PyTorch's fixed [0, 1] qparams:
        scale 1/256, zero point 0)."""
        scale, zero_point = cls._observed(mod)
        return cls(scale, zero_point)


class Softmax(_OutputQParams, torch.nn.Softmax):
    r"""Quantized :class:`~torch.nn.Softmax` (≙ :class:`torch.ao.nn.quantized.Softmax`).

    Args:
        dim: the softmax dimension (None: PyTorch's legacy choice, with its warning)
        scale, zero_point: output qparams. Defaults: 1.0, 0
    """

    _FLOAT_MODULE = torch.nn.Softmax

    def __init__(self, dim: Optional[int] = None, scale: float = 1.0, zero_point: int = 0,
                 device=None, dtype=None) -> None:
        super().__init__(dim)
        self._init_qparams("qplugin.nn.Softmax", scale, zero_point)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        dim = self.dim
        if dim is None:
            stacklevel = 3
            dim = torch.nn.functional._get_softmax_dim("softmax", input.dim(), stacklevel)
        return torch.ops.qplugin.softmax(input, dim, float(self.scale), int(self.zero_point))

    def _get_name(self):
        return "QuantizedSoftmax"

    def extra_repr(self):
        return f"dim={self.dim}, {self._qparams_repr()}"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        scale, zero_point = cls._observed(mod)
        return cls(mod.dim, scale, zero_point)


class Dropout(torch.nn.Dropout):
    r"""Quantized :class:`~torch.nn.Dropout` (≙ :class:`torch.ao.nn.quantized.Dropout`): the
    identity (inference), keeping the input's qparams."""

    _version = 1
    _FLOAT_MODULE = torch.nn.Dropout

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return input

    def _get_name(self):
        return "QuantizedDropout"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        _check_float_module("qplugin.nn.Dropout.from_float", mod, (cls._FLOAT_MODULE,))
        return cls(mod.p, mod.inplace)

    @classmethod
    def from_reference(cls, mod, scale, zero_point):
        return cls(mod.p, mod.inplace)


class SiLU(_OutputQParams, torch.nn.SiLU):
    r"""Quantized :class:`~torch.nn.SiLU` ``x * sigmoid(x)``, exact (256-entry table per call).
    An extension: PyTorch has no quantized SiLU (its issue 73507, EfficientNet).

    Args:
        scale, zero_point: output qparams
        inplace: accepted for compatibility with torch.nn.SiLU (output qparams differ: a new
            tensor is returned). Default: ``False``
    """

    _FLOAT_MODULE = torch.nn.SiLU

    def __init__(self, scale: float, zero_point: int, inplace: bool = False) -> None:
        super().__init__(inplace)
        self._init_qparams("qplugin.nn.SiLU", scale, zero_point)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return torch.ops.qplugin.silu(input, float(self.scale), int(self.zero_point))

    def _get_name(self):
        return "QuantizedSiLU"

    def extra_repr(self):
        return self._qparams_repr()

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        scale, zero_point = cls._observed(mod)
        return cls(scale, zero_point, mod.inplace)


class GELU(_OutputQParams, torch.nn.GELU):
    r"""Quantized :class:`~torch.nn.GELU` (``approximate`` ``'none'`` or ``'tanh'``), exact. An
    extension: PyTorch's quantized gelu exists only as an aten op keeping the input's qparams.

    Args:
        scale, zero_point: output qparams
        approximate: ``'none'`` (erf) or ``'tanh'``. Default: ``'none'``
    """

    _FLOAT_MODULE = torch.nn.GELU

    def __init__(self, scale: float, zero_point: int, approximate: str = "none") -> None:
        if approximate not in ("none", "tanh"):
            raise ValueError("qplugin.nn.GELU: expected approximate 'none' or 'tanh', got"
                             f" {approximate!r}")
        super().__init__(approximate)
        self._init_qparams("qplugin.nn.GELU", scale, zero_point)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return torch.ops.qplugin.gelu(input, float(self.scale), int(self.zero_point),
                                      self.approximate)

    def _get_name(self):
        return "QuantizedGELU"

    def extra_repr(self):
        return f"{self._qparams_repr()}, approximate={self.approximate!r}"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        scale, zero_point = cls._observed(mod)
        return cls(scale, zero_point, mod.approximate)


class Tanh(_OutputQParams, torch.nn.Tanh):
    r"""Quantized :class:`~torch.nn.Tanh`, exact. An extension (PyTorch only has torch.tanh on
    quantized tensors, with fixed qparams 2/256; prepare attaches those as the observer)."""

    _FLOAT_MODULE = torch.nn.Tanh

    def __init__(self, scale: float, zero_point: int) -> None:
        super().__init__()
        self._init_qparams("qplugin.nn.Tanh", scale, zero_point)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return torch.ops.qplugin.tanh(input, float(self.scale), int(self.zero_point))

    def _get_name(self):
        return "QuantizedTanh"

    def extra_repr(self):
        return self._qparams_repr()

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        scale, zero_point = cls._observed(mod)
        return cls(scale, zero_point)


class Mish(_OutputQParams, torch.nn.Mish):
    r"""Quantized :class:`~torch.nn.Mish` ``x * tanh(softplus(x))``, exact. An extension."""

    _FLOAT_MODULE = torch.nn.Mish

    def __init__(self, scale: float, zero_point: int, inplace: bool = False) -> None:
        super().__init__(inplace)
        self._init_qparams("qplugin.nn.Mish", scale, zero_point)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return torch.ops.qplugin.mish(input, float(self.scale), int(self.zero_point))

    def _get_name(self):
        return "QuantizedMish"

    def extra_repr(self):
        return self._qparams_repr()

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        scale, zero_point = cls._observed(mod)
        return cls(scale, zero_point, mod.inplace)


class Softplus(_OutputQParams, torch.nn.Softplus):
    r"""Quantized :class:`~torch.nn.Softplus` ``log(1 + exp(beta x)) / beta`` (linear where
    ``beta x > threshold``), exact. An extension.

    Args:
        scale, zero_point: output qparams
        beta: Default: 1.0
        threshold: Default: 20.0
    """

    _FLOAT_MODULE = torch.nn.Softplus

    def __init__(self, scale: float, zero_point: int, beta: float = 1.0,
                 threshold: float = 20.0) -> None:
        owner = "qplugin.nn.Softplus"
        beta = _check_real(owner, beta, "beta")
        threshold = _check_real(owner, threshold, "threshold")
        if beta == 0.0:
            raise ValueError(f"{owner}: expected a nonzero beta, got 0.0")
        super().__init__(beta, threshold)
        self._init_qparams(owner, scale, zero_point)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return torch.ops.qplugin.softplus(input, float(self.scale), int(self.zero_point),
                                          self.beta, self.threshold)

    def _get_name(self):
        return "QuantizedSoftplus"

    def extra_repr(self):
        return f"{self._qparams_repr()}, beta={self.beta}, threshold={self.threshold}"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        scale, zero_point = cls._observed(mod)
        return cls(scale, zero_point, mod.beta, mod.threshold)
