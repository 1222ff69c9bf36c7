"""qplugin.nn.Embedding / EmbeddingBag (≙ torch.ao.nn.quantized.Embedding / EmbeddingBag) on
torch.ops.qplugin.embedding_{byte,4bit} / embedding_bag_{byte,4bit}.

Changes with: csrc/packed/embedding_packed_params.{h,cpp} (the packed object and its pickled
state), csrc/ops/cpu/embedding_kernel.cpp (the lookups), tests/embedding/test_embedding_modules.py.
The state-dict layout is torch.ao's (version 1), so checkpoints load in both directions; only the
packed object inside differs (qplugin's, repacked on load).

Differences from torch.ao (extensions, documented): EmbeddingBag honours ``mode`` ('sum', 'mean',
'max'; torch.ao's always sums and accepts any string) and the float module's ``padding_idx``
(entries equal to it are left out of their bag, as in torch.nn.functional.embedding_bag).
"""
from typing import Optional

import torch
from torch import Tensor

from .linear import _hide_packed_params_repr
from .utils import _PackedHolder

__all__ = ["EmbeddingPackedParams", "Embedding", "EmbeddingBag"]

_DTYPES = (torch.quint8, torch.quint4x2)
_MODES = {"sum": 0, "mean": 1, "max": 2}


def _check_dtype(cls_name, dtype):
    if dtype not in _DTYPES:
        raise ValueError(f"qplugin.nn.{cls_name}: expected dtype torch.quint8 or torch.quint4x2, "
                         f"got {dtype}")


def _empty_weight(num_embeddings, embedding_dim, dtype):
    return torch._empty_per_channel_affine_quantized(
        [num_embeddings, embedding_dim], scales=torch.ones(num_embeddings, dtype=torch.float),
        zero_points=torch.zeros(num_embeddings, dtype=torch.float), axis=0, dtype=dtype)


def _quantize_weight(cls_name, float_wt, observer):
    """Quantizes an embedding table with its (called) float-qparams weight observer."""
    if observer.qscheme != torch.per_channel_affine_float_qparams:
        raise ValueError(
            f"qplugin.nn.{cls_name}.from_float: expected a weight observer with qscheme "
            f"torch.per_channel_affine_float_qparams (float_qparams_weight_only_qconfig or its "
            f"4-bit variant), got {observer.qscheme}")
    if observer.dtype not in _DTYPES:
        raise ValueError(f"qplugin.nn.{cls_name}.from_float: expected a weight observer of dtype "
                         f"torch.quint8 or torch.quint4x2, got {observer.dtype}")
    scale, zp = observer.calculate_qparams()
    return torch.quantize_per_channel(float_wt, scale.to(torch.float), zp.to(torch.float),
                                      observer.ch_axis, observer.dtype)


class EmbeddingPackedParams(_PackedHolder):
    """Holds a torch.classes.qplugin.EmbeddingPackedParams (the fused row-wise table)."""

    _version = 1
    _STATE_KEY = "_packed_weight"

    def __init__(self, num_embeddings, embedding_dim, dtype=torch.quint8):
        super().__init__()
        _check_dtype("EmbeddingPackedParams", dtype)
        self.dtype = dtype
        self.set_weight(_empty_weight(num_embeddings, embedding_dim, dtype))

    @torch.jit.export
    def set_weight(self, weight: torch.Tensor) -> None:
        self._packed_weight = torch.ops.qplugin.embedding_bag_prepack(weight)

    @torch.jit.export
    def _weight(self):
        return torch.ops.qplugin.embedding_bag_unpack(self._packed_weight)

    def _unpacked(self):
        return self._weight()

    # State-dict layout (torch.ao's; written by _PackedHolder._save_to_state_dict):
    # Version 1
    #   self
    #   |--- _packed_weight : Tensor (the quint8 / quint4x2 weight, unpacked)
    #   |--- dtype : torch.dtype
    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        dtype = state_dict.pop(prefix + "dtype")
        _check_dtype("EmbeddingPackedParams", dtype)
        self.dtype = dtype
        self.set_weight(state_dict.pop(prefix + "_packed_weight"))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs)


