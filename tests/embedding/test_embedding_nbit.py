# 2-bit embedding bags (embedding_bag_2bit_{prepack,unpack,rowwise_offsets}) and the greedy range
# search of embedding_bag_{4bit,2bit}_prepack(optimized_qparams=True), against
# torch.ops.quantized (bytes), an exact NumPy float32 re-statement of PyTorch's search (bytes;
# also where PyTorch never returns), the float reference (torch.nn.functional.embedding_bag on
# the decoded table) and the scalar ISA. The shared 8/4/2-bit lookup checks (bad inputs, pruned
# tables, empty bags, index dtypes) are in test_embedding_ops.py. Changes with:
# csrc/ops/cpu/embedding_kernel.cpp, csrc/kernels/embedding/embedding_generic_impl.h.
#
# PyTorch 2.13's embedding-bag ops ignore `mode` (docs/oracle.md): mean and max are tested
# against F.embedding_bag on the decoded table only.
import numpy as np
import pytest
import torch

from _emb_common import (P, Q, assert_bag_close, decode, float_bag, prepack, rowwise,
                         torch_prepack, torch_rowwise, torch_unpack, unpack)

DIMS4 = [4, 8, 12, 16, 28, 32, 36, 64, 100, 128, 132, 256, 300]


def _weights(rows, dim, seed, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(rows, dim, generator=g) * 2 + torch.rand(rows, 1, generator=g)).to(dtype)


def _outlier_weights(rows, dim, seed):
    """Rows with a few large outliers: the search then clips the range (min/max would waste most
    codes), so optimized_qparams changes the bytes."""
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(rows, dim, generator=g) * 0.3
    cols = torch.randint(0, dim, (rows, 2), generator=g)
    w.scatter_(1, cols, torch.randn(rows, 2, generator=g) * 6)
    return w


def _bags(rows, n, nbags, seed, idx_dtype=torch.int64):
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, rows, (n,), generator=g).to(idx_dtype)
    cuts = torch.sort(torch.randint(0, n + 1, (nbags - 1,), generator=g))[0]
    return idx, torch.cat([torch.zeros(1, dtype=torch.long), cuts])


# --- an exact re-statement of PyTorch's greedy search (NumPy float32, operation by operation) ----

f32 = np.float32


def _h(x):
    return f32(np.float16(x))


def _np_loss(x, lo, hi, bits):
    lo = _h(lo)
    rng = f32(hi - lo)
    qmax = f32((1 << bits) - 1)
    scale = f32(1.0) if rng == 0 else _h(f32(rng / qmax))
    inv = f32(1.0) if scale == 0 else f32(f32(1.0) / scale)
    q = np.maximum(f32(0), np.minimum(np.rint((x - lo) * inv), qmax)).astype(f32)
    q = (q * scale + lo).astype(f32)
    d = (x - q).astype(f32)
    return f32(np.sqrt(np.add.accumulate(d * d, dtype=f32)[-1]))  # summed in order


def _np_search(x, nbins, ratio, bits):
    xmin, xmax = f32(x.min()), f32(x.max())
    step = f32((xmax - xmin) / f32(nbins))
    min_bins = int(nbins * (1.0 - ratio))  # in double (torch 2.13: nbins 1000, ratio 0.05 -> 950)
    best = cur_loss = _np_loss(x, xmin, xmax, bits)
    cur_min, cur_max = xmin, xmax
    thr = f32(f32(min_bins) * step)
    while f32(cur_min + thr) < cur_max:
        l1 = _np_loss(x, f32(cur_min + step), cur_max, bits)
        l2 = _np_loss(x, cur_min, f32(cur_max - step), bits)
        if cur_loss < l1 and cur_loss < l2 and cur_loss < best:
            best, xmin, xmax = cur_loss, cur_min, cur_max
        prev = (cur_min, cur_max)
        if l1 < l2:
            cur_min, cur_loss = f32(cur_min + step), l1
        else:
            cur_max, cur_loss = f32(cur_max - step), l2
        if (cur_min, cur_max) == prev:  # PyTorch loops forever here; qplugin stops
            break
    return xmin, xmax


