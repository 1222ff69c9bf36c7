"""qplugin.nn.intrinsic.LinearReLU (≙ torch.ao.nn.intrinsic.quantized.LinearReLU): Linear with the
ReLU fused into the requantization (torch.ops.qplugin.linear_relu); LinearLeakyReLU and LinearTanh
(activation on the real-valued result: linear_leaky_relu / linear_tanh).
Changes with: qplugin/nn/modules/linear.py.
"""
import torch

from qplugin.nn.modules.linear import Linear, _linear_forward

__all__ = ["LinearLeakyReLU", "LinearReLU", "LinearTanh"]


class _FusedLinear(Linear):
    """What the fused linears share besides forward (written out per class: each calls its own
    op, so TorchScript compiles it): the constructor (``bias``, where qplugin.nn.Linear has
    ``bias_``), the repr name, the float classes from_float takes and from_reference through the
    reference Linear inside the fused module. Subclasses set _NAME, the fused class's name."""

    _FLOAT_MODULE = None  # unused: _float_module_types gives the fused classes
    _NAME = "LinearReLU"

    def __init__(self, in_features, out_features, bias=True, dtype=torch.qint8):
        super().__init__(in_features, out_features, bias, dtype)

    def _get_name(self):
        return "Quantized" + self._NAME

    @classmethod
    def _float_module_types(cls):
        # LinearReLU: qplugin's float class, and torch.ao's when importable (qplugin/_ao.py);
        # LinearLeakyReLU / LinearTanh are torch.ao-only patterns (qplugin has no float class):
        # without torch.ao, from_float accepts nothing and raises TypeError naming no class.
        # Looked up at from_float time (qplugin.quantization imports qplugin.nn).
        from qplugin._ao import classes, torch_ao
        if cls._NAME == "LinearReLU":
            return classes("intrinsic.LinearReLU")
        nni = torch_ao("nn.intrinsic")
        return () if nni is None else (getattr(nni, cls._NAME),)

    @classmethod
    def from_reference(cls, ref_mod, output_scale, output_zero_point):
        """From a reference fused module (``ref[0]`` is the reference quantized Linear)."""
        return super().from_reference(ref_mod[0], output_scale, output_zero_point)


class LinearReLU(_FusedLinear):
    r"""A Linear fused with ReLU: quint8 in and out, output clamped below at its zero point.

    Same interface as :class:`qplugin.nn.Linear`; ``from_float`` takes a (prepared) fused
    ``torch.ao.nn.intrinsic.LinearReLU`` or its QAT form.
    """

    _NAME = "LinearReLU"

    forward = _linear_forward("linear_relu", "qplugin.nn.intrinsic.LinearReLU")


class LinearLeakyReLU(_FusedLinear):
    r"""A Linear fused with LeakyReLU (≙ torch.ao.nn.intrinsic.quantized.LinearLeakyReLU, which
    runs on PyTorch's onednn engine only): ``y = quant(leaky_relu(x @ W^T + b, negative_slope))``
    on the real-valued result (torch.ops.qplugin.linear_leaky_relu).

    Same interface as :class:`qplugin.nn.Linear` plus ``negative_slope`` (a plain attribute, as
    in PyTorch: not part of the state dict); ``from_float`` takes a prepared
    ``torch.ao.nn.intrinsic.LinearLeakyReLU``.
    """

    _NAME = "LinearLeakyReLU"

    def __init__(self, in_features, out_features, negative_slope, bias=True, dtype=torch.qint8):
        super().__init__(in_features, out_features, bias, dtype)
        self.negative_slope = float(negative_slope)

    forward = _linear_forward("linear_leaky_relu", "qplugin.nn.intrinsic.LinearLeakyReLU",
                              extra=("self.negative_slope",))

    def extra_repr(self):
        return super().extra_repr() + f", negative_slope={self.negative_slope}"

    @classmethod
    def _new_from_float(cls, fused, in_features, out_features):
        return cls(in_features, out_features, fused[1].negative_slope, dtype=torch.qint8)

    @classmethod
    def from_reference(cls, ref_mod, output_scale, output_zero_point):
        """From a reference fused module (``ref[0]`` the reference quantized Linear, ``ref[1]``
        the LeakyReLU)."""
        linear = ref_mod[0]
        q = cls(linear.in_features, linear.out_features, ref_mod[1].negative_slope)
        qweight = linear.get_quantized_weight()
        q.set_weight_bias(qweight, None if linear.bias is None else linear.bias.detach().float())
        q.scale = float(output_scale)
        q.zero_point = int(output_zero_point)
        return q


class LinearTanh(_FusedLinear):
    r"""A Linear fused with Tanh (≙ torch.ao.nn.intrinsic.quantized.LinearTanh, onednn-only in
    PyTorch): ``y = quant(tanh(x @ W^T + b))`` on the real-valued result
    (torch.ops.qplugin.linear_tanh).

    Same interface as :class:`qplugin.nn.Linear`; ``from_float`` takes a prepared
    ``torch.ao.nn.intrinsic.LinearTanh``.
    """

    _NAME = "LinearTanh"

    forward = _linear_forward("linear_tanh", "qplugin.nn.intrinsic.LinearTanh")
