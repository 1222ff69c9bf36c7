r"""Functional forms of the activations (≙ torch.ao.nn.quantized.functional: same names,
arguments, defaults and output qparams) on torch.ops.qplugin, plus the extensions PyTorch lacks
for quantized tensors (relu6, sigmoid and tanh with chosen qparams, gelu, silu, mish, softplus,
softmax). Re-exported from qplugin.nn.functional. All functions are TorchScript-compatible.

The forms whose row in qplugin/_tables/activation.py says `functional="generated"` (the
``f(input, scale, zero_point, *args)`` ops) are generated from the row by `_make_functional`
(TorchScript-readable source, qplugin/_codegen.py); the others are written out below. Changes with: qplugin/_tables/activation.py, qplugin/nn/modules/activation.py.
"""
from typing import List, Optional

import torch
from torch import Tensor

from .._codegen import compile_function
from .._tables import activation as _table

__all__: List[str] = []  # filled at the bottom: the rows' forms, generated or written here

# Non-quantized input: ValueError here, as PyTorch's functional; every other check (dtype,
# qscheme, qparams) is the op's ("qplugin::<op>: expected ...").


def _not_quantized(name: str) -> str:
    return ("qplugin.nn.functional." + name + ": expected a quantized input tensor (torch.quint8,"
            " torch.qint8 or torch.qint32), got a non-quantized tensor; quantize it first"
            " (torch.quantize_per_tensor or qplugin.nn.Quantize)")


def _make_functional(row: _table.Activation):
    """``<name>(input, scale, zero_point, *args)`` of a `functional="generated"` row (args: the
    row's module arguments passed to the op, same names and defaults), as TorchScript-readable
    source (qplugin/_codegen.py)."""
    args = [a for a in row.module_args if a.to_op]
    params = "".join(f", {a.name}: {a.annotation} = {a.default!r}" for a in args)
    call = "".join(f", {a.name}" for a in args)
    source = (f"def {row.name}(input: Tensor, scale: float, zero_point: int{params}) -> Tensor:\n"
              f"    if not input.is_quantized:\n"
              f"        raise ValueError({_not_quantized(row.name)!r})\n"
              f"    return torch.ops.qplugin.{row.op}(input, scale, zero_point{call})\n")
    fn = compile_function(source, row.name, f"qplugin/_tables/activation.py row {row.name}",
                          {"torch": torch, "Tensor": Tensor}, __name__)
    mirror = "an extension" if row.extension else (
        f"≙ :func:`torch.ao.nn.quantized.functional.{row.name}`")
    arg_doc = "".join(f"\n        {a.name}: Default: ``{a.default!r}``" for a in args)
    fn.__doc__ = (
        f"Quantized :func:`~torch.nn.functional.{row.name}`: {row.summary}; {mirror}.\n\n"
        "    Args:\n        input: quantized input (torch.quint8, torch.qint8 or torch.qint32)\n"
        f"        scale, zero_point: output qparams{arg_doc}\n\n"
        "    Returns:\n        The quantized output, same shape and dtype as the input.\n\n"
        "    Generated from its row in qplugin/_tables/activation.py.\n    ")
    return fn


for _row in _table.ROWS:
    if _row.functional == "generated":
        globals()[_row.name] = _make_functional(_row)
del _row


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    r"""Quantized :func:`~torch.nn.functional.relu6`: ``min(max(q, zero_point), q(6))``, keeping
    the input's qparams. A qplugin extension (torch.ao.nn.quantized.functional has no relu6;
    PyTorch users call ``torch.ops.quantized.relu6`` or ``torch.nn.functional.relu6``).

    Args:
        input: quantized input (torch.quint8, torch.qint8 or torch.qint32)
        inplace: write the result into ``input`` and return it. Default: ``False``

    Returns:
        The quantized output with the input's shape, dtype, scale and zero point.
    """
    if not input.is_quantized:
        raise ValueError(_not_quantized("relu6"))
    return torch.ops.qplugin.relu6(input, inplace)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    r"""Quantized :func:`~torch.nn.functional.hardsigmoid` (≙
    :func:`torch.ao.nn.quantized.functional.hardsigmoid`): ``relu6(x + 3) / 6`` with PyTorch's
    fixed output qparams (scale 1/256; zero point 0 for quint8, -128 for qint8).

    Args:
        input: quantized input (torch.quint8, torch.qint8 or torch.qint32)
        inplace: write the result (and its qparams) into ``input``. Default: ``False``
    """
    if not input.is_quantized:
        raise ValueError(_not_quantized("hardsigmoid"))
    y = torch.ops.qplugin.hardsigmoid(input)
    if inplace:
        input.copy_(y)  # a quantized copy_ also takes y's qparams, as PyTorch's hardsigmoid_
        return input
    return y


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    r"""Quantized :func:`~torch.nn.functional.hardtanh` (≙
    :func:`torch.ao.nn.quantized.functional.hardtanh`): ``clamp(x, min_val, max_val)`` keeping
    the input's qparams.

    Args:
        input: quantized input
        min_val, max_val: the clamp range. Defaults: -1.0, 1.0
        inplace: write the result into ``input``. Default: ``False``
    """
    if not input.is_quantized:
        raise ValueError(_not_quantized("hardtanh"))
    y = torch.ops.qplugin.clamp(input, min_val, max_val)
    if inplace:
        input.copy_(y)
        return input
    return y


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False,
               scale: Optional[float] = None, zero_point: Optional[int] = None) -> Tensor:
    r"""Quantized :func:`~torch.nn.functional.leaky_relu` (≙
    :func:`torch.ao.nn.quantized.functional.leaky_relu`): ``max(0, x) + negative_slope *
    min(0, x)``.

    Args:
        input: quantized input
        negative_slope: slope of the negative part. Default: 0.01
        inplace: modify ``input`` (only without new qparams). Default: ``False``
        scale, zero_point: output qparams; default (both None): the input's.
    """
    if not input.is_quantized:
        raise ValueError(_not_quantized("leaky_relu"))
    if scale is not None and zero_point is not None:
        if inplace:
            raise ValueError("qplugin.nn.functional.leaky_relu: expected inplace=False when scale"
                             " and zero_point are given (the output has new qparams), got"
                             " inplace=True")
        return torch.ops.qplugin.leaky_relu(input, negative_slope, False, scale, int(zero_point))
    return torch.ops.qplugin.leaky_relu(input, negative_slope, inplace, input.q_scale(),
                                        input.q_zero_point())


