"""Fake kernels of the PT2 door's graph boundaries (csrc/ops/cpu/quantize_kernel.cpp):
quantize_per_tensor.plain (float32 -> uint8/int8 codes) and dequantize.plain (codes -> float32);
the result has the input's shape and its suggested memory format, as the real kernels."""
import torch

from . import _util

_CODES = {torch.uint8: torch.uint8, torch.quint8: torch.uint8, torch.int8: torch.int8,
          torch.qint8: torch.int8}


def _suggest_memory_format(x):
    # ATen's Tensor::suggest_memory_format (the real kernels' choice), as PyTorch mirrors it.
    return torch._prims_common.suggest_memory_format(x)


def _quantize_fake(self, scale, zero_point, dtype):
    op = "quantize_per_tensor.plain"
    torch._check(self.dtype == torch.float32, lambda: f"qplugin::{op}: expected self of dtype "
                 f"torch.float32, got {self.dtype}")
    torch._check(dtype in _CODES, lambda: f"qplugin::{op}: expected dtype torch.uint8 or "
                 f"torch.int8, got {dtype}")
    codes = _CODES[dtype]
    _util.check_qparams(op, "", scale, zero_point, codes)
    return torch.empty(self.shape, dtype=codes, device=self.device,
                       memory_format=_suggest_memory_format(self))


def _dequantize_fake(self, scale, zero_point):
    op = "dequantize.plain"
    _util.check_codes(op, "self", self, (torch.uint8, torch.int8))
    _util.check_qparams(op, "self", scale, zero_point, self.dtype)
    return torch.empty(self.shape, dtype=torch.float32, device=self.device,
                       memory_format=_suggest_memory_format(self))


_util.register("qplugin::quantize_per_tensor.plain", _quantize_fake)
_util.register("qplugin::dequantize.plain", _dequantize_fake)
