"""Typed Python wrappers of the elementwise torch.ops.qplugin ops (issue 6), one per op with
PyTorch's names, argument order and defaults; re-exported by qplugin/ops.py. Every check is in
the op itself (C++), so Python, TorchScript and C++ callers see the same errors. All wrappers
are TorchScript-compatible. Schemas: csrc/ops/elementwise.cpp, csrc/ops/activation_ext.cpp.
"""
from typing import List, Optional

import torch
from torch import Tensor

__all__: List[str] = [
    "add", "add_relu", "mul", "mul_relu", "add_out", "add_relu_out", "mul_out", "mul_relu_out",
    "add_scalar", "add_scalar_relu", "mul_scalar", "mul_scalar_relu",
    "cat", "cat_relu", "cat_out", "cat_relu_out",
    "leaky_relu", "sigmoid", "hardsigmoid", "celu", "threshold", "clamp", "softmax",
    "tanh", "gelu", "silu", "mish", "softplus",
]

_BINARY_DOC = """Quantized {what}{relu} (≙ torch.ops.quantized.{name}).

    ``y = {formula}`` on the dequantized inputs, requantized to (scale, zero_point) with exact
    round-half-to-even (PyTorch's float path is off by one on some elements){relu_math}.
    qb broadcasts against qa (either way); neither is materialized.

    Args:
        qa: quantized tensor (quint8, qint8 or qint32), per-tensor affine, on the CPU.
        qb: quantized tensor of qa's dtype, per-tensor affine, broadcastable against qa.
        scale: output scale (finite, > 0).
        zero_point: output zero point, inside the dtype's range.

    Returns:
        A new quantized tensor of qa's dtype and the broadcast shape with qparams (scale,
        zero_point), in qa's memory format (channels-last kept) when qa has the result's rank,
        contiguous otherwise.
    """


def add(qa: Tensor, qb: Tensor, scale: float, zero_point: int) -> Tensor:
    return torch.ops.qplugin.add(qa, qb, scale, zero_point)


def add_relu(qa: Tensor, qb: Tensor, scale: float, zero_point: int) -> Tensor:
    return torch.ops.qplugin.add_relu(qa, qb, scale, zero_point)


def mul(qa: Tensor, qb: Tensor, scale: float, zero_point: int) -> Tensor:
    return torch.ops.qplugin.mul(qa, qb, scale, zero_point)


def mul_relu(qa: Tensor, qb: Tensor, scale: float, zero_point: int) -> Tensor:
    return torch.ops.qplugin.mul_relu(qa, qb, scale, zero_point)


for _fn, _what, _name, _formula, _relu in [
        (add, "addition", "add", "qa + qb", False),
        (add_relu, "addition", "add_relu", "qa + qb", True),
        (mul, "multiplication", "mul", "qa * qb", False),
        (mul_relu, "multiplication", "mul_relu", "qa * qb", True)]:
    _fn.__doc__ = _BINARY_DOC.format(
        what=_what, name=_name, formula=_formula, relu=" fused with ReLU" if _relu else "",
        relu_math="; outputs below zero_point clamp to it" if _relu else "")


def add_out(qa: Tensor, qb: Tensor, out: Tensor) -> Tensor:
    """:func:`add` into ``out`` (its shape must be the broadcast shape; its qparams are the
    output's). ``out`` may be ``qa`` or ``qb`` itself (in place).

    Args:
        qa: quantized tensor (quint8, qint8 or qint32), per-tensor affine, on the CPU.
        qb: quantized tensor of qa's dtype, per-tensor affine, broadcastable against qa.
        out: per-tensor quantized CPU tensor of qa's dtype and the broadcast shape; its scale and
            zero point are the output qparams (they are not changed). May be qa or qb itself.

    Returns:
        ``out``, holding the result.
    """
    return torch.ops.qplugin.add_out(qa, qb, out)  # .out overload is not scriptable


def add_relu_out(qa: Tensor, qb: Tensor, out: Tensor) -> Tensor:
    """:func:`add_relu` into ``out`` (see :func:`add_out`).

    Args:
        qa: quantized tensor (quint8, qint8 or qint32), per-tensor affine, on the CPU.
        qb: quantized tensor of qa's dtype, per-tensor affine, broadcastable against qa.
        out: per-tensor quantized CPU tensor of qa's dtype and the broadcast shape; its scale and
            zero point are the output qparams (they are not changed). May be qa or qb itself.

    Returns:
        ``out``, holding the result (outputs below out's zero point clamp to it).
    """
    return torch.ops.qplugin.add_relu_out(qa, qb, out)


