"""qplugin.nn.Linear (≙ torch.ao.nn.quantized.Linear) on torch.ops.qplugin.linear.

Changes with: csrc/packed/linear_packed_params.{h,cpp} (the packed object and its pickled state),
qplugin/nn/intrinsic/linear_relu.py (the fused form), tests/linear/test_linear_module.py.
The state-dict layout is the same as torch.ao.nn.quantized.Linear's (version 3), so checkpoints
load in both directions; only the packed object inside differs (qplugin's, repacked on load).
"""
from typing import Tuple

import torch

from qplugin.nn.modules.utils import (_check_zero_point, _observe_qint8_weight,
                                      _observed_output, _packed_forward, _PackedHolder)

__all__ = ["LinearPackedParams", "Linear"]


def _linear_forward(op: str, where: str, extra: Tuple[str, ...] = ()):
    """forward(self, x) of Linear and its fused forms: torch.ops.qplugin.<op> on the packed
    weight and the output qparams (utils._packed_forward)."""
    return _packed_forward(op, "default", weight="self._packed_params._packed_params",
                           inputs=("x",), annotated=True, extra=extra, where=where)


def _quantize_weight(float_wt, observer):
    """Quantizes a float weight with the qparams of its (called) observer, as torch.ao does.

    Weight observers with a narrower [quant_min, quant_max] than qint8 get the weight clamped to
    that range (torch.ao's _clamp_weights).
    """
    wt_scale, wt_zp = observer.calculate_qparams()
    qscheme = observer.qscheme
    if qscheme in (torch.per_tensor_symmetric, torch.per_tensor_affine):
        qweight = torch.quantize_per_tensor(float_wt, float(wt_scale), int(wt_zp), torch.qint8)
    elif qscheme in (torch.per_channel_symmetric, torch.per_channel_affine):
        if observer.ch_axis != 0:
            raise ValueError(
                "qplugin.nn.Linear: expected a per-channel weight observer along axis 0 (output "
                f"features), got ch_axis={observer.ch_axis}")
        qweight = torch.quantize_per_channel(float_wt, wt_scale.to(torch.double),
                                             wt_zp.to(torch.int64), 0, torch.qint8)
    else:
        raise ValueError(
            "qplugin.nn.Linear: expected a weight observer with qscheme per_tensor_affine, "
            "per_tensor_symmetric, per_channel_affine or per_channel_symmetric, got "
            f"{qscheme}")
    qmin = getattr(observer, "quant_min", None)
    qmax = getattr(observer, "quant_max", None)
    if qmin is not None and qmax is not None and (qmin > -128 or qmax < 127):
        # As torch.ao: clamp the integer values into the observer's narrower range.
        q = qweight.int_repr().clamp(qmin, qmax)
        if qweight.qscheme() in (torch.per_channel_affine, torch.per_channel_symmetric):
            qweight = torch._make_per_channel_quantized_tensor(
                q, qweight.q_per_channel_scales(), qweight.q_per_channel_zero_points(), 0)
        else:
            qweight = torch._make_per_tensor_quantized_tensor(q, qweight.q_scale(),
                                                              qweight.q_zero_point())
    return qweight


def _hide_packed_params_repr(module, params_cls):
    """nn.Module.__repr__ without the packed-params child (as torch.ao's quantized modules)."""
    extra_lines = module.extra_repr().split("\n") if module.extra_repr() else []
    child_lines = []
    for key, child in module._modules.items():
        if isinstance(child, params_cls):
            continue
        mod_str = repr(child).replace("\n", "\n  ")
        child_lines.append("(" + key + "): " + mod_str)
    lines = extra_lines + child_lines
    main_str = module._get_name() + "("
    if lines:
        if len(extra_lines) == 1 and not child_lines:
            main_str += extra_lines[0]
        else:
            main_str += "\n  " + "\n  ".join(lines) + "\n"
    return main_str + ")"


