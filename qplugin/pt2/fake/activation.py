"""Fake kernels of the activations' `.plain` overloads, one per op of the activation table
(qplugin/_tables/activation.py) plus prelu: the output has the input's shape and code dtype, in
the row's `output_format` (the input's suggested memory format, or contiguous). Checks what the
C++ kernel checks up front: code dtypes, input and output qparams, and the op's scalar arguments.
Changes with: csrc/ops/activation.cpp, csrc/ops/quantized_cpu/activation_kernel.cpp.
"""
import math

import torch

from qplugin._tables.activation import ROWS
from ._qargs import check_codes, check_out_qparams, keep_format

_FINITE = {"elu": ("alpha", "scale", "input_scale"), "celu": ("alpha",),
           "leaky_relu": ("negative_slope",), "softplus": ("beta",)}


def _check_op_args(op, x, a):
    """The op's own argument checks (activation_kernel.cpp), on the bound arguments `a`."""
    for name in _FINITE.get(op, ()):
        if name in a:
            v = float(a[name])
            torch._check(math.isfinite(v),
                         lambda: f"qplugin::{op}: expected a finite {name}, got {v}")
    if op == "celu":
        torch._check(float(a.get("alpha", 1)) != 0.0,
                     lambda: "qplugin::celu: expected a nonzero alpha, got 0")
    if op == "softplus":
        torch._check(float(a.get("beta", 1)) != 0.0,
                     lambda: "qplugin::softplus: expected a nonzero beta, got 0")
    if op == "clamp":
        torch._check(a.get("min") is not None or a.get("max") is not None,
                     lambda: "qplugin::clamp: expected at least one of min and max, got neither")
    if op == "gelu":
        ap = a.get("approximate", "none")
        torch._check(ap in ("none", "tanh"), lambda: (
            f"qplugin::gelu: expected approximate 'none' or 'tanh', got '{ap}'"))
    if op == "softmax":
        nd = max(x.dim(), 1)
        d = a["dim"]
        torch._check(-nd <= d < nd,
                     lambda: f"qplugin::softmax: expected dim in [{-nd}, {nd - 1}], got {d}")


def _register(op, input_arg, takes_output_qparams, output_format):
    schema = getattr(torch.ops.qplugin, op).plain._schema
    names = [a.name for a in schema.arguments]
    defaults = {a.name: a.default_value for a in schema.arguments if a.has_default_value()}

    def fake(*args, **kwargs):
        a = dict(defaults)
        a.update(zip(names, args))
        a.update(kwargs)
        x = a[input_arg]
        check_codes(op, input_arg, x, a[input_arg + "_scale"], a[input_arg + "_zero_point"])
        if takes_output_qparams:
            check_out_qparams(op, a["output_scale"], a["output_zero_point"], x.dtype)
        _check_op_args(op, x, a)
        fmt = keep_format(x) if output_format == "keep" else torch.contiguous_format
        return torch.empty_like(x, memory_format=fmt)

    fake.__name__ = f"{op}_plain_fake"
    torch.library.register_fake(f"qplugin::{op}.plain")(fake)


_seen = set()
for _row in ROWS:
    if _row.op not in _seen:
        _seen.add(_row.op)
        _register(_row.op, _row.input_arg, _row.takes_output_qparams, _row.output_format)


@torch.library.register_fake("qplugin::prelu.plain")
def _prelu_plain_fake(qx, qx_scale, qx_zero_point, weight, weight_scale, weight_zero_point,
                      output_scale, output_zero_point):
    check_codes("prelu", "qx", qx, qx_scale, qx_zero_point, (torch.uint8,))
    check_codes("prelu", "weight", weight, weight_scale, weight_zero_point,
                (torch.uint8, torch.int8))
    torch._check(qx.dim() >= 1,
                 lambda: "qplugin::prelu: expected qx of rank >= 1, got a 0-d tensor")
    torch._check(weight.dim() <= 1, lambda: (
        f"qplugin::prelu: expected a 0-d or 1-d weight, got {weight.dim()}-D (shape "
        f"{list(weight.shape)})"))
    c = qx.shape[1] if qx.dim() >= 2 else qx.shape[0]
    nw = weight.numel()
    torch._check(nw == 1 or nw == c, lambda: (
        f"qplugin::prelu: expected weight with 1 value or one per channel ({c}), got {nw}"))
    check_out_qparams("prelu", output_scale, output_zero_point, torch.uint8)
    return torch.empty_like(qx, memory_format=keep_format(qx))