def mul_out(qa: Tensor, qb: Tensor, out: Tensor) -> Tensor:
    """:func:`mul` into ``out`` (see :func:`add_out`).

    Args:
        qa: quantized tensor (quint8, qint8 or qint32), per-tensor affine, on the CPU.
        qb: quantized tensor of qa's dtype, per-tensor affine, broadcastable against qa.
        out: per-tensor quantized CPU tensor of qa's dtype and the broadcast shape; its scale and
            zero point are the output qparams (they are not changed). May be qa or qb itself.

    Returns:
        ``out``, holding the result.
    """
    return torch.ops.qplugin.mul_out(qa, qb, out)


def mul_relu_out(qa: Tensor, qb: Tensor, out: Tensor) -> Tensor:
    """:func:`mul_relu` into ``out`` (see :func:`add_out`).

    Args:
        qa: quantized tensor (quint8, qint8 or qint32), per-tensor affine, on the CPU.
        qb: quantized tensor of qa's dtype, per-tensor affine, broadcastable against qa.
        out: per-tensor quantized CPU tensor of qa's dtype and the broadcast shape; its scale and
            zero point are the output qparams (they are not changed). May be qa or qb itself.

    Returns:
        ``out``, holding the result (outputs below out's zero point clamp to it).
    """
    return torch.ops.qplugin.mul_relu_out(qa, qb, out)


def add_scalar(qa: Tensor, b: float) -> Tensor:
    """``qa + b`` (≙ torch.ops.quantized.add_scalar). The output qparams are derived from qa's
    as PyTorch's: the zero point moves by round(b / scale) while it fits the dtype, else the
    range is rescaled; values are rounded exactly.

    Args:
        qa: quantized tensor (quint8, qint8 or qint32), per-tensor affine, on the CPU.
        b: the number added (finite).

    Returns:
        A new quantized tensor of qa's shape, dtype and memory format, with the derived qparams:
        (scale, zero_point - round(b / scale)) when that zero point fits the dtype, else a
        rescaled range with the zero point at the dtype's bound.
    """
    return torch.ops.qplugin.add_scalar(qa, b)


def add_scalar_relu(qa: Tensor, b: float) -> Tensor:
    """:func:`add_scalar` fused with ReLU.

    Args:
        qa: quantized tensor (quint8, qint8 or qint32), per-tensor affine, on the CPU.
        b: the number added (finite).

    Returns:
        A new quantized tensor of qa's shape, dtype and memory format with :func:`add_scalar`'s
        derived qparams; outputs below the output zero point clamp to it.
    """
    return torch.ops.qplugin.add_scalar_relu(qa, b)


def mul_scalar(qa: Tensor, b: float) -> Tensor:
    """``qa * b`` (≙ torch.ops.quantized.mul_scalar): the codes are kept (b > 0, scale * b),
    mirrored (b < 0) or zeroed (b == 0, qparams (1.0, 0)), as PyTorch's.

    Args:
        qa: quantized tensor (quint8, qint8 or qint32), per-tensor affine, on the CPU.
        b: the multiplier (finite); for b != 0, abs(b) * qa's scale must be finite and > 0.

    Returns:
        A new quantized tensor of qa's shape, dtype and memory format, with qparams
        (b * scale, zero_point) for b > 0, (abs(b) * scale, qmin + qmax - zero_point) for
        b < 0 (codes mirrored the same way) and (1.0, 0) with all codes 0 for b == 0.
    """
    return torch.ops.qplugin.mul_scalar(qa, b)


def mul_scalar_relu(qa: Tensor, b: float) -> Tensor:
    """:func:`mul_scalar` fused with ReLU.

    Args:
        qa: quantized tensor (quint8, qint8 or qint32), per-tensor affine, on the CPU.
        b: the multiplier (finite); for b != 0, abs(b) * qa's scale must be finite and > 0.

    Returns:
        A new quantized tensor of qa's shape, dtype and memory format with :func:`mul_scalar`'s
        qparams; outputs below the output zero point clamp to it (b == 0: all zeros).
    """
    return torch.ops.qplugin.mul_scalar_relu(qa, b)


