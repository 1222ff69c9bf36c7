"""Op table of the activation family: the unary elementwise ops on per-tensor quantized tensors
(schemas: csrc/ops/activation*.cpp; kernels: csrc/ops/quantized_cpu/activation*_kernel.cpp).

Adding a unary byte-table activation (docs/architecture.md, "Adding an op"): the C++ kernel and
schema, then one row here with `module=` and `functional="generated"`. The module class, the
functional form, the qplugin.nn export, the float -> qplugin mapping entry and the exactness tests
(tests/activation/test_table.py) come from the row; tests/test_architecture.py checks the rest
(registered op, schema, bench case).

The PyTorch 2 door (docs/pt2.md section 3) also comes from the row: the `<op>.plain` overload's
fake kernel (qplugin/pt2/fake/activation.py), its route row with the output-qparams rule
(qplugin/pt2/routes/activation.py) and its byte-identity / opcheck / bad-input tests
(tests/pt2/test_plain_activation.py) read `input_arg`, `takes_output_qparams`, `output_qparams`,
`output_format` and `drop`; the C++ side is the op's `.plain` schema (csrc/ops/activation.cpp,
pinned in tests/pt2/schemas/activation.txt) and its two thin door wrappers around one QArg core
(csrc/ops/quantized_cpu/activation_kernel.cpp).

Row fields: see `Activation`. Test cases (`Case`) give the op's arguments after the input, with
SCALE/ZP standing for output qparams chosen by the test, and the reference's extra arguments.
"""
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional, Tuple, Union

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["Activation", "Arg", "Case", "ROWS", "BY_NAME", "SCALE", "ZP", "FIXED_0TO1",
           "FIXED_TANH"]

SCALE = "<output scale>"
ZP = "<output zero point>"

# PyTorch's fixed output qparams of sigmoid/hardsigmoid (range [0, 1]) and tanh ([-1, 1]) on a
# quantized tensor (aten/src/ATen/native/quantized/cpu: qsigmoid.cpp, qtanh.cpp).
FIXED_0TO1 = {torch.quint8: (1.0 / 256, 0), torch.qint8: (1.0 / 256, -128),
              torch.qint32: (2.0 ** -32, 0)}
FIXED_TANH = {torch.quint8: (2.0 / 256, 128), torch.qint8: (2.0 / 256, 0),
              torch.qint32: (2.0 ** -31, 0)}

# Output qparams when the caller gives none: "given" (required arguments), "input" (the input's),
# or a fixed table dtype -> (scale, zero_point).
QParams = Union[str, Dict[torch.dtype, Tuple[float, int]]]


@dataclass(frozen=True)
class Case:
    """One test case: `torch.ops.qplugin.<op>(x, *args)` must equal `reference(dequantized x,
    *ref_args, **ref_kwargs)` quantized with the output qparams, code for code (exact=True)."""
    args: Tuple[Any, ...]
    ref_args: Tuple[Any, ...] = ()
    ref_kwargs: Dict[str, Any] = field(default_factory=dict)
    exact: bool = True


@dataclass(frozen=True)
class Arg:
    """An argument of a generated module's constructor after (scale, zero_point), stored by the
    torch.nn parent (`torch_arg`) under the same name; checked with `check` ("real",
    "nonzero_real", "bool", "choice:a|b", "any": unchecked, as the torch.nn parent); shown in the
    repr when `repr`; passed on to the op after the output qparams (and taken by the generated
    functional form, same name and default) when `to_op`."""
    name: str
    default: Any
    check: str = "real"
    repr: bool = True
    torch_arg: bool = True
    to_op: bool = True

    @property
    def annotation(self) -> str:
        """Its TorchScript type in generated code."""
        if self.check in ("real", "nonzero_real"):
            return "float"
        if self.check == "bool":
            return "bool"
        if self.check.startswith("choice:"):
            return "str"
        raise ValueError(f"{self.name}: check {self.check!r} has no TorchScript type")


