"""QFunctional and FloatFunctional (≙ torch.ao.nn.quantized.{QFunctional, FloatFunctional}):
the stand-in modules for elementwise arithmetic in eager-mode quantized models. Ops:
torch.ops.qplugin.{add, add_relu, mul, cat, add_scalar, mul_scalar}.
Changes with: qplugin/quantization (FloatFunctional -> QFunctional mapping),
tests/elementwise/test_functional_modules.py.
"""
from typing import Any, Dict, List

import torch
from torch import Tensor

from ..._codegen import compile_function
from .utils import _check_float_module, _observer_qparams, _QParamsMixin, _scale_buffer

__all__ = ["FloatFunctional", "QFunctional"]


def _float_functional_bases():
    # While torch.ao exists, qplugin's FloatFunctional also subclasses torch.ao's, only so that
    # torch.ao.quantization.prepare (which recognises FloatFunctional by issubclass) observes it;
    # every method below is qplugin's own. Without torch.ao it is a plain nn.Module.
    from qplugin._ao import torch_ao
    nnq = torch_ao("nn.quantized")
    return (nnq.FloatFunctional,) if nnq is not None else (torch.nn.Module,)


class FloatFunctional(*_float_functional_bases()):
    r"""State collector for float elementwise operations, to be swapped for
    :class:`QFunctional` by :func:`qplugin.quantization.convert` (≙
    :class:`torch.ao.nn.quantized.FloatFunctional`). Each operation computes in float and passes
    its result through ``activation_post_process`` (an Identity until prepare puts an observer
    there).

    Use an instance instead of the ``torch.`` prefix: ``self.f = FloatFunctional()`` in
    ``__init__``, ``self.f.add(x, y)`` in ``forward``.

    Examples::

        >>> f_add = FloatFunctional()
        >>> f_add.add(torch.tensor(3.0), torch.tensor(4.0))  # torch.add(a, b)
        tensor(7.)

    Operations: ``add``, ``cat``, ``mul``, ``add_relu``, ``add_scalar``, ``mul_scalar``,
    ``matmul``.
    """

    def __init__(self) -> None:
        torch.nn.Module.__init__(self)
        self.activation_post_process = torch.nn.Identity()

    def forward(self, x):
        raise RuntimeError("qplugin.nn.FloatFunctional is not intended to use the 'forward';"
                           " call one of its operations (add, mul, cat, ...) instead")

    def add(self, x: Tensor, y: Tensor) -> Tensor:
        return self.activation_post_process(torch.add(x, y))

    def add_scalar(self, x: Tensor, y: float) -> Tensor:
        # no observer: the output qparams derive from the input's (as torch.ao)
        return torch.add(x, y)

    def mul(self, x: Tensor, y: Tensor) -> Tensor:
        return self.activation_post_process(torch.mul(x, y))

    def mul_scalar(self, x: Tensor, y: float) -> Tensor:
        return torch.mul(x, y)

    def cat(self, x: List[Tensor], dim: int = 0) -> Tensor:
        return self.activation_post_process(torch.cat(x, dim=dim))

    def add_relu(self, x: Tensor, y: Tensor) -> Tensor:
        return self.activation_post_process(torch.nn.functional.relu(torch.add(x, y)))

    def matmul(self, x: Tensor, y: Tensor) -> Tensor:
        return self.activation_post_process(torch.matmul(x, y))