def _np_prepack(w, bits, optimized, nbins=200, ratio=0.16):
    """The fused rows (uint8 [rows, dim * bits / 8 + 4]) as PyTorch's reference quantizer."""
    w = w.float().numpy().astype(f32)
    per = 8 // bits
    out = np.zeros((w.shape[0], w.shape[1] // per + 4), dtype=np.uint8)
    for r, x in enumerate(w):
        lo, hi = _np_search(x, nbins, ratio, bits) if optimized else (f32(x.min()), f32(x.max()))
        lo = _h(lo)
        rng = f32(hi - lo)
        scale = _h(f32(1.0) if rng == 0 else f32(rng / f32((1 << bits) - 1)))
        inv = f32(1.0) if scale == 0 else f32(f32(1.0) / scale)
        if scale == 0 or np.isinf(inv):
            scale, inv = f32(1.0), f32(1.0)
        q = np.clip(np.rint((x - lo) * inv), 0, (1 << bits) - 1).astype(np.uint8)
        for j in range(per):
            out[r, : w.shape[1] // per] |= q[j::per] << (bits * j)
        out[r, -4:-2] = np.frombuffer(np.float16(scale).tobytes(), np.uint8)
        out[r, -2:] = np.frombuffer(np.float16(lo).tobytes(), np.uint8)
    return torch.from_numpy(out)


def _row_errors(w, table, bits):
    return (decode(table, bits) - w.double()).norm(dim=1)


# --- optimized_qparams: PyTorch's bytes -----------------------------------------------------------

@pytest.mark.parametrize("bits", [4, 2])
@pytest.mark.parametrize("dim", [4, 8, 16, 32, 64, 100, 128, 256])
def test_optimized_qparams_match_torch_and_numpy(bits, dim):
    for w in (_outlier_weights(23, dim, dim + bits), _weights(9, dim, dim)):
        ours = prepack(w, bits, True)
        assert torch.equal(ours, torch_prepack(w, bits, True)), (bits, dim)
        assert torch.equal(ours, _np_prepack(w, bits, True)), (bits, dim)
        # The search keeps the min/max range unless it finds a lower error: never worse per row
        # (float32 losses vs a float64 norm here: 1e-5 relative slack).
        plain = prepack(w, bits)
        e_opt, e_plain = _row_errors(w, ours, bits), _row_errors(w, plain, bits)
        assert (e_opt <= e_plain * (1 + 1e-5) + 1e-6).all()
    # It does change something on outlier rows (else this test could not tell the paths apart).
    w = _outlier_weights(23, 64, 7)
    assert not torch.equal(prepack(w, bits, True), prepack(w, bits))
    assert (_row_errors(w, prepack(w, bits, True), bits).sum()
            < _row_errors(w, prepack(w, bits), bits).sum())


@pytest.mark.parametrize("bits", [4, 2])
# (1000, 0.05), (100, 0.3), (10, 0.1): int(nbins * (1 - ratio)) differs between a double and a
# float ratio (950 vs 949, 70 vs 69, 9 vs 8); PyTorch uses the double.
@pytest.mark.parametrize("nbins,ratio", [(1, 0.16), (2, 0.5), (10, 0.0), (50, 1.0), (200, 0.16),
                                         (333, 0.3), (1000, 0.05), (100, 0.3), (10, 0.1)])
def test_optimized_qparams_nbins_ratio(bits, nbins, ratio):
    w = _outlier_weights(17, 32, nbins)
    ours = prepack(w, bits, True, nbins, ratio)
    assert torch.equal(ours, torch_prepack(w, bits, True, nbins, ratio)), (nbins, ratio)
    assert torch.equal(ours, _np_prepack(w, bits, True, nbins, ratio))


@pytest.mark.parametrize("bits", [4, 2])
def test_optimized_qparams_half_constant_and_tiny_rows(bits):
    w = _outlier_weights(12, 16, 3)
    w[2] = 0.5          # range 0: no search
    w[3] = 0.0
    w[4, ::2] = 1e-30   # tiny range
    w[5] = -7.25
    for x in (w, w.half()):
        assert torch.equal(prepack(x, bits, True), torch_prepack(x, bits, True))
        assert torch.equal(prepack(x, bits, True), _np_prepack(x.float(), bits, True))


@pytest.mark.parametrize("bits", [4, 2])
def test_optimized_qparams_stalled_search_terminates(bits):
    # step < half an ulp of the range ends: PyTorch's loop never ends on this row (reproduced,
    # torch 2.13: killed after 20 s); qplugin stops when a move leaves the range unchanged and
    # returns the best range so far (here the min/max one). Not run against PyTorch.
    w = torch.full((2, 8), 1000.0)
    w[0, 1] += 0.001
    w[0, 2] += 0.0005
    w[1] = torch.linspace(-1, 1, 8)
    ours = prepack(w, bits, True)
    assert torch.equal(ours, _np_prepack(w, bits, True))
    assert torch.equal(ours[0], prepack(w, bits)[0])
    assert torch.equal(ours[1], torch_prepack(w[1:], bits, True)[0])


@pytest.mark.parametrize("bits", [4, 2])
def test_optimized_qparams_bad_args(bits):
    name = f"embedding_bag_{bits}bit_prepack"
    w = torch.randn(3, 8)
    before = w.clone()
    for nbins in (0, -1, -200, 2**31, 2**62):
        with pytest.raises(RuntimeError,
                           match=rf"qplugin::{name}: expected nbins >= 1 with "
                                 rf"optimized_qparams=True \(and <= 2\^31 - 1\), got {nbins}"):
            prepack(w, bits, True, nbins, 0.16)
    for ratio in (-0.1, 1.5, float("nan"), float("inf")):
        with pytest.raises(RuntimeError, match=rf"qplugin::{name}: expected a ratio in \[0, 1\]"):
            prepack(w, bits, True, 200, ratio)
    # nbins and ratio are unused (PyTorch too) without optimized_qparams.
    assert torch.equal(prepack(w, bits, False, 0, 5.0), prepack(w, bits))
    with pytest.raises(RuntimeError, match=rf"qplugin::{name}: expected finite weights"):
        prepack(torch.tensor([[1.0, float("inf"), 0.0, 2.0]]), bits, True)
    assert torch.equal(w, before)


# --- 2-bit prepack / unpack -------------------------------------------------------------------------

@pytest.mark.parametrize("dim", DIMS4)
def test_2bit_prepack_and_unpack_match_torch(dim):
    w = _weights(37, dim, dim)
    ours, theirs = P.embedding_bag_2bit_prepack(w), Q.embedding_bag_2bit_prepack(w)
    assert ours.dtype == torch.uint8 and ours.shape == (37, dim // 4 + 4)
    assert torch.equal(ours, theirs)
    assert torch.equal(ours, _np_prepack(w, 2, False))
    u = P.embedding_bag_2bit_unpack(theirs)
    assert torch.equal(u, Q.embedding_bag_2bit_unpack(theirs))
    assert torch.equal(u.double(), decode(theirs, 2))  # scale * q + bias is exact in float32 here


def test_2bit_prepack_half_weight_and_constant_rows():
    w = _weights(20, 16, 1)
    w[3] = 0.5
    w[4] = 0.0
    w[5, ::2] = 1e-30
    for x in (w, w.half()):
        assert torch.equal(P.embedding_bag_2bit_prepack(x), Q.embedding_bag_2bit_prepack(x))


def test_2bit_prepack_unpack_bad_inputs():
    for dim in (1, 2, 3, 6, 10):
        with pytest.raises(RuntimeError, match=r"qplugin::embedding_bag_2bit_prepack: expected an "
                                               rf"embedding_dim that is a multiple of 4 .*got {dim}"):
            P.embedding_bag_2bit_prepack(torch.randn(4, dim))
    with pytest.raises(RuntimeError, match=r"qplugin::embedding_bag_2bit_prepack: expected 2-D"):
        P.embedding_bag_2bit_prepack(torch.randn(2, 3, 4))
    with pytest.raises(RuntimeError, match=r"qplugin::embedding_bag_2bit_prepack: expected a float32"):
        P.embedding_bag_2bit_prepack(torch.zeros(4, 8, dtype=torch.int32))
    with pytest.raises(RuntimeError, match=r"qplugin::embedding_bag_2bit_prepack: expected finite"):
        P.embedding_bag_2bit_prepack(torch.tensor([[1.0, float("nan"), 0.0, 1.0]]))
    with pytest.raises(RuntimeError, match=r"qplugin::embedding_bag_2bit_unpack: expected rows of "
                                           r">= 4 bytes"):
        P.embedding_bag_2bit_unpack(torch.zeros(3, 3, dtype=torch.uint8))
    with pytest.raises(RuntimeError, match=r"qplugin::embedding_bag_2bit_unpack: expected a "
                                           r"torch.uint8 fused table"):
        P.embedding_bag_2bit_unpack(torch.zeros(3, 5))
    with pytest.raises(RuntimeError, match=r"qplugin::embedding_bag_2bit_unpack: expected a 2-D"):
        P.embedding_bag_2bit_unpack(torch.zeros(2, 3, 5, dtype=torch.uint8))
    # An empty table.
    assert P.embedding_bag_2bit_prepack(torch.zeros(0, 8)).shape == (0, 6)
    assert P.embedding_bag_2bit_unpack(torch.zeros(0, 6, dtype=torch.uint8)).shape == (0, 8)


# --- 2-bit lookups --------------------------------------------------------------------------------

@pytest.mark.parametrize("dim", [4, 8, 16, 36, 64, 128, 132, 300])
def test_2bit_sum_matches_torch_and_float(isa, dim):
    w = _weights(150, dim, dim + 2)
    t = Q.embedding_bag_2bit_prepack(w)  # packed by PyTorch, read by qplugin
    idx, off = _bags(150, 400, 37, seed=dim)
    for psw in (None, torch.rand(400) * 2 - 0.5):
        out = P.embedding_bag_2bit_rowwise_offsets(t, idx, off, False, 0, False, psw)
        ref = Q.embedding_bag_2bit_rowwise_offsets(t, idx, off, False, 0, False, psw)
        assert_bag_close(out, ref.double(), t, 2, idx, psw)
        assert_bag_close(out, float_bag(t, 2, idx, off, 0, psw), t, 2, idx, psw)


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("dim", [4, 16, 60, 128, 132, 256])
def test_2bit_modes_match_float_embedding_bag(isa, mode, dim):
    t = P.embedding_bag_2bit_prepack(_weights(120, dim, 7 * dim + mode))
    idx, off = _bags(120, 333, 41, seed=dim + mode)
    off[5] = off[4]  # an empty bag
    off = torch.sort(off)[0]
    out = rowwise(2)(t, idx, off, False, mode)
    assert_bag_close(out, float_bag(t, 2, idx, off, mode), t, 2, idx)
    # 2-D indices without offsets.
    idx2 = idx[:320].view(40, 8)
    out = rowwise(2)(t, idx2, None, False, mode)
    assert_bag_close(out, float_bag(t, 2, idx2, None, mode), t, 2, idx2)


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_2bit_every_isa_gives_the_scalar_bytes(isa, mode):
    for dim in (4, 16, 28, 64, 96, 128, 132, 256, 300):
        t = P.embedding_bag_2bit_prepack(_weights(90, dim, dim))
        idx, off = _bags(90, 700, 23, seed=dim)
        psw = torch.rand(700) * 3 - 1 if mode == 0 else None
        got = rowwise(2)(t, idx, off, False, mode, False, psw)
        torch.ops.qplugin._set_cpu_isa("scalar")
        want = rowwise(2)(t, idx, off, False, mode, False, psw)
        torch.ops.qplugin._set_cpu_isa(isa)
        assert torch.equal(got, want), (dim, (got - want).abs().max())


def test_2bit_exact_small_case():
    # Hand-checkable: codes 0..3 with scale 1 and bias 0 (row r = [0, 1, 2, 3] + ... ).
    w = torch.tensor([[0.0, 1.0, 2.0, 3.0], [3.0, 2.0, 1.0, 0.0], [0.0, 0.0, 3.0, 3.0]])
    t = P.embedding_bag_2bit_prepack(w)
    assert t[:, 0].tolist() == [0b11100100, 0b00011011, 0b11110000]
    assert torch.equal(P.embedding_bag_2bit_unpack(t), w)
    out = rowwise(2)(t, torch.tensor([0, 1, 2, 2]), torch.tensor([0, 2, 2]))
    assert torch.equal(out, torch.tensor([[3.0, 3.0, 3.0, 3.0], [0.0] * 4, [0.0, 0.0, 6.0, 6.0]]))
    out = rowwise(2)(t, torch.tensor([0, 1, 2]), torch.tensor([0]), False, 2)
    assert torch.equal(out, torch.tensor([[3.0, 2.0, 3.0, 3.0]]))
