"""Fake kernels of the linear `.plain` overloads (csrc/ops/linear.cpp): X uint8 codes [..., K],
result uint8 codes [..., N], contiguous (as the real kernels, ops/quantized_cpu/linear_kernel.cpp).
Changes with: csrc/packed/linear_packed_params.cpp (apply's checks), qplugin/pt2/routes/linear.py.
"""
import torch

from . import _util
from .packed import packed_view


def _linear_fake(name):
    op = f"{name}.plain"

    def fake(X, X_scale, X_zero_point, W_prepack, Y_scale_i, Y_zero_point_i, *rest):
        w = packed_view(W_prepack)
        N, K = w.weight_shape
        _util.check_codes(op, "X", X)
        _util.check_qparams(op, "X", X_scale, X_zero_point, torch.uint8)
        torch._check(X.dim() >= 2, lambda: f"qplugin::{op}: expected input of rank >= 2 "
                     f"(batch, ..., in_features), got {X.dim()}-D")
        torch._check(X.shape[-1] == K, lambda: f"qplugin::{op}: expected input with "
                     f"in_features = {K} in its last dimension, got {X.shape[-1]}")
        _util.check_output_qparams(op, Y_scale_i, Y_zero_point_i)
        return X.new_empty((*X.shape[:-1], N), dtype=torch.uint8)
    return fake


for _name in ("linear", "linear_relu", "linear_leaky_relu", "linear_tanh"):
    _util.register(f"qplugin::{_name}.plain", _linear_fake(_name))