def cat(qx: List[Tensor], dim: int, scale: Optional[float] = None,
        zero_point: Optional[int] = None) -> Tensor:
    """Quantized concatenation along ``dim`` (≙ torch.ops.quantized.cat). Output qparams default
    to qx[0]'s; inputs with the output's qparams are copied byte for byte, others requantized
    exactly. Channels-last output when every input is channels-last.

    Args:
        qx: non-empty list of quantized tensors of one dtype (quint8, qint8 or qint32),
            per-tensor affine, of one rank (>= 1) and equal sizes except along ``dim``.
        dim: the dimension to concatenate along, in [-rank, rank - 1].
        scale: output scale (finite, > 0); None for qx[0]'s.
        zero_point: output zero point, inside the dtype's range; None for qx[0]'s (each of
            scale and zero_point falls back on its own).

    Returns:
        A new quantized tensor of qx[0]'s dtype, with the inputs' sizes summed along ``dim``
        and the output qparams; in the inputs' common memory format, else contiguous.
    """
    return torch.ops.qplugin.cat(qx, dim, scale, zero_point)


def cat_relu(qx: List[Tensor], dim: int, scale: Optional[float] = None,
             zero_point: Optional[int] = None) -> Tensor:
    """:func:`cat` fused with ReLU (outputs below the zero point clamp to it).

    Args:
        qx: non-empty list of quantized tensors of one dtype (quint8, qint8 or qint32),
            per-tensor affine, of one rank (>= 1) and equal sizes except along ``dim``.
        dim: the dimension to concatenate along, in [-rank, rank - 1].
        scale: output scale (finite, > 0); None for qx[0]'s.
        zero_point: output zero point, inside the dtype's range; None for qx[0]'s (each of
            scale and zero_point falls back on its own).

    Returns:
        A new quantized tensor as :func:`cat`'s, outputs below the output zero point clamped
        to it.
    """
    return torch.ops.qplugin.cat_relu(qx, dim, scale, zero_point)


def cat_out(qx: List[Tensor], dim: int, out: Tensor) -> Tensor:
    """:func:`cat` into ``out`` (its qparams are the output's).

    Args:
        qx: non-empty list of quantized tensors of one dtype (quint8, qint8 or qint32),
            per-tensor affine, of one rank (>= 1) and equal sizes except along ``dim``.
        dim: the dimension to concatenate along, in [-rank, rank - 1].
        out: per-tensor quantized CPU tensor of qx[0]'s dtype and the concatenated shape; its
            scale and zero point are the output qparams (they are not changed).

    Returns:
        ``out``, holding the concatenation.
    """
    return torch.ops.qplugin.cat_out(qx, dim, out=out)


def cat_relu_out(qx: List[Tensor], dim: int, out: Tensor) -> Tensor:
    """:func:`cat_relu` into ``out``.

    Args:
        qx: non-empty list of quantized tensors of one dtype (quint8, qint8 or qint32),
            per-tensor affine, of one rank (>= 1) and equal sizes except along ``dim``.
        dim: the dimension to concatenate along, in [-rank, rank - 1].
        out: per-tensor quantized CPU tensor of qx[0]'s dtype and the concatenated shape; its
            scale and zero point are the output qparams (they are not changed).

    Returns:
        ``out``, holding the concatenation with outputs below out's zero point clamped to it.
    """
    return torch.ops.qplugin.cat_relu_out(qx, dim, out=out)


def leaky_relu(qx: Tensor, negative_slope: float, inplace: bool, output_scale: float,
               output_zero_point: int) -> Tensor:
    """Quantized leaky ReLU (≙ torch.ops.quantized.leaky_relu), exact. ``inplace`` updates qx
    only when the output qparams are qx's (PyTorch ignores it).

    Args:
        qx: quantized tensor (quint8, qint8 or qint32), per-tensor affine, on the CPU.
        negative_slope: slope for x < 0 (finite).
        inplace: write into qx when output_scale and output_zero_point equal qx's; otherwise
            ignored (a new tensor is returned).
        output_scale: output scale (finite, > 0).
        output_zero_point: output zero point, inside qx's dtype range.

    Returns:
        qx itself, updated, when the in-place write applies; otherwise a new quantized tensor of
        qx's shape and dtype, in qx's memory format (channels-last kept), with the output qparams.
    """
    return torch.ops.qplugin.leaky_relu(qx, negative_slope, inplace, output_scale,
                                        output_zero_point)


