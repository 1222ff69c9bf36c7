"""Quantized activation modules (≙ torch.ao.nn.quantized.{ReLU6, Hardswish, ELU, LeakyReLU,
Sigmoid, Softmax, Dropout}) and the extensions PyTorch lacks for quantized tensors (SiLU, GELU,
Tanh, Mish, Softplus), on torch.ops.qplugin. Output qparams are buffers (they survive state_dict
round trips, unlike PyTorch's ELU/Sigmoid/Softmax attributes); every module is TorchScript-able.

The modules whose row in qplugin/_tables/activation.py says `generated=True` are made by
`_make_module` below from that row (constructor, forward as literal TorchScript source generated
by qplugin/_codegen.py, repr, from_float); the others are written out here. Changes with: qplugin/_tables/activation.py,
qplugin/nn/_functional_activation.py, tests/activation/.
"""
import inspect
from typing import Any, List, Optional

import torch

from ..._codegen import compile_function
from ..._tables import activation as _table
from .utils import (
    _check_bool,
    _check_float_dtype,
    _check_float_module,
    _check_real,
    _check_scale,
    _check_zero_point,
    _observer_qparams,
    _QParamsMixin,
    _QuantizedName,
    _scale_buffer,
)

__all__: List[str] = [row.module for row in _table.ROWS if row.module] + ["Dropout"]


class _OutputQParams(_QuantizedName, _QParamsMixin):
    """Buffers `scale` and `zero_point` (int64), the output qparams; versioned state-dict loading
    through _QParamsMixin. `scale` is float64 (the float given is kept exactly, as PyTorch's
    attributes keep it) unless the module takes factory device/dtype arguments (Hardswish: the
    factory dtype, float32 by default, as torch.ao's buffer)."""

    # State-dict layout (every module of this file with output qparams):
    #
    #   version 1 (qplugin 0.1)
    #   |--- scale       : 0-d float64 tensor (Hardswish: the factory dtype, float32 by default)
    #   |--- zero_point  : 0-d int64 tensor
    #
    #   PyTorch's LeakyReLU and Hardswish write the same keys (float32 scale): loadable. PyTorch's
    #   ELU, Sigmoid and Softmax keep their qparams as attributes (empty state dict): loading such
    #   a dict keeps the constructor's values. Loading accepts one-element scale/zero_point of any
    #   shape and dtype (PyTorch's Hardswish zero_point takes the factory dtype, so it may be
    #   floating). Constructor options (alpha, negative_slope, dim, approximate, ...) are not
    #   state, as in torch.nn.
    _version = 1
    scale: torch.Tensor
    zero_point: torch.Tensor

    def _init_qparams(self, owner: str, scale: Any, zero_point: Any, device=None,
                      dtype=torch.float64) -> None:
        scale = _check_scale(owner, scale)
        zero_point = _check_zero_point(owner, zero_point)
        self.register_buffer("scale", _scale_buffer(owner, scale, device=device, dtype=dtype))
        self.register_buffer("zero_point", torch.tensor(zero_point, device=device,
                                                        dtype=torch.long))

    def _qparams_repr(self) -> str:
        return f"scale={float(self.scale)}, zero_point={int(self.zero_point)}"

    @classmethod
    def _observed(cls, mod):
        owner = f"qplugin.nn.{cls.__name__}.from_float"
        _check_float_module(owner, mod, (cls._FLOAT_MODULE,))
        return _observer_qparams(owner, mod)


# ---------------------------------------------------------------------------------------------
# Generated modules: one class per `generated=True` row of the table.

def _check_arg(owner: str, arg: _table.Arg, value: Any) -> Any:
    if arg.check == "any":  # as the torch.nn parent (e.g. SiLU's inplace)
        return value
    if arg.check == "bool":
        return _check_bool(owner, value, arg.name)
    if arg.check.startswith("choice:"):
        choices = arg.check[len("choice:"):].split("|")
        if value not in choices:
            raise ValueError(f"{owner}: expected {arg.name} "
                             + " or ".join(repr(c) for c in choices) + f", got {value!r}")
        return value
    value = _check_real(owner, value, arg.name)
    if arg.check == "nonzero_real" and value == 0.0:
        raise ValueError(f"{owner}: expected a nonzero {arg.name}, got 0.0")
    return value


