"""Checks shared by the fake kernels of the `.plain` overloads: the Python mirror of
csrc/common/qarg.h's QArg::plain and checks.h's check_output_qparams, with the same messages
("qplugin::<op>.plain: expected ..., got ..."), so a traced or compiled graph rejects bad
arguments as eagerly as the C++ kernel does. Only metadata is read (dtype, shape, Python
scalars): no data access, safe on fake tensors and symbolic shapes.
Changes with: csrc/common/qarg.h, csrc/common/checks.h.
"""
import math
import struct

import torch
from torch._prims_common import suggest_memory_format

__all__ = ["QRANGE", "QTYPE", "ALL", "check_codes", "check_out_qparams", "keep_format",
           "suggest_memory_format"]

QRANGE = {torch.uint8: (0, 255), torch.int8: (-128, 127), torch.int32: (-2 ** 31, 2 ** 31 - 1)}
# The quantized dtype plain codes of each dtype stand for (messages).
QTYPE = {torch.uint8: "quint8", torch.int8: "qint8", torch.int32: "qint32"}
ALL = (torch.uint8, torch.int8, torch.int32)


def _name(dtype):
    return str(dtype).replace("torch.", "")


def _c10_name(dtype):
    # c10::toString spelling used by the C++ messages (Byte, Char, Int).
    return {torch.uint8: "Byte", torch.int8: "Char", torch.int32: "Int"}.get(dtype, _name(dtype))


def _scale_ok(scale):
    """checks.h: finite, positive, and so is its float32 value and that value's reciprocal."""
    try:
        s = float(scale)
    except (TypeError, ValueError):
        return False
    if not (math.isfinite(s) and s > 0.0):
        return False
    try:
        f = struct.unpack("f", struct.pack("f", s))[0]
        if not f > 0.0:
            return False
        struct.pack("f", 1.0 / f)
    except (OverflowError, ZeroDivisionError):
        return False
    return True


def check_codes(op, arg, x, scale, zero_point, dtypes=ALL):
    """`x` (plain codes of one of `dtypes`) with its scale and zero point, as QArg::plain."""
    want = " or ".join(_c10_name(d) for d in dtypes)
    torch._check(not x.is_quantized, lambda: (
        f"qplugin::{op}.plain: expected {arg} to be a plain tensor of codes ({want}), got a "
        f"quantized {x.dtype} tensor; use qplugin::{op} for quantized tensors, or pass "
        f"x.int_repr() with its qparams"))
    torch._check(x.dtype in dtypes, lambda: (
        f"qplugin::{op}.plain: expected {arg} of dtype {want} (quantized codes), got "
        f"{_c10_name(x.dtype)}" + ("; quantize it first (qplugin.pt2.QTensor / "
                                   "torch.ops.qplugin.quantize_per_tensor.plain)"
                                   if x.dtype.is_floating_point else "")))
    torch._check(_scale_ok(scale), lambda: (
        f"qplugin::{op}.plain: expected a finite, positive {arg}_scale, got {scale}"))
    lo, hi = QRANGE[x.dtype]
    torch._check(lo <= zero_point <= hi, lambda: (
        f"qplugin::{op}.plain: expected {arg}_zero_point in [{lo}, {hi}] for "
        f"{_c10_name(x.dtype)} codes, got {zero_point}"))


def check_out_qparams(op, scale, zero_point, dtype):
    """Output qparams of codes of `dtype`, as checks::check_output_qparams."""
    torch._check(_scale_ok(scale), lambda: (
        f"qplugin::{op}: expected a finite, positive output_scale, got {scale}"))
    lo, hi = QRANGE[dtype]
    torch._check(lo <= zero_point <= hi, lambda: (
        f"qplugin::{op}: expected output_zero_point in [{lo}, {hi}] for {QTYPE[dtype]}, got "
        f"{zero_point}"))


def keep_format(x):
    """The output memory format of PyTorch's elementwise quantized ops: the input's suggested
    one (c10's Tensor::suggest_memory_format)."""
    return suggest_memory_format(x)
