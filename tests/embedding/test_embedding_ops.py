# The embedding ops against torch.ops.quantized (prepack bytes, unpack, sum-mode lookups) and the
# float reference (torch.nn.functional.embedding_bag on the decoded table) for every mode, every
# ISA, int32/int64 indices and offsets, include_last_offset, per_sample_weights, pruned tables,
# empty bags and dims 1..300; plus every bad input. Changes with: csrc/ops/cpu/embedding_kernel.cpp.
#
# PyTorch 2.13 bug (reproduced, docs/oracle.md): torch.ops.quantized.embedding_bag_*
# ignore `mode` (mean and max return the sum; unknown modes are accepted), so mean and max are
# tested against torch.nn.functional.embedding_bag on the dequantized table, never against
# torch.ops.quantized. Its 2-D-indices path also drops the last bag when include_last_offset=True
# (F.embedding_bag keeps it; so does qplugin).
import functools
import os

import pytest
import torch

from conftest import SESSION_ISA
from _emb_common import (P, Q, assert_bag_close, decode, float_bag, prepack, rowwise,
                         torch_prepack, torch_rowwise)

DIMS = [1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 130, 200, 255,
        256, 257, 300]


def _weights(rows, dim, seed, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(rows, dim, generator=g) * 2 + torch.rand(rows, 1, generator=g)).to(dtype)


def _bags(rows, n, nbags, seed, idx_dtype=torch.int64, off_dtype=torch.int64):
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, rows, (n,), generator=g).to(idx_dtype)
    cuts = torch.sort(torch.randint(0, n + 1, (nbags - 1,), generator=g))[0]
    off = torch.cat([torch.zeros(1, dtype=torch.long), cuts]).to(off_dtype)
    return idx, off


# --- prepack / unpack: byte-identical to PyTorch's ----------------------------------------------

@pytest.mark.parametrize("dim", DIMS)
def test_byte_prepack_and_unpack_match_torch(dim):
    w = _weights(37, dim, dim)
    ours, theirs = P.embedding_bag_byte_prepack(w), Q.embedding_bag_byte_prepack(w)
    assert ours.dtype == torch.uint8 and torch.equal(ours, theirs)
    assert torch.equal(P.embedding_bag_byte_unpack(theirs), Q.embedding_bag_byte_unpack(theirs))


@pytest.mark.parametrize("dim", [d for d in DIMS if d % 2 == 0])
def test_4bit_prepack_and_unpack_match_torch(dim):
    w = _weights(37, dim, dim)
    ours, theirs = P.embedding_bag_4bit_prepack(w), Q.embedding_bag_4bit_prepack(w)
    assert torch.equal(ours, theirs)
    assert torch.equal(P.embedding_bag_4bit_unpack(theirs), Q.embedding_bag_4bit_unpack(theirs))


@pytest.mark.parametrize("bits", [8, 4])
def test_prepack_half_weight_and_constant_rows(bits):
    w = _weights(20, 16, 1)
    w[3] = 0.5  # range 0
    w[4] = 0.0
    w[5, ::2] = 1e-30  # tiny range
    for x in (w, w.half()):
        assert torch.equal(prepack(x, bits), torch_prepack(x, bits))


def test_byte_prepack_batched_weight_matches_torch():
    w = torch.randn(3, 5, 12)
    assert torch.equal(P.embedding_bag_byte_prepack(w), Q.embedding_bag_byte_prepack(w))
    t = Q.embedding_bag_byte_prepack(w)
    assert torch.equal(P.embedding_bag_byte_unpack(t), Q.embedding_bag_byte_unpack(t))


def test_prepack_bad_inputs():
    with pytest.raises(RuntimeError, match=r"qplugin::embedding_bag_4bit_prepack: expected an even"):
        P.embedding_bag_4bit_prepack(torch.randn(4, 7))
    with pytest.raises(RuntimeError, match=r"qplugin::embedding_bag_byte_prepack: expected a float32"):
        P.embedding_bag_byte_prepack(torch.zeros(4, 7, dtype=torch.int32))
    with pytest.raises(RuntimeError, match=r"expected finite weights"):
        P.embedding_bag_byte_prepack(torch.tensor([[1.0, float("nan")]]))
    with pytest.raises(RuntimeError, match=r"expected 2-D weight"):
        P.embedding_bag_4bit_prepack(torch.randn(2, 3, 4))
    with pytest.raises(RuntimeError, match=r"expected rows of >= 8 bytes"):
        P.embedding_bag_byte_unpack(torch.zeros(3, 5, dtype=torch.uint8))
    with pytest.raises(RuntimeError, match=r"expected a torch.uint8 fused table"):
        P.embedding_bag_4bit_unpack(torch.zeros(3, 5))


# --- lookups ------------------------------------------------------------------------------------

@pytest.mark.parametrize("bits", [8, 4])
@pytest.mark.parametrize("dim", [1, 2, 7, 16, 33, 64, 128, 130, 300])
def test_sum_matches_torch_and_float(isa, bits, dim):
    if bits == 4 and dim % 2:
        dim += 1
    w = _weights(150, dim, dim + bits)
    t = torch_prepack(w, bits)  # packed by PyTorch, read by qplugin
    idx, off = _bags(150, 400, 37, seed=dim)
    out = rowwise(bits)(t, idx, off)
    ref = torch_rowwise(bits)(t, idx, off)
    assert_bag_close(out, ref.double(), t, bits, idx)
    assert_bag_close(out, float_bag(t, bits, idx, off, 0), t, bits, idx)


