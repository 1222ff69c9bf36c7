"""Fake kernels of the pooling `.plain` overloads (csrc/ops/pooling.cpp): output shape, dtype
(the input's codes) and memory format as ops/quantized_cpu/pooling_kernel.cpp computes them,
with its cheap argument checks."""
import torch
from torch._prims_common import suggest_memory_format

from ._common import check_codes, check_output_size, fail

__all__ = []

_SPATIAL = {1: "L", 2: "H, W", 3: "D, H, W"}


def _expand(op, name, v, nd, default):
    v = list(v)
    if not v and default is not None:
        return list(default)
    if len(v) != 1 and len(v) != nd:
        fail(op, f"expected {name} to be a single int or a list of {nd} ints, got {len(v)} "
             f"values {v}")
    return [v[0]] * nd if len(v) == 1 else v


def _pooled_size(n, k, s, p, d, ceil_mode):
    eff = d * (k - 1) + 1
    num = n + 2 * p - eff + (s - 1 if ceil_mode else 0)
    o = num // s + 1  # floor division, as the C++ for either sign
    if ceil_mode and o > 0 and (o - 1) * s >= n + p:
        o -= 1
    return o


def _batched(op, nd, x):
    if x.dim() not in (nd + 1, nd + 2):
        fail(op, f"expected a {nd + 1}-D (C, {_SPATIAL[nd]}) or {nd + 2}-D (N, C, "
             f"{_SPATIAL[nd]}) input, got {x.dim()}-D")
    return x.dim() == nd + 1


def _output(op, nd, x, outs, force_cl3d_out=False):
    unbatched = _batched(op, nd, x)
    shape = list(x.shape[:x.dim() - nd]) + list(outs)
    numel_in = x.numel()
    numel_out = 1
    for d in shape:
        numel_out = numel_out * d
    if numel_in == 0 and numel_out != 0:
        fail(op, f"expected non-empty input, got shape {list(x.shape)}")
    cl_fmt = torch.channels_last_3d if nd == 3 else torch.channels_last
    cl = nd >= 2 and not unbatched and suggest_memory_format(x) == cl_fmt
    cl_out = cl or (force_cl3d_out and not unbatched)
    return torch.empty(shape, dtype=x.dtype, device=x.device,
                       memory_format=cl_fmt if cl_out else torch.contiguous_format)


def _window(op, nd, x, is_max, kernel, stride, padding, dilation, ceil_mode,
            divisor_override=None, force_cl3d_out=False):
    _batched(op, nd, x)
    if len(kernel) == 0:
        fail(op, f"expected kernel_size of 1 or {nd} ints, got an empty list")
    k = _expand(op, "kernel_size", kernel, nd, None)
    s = _expand(op, "stride", stride, nd, k)
    p = _expand(op, "padding", padding, nd, [0] * nd)
    d = _expand(op, "dilation", dilation, nd, [1] * nd) if is_max else [1] * nd
    for i in range(nd):
        if k[i] <= 0:
            fail(op, f"expected kernel_size of positive values, got {k}")
        if s[i] <= 0:
            fail(op, f"expected stride of positive values, got {s}")
        if p[i] < 0:
            fail(op, f"expected padding of non-negative values, got {p}")
        if is_max:
            if d[i] <= 0:
                fail(op, f"expected dilation of positive values, got {d}")
            if p[i] > (d[i] * (k[i] - 1) + 1) // 2:
                fail(op, "expected padding at most half of the effective kernel size "
                     f"(dilation * (kernel_size - 1) + 1), got padding {p}, kernel_size {k} "
                     f"and dilation {d}")
        elif p[i] > k[i] // 2:
            fail(op, f"expected padding at most half of the kernel size, got padding {p} and "
                 f"kernel_size {k}")
    if divisor_override is not None and divisor_override <= 0:
        fail(op, f"expected a positive divisor_override, got {divisor_override}")
    sp = list(x.shape[-nd:])
    outs = [_pooled_size(sp[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(nd)]
    for o in outs:
        if o <= 0:
            fail(op, f"expected an output size of at least 1, got {outs} for input spatial "
                 f"size {sp}, kernel_size {k}, stride {s} and padding {p}; the kernel is larger "
                 "than the padded input")
    return _output(op, nd, x, outs, force_cl3d_out)


def _adaptive(op, nd, x, output_size):
    _batched(op, nd, x)
    return _output(op, nd, x, check_output_size(op, nd, x, output_size))


def _max(name, nd, arg):
    @torch.library.register_fake(f"qplugin::{name}.plain")
    def _fake(x, x_scale, x_zero_point, kernel_size, stride, padding, dilation, ceil_mode):
        check_codes(name, arg, x, x_scale, x_zero_point)
        return _window(f"{name}.plain", nd, x, True, kernel_size, stride, padding, dilation,
                       ceil_mode)
    return _fake


for _n, _nd in (("max_pool1d", 1), ("max_pool2d", 2)):
    _max(_n, _nd, "qx")


@torch.library.register_fake("qplugin::max_pool3d.plain")
def _max_pool3d(self, self_scale, self_zero_point, kernel_size, stride=(), padding=(0,),
                dilation=(1,), ceil_mode=False):
    check_codes("max_pool3d", "self", self, self_scale, self_zero_point)
    return _window("max_pool3d.plain", 3, self, True, kernel_size, stride, padding, dilation,
                   ceil_mode)


@torch.library.register_fake("qplugin::avg_pool1d.plain")
def _avg_pool1d(self, self_scale, self_zero_point, kernel_size, stride=(), padding=(0,),
                ceil_mode=False, count_include_pad=True):
    check_codes("avg_pool1d", "self", self, self_scale, self_zero_point)
    return _window("avg_pool1d.plain", 1, self, False, kernel_size, stride, padding, (),
                   ceil_mode)


@torch.library.register_fake("qplugin::avg_pool2d.plain")
def _avg_pool2d(self, self_scale, self_zero_point, kernel_size, stride=(), padding=(0,),
                ceil_mode=False, count_include_pad=True, divisor_override=None):
    check_codes("avg_pool2d", "self", self, self_scale, self_zero_point)
    return _window("avg_pool2d.plain", 2, self, False, kernel_size, stride, padding, (),
                   ceil_mode, divisor_override)


@torch.library.register_fake("qplugin::avg_pool3d.plain")
def _avg_pool3d(self, self_scale, self_zero_point, kernel_size, stride=(), padding=(0,),
                ceil_mode=False, count_include_pad=True, divisor_override=None):
    check_codes("avg_pool3d", "self", self, self_scale, self_zero_point)
    # As PyTorch's QuantizedCPU avg_pool3d: channels_last_3d output for any batched input.
    return _window("avg_pool3d.plain", 3, self, False, kernel_size, stride, padding, (),
                   ceil_mode, divisor_override, force_cl3d_out=True)


def _adaptive_fake(name, nd):
    @torch.library.register_fake(f"qplugin::{name}.plain")
    def _fake(self, self_scale, self_zero_point, output_size):
        check_codes(name, "self", self, self_scale, self_zero_point)
        return _adaptive(f"{name}.plain", nd, self, output_size)
    return _fake


for _n, _nd in (("adaptive_avg_pool1d", 1), ("adaptive_avg_pool2d", 2),
                ("adaptive_avg_pool3d", 3), ("adaptive_max_pool2d", 2)):
    _adaptive_fake(_n, _nd)
