"""Route rows of the elementwise ops (docs/pt2.md section 3): add / add_relu / mul / mul_relu in
their Tensor and Scalar overloads, the deprecated <base>_scalar[_relu] names, cat / cat_relu.
Output qparams:
- Tensor x Tensor: the `scale` / `zero_point` arguments;
- Tensor x Scalar: PyTorch's rules (aten/src/ATen/native/quantized/cpu/BinaryOps.cpp), the same
  arithmetic as csrc/ops/quantized_cpu/binary_kernel.cpp (add_scalar_impl / mul_scalar_impl),
  in double: `add_qparams` / `mul_qparams` (relu does not change them);
- cat: `scale` / `zero_point`, or qx[0]'s when they are None (PyTorch's default).
The output codes have the (first) input's dtype.
"""
import math

import torch

from .._route import Route, given

__all__ = ["ROUTES", "add_qparams", "mul_qparams"]

_QRANGE = {torch.uint8: (0, 255), torch.int8: (-128, 127), torch.int32: (-2 ** 31, 2 ** 31 - 1)}


def _scalar(b):
    return float(b.item()) if isinstance(b, torch.Tensor) else float(b)


def add_qparams(scale, zero_point, dtype, b):
    """(scale, zero_point) of qa + b for a scalar b: c_q = round(b / scale) is folded into the
    zero point when z - c_q fits the dtype, else the range is rescaled to keep it."""
    c = _scalar(b)
    if not math.isfinite(c) or abs(c / scale) >= 9.0e18:
        return scale, zero_point  # the op itself rejects it
    qmin, qmax = _QRANGE[dtype]
    cq = int(round(c / scale))  # round half to even, as std::nearbyint
    z = zero_point
    if qmin > z - cq:
        return (float(qmax) - (z - cq)) / (float(qmax) - qmin) * scale, qmin
    if qmax < z - cq:
        return (float(z - cq) - qmin) / (float(qmax) - qmin) * scale, qmax
    return scale, z - cq


def mul_qparams(scale, zero_point, dtype, b):
    """(scale, zero_point) of qa * b for a scalar b: codes kept with scale |b| * scale (b < 0:
    the codes mirrored, zero point qmax + qmin - z); b == 0: (1.0, 0)."""
    c = _scalar(b)
    qmin, qmax = _QRANGE[dtype]
    if c > 0.0:
        return c * scale, zero_point
    if c == 0.0:
        return 1.0, 0
    if c < 0.0:
        return abs(c) * scale, qmax - (zero_point - qmin)
    return scale, zero_point  # NaN: the op itself rejects it


def _scalar_out(rule):
    def out(a):
        qa = a["qa"]
        d = qa.int_data.dtype
        s, z = rule(qa.scale, qa.zero_point, d, a["b"])
        return float(s), int(z), d
    return out


def _cat_out(a):
    x0 = a["qx"][0]
    s = a.get("scale")
    z = a.get("zero_point")
    return (float(x0.scale if s is None else s), int(x0.zero_point if z is None else z),
            x0.int_data.dtype)


def _rows():
    rows = []
    for op in ("add", "add_relu", "mul", "mul_relu"):
        rule = mul_qparams if op.startswith("mul") else add_qparams
        rows += [
            Route(legacy=op, plain=f"{op}.plain",
                  out=given("scale", "zero_point", dtype="input:qa")),
            Route(legacy=f"{op}.Scalar", plain=f"{op}.Scalar_plain", out=_scalar_out(rule)),
            Route(legacy=f"{op}.Scalar2", plain=f"{op}.Scalar2_plain", out=_scalar_out(rule)),
        ]
    for op in ("add_scalar", "add_scalar_relu", "mul_scalar", "mul_scalar_relu"):
        rule = mul_qparams if op.startswith("mul") else add_qparams
        rows += [
            Route(legacy=op, plain=f"{op}.plain", out=_scalar_out(rule)),
            Route(legacy=f"{op}.Tensor", plain=f"{op}.Tensor_plain", out=_scalar_out(rule)),
        ]
    for op in ("cat", "cat_relu"):
        rows.append(Route(legacy=op, plain=f"{op}.plain", out=_cat_out))
    return rows


ROUTES = _rows()
