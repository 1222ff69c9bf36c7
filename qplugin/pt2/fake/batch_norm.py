"""Fake kernels of the batch-norm `.plain` overloads: the input's shape and code dtype,
channels-last for a 4-D / 5-D input and contiguous otherwise (as PyTorch's quantized batch norm).
Checks what the C++ kernel checks up front: codes and qparams, the rank the op takes, eps, and
mean / var / weight / bias as floating-point vectors of C values.
Changes with: csrc/ops/batch_norm.cpp, csrc/ops/quantized_cpu/batch_norm_kernel.cpp.
"""
import math

import torch

from ._qargs import check_codes, check_out_qparams

_RANKS = {"": ((2, 3, 4, 5), "a 2-D, 3-D, 4-D or 5-D input (N, C, ...)"),
          "1d": ((2, 3), "a 2-D (N, C) or 3-D (N, C, L) input"),
          "2d": ((4,), "a 4-D (N, C, H, W) input"),
          "3d": ((5,), "a 5-D (N, C, D, H, W) input")}


def _vector(op, arg, t, c):
    torch._check(not t.is_quantized and t.dtype.is_floating_point, lambda: (
        f"qplugin::{op}: expected {arg} to be a floating-point tensor, got {t.dtype}"))
    torch._check(t.dim() == 1 and t.numel() == c, lambda: (
        f"qplugin::{op}: expected {arg} of shape [{c}] (one value per channel), got shape "
        f"{list(t.shape)}"))


def _fake(op, rank, input_arg):
    ranks, what = _RANKS[rank]

    def fake(x, x_scale, x_zero_point, weight, bias, mean, var, eps, output_scale,
             output_zero_point):
        check_codes(op, input_arg, x, x_scale, x_zero_point)
        torch._check(x.dim() in ranks,
                     lambda: f"qplugin::{op}: expected {what}, got {x.dim()}-D")
        torch._check(math.isfinite(eps) and eps >= 0, lambda: (
            f"qplugin::{op}: expected a finite, non-negative eps, got {eps}"))
        check_out_qparams(op, output_scale, output_zero_point, x.dtype)
        c = x.shape[1]
        _vector(op, "mean", mean, c)
        _vector(op, "var", var, c)
        if weight is not None:
            _vector(op, "weight", weight, c)
        if bias is not None:
            _vector(op, "bias", bias, c)
        fmt = {4: torch.channels_last, 5: torch.channels_last_3d}.get(x.dim(),
                                                                      torch.contiguous_format)
        return torch.empty_like(x, memory_format=fmt)

    return fake


torch.library.register_fake("qplugin::quantized_batch_norm.plain")(
    _fake("quantized_batch_norm", "", "input"))
for _rank in ("", "1d", "2d", "3d"):
    for _relu in ("", "_relu"):
        _op = f"batch_norm{_rank}{_relu}"
        torch.library.register_fake(f"qplugin::{_op}.plain")(_fake(_op, _rank, "qx"))
