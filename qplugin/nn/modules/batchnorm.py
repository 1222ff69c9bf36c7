"""Quantized batch norm modules (≙ torch.ao.nn.quantized.BatchNorm2d/3d) on
torch.ops.qplugin.batch_norm2d/3d. The fused BN+ReLU subclasses live in
qplugin/nn/intrinsic/modules/bn_relu.py. Changes with: tests/fixtures/.
"""
from typing import Any, Dict, List

import torch

from .utils import (
    _check_float_dtype,
    _check_float_module,
    _check_real,
    _observer_qparams,
    _QParamsMixin,
)

__all__ = ["BatchNorm2d", "BatchNorm3d"]

# The input shape in messages, by rank.
_INPUT_SHAPES = {4: "(N, C, H, W)", 5: "(N, C, D, H, W)"}


class _BatchNorm(_QParamsMixin, torch.nn.modules.batchnorm._BatchNorm):
    # Set by subclasses: the spatial rank (2 or 3), the observed float class from_float takes,
    # and the user-facing name used in messages. The rank gives the float batch norm
    # from_reference takes (_float_bn_module) and the fused BN+ReLU class (_nni_bn_relu_module,
    # named in the error when it is given to the plain BN).
    _DIM = 2
    _FLOAT_MODULE: Any = None
    _QPLUGIN_NAME = "qplugin.nn._BatchNorm"

    # State-dict layout (same keys as torch.ao.nn.quantized.BatchNorm2d/3d):
    #
    #   version 1 (qplugin 0.1)
    #   |--- weight               : [C] float (factory dtype)
    #   |--- bias                 : [C] float
    #   |--- running_mean         : [C] float
    #   |--- running_var          : [C] float
    #   |--- num_batches_tracked  : 0-d int64 (unused in inference; kept for torch.nn compat)
    #   |--- scale                : 0-d float (factory dtype)
    #   |--- zero_point           : 0-d int64
    #
    #   torch.ao.nn.quantized.BatchNorm2d/3d (metadata version 2, from torch.nn's _BatchNorm):
    #   the same keys; after PyTorch's from_float, scale/zero_point are [1]-shaped (the observer's
    #   tensors) and zero_point may be int32 -- loading accepts any one-element scale/zero_point
    #   and a dict without them (the constructor's values are kept).
    _version = 1
    scale: torch.Tensor
    zero_point: torch.Tensor

    def __init__(self, num_features, eps=1e-5, momentum=0.1, device=None, dtype=None) -> None:
        owner = self._qparam_owner()
        if isinstance(num_features, bool) or not isinstance(num_features, int):
            raise TypeError(f"{owner}: expected num_features to be an int, got"
                            f" {type(num_features).__name__}")
        if num_features <= 0:
            raise ValueError(f"{owner}: expected a positive num_features, got {num_features}")
        eps = _check_real(owner, eps, "eps")
        if eps < 0:
            raise ValueError(f"{owner}: expected a non-negative eps, got {eps}")
        if momentum is not None:
            momentum = _check_real(owner, momentum, "momentum")
        _check_float_dtype(owner, dtype)
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__(num_features, eps, momentum, True, True, **factory_kwargs)
        # Output qparams (PyTorch's defaults): scale takes the factory dtype, zero_point is int64.
        self.register_buffer("scale", torch.tensor(1.0, **factory_kwargs))
        self.register_buffer("zero_point", torch.tensor(0, device=device, dtype=torch.long))

    def _get_name(self):
        return "Quantized" + self._QPLUGIN_NAME.rsplit(".", 1)[1]

    def _check_input_dim(self, input):
        rank = self._DIM + 2
        if input.dim() != rank:
            raise ValueError(f"{self._QPLUGIN_NAME}: expected a {rank}-D {_INPUT_SHAPES[rank]}"
                             f" input, got {input.dim()}-D")

    @classmethod
    def _float_bn_module(cls):
        return getattr(torch.nn, f"BatchNorm{cls._DIM}d")

    @classmethod
    def _nni_bn_relu_module(cls):
        return f"BNReLU{cls._DIM}d"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """From an observed torch.nn.BatchNorm{2,3}d (or, for the BNReLU subclasses, a fused
        BNReLU{2,3}d, qplugin's or torch.ao's) as prepare leaves it: output
        qparams from its activation_post_process; weight, bias and running statistics shared
        with the float module (as PyTorch's from_float does)."""
        owner = f"{cls._QPLUGIN_NAME}.from_float"
        # The fused BNReLU classes: qplugin's float one and torch.ao's when importable
        # (qplugin/_ao.py), looked up here (qplugin.quantization imports qplugin.nn).
        from qplugin._ao import classes
        bn_relu = classes(f"intrinsic.{cls._nni_bn_relu_module()}")
        if cls._FLOAT_MODULE is cls._float_bn_module():
            # PyTorch's BatchNorm2d.from_float takes a fused BNReLU2d too and silently drops the
            # ReLU; qplugin refuses, naming the fused module class to use.
            float_classes = (cls._FLOAT_MODULE,)
            hint = {c: "a fused BatchNorm + ReLU converts to"
                    f" qplugin.nn.intrinsic.{cls._nni_bn_relu_module()}" for c in bn_relu}
        else:
            # ... and PyTorch's BNReLU2d.from_float takes a plain BatchNorm2d, adding a ReLU.
            float_classes = bn_relu
            name = cls._float_bn_module().__name__
            hint = {cls._float_bn_module(): f"a plain {name} converts to qplugin.nn.{name}; fuse"
                    " it with its ReLU first (qplugin.quantization.fuse_modules)"}
        _check_float_module(owner, mod, float_classes, hint)
        scale, zero_point = _observer_qparams(owner, mod)
        bn = mod[0] if type(mod) in bn_relu else mod
        cls._check_running_stats(owner, bn)
        new_mod = cls(bn.num_features, bn.eps, bn.momentum)
        cls._copy_params(new_mod, bn)
        new_mod.scale = scale
        new_mod.zero_point = zero_point
        return new_mod

    @staticmethod
    def _check_running_stats(owner, bn):
        if bn.running_mean is None or bn.running_var is None:
            raise ValueError(f"{owner}: expected a batch norm with running statistics"
                             " (track_running_stats=True), got one without; inference needs"
                             " running_mean and running_var")

    @staticmethod
    def _copy_params(new_mod, bn):
        new_mod.weight = bn.weight
        new_mod.bias = bn.bias
        new_mod.running_mean = bn.running_mean
        new_mod.running_var = bn.running_var

    @classmethod
    def from_reference(cls, bn, output_scale, output_zero_point):
        """From a float torch.nn.BatchNorm{2,3}d (the reference lowering path; for the BNReLU
        subclasses a fused float torch.ao.nn.intrinsic.BNReLU{2,3}d) and the output qparams
        (floats or one-element tensors)."""
        owner = f"{cls._QPLUGIN_NAME}.from_reference"
        if cls._FLOAT_MODULE is not cls._float_bn_module():
            name = cls._nni_bn_relu_module()
            from qplugin._ao import classes
            if type(bn) not in classes(f"intrinsic.{name}"):
                raise TypeError(f"{owner}: expected a torch.ao.nn.intrinsic.{name}, got"
                                f" {type(bn).__module__}.{type(bn).__qualname__}")
            bn = bn[0]
        _check_float_module(owner, bn, (cls._float_bn_module(),))
        cls._check_running_stats(owner, bn)
        like = bn.weight if bn.weight is not None else bn.running_mean
        qbn = cls(bn.num_features, bn.eps, bn.momentum, device=like.device, dtype=like.dtype)
        cls._copy_params(qbn, bn)
        qbn.scale = output_scale
        qbn.zero_point = output_zero_point
        return qbn


