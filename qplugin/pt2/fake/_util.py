"""Helpers of the fake kernels: registration that tolerates a library built without an overload,
and the checks the real kernels make that are cheap on fake tensors (dtype, rank, qparams)."""
import math

import torch

_RANGES = {torch.uint8: (0, 255), torch.int8: (-128, 127), torch.int32: (-2**31, 2**31 - 1)}


def register(qualname, fn):
    """torch.library.register_fake(qualname, fn) when the overload exists in the loaded library."""
    name, _, overload = qualname.split("::", 1)[1].partition(".")
    packet = getattr(torch.ops.qplugin, name, None)
    if packet is None or (overload and overload not in packet.overloads()):
        return None
    return torch.library.register_fake(qualname, fn)


def c10_name(dtype):
    """The dtype as the C++ messages spell it (c10::toString: Byte, Char, Int, Float)."""
    return {torch.uint8: "Byte", torch.int8: "Char", torch.int32: "Int", torch.float32: "Float",
            torch.float64: "Double", torch.int64: "Long"}.get(dtype,
                                                               str(dtype).replace("torch.", ""))


def check_codes(op, arg, x, dtypes=(torch.uint8,)):
    want = " or ".join(c10_name(d) for d in dtypes)
    torch._check(x.dtype in dtypes, lambda: f"qplugin::{op}: expected {arg} of dtype {want} "
                 f"(quantized codes), got {c10_name(x.dtype)}")


def check_qparams(op, arg, scale, zero_point, dtype):
    """scale / zero point of `arg` (e.g. "X" checks X_scale, X_zero_point); only when they are
    plain Python numbers (under export they are constants)."""
    sn, zn = (f"{arg}_scale", f"{arg}_zero_point") if arg else ("scale", "zero_point")
    if isinstance(scale, (int, float)):
        torch._check(math.isfinite(scale) and scale > 0, lambda: f"qplugin::{op}: expected a "
                     f"finite, positive {sn}, got {scale}")
    if isinstance(zero_point, int) and dtype in _RANGES:
        lo, hi = _RANGES[dtype]
        torch._check(lo <= zero_point <= hi, lambda: f"qplugin::{op}: expected "
                     f"{zn} in [{lo}, {hi}] for {dtype} codes, got {zero_point}")


def check_output_qparams(op, scale, zero_point, dtype=torch.uint8):
    if isinstance(scale, (int, float)):
        torch._check(math.isfinite(scale) and scale > 0, lambda: f"qplugin::{op}: expected a "
                     f"finite, positive output_scale, got {scale}")
    if isinstance(zero_point, int):
        lo, hi = _RANGES[dtype]
        torch._check(lo <= zero_point <= hi, lambda: f"qplugin::{op}: expected "
                     f"output_zero_point in [{lo}, {hi}], got {zero_point}")