class Embedding(torch.nn.Module):
    r"""A quantized Embedding: a row-wise quantized table (quint8 or quint4x2, float qparams per
    row), looked up with ``torch.ops.qplugin.embedding_byte`` / ``embedding_4bit``.

    Mirrors :class:`torch.ao.nn.quantized.Embedding` (same constructor, ``from_float``,
    ``from_reference``, state dict). ``max_norm``, ``norm_type``, ``scale_grad_by_freq`` and
    ``sparse`` are kept for the repr only (inference: no renormalization, no gradients).

    Examples::
        >>> m = qplugin.nn.Embedding(num_embeddings=10, embedding_dim=12)
        >>> m(torch.tensor([9, 6, 5, 7, 8, 8, 9, 2, 8])).size()
        torch.Size([9, 12])
    """

    _version = 1
    _FLOAT_MODULE = torch.nn.Embedding
    padding_idx: Optional[int]

    def __init__(self, num_embeddings: int, embedding_dim: int,
                 padding_idx: Optional[int] = None, max_norm: Optional[float] = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False,
                 _weight: Optional[Tensor] = None, dtype=torch.quint8) -> None:
        super().__init__()
        _check_dtype(type(self).__name__, dtype)
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.dtype = dtype
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"qplugin.nn.{type(self).__name__}: expected padding_idx in "
                                 f"[-{num_embeddings}, {num_embeddings}), got {padding_idx}")
            if padding_idx < 0:
                padding_idx += num_embeddings
        self.padding_idx = padding_idx
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        if _weight is None:
            qweight = _empty_weight(num_embeddings, embedding_dim, dtype)
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise ValueError(
                    f"qplugin.nn.{type(self).__name__}: expected _weight of shape "
                    f"[{num_embeddings}, {embedding_dim}], got {list(_weight.shape)}")
            qweight = _weight
        self._packed_params = EmbeddingPackedParams(num_embeddings, embedding_dim, dtype)
        self._packed_params.set_weight(qweight)

    def forward(self, indices: Tensor) -> Tensor:
        if self.dtype == torch.quint4x2:
            return torch.ops.qplugin.embedding_4bit(self._packed_params._packed_weight, indices)
        return torch.ops.qplugin.embedding_byte(self._packed_params._packed_weight, indices)

    def _get_name(self):
        return "QuantizedEmbedding"

    def __repr__(self):
        return _hide_packed_params_repr(self, EmbeddingPackedParams)

    def extra_repr(self):
        s = (f"num_embeddings={self.num_embeddings}, embedding_dim={self.embedding_dim}, "
             f"dtype={self._packed_params.dtype}, qscheme={self.weight().qscheme()}")
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s

    def set_weight(self, w: torch.Tensor) -> None:
        """Packs a new quint8 / quint4x2 weight [num_embeddings, embedding_dim]."""
        self._packed_params.set_weight(w)
        self._packed_params.dtype = w.dtype
        self.dtype = w.dtype
        self.num_embeddings, self.embedding_dim = int(w.shape[0]), int(w.shape[1])

    def weight(self):
        """The quantized weight, unpacked (bit-exact)."""
        return self._packed_params._weight()

    @classmethod
    def _observer_of(cls, mod, qat_classes):
        from torch.nn.utils.parametrize import type_before_parametrizations
        qat_cls = qat_classes[0]
        if hasattr(mod, "weight_fake_quant"):
            if type_before_parametrizations(mod) not in qat_classes:
                raise TypeError(f"qplugin.nn.{cls.__name__}.from_float: with fake quant expected "
                                f"{qat_cls.__module__}.{qat_cls.__name__}, got "
                                f"{type(mod).__name__}")
            return mod.weight_fake_quant
        if type_before_parametrizations(mod) is not cls._FLOAT_MODULE:
            raise TypeError(f"qplugin.nn.{cls.__name__}.from_float: expected "
                            f"torch.nn.{cls._FLOAT_MODULE.__name__} or {qat_cls.__module__}."
                            f"{qat_cls.__name__}, got {type(mod).__name__}")
        if not hasattr(mod, "qconfig"):
            raise ValueError(f"qplugin.nn.{cls.__name__}.from_float: expected a module with a "
                             "qconfig (e.g. qplugin.quantization.float_qparams_weight_only_qconfig)")
        if mod.qconfig is not None and mod.qconfig.weight is not None:
            return mod.qconfig.weight()
        from ...quantization.qconfig import float_qparams_weight_only_qconfig
        return float_qparams_weight_only_qconfig.weight()

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        r"""Creates a qplugin Embedding from a float ``nn.Embedding`` with a weight-only qconfig
        (``float_qparams_weight_only_qconfig`` or ``float_qparams_weight_only_qconfig_4bit``),
        or a QAT ``qplugin.quantization.qat.Embedding`` (or torch.ao.nn.qat's)."""
        from qplugin._ao import classes
        observer = cls._observer_of(mod, classes("qat.Embedding"))
        observer(mod.weight)
        qweight = _quantize_weight(cls.__name__, mod.weight.detach().float(), observer)
        q = cls(mod.num_embeddings, mod.embedding_dim, padding_idx=mod.padding_idx,
                max_norm=mod.max_norm, norm_type=mod.norm_type,
                scale_grad_by_freq=mod.scale_grad_by_freq, sparse=mod.sparse,
                dtype=observer.dtype)
        q.set_weight(qweight)
        return q

    @classmethod
    def from_reference(cls, ref_embedding):
        """Creates a qplugin Embedding from ``torch.ao.nn.quantized.reference.Embedding``."""
        return cls(ref_embedding.num_embeddings, ref_embedding.embedding_dim,
                   ref_embedding.padding_idx, ref_embedding.max_norm, ref_embedding.norm_type,
                   ref_embedding.scale_grad_by_freq, ref_embedding.sparse,
                   ref_embedding.get_quantized_weight(), ref_embedding.weight_dtype)