@dataclass(frozen=True)
class Activation:
    name: str                                  # qplugin.nn.functional.<name>
    op: str                                    # torch.ops.qplugin.<op>
    reference: Callable[..., torch.Tensor]     # the float op (float64 in the tests)
    output_qparams: QParams                    # see QParams
    cases: Tuple[Case, ...]
    summary: str                               # first docstring line of the generated surface
    schema: Optional[str] = None               # the extension's schema (None: mirrors torch_op)
    torch_op: Optional[str] = None             # torch.ops.quantized.<torch_op>, same schema
    torch_on_quantized: Optional[Callable] = None  # PyTorch's aten path on a quantized tensor
                                               # (default output qparams), if no torch_op
    functional: str = "written"                # "generated": f(input, scale, zero_point, *args)
                                               # with args = module_args passed to the op
    module: Optional[str] = None               # qplugin.nn.<module>
    torch_module: Optional[type] = None        # the float class it converts from (mapping key)
    repr_name: Optional[str] = None            # _get_name() of the module
    module_args: Tuple[Arg, ...] = ()          # generated modules: arguments after the qparams
    generated: bool = False                    # module produced by the class factory
    repr_qparams: bool = True                  # generated modules: qparams in the repr
    scale_dtype: Optional[torch.dtype] = torch.float64  # None: the factory dtype (device/dtype)
    extension: bool = False                    # no quantized counterpart in PyTorch
    # The PyTorch 2 door (`<op>.plain`, docs/pt2.md section 3):
    input_arg: str = "qx"                      # the schema's name of the quantized input
    takes_output_qparams: bool = True          # output_scale/output_zero_point arguments (when
                                               # None or absent: `output_qparams` gives them)
    output_format: str = "keep"                # "keep": the input's suggested memory format;
                                               # "contiguous": always contiguous
    drop: Tuple[str, ...] = ()                 # legacy arguments `.plain` does not take


def _sigmoid(v):
    return torch.sigmoid(v)


def _given_qparams_extension(name: str, reference: Callable[..., torch.Tensor], summary: str,
                             module: str, torch_module: type) -> Activation:
    """The row of an extension op taking (qx, output_scale, output_zero_point) only, whose float
    module has just an `inplace` flag (accepted and ignored: the op makes a new tensor)."""
    return Activation(
        name=name, op=name, reference=reference, output_qparams="given",
        schema=f"qplugin::{name}(Tensor qx, float output_scale, int output_zero_point) -> Tensor",
        cases=(Case(args=(SCALE, ZP)),), summary=summary, functional="generated", module=module,
        torch_module=torch_module, repr_name=f"Quantized{module}",
        module_args=(Arg("inplace", False, check="any", repr=False, to_op=False),),
        generated=True, extension=True)


def _aten_path_extension(name: str, reference: Callable[..., torch.Tensor],
                         output_qparams: QParams, summary: str, extra_schema_args: str = "",
                         extra_cases: Tuple[Case, ...] = (), **more: Any) -> Activation:
    """The row of an extension op whose output qparams are optional (default: `output_qparams`,
    as PyTorch's aten path: `reference` on a quantized tensor); its cases run without and with
    output qparams, then `extra_cases`."""
    return Activation(
        name=name, op=name, reference=reference, output_qparams=output_qparams,
        torch_on_quantized=reference,
        schema=f"qplugin::{name}(Tensor qx, float? output_scale=None, "
               f"int? output_zero_point=None{extra_schema_args}) -> Tensor",
        cases=(Case(args=()), Case(args=(SCALE, ZP))) + extra_cases, summary=summary, **more)


