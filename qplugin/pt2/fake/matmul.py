"""Fake kernel of `qplugin::matmul.plain` (csrc/ops/quantized_cpu/matmul_kernel.cpp): the
output's shape as torch.matmul's, contiguous, of qa's code dtype; the cheap checks of the real
kernel (dtypes, ranks, inner sizes, broadcastable batches, output qparams)."""
import math

import torch

_RANGE = {torch.uint8: (0, 255), torch.int8: (-128, 127)}


@torch.library.register_fake("qplugin::matmul.plain")
def _matmul_plain(qa, qa_scale, qa_zero_point, qb, qb_scale, qb_zero_point, scale, zero_point):
    op = "qplugin::matmul.plain"
    for name, t in (("qa", qa), ("qb", qb)):
        torch._check(t.dtype in _RANGE,
                     lambda: f"{op}: expected {name} of dtype uint8 or int8 (quantized codes), "
                             f"got {t.dtype}")
    torch._check(qa.dtype == qb.dtype,
                 lambda: f"{op}: expected qa and qb of the same dtype, got {qa.dtype} and "
                         f"{qb.dtype}")
    torch._check(qa.dim() >= 1 and qb.dim() >= 1,
                 lambda: f"{op}: expected qa and qb of rank >= 1, got {qa.dim()}-D and "
                         f"{qb.dim()}-D")
    lo, hi = _RANGE[qa.dtype]
    torch._check(math.isfinite(scale) and scale > 0,
                 lambda: f"{op}: expected a finite, positive output_scale, got {scale}")
    torch._check(lo <= zero_point <= hi,
                 lambda: f"{op}: expected output_zero_point in [{lo}, {hi}], got {zero_point}")
    a_shape = [1] + list(qa.shape) if qa.dim() == 1 else list(qa.shape)
    b_shape = list(qb.shape) + [1] if qb.dim() == 1 else list(qb.shape)
    torch._check(a_shape[-1] == b_shape[-2],
                 lambda: f"{op}: expected qb with {a_shape[-1]} rows (qa's last dimension), got "
                         f"shapes {tuple(qa.shape)} and {tuple(qb.shape)}")
    ba, bb = a_shape[:-2], b_shape[:-2]
    r = max(len(ba), len(bb))
    ba, bb = [1] * (r - len(ba)) + ba, [1] * (r - len(bb)) + bb
    for da, db in zip(ba, bb):
        torch._check(da == db or da == 1 or db == 1,
                     lambda: f"{op}: expected broadcastable batch dimensions, got shapes "
                             f"{tuple(qa.shape)} and {tuple(qb.shape)}")
    batch = [db if da == 1 else da for da, db in zip(ba, bb)]
    out = batch + ([] if qa.dim() == 1 else [a_shape[-2]]) + ([] if qb.dim() == 1
                                                               else [b_shape[-1]])
    return qa.new_empty(out)
