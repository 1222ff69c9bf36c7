"""Quantize / DeQuantize modules (≙ torch.ao.nn.quantized.Quantize / DeQuantize): the float <->
quantized boundary that convert() puts in place of QuantStub / DeQuantStub. Quantize creates the
quantized tensor from the codes of qplugin's own kernel (qplugin::quantize_per_tensor.plain, the
PT2 door's Quantize too), so both doors give the same bytes on every torch version (torch 2.14
rounds differently from 2.13: docs/deviations.md); qint32 keeps torch.quantize_per_tensor.
Changes with: qplugin/quantization/__init__.py, tests/fixtures/make_fixtures.py,
csrc/ops/cpu/quantize_kernel.cpp, qplugin/pt2/_convert.py (the PT2 Quantize).
"""
from typing import Any, Dict, List

import torch

from .utils import (
    _check_quantized_dtype,
    _check_scale,
    _check_zero_point,
    _dtype_names,
    _observer_qparams,
    _QParamsMixin,
    _QUANTIZED_DTYPES,
    _scale_buffer,
)

__all__ = ["Quantize", "DeQuantize"]


class Quantize(_QParamsMixin, torch.nn.Module):
    r"""Quantizes an incoming float32 tensor per tensor.

    Args:
        scale: scale of the output quantized tensor
        zero_point: zero point of the output quantized tensor
        dtype: dtype of the output quantized tensor: torch.quint8, torch.qint8 or torch.qint32
        factory_kwargs: ``device`` and ``dtype`` of the internal buffers (dtype applies to the
            floating ``scale`` buffer only), e.g. ``{'dtype': torch.float64}``

    Same interface as :class:`torch.ao.nn.quantized.Quantize`; ``scale`` and ``zero_point`` are
    [1]-shaped buffers as there, ``dtype`` is a constructor argument (not in the state dict).
    """

    # State-dict layout (same keys and shapes as torch.ao.nn.quantized.Quantize):
    #
    #   version 1 (qplugin 0.1)
    #   |--- scale       : [1] float32 tensor (factory_kwargs dtype)
    #   |--- zero_point  : [1] int64 tensor
    #
    # dtype is not state. Loading accepts one-element scale/zero_point of any shape and a dict
    # without them (the constructor's values are kept).
    _version = 1
    _FLOAT_MODULE = None  # from_float takes any observed module (QuantStub: qplugin's or torch.ao's)
    scale: torch.Tensor
    zero_point: torch.Tensor

    def __init__(self, scale, zero_point, dtype, factory_kwargs=None) -> None:
        owner = "qplugin.nn.Quantize"
        scale = _check_scale(owner, scale)
        zero_point = _check_zero_point(owner, zero_point)
        dtype = _check_quantized_dtype(owner, dtype)
        info = torch.iinfo(dtype)
        if not info.min <= zero_point <= info.max:
            raise ValueError(f"{owner}: expected zero_point in [{info.min}, {info.max}] for"
                             f" {dtype}, got {zero_point}")
        if factory_kwargs is not None and not isinstance(factory_kwargs, dict):
            raise TypeError(f"{owner}: expected factory_kwargs to be a dict or None, got"
                            f" {type(factory_kwargs).__name__}")
        factory_kwargs = torch.nn.factory_kwargs(factory_kwargs)
        buf_dtype = factory_kwargs.get("dtype")
        if buf_dtype is not None and not buf_dtype.is_floating_point:
            raise TypeError(f"{owner}: expected factory_kwargs['dtype'] to be a floating-point"
                            f" torch.dtype, got {buf_dtype}")
        super().__init__()
        self.register_buffer("scale", _scale_buffer(owner, scale, (1,), **factory_kwargs))
        self.register_buffer(
            "zero_point",
            torch.tensor([zero_point], dtype=torch.long,
                         **{k: v for k, v in factory_kwargs.items() if k != "dtype"}))
        self.dtype = dtype

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        if X.is_quantized:
            raise ValueError("qplugin.nn.Quantize: expected a torch.float32 input tensor, got a"
                             " quantized tensor (it is quantized already)")
        if X.dtype != torch.float32:
            raise ValueError("qplugin.nn.Quantize: expected a torch.float32 input tensor, got"
                             " another dtype; convert it with .float() first")
        scale = float(self.scale)
        zero_point = int(self.zero_point)
        if self.dtype == torch.qint32:
            # qplugin's kernel makes uint8/int8 codes only (no qplugin op takes qint32
            # activations; the PT2 door has no qint32 Quantize).
            return torch.quantize_per_tensor(X, scale, zero_point, self.dtype)
        # qplugin's codes (round half to even of x/scale + zero_point, once; saturating), made a
        # quint8/qint8 tensor with the same strides (the op keeps the input's memory format, as
        # torch.quantize_per_tensor does). Not torch.quantize_per_tensor: torch 2.14 rounds ties
        # and huge values differently, and the PT2 door must give the same bytes.
        codes = torch.ops.qplugin.quantize_per_tensor(X, scale, zero_point, self.dtype)
        if not torch.jit.is_scripting() and not torch.jit.is_tracing():
            # Eager: the quantized tensor takes the codes' storage (set_), where
            # _make_per_tensor_quantized_tensor copies it: 0.09 of a 0.55 ms Quantize at
            # 8 x 3 x 224 x 224 (Zen 1, 1 thread). TorchScript keeps the copy: untyped storages
            # are not scriptable, and a trace would record set_ as an empty tensor.
            out = torch._empty_affine_quantized([0], scale=scale, zero_point=zero_point,
                                                dtype=self.dtype)
            return out.set_(codes.untyped_storage(), codes.storage_offset(), codes.size(),
                            codes.stride())
        return torch._make_per_tensor_quantized_tensor(codes, scale, zero_point)

    def _get_name(self):
        return "Quantize"

    def extra_repr(self):
        return f"scale={self.scale}, zero_point={self.zero_point}, dtype={self.dtype}"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """From an observed QuantStub (or any module with an activation_post_process, as PyTorch's
        Quantize.from_float): qparams and dtype from the observer."""
        owner = "qplugin.nn.Quantize.from_float"
        if not isinstance(mod, torch.nn.Module):
            raise TypeError(f"{owner}: expected an observed QuantStub, got"
                            f" {type(mod).__name__}")
        scale, zero_point = _observer_qparams(owner, mod)
        dtype = mod.activation_post_process.dtype
        if dtype not in _QUANTIZED_DTYPES:
            raise ValueError(f"{owner}: expected an observer of dtype"
                             f" {_dtype_names(_QUANTIZED_DTYPES)}, got {dtype}")
        return cls(scale, zero_point, dtype)


class DeQuantize(torch.nn.Module):
    r"""Dequantizes an incoming quantized tensor to float32 (``(q - zero_point) * scale``).

    As :class:`torch.ao.nn.quantized.DeQuantize`, a float input passes through unchanged
    (``Tensor.dequantize`` of a float tensor is the tensor itself).
    """

    _version = 1

    def forward(self, Xq: torch.Tensor) -> torch.Tensor:
        return Xq.dequantize()

    def _get_name(self):
        return "DeQuantize"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """From a DeQuantStub (it has no state; any module is accepted, as PyTorch's)."""
        if not isinstance(mod, torch.nn.Module):
            raise TypeError("qplugin.nn.DeQuantize.from_float: expected a"
                            f" DeQuantStub, got {type(mod).__name__}")
        return cls()
