"""Route rows of the activations (docs/pt2.md section 3), made from the activation table
(qplugin/_tables/activation.py), plus prelu. Output qparams of `<op>.plain`:
- ops without output qparams (relu6, threshold, clamp/hardtanh): the input's;
- ops with output_scale/output_zero_point: those arguments; where they are optional (hardsigmoid,
  tanh, gelu) and None, PyTorch's defaults from the row's `output_qparams`: the fixed
  [0, 1] / [-1, 1] qparams per code dtype (sigmoid-like, tanh) or the input's (gelu).
The output codes have the input's dtype (prelu: uint8).
"""
import torch

from qplugin._tables.activation import ROWS
from .._route import Route, given, same_as_input

__all__ = ["ROUTES", "route_out"]

_QTYPE_OF = {torch.uint8: torch.quint8, torch.int8: torch.qint8, torch.int32: torch.qint32}


def _fixed(table, arg):
    def out(a):
        d = a[arg].int_data.dtype
        s, z = table[_QTYPE_OF[d]]
        return float(s), int(z), d
    return out


def route_out(row):
    """The output-qparams rule of an activation row (see the module docstring)."""
    if not row.takes_output_qparams:
        return same_as_input(row.input_arg)
    if isinstance(row.output_qparams, dict):
        default = _fixed(row.output_qparams, row.input_arg)
    elif row.output_qparams == "input":
        default = same_as_input(row.input_arg)
    else:  # "given": required arguments, no default
        default = None
    return given("output_scale", "output_zero_point", dtype=f"input:{row.input_arg}",
                 default=default)


def _rows():
    out, seen = [], set()
    for row in ROWS:
        if row.op in seen:  # hardtanh is clamp
            continue
        seen.add(row.op)
        out.append(Route(legacy=row.op, plain=f"{row.op}.plain", out=route_out(row),
                         drop=row.drop))
    out.append(Route(legacy="prelu", plain="prelu.plain",
                     out=given("output_scale", "output_zero_point", dtype=torch.uint8)))
    return out


ROUTES = _rows()