def celu(input: Tensor, scale: float, zero_point: int, alpha: float = 1.0) -> Tensor:
    r"""Quantized :func:`~torch.nn.functional.celu` (≙
    :func:`torch.ao.nn.quantized.functional.celu`): ``max(0, x) + min(0, alpha * (exp(x / alpha)
    - 1))``, contiguous output.

    Args:
        input: quantized input
        scale, zero_point: output qparams
        alpha: the CELU alpha. Default: 1.0
    """
    if not input.is_quantized:
        raise ValueError(_not_quantized("celu"))
    return torch.ops.qplugin.celu(input, scale, zero_point, alpha)


def threshold(input: Tensor, threshold: float, value: float) -> Tensor:
    r"""Quantized :func:`~torch.nn.functional.threshold` (≙
    :func:`torch.ao.nn.quantized.functional.threshold`): ``x if x > threshold else value``,
    decided on the dequantized value, keeping the input's qparams.
    """
    if not input.is_quantized:
        raise ValueError(_not_quantized("threshold"))
    if threshold is None:
        raise ValueError("qplugin.nn.functional.threshold: expected a threshold, got None")
    if value is None:
        raise ValueError("qplugin.nn.functional.threshold: expected a value, got None")
    return torch.ops.qplugin.threshold(input, threshold, value)


def clamp(input: Tensor, min_: float, max_: float) -> Tensor:
    r"""Quantized :func:`torch.clamp` (≙ :func:`torch.ao.nn.quantized.functional.clamp`),
    keeping the input's qparams."""
    if not input.is_quantized:
        raise ValueError(_not_quantized("clamp"))
    return torch.ops.qplugin.clamp(input, min_, max_)


def sigmoid(input: Tensor, scale: Optional[float] = None,
            zero_point: Optional[int] = None) -> Tensor:
    r"""Quantized :func:`torch.sigmoid`. With ``scale``/``zero_point`` ≙
    ``torch.ops.quantized.sigmoid``; without, PyTorch's fixed qparams of ``torch.sigmoid`` on a
    quantized tensor (scale 1/256; zero point 0 for quint8, -128 for qint8). Extension (no
    functional sigmoid in torch.ao.nn.quantized.functional).
    """
    if not input.is_quantized:
        raise ValueError(_not_quantized("sigmoid"))
    if scale is None or zero_point is None:
        # uint8 / int8: the codes dtype of a qplugin.pt2.QTensor (the PT2 door), which is
        # quantized (checked above) with quint8 / qint8 meaning.
        if input.dtype == torch.quint8 or input.dtype == torch.uint8:
            return torch.ops.qplugin.sigmoid(input, 1.0 / 256, 0)
        if input.dtype == torch.qint8 or input.dtype == torch.int8:
            return torch.ops.qplugin.sigmoid(input, 1.0 / 256, -128)
        return torch.ops.qplugin.sigmoid(input, 2.0 ** -32, 0)
    return torch.ops.qplugin.sigmoid(input, scale, zero_point)


def tanh(input: Tensor, scale: Optional[float] = None,
         zero_point: Optional[int] = None) -> Tensor:
    r"""Quantized :func:`torch.tanh`; default qparams as ``torch.tanh`` on a quantized tensor
    (scale 2/256; zero point 128 for quint8, 0 for qint8). Extension."""
    if not input.is_quantized:
        raise ValueError(_not_quantized("tanh"))
    return torch.ops.qplugin.tanh(input, scale, zero_point)


def gelu(input: Tensor, scale: Optional[float] = None, zero_point: Optional[int] = None,
         approximate: str = "none") -> Tensor:
    r"""Quantized :func:`~torch.nn.functional.gelu` (``approximate`` ``'none'`` or ``'tanh'``);
    default qparams: the input's, as ``torch.nn.functional.gelu`` on a quantized tensor.
    Extension."""
    if not input.is_quantized:
        raise ValueError(_not_quantized("gelu"))
    return torch.ops.qplugin.gelu(input, scale, zero_point, approximate)


def softmax(input: Tensor, dim: int, scale: float, zero_point: int) -> Tensor:
    r"""Quantized :func:`~torch.nn.functional.softmax` over ``dim`` (≙
    ``torch.ops.quantized.softmax``), contiguous output."""
    if not input.is_quantized:
        raise ValueError(_not_quantized("softmax"))
    return torch.ops.qplugin.softmax(input, dim, scale, zero_point)


# One form per row (tests/test_architecture.py names the recipe step a row without one misses).
__all__ += [row.name for row in _table.ROWS if row.name in globals()]