class EmbeddingBag(Embedding):
    r"""A quantized EmbeddingBag: bags of rows of a row-wise quantized table (quint8 or
    quint4x2), reduced by ``mode`` with ``torch.ops.qplugin.embedding_bag_byte`` /
    ``embedding_bag_4bit``.

    Mirrors :class:`torch.ao.nn.quantized.EmbeddingBag`, except that ``mode`` is honoured
    ('sum', 'mean' or 'max'; torch.ao's always sums) and unknown modes are rejected.
    ``padding_idx`` (carried over by ``from_float``) leaves those entries out of their bags, as
    ``torch.nn.functional.embedding_bag`` does.

    Examples::
        >>> m = qplugin.nn.EmbeddingBag(10, 12, include_last_offset=True, mode='sum')
        >>> indices = torch.tensor([9, 6, 5, 7, 8, 8, 9, 2, 8, 6, 6, 9, 1, 6, 8, 8, 3, 2, 3, 6,
        ...                         3, 6, 5, 7, 0, 8, 4, 6, 5, 8, 2, 3])
        >>> m(indices, torch.tensor([0, 19, 20, 28, 28, 32])).size()
        torch.Size([5, 12])
    """

    _version = 1
    _FLOAT_MODULE = torch.nn.EmbeddingBag
    padding_idx: Optional[int]
    _padding_mapping: Optional[Tensor]

    def __init__(self, num_embeddings: int, embedding_dim: int,
                 max_norm: Optional[float] = None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, mode: str = "sum", sparse: bool = False,
                 _weight: Optional[Tensor] = None, include_last_offset: bool = False,
                 dtype=torch.quint8) -> None:
        super().__init__(num_embeddings, embedding_dim, max_norm=max_norm, norm_type=norm_type,
                         scale_grad_by_freq=scale_grad_by_freq, sparse=sparse, _weight=_weight,
                         dtype=dtype)
        if mode not in _MODES:
            raise ValueError(f"qplugin.nn.EmbeddingBag: expected mode 'sum', 'mean' or 'max', "
                             f"got {mode!r}")
        self.mode = mode
        self._mode_id = _MODES[mode]
        self.pruned_weights = False
        self.include_last_offset = include_last_offset
        self._padding_mapping: Optional[Tensor] = None

    def _set_padding_idx(self, padding_idx: Optional[int]) -> None:
        if padding_idx is not None and padding_idx < 0:
            padding_idx += self.num_embeddings
        self.padding_idx = padding_idx
        if padding_idx is None:
            self._padding_mapping = None
        else:
            m = torch.arange(self.num_embeddings, dtype=torch.int32)
            m[padding_idx] = -1
            self._padding_mapping = m

    def forward(self, indices: Tensor, offsets: Optional[Tensor] = None,
                per_sample_weights: Optional[Tensor] = None,
                compressed_indices_mapping: Optional[Tensor] = None) -> Tensor:
        pruned = self.pruned_weights
        mapping = compressed_indices_mapping
        pad = self._padding_mapping
        if pad is not None:
            # padding_idx entries map to -1 (a pruned row: neither added nor counted).
            if mapping is None or not pruned:
                mapping = pad
            else:
                mapping = mapping.clone()
                p = self.padding_idx
                if p is not None and p < mapping.numel():
                    mapping[p] = -1
            pruned = True
        if self.dtype == torch.quint4x2:
            return torch.ops.qplugin.embedding_bag_4bit(
                self._packed_params._packed_weight, indices, offsets, False, self._mode_id,
                pruned, per_sample_weights, mapping, self.include_last_offset)
        return torch.ops.qplugin.embedding_bag_byte(
            self._packed_params._packed_weight, indices, offsets, False, self._mode_id,
            pruned, per_sample_weights, mapping, self.include_last_offset)

    def _get_name(self):
        return "QuantizedEmbeddingBag"

    def extra_repr(self):
        s = super().extra_repr()
        s += f", mode={self.mode}"
        if self.include_last_offset:
            s += ", include_last_offset=True"
        return s

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        r"""Creates a qplugin EmbeddingBag from a float ``nn.EmbeddingBag`` with a weight-only
        qconfig, or a QAT ``qplugin.quantization.qat.EmbeddingBag`` (or torch.ao's); keeps ``mode``,
        ``include_last_offset`` and ``padding_idx``."""
        from qplugin._ao import classes
        observer = cls._observer_of(mod, classes("qat.EmbeddingBag"))
        observer(mod.weight)
        qweight = _quantize_weight(cls.__name__, mod.weight.detach().float(), observer)
        q = cls(mod.num_embeddings, mod.embedding_dim, max_norm=mod.max_norm,
                norm_type=mod.norm_type, scale_grad_by_freq=mod.scale_grad_by_freq,
                mode=mod.mode, sparse=mod.sparse, include_last_offset=mod.include_last_offset,
                dtype=observer.dtype)
        q.set_weight(qweight)
        q._set_padding_idx(mod.padding_idx)
        return q

    @classmethod
    def from_reference(cls, ref_embedding_bag):
        """Creates a qplugin EmbeddingBag from ``torch.ao.nn.quantized.reference.EmbeddingBag``."""
        q = cls(ref_embedding_bag.num_embeddings, ref_embedding_bag.embedding_dim,
                ref_embedding_bag.max_norm, ref_embedding_bag.norm_type,
                ref_embedding_bag.scale_grad_by_freq, ref_embedding_bag.mode,
                ref_embedding_bag.sparse, ref_embedding_bag.get_quantized_weight(),
                ref_embedding_bag.include_last_offset, ref_embedding_bag.weight_dtype)
        q._set_padding_idx(ref_embedding_bag.padding_idx)
        return q
