"""qplugin.nn.intrinsic.ConvReLU1d/2d/3d (≙ torch.ao.nn.intrinsic.quantized.ConvReLU*d): conv with
the ReLU fused into the requantization (torch.ops.qplugin.conv*d_relu).
Changes with: qplugin/nn/modules/conv.py.
"""
import torch

from qplugin.nn.modules.conv import Conv1d, Conv2d, Conv3d, _conv_forward

__all__ = ["ConvReLU1d", "ConvReLU2d", "ConvReLU3d"]


class _ConvReLUMixin:
    """What the three fused classes share besides forward (which stays per dimension: each
    calls its own op, so TorchScript compiles it)."""

    @classmethod
    def _from_float_types(cls, t):
        return t["relu"]

    @classmethod
    def from_reference(cls, ref_qconv, output_scale, output_zero_point):
        return super().from_reference(ref_qconv[0], output_scale, output_zero_point)


class ConvReLU1d(_ConvReLUMixin, Conv1d):
    _NAME = "ConvReLU1d"

    forward = _conv_forward("conv1d_relu", "default", "qplugin.nn.intrinsic.ConvReLU1d", 3, "")


class ConvReLU2d(_ConvReLUMixin, Conv2d):
    _NAME = "ConvReLU2d"

    forward = _conv_forward("conv2d_relu", "new", "qplugin.nn.intrinsic.ConvReLU2d", 4, "")


class ConvReLU3d(_ConvReLUMixin, Conv3d):
    _NAME = "ConvReLU3d"

    forward = _conv_forward("conv3d_relu", "new", "qplugin.nn.intrinsic.ConvReLU3d", 5, "")
