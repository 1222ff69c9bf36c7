"""QAT modules (≙ torch.ao.nn.qat and torch.ao.nn.intrinsic.qat): float modules whose weight goes
through ``weight_fake_quant`` in forward -- Linear, Conv1d/2d/3d, Embedding, EmbeddingBag, and the
fused ConvReLU*d, ConvBn*d, ConvBnReLU*d (batch norm folded approximately, torch.ao's
"_forward_approximate"), LinearReLU, LinearBn1d. prepare_qat swaps them in; convert turns them
into qplugin.nn modules. Construction draws the same random numbers as torch.ao's, so a model
prepared by either computes the same.
Changes with: fused.py, _prepare.py (QAT mapping), qplugin/nn from_float (the QAT branches),
tests/quantization/test_qat.py.
"""
import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn import init
from torch.nn.parameter import Parameter
from torch.nn.utils.fusion import fuse_conv_bn_weights, fuse_linear_bn_weights
from torch.nn.utils.parametrize import type_before_parametrizations

from . import fused as _fused

__all__ = [
    "Conv1d", "Conv2d", "Conv3d", "ConvBn1d", "ConvBn2d", "ConvBn3d", "ConvBnReLU1d",
    "ConvBnReLU2d", "ConvBnReLU3d", "ConvReLU1d", "ConvReLU2d", "ConvReLU3d", "Embedding",
    "EmbeddingBag", "Linear", "LinearBn1d", "LinearReLU", "freeze_bn_stats", "update_bn_stats",
]


def _ao_twin(pkg: str, name: str):
    from .._ao import torch_ao
    m = torch_ao(pkg)
    return getattr(m, name, None) if m is not None else None


def _float_classes(cls):
    """The float classes `cls.from_float` takes: qplugin's `_FLOAT_MODULE`, and the torch.ao
    twin (named `_AO_FLOAT`) when torch.ao imports."""
    out = (cls._FLOAT_MODULE,)
    pkg, name = getattr(cls, "_AO_FLOAT", (None, None))
    twin = _ao_twin(pkg, name) if pkg else None
    return out + ((twin,) if twin is not None and twin not in out else ())


def _check_from_float(cls, mod):
    allowed = _float_classes(cls)
    if type_before_parametrizations(mod) not in allowed:
        names = " or ".join(f"{c.__module__}.{c.__qualname__}" for c in allowed)
        raise TypeError(f"qplugin.quantization.qat.{cls.__name__}.from_float: expected {names},"
                        f" got {type(mod).__name__}")
    if not getattr(mod, "qconfig", None):
        raise ValueError(f"qplugin.quantization.qat.{cls.__name__}.from_float: expected a module"
                         " with a qconfig (propagate_qconfig_ or set .qconfig first)")


def _need_qconfig(owner, qconfig):
    if not qconfig:
        raise ValueError(f"qplugin.quantization.qat.{owner}: expected a qconfig, got {qconfig}")


def _init_fake_quant(module, qconfig, factory_kwargs, check=_need_qconfig, owner=None):
    check(owner or type(module).__name__, qconfig)
    module.qconfig = qconfig
    module.weight_fake_quant = qconfig.weight(factory_kwargs=factory_kwargs)


def _unfused(mod):
    """(qconfig, the float layer) of a float layer or a fused ReLU one (LinearReLU, ConvReLU*d):
    the qconfig is the fused module's (torch.ao reads its child's: the same after
    propagate_qconfig_)."""
    return mod.qconfig, mod[0] if isinstance(mod, nn.Sequential) else mod


def _share_weight_bias(qat, mod):
    """from_float: the QAT module takes the float layer's weight and bias Parameters."""
    qat.weight = mod.weight
    qat.bias = mod.bias
    return qat


def _detached_weight_bias(qat, float_mod):
    """to_float: the float layer gets copies (detached Parameters) of the QAT weight and bias."""
    float_mod.weight = Parameter(qat.weight.detach())
    if qat.bias is not None:
        float_mod.bias = Parameter(qat.bias.detach())
    return float_mod


