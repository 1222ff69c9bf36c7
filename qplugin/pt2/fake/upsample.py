"""Fake kernels of the resampling `.plain` overloads (csrc/ops/upsample.cpp): the output has the
given output_size (scales only move the source indices), the input's codes dtype, and keeps a
channels-last input's layout, as ops/quantized_cpu/upsample_kernel.cpp; with its cheap checks."""
import torch
from torch._prims_common import suggest_memory_format

from ._common import check_codes, check_output_size, fail

__all__ = []

_SPATIAL = {1: "L", 2: "H, W", 3: "D, H, W"}


def _out(name, nd, x, scale, zero_point, output_size):
    check_codes(name, "self", x, scale, zero_point)
    op = f"{name}.plain"
    if x.dim() != nd + 2:
        fail(op, f"expected a {nd + 2}-D (N, C, {_SPATIAL[nd]}) input, got {x.dim()}-D")
    output_size = check_output_size(op, nd, x, output_size)
    cl_fmt = torch.channels_last_3d if nd == 3 else torch.channels_last
    cl = nd >= 2 and suggest_memory_format(x) == cl_fmt
    return torch.empty(list(x.shape[:2]) + output_size, dtype=x.dtype, device=x.device,
                       memory_format=cl_fmt if cl else torch.contiguous_format)


def _register(name, nd, linear):
    if linear:
        @torch.library.register_fake(f"qplugin::{name}.plain")
        def _fake(self, self_scale, self_zero_point, output_size, align_corners, *scales):
            return _out(name, nd, self, self_scale, self_zero_point, output_size)
    else:
        @torch.library.register_fake(f"qplugin::{name}.plain")
        def _fake(self, self_scale, self_zero_point, output_size, *scales):
            return _out(name, nd, self, self_scale, self_zero_point, output_size)
    return _fake


for _n, _nd, _lin in (("upsample_nearest1d", 1, False), ("upsample_nearest2d", 2, False),
                      ("upsample_nearest3d", 3, False), ("_upsample_nearest_exact1d", 1, False),
                      ("_upsample_nearest_exact2d", 2, False),
                      ("_upsample_nearest_exact3d", 3, False), ("upsample_linear1d", 1, True),
                      ("upsample_bilinear2d", 2, True), ("upsample_trilinear3d", 3, True)):
    _register(_n, _nd, _lin)
