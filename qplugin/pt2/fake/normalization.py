"""Fake kernels of the layer/group/instance-norm `.plain` overloads (csrc/ops/normalization.cpp):
the input's shape and codes dtype; layer_norm contiguous, group/instance norm keeping a
channels-last (or channels_last_3d) input's layout, as ops/quantized_cpu/normalization_kernel.cpp;
with its cheap checks."""
import math

import torch

from ._common import check_codes, check_output_qparams, fail

__all__ = []


def _common(name, x, xs, xz, eps, output_scale, output_zero_point):
    check_codes(name, "input", x, xs, xz)
    op = f"{name}.plain"
    if not (math.isfinite(eps) and eps >= 0):
        fail(op, f"expected a finite, non-negative eps, got {eps}")
    check_output_qparams(op, output_scale, output_zero_point, x.dtype)
    return op


def _float_vector(op, arg, t, n):
    if t is None:
        return
    if t.is_quantized or not t.is_floating_point():
        fail(op, f"expected {arg} to be a floating-point tensor, got {t.dtype}")
    if t.numel() != n or t.dim() != 1:
        fail(op, f"expected {arg} of {n} elements (one per channel), got shape {list(t.shape)}")


@torch.library.register_fake("qplugin::layer_norm.plain")
def _layer_norm(input, input_scale, input_zero_point, normalized_shape, weight, bias, eps,
                output_scale, output_zero_point):
    op = _common("layer_norm", input, input_scale, input_zero_point, eps, output_scale,
                 output_zero_point)
    ns = list(normalized_shape)
    if not ns:
        fail(op, f"expected a non-empty normalized_shape, got {ns}")
    if len(ns) > input.dim() or list(input.shape[input.dim() - len(ns):]) != ns:
        fail(op, f"expected an input whose trailing dimensions match normalized_shape {ns}, "
             f"got an input of shape {list(input.shape)}")
    for arg, t in (("weight", weight), ("bias", bias)):
        if t is None:
            continue
        if t.is_quantized or not t.is_floating_point():
            fail(op, f"expected {arg} to be a floating-point tensor, got {t.dtype}")
        if list(t.shape) != ns:
            fail(op, f"expected {arg} of shape {ns} (normalized_shape), got shape "
                 f"{list(t.shape)}")
    return torch.empty(input.shape, dtype=input.dtype, device=input.device)


def _group_out(op, x, weight, bias):
    C = x.shape[1]
    _float_vector(op, "weight", weight, C)
    _float_vector(op, "bias", bias, C)
    fmt = torch.contiguous_format
    if x.dim() in (4, 5):
        cl = torch.channels_last if x.dim() == 4 else torch.channels_last_3d
        if not x.is_contiguous() and x.is_contiguous(memory_format=cl):
            fmt = cl
    return torch.empty(x.shape, dtype=x.dtype, device=x.device, memory_format=fmt)


@torch.library.register_fake("qplugin::group_norm.plain")
def _group_norm(input, input_scale, input_zero_point, num_groups, weight, bias, eps,
                output_scale, output_zero_point):
    op = _common("group_norm", input, input_scale, input_zero_point, eps, output_scale,
                 output_zero_point)
    if input.dim() < 2:
        fail(op, f"expected an input of at least 2 dimensions (N, C, *), got {input.dim()}-D")
    if num_groups <= 0:
        fail(op, f"expected a positive num_groups, got {num_groups}")
    if input.shape[1] % num_groups != 0:
        fail(op, f"expected the number of channels to be divisible by num_groups "
             f"({num_groups}), got {input.shape[1]} channels")
    return _group_out(op, input, weight, bias)


@torch.library.register_fake("qplugin::instance_norm.plain")
def _instance_norm(input, input_scale, input_zero_point, weight, bias, eps, output_scale,
                   output_zero_point):
    op = _common("instance_norm", input, input_scale, input_zero_point, eps, output_scale,
                 output_zero_point)
    if input.dim() < 3:
        fail(op, f"expected an input of at least 3 dimensions (N, C, L, ...), got "
             f"{input.dim()}-D")
    return _group_out(op, input, weight, bias)