class Linear(nn.Linear):
    r"""Linear with fake-quantized weight (≙ torch.ao.nn.qat.Linear)."""

    _FLOAT_MODULE = nn.Linear

    def __init__(self, in_features, out_features, bias=True, qconfig=None, device=None,
                 dtype=None) -> None:
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__(in_features, out_features, bias, **factory_kwargs)
        _init_fake_quant(self, qconfig, factory_kwargs)

    def forward(self, input):
        return F.linear(input, self.weight_fake_quant(self.weight), self.bias)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        if type_before_parametrizations(mod) is nn.modules.linear.NonDynamicallyQuantizableLinear \
                and cls is Linear:
            pass  # ≙ torch.ao's QAT mapping, which maps it to qat.Linear
        else:
            _check_from_float(cls, mod)
        if not getattr(mod, "qconfig", None):
            raise ValueError(f"qplugin.quantization.qat.{cls.__name__}.from_float: expected a"
                             " module with a qconfig")
        qconfig, mod = _unfused(mod)
        qat = cls(mod.in_features, mod.out_features, bias=mod.bias is not None, qconfig=qconfig)
        return _share_weight_bias(qat, mod)

    def to_float(self):
        linear = nn.Linear(self.in_features, self.out_features, self.bias is not None)
        _detached_weight_bias(self, linear)
        linear.train(self.training)
        return linear


class LinearReLU(Linear, _fused._FusedModule):
    r"""Fused Linear + ReLU with fake-quantized weight (≙ torch.ao.nn.intrinsic.qat.LinearReLU)."""

    _FLOAT_MODULE = _fused.LinearReLU
    _AO_FLOAT = ("nn.intrinsic", "LinearReLU")

    def __init__(self, in_features, out_features, bias=True, qconfig=None):
        super().__init__(in_features, out_features, bias, qconfig)

    def forward(self, input):
        return F.relu(F.linear(input, self.weight_fake_quant(self.weight), self.bias))

    def to_float(self):
        return _fused.LinearReLU(super().to_float(), nn.ReLU())


class _ConvNd(nn.modules.conv._ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 transposed, output_padding, groups, bias, padding_mode, qconfig=None,
                 device=None, dtype=None) -> None:
        factory_kwargs = {"device": device, "dtype": dtype}
        nn.modules.conv._ConvNd.__init__(self, in_channels, out_channels, kernel_size, stride,
                                         padding, dilation, transposed, output_padding, groups,
                                         bias, padding_mode, **factory_kwargs)
        _init_fake_quant(self, qconfig, factory_kwargs)

    def forward(self, input):
        return self._conv_forward(input, self.weight_fake_quant(self.weight), self.bias)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        _check_from_float(cls, mod)
        qconfig, mod = _unfused(mod)
        qat = cls(mod.in_channels, mod.out_channels, mod.kernel_size, stride=mod.stride,
                  padding=mod.padding, dilation=mod.dilation, groups=mod.groups,
                  bias=mod.bias is not None, padding_mode=mod.padding_mode, qconfig=qconfig)
        return _share_weight_bias(qat, mod)

    def to_float(self):
        conv = self._FLOAT_CONV_MODULE(self.in_channels, self.out_channels, self.kernel_size,
                                       self.stride, self.padding, self.dilation, self.groups,
                                       self.bias is not None, self.padding_mode)
        _detached_weight_bias(self, conv)
        if isinstance(self, _fused._FusedModule):
            out = self._FLOAT_MODULE(conv, nn.ReLU())
            out.train(self.training)
            return out
        return conv


def _fused_class(name, bases, doc, **attrs):
    """The QAT class `name` (a class of fused.py, torch.ao.nn.intrinsic's twin, is its float
    module), defined in this module."""
    return type(name, bases, {"__module__": __name__, "__qualname__": name,
                              "_FLOAT_MODULE": getattr(_fused, name),
                              "_AO_FLOAT": ("nn.intrinsic", name), "__doc__": doc, **attrs})


def _conv_classes(d: int):
    float_conv = getattr(nn, f"Conv{d}d")

    def init_conv(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                  groups=1, bias=True, padding_mode="zeros", qconfig=None, device=None,
                  dtype=None):
        # float_conv's argument normalisation (tuples, string padding), then _ConvNd's init
        tmp = nn.modules.utils._ntuple(d)
        padding_ = padding if isinstance(padding, str) else tmp(padding)
        _ConvNd.__init__(self, in_channels, out_channels, tmp(kernel_size), tmp(stride),
                         padding_, tmp(dilation), False, tmp(0), groups, bias, padding_mode,
                         qconfig=qconfig, device=device, dtype=dtype)

    conv = type(f"Conv{d}d", (_ConvNd, float_conv), {
        "__init__": init_conv, "__module__": __name__, "__qualname__": f"Conv{d}d",
        "_FLOAT_MODULE": float_conv, "_FLOAT_CONV_MODULE": float_conv,
        "__doc__": f"Conv{d}d with fake-quantized weight (≙ torch.ao.nn.qat.Conv{d}d)."})
    conv_relu = _fused_class(
        f"ConvReLU{d}d", (conv, _fused._FusedModule),
        f"Fused Conv{d}d + ReLU with fake-quantized weight"
        f" (≙ torch.ao.nn.intrinsic.qat.ConvReLU{d}d).",
        _FLOAT_CONV_MODULE=float_conv, _FLOAT_RELU_MODULE=nn.ReLU,
        forward=lambda self, input: F.relu(
            self._conv_forward(input, self.weight_fake_quant(self.weight), self.bias)))
    return conv, conv_relu


