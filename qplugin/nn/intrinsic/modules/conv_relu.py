"""qplugin.nn.intrinsic.ConvReLU1d/2d/3d (≙ torch.ao.nn.intrinsic.quantized.ConvReLU*d): conv with
the ReLU fused into the requantization (torch.ops.qplugin.conv*d_relu).
Changes with: qplugin/nn/modules/conv.py.
"""
import torch

from qplugin.nn.modules.conv import Conv1d, Conv2d, Conv3d, _conv_input
from qplugin.nn.modules.utils import _packed_op_call

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

    def forward(self, input):
        input = _conv_input("qplugin.nn.intrinsic.ConvReLU1d", input, 3, "",
                            list(self.padding), self.padding_mode)
        if torch.jit.is_scripting():
            return torch.ops.qplugin.conv1d_relu(input, self._packed_params, self.scale,
                                                 self.zero_point)
        return _packed_op_call(torch.ops.qplugin.conv1d_relu.default,
                               (input, self._packed_params, self.scale, self.zero_point))


class ConvReLU2d(_ConvReLUMixin, Conv2d):
    _NAME = "ConvReLU2d"

    def forward(self, input):
        input = _conv_input("qplugin.nn.intrinsic.ConvReLU2d", input, 4, "",
                            list(self.padding), self.padding_mode)
        if torch.jit.is_scripting():
            return torch.ops.qplugin.conv2d_relu(input, self._packed_params, self.scale,
                                                 self.zero_point)
        return _packed_op_call(torch.ops.qplugin.conv2d_relu.new,
                               (input, self._packed_params, self.scale, self.zero_point))


class ConvReLU3d(_ConvReLUMixin, Conv3d):
    _NAME = "ConvReLU3d"

    def forward(self, input):
        input = _conv_input("qplugin.nn.intrinsic.ConvReLU3d", input, 5, "",
                            list(self.padding), self.padding_mode)
        if torch.jit.is_scripting():
            return torch.ops.qplugin.conv3d_relu(input, self._packed_params, self.scale,
                                                 self.zero_point)
        return _packed_op_call(torch.ops.qplugin.conv3d_relu.new,
                               (input, self._packed_params, self.scale, self.zero_point))
