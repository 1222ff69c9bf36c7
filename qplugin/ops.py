"""Typed Python wrappers of torch.ops.qplugin (one per op, same names, argument order and
defaults as torch.ops.quantized). Schemas: csrc/ops/*.cpp; pinned in tests/test_schemas.py.

The wrappers only call the op: every check happens in the op itself (C++), so Python, TorchScript
and C++ callers see the same errors ("qplugin::<op>: expected ..., got ..."). All wrappers are
TorchScript-compatible.
"""
from typing import List, Optional

import torch
from torch import Tensor

__all__: List[str] = [
    "quantized_batch_norm",
    "batch_norm",
    "batch_norm1d",
    "batch_norm2d",
    "batch_norm3d",
    "batch_norm_relu",
    "batch_norm1d_relu",
    "batch_norm2d_relu",
    "batch_norm3d_relu",
    "relu6",
    "hardswish",
    "elu",
    "cpu_isa",
]

_BN_DOC = """Quantized batch norm{relu_title} ({rank}; ≙ {torch_name}).

    ``y = (x - mean) / sqrt(var + eps) * weight + bias``, requantized to (output_scale,
    output_zero_point) with round-half-to-even and clamped to the dtype's range.{relu_math}

    Args:
        {input_name}: quantized input (quint8, qint8 or qint32, per-tensor affine), {shape}.
        weight: per-channel float scale [C], or None for ones.
        bias: per-channel float shift [C], or None for zeros.
        mean: running mean [C] (float).
        var: running variance [C] (float); var + eps must be > 0.
        eps: added to var, finite and >= 0.
        output_scale: scale of the output (finite, > 0).
        output_zero_point: zero point of the output, inside the input dtype's range.

    Returns:
        A quantized tensor of the input's shape and dtype with the given output qparams,
        channels-last for 4-D/5-D inputs (as PyTorch's), contiguous otherwise.

    Raises:
        RuntimeError: ``qplugin::{op}: expected ...`` on a non-quantized input, a
        wrong rank, per-channel vectors of the wrong length or bad qparams.
    """


def _bn_doc(op: str, rank: str, shape: str, relu: bool, torch_name: str,
            input_name: str = "qx") -> str:
    return _BN_DOC.format(op=op, rank=rank, shape=shape, torch_name=torch_name,
                          input_name=input_name,
                          relu_title=" fused with ReLU" if relu else "",
                          relu_math="\n    ReLU fused: outputs below output_zero_point clamp to it."
                          if relu else "")


def quantized_batch_norm(input: Tensor, weight: Optional[Tensor], bias: Optional[Tensor],
                         mean: Tensor, var: Tensor, eps: float, output_scale: float,
                         output_zero_point: int) -> Tensor:
    return torch.ops.qplugin.quantized_batch_norm(input, weight, bias, mean, var, eps,
                                                  output_scale, output_zero_point)


def batch_norm(qx: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], mean: Tensor,
               var: Tensor, eps: float, output_scale: float, output_zero_point: int) -> Tensor:
    return torch.ops.qplugin.batch_norm(qx, weight, bias, mean, var, eps, output_scale,
                                        output_zero_point)


def batch_norm1d(qx: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], mean: Tensor,
                 var: Tensor, eps: float, output_scale: float, output_zero_point: int) -> Tensor:
    return torch.ops.qplugin.batch_norm1d(qx, weight, bias, mean, var, eps, output_scale,
                                          output_zero_point)


def batch_norm2d(qx: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], mean: Tensor,
                 var: Tensor, eps: float, output_scale: float, output_zero_point: int) -> Tensor:
    return torch.ops.qplugin.batch_norm2d(qx, weight, bias, mean, var, eps, output_scale,
                                          output_zero_point)


def batch_norm3d(qx: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], mean: Tensor,
                 var: Tensor, eps: float, output_scale: float, output_zero_point: int) -> Tensor:
    return torch.ops.qplugin.batch_norm3d(qx, weight, bias, mean, var, eps, output_scale,
                                          output_zero_point)


def batch_norm_relu(qx: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], mean: Tensor,
                    var: Tensor, eps: float, output_scale: float,
                    output_zero_point: int) -> Tensor:
    return torch.ops.qplugin.batch_norm_relu(qx, weight, bias, mean, var, eps, output_scale,
                                             output_zero_point)


def batch_norm1d_relu(qx: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], mean: Tensor,
                      var: Tensor, eps: float, output_scale: float,
                      output_zero_point: int) -> Tensor:
    return torch.ops.qplugin.batch_norm1d_relu(qx, weight, bias, mean, var, eps, output_scale,
                                               output_zero_point)


def batch_norm2d_relu(qx: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], mean: Tensor,
                      var: Tensor, eps: float, output_scale: float,
                      output_zero_point: int) -> Tensor:
    return torch.ops.qplugin.batch_norm2d_relu(qx, weight, bias, mean, var, eps, output_scale,
                                               output_zero_point)


