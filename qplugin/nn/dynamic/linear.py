"""qplugin.nn.dynamic.Linear (≙ torch.ao.nn.quantized.dynamic.Linear) and the fused LinearReLU
(≙ torch.ao.nn.intrinsic.quantized.dynamic.LinearReLU): float input and output, the weight
quantized once (qint8, per tensor or per channel) or stored as float16, the input quantized per
call by torch.ops.qplugin.linear_dynamic (reduce_range=True, as torch.ao's module).

Changes with: csrc/ops/linear_dynamic.cpp (schemas), csrc/ops/cpu/linear_dynamic_kernel.cpp,
csrc/packed/linear_fp16_packed_params.h, qplugin/quantization/_dynamic.py (the mapping),
tests/dynamic/test_linear_dynamic_module.py.
The state-dict layout is torch.ao's (dynamic Linear version 4, packed params version 3), so
checkpoints load both ways.
"""
from typing import Optional

import torch

from qplugin.nn.modules.linear import LinearPackedParams as _StaticLinearPackedParams
from qplugin.nn.modules.linear import (_PackedLinear, _PackedParamsBase,
                                        _hide_packed_params_repr, _quantize_weight)
from qplugin.nn.modules.utils import _dynamic_weight_observer, _plain_op_call

__all__ = ["LinearPackedParams", "LinearPackedParamsFp16", "Linear", "LinearReLU"]

_DTYPES = (torch.qint8, torch.float16)


def _check_dtype(where, dtype):
    if dtype not in _DTYPES:
        raise ValueError(f"qplugin.nn.dynamic.{where}: expected dtype torch.qint8 or "
                         f"torch.float16, got {dtype}")


class LinearPackedParams(_StaticLinearPackedParams):
    """Holds a torch.classes.qplugin.LinearPackedParams (qint8 weight, fp32 bias): the static
    Linear's holder plus the dynamic apply."""

    _OWNER = "qplugin.nn.dynamic.Linear"

    @torch.jit.export
    def apply(self, x: torch.Tensor, reduce_range: bool, relu: bool) -> torch.Tensor:
        if torch.jit.is_scripting():
            if relu:
                return torch.ops.qplugin.linear_relu_dynamic(x, self._packed_params,
                                                             reduce_range)
            return torch.ops.qplugin.linear_dynamic(x, self._packed_params, reduce_range)
        # Eager: without torch's per-call exception on the packed params (_plain_op_call).
        op = (torch.ops.qplugin.linear_relu_dynamic if relu
              else torch.ops.qplugin.linear_dynamic).default
        return _plain_op_call(op, (x, self._packed_params, reduce_range))


class LinearPackedParamsFp16(_PackedParamsBase):
    """Holds a torch.classes.qplugin.LinearPackedParamsFp16 (float16 weight, fp32 bias)."""

    _DTYPE = torch.float16
    _OWNER = "qplugin.nn.dynamic.Linear"

    def __init__(self, dtype=torch.float16):
        super().__init__()
        self.set_weight_bias(torch.zeros([1, 1], dtype=torch.float), None)

    @torch.jit.export
    def set_weight_bias(self, weight: torch.Tensor, bias: Optional[torch.Tensor]) -> None:
        self._packed_params = torch.ops.qplugin.linear_prepack_fp16(weight, bias)

    @torch.jit.export
    def _weight_bias(self):
        return torch.ops.qplugin.linear_unpack_fp16(self._packed_params)

    @torch.jit.export
    def apply(self, x: torch.Tensor, reduce_range: bool, relu: bool) -> torch.Tensor:
        if torch.jit.is_scripting():
            if relu:
                return torch.ops.qplugin.linear_relu_dynamic_fp16(x, self._packed_params)
            return torch.ops.qplugin.linear_dynamic_fp16(x, self._packed_params)
        op = (torch.ops.qplugin.linear_relu_dynamic_fp16 if relu
              else torch.ops.qplugin.linear_dynamic_fp16).default
        return _plain_op_call(op, (x, self._packed_params))


def _holder(dtype):
    return LinearPackedParams() if dtype == torch.qint8 else LinearPackedParamsFp16()