@pytest.mark.parametrize("bits", [8, 4])
@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("dim", [2, 6, 16, 62, 128, 130, 256, 300])
def test_modes_match_float_embedding_bag(isa, bits, mode, dim):
    w = _weights(120, dim, 7 * dim + mode)
    t = prepack(w, bits)
    idx, off = _bags(120, 333, 41, seed=dim + mode)
    off[5] = off[4]  # an empty bag
    off = torch.sort(off)[0]
    out = rowwise(bits)(t, idx, off, False, mode)
    assert_bag_close(out, float_bag(t, bits, idx, off, mode), t, bits, idx)


@pytest.mark.parametrize("bits", [8, 4])
@pytest.mark.parametrize("mode", [0, 1, 2])
def test_every_isa_gives_the_scalar_bytes(isa, bits, mode):
    for dim in (2, 14, 16, 30, 32, 64, 96, 128, 130, 254, 256, 300):
        t = prepack(_weights(90, dim, dim), bits)
        idx, off = _bags(90, 700, 23, seed=dim)
        psw = torch.rand(700) * 3 - 1 if mode == 0 else None
        got = rowwise(bits)(t, idx, off, False, mode, False, psw)
        torch.ops.qplugin._set_cpu_isa("scalar")
        want = rowwise(bits)(t, idx, off, False, mode, False, psw)
        torch.ops.qplugin._set_cpu_isa(isa)
        assert torch.equal(got, want), (dim, (got - want).abs().max())


# 16-column sum and mean bags without weights on a table within L2: the avx2 kernel reduces two
# bags at a time (Ops::pair_sum16, rows alternating). Bag counts odd and even (the last bag alone),
# lengths equal, unequal either way and empty, int32 and int64 indices: the scalar tier's bytes.
@pytest.mark.parametrize("bits", [8, 4])
@pytest.mark.parametrize("mode", [0, 1])
@pytest.mark.parametrize("idx_dtype", [torch.int32, torch.int64])
def test_two_bag_sums_give_the_scalar_bytes(isa, bits, mode, idx_dtype):
    t = prepack(_weights(200, 16, 11), bits)
    g = torch.Generator().manual_seed(bits * 10 + mode)
    for lengths in ([3], [5, 5], [2, 7, 0, 4, 9], [7, 2, 4, 0, 0, 1], [0, 6], [6, 0, 3],
                    [20] * 8 + [19]):
        off = torch.tensor([0] + lengths[:-1]).cumsum(0)
        idx = torch.randint(0, 200, (sum(lengths),), generator=g, dtype=idx_dtype)
        got = rowwise(bits)(t, idx, off, False, mode)
        torch.ops.qplugin._set_cpu_isa("scalar")
        want = rowwise(bits)(t, idx, off, False, mode)
        torch.ops.qplugin._set_cpu_isa(isa)
        assert torch.equal(got, want), (lengths, (got - want).abs().max())
        assert_bag_close(got, float_bag(t, bits, idx, off, mode), t, bits, idx)