Conv1d, ConvReLU1d = _conv_classes(1)
Conv2d, ConvReLU2d = _conv_classes(2)
Conv3d, ConvReLU3d = _conv_classes(3)
_BN = {1: nn.BatchNorm1d, 2: nn.BatchNorm2d, 3: nn.BatchNorm3d}


class _BnStatsMixin:
    """The batch norm of ConvBn*d and LinearBn1d: its construction, freeze_bn /
    update_bn_stats / train, the folded forward, from_float's parameter sharing."""

    def _setup_bn(self, bn_class, out_features, bias, eps, momentum, freeze_bn, qconfig):
        # In torch.ao's order (submodule order, random draws of reset_bn_parameters).
        self.qconfig = qconfig
        self.freeze_bn = freeze_bn if self.training else True
        self.bn = bn_class(out_features, eps, momentum, True, True)
        self.weight_fake_quant = self.qconfig.weight()
        if bias:
            self.bias = Parameter(torch.empty(out_features))
        else:
            self.register_parameter("bias", None)
        self.reset_bn_parameters()
        self._init_bn_state(freeze_bn)

    def reset_bn_parameters(self):
        self.bn.reset_running_stats()
        init.uniform_(self.bn.weight)
        init.zeros_(self.bn.bias)

    def _take_parameters(self, layer, bn):
        """from_float: share the float conv / linear's and batch norm's parameters and stats."""
        _share_weight_bias(self, layer)
        self.bn.weight = bn.weight
        self.bn.bias = bn.bias
        self.bn.running_mean = bn.running_mean
        self.bn.running_var = bn.running_var
        self.bn.num_batches_tracked = bn.num_batches_tracked
        return self

    def reset_running_stats(self):
        self.bn.reset_running_stats()

    def update_bn_stats(self):
        self.freeze_bn = False
        self.bn.training = True
        return self

    def freeze_bn_stats(self):
        self.freeze_bn = True
        self.bn.training = False
        return self

    def train(self, mode=True):
        self.training = mode
        if not self.freeze_bn:
            for module in self.children():
                module.train(mode)
        return self

    def _init_bn_state(self, freeze_bn):
        if self.training and not freeze_bn:
            self.update_bn_stats()
        else:
            self.freeze_bn_stats()

    def _folded_forward(self, input, op, zero_bias_dtype):
        # The batch norm folded into the weight with running statistics, the conv / linear
        # output unscaled and the batch norm applied (training updates its statistics):
        # torch.ao's "_forward_approximate", in the same operation order.
        if self.bn.running_var is None:
            raise ValueError(f"qplugin.quantization.qat.{type(self).__name__}: expected a batch"
                             " norm with running statistics")
        running_std = torch.sqrt(self.bn.running_var + self.bn.eps)
        scale_factor = self.bn.weight / running_std
        weight_shape = [1] * len(self.weight.shape)
        weight_shape[0] = -1
        bias_shape = [1] * len(self.weight.shape)
        bias_shape[1] = -1
        scaled_weight = self.weight_fake_quant(self.weight * scale_factor.reshape(weight_shape))
        # op(input, weight, bias): the conv's _conv_forward or F.linear; the zero bias has the
        # input's dtype for the convs (zero_bias_dtype), the default one for LinearBn1d (as
        # torch.ao's).
        if self.bias is not None:
            zero_bias = torch.zeros_like(self.bias, dtype=zero_bias_dtype)
        else:
            zero_bias = torch.zeros(self.bn.num_features, device=scaled_weight.device,
                                    dtype=zero_bias_dtype)
        out = op(input, scaled_weight, zero_bias)
        out = out / scale_factor.reshape(bias_shape)
        if self.bias is not None:
            out = out + self.bias.reshape(bias_shape)
        return self.bn(out)