class Linear(_PackedLinear, torch.nn.Module):
    r"""A dynamically quantized linear layer: float input and output.

    Mirrors :class:`torch.ao.nn.quantized.dynamic.Linear` (constructor, ``from_float`` with the
    default, per-channel and float16 dynamic qconfigs, ``from_reference``, ``weight()``,
    ``bias()``, state dict, repr) on ``torch.ops.qplugin.linear_dynamic`` (qint8 weight; the
    input is quantized per call to 7-bit quint8 from its min/max, as torch.ao's module does) or
    ``torch.ops.qplugin.linear_dynamic_fp16`` (float16 weight, fp32 products).
    """

    _version = 4
    _FLOAT_MODULE = (torch.nn.Linear, torch.nn.modules.linear.NonDynamicallyQuantizableLinear)
    _RELU = False

    def __init__(self, in_features, out_features, bias_=True, dtype=torch.qint8):
        super().__init__()
        _check_dtype(type(self).__name__, dtype)
        self.in_features = in_features
        self.out_features = out_features
        bias = torch.zeros(out_features, dtype=torch.float) if bias_ else None
        if dtype == torch.qint8:
            weight = torch._empty_affine_quantized([out_features, in_features], scale=1,
                                                   zero_point=0, dtype=torch.qint8)
        else:
            weight = torch.zeros([out_features, in_features], dtype=torch.float)
        self._packed_params = _holder(dtype)
        self._packed_params.set_weight_bias(weight, bias)
        # Kept for torch.ao's state-dict layout (the dynamic module has no output qparams).
        self.scale = 1.0
        self.zero_point = 0
        self.version = 4
        self.relu_fused = self._RELU  # an instance attribute: TorchScript reads it

    def _get_name(self):
        return "DynamicQuantizedLinearReLU" if self._RELU else "DynamicQuantizedLinear"

    def extra_repr(self):
        s = (f"in_features={self.in_features}, out_features={self.out_features}, "
             f"dtype={self._packed_params.dtype}")
        if self._packed_params.dtype == torch.qint8:
            s += f", qscheme={self.weight().qscheme()}"
        return s

    def __repr__(self):
        return _hide_packed_params_repr(self, _PackedParamsBase)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Checkpoints older than version 4 were calibrated without reduce_range (torch.ao); the
        # float16 holder ignores it.
        reduce_range = not (self.version is None or self.version < 4)
        return self._packed_params.apply(x, reduce_range, self.relu_fused).to(x.dtype)

    # State-dict layout (torch.ao.nn.quantized.dynamic.Linear's version 4):
    #   self
    #   |--- scale : Tensor (1.0)  |--- zero_point : Tensor (0)   (unused, torch.ao writes them)
    #   |--- _packed_params : Module
    #          |--- _packed_params : (weight, bias)   |--- dtype
    # Version < 4 (or None): the input is quantized without reduce_range, as torch.ao does.
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "scale"] = torch.tensor(self.scale)
        destination[prefix + "zero_point"] = torch.tensor(self.zero_point)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        self.version = local_metadata.get("version", None)
        for key in ("scale", "zero_point"):
            if prefix + key in state_dict:
                state_dict.pop(prefix + key)
            elif strict:
                missing_keys.append(prefix + key)
        self._upgrade_packed_params_keys(state_dict, prefix, self.version)
        # The checkpoint's dtype decides the holder (the child loads after this hook).
        dtype = state_dict.get(prefix + "_packed_params.dtype", torch.qint8)
        if dtype in _DTYPES and dtype != self._packed_params.dtype:
            self._packed_params = _holder(dtype)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs)

    @classmethod
    def _float_module_types(cls):
        from qplugin._ao import classes, torch_ao
        qatd = torch_ao("nn.qat.dynamic") if not cls._RELU else None
        extra = (qatd.Linear,) if qatd is not None else ()
        fused = classes("intrinsic.LinearReLU")
        return tuple(cls._FLOAT_MODULE) + tuple(extra) + tuple(fused)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        r"""Creates a dynamic Linear from a float ``nn.Linear`` (or fused ``LinearReLU``) with a
        ``qconfig`` (``default_dynamic_qconfig``, ``per_channel_dynamic_qconfig``,
        ``float16_dynamic_qconfig`` from qplugin.quantization or torch.ao.quantization; without
        a qconfig weight, the default dynamic qconfig as torch.ao)."""
        from torch.nn.utils.parametrize import type_before_parametrizations
        types = cls._float_module_types()
        if type_before_parametrizations(mod) not in types:
            names = ", ".join(sorted({t.__name__ for t in types}))
            raise TypeError(f"qplugin.nn.dynamic.{cls.__name__}.from_float: expected {names}, "
                            f"got {type(mod).__name__}")
        if not hasattr(mod, "qconfig"):
            raise ValueError(f"qplugin.nn.dynamic.{cls.__name__}.from_float: expected a module "
                             "with a qconfig (qplugin.quantization.quantize_dynamic sets it)")
        qconfig = mod.qconfig
        if isinstance(mod, torch.nn.Sequential):  # fused LinearReLU: the Linear inside
            mod = mod[0]
        weight_observer = _dynamic_weight_observer(qconfig)()
        dtype = weight_observer.dtype
        if dtype not in _DTYPES:
            raise ValueError(f"qplugin.nn.dynamic.{cls.__name__}.from_float: expected a weight "
                             f"observer of dtype torch.qint8 or torch.float16, got {dtype}")
        if dtype == torch.qint8:
            if not use_precomputed_fake_quant:
                weight_observer(mod.weight)
            qweight = _quantize_weight(mod.weight.float(), weight_observer)
        else:
            qweight = mod.weight.detach().float()
        qlinear = cls(mod.in_features, mod.out_features, dtype=dtype)
        qlinear.set_weight_bias(qweight, None if mod.bias is None else mod.bias.detach().float())
        return qlinear

    @classmethod
    def from_reference(cls, ref_qlinear):
        r"""Creates a dynamic Linear from a reference quantized linear
        (``torch.ao.nn.quantized.reference.Linear``): its quantized weight (or float16)."""
        dtype = getattr(ref_qlinear, "weight_dtype", torch.qint8)
        qlinear = cls(ref_qlinear.in_features, ref_qlinear.out_features, dtype=dtype)
        if dtype == torch.qint8:
            qweight = ref_qlinear.get_quantized_weight()
        else:
            qweight = ref_qlinear.weight.detach().float()
        bias = ref_qlinear.bias
        qlinear.set_weight_bias(qweight, None if bias is None else bias.detach().float())
        return qlinear


class LinearReLU(Linear):
    r"""Dynamic linear followed by ReLU, fused (≙ torch.ao.nn.intrinsic.quantized.dynamic
    .LinearReLU) on ``torch.ops.qplugin.linear_relu_dynamic`` / ``linear_relu_dynamic_fp16``."""

    _FLOAT_MODULE = ()
    _RELU = True