@pytest.mark.parametrize("bits", [8, 4, 2])
@pytest.mark.parametrize("idx_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("off_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("include_last_offset", [False, True])
def test_index_dtypes_include_last_offset_and_weights(bits, idx_dtype, off_dtype,
                                                      include_last_offset):
    t = prepack(_weights(64, 24, 3), bits)
    idx, off = _bags(64, 200, 17, seed=4, idx_dtype=idx_dtype, off_dtype=off_dtype)
    if include_last_offset:
        off = torch.cat([off, torch.tensor([200], dtype=off_dtype)])
    psw = torch.rand(200) * 2 - 0.5
    for weights in (None, psw):
        out = rowwise(bits)(t, idx, off, False, 0, False, weights, None, include_last_offset)
        ref = torch_rowwise(bits)(t, idx, off, False, 0, False, weights, None, include_last_offset)
        assert_bag_close(out, ref.double(), t, bits, idx, weights)
        assert_bag_close(out, float_bag(t, bits, idx, off, 0, weights, include_last_offset), t,
                         bits, idx, weights)


@pytest.mark.parametrize("bits", [8, 4])
def test_2d_indices_without_offsets(bits):
    t = prepack(_weights(30, 10, 5), bits)
    idx = torch.randint(0, 30, (6, 4))
    for mode in (0, 1, 2):
        out = rowwise(bits)(t, idx, None, False, mode)
        assert out.shape == (6, 10)
        assert_bag_close(out, float_bag(t, bits, idx, None, mode), t, bits, idx)
    assert torch.allclose(rowwise(bits)(t, idx), torch_rowwise(bits)(t, idx), atol=1e-5)
    # With include_last_offset, PyTorch's quantized op returns 5 bags here (it builds offsets
    # [0, 4, ..., 24] and then drops the last one); F.embedding_bag and qplugin return all 6.
    out = rowwise(bits)(t, idx, None, False, 0, False, None, None, True)
    assert_bag_close(out, float_bag(t, bits, idx, None, 0), t, bits, idx)


@pytest.mark.parametrize("bits", [8, 4, 2])
def test_empty_bags_and_empty_inputs(bits):
    t = prepack(_weights(10, 8, 1), bits)
    idx = torch.tensor([1, 2, 3])
    for mode in (0, 1, 2):
        out = rowwise(bits)(t, idx, torch.tensor([0, 0, 3, 3]), False, mode)
        assert torch.equal(out[0], torch.zeros(8)) and torch.equal(out[2], torch.zeros(8))
        assert_bag_close(out, float_bag(t, bits, idx, torch.tensor([0, 0, 3, 3]), mode), t, bits,
                         idx)
        out = rowwise(bits)(t, torch.tensor([], dtype=torch.long), torch.tensor([0, 0]), False,
                            mode)
        assert torch.equal(out, torch.zeros(2, 8))
        out = rowwise(bits)(t, idx, torch.tensor([], dtype=torch.long), False, mode)
        assert out.shape == (0, 8)
    # Zero-row table, no lookups.
    empty = prepack(torch.zeros(0, 8), bits)
    assert rowwise(bits)(empty, torch.tensor([], dtype=torch.long), torch.tensor([0])).shape == (1, 8)


@pytest.mark.parametrize("bits", [8, 4, 2])
def test_first_offset_past_zero(bits):
    # torch.ops.quantized accepts offsets[0] > 0; its 8-bit op reads bag b as
    # indices[offsets[b]:offsets[b+1]] (the indices before offsets[0] belong to no bag), its 4-bit
    # op returns something else (garbage, docs/oracle.md). qplugin reads the 8-bit op's
    # bags for both tables; F.embedding_bag would reject the offsets.
    t = prepack(_weights(10, 8, 2), bits)
    idx, off = torch.tensor([1, 2, 3, 4]), torch.tensor([1, 2])
    out = rowwise(bits)(t, idx, off)
    w = decode(t, bits)
    ref = torch.stack([w[2], w[3] + w[4]])
    assert (out.double() - ref).abs().max() < 1e-5
    if bits == 8:
        assert torch.allclose(out, torch_rowwise(bits)(t, idx, off), atol=1e-6)


@pytest.mark.parametrize("bits", [8, 4, 2])
def test_pruned_weights_with_mapping(isa, bits):
    rows, dim = 40, 16
    w = _weights(rows, dim, 11)
    keep = torch.arange(rows) % 3 != 1
    t = prepack(w[keep], bits)  # the pruned table
    mapping = torch.full((rows,), -1, dtype=torch.int32)
    mapping[keep] = torch.arange(int(keep.sum()), dtype=torch.int32)
    idx, off = _bags(rows, 120, 13, seed=2)
    out = rowwise(bits)(t, idx, off, False, 0, True, None, mapping)
    ref = torch_rowwise(bits)(t, idx, off, False, 0, True, None, mapping)
    assert_bag_close(out, ref.double(), t, bits, idx)
    # Float reference: the unpruned table with pruned rows as padding (contribute nothing).
    full = torch.zeros(rows, decode(t, bits).shape[1], dtype=torch.float64)
    full[keep] = decode(t, bits)
    import torch.nn.functional as F
    ref_f = F.embedding_bag(idx, full, off, mode="sum")
    assert (out.double() - ref_f).abs().max() < 1e-4
    # mean and max leave pruned entries out, as padding_idx entries of F.embedding_bag.
    for mode, name in ((1, "mean"), (2, "max")):
        out = rowwise(bits)(t, idx, off, False, mode, True, None, mapping)
        pidx = torch.where(keep[idx], idx, torch.full_like(idx, rows))
        fullp = torch.cat([full, torch.zeros(1, full.shape[1], dtype=torch.float64)])
        ref_f = F.embedding_bag(pidx, fullp, off, mode=name, padding_idx=rows)
        assert (out.double() - ref_f).abs().max() < 1e-4, name
    # The mapping [0] marks an unpruned table (as PyTorch).
    out = rowwise(bits)(t, torch.tensor([0, 5]), torch.tensor([0]), False, 0, True, None,
                        torch.tensor([0], dtype=torch.int32))
    assert torch.allclose(out, rowwise(bits)(t, torch.tensor([0, 5]), torch.tensor([0])))


# --- bad inputs: clear errors, never an out-of-bounds read --------------------------------------

@pytest.mark.parametrize("bits", [8, 4, 2])
def test_bad_inputs(bits):
    op = rowwise(bits)
    name = rowwise(bits).__name__
    t = prepack(_weights(10, 8, 3), bits)
    idx, off = torch.tensor([1, 2, 3, 4]), torch.tensor([0, 2])
    cases = [
        ((t, torch.tensor([1, -1, 3, 4]), off), r"expected indices in \[0, 10\).*got -1 at position 1"),
        ((t, torch.tensor([1, 2, 10, 4]), off), r"expected indices in \[0, 10\).*got 10"),
        ((t, torch.tensor([1, 2, 2**40, 4]), off), r"expected indices in \[0, 10\)"),
        ((t, torch.tensor([1, 2, 2**31 - 1, 4], dtype=torch.int32), off), r"expected indices"),
        ((t, idx, torch.tensor([0, 3, 2])), r"expected non-decreasing offsets, got 2 after 3"),
        ((t, idx, torch.tensor([0, 5])), r"expected non-decreasing offsets|expected offsets <="),
        ((t, idx, torch.tensor([-1, 2])), r"expected offsets >= 0"),
        ((t, idx, torch.tensor([0, 2, 5]), False, 0, False, None, None, True),
         r"expected offsets <= the number of indices \(4\), got 5"),
        ((t, idx, torch.tensor([], dtype=torch.long), False, 0, False, None, None, True),
         r"expected at least one offset"),
        ((t, idx, off, False, 3), r"expected mode 0 \(sum\), 1 \(mean\) or 2 \(max\), got 3"),
        ((t, idx, off, False, -1), r"expected mode"),
        ((t, idx, off, False, 0, False, torch.ones(3)), r"expected per_sample_weights of the shape"),
        ((t, idx, off, False, 0, False, torch.ones(5)), r"expected per_sample_weights of the shape"),
        ((t, idx, off, False, 1, False, torch.ones(4)), r"per_sample_weights only with mode 0"),
        ((t, idx, off, False, 0, False, torch.ones(4, dtype=torch.int32)), r"per_sample_weights of dtype"),
        ((t, idx, off, False, 0, True, None, None), r"expected compressed_indices_mapping"),
        ((t, idx, off, False, 0, True, None, torch.tensor([0, 1, 2, 3, 40], dtype=torch.int32)),
         r"expected compressed_indices_mapping values in \[-1, 10\).*got 40"),
        ((t, idx, off, False, 0, True, None, torch.tensor([0, 1, 2, 3, -2], dtype=torch.int32)),
         r"compressed_indices_mapping values"),
        ((t, idx, off, False, 0, True, None, torch.tensor([0, 1, 2, 3], dtype=torch.int32)),
         r"expected indices in \[0, 4\) \(the length of compressed_indices_mapping\)"),
        ((t, idx, off, False, 0, True, None, torch.tensor([0, 1, 2, 3, 4])),
         r"expected a 1-D torch.int32 compressed_indices_mapping"),
        ((t, idx.float(), off), r"expected indices of dtype torch.int32 or torch.int64"),
        ((t, idx, off.float()), r"expected offsets of dtype"),
        ((t, idx), r"expected offsets for 1-D indices"),
        ((t, idx.view(2, 2), off), r"expected 1-D indices when offsets are given"),
        ((t.float(), idx, off), r"expected a torch.uint8 fused table"),
        ((t[:, :7] if bits == 8 else t[:, :3], idx, off), r"expected rows of >= "),
    ]
    for args, msg in cases:
        with pytest.raises(RuntimeError, match=f"qplugin::{name}: " + r".*" + msg):
            op(*args)
    # A large mapping value (PyTorch segfaults on this one) is refused before any read.
    big = torch.tensor([0, 1, 2, 3, 2**30], dtype=torch.int32)
    with pytest.raises(RuntimeError, match=r"compressed_indices_mapping values"):
        op(t, idx, off, False, 0, True, None, big)
    # Inputs are never modified.
    idx2, off2 = idx.clone(), off.clone()
    op(t, idx2, off2)
    assert torch.equal(idx2, idx) and torch.equal(off2, off)


# The per-tier index check (EmbeddingKernelTable::indices_in_range; avx2: unsigned dword max, and
# for int64 an OR of the high dwords): one bad index at every position of runs around the vector
# widths (4 and 8 per step, the scalar tail), as int32 and int64: -1, the row count, 2^32 + 1
# (whose low dword alone is in range) and 2^63 - 1; the last valid row passes.
@pytest.mark.parametrize("idx_dtype", [torch.int32, torch.int64])
def test_index_check_every_position(isa, idx_dtype):
    op = rowwise(8)
    t = prepack(_weights(10, 8, 3), 8)
    bad = [-1, 10] + ([2**32 + 1, 2**63 - 1] if idx_dtype == torch.int64 else [-2**31])
    for n in (1, 3, 4, 5, 8, 9, 17):
        idx = torch.arange(n, dtype=idx_dtype) % 10
        off = torch.tensor([0], dtype=torch.int64)
        ref = op(t, idx, off)
        edge = idx.clone()
        edge[n - 1] = 9
        op(t, edge, off)
        for pos in range(n):
            for v in bad:
                x = idx.clone()
                x[pos] = v
                with pytest.raises(RuntimeError, match=r"expected indices in \[0, 10\)"):
                    op(t, x, off)
        assert torch.equal(op(t, idx, off), ref)


# --- packed-params form ---------------------------------------------------------------------------

def _float_qparams_weight(rows, dim, dtype, seed):
    from torch.ao.quantization import PerChannelMinMaxObserver
    w = _weights(rows, dim, seed)
    obs = PerChannelMinMaxObserver(ch_axis=0, qscheme=torch.per_channel_affine_float_qparams,
                                   dtype=dtype)
    obs(w)
    s, z = obs.calculate_qparams()
    return torch.quantize_per_channel(w, s, z, 0, dtype)


@pytest.mark.parametrize("dtype", [torch.quint8, torch.quint4x2])
def test_packed_params_prepack_unpack_and_ops_match_torch(isa, dtype):
    bits = 8 if dtype == torch.quint8 else 4
    wq = _float_qparams_weight(50, 32, dtype, 5)
    ours, theirs = P.embedding_bag_prepack(wq), Q.embedding_bag_prepack(wq)
    assert ours.bit_rate() == bits and ours.version() == 1 and isa in ours.kernel()
    u, tu = P.embedding_bag_unpack(ours), Q.embedding_bag_unpack(theirs)
    assert u.dtype == dtype and u.qscheme() == torch.per_channel_affine_float_qparams
    assert torch.equal(u.int_repr(), tu.int_repr())
    assert torch.equal(u.q_per_channel_scales(), tu.q_per_channel_scales())
    assert torch.equal(u.q_per_channel_zero_points(), tu.q_per_channel_zero_points())
    # The fused rows equal PyTorch's layout: the row-wise op on them equals the packed op.
    bag, tbag = ((P.embedding_bag_byte, Q.embedding_bag_byte) if bits == 8
                 else (P.embedding_bag_4bit, Q.embedding_bag_4bit))
    emb, temb = ((P.embedding_byte, Q.embedding_byte) if bits == 8
                 else (P.embedding_4bit, Q.embedding_4bit))
    idx, off = _bags(50, 90, 9, seed=1)
    # The table as the lookups see it: bias = -zero_point * scale in float32, both rounded to
    # fp16 for 4-bit tables (PyTorch's fused layout).
    s = u.q_per_channel_scales().float()
    b = u.q_per_channel_zero_points().float() * s * -1
    if bits == 4:
        s, b = s.half(), b.half()
    zp = u.q_per_channel_zero_points().double()[:, None]
    codes = (u.dequantize().double() / u.q_per_channel_scales().double()[:, None] + zp).round()
    if bits == 8:
        assert torch.equal(codes, u.int_repr().double())
    wd = codes * s.double()[:, None] + b.double()[:, None]
    # Sums: qplugin and PyTorch each round a float32 sum of weighted rows, in their own order, so
    # each is compared with the float64 sum within the recursive-summation bound
    # (terms + 3) * 2^-24 * sum |w_i| (|code * scale| + |bias|) -- a row is code * scale + bias,
    # and the rounding of each part counts (a fixed atol was flaky: ~2% of weight draws).
    g = torch.Generator().manual_seed(7)
    n_max = int((torch.cat([off[1:], torch.tensor([idx.numel()])]) - off).max())
    for weights in (None, torch.rand(90, generator=g)):
        out = bag(ours, idx, off, False, 0, False, weights)
        theirs_out = tbag(theirs, idx, off, False, 0, False, weights)
        wts = None if weights is None else weights.double()
        exact = torch.nn.functional.embedding_bag(idx, wd, off, mode="sum", per_sample_weights=wts)
        parts = (codes * s.double()[:, None]).abs() + b.double().abs()[:, None]
        bound = (n_max + 3) * 2.0 ** -24 * torch.nn.functional.embedding_bag(
            idx, parts, off, mode="sum", per_sample_weights=None if wts is None else wts.abs())
        assert ((out.double() - exact).abs() <= bound).all()
        assert ((theirs_out.double() - exact).abs() <= bound).all()
    for mode in (1, 2):
        out = bag(ours, idx, off, False, mode)
        ref = torch.nn.functional.embedding_bag(idx, wd, off, mode={1: "mean", 2: "max"}[mode])
        assert (out.double() - ref).abs().max() < 1e-4
    for shape in [(7,), (3, 4), (2, 3, 2), (0,)]:
        ix = torch.randint(0, 50, shape)
        out = emb(ours, ix)
        assert out.shape == (*shape, 32)
        if ix.dim() <= 2:  # PyTorch's embedding_byte/4bit take 1-D or 2-D indices only
            assert torch.allclose(out, temb(theirs, ix), atol=1e-5)
        if ix.numel():
            assert (out.double() - wd[ix]).abs().max() < 1e-5


def test_packed_params_bad_inputs():
    wq8 = _float_qparams_weight(10, 8, torch.quint8, 1)
    wq4 = _float_qparams_weight(10, 8, torch.quint4x2, 1)
    p8, p4 = P.embedding_bag_prepack(wq8), P.embedding_bag_prepack(wq4)
    with pytest.raises(RuntimeError, match=r"qplugin::embedding_bag_4bit: expected a 4-bit packed"):
        P.embedding_bag_4bit(p8, torch.tensor([1]), torch.tensor([0]))
    with pytest.raises(RuntimeError, match=r"qplugin::embedding_byte: expected a 8-bit packed"):
        P.embedding_byte(p4, torch.tensor([1]))
    with pytest.raises(RuntimeError, match=r"qplugin::embedding_byte: expected indices in \[0, 10\)"):
        P.embedding_byte(p8, torch.tensor([[1, 10]]))
    with pytest.raises(RuntimeError, match=r"qplugin::embedding_4bit: expected pruned_weights=False"):
        P.embedding_4bit(p4, torch.tensor([1]), True)
    wq = torch.quantize_per_channel(torch.randn(4, 6), torch.ones(4, dtype=torch.double),
                                    torch.zeros(4, dtype=torch.long), 0, torch.quint8)
    with pytest.raises(RuntimeError, match=r"per_channel_affine_float_qparams"):
        P.embedding_bag_prepack(wq)
    with pytest.raises(RuntimeError, match=r"expected a quantized weight"):
        P.embedding_bag_prepack(torch.randn(4, 6))
    w = torch.quantize_per_channel(torch.randn(4, 6), torch.ones(4), torch.zeros(4), 0,
                                   torch.qint8)
    with pytest.raises(RuntimeError, match=r"expected weight of dtype torch.quint8 or torch.quint4x2"):
        P.embedding_bag_prepack(w)


def test_packed_params_pickle_and_bad_states():
    import io
    wq = _float_qparams_weight(12, 6, torch.quint8, 3)
    p = P.embedding_bag_prepack(wq)
    state = p._get_method("__getstate__")()
    # Plain tensors only (a quint4x2 tensor does not survive a TorchScript archive in torch 2.13).
    assert isinstance(state, tuple) and len(state) == 6 and state[:3] == (1, 8, 6)
    assert torch.equal(state[3], wq.int_repr())
    assert torch.equal(state[4], wq.q_per_channel_scales().float())
    assert torch.equal(state[5], wq.q_per_channel_zero_points().float())
    buf = io.BytesIO()
    torch.save(p, buf)
    buf.seek(0)
    q = torch.load(buf, weights_only=False)
    assert torch.equal(P.embedding_byte(q, torch.arange(12)), P.embedding_byte(p, torch.arange(12)))
    c, sc, z = state[3], state[4], state[5]
    for bad, msg in [((2, 8, 6, c, sc, z), r"expected state version 1, got 2; .*newer qplugin"),
                     ((1,), r"expected a version-1 state \(1, bit_rate, embedding_dim, codes, "
                            r"scales, zero_points\) of 6 elements, got 1"),
                     ((1, 2, 6, c, sc, z), r"expected bit_rate 8 or 4 .* got 2"),
                     ((1, 4, 5, c, sc, z), r"expected a non-negative embedding_dim \(even for "
                                           r"4-bit\) as the third element, got 5"),
                     ((1, 8, 7, c, sc, z), r"expected codes of dtype torch.uint8 and shape "
                                           r"\[rows, 7\]"),
                     ((1, 8, 6, c, sc[:3], z), r"expected 12 scales and zero points"),
                     ((1, 8, 6, c, sc.double(), z), r"expected 1-D float32 scales"),
                     ((1, 8, 6, None, sc, z), r"expected a tensor as element 3"),
                     (("x", 8), r"expected an integer version"),
                     (7, r"expected a tuple \(version, bit_rate, embedding_dim, codes, scales, "
                         r"zero_points\), got Int")]:
        with pytest.raises(RuntimeError,
                           match=r"qplugin::EmbeddingPackedParams.__setstate__: " + msg):
            p._get_method("__setstate__")(bad)


@pytest.mark.parametrize("bits", [8, 4, 2])
@pytest.mark.parametrize("mode", [0, 1, 2])
def test_bag_lengths_across_the_row_batch(isa, bits, mode):
    # Rows up to 128 (avx512vnni) or of 16/32/64 (avx2) columns reduce in registers as they come;
    # wider rows in batches of 32 (the first row of a max bag sets the output, later batches
    # continue from it): bags of 1, 31, 32, 33, 64, 65 and 100 rows, pruned rows at a batch's
    # start and end, widths below, at and across the 16-, 64- and 128-column groups and blocks.
    for dim in (4, 12, 16, 20, 32, 36, 60, 64, 68, 128, 132, 192, 260):
        t = prepack(_weights(200, dim, 3 * dim + bits), bits)
        lens = [1, 31, 32, 33, 64, 65, 100, 0, 2]
        off = torch.tensor([0] + lens[:-1]).cumsum(0)
        g = torch.Generator().manual_seed(dim)
        idx = torch.randint(0, 200, (sum(lens),), generator=g)
        idx[-1] = 199  # the table's last row: no read may pass its end (the sanitizer pass)
        mapping = torch.arange(200, dtype=torch.int32)
        mapping[idx[[0, 31, 32, 63, 64, 95, 96]]] = -1  # pruned rows around the batch edges
        psw = torch.rand(sum(lens), generator=g) * 3 - 1 if mode == 0 else None
        got = rowwise(bits)(t, idx, off, False, mode, True, psw, mapping)
        torch.ops.qplugin._set_cpu_isa("scalar")
        want = rowwise(bits)(t, idx, off, False, mode, True, psw, mapping)
        torch.ops.qplugin._set_cpu_isa(isa)
        assert torch.equal(got, want), (dim, (got - want).abs().max())
        # Against the float reference of the dequantized table (pruned rows left out).
        keep = mapping[idx] >= 0
        wd = decode(t, bits)
        for b in range(len(lens)):
            sel = torch.arange(int(off[b]), int(off[b]) + lens[b])
            sel = sel[keep[sel]]
            rows = wd[idx[sel]]
            if psw is not None:
                rows = rows * psw[sel].double()[:, None]
            if sel.numel() == 0:
                ref = torch.zeros(dim, dtype=torch.float64)
            else:
                ref = {0: rows.sum(0), 1: rows.mean(0), 2: rows.max(0).values}[mode]
            assert (got[b].double() - ref).abs().max() < 1e-4 * (1 + ref.abs().max()), (dim, b)


@functools.lru_cache(maxsize=None)
def _big_table(rows, bits):
    """A table of `rows` rows of 136 (8-bit, 128 columns) or 132 bytes (4-bit, 256 columns)."""
    g = torch.Generator().manual_seed(rows + bits)
    return prepack(torch.randn(rows, 128 if bits == 8 else 256, generator=g), bits)


@pytest.mark.parametrize("bits", [8, 4])
def test_tables_beyond_l2_take_the_prefetching_walks(isa, bits):
    # Tables within the core's L2 run without prefetch; larger ones prefetch rows ahead (16
    # positions up to 16 MB, 64 / 40 beyond): the lean walk (no mapping, no weights) and the
    # general one (weights; a mapping; max mode). Prefetching changes no byte: every ISA gives
    # the scalar bytes, and the sanitizer pass checks that no prefetch reads outside its inputs.
    g = torch.Generator().manual_seed(bits)
    for rows in (34_000, 130_000):  # ~4.5 MB and ~17.5 MB (beyond the 16 MB of the near tables)
        t = _big_table(rows, bits)
        n = 3000
        idx = torch.randint(0, rows, (n,), generator=g)
        idx[-1] = rows - 1
        off = torch.sort(torch.randint(0, n, (150,), generator=g))[0]
        off[0] = 0
        psw = torch.rand(n, generator=g)
        mapping = torch.arange(rows, dtype=torch.int32)
        mapping[idx[::7]] = -1
        calls = [(0, False, None, None), (1, False, None, None), (0, False, psw, None),
                 (0, True, None, mapping), (2, False, None, None), (2, True, None, mapping)]
        for mode, pruned, pw, mp in calls:
            got = rowwise(bits)(t, idx, off, False, mode, pruned, pw, mp)
            torch.ops.qplugin._set_cpu_isa("scalar")
            want = rowwise(bits)(t, idx, off, False, mode, pruned, pw, mp)
            torch.ops.qplugin._set_cpu_isa(isa)
            assert torch.equal(got, want), (rows, mode, pruned, pw is not None)
            if not pruned:  # the float reference on the rows used (decoding all is 0.3 GB)
                sub, pos = t[idx], torch.arange(n)
                assert_bag_close(got, float_bag(sub, bits, pos, off, mode, pw), sub, bits, pos,
                                 pw)



@functools.lru_cache(maxsize=None)
def _far_4bit_table(dim):
    """A 4-bit table beyond the 16 MB of the near tables: 96 columns (52-byte rows) or 128 (68)."""
    rows = (17 << 20) // (dim // 2 + 4) + 1
    g = torch.Generator().manual_seed(dim)
    return prepack(torch.randn(rows, dim, generator=g), 4)


@pytest.mark.parametrize("dim", [96, 128])
def test_far_4bit_rows_of_96_and_128_columns(isa, dim):
    # On a table beyond 16 MB, the avx2 tier reduces 4-bit rows of 96 and 128 columns as they
    # come (the first 64 columns in registers, the rest in memory), not in batches of 32 rows,
    # except on Zen 1 (both forms: test_far_4bit_row_forms_give_the_scalar_bytes).
    # Every mode, weights, a mapping, a max bag's first row, bags of 0, 1, 31..33 and 70 rows
    # (beyond one batch): the scalar tier's bytes and the float reference.
    t = _far_4bit_table(dim)
    rows = t.shape[0]
    g = torch.Generator().manual_seed(dim + 1)
    lens = [20, 0, 1, 31, 32, 33, 70, 5] * 4
    n = sum(lens)
    idx = torch.randint(0, rows, (n,), generator=g)
    idx[-1] = rows - 1  # the last row: no read may pass the table's end (the sanitizer pass)
    off = torch.tensor([0] + lens[:-1]).cumsum(0)
    psw = torch.rand(n, generator=g) * 3 - 1
    mapping = torch.arange(rows, dtype=torch.int32)
    mapping[idx[::9]] = -1
    calls = [(0, False, None, None), (1, False, None, None), (2, False, None, None),
             (0, False, psw, None), (1, True, None, mapping), (2, True, None, mapping),
             (0, True, psw, mapping)]
    for mode, pruned, pw, mp in calls:
        got = rowwise(4)(t, idx, off, False, mode, pruned, pw, mp)
        torch.ops.qplugin._set_cpu_isa("scalar")
        want = rowwise(4)(t, idx, off, False, mode, pruned, pw, mp)
        torch.ops.qplugin._set_cpu_isa(isa)
        assert torch.equal(got, want), (dim, mode, pruned, (got - want).abs().max())
        if not pruned:
            sub, pos = t[idx], torch.arange(n)
            assert_bag_close(got, float_bag(sub, 4, pos, off, mode, pw), sub, 4, pos, pw)

_FAR_ROWS_SCRIPT = r"""
import sys, torch
sys.path.insert(0, {root!r})
import qplugin
P = torch.ops.qplugin
# 4-bit tables beyond 16 MB, 96 and 128 columns: sum / mean / max, weights, a mapping, empty bags,
# a bag of one row and bags beyond one batch of 32 rows; the scalar tier's bytes.
for dim in (96, 128):
    rows = (17 << 20) // (dim // 2 + 4) + 1
    g = torch.Generator().manual_seed(dim)
    t = P.embedding_bag_4bit_prepack(torch.randn(rows, dim, generator=g))
    lens = [20, 0, 1, 31, 32, 33, 70, 5] * 2
    n = sum(lens)
    idx = torch.randint(0, rows, (n,), generator=g)
    idx[-1] = rows - 1
    off = torch.tensor([0] + lens[:-1]).cumsum(0)
    psw = torch.rand(n, generator=g) * 3 - 1
    mapping = torch.arange(rows, dtype=torch.int32)
    mapping[idx[::9]] = -1
    calls = [(0, False, None, None), (1, False, None, None), (2, False, None, None),
             (0, False, psw, None), (2, True, None, mapping)]
    for mode, pruned, pw, mp in calls:
        got = P.embedding_bag_4bit_rowwise_offsets(t, idx, off, False, mode, pruned, pw, mp)
        P._set_cpu_isa("scalar")
        want = P.embedding_bag_4bit_rowwise_offsets(t, idx, off, False, mode, pruned, pw, mp)
        P._set_cpu_isa("avx2")
        assert torch.equal(got, want), (dim, mode, pruned, (got - want).abs().max())
print("ok")
"""


@pytest.mark.skipif(SESSION_ISA not in ("avx2", "avx512vnni"), reason="needs the avx2 tier")
@pytest.mark.parametrize("form", ["regs", "batch"])
def test_far_4bit_row_forms_give_the_scalar_bytes(form):
    # Far 4-bit rows of 96 and 128 columns reduce on the avx2 tier either as they come (regs:
    # the default) or in batches of 32 rows (batch: the default on Zen 1, where it is faster).
    # QPLUGIN_EMBEDDING_FAR_ROWS picks one at load, so each runs in a child on the avx2 tier.
    _run_child(_FAR_ROWS_SCRIPT, QPLUGIN_EMBEDDING_FAR_ROWS=form, QPLUGIN_CPU_ISA="avx2")


def _run_child(script, **env):
    """Runs `script` (formatted with root=the repository) in a fresh Python with the extra `env`
    (load-time kernel choices); it must print "ok" last."""
    import subprocess
    import sys
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    r = subprocess.run([sys.executable, "-c", script.format(root=root)],
                       env=dict(os.environ, **env), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-3000:]


_ROW_FORM_SCRIPT = r"""
import sys, torch
sys.path.insert(0, {root!r})
import qplugin
P = torch.ops.qplugin
g = torch.Generator().manual_seed(5)
# 20,000 rows of 64 columns (1.44 MB: the prefetching lean walk on a 1-2 MB L2) and 90 rows (no
# prefetch): sum / mean / max, weights, a mapping, empty bags and a bag of one row.
for rows in (20_000, 90):
    t = P.embedding_bag_byte_prepack(torch.randn(rows, 64, generator=g) * 3)
    n = 2000
    idx = torch.randint(0, rows, (n,), generator=g)
    off = torch.sort(torch.randint(0, n, (97,), generator=g))[0]
    off[0] = 0
    off[5] = off[6] = off[4]
    psw = torch.rand(n, generator=g) * 3 - 1
    mapping = torch.arange(rows, dtype=torch.int32)
    mapping[idx[::5]] = -1
    calls = [(0, False, None, None), (1, False, None, None), (2, False, None, None),
             (0, False, psw, None), (2, True, None, mapping)]
    for mode, pruned, pw, mp in calls:
        got = P.embedding_bag_byte_rowwise_offsets(t, idx, off, False, mode, pruned, pw, mp)
        P._set_cpu_isa("scalar")
        want = P.embedding_bag_byte_rowwise_offsets(t, idx, off, False, mode, pruned, pw, mp)
        P._set_cpu_isa("avx512vnni")
        assert torch.equal(got, want), (rows, mode, pruned, (got - want).abs().max())
print("ok")
"""


@pytest.mark.skipif(SESSION_ISA != "avx512vnni", reason="the two row forms are avx512vnni's")
@pytest.mark.parametrize("form", ["strided", "widen"])
def test_64_column_8bit_row_forms_give_the_scalar_bytes(form):
    # 8-bit rows of 64 columns reduce in one of two forms on the avx512vnni tier: strided (one
    # load, shifts and masks; the default except on Intel) or widen (vpmovzxbd per 16 columns; the
    # default on Intel). QPLUGIN_EMBEDDING_ROW_FORM picks one at load, so each runs in a child.
    _run_child(_ROW_FORM_SCRIPT, QPLUGIN_EMBEDDING_ROW_FORM=form)
