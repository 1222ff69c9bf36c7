"""qplugin.nn.PReLU (≙ torch.ao.nn.quantized.PReLU) on torch.ops.qplugin.prelu.
Changes with: csrc/ops/quantized_cpu/activation_kernel.cpp (the op), tests/activation/test_prelu.py.
"""
import warnings
from typing import Any, Dict, List

import torch

from .utils import _check_float_module, _check_scale, _check_zero_point, _observer_qparams
from .utils import _QParamsMixin, _scale_buffer

__all__ = ["PReLU"]


class PReLU(_QParamsMixin, torch.nn.Module):
    r"""Quantized :class:`~torch.nn.PReLU` (≙ :class:`torch.ao.nn.quantized.PReLU`):
    ``y = quant(x if x >= 0 else weight[c] * x)``, ``c`` the channel (dim 1).

    Args:
        output_scale: quantization scale of the output tensor
        output_zero_point: quantization zero point of the output tensor
        num_parameters: number of weights: 1, or the number of input channels. Default: 1

    ``weight`` is a quantized tensor of ``num_parameters`` values (quint8 as PyTorch's; qint8
    also accepted), set with :meth:`set_weight`. Unlike PyTorch's (plain attributes, lost by
    ``state_dict``), ``scale``, ``zero_point`` and ``weight`` are buffers, so a state dict round
    trip keeps them; a PyTorch-style state dict without them keeps the current values.
    """

    _version = 1
    _FLOAT_MODULE = torch.nn.PReLU
    scale: torch.Tensor
    zero_point: torch.Tensor
    weight: torch.Tensor

    def __init__(self, output_scale: float, output_zero_point: int,
                 num_parameters: int = 1) -> None:
        owner = "qplugin.nn.PReLU"
        output_scale = _check_scale(owner, output_scale, "output_scale")
        output_zero_point = _check_zero_point(owner, output_zero_point, "output_zero_point")
        if isinstance(num_parameters, bool) or not isinstance(num_parameters, int) or \
                num_parameters < 1:
            raise ValueError(f"{owner}: expected num_parameters to be a positive int, got "
                             f"{num_parameters!r}")
        super().__init__()
        self.num_parameters = num_parameters
        self.register_buffer("scale", _scale_buffer(owner, output_scale, dtype=torch.float64))
        self.register_buffer("zero_point", torch.tensor(output_zero_point, dtype=torch.long))
        # As PyTorch: a random weight quantized with scale 1.0, zero point 0 until set_weight.
        w = torch.randn(num_parameters, dtype=torch.float)
        self.register_buffer("weight", torch.quantize_per_tensor(w, scale=1.0, zero_point=0,
                                                                 dtype=torch.quint8))

    def set_weight(self, w: torch.Tensor) -> None:
        """Sets the quantized weight (quint8 or qint8, per tensor, ``num_parameters`` values)."""
        if not isinstance(w, torch.Tensor) or not w.is_quantized or \
                w.dtype not in (torch.quint8, torch.qint8):
            raise TypeError("qplugin.nn.PReLU.set_weight: expected a quantized tensor of dtype "
                            f"torch.quint8 or torch.qint8, got {getattr(w, 'dtype', type(w))}")
        if w.numel() != self.num_parameters:
            raise ValueError(f"qplugin.nn.PReLU.set_weight: expected {self.num_parameters} "
                             f"values (num_parameters), got shape {tuple(w.shape)}")
        self.weight = w

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return torch.ops.qplugin.prelu(input, self.weight, float(self.scale),
                                       int(self.zero_point))

    def _get_name(self):
        return "QuantizedPReLU"

    def extra_repr(self):
        return (f"num_parameters={self.num_parameters}, scale={float(self.scale)}, "
                f"zero_point={int(self.zero_point)}")

    # State-dict layout:
    #
    #   version 1 (qplugin)
    #   |--- scale       : 0-d float64 tensor
    #   |--- zero_point  : 0-d int64 tensor
    #   |--- weight      : quantized tensor [num_parameters] (quint8 or qint8)
    #
    #   torch.ao.nn.quantized.PReLU: empty (plain attributes); loading it keeps current values.
    def _load_from_state_dict(self, state_dict: Dict[str, Any], prefix: str, local_metadata,
                              strict: bool, missing_keys: List[str], unexpected_keys: List[str],
                              error_msgs: List[str]) -> None:
        # scale/zero_point: _QParamsMixin._load_from_state_dict (reached through super() below)
        key = prefix + "weight"
        if key in state_dict:
            w = state_dict.pop(key)
            try:
                if isinstance(w, torch.Tensor) and w.is_quantized:
                    self.num_parameters = int(w.numel())
                self.set_weight(w)
            except (TypeError, ValueError) as e:
                error_msgs.append(f"While loading {key!r}: {e}")
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs)

    @staticmethod
    def _quantize_weight(mod):
        float_wt = mod.weight.detach().float()
        observer = mod.qconfig.weight()
        observer(float_wt)
        dtype = observer.dtype
        if dtype not in (torch.quint8, torch.qint8):
            warnings.warn("qplugin.nn.PReLU: the weight observer should have dtype quint8 or "
                          f"qint8, got {dtype}; quantizing to quint8", stacklevel=3)
            dtype = torch.quint8
        wt_scale, wt_zp = observer.calculate_qparams()
        # PyTorch always quantizes to quint8 (with a qint8 observer, e.g. the default x86 qconfig,
        # its zero point 0 clamps every negative slope to 0); qplugin keeps the observer's dtype.
        return torch.quantize_per_tensor(float_wt, float(wt_scale), int(wt_zp), dtype)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """A PReLU from an observed torch.nn.PReLU: output qparams from its
        activation_post_process, the weight quantized with its qconfig's weight observer."""
        owner = "qplugin.nn.PReLU.from_float"
        _check_float_module(owner, mod, (cls._FLOAT_MODULE,))
        if getattr(mod, "qconfig", None) is None:
            raise ValueError(f"{owner}: expected a module with a qconfig (run "
                             "qplugin.quantization.prepare first)")
        scale, zero_point = _observer_qparams(owner, mod)
        q = cls(float(scale), int(zero_point), mod.num_parameters)
        q.set_weight(cls._quantize_weight(mod))
        return q

    @classmethod
    def from_reference(cls, mod, scale, zero_point):
        owner = "qplugin.nn.PReLU.from_reference"
        _check_float_module(owner, mod, (cls._FLOAT_MODULE,))
        q = cls(float(scale), int(zero_point), mod.num_parameters)
        q.set_weight(cls._quantize_weight(mod))
        return q