def batch_norm3d_relu(qx: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], mean: Tensor,
                      var: Tensor, eps: float, output_scale: float,
                      output_zero_point: int) -> Tensor:
    return torch.ops.qplugin.batch_norm3d_relu(qx, weight, bias, mean, var, eps, output_scale,
                                               output_zero_point)


_ANY = "2-D to 5-D (N, C, ...)"
quantized_batch_norm.__doc__ = _bn_doc("quantized_batch_norm", "any rank", _ANY, False,
                                       "torch.quantized_batch_norm", input_name="input")
batch_norm.__doc__ = _bn_doc("batch_norm", "any rank", _ANY, False,
                             "torch.ops.quantized.batch_norm")
batch_norm_relu.__doc__ = _bn_doc("batch_norm_relu", "any rank", _ANY, True,
                                  "torch.ops.quantized.batch_norm_relu")
for _fn, _shape in ((batch_norm1d, "(N, C) or (N, C, L)"), (batch_norm2d, "(N, C, H, W)"),
                    (batch_norm3d, "(N, C, D, H, W)")):
    _rank = _fn.__name__[-2:]
    _fn.__doc__ = _bn_doc(_fn.__name__, _rank, _shape, False,
                          f"torch.ops.quantized.{_fn.__name__}")
for _fn, _shape in ((batch_norm1d_relu, "(N, C) or (N, C, L)"),
                    (batch_norm2d_relu, "(N, C, H, W)"), (batch_norm3d_relu, "(N, C, D, H, W)")):
    _rank = _fn.__name__[len("batch_norm"):len("batch_norm") + 2]
    _fn.__doc__ = _bn_doc(_fn.__name__, _rank, _shape, True,
                          f"torch.ops.quantized.{_fn.__name__}")
del _fn, _shape, _rank


def relu6(qx: Tensor, inplace: bool = False) -> Tensor:
    """Quantized ReLU6 (≙ torch.ops.quantized.relu6): ``min(max(q, zero_point), q(6))``.

    Args:
        qx: quantized input (quint8, qint8 or qint32, per-tensor affine), any shape.
        inplace: write the result into ``qx`` and return it.

    Returns:
        A quantized tensor with the input's shape, scale and zero point (channels-last inputs
        stay channels-last); ``qx`` itself when ``inplace``.

    Raises:
        RuntimeError: ``qplugin::relu6: expected qx to be a quantized tensor ...``.
    """
    return torch.ops.qplugin.relu6(qx, inplace)


def hardswish(input: Tensor, output_scale: float, output_zero_point: int) -> Tensor:
    """Quantized hardswish (≙ torch.ops.quantized.hardswish):
    ``y = x * min(max(x + 3, 0), 6) / 6`` on the dequantized input, requantized to
    (output_scale, output_zero_point).

    Args:
        input: quantized input (quint8, qint8 or qint32, per-tensor affine), any shape.
        output_scale: scale of the output (finite, > 0).
        output_zero_point: zero point of the output, inside the input dtype's range.

    Returns:
        A quantized tensor of the input's shape and dtype (channels-last inputs stay
        channels-last).

    Raises:
        RuntimeError: ``qplugin::hardswish: expected ...`` on a non-quantized input or bad qparams.
    """
    return torch.ops.qplugin.hardswish(input, output_scale, output_zero_point)


def elu(input: Tensor, output_scale: float, output_zero_point: int, alpha: float = 1.0,
        scale: float = 1.0, input_scale: float = 1.0) -> Tensor:
    """Quantized ELU (≙ torch.ops.quantized.elu; the schema names the input ``self``):
    ``y = scale * x`` for ``x > 0``, else ``scale * alpha * (exp(input_scale * x) - 1)``, on the
    dequantized input, requantized to (output_scale, output_zero_point).

    Args:
        input: quantized input (quint8, qint8 or qint32, per-tensor affine), any shape.
        output_scale: scale of the output (finite, > 0).
        output_zero_point: zero point of the output, inside the input dtype's range.
        alpha: the ELU alpha. Default: 1.
        scale: the output multiplier (as torch.nn.functional.elu's ``scale``). Default: 1.
        input_scale: the multiplier of negative inputs inside exp. Default: 1.

    Returns:
        A contiguous quantized tensor of the input's shape and dtype (as PyTorch's op, the
        output is contiguous whatever the input layout).

    Raises:
        RuntimeError: ``qplugin::elu: expected ...`` on a non-quantized input, non-finite
        alpha/scale/input_scale or bad qparams.
    """
    return torch.ops.qplugin.elu(input, output_scale, output_zero_point, alpha, scale,
                                 input_scale)


def cpu_isa() -> str:
    """The kernel ISA in use.

    Returns:
        ``'scalar'``, ``'avx2'`` or ``'avx512vnni'``: the best the CPU supports, possibly lowered
        by the environment variable ``QPLUGIN_CPU_ISA``.
    """
    return torch.ops.qplugin._cpu_isa()

from ._ops_elementwise import *  # noqa: E402,F401,F403
from . import _ops_elementwise as _ew  # noqa: E402

__all__ = list(__all__) + list(_ew.__all__)