def sigmoid(qx: Tensor, output_scale: float, output_zero_point: int) -> Tensor:
    """Quantized sigmoid (≙ torch.ops.quantized.sigmoid), exact.

    Args:
        qx: quantized tensor (quint8, qint8 or qint32), per-tensor affine, on the CPU.
        output_scale: output scale (finite, > 0).
        output_zero_point: output zero point, inside qx's dtype range.

    Returns:
        A new quantized tensor of qx's shape and dtype, in qx's memory format (channels-last
        kept), with the output qparams.
    """
    return torch.ops.qplugin.sigmoid(qx, output_scale, output_zero_point)


def hardsigmoid(qx: Tensor, output_scale: Optional[float] = None,
                output_zero_point: Optional[int] = None) -> Tensor:
    """Quantized hardsigmoid; default qparams PyTorch's fixed ones (scale 1/256). Extension.

    ``y = clamp(x + 3, 0, 6) / 6``.

    Args:
        qx: quantized tensor (quint8, qint8 or qint32), per-tensor affine, on the CPU.
        output_scale: output scale (finite, > 0); None (together with output_zero_point) for
            PyTorch's fixed qparams: (1/256, 0) for quint8, (1/256, -128) for qint8,
            (2**-32, 0) for qint32.
        output_zero_point: output zero point, inside qx's dtype range; None exactly when
            output_scale is None.

    Returns:
        A new quantized tensor of qx's shape and dtype, in qx's memory format (channels-last
        kept), with the output qparams.
    """
    return torch.ops.qplugin.hardsigmoid(qx, output_scale, output_zero_point)


def celu(qx: Tensor, output_scale: float, output_zero_point: int, alpha: float = 1.0) -> Tensor:
    """Quantized CELU (≙ torch.ops.quantized.celu), exact, contiguous output.

    Args:
        qx: quantized tensor (quint8, qint8 or qint32), per-tensor affine, on the CPU.
        output_scale: output scale (finite, > 0).
        output_zero_point: output zero point, inside qx's dtype range.
        alpha: the CELU alpha, ``y = alpha * (exp(x / alpha) - 1)`` for x <= 0 (finite, != 0).

    Returns:
        A new contiguous quantized tensor of qx's shape and dtype, with the output qparams.
    """
    return torch.ops.qplugin.celu(qx, output_scale, output_zero_point, alpha)


def threshold(qx: Tensor, threshold: float, value: float) -> Tensor:
    """``x if x > threshold else value`` (≙ torch.ops.quantized.threshold), qx's qparams.

    Args:
        qx: quantized tensor (quint8, qint8 or qint32), per-tensor affine, on the CPU.
        threshold: compared with the dequantized x (not NaN).
        value: replacement where x <= threshold (not NaN); quantized exactly to qx's qparams,
            saturating to the dtype's range.

    Returns:
        A new quantized tensor of qx's shape and dtype, in qx's memory format (channels-last
        kept), with qx's qparams; kept elements keep their codes.
    """
    return torch.ops.qplugin.threshold(qx, threshold, value)


def clamp(qx: Tensor, min: Optional[float] = None, max: Optional[float] = None) -> Tensor:
    """Quantized clamp (≙ torch.ops.quantized.clamp), qx's qparams.

    Args:
        qx: quantized tensor (quint8, qint8 or qint32), per-tensor affine, on the CPU.
        min: lower bound (not NaN), or None for none; at least one of min and max is required.
        max: upper bound (not NaN), or None for none; min > max gives max, as torch.clamp.

    Returns:
        A new quantized tensor of qx's shape and dtype, in qx's memory format (channels-last
        kept), with qx's qparams (the bounds are quantized exactly, round half to even).
    """
    return torch.ops.qplugin.clamp(qx, min, max)


