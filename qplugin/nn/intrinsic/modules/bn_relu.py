"""Fused BatchNorm + ReLU (≙ torch.ao.nn.intrinsic.quantized.BNReLU2d/3d) on
torch.ops.qplugin.batch_norm{2,3}d_relu. State, from_float, from_reference and state-dict layout
are those of qplugin.nn.BatchNorm2d/3d (qplugin/nn/modules/batchnorm.py).
"""
import torch

from ...modules.batchnorm import BatchNorm2d, BatchNorm3d

__all__ = ["BNReLU2d", "BNReLU3d"]


class BNReLU2d(BatchNorm2d):
    r"""Fused BatchNorm2d and ReLU: the ReLU is applied in the requantization (outputs below the
    zero point clamp to it). Same interface as :class:`qplugin.nn.BatchNorm2d`; from_float takes a
    fused, observed ``BNReLU2d`` (qplugin.quantization.fused's or torch.ao.nn.intrinsic's)."""

    _FLOAT_MODULE = "BNReLU2d"  # a marker: from_float takes the fused BNReLU2d classes
    _QPLUGIN_NAME = "qplugin.nn.intrinsic.BNReLU2d"

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        # As PyTorch's BNReLU2d, a wrong rank is a ValueError raised here.
        if input.dim() != 4:
            raise ValueError(f"qplugin.nn.intrinsic.BNReLU2d: expected a 4-D (N, C, H, W) input,"
                             f" got {input.dim()}-D")
        return torch.ops.qplugin.batch_norm2d_relu(input, self.weight, self.bias,
                                                   self.running_mean, self.running_var, self.eps,
                                                   float(self.scale), int(self.zero_point))


class BNReLU3d(BatchNorm3d):
    r"""Fused BatchNorm3d and ReLU. Same interface as :class:`qplugin.nn.BatchNorm3d`;
    from_float takes a fused, observed :class:`torch.ao.nn.intrinsic.BNReLU3d`."""

    _FLOAT_MODULE = "BNReLU3d"  # a marker: from_float takes the fused BNReLU3d classes
    _QPLUGIN_NAME = "qplugin.nn.intrinsic.BNReLU3d"

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if input.dim() != 5:
            raise ValueError("qplugin.nn.intrinsic.BNReLU3d: expected a 5-D (N, C, D, H, W)"
                             f" input, got {input.dim()}-D")
        return torch.ops.qplugin.batch_norm3d_relu(input, self.weight, self.bias,
                                                   self.running_mean, self.running_var, self.eps,
                                                   float(self.scale), int(self.zero_point))
