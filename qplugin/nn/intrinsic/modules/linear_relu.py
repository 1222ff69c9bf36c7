"""qplugin.nn.intrinsic.LinearReLU (≙ torch.ao.nn.intrinsic.quantized.LinearReLU): Linear with the
ReLU fused into the requantization (torch.ops.qplugin.linear_relu).
Changes with: qplugin/nn/modules/linear.py.
"""
import torch

from qplugin.nn.modules.linear import Linear

__all__ = ["LinearReLU"]


class LinearReLU(Linear):
    r"""A Linear fused with ReLU: quint8 in and out, output clamped below at its zero point.

    Same interface as :class:`qplugin.nn.Linear`; ``from_float`` takes a (prepared) fused
    ``torch.ao.nn.intrinsic.LinearReLU`` or its QAT form.
    """

    _FLOAT_MODULE = None  # set below: torch.ao.nn.intrinsic.LinearReLU

    def __init__(self, in_features, out_features, bias=True, dtype=torch.qint8):
        super().__init__(in_features, out_features, bias, dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.qplugin.linear_relu(x, self._packed_params._packed_params, self.scale,
                                             self.zero_point)

    def _get_name(self):
        return "QuantizedLinearReLU"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        return super().from_float(mod, use_precomputed_fake_quant)

    @classmethod
    def from_reference(cls, ref_linear_relu, output_scale, output_zero_point):
        """From a reference fused module (``ref[0]`` is the reference quantized Linear)."""
        return super().from_reference(ref_linear_relu[0], output_scale, output_zero_point)


def _float_module():
    import torch.ao.nn.intrinsic as nni
    return nni.LinearReLU


LinearReLU._FLOAT_MODULE = _float_module()