class _PackedParamsBase(_PackedHolder):
    """State-dict handling of the packed-weight holders (this static Linear's and the dynamic
    ones in qplugin.nn.dynamic: one Python class per packed type, so that TorchScript sees one op
    per class). Subclasses set _DTYPE, _OWNER (for messages), set_weight_bias and _weight_bias."""

    _version = 3
    _DTYPE = torch.qint8
    _OWNER = "qplugin.nn.Linear"

    def __init__(self):
        super().__init__()
        self.dtype = self._DTYPE

    def _unpacked(self):
        return self._weight_bias()

    # State-dict layout (the same as torch.ao.nn.quantized.modules.linear.LinearPackedParams'):
    #
    # Version 1 (torch.ao)            Version 2 (torch.ao)            Version 3
    #   self                            self                            self
    #   |--- weight : Tensor            |--- weight : Tensor            |--- _packed_params :
    #   |--- bias : Tensor              |--- bias : Tensor              |      (Tensor, Tensor?)
    #                                   |--- dtype : torch.dtype        |      = (weight, bias)
    #                                                                   |--- dtype : torch.dtype
    # (weight: qint8, or float32 for the float16 holder; written by
    # _PackedHolder._save_to_state_dict)
    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        version = local_metadata.get("version", None)
        if version is not None and version >= 2:
            dtype = state_dict.pop(prefix + "dtype")
            if dtype != self._DTYPE:
                raise ValueError(f"{self._OWNER}: expected a {self._DTYPE} checkpoint for this "
                                 f"module, got dtype {dtype}")
        self.dtype = self._DTYPE
        if version is None or version < 3:
            weight = state_dict.pop(prefix + "weight")
            bias = state_dict.pop(prefix + "bias")
        else:
            weight, bias = state_dict.pop(prefix + "_packed_params")
        self.set_weight_bias(weight, bias)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs)


class LinearPackedParams(_PackedParamsBase):
    """Holds a torch.classes.qplugin.LinearPackedParams (the packed qint8 weight and fp32 bias).

    Only qint8 weights here; the float16 dynamic linear is qplugin.nn.dynamic's.
    """

    def __init__(self, dtype=torch.qint8):
        if dtype != torch.qint8:
            raise ValueError(
                f"qplugin.nn.Linear: expected dtype torch.qint8, got {dtype} (float16 weights: "
                "qplugin.nn.dynamic.Linear)")
        super().__init__()
        wq = torch._empty_affine_quantized([1, 1], scale=1.0, zero_point=0, dtype=torch.qint8)
        self.set_weight_bias(wq, None)

    @torch.jit.export
    def set_weight_bias(self, weight: torch.Tensor, bias: torch.Tensor | None) -> None:
        self._packed_params = torch.ops.qplugin.linear_prepack(weight, bias)

    @torch.jit.export
    def _weight_bias(self):
        return torch.ops.qplugin.linear_unpack(self._packed_params)


class _PackedLinear:
    """What qplugin.nn.Linear and qplugin.nn.dynamic.Linear share around their `_packed_params`
    child: the accessors and the upgrade of the child's state-dict keys."""

    def _weight_bias(self):
        return self._packed_params._weight_bias()

    def weight(self):
        """The weight, unpacked: qint8 (bit-exact), or (dynamic float16) float32 holding the
        float16 values."""
        return self._weight_bias()[0]

    def bias(self):
        """The fp32 bias, or None."""
        return self._weight_bias()[1]

    def set_weight_bias(self, w: torch.Tensor, b: torch.Tensor | None) -> None:
        """Packs a new weight [out_features, in_features] (qint8; dynamic float16: float) and fp32
        bias [out_features]."""
        self._packed_params.set_weight_bias(w, b)

    def _upgrade_packed_params_keys(self, state_dict, prefix, version) -> None:
        if version is None or version == 1:
            # Version 1 kept weight and bias on the module itself.
            weight = state_dict.pop(prefix + "weight")
            bias = state_dict.pop(prefix + "bias")
            state_dict.update({prefix + "_packed_params.weight": weight,
                               prefix + "_packed_params.bias": bias})
        # The child _packed_params loads after this hook: take the feature counts from its keys.
        w = state_dict.get(prefix + "_packed_params.weight")
        packed = state_dict.get(prefix + "_packed_params._packed_params")
        if w is None and packed is not None:
            w = packed[0]
        if isinstance(w, torch.Tensor) and w.dim() == 2:
            self.out_features, self.in_features = int(w.shape[0]), int(w.shape[1])


