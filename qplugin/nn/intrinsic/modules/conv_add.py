"""qplugin.nn.intrinsic.ConvAdd2d / ConvAddReLU2d (≙ torch.ao.nn.intrinsic.quantized.ConvAdd2d /
ConvAddReLU2d, onednn-only in PyTorch): ``y = quant(conv2d(input) + extra_input)`` (ReLU after
the add) on torch.ops.qplugin.conv2d_add / conv2d_add_relu; on qplugin.pt2.QTensor inputs (the PT2
door) their `.plain` overloads run (qplugin/pt2/routes/conv.py).
Changes with: qplugin/nn/modules/conv.py, csrc/ops/quantized_cpu/conv_kernel.cpp.
"""
import torch

from qplugin.nn.modules.conv import Conv2d, _conv_forward

__all__ = ["ConvAdd2d", "ConvAddReLU2d"]


class _ConvAddMixin:
    @classmethod
    def _from_float_types(cls, t):
        # torch.ao-only pattern (qplugin has no float ConvAdd2d): empty without torch.ao
        from qplugin._ao import torch_ao
        nni = torch_ao("nn.intrinsic")
        return (getattr(nni, cls._NAME),) if nni is not None else ()

    @classmethod
    def from_reference(cls, ref_qconv, output_scale, output_zero_point):
        return super().from_reference(ref_qconv[0], output_scale, output_zero_point)


class ConvAdd2d(_ConvAddMixin, Conv2d):
    r"""A Conv2d fused with an addition: ``forward(input, extra_input)`` returns
    ``quant(conv2d(input) + dequant(extra_input))`` with the module's scale and zero point.
    Same interface as :class:`qplugin.nn.Conv2d`; ``from_float`` takes a prepared
    ``torch.ao.nn.intrinsic.ConvAdd2d``. ``extra_input`` (quint8, the output's shape) is
    never modified (PyTorch's writes the result into a channels-last ``extra_input``)."""

    _NAME = "ConvAdd2d"

    forward = _conv_forward("conv2d_add", "default", "qplugin.nn.intrinsic.ConvAdd2d", 4, "", 
                            inputs=("input", "extra_input"))


class ConvAddReLU2d(_ConvAddMixin, Conv2d):
    r"""A Conv2d fused with an addition and ReLU: ``forward(input, extra_input)`` returns
    ``quant(relu(conv2d(input) + dequant(extra_input)))``. Same interface as
    :class:`qplugin.nn.Conv2d`; ``from_float`` takes a prepared
    ``torch.ao.nn.intrinsic.ConvAddReLU2d``."""

    _NAME = "ConvAddReLU2d"

    forward = _conv_forward("conv2d_add_relu", "default", "qplugin.nn.intrinsic.ConvAddReLU2d", 4, "", 
                            inputs=("input", "extra_input"))