def softmax(qx: Tensor, dim: int, output_scale: float, output_zero_point: int) -> Tensor:
    """Quantized softmax over ``dim`` (≙ torch.ops.quantized.softmax), contiguous output.

    Args:
        qx: quantized tensor (quint8, qint8 or qint32), per-tensor affine, on the CPU.
        dim: the dimension normalized over, in [-rank, rank - 1].
        output_scale: output scale (finite, > 0).
        output_zero_point: output zero point, inside qx's dtype range.

    Returns:
        A new contiguous quantized tensor of qx's shape and dtype, with the output qparams.
    """
    return torch.ops.qplugin.softmax(qx, dim, output_scale, output_zero_point)


def tanh(qx: Tensor, output_scale: Optional[float] = None,
         output_zero_point: Optional[int] = None) -> Tensor:
    """Quantized tanh; default qparams PyTorch's fixed ones (scale 2/256). Extension.

    Args:
        qx: quantized tensor (quint8, qint8 or qint32), per-tensor affine, on the CPU.
        output_scale: output scale (finite, > 0); None (together with output_zero_point) for
            PyTorch's fixed qparams: (2/256, 128) for quint8, (2/256, 0) for qint8,
            (2**-31, 0) for qint32.
        output_zero_point: output zero point, inside qx's dtype range; None exactly when
            output_scale is None.

    Returns:
        A new quantized tensor of qx's shape and dtype, in qx's memory format (channels-last
        kept), with the output qparams.
    """
    return torch.ops.qplugin.tanh(qx, output_scale, output_zero_point)


def gelu(qx: Tensor, output_scale: Optional[float] = None,
         output_zero_point: Optional[int] = None, approximate: str = "none") -> Tensor:
    """Quantized GELU (``approximate`` 'none' or 'tanh'); default qparams qx's. Extension.

    Args:
        qx: quantized tensor (quint8, qint8 or qint32), per-tensor affine, on the CPU.
        output_scale: output scale (finite, > 0); None (together with output_zero_point) for
            qx's scale.
        output_zero_point: output zero point, inside qx's dtype range; None exactly when
            output_scale is None (then qx's zero point).
        approximate: ``'none'`` for the exact erf form, ``'tanh'`` for the tanh approximation.

    Returns:
        A new quantized tensor of qx's shape and dtype, in qx's memory format (channels-last
        kept), with the output qparams.
    """
    return torch.ops.qplugin.gelu(qx, output_scale, output_zero_point, approximate)


def silu(qx: Tensor, output_scale: float, output_zero_point: int) -> Tensor:
    """Quantized SiLU ``x * sigmoid(x)``, exact. Extension (PyTorch has none).

    Args:
        qx: quantized tensor (quint8, qint8 or qint32), per-tensor affine, on the CPU.
        output_scale: output scale (finite, > 0).
        output_zero_point: output zero point, inside qx's dtype range.

    Returns:
        A new quantized tensor of qx's shape and dtype, in qx's memory format (channels-last
        kept), with the output qparams.
    """
    return torch.ops.qplugin.silu(qx, output_scale, output_zero_point)


def mish(qx: Tensor, output_scale: float, output_zero_point: int) -> Tensor:
    """Quantized Mish ``x * tanh(softplus(x))``, exact. Extension.

    Args:
        qx: quantized tensor (quint8, qint8 or qint32), per-tensor affine, on the CPU.
        output_scale: output scale (finite, > 0).
        output_zero_point: output zero point, inside qx's dtype range.

    Returns:
        A new quantized tensor of qx's shape and dtype, in qx's memory format (channels-last
        kept), with the output qparams.
    """
    return torch.ops.qplugin.mish(qx, output_scale, output_zero_point)


def softplus(qx: Tensor, output_scale: float, output_zero_point: int, beta: float = 1.0,
             threshold: float = 20.0) -> Tensor:
    """Quantized softplus ``log(1 + exp(beta x)) / beta`` (linear above threshold), exact.
    Extension.

    Args:
        qx: quantized tensor (quint8, qint8 or qint32), per-tensor affine, on the CPU.
        output_scale: output scale (finite, > 0).
        output_zero_point: output zero point, inside qx's dtype range.
        beta: the softplus beta (finite, != 0).
        threshold: where ``beta * x > threshold`` the output is x itself (not NaN).

    Returns:
        A new quantized tensor of qx's shape and dtype, in qx's memory format (channels-last
        kept), with the output qparams.
    """
    return torch.ops.qplugin.softplus(qx, output_scale, output_zero_point, beta, threshold)