class _ConvBnNd(_BnStatsMixin, nn.modules.conv._ConvNd, _fused._FusedModule):
    _version = 2

    def _setup(self, dim, out_channels, bias, eps, momentum, freeze_bn, qconfig):
        _need_qconfig(type(self).__name__, qconfig)
        self._setup_bn(_BN[dim], out_channels, bias, eps, momentum, freeze_bn, qconfig)
        self._enable_slow_path_for_better_numerical_stability = False

    def reset_bn_parameters(self):
        super().reset_bn_parameters()
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in)
            init.uniform_(self.bias, -bound, bound)

    def _forward(self, input):
        return self._folded_forward(input, self._conv_forward, input.dtype)

    def forward(self, input):
        return self._forward(input)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        _check_from_float(cls, mod)
        conv, bn = mod[0], mod[1]
        qat = cls(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride,
                  conv.padding, conv.dilation, conv.groups, conv.bias is not None,
                  conv.padding_mode, bn.eps, bn.momentum, False, mod.qconfig)
        return qat._take_parameters(conv, bn)

    def to_float(self):
        conv = self._FLOAT_CONV_MODULE(self.in_channels, self.out_channels, self.kernel_size,
                                       self.stride, self.padding, self.dilation, self.groups,
                                       self.bias is not None, self.padding_mode)
        _detached_weight_bias(self, conv)
        conv.weight, conv.bias = fuse_conv_bn_weights(
            conv.weight, conv.bias, self.bn.running_mean, self.bn.running_var, self.bn.eps,
            self.bn.weight, self.bn.bias)
        if self._RELU:
            out = getattr(_fused, f"ConvReLU{self._DIM}d")(conv, nn.ReLU())
            out.train(self.training)
            return out
        conv.train(self.training)
        return conv


def _conv_bn_classes(d: int):
    float_conv = getattr(nn, f"Conv{d}d")

    def init_conv_bn(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                     dilation=1, groups=1, bias=None, padding_mode="zeros", eps=1e-05,
                     momentum=0.1, freeze_bn=False, qconfig=None):
        tmp = nn.modules.utils._ntuple(d)
        nn.modules.conv._ConvNd.__init__(self, in_channels, out_channels, tmp(kernel_size),
                                         tmp(stride), tmp(padding), tmp(dilation), False,
                                         tmp(0), groups, False, padding_mode)
        self._setup(d, out_channels, bias, eps, momentum, freeze_bn, qconfig)

    conv_bn = _fused_class(
        f"ConvBn{d}d", (_ConvBnNd, float_conv),
        f"Fused Conv{d}d + BatchNorm{d}d for QAT (≙ torch.ao.nn.intrinsic.qat.ConvBn{d}d): the"
        " batch norm folded into the fake-quantized weight.",
        __init__=init_conv_bn, _DIM=d, _FLOAT_CONV_MODULE=float_conv, _RELU=False)
    conv_bn_relu = _fused_class(
        f"ConvBnReLU{d}d", (conv_bn,),
        f"Fused Conv{d}d + BatchNorm{d}d + ReLU for QAT (≙ torch.ao.nn.intrinsic.qat."
        f"ConvBnReLU{d}d).",
        _RELU=True, forward=lambda self, input: F.relu(self._forward(input)))
    return conv_bn, conv_bn_relu


ConvBn1d, ConvBnReLU1d = _conv_bn_classes(1)
ConvBn2d, ConvBnReLU2d = _conv_bn_classes(2)
ConvBn3d, ConvBnReLU3d = _conv_bn_classes(3)


class LinearBn1d(_BnStatsMixin, nn.Linear, _fused._FusedModule):
    r"""Fused Linear + BatchNorm1d for QAT (≙ torch.ao.nn.intrinsic.qat.LinearBn1d)."""

    _FLOAT_MODULE = _fused.LinearBn1d
    _AO_FLOAT = ("nn.intrinsic", "LinearBn1d")

    def __init__(self, in_features, out_features, bias=True, eps=1e-05, momentum=0.1,
                 freeze_bn=False, qconfig=None):
        nn.Linear.__init__(self, in_features, out_features, bias)
        _need_qconfig("LinearBn1d", qconfig)
        self._setup_bn(nn.BatchNorm1d, out_features, bias, eps, momentum, freeze_bn, qconfig)

    def forward(self, input):
        return self._folded_forward(input, F.linear, None)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        _check_from_float(cls, mod)
        linear, bn = mod[0], mod[1]
        qat = cls(linear.in_features, linear.out_features, linear.bias is not None, bn.eps,
                  bn.momentum, False, mod.qconfig)
        return qat._take_parameters(linear, bn)

    def to_float(self):
        linear = nn.Linear(self.in_features, self.out_features)
        linear.weight, linear.bias = fuse_linear_bn_weights(
            self.weight, self.bias, self.bn.running_mean, self.bn.running_var, self.bn.eps,
            self.bn.weight, self.bn.bias)
        return linear


