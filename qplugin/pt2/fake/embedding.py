"""Fake kernels of the embedding ops that take plain tensors (csrc/ops/embedding.cpp,
ops/cpu/embedding_kernel.cpp): the fused-row prepack/unpack ops and the rowwise lookups on a
uint8 fused table. Output shapes and dtypes as the real kernels, with their cheap (shape and
dtype) checks; checks that read values (indices in range, offsets ascending) stay in the real
kernels."""
import torch

from ._common import fail

__all__ = []


def _float_weight(op, w):
    if w.is_quantized or w.dtype not in (torch.float32, torch.float16):
        fail(op, f"expected a float32 or float16 weight, got {w.dtype}")


@torch.library.register_fake("qplugin::embedding_bag_byte_prepack")
def _byte_prepack(weight):
    op = "embedding_bag_byte_prepack"
    if weight.dim() < 1:
        fail(op, f"expected a weight of rank >= 1 [..., embedding_dim], got {weight.dim()}-D")
    _float_weight(op, weight)
    if weight.shape[-1] < 1:
        fail(op, f"expected embedding_dim >= 1, got {weight.shape[-1]}")
    return weight.new_empty((*weight.shape[:-1], weight.shape[-1] + 8), dtype=torch.uint8)


def _nbit_prepack(bits):
    op = f"embedding_bag_{bits}bit_prepack"
    per = 8 // bits

    @torch.library.register_fake(f"qplugin::{op}")
    def _fake(weight, optimized_qparams=False, nbins=200, ratio=0.16):
        if weight.dim() != 2:
            fail(op, f"expected 2-D weight [num_embeddings, embedding_dim], got "
                 f"{weight.dim()}-D")
        if optimized_qparams:
            if not 1 <= nbins <= 2 ** 31 - 1:
                fail(op, f"expected nbins >= 1 with optimized_qparams=True (and <= 2^31 - 1), "
                     f"got {nbins}")
            if not 0.0 <= ratio <= 1.0:
                fail(op, f"expected a ratio in [0, 1] with optimized_qparams=True, got {ratio}")
        _float_weight(op, weight)
        cols = weight.shape[1]
        if cols < per or cols % per != 0:
            fail(op, f"expected an embedding_dim that is a multiple of {per} (>= {per}), "
                 f"got {cols}")
        return weight.new_empty((weight.shape[0], cols // per + 4), dtype=torch.uint8)
    return _fake


def _table(op, t, min_dim):
    if t.is_quantized or t.dtype != torch.uint8:
        fail(op, f"expected a torch.uint8 fused table (from embedding_bag_*_prepack), got "
             f"{t.dtype}")
    if t.dim() < min_dim:
        fail(op, f"expected a table of rank >= {min_dim}, got {t.dim()}-D")


@torch.library.register_fake("qplugin::embedding_bag_byte_unpack")
def _byte_unpack(weight):
    op = "embedding_bag_byte_unpack"
    _table(op, weight, 1)
    if weight.shape[-1] < 8:
        fail(op, f"expected rows of >= 8 bytes (codes, fp32 scale, fp32 bias), got "
             f"{weight.shape[-1]}")
    return weight.new_empty((*weight.shape[:-1], weight.shape[-1] - 8), dtype=torch.float32)


def _nbit_unpack(bits):
    op = f"embedding_bag_{bits}bit_unpack"

    @torch.library.register_fake(f"qplugin::{op}")
    def _fake(weight):
        _table(op, weight, 1)
        if weight.dim() != 2:
            fail(op, f"expected a 2-D table, got {weight.dim()}-D")
        if weight.shape[1] < 4:
            fail(op, f"expected rows of >= 4 bytes (codes, fp16 scale, fp16 bias), got "
                 f"{weight.shape[1]}")
        return weight.new_empty((weight.shape[0], (weight.shape[1] - 4) * (8 // bits)),
                                dtype=torch.float32)
    return _fake


def _index(op, arg, t):
    if t.is_quantized or t.dtype not in (torch.int32, torch.int64):
        fail(op, f"expected {arg} of dtype torch.int32 or torch.int64, got {t.dtype}")


def bag_output(op, dim, indices, offsets, mode, pruned_weights, per_sample_weights,
               compressed_indices_mapping, include_last_offset):
    """The [num_bags, dim] float32 output of a bag lookup (the real `lookup`'s shape rules)."""
    if mode not in (0, 1, 2):
        fail(op, f"expected mode 0 (sum), 1 (mean) or 2 (max), got {mode}")
    _index(op, "indices", indices)
    if offsets is not None:
        _index(op, "offsets", offsets)
        if indices.dim() != 1:
            fail(op, f"expected 1-D indices when offsets are given, got {indices.dim()}-D")
        if offsets.dim() != 1:
            fail(op, f"expected 1-D offsets, got {offsets.dim()}-D")
        m = offsets.shape[0]
        if include_last_offset and m < 1:
            fail(op, "expected at least one offset with include_last_offset=True, got none")
        nbags = m - 1 if include_last_offset else m
    else:
        if indices.dim() != 2:
            fail(op, f"expected offsets for 1-D indices (or 2-D indices [bags, bag_size] "
                 f"without offsets), got {indices.dim()}-D indices and no offsets")
        nbags = indices.shape[0]
    if per_sample_weights is not None:
        if mode != 0:
            fail(op, f"expected per_sample_weights only with mode 0 (sum), got mode {mode}")
        if per_sample_weights.dtype not in (torch.float32, torch.float16):
            fail(op, f"expected per_sample_weights of dtype torch.float32 or torch.float16, "
                 f"got {per_sample_weights.dtype}")
        w = per_sample_weights
        if w.numel() != indices.numel() or (w.dim() != 1 and w.shape != indices.shape):
            fail(op, f"expected per_sample_weights of the shape of indices "
                 f"{list(indices.shape)}, got {list(w.shape)}")
    if pruned_weights and compressed_indices_mapping is None:
        fail(op, "expected compressed_indices_mapping with pruned_weights=True, got None")
    return indices.new_empty((nbags, dim), dtype=torch.float32)


def _rowwise(bits):
    name = {8: "byte", 4: "4bit", 2: "2bit"}[bits]
    op = f"embedding_bag_{name}_rowwise_offsets"

    @torch.library.register_fake(f"qplugin::{op}")
    def _fake(weight, indices, offsets=None, scale_grad_by_freq=False, mode=0,
              pruned_weights=False, per_sample_weights=None, compressed_indices_mapping=None,
              include_last_offset=False):
        _table(op, weight, 2)
        if weight.dim() != 2:
            fail(op, f"expected a 2-D fused table [num_embeddings, row_bytes], got "
                 f"{weight.dim()}-D")
        extra = 8 if bits == 8 else 4
        rb = weight.shape[1]
        if rb < extra:
            fail(op, f"expected rows of >= {extra} bytes, got {rb}")
        dim = rb - 8 if bits == 8 else (rb - 4) * (8 // bits)
        return bag_output(op, dim, indices, offsets, mode, pruned_weights, per_sample_weights,
                          compressed_indices_mapping, include_last_offset)
    return _fake


for _b in (4, 2):
    _nbit_prepack(_b)
    _nbit_unpack(_b)
for _b in (8, 4, 2):
    _rowwise(_b)


# ---- Lookups on a qplugin.EmbeddingPackedParams (read through its fake class, fake/packed.py).

def _packed(op, w, bits):
    from .packed import packed_view  # the fake classes live there (registered on import)
    p = packed_view(w)
    if p.bit_rate() != bits:
        fail(op, f"expected a {bits}-bit packed table "
             f"({'torch.quint8' if bits == 8 else 'torch.quint4x2'} weight), got a "
             f"{p.bit_rate()}-bit one; use {'the _byte op' if p.bit_rate() == 8 else 'the _4bit op'}")
    return p


def _packed_bag(bits):
    op = f"embedding_bag_{'byte' if bits == 8 else '4bit'}"

    @torch.library.register_fake(f"qplugin::{op}")
    def _fake(weight, indices, offsets=None, scale_grad_by_freq=False, mode=0,
              pruned_weights=False, per_sample_weights=None, compressed_indices_mapping=None,
              include_last_offset=False):
        p = _packed(op, weight, bits)
        return bag_output(op, p.embedding_dim, indices, offsets, mode, pruned_weights,
                          per_sample_weights, compressed_indices_mapping, include_last_offset)
    return _fake


def _packed_embedding(bits):
    name = "byte" if bits == 8 else "4bit"
    op = f"embedding_{name}"

    @torch.library.register_fake(f"qplugin::{op}")
    def _fake(weight, indices, pruned_weights=False):
        p = _packed(op, weight, bits)
        if pruned_weights:
            fail(op, "expected pruned_weights=False (this op takes no "
                 f"compressed_indices_mapping), got True; use embedding_bag_{name} with a "
                 "compressed_indices_mapping")
        _index(op, "indices", indices)
        return indices.new_empty((*indices.shape, p.embedding_dim), dtype=torch.float32)
    return _fake


for _b in (8, 4):
    _packed_bag(_b)
    _packed_embedding(_b)
