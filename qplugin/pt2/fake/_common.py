"""Shared checks of the fake kernels (docs/pt2.md §3): the cheap validation a real `.plain`
kernel does on its quantized operands (csrc/common/qarg.h, QArg::plain), with the same wording."""
import math
import struct

import torch

__all__ = ["CODES", "check_codes", "check_output_qparams", "check_output_size", "fail"]

# Plain code dtype -> the quantized dtype it stands for, and its range.
CODES = {torch.uint8: ("quint8", 0, 255), torch.int8: ("qint8", -128, 127),
         torch.int32: ("qint32", -(2 ** 31), 2 ** 31 - 1)}


def fail(op, msg):
    raise RuntimeError(f"qplugin::{op}: {msg}")


def _f32(v):
    """v rounded to float32 (inf when out of range), without making a tensor (fake mode)."""
    try:
        return struct.unpack("f", struct.pack("f", v))[0]
    except OverflowError:
        return math.inf


def _scale_ok(scale):
    s = float(scale)
    if not (math.isfinite(s) and s > 0.0):
        return False
    f = _f32(s)
    return f > 0.0 and (f == math.inf or math.isfinite(_f32(1.0 / f)))


def check_codes(op, arg, x, scale, zero_point, dtypes=(torch.uint8, torch.int8, torch.int32)):
    """QArg::plain's checks: `x` plain codes of one of `dtypes` on the CPU, a finite positive
    scale, a zero point in the dtype's range. `op` is the legacy name ("max_pool2d")."""
    want = " or ".join(str(d).replace("torch.", "") for d in dtypes)
    if x.is_quantized:
        fail(f"{op}.plain", f"expected {arg} to be a plain tensor of codes ({want}), got a "
             f"quantized tensor; use qplugin::{op} for quantized tensors")
    if x.dtype not in dtypes:
        fail(f"{op}.plain", f"expected {arg} of dtype {want} (quantized codes), got "
             f"{str(x.dtype).replace('torch.', '')}")
    if x.device.type not in ("cpu", "meta"):
        fail(f"{op}.plain", f"expected {arg} on the CPU, got {x.device}")
    if not _scale_ok(scale):
        fail(f"{op}.plain", f"expected a finite, positive {arg}_scale, got {scale}")
    _, lo, hi = CODES[x.dtype]
    if not lo <= zero_point <= hi:
        fail(f"{op}.plain", f"expected {arg}_zero_point in [{lo}, {hi}] for "
             f"{str(x.dtype).replace('torch.', '')} codes, got {zero_point}")


def check_output_qparams(op, scale, zero_point, dtype):
    """checks::check_output_qparams: output qparams valid for codes of `dtype`."""
    if not _scale_ok(scale):
        fail(op, f"expected a finite, positive output_scale, got {scale}")
    _, lo, hi = CODES[dtype]
    if not lo <= zero_point <= hi:
        fail(op, f"expected output_zero_point in [{lo}, {hi}], got {zero_point}")


def check_output_size(op, nd, x, output_size):
    """output_size (nd positive ints) of an op on x's last nd (non-empty) dimensions, as a
    list: the adaptive pools and the resampling ops."""
    output_size = list(output_size)
    if len(output_size) != nd:
        fail(op, f"expected output_size of {nd} ints, got {len(output_size)} values "
             f"{output_size}")
    for i in range(nd):
        if output_size[i] <= 0:
            fail(op, f"expected positive output sizes, got {output_size}")
        if x.shape[x.dim() - nd + i] <= 0:
            fail(op, f"expected non-empty spatial dimensions, got input of shape "
                 f"{list(x.shape)}")
    return output_size