def _make_module(row: _table.Activation) -> type:
    """The qplugin.nn class of a `generated=True` row: `<Module>(scale, zero_point, *args)` with
    args = row.module_args (+ device, dtype when the scale takes the factory dtype), deriving
    from the torch.nn class. Its forward is literal TorchScript source generated from the row
    (qplugin/_codegen.py): ``torch.ops.qplugin.<op>(input, scale, zero_point, *args)``."""
    torch_cls = row.torch_module
    factory = row.scale_dtype is None
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
              inspect.Parameter("scale", inspect.Parameter.POSITIONAL_OR_KEYWORD),
              inspect.Parameter("zero_point", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    params += [inspect.Parameter(a.name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                 default=a.default) for a in row.module_args]
    if factory:
        params += [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None)
                   for n in ("device", "dtype")]
    signature = inspect.Signature(params)

    def __init__(self, *args, **kwargs) -> None:
        owner = f"qplugin.nn.{row.module}"
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        values = bound.arguments
        scale = _check_scale(owner, values["scale"])
        zero_point = _check_zero_point(owner, values["zero_point"])
        checked = [_check_arg(owner, a, values[a.name]) for a in row.module_args]
        if factory:
            _check_float_dtype(owner, values["dtype"])
        torch_cls.__init__(self, *[v for a, v in zip(row.module_args, checked) if a.torch_arg])
        if factory:
            self._init_qparams(owner, scale, zero_point, values["device"], values["dtype"])
        else:
            self._init_qparams(owner, scale, zero_point, dtype=row.scale_dtype)

    __init__.__signature__ = signature

    call = "".join(f", self.{a.name}" for a in row.module_args if a.to_op)
    forward = compile_function(
        "def forward(self, input: torch.Tensor) -> torch.Tensor:\n"
        f"    return torch.ops.qplugin.{row.op}(input, float(self.scale), int(self.zero_point)"
        f"{call})\n", "forward", f"qplugin/_tables/activation.py row {row.name}",
        {"torch": torch}, __name__)
    forward.__qualname__ = f"{row.module}.forward"

    def _get_name(self):
        return row.repr_name

    def extra_repr(self):
        text = self._qparams_repr()
        for a in row.module_args:
            if a.repr:
                text += f", {a.name}={getattr(self, a.name)!r}"
        return text

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """From an observed float module (qplugin.quantization.prepare or torch.ao's output): the
        output qparams come from its activation_post_process, the arguments from the module."""
        scale, zero_point = cls._observed(mod)
        return cls(scale, zero_point, *[getattr(mod, a.name) for a in row.module_args])

    @classmethod
    def from_reference(cls, mod, scale, zero_point):
        _check_float_module(f"qplugin.nn.{row.module}.from_reference", mod, (cls._FLOAT_MODULE,))
        return cls(float(scale), zero_point, *[getattr(mod, a.name) for a in row.module_args])

    what = "an extension (PyTorch has no quantized module)" if row.extension else (
        f"≙ :class:`torch.ao.nn.quantized.{row.module}`")
    args = "".join(f"\n        {a.name}: Default: ``{a.default!r}``" for a in row.module_args)
    if factory:
        args += ("\n        device, dtype: factory arguments of the ``scale`` buffer (dtype:"
                 " floating point only; ``zero_point`` is always int64)")
    doc = (f"Quantized :class:`~torch.nn.{torch_cls.__name__}`: {row.summary}; {what}.\n\n"
           f"    Args:\n        scale, zero_point: output qparams{args}\n\n"
           f"    Generated from its row in qplugin/_tables/activation.py.\n    ")
    namespace = {"__init__": __init__, "forward": forward, "_get_name": _get_name,
                 "from_float": from_float, "from_reference": from_reference,
                 "_FLOAT_MODULE": torch_cls, "__doc__": doc, "__module__": __name__,
                 "__qualname__": row.module}
    if row.repr_qparams:
        namespace["extra_repr"] = extra_repr
    return type(row.module, (_OutputQParams, torch_cls), namespace)


for _row in _table.ROWS:
    if _row.generated:
        globals()[_row.module] = _make_module(_row)
del _row


# ---------------------------------------------------------------------------------------------
# Written-out modules: no output qparams (ReLU6, Dropout) or constructors PyTorch shaped
# differently (LeakyReLU, Sigmoid, Softmax).


class ReLU6(_QuantizedName, torch.nn.ReLU):
    r"""Applies :math:`\text{ReLU6}(x) = \min(\max(x_0, x), q(6))` element-wise, where
    :math:`x_0` is the input's zero point and :math:`q(6)` the quantized representation of 6.

    The output keeps the input's scale and zero point (no requantization), so it has no state.
    Same interface as :class:`torch.ao.nn.quantized.ReLU6`.

    Args:
        inplace: write the result into the input tensor. Default: ``False``

    Shape:
        - Input: :math:`(N, *)`, a quantized tensor (quint8, qint8 or qint32)
        - Output: :math:`(N, *)`, same shape and qparams as the input
    """

    _version = 1
    _FLOAT_MODULE = torch.nn.ReLU6

    def __init__(self, inplace: bool = False) -> None:
        _check_bool("qplugin.nn.ReLU6", inplace, "inplace")
        super().__init__(inplace)
        self.inplace = inplace

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return torch.ops.qplugin.relu6(input, self.inplace)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """A ReLU6 from an (observed) torch.nn.ReLU6; its observer is not needed: ReLU6 keeps the
        input's qparams. `use_precomputed_fake_quant` is accepted for torch.ao compatibility."""
        _check_float_module("qplugin.nn.ReLU6.from_float", mod, (cls._FLOAT_MODULE,))
        return cls(bool(mod.inplace))