ROWS: Tuple[Activation, ...] = (
    Activation(
        name="relu6", op="relu6", torch_op="relu6", reference=F.relu6, output_qparams="input",
        cases=(Case(args=(False,)),), takes_output_qparams=False, drop=("inplace",),
        summary="``min(max(x, 0), 6)``, keeping the input's qparams",
        module="ReLU6", torch_module=nn.ReLU6),
    Activation(
        name="hardswish", op="hardswish", torch_op="hardswish", reference=F.hardswish,
        output_qparams="given", cases=(Case(args=(SCALE, ZP)),), input_arg="input",
        summary="``x * relu6(x + 3) / 6``",
        functional="generated", module="Hardswish", torch_module=nn.Hardswish,
        repr_name="QuantizedHardswish", generated=True, repr_qparams=False, scale_dtype=None),
    Activation(
        name="elu", op="elu", torch_op="elu", reference=F.elu, output_qparams="given",
        cases=(Case(args=(SCALE, ZP, 0.5), ref_args=(0.5,)),), input_arg="self",
        output_format="contiguous",
        summary="``max(0, x) + min(0, alpha * (exp(x) - 1))``",
        functional="generated", module="ELU", torch_module=nn.ELU, repr_name="QuantizedELU",
        module_args=(Arg("alpha", 1.0),), generated=True, repr_qparams=False),
    Activation(
        name="leaky_relu", op="leaky_relu", torch_op="leaky_relu", reference=F.leaky_relu,
        output_qparams="input",
        cases=(Case(args=(0.1, False, SCALE, ZP), ref_args=(0.1,)),), drop=("inplace",),
        summary="``max(0, x) + negative_slope * min(0, x)``",
        module="LeakyReLU", torch_module=nn.LeakyReLU),
    Activation(
        name="sigmoid", op="sigmoid", torch_op="sigmoid", reference=_sigmoid,
        output_qparams=FIXED_0TO1, cases=(Case(args=(SCALE, ZP)),),
        summary="``1 / (1 + exp(-x))``", module="Sigmoid", torch_module=nn.Sigmoid),
    _aten_path_extension("hardsigmoid", F.hardsigmoid, FIXED_0TO1, "``relu6(x + 3) / 6``"),
    Activation(
        name="hardtanh", op="clamp", torch_op="clamp", reference=torch.clamp,
        output_qparams="input", cases=(Case(args=(-1.0, 1.0), ref_args=(-1.0, 1.0)),),
        takes_output_qparams=False,
        summary="``clamp(x, min_val, max_val)``"),
    Activation(
        name="clamp", op="clamp", torch_op="clamp", reference=torch.clamp,
        output_qparams="input", cases=(Case(args=(-0.52, 0.77), ref_args=(-0.52, 0.77)),),
        takes_output_qparams=False,
        summary="``clamp(x, min, max)``"),
    Activation(
        name="celu", op="celu", torch_op="celu", reference=F.celu, output_qparams="given",
        cases=(Case(args=(SCALE, ZP, 1.5), ref_args=(1.5,)),), input_arg="self",
        output_format="contiguous",
        summary="``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``"),
    Activation(
        name="threshold", op="threshold", torch_op="threshold", reference=F.threshold,
        output_qparams="input", cases=(Case(args=(0.13, -0.5), ref_args=(0.13, -0.5)),),
        takes_output_qparams=False,
        summary="``x if x > threshold else value``"),
    _aten_path_extension(
        "tanh", torch.tanh, FIXED_TANH, "``tanh(x)``", module="Tanh", torch_module=nn.Tanh,
        repr_name="QuantizedTanh", generated=True, extension=True),
    _aten_path_extension(
        "gelu", F.gelu, "input", extra_schema_args=', str approximate="none"',
        extra_cases=(Case(args=(SCALE, ZP, "tanh"), ref_kwargs={"approximate": "tanh"}),),
        summary="``x * Phi(x)`` (``approximate`` ``'none'``: erf; ``'tanh'``)",
        module="GELU", torch_module=nn.GELU, repr_name="QuantizedGELU",
        module_args=(Arg("approximate", "none", check="choice:none|tanh"),), generated=True,
        extension=True),
    _given_qparams_extension(
        "silu", F.silu, "``x * sigmoid(x)`` (PyTorch has none for quantized tensors, its issue "
        "73507)", "SiLU", nn.SiLU),
    _given_qparams_extension("mish", F.mish, "``x * tanh(softplus(x))``", "Mish", nn.Mish),
    Activation(
        name="softplus", op="softplus", reference=F.softplus, output_qparams="given",
        schema="qplugin::softplus(Tensor qx, float output_scale, int output_zero_point, "
               "Scalar beta=1, Scalar threshold=20) -> Tensor",
        cases=(Case(args=(SCALE, ZP, 2.0, 3.0), ref_args=(2.0, 3.0)),),
        summary="``log(1 + exp(beta x)) / beta`` (linear where ``beta x > threshold``)",
        functional="generated", module="Softplus", torch_module=nn.Softplus,
        repr_name="QuantizedSoftplus",
        module_args=(Arg("beta", 1.0, check="nonzero_real"), Arg("threshold", 20.0)),
        generated=True, extension=True),
    Activation(
        name="softmax", op="softmax", torch_op="softmax", reference=torch.softmax,
        output_qparams="given", cases=(Case(args=(1, SCALE, ZP), ref_args=(1,), exact=False),),
        output_format="contiguous",
        summary="``exp(x) / sum(exp(x), dim)``", module="Softmax", torch_module=nn.Softmax),
)

BY_NAME: Dict[str, Activation] = {row.name: row for row in ROWS}