class QFunctional(_QParamsMixin, torch.nn.Module):
    r"""Quantized elementwise operations with fixed output qparams (≙
    :class:`torch.ao.nn.quantized.QFunctional`), on torch.ops.qplugin.

    Use an instance instead of the ``torch.ops.quantized`` prefix. ``scale`` and ``zero_point``
    are the output qparams of ``add``, ``add_relu``, ``mul`` and ``cat`` (``add_scalar`` and
    ``mul_scalar`` derive theirs from the input, as PyTorch's); they are buffers, so they survive
    ``state_dict`` round trips and TorchScript.

    Examples::

        >>> q_add = QFunctional()
        >>> a = torch.quantize_per_tensor(torch.tensor(3.0), 1.0, 0, torch.qint32)
        >>> b = torch.quantize_per_tensor(torch.tensor(4.0), 1.0, 0, torch.qint32)
        >>> q_add.add(a, b)  # torch.ops.qplugin.add(a, b, 1.0, 0)
        tensor(7., size=(), dtype=torch.qint32, quantization_scheme=torch.per_tensor_affine,
               scale=1.0, zero_point=0)
    """

    # State-dict layout:
    #
    #   version 1 (qplugin 0.1)
    #   |--- scale       : 0-d float64 tensor
    #   |--- zero_point  : 0-d int64 tensor
    #
    #   torch.ao.nn.quantized.QFunctional writes the same keys (scale as a 0-d float32 tensor);
    #   such dicts load too (any one-element scale/zero_point), and a dict without them keeps the
    #   current values.
    _version = 1
    _FLOAT_MODULE = None  # from_float takes FloatFunctional (qplugin's, or torch.ao's)
    scale: Tensor
    zero_point: Tensor

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("scale", _scale_buffer("qplugin.nn.QFunctional", 1.0,
                                                    dtype=torch.float64))
        self.register_buffer("zero_point", torch.tensor(0, dtype=torch.long))
        self.activation_post_process = torch.nn.Identity()

    def _get_name(self):
        return "QFunctional"

    def extra_repr(self):
        return f"scale={float(self.scale)}, zero_point={int(self.zero_point)}"

    def forward(self, x):
        raise RuntimeError("qplugin.nn.QFunctional: expected a call of one of its operations"
                           " (add, add_relu, mul, cat, add_scalar, mul_scalar, matmul), got a"
                           " call of the module itself; it has no forward")

    def matmul(self, x: Tensor, y: Tensor) -> Tensor:
        r"""``torch.ops.qplugin.matmul(x, y, scale, zero_point)``: quantized ``torch.matmul``
        with the module's output qparams (exact integer product, requantized round half to
        even; torch.ao's dequantizes and multiplies in float32, within 1 of it). Being the op,
        it also runs on the PT2 door (matmul.plain)."""
        if not (x.is_quantized and y.is_quantized):
            raise ValueError("qplugin.nn.QFunctional.matmul: expected quantized inputs, got"
                             " non-quantized ones")
        return self.activation_post_process(
            torch.ops.qplugin.matmul(x, y, float(self.scale), int(self.zero_point)))

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """A QFunctional from an observed FloatFunctional (qplugin's or torch.ao's): the output
        qparams come from its activation_post_process."""
        owner = "qplugin.nn.QFunctional.from_float"
        from qplugin._ao import classes
        _check_float_module(owner, mod, (FloatFunctional,) + classes("nn.quantized.FloatFunctional"))
        scale, zero_point = _observer_qparams(owner, mod)
        new_mod = cls()
        new_mod.scale = scale
        new_mod.zero_point = zero_point
        return new_mod


# QFunctional's operations besides matmul, one row each: (name, parameters, the op's arguments
# before the output qparams, whether it requantizes to the module's qparams (then the output
# goes through activation_post_process), docstring). Each becomes a method whose body is literal
# TorchScript source (qplugin/_codegen.py), as if written out:
#   return self.activation_post_process(torch.ops.qplugin.<name>(<args>, scale, zero_point))
# or, for the scalar forms (output qparams derived from x's, not observed, as PyTorch's):
#   return torch.ops.qplugin.<name>(<args>)
_OPERATIONS = (
    ("add", "x: Tensor, y: Tensor", "x, y", True,
     "``torch.ops.qplugin.add(x, y, scale, zero_point)`` (broadcasting)."),
    ("add_scalar", "x: Tensor, y: float", "x, y", False,
     "``torch.ops.qplugin.add_scalar(x, y)``: output qparams derived from x's (not\n"
     "    observed, as PyTorch's)."),
    ("mul", "x: Tensor, y: Tensor", "x, y", True,
     "``torch.ops.qplugin.mul(x, y, scale, zero_point)`` (broadcasting)."),
    ("mul_scalar", "x: Tensor, y: float", "x, y", False,
     "``torch.ops.qplugin.mul_scalar(x, y)``: output qparams derived from x's."),
    ("cat", "x: List[Tensor], dim: int = 0", "x, dim", True,
     "``torch.ops.qplugin.cat(x, dim, scale, zero_point)``."),
    ("add_relu", "x: Tensor, y: Tensor", "x, y", True,
     "``torch.ops.qplugin.add_relu(x, y, scale, zero_point)``."),
)


def _operation(name: str, params: str, args: str, observed: bool, doc: str):
    call = f"torch.ops.qplugin.{name}({args}"
    body = (f"self.activation_post_process(\n        {call}, float(self.scale),"
            f" int(self.zero_point)))" if observed else f"{call})")
    fn = compile_function(f"def {name}(self, {params}) -> Tensor:\n"
                          f"    r\"\"\"{doc}\"\"\"\n"
                          f"    return {body}\n", name,
                          f"qplugin/nn/modules/functional_modules.py _OPERATIONS row {name}",
                          {"torch": torch, "Tensor": Tensor, "List": List}, __name__)
    fn.__qualname__ = f"QFunctional.{name}"
    return fn


for _row in _OPERATIONS:
    setattr(QFunctional, _row[0], _operation(*_row))
del _row