def _check_embedding_qconfig(owner, qconfig):
    _need_qconfig(owner, qconfig)
    qscheme = qconfig.weight().qscheme
    if qscheme != torch.per_channel_affine_float_qparams:
        raise ValueError(f"qplugin.quantization.qat.{owner}: expected a weight qscheme of"
                         f" torch.per_channel_affine_float_qparams, got {qscheme}")


class _EmbeddingFromFloat:
    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """The QAT module of `mod`'s configuration (`_CONFIG`), sharing its weight."""
        _check_from_float(cls, mod)
        _check_embedding_qconfig(cls._FLOAT_MODULE.__name__, mod.qconfig)
        return cls(**{k: getattr(mod, k) for k in cls._CONFIG}, _weight=mod.weight,
                   qconfig=mod.qconfig)


class Embedding(_EmbeddingFromFloat, nn.Embedding):
    r"""Embedding with fake-quantized weight (≙ torch.ao.nn.qat.Embedding)."""

    _FLOAT_MODULE = nn.Embedding
    _CONFIG = ("num_embeddings", "embedding_dim", "padding_idx", "max_norm", "norm_type",
               "scale_grad_by_freq", "sparse")

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None,
                 norm_type=2.0, scale_grad_by_freq=False, sparse=False, _weight=None,
                 device=None, dtype=None, qconfig=None) -> None:
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__(num_embeddings, embedding_dim, padding_idx, max_norm, norm_type,
                         scale_grad_by_freq, sparse, _weight, **factory_kwargs)
        _init_fake_quant(self, qconfig, factory_kwargs, _check_embedding_qconfig, "Embedding")

    def forward(self, input):
        return F.embedding(input, self.weight_fake_quant(self.weight), self.padding_idx,
                           self.max_norm, self.norm_type, self.scale_grad_by_freq, self.sparse)


class EmbeddingBag(_EmbeddingFromFloat, nn.EmbeddingBag):
    r"""EmbeddingBag with fake-quantized weight (≙ torch.ao.nn.qat.EmbeddingBag)."""

    _FLOAT_MODULE = nn.EmbeddingBag
    _CONFIG = ("num_embeddings", "embedding_dim", "max_norm", "norm_type", "scale_grad_by_freq",
               "mode", "sparse", "include_last_offset", "padding_idx")

    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, mode="mean", sparse=False, _weight=None,
                 include_last_offset=False, padding_idx=None, qconfig=None, device=None,
                 dtype=None) -> None:
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__(num_embeddings, embedding_dim, max_norm, norm_type, scale_grad_by_freq,
                         mode, sparse, _weight, include_last_offset, padding_idx,
                         **factory_kwargs)
        _init_fake_quant(self, qconfig, factory_kwargs, _check_embedding_qconfig, "EmbeddingBag")

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(input, self.weight_fake_quant(self.weight), offsets,
                               self.max_norm, self.norm_type, self.scale_grad_by_freq, self.mode,
                               self.sparse, per_sample_weights, self.include_last_offset,
                               self.padding_idx)


def _is_qat_bn(mod) -> bool:
    # qplugin's ConvBn*d / LinearBn1d, or torch.ao.nn.intrinsic.qat's (by module path: no import)
    return isinstance(mod, (_ConvBnNd, LinearBn1d)) or (
        hasattr(mod, "freeze_bn_stats") and type(mod).__module__.startswith("torch.ao.nn"))


def update_bn_stats(mod):
    """``model.apply(update_bn_stats)``: QAT batch norms update their running statistics."""
    if _is_qat_bn(mod):
        mod.update_bn_stats()


def freeze_bn_stats(mod):
    """``model.apply(freeze_bn_stats)``: QAT batch norms use (and keep) their running
    statistics."""
    if _is_qat_bn(mod):
        mod.freeze_bn_stats()
