"""Fake kernels of the elementwise `.plain` overloads: add / add_relu / mul / mul_relu (Tensor x
Tensor: broadcast shape, qa's suggested memory format when qa has the output's rank; .Scalar_plain,
.Scalar2_plain: qa's shape and suggested memory format), the deprecated <base>_scalar[_relu]
(.plain, .Tensor_plain) and cat / cat_relu (the inputs' common suggested memory format, else
contiguous). Output codes have the inputs' dtype. Checks what the C++ kernels check up front.
Changes with: csrc/ops/elementwise.cpp, csrc/ops/quantized_cpu/binary_kernel.cpp,
csrc/ops/quantized_cpu/cat_kernel.cpp.
"""
import math

import torch

from ._qargs import _c10_name, check_codes, check_out_qparams, keep_format

_BINARY = ("add", "add_relu", "mul", "mul_relu")
_SCALAR = ("add_scalar", "add_scalar_relu", "mul_scalar", "mul_scalar_relu")


def _broadcast(op, a, b):
    nd = max(len(a), len(b))
    a = [1] * (nd - len(a)) + list(a)
    b = [1] * (nd - len(b)) + list(b)
    out = []
    for i, (da, db) in enumerate(zip(a, b)):
        torch._check(da == db or da == 1 or db == 1, lambda: (
            f"qplugin::{op}: expected broadcastable shapes, got qa {a} and qb {b} (dimension "
            f"{i}: {da} vs {db})"))
        out.append(db if da == 1 else da)
    return out


def _binary_fake(op):
    def fake(qa, qa_scale, qa_zero_point, qb, qb_scale, qb_zero_point, scale, zero_point):
        check_codes(op, "qa", qa, qa_scale, qa_zero_point)
        check_codes(op, "qb", qb, qb_scale, qb_zero_point)
        torch._check(qa.dtype == qb.dtype, lambda: (
            f"qplugin::{op}: expected qb of dtype {_c10_name(qa.dtype)} (the dtype of qa), got "
            f"{_c10_name(qb.dtype)}"))
        check_out_qparams(op, scale, zero_point, qa.dtype)
        shape = _broadcast(op, qa.shape, qb.shape)
        fmt = keep_format(qa) if qa.dim() == len(shape) else torch.contiguous_format
        return torch.empty(shape, dtype=qa.dtype, device=qa.device, memory_format=fmt)
    return fake


def _finite_scalar(op, b):
    v = float(b)
    torch._check(math.isfinite(v), lambda: f"qplugin::{op}: expected a finite scalar, got {v}")


def _one_element_tensor(op, b):
    torch._check(not b.is_quantized and b.numel() == 1, lambda: (
        f"qplugin::{op}: expected b to be a one-element (non-quantized) tensor, got a tensor "
        f"of shape {list(b.shape)}"))


def _like_qa(op, qa, qa_scale, qa_zero_point, b, check_b):
    """The output of an op of quantized `qa` and a scalar (or one-element tensor) `b`."""
    check_codes(op, "qa", qa, qa_scale, qa_zero_point)
    check_b(op, b)
    return torch.empty_like(qa, memory_format=keep_format(qa))


def _scalar_fake(op):
    def fake(qa, qa_scale, qa_zero_point, b):
        return _like_qa(op, qa, qa_scale, qa_zero_point, b, _finite_scalar)
    return fake


def _scalar2_fake(op):
    def fake(b, qa, qa_scale, qa_zero_point):
        return _like_qa(op, qa, qa_scale, qa_zero_point, b, _finite_scalar)
    return fake


def _scalar_tensor_fake(op):
    def fake(qa, qa_scale, qa_zero_point, b):
        return _like_qa(op, qa, qa_scale, qa_zero_point, b, _one_element_tensor)
    return fake


def _cat_fake(op):
    def fake(qx, qx_scales, qx_zero_points, dim, scale, zero_point):
        torch._check(len(qx) > 0, lambda: (
            f"qplugin::{op}: expected a non-empty list of tensors, got an empty list"))
        torch._check(len(qx_scales) == len(qx) and len(qx_zero_points) == len(qx), lambda: (
            f"qplugin::{op}.plain: expected one qx_scales and qx_zero_points entry per tensor "
            f"({len(qx)}), got {len(qx_scales)} scales and {len(qx_zero_points)} zero points"))
        for i, (x, s, z) in enumerate(zip(qx, qx_scales, qx_zero_points)):
            check_codes(op, f"qx[{i}]", x, s, z)
        x0 = qx[0]
        nd = x0.dim()
        torch._check(nd > 0, lambda: (
            f"qplugin::{op}: expected tensors with at least one dimension, got a "
            f"0-dimensional qx[0]"))
        torch._check(-nd <= dim < nd, lambda: (
            f"qplugin::{op}: expected dim in [{-nd}, {nd - 1}] (qx[0] has {nd} dimensions), "
            f"got {dim}"))
        d = dim % nd
        shape = list(x0.shape)
        shape[d] = 0
        fmt0 = keep_format(x0)
        same = True
        for i, x in enumerate(qx):
            torch._check(x.dtype == x0.dtype, lambda: (
                f"qplugin::{op}: expected qx[{i}] of dtype {_c10_name(x0.dtype)} (the dtype of "
                f"qx[0]), got {_c10_name(x.dtype)}"))
            torch._check(x.dim() == nd, lambda: (
                f"qplugin::{op}: expected qx[{i}] with {nd} dimensions (like qx[0]), got "
                f"{x.dim()}"))
            for j in range(nd):
                if j != d:
                    torch._check(x.shape[j] == x0.shape[j], lambda: (
                        f"qplugin::{op}: expected qx[{i}] of size {x0.shape[j]} at dimension {j} "
                        f"(like qx[0]; only dimension {d} may differ), got {x.shape[j]}"))
            shape[d] = shape[d] + x.shape[d]
            same = same and keep_format(x) == fmt0
        check_out_qparams(op, scale, zero_point, x0.dtype)
        fmt = fmt0 if same else torch.contiguous_format
        return torch.empty(shape, dtype=x0.dtype, device=x0.device, memory_format=fmt)
    return fake


for _op in _BINARY:
    torch.library.register_fake(f"qplugin::{_op}.plain")(_binary_fake(_op))
    torch.library.register_fake(f"qplugin::{_op}.Scalar_plain")(_scalar_fake(f"{_op}.Scalar"))
    torch.library.register_fake(f"qplugin::{_op}.Scalar2_plain")(_scalar2_fake(f"{_op}.Scalar"))
for _op in _SCALAR:
    _base = _op.replace("_scalar", "")
    torch.library.register_fake(f"qplugin::{_op}.plain")(_scalar_fake(f"{_base}.Scalar"))
    torch.library.register_fake(f"qplugin::{_op}.Tensor_plain")(
        _scalar_tensor_fake(f"{_op}.Tensor"))
for _op in ("cat", "cat_relu"):
    torch.library.register_fake(f"qplugin::{_op}.plain")(_cat_fake(_op))