class BatchNorm2d(_BatchNorm):
    r"""Quantized :class:`~torch.nn.BatchNorm2d` (≙ :class:`torch.ao.nn.quantized.BatchNorm2d`):
    ``y = (x - mean) / sqrt(var + eps) * weight + bias``, requantized to the ``scale`` and
    ``zero_point`` buffers.

    Args:
        num_features: C of an :math:`(N, C, H, W)` input
        eps: added to the variance for numerical stability. Default: 1e-5
        momentum: kept for torch.nn compatibility (unused in inference). Default: 0.1
        device, dtype: factory arguments of the floating parameters and buffers
    """

    _DIM = 2
    _FLOAT_MODULE = torch.nn.BatchNorm2d
    _QPLUGIN_NAME = "qplugin.nn.BatchNorm2d"

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        # The op checks the input (quantized, 4-D, C channels); no Python-side check, as PyTorch's.
        return torch.ops.qplugin.batch_norm2d(input, self.weight, self.bias, self.running_mean,
                                              self.running_var, self.eps, float(self.scale),
                                              int(self.zero_point))


class BatchNorm3d(_BatchNorm):
    r"""Quantized :class:`~torch.nn.BatchNorm3d` (≙ :class:`torch.ao.nn.quantized.BatchNorm3d`).

    Args:
        num_features: C of an :math:`(N, C, D, H, W)` input
        eps: added to the variance for numerical stability. Default: 1e-5
        momentum: kept for torch.nn compatibility (unused in inference). Default: 0.1
        device, dtype: factory arguments of the floating parameters and buffers
    """

    _DIM = 3
    _FLOAT_MODULE = torch.nn.BatchNorm3d
    _QPLUGIN_NAME = "qplugin.nn.BatchNorm3d"

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return torch.ops.qplugin.batch_norm3d(input, self.weight, self.bias, self.running_mean,
                                              self.running_var, self.eps, float(self.scale),
                                              int(self.zero_point))