class Linear(_PackedLinear, torch.nn.Module):
    r"""A quantized linear layer: quint8 input and output, qint8 weight, fp32 bias.

    Mirrors :class:`torch.ao.nn.quantized.Linear` (same constructor, attributes, ``from_float``,
    ``from_reference``, state dict) on ``torch.ops.qplugin.linear``. The weight may be quantized
    per tensor (any zero point) or per channel along the output features (affine or
    symmetric). ``in_features == 0`` gives the bias, requantized (the empty sum is 0).

    Attributes:
        scale: output scale (float); zero_point: output zero point (int).
    """

    _version = 3
    _FLOAT_MODULE = (torch.nn.Linear, torch.nn.modules.linear.NonDynamicallyQuantizableLinear)

    def __init__(self, in_features, out_features, bias_=True, dtype=torch.qint8):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        bias = torch.zeros(out_features, dtype=torch.float) if bias_ else None
        if dtype != torch.qint8:
            raise ValueError(
                f"qplugin.nn.Linear: expected dtype torch.qint8, got {dtype} (qplugin has no "
                "fp16 dynamic linear)")
        qweight = torch._empty_affine_quantized([out_features, in_features], scale=1,
                                                zero_point=0, dtype=torch.qint8)
        self._packed_params = LinearPackedParams(dtype)
        self._packed_params.set_weight_bias(qweight, bias)
        self.scale = 1.0
        self.zero_point = 0

    def _get_name(self):
        return "QuantizedLinear"

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"scale={self.scale}, zero_point={self.zero_point}, "
                f"qscheme={self.weight().qscheme()}")

    def __repr__(self):
        return _hide_packed_params_repr(self, LinearPackedParams)

    forward = _linear_forward("linear", "qplugin.nn.Linear")

    # State-dict layout (the same as torch.ao.nn.quantized.Linear's, so checkpoints load both
    # ways; the packed weights never leave the process: they are unpacked here and repacked
    # for the running CPU on load):
    #
    # Version 1 (torch.ao)       Version 2 (torch.ao)           Version 3
    #   self                       self                           self
    #   |--- scale : Tensor        |--- scale : Tensor            |--- scale : Tensor
    #   |--- zero_point : Tensor   |--- zero_point : Tensor       |--- zero_point : Tensor
    #   |--- weight : Tensor       |--- _packed_params : Module   |--- _packed_params : Module
    #   |--- bias : Tensor              |--- weight : Tensor           |--- _packed_params :
    #                                   |--- bias : Tensor             |      (weight, bias)
    #                                                                  |--- dtype
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        # float64 (torch.ao writes float32): the scale survives the round trip exactly; readers
        # of either convert with float().
        destination[prefix + "scale"] = torch.tensor(self.scale, dtype=torch.float64)
        destination[prefix + "zero_point"] = torch.tensor(self.zero_point)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        # A key missing from the dict is reported as missing (strict load_state_dict raises
        # its usual error naming it), not a KeyError; the current value is kept.
        if prefix + "scale" in state_dict:
            self.scale = float(state_dict.pop(prefix + "scale"))
        elif strict:
            missing_keys.append(prefix + "scale")
        if prefix + "zero_point" in state_dict:
            self.zero_point = int(state_dict.pop(prefix + "zero_point"))
        elif strict:
            missing_keys.append(prefix + "zero_point")
        self._upgrade_packed_params_keys(state_dict, prefix, local_metadata.get("version", None))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs)

    @classmethod
    def _float_module_types(cls):
        """The float classes from_float takes (without fake quant)."""
        return cls._FLOAT_MODULE if isinstance(cls._FLOAT_MODULE, tuple) else (cls._FLOAT_MODULE,)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        r"""Creates a qplugin Linear from an observed float module.

        Accepts what torch.ao.nn.quantized.Linear.from_float accepts: an observed
        ``nn.Linear`` (with ``qconfig`` and ``activation_post_process``), a fused
        ``torch.ao.nn.intrinsic.LinearReLU`` (into :class:`qplugin.nn.intrinsic.LinearReLU`),
        and QAT modules (``torch.ao.nn.qat.Linear``, ``torch.ao.nn.intrinsic.qat.LinearReLU``,
        ``LinearBn1d``, whose batch norm is folded).

        Args:
            mod (Module): the float module, prepared (and calibrated) by torch.ao.quantization.
            use_precomputed_fake_quant (bool): reuse the weight observer's recorded qparams
                instead of observing the weight again.
        """
        from torch.nn.utils.parametrize import type_before_parametrizations
        from qplugin._ao import classes, torch_ao

        fused = mod
        if hasattr(mod, "weight_fake_quant"):
            if type_before_parametrizations(mod) in classes("intrinsic.qat.LinearBn1d"):
                from torch.nn.utils.fusion import fuse_linear_bn_weights
                mod.weight, mod.bias = fuse_linear_bn_weights(
                    mod.weight, mod.bias, mod.bn.running_mean, mod.bn.running_var, mod.bn.eps,
                    mod.bn.weight, mod.bn.bias)
            weight_post_process = mod.weight_fake_quant
            activation_post_process = mod.activation_post_process
        else:
            float_mods = cls._float_module_types()
            if type_before_parametrizations(mod) not in float_mods:
                names = ", ".join(m.__name__ for m in float_mods)
                raise TypeError(f"qplugin.nn.{cls.__name__}.from_float: expected {names}, got "
                                f"{type(mod).__name__}")
            activation_post_process = _observed_output(f"qplugin.nn.{cls.__name__}.from_float",
                                                       mod)
            nni = torch_ao("nn.intrinsic")  # LinearLeakyReLU / LinearTanh: torch.ao-only
            fused_types = classes("intrinsic.LinearReLU") + (
                (nni.LinearLeakyReLU, nni.LinearTanh) if nni is not None else ())
            if type_before_parametrizations(mod) in fused_types:
                mod = mod[0]
            weight_post_process = mod.qconfig.weight()
        _observe_qint8_weight(f"qplugin.nn.{cls.__name__}.from_float", weight_post_process,
                              mod.weight, use_precomputed_fake_quant)
        act_scale, act_zp = activation_post_process.calculate_qparams()
        qweight = _quantize_weight(mod.weight.float(), weight_post_process)
        qlinear = cls._new_from_float(fused, mod.in_features, mod.out_features)
        qlinear.set_weight_bias(qweight, None if mod.bias is None else mod.bias.detach().float())
        qlinear.scale = float(act_scale)
        qlinear.zero_point = int(act_zp)
        return qlinear

    @classmethod
    def _new_from_float(cls, fused, in_features, out_features):
        """The empty module from_float fills (fused: the float module as given; subclasses
        with extra constructor arguments, e.g. LinearLeakyReLU's negative_slope, read them)."""
        return cls(in_features, out_features, dtype=torch.qint8)

    @classmethod
    def from_reference(cls, ref_qlinear, output_scale, output_zero_point):
        r"""Creates a qplugin Linear from a reference quantized linear
        (``torch.ao.nn.quantized.reference.Linear``) and the output qparams."""
        qlinear = cls(ref_qlinear.in_features, ref_qlinear.out_features)
        qweight = ref_qlinear.get_quantized_weight()
        bias = ref_qlinear.bias
        qlinear.set_weight_bias(qweight, None if bias is None else bias.detach().float())
        qlinear.scale = float(output_scale)
        qlinear.zero_point = _check_zero_point(f"qplugin.nn.{cls.__name__}.from_reference",
                                               output_zero_point, "output_zero_point")
        return qlinear