class LeakyReLU(_OutputQParams, torch.nn.LeakyReLU):
    r"""Quantized :class:`~torch.nn.LeakyReLU` (≙ :class:`torch.ao.nn.quantized.LeakyReLU`).

    Args:
        scale, zero_point: output qparams
        negative_slope: slope of the negative part. Default: 1e-2
        inplace: accepted for compatibility; as PyTorch's, a new tensor is returned when the
            output qparams differ from the input's. Default: ``False``
        device, dtype: accepted for compatibility (the buffers are float64/int64 on the CPU)
    """

    _FLOAT_MODULE = torch.nn.LeakyReLU

    def __init__(self, scale: float, zero_point: int, negative_slope: float = 1e-2,
                 inplace: bool = False, device=None, dtype=None) -> None:
        owner = "qplugin.nn.LeakyReLU"
        negative_slope = _check_real(owner, negative_slope, "negative_slope")
        _check_bool(owner, inplace, "inplace")
        super().__init__(negative_slope, inplace)
        self._init_qparams(owner, scale, zero_point)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return torch.ops.qplugin.leaky_relu(input, self.negative_slope, self.inplace,
                                            float(self.scale), int(self.zero_point))

    def extra_repr(self):
        return f"{self._qparams_repr()}, negative_slope={self.negative_slope}" + (
            ", inplace=True" if self.inplace else "")

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        scale, zero_point = cls._observed(mod)
        return cls(scale, zero_point, mod.negative_slope, mod.inplace)

    @classmethod
    def from_reference(cls, mod, scale, zero_point):
        return cls(float(scale), zero_point, mod.negative_slope, mod.inplace)


class Sigmoid(_OutputQParams, torch.nn.Sigmoid):
    r"""Quantized :class:`~torch.nn.Sigmoid` (≙ :class:`torch.ao.nn.quantized.Sigmoid`, same
    constructor: ``Sigmoid(output_scale, output_zero_point)``; the values are the buffers
    ``scale``/``zero_point``, also readable as ``output_scale``/``output_zero_point``)."""

    _FLOAT_MODULE = torch.nn.Sigmoid
    __jit_unused_properties__ = ["output_scale", "output_zero_point"]

    def __init__(self, output_scale: float, output_zero_point: int) -> None:
        super().__init__()
        self._init_qparams("qplugin.nn.Sigmoid", output_scale, output_zero_point)

    @property
    def output_scale(self) -> float:
        return float(self.scale)

    @property
    def output_zero_point(self) -> int:
        return int(self.zero_point)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return torch.ops.qplugin.sigmoid(input, float(self.scale), int(self.zero_point))

    def _get_name(self):
        return "Sigmoid"

    def extra_repr(self):
        return self._qparams_repr()

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """From an observed torch.nn.Sigmoid (prepare attaches PyTorch's fixed [0, 1] qparams:
        scale 1/256, zero point 0)."""
        scale, zero_point = cls._observed(mod)
        return cls(scale, zero_point)


class Softmax(_OutputQParams, torch.nn.Softmax):
    r"""Quantized :class:`~torch.nn.Softmax` (≙ :class:`torch.ao.nn.quantized.Softmax`).

    Args:
        dim: the softmax dimension (None: PyTorch's legacy choice, with its warning)
        scale, zero_point: output qparams. Defaults: 1.0, 0
    """

    _FLOAT_MODULE = torch.nn.Softmax

    def __init__(self, dim: Optional[int] = None, scale: float = 1.0, zero_point: int = 0,
                 device=None, dtype=None) -> None:
        super().__init__(dim)
        self._init_qparams("qplugin.nn.Softmax", scale, zero_point)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        dim = self.dim
        if dim is None:
            stacklevel = 3
            dim = torch.nn.functional._get_softmax_dim("softmax", input.dim(), stacklevel)
        return torch.ops.qplugin.softmax(input, dim, float(self.scale), int(self.zero_point))

    def extra_repr(self):
        return f"dim={self.dim}, {self._qparams_repr()}"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        scale, zero_point = cls._observed(mod)
        return cls(mod.dim, scale, zero_point)


class Dropout(_QuantizedName, torch.nn.Dropout):
    r"""Quantized :class:`~torch.nn.Dropout` (≙ :class:`torch.ao.nn.quantized.Dropout`): the
    identity (inference), keeping the input's qparams."""

    _version = 1
    _FLOAT_MODULE = torch.nn.Dropout

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return input

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        _check_float_module("qplugin.nn.Dropout.from_float", mod, (cls._FLOAT_MODULE,))
        return cls(mod.p, mod.inplace)

    @classmethod
    def from_reference(cls, mod, scale, zero_point):
        return cls(mod.p, mod.inplace)
