"""Edge sweeps of the GEMM engine behind torch.ops.qplugin.linear: M, N, K around the register
tiles (scalar 1x16c4, AVX2 6x8c4, AVX512-VNNI 6x64c4), the k-group of 4 and the B-chunk size,
the thread split, and inputs that end right before an unmapped page (an over-read of A faults).
Oracle: the exact integer reference requantized with qplugin's float32 formula (bit-exact).
"""
import os
import subprocess
import sys
import textwrap

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

import warnings  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402

import qplugin  # noqa: E402,F401
from _reference import exact_linear_u8, using_threads  # noqa: E402  (tests/ on sys.path)

warnings.filterwarnings("ignore", message=".*quantiz.*deprecated.*")
torch.backends.quantized.engine = "x86"

ISAS = ["scalar", "avx2", "avx512vnni"]
# The ISA at session start (QPLUGIN_CPU_ISA may cap it): restored after every ISA-forcing test.
START_ISA = torch.ops.qplugin._cpu_isa()


def _operands(M, K, N, seed, w_zp):
    g = torch.Generator().manual_seed(seed)
    x = torch._make_per_tensor_quantized_tensor(
        torch.randint(0, 256, (M, K), generator=g, dtype=torch.uint8), 0.02, int(seed % 256))
    wi = torch.randint(-128, 128, (N, K), generator=g, dtype=torch.int8)
    sc = torch.rand(N, generator=g, dtype=torch.double) * 0.01 + 0.002
    zps = (torch.randint(-9, 10, (N,), generator=g) if w_zp else torch.zeros(N, dtype=torch.long))
    w = torch._make_per_channel_quantized_tensor(wi, sc, zps, 0)
    b = torch.randn(N, generator=g)
    return x, w, b


def reference(x, w, b, scale, zp):
    """Exact int64 accumulators, requantized with qplugin's float32 formula (qgemm.h)."""
    return exact_linear_u8(x, w, b, scale, zp)


def _scale_for(K):
    return 0.0004 * max(K, 1) ** 0.5 * 30


MS = [1, 2, 5, 6, 7, 12, 13]
NS = [1, 7, 8, 9, 15, 16, 17, 47, 63, 64, 65, 129]


@pytest.mark.parametrize("K", [1, 2, 3, 4, 5, 8, 67])
def test_tile_boundaries(isa, K):
    for M in MS:
        for N in NS:
            x, w, b = _operands(M, K, N, seed=M * 1000 + N * 10 + K, w_zp=(M + N) % 2 == 1)
            scale, zp = _scale_for(K), 127
            p = torch.ops.qplugin.linear_prepack(w, b)
            got = torch.ops.qplugin.linear(x, p, scale, zp).int_repr()
            assert torch.equal(got, reference(x, w, b, scale, zp)), f"{isa} M{M} K{K} N{N}"


@pytest.mark.parametrize("M,K,N", [(13, 1024, 1000), (7, 1537, 390), (1, 4099, 200),
                                   (13, 4099, 1100), (20, 96, 4097)])
def test_b_chunks_and_long_k(isa, M, K, N):
    """Several B chunks per call (the AVX2 kernel walks K x 192 KiB column chunks, the VNNI kernel
    K x 384 KiB ones, each prefetching the next one when the packed weights exceed 4 MiB)."""
    x, w, b = _operands(M, K, N, seed=K, w_zp=True)
    scale = _scale_for(K)
    got = torch.ops.qplugin.linear(x, torch.ops.qplugin.linear_prepack(w, b), scale, 100)
    assert torch.equal(got.int_repr(), reference(x, w, b, scale, 100))


@pytest.mark.parametrize("bits", [8, 7])
@pytest.mark.parametrize("M,K,N", [(1, 2048, 2300), (4, 2048, 2300), (1, 2048, 2800),
                                   (3, 2048, 2800), (6, 2048, 2800)])
def test_streamed_weights(isa, M, K, N, bits):
    """Calls of one row tile on packed weights beyond 4 MiB, which the AVX2 kernel streams with a
    software prefetch ahead of each panel: into L1 up to 5 MiB (2048 x 2300: 4.5 MiB), non-
    temporal beyond (2048 x 2800: 5.5 MiB); full-range input (one row: the sign tile; more: the
    widened tile) and 7-bit input (the VPMADDUBSW tile). One thread: each call sees all the
    columns (two threads would split them into calls below 4 MiB)."""
    x, w, b = _operands(M, K, N, seed=M + N, w_zp=False)
    if bits == 7:
        x = torch._make_per_tensor_quantized_tensor(x.int_repr() // 2, 0.02, 64)
    scale = _scale_for(K)
    p = torch.ops.qplugin.linear_prepack(w, b)
    with using_threads(1):
        got = torch.ops.qplugin.linear(x, p, scale, 100)
    assert torch.equal(got.int_repr(), reference(x, w, b, scale, 100))


@pytest.mark.parametrize("M,K,N", [(1, 300, 1), (1, 300, 65), (1, 512, 1000), (2, 256, 64),
                                   (300, 64, 8), (1000, 40, 30), (37, 333, 129), (6, 1, 2000)])
@pytest.mark.parametrize("threads", [2, 3, 4])
def test_thread_splits(isa, M, K, N, threads):
    """Blocks split over N panels, M tiles, or both; every split gives the same bytes."""
    x, w, b = _operands(M, K, N, seed=M + K + N, w_zp=True)
    scale = _scale_for(K)
    p = torch.ops.qplugin.linear_prepack(w, b)
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        got = torch.ops.qplugin.linear_relu(x, p, scale, 50).int_repr()
    finally:
        torch.set_num_threads(old)
    want = reference(x, w, b, scale, 50).clamp(min=50)
    assert torch.equal(got, want)


_GUARD_SCRIPT = textwrap.dedent(r"""
    import ctypes, mmap, sys, warnings
    sys.path.insert(0, {root!r})
    import torch, qplugin
    warnings.filterwarnings("ignore")
    PAGE = mmap.PAGESIZE
    libc = ctypes.CDLL(None)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    keep = []

    def at_page_end(values, lda):
        # A quint8 [M, K] tensor (row stride lda) whose last byte is the last byte before an
        # unmapped (PROT_NONE) page: any read past the end of A faults.
        M, K = values.shape
        nbytes = (M - 1) * lda + K
        pages = (nbytes + PAGE - 1) // PAGE + 1
        mm = mmap.mmap(-1, pages * PAGE)
        buf = (ctypes.c_char * (pages * PAGE)).from_buffer(mm)
        base = ctypes.addressof(buf)
        assert libc.mprotect(base + (pages - 1) * PAGE, PAGE, 0) == 0
        keep.append((mm, buf))
        u = torch.frombuffer(buf, dtype=torch.uint8)
        off = (pages - 1) * PAGE - nbytes
        view = u[off:off + nbytes]
        for m in range(M):
            view[m * lda:m * lda + K] = values[m]
        q = torch._empty_affine_quantized([M, K], scale=0.02, zero_point=7, dtype=torch.quint8)
        q.set_(u.untyped_storage(), off, (M, K), (lda, 1))
        return q

    for isa in ("scalar", "avx2", "avx512vnni"):
        if torch.ops.qplugin._set_cpu_isa(isa) != isa:
            continue
        for (M, K, N) in [(1, 1, 5), (1, 3, 70), (2, 5, 17), (7, 6, 9), (6, 7, 64), (13, 129, 3),
                          (1, 4097, 33), (5, 62, 130)]:
            for lda in (K, K + 3):
                g = torch.Generator().manual_seed(M * K + N)
                vals = torch.randint(0, 256, (M, K), generator=g, dtype=torch.uint8)
                x = at_page_end(vals, lda)
                xc = torch._make_per_tensor_quantized_tensor(vals.clone(), 0.02, 7)
                wq = torch.quantize_per_tensor(torch.randn(N, K, generator=g), 0.05, 3,
                                               torch.qint8)
                p = torch.ops.qplugin.linear_prepack(wq, torch.randn(N, generator=g))
                y = torch.ops.qplugin.linear(x, p, 0.5, 128)
                y2 = torch.ops.qplugin.linear(xc, p, 0.5, 128)
                assert torch.equal(y.int_repr(), y2.int_repr()), (isa, M, K, N, lda)
    print("ok")
""")


def test_no_read_past_the_input():
    """Inputs end right before an unmapped page (also with a row stride lda > K, used in place):
    a K-tail or row over-read segfaults the child process."""
    r = subprocess.run([sys.executable, "-c", _GUARD_SCRIPT.format(root=ROOT)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), (
        f"child exited with {r.returncode} (-11 = SIGSEGV: read past the input)\n"
        f"{r.stderr[-3000:]}")


def _extreme(M, K, N, a_hi, seed, w_zp=False):
    """A bytes in [0, a_hi] with many at a_hi; weights mostly at -128 / 127 in runs, so that
    k-pairs (2j, 2j + 1) of one column reach the extreme pair sums 2 * a_hi * -128 and
    2 * a_hi * 127."""
    g = torch.Generator().manual_seed(seed)
    a = torch.randint(0, a_hi + 1, (M, K), generator=g, dtype=torch.uint8)
    a[torch.rand(M, K, generator=g) < 0.5] = a_hi
    x = torch._make_per_tensor_quantized_tensor(a, 0.01, 0)
    wi = torch.randint(-128, 128, (N, K), generator=g, dtype=torch.int8)
    sel = torch.rand(N, K // 2 + 1, generator=g).repeat_interleave(2, dim=1)[:, :K]
    wi[sel < 0.4] = -128
    wi[sel > 0.6] = 127
    sc = torch.rand(N, generator=g, dtype=torch.double) * 0.01 + 0.002
    zps = (torch.randint(-9, 10, (N,), generator=g) if w_zp else torch.zeros(N, dtype=torch.long))
    w = torch._make_per_channel_quantized_tensor(wi, sc, zps, 0)
    return x, w, torch.randn(N, generator=g)


@pytest.mark.parametrize("M,K,N", [(1, 64, 8), (6, 255, 17), (13, 1027, 70), (7, 4, 9),
                                   (2, 3, 5), (12, 4099, 1100)])
@pytest.mark.parametrize("a_hi", [127, 128, 255])
def test_pair_sum_bound(isa, M, K, N, a_hi):
    """The AVX2 kernel multiplies with VPMADDUBSW (s16 pair sums) for every row tile whose bytes
    are all <= 127, where 2 * 127 * -128 = -32512 and 2 * 127 * 127 = 32258 cannot saturate,
    and with the widened VPMADDWD tile otherwise. At the boundary (127), one past it (128) and
    at 255 (255 * 127 * 2 saturates s16), with the extreme weights: bit-exact."""
    x, w, b = _extreme(M, K, N, a_hi, seed=M * K + a_hi, w_zp=(M % 2 == 0))
    scale = _scale_for(K) * 4
    got = torch.ops.qplugin.linear(x, torch.ops.qplugin.linear_prepack(w, b), scale, 100)
    assert torch.equal(got.int_repr(), reference(x, w, b, scale, 100))


def test_pair_sum_bound_mixed_tiles(isa):
    """Row tiles decide one by one: rows 0..5 fit in 7 bits, one byte of row 9 is 255."""
    x, w, b = _extreme(13, 600, 40, 127, seed=5)
    a = x.int_repr().clone()
    a[9, 301] = 255
    x = torch._make_per_tensor_quantized_tensor(a, 0.01, 0)
    scale = _scale_for(600) * 4
    got = torch.ops.qplugin.linear(x, torch.ops.qplugin.linear_prepack(w, b), scale, 100)
    assert torch.equal(got.int_repr(), reference(x, w, b, scale, 100))


@pytest.mark.parametrize("threads", [1, 2])
def test_pair_sum_bound_mixed_tiles_many_chunks(isa, threads):
    """Row tiles of both kinds over several B chunks: the AVX2 kernel widens a full-range row
    tile once, on the first chunk, into a buffer of all rows (each tile at its own offset), and
    the later chunks read it back; the 7-bit tiles between them never touch it. 25 rows (5 tiles
    of 5), K = 1000 (chunks of 192 columns), N = 500 (3 chunks per thread part)."""
    x, w, b = _extreme(25, 1000, 500, 127, seed=11, w_zp=True)
    a = x.int_repr().clone()
    hi = torch.randint(0, 256, (25, 1000), generator=torch.Generator().manual_seed(12),
                       dtype=torch.uint8)
    for r0 in (5, 15, 20):  # tiles 1, 3, 4 full range; 0 and 2 stay within 7 bits
        a[r0:r0 + 5] = hi[r0:r0 + 5]
    x = torch._make_per_tensor_quantized_tensor(a, 0.01, 3)
    scale = _scale_for(1000) * 4
    p = torch.ops.qplugin.linear_prepack(w, b)
    with using_threads(threads):
        got = torch.ops.qplugin.linear(x, p, scale, 100)
    assert torch.equal(got.int_repr(), reference(x, w, b, scale, 100))


def _hi_limit(rkg, panels):
    """The AVX2 kernel's most outlier k-groups per row tile of rkg row k-groups, in a call of
    `panels` 8-column panels (hi_limit in qgemm_u8s8_6x8c4_avx2.cpp)."""
    div = 64 if panels <= 2 else 32 if panels <= 8 else 20 if panels <= 32 else 12
    return rkg // div


@pytest.mark.parametrize("M,K,N", [(1, 7, 9), (6, 64, 8), (13, 1027, 70), (12, 4099, 1100),
                                   (5, 3, 17), (6, 2051, 16), (6, 512, 300)])
@pytest.mark.parametrize("nout", [1, 3, "limit", "limit+1"])
def test_sparse_outliers(isa, M, K, N, nout):
    """7-bit rows with a few k-groups (4 bytes of a row) holding bytes above 127: 128 or 255, one
    to four bytes of a group, at the first and the last group (the partial one when K % 4 != 0)
    and elsewhere, against weights mostly at -128 / 127, so that the groups' s16 pair sums
    saturate in VPMADDUBSW. The AVX2 kernel runs its VPMADDUBSW tile on A in place and corrects
    each such group after the k-loop (minus the in-loop term, plus the terms of min(a, 127) and
    a -sat 127), up to hi_limit groups per row tile ("limit"; one more falls back to the widened
    tile), kept over several B chunks at K = 4099. One thread: the call's columns are all of N.
    Bit-exact."""
    x, w, b = _extreme(M, K, N, 127, seed=M + K + N)
    a = x.int_repr().clone()
    g = torch.Generator().manual_seed(K)
    ntiles = -(-M // 6)  # the AVX2 kernel's row tiles are as even as possible
    rows = M // ntiles  # the first row tile
    kg = (K + 3) // 4
    limit = _hi_limit(rows * kg, -(-N // 8))
    count = min({"limit": limit, "limit+1": limit + 1}.get(nout, nout), rows * kg)
    groups = set([(0, 0), (rows - 1, kg - 1)][:count])
    while len(groups) < count:
        groups.add((int(torch.randint(0, rows, (1,), generator=g)),
                    int(torch.randint(0, kg, (1,), generator=g))))
    for j, (i, q) in enumerate(sorted(groups)):
        ks = list(range(4 * q, min(4 * q + 4, K)))
        ks = ks[j % len(ks):] + ks[:j % len(ks)]
        for t, k in enumerate(ks[:1 + j % len(ks)]):
            a[i, k] = 255 if (j + t) % 2 == 0 else 128
    x = torch._make_per_tensor_quantized_tensor(a, 0.01, 0)
    scale = _scale_for(K) * 4
    with using_threads(1):
        got = torch.ops.qplugin.linear(x, torch.ops.qplugin.linear_prepack(w, b), scale, 100)
    assert torch.equal(got.int_repr(), reference(x, w, b, scale, 100))


@pytest.mark.parametrize("N", [9, 12, 15, 16, 17, 23, 24, 31, 32, 40])
@pytest.mark.parametrize("M,K", [(1, 4), (6, 16), (7, 33), (13, 24)])
@pytest.mark.parametrize("w_zp", [False, True])
def test_two_panel_epilogue(isa, M, K, N, w_zp):
    """7-bit A takes the AVX2 VPMADDUBSW tile, which narrows two 8-column panels of u8 output
    together (VPACKSSDW / VPADDW / VPACKUSWB): full and partial second panels (N % 16 = 1..15),
    weight zero points (the row-sum term), outputs clamped at 0 and 255 (a large-range scale),
    and the ReLU-fused op (clamped at the zero point). Bit-exact."""
    x, w, b = _extreme(M, K, N, 127, seed=M * 100 + K + N, w_zp=w_zp)
    p = torch.ops.qplugin.linear_prepack(w, b)
    # Output zero points 100 and 0 (ReLU then clamps at 0 in both the float and the code domain);
    # scale 4e-4 gives mult = s_a * s_w / s_out of 0.05..0.3 and rounded values beyond the s16
    # range (the narrowing must not see them unclamped); scale 1e-9 gives values beyond 2^31,
    # where VCVTPS2DQ alone would return INT_MIN.
    for scale, zp in ((_scale_for(K) * 0.5, 100), (_scale_for(K) * 0.5, 0), (4e-4, 100),
                      (1e-9, 100)):
        want = reference(x, w, b, scale, zp)
        if zp == 100:
            assert int(want.min()) == 0 and int(want.max()) == 255  # both clamps exercised
        got = torch.ops.qplugin.linear(x, p, scale, zp).int_repr()
        assert torch.equal(got, want), f"{isa} M{M} K{K} N{N} scale {scale} zp {zp}"
        got = torch.ops.qplugin.linear_relu(x, p, scale, zp).int_repr()
        assert torch.equal(got, torch.clamp(want, min=zp)), f"relu {isa} M{M} K{K} N{N} {zp}"


@pytest.mark.parametrize("K", [3, 7, 8, 9, 31, 32, 33, 40, 67])
def test_single_outlier_every_position(isa, K):
    """One byte above 127 at any (row, k) of a 6-row tile whose other bytes fit in 7 bits must
    send the tile off the plain VPMADDUBSW path (AVX2: the tile's OR of all its bytes, in 32-byte
    blocks, 8-byte words, the last word and, for K < 8, bytes). Made observable: the byte is 255
    and its k-pair partner 127, both weights 127, so a missed byte would saturate the s16 pair
    sum (255 * 127 + 127 * 127 > 32767). The last k of an odd K has no partner (zero padding)
    and 255 * w alone cannot saturate, so it is not observable and is skipped. Bit-exact."""
    g = torch.Generator().manual_seed(K)
    base = torch.randint(0, 128, (6, K), generator=g, dtype=torch.uint8)
    wbase = torch.randint(-128, 128, (16, K), generator=g, dtype=torch.int8)
    sc = torch.rand(16, generator=g, dtype=torch.double) * 0.01 + 0.002
    b = torch.randn(16, generator=g)
    scale = _scale_for(K) * 4
    for k in range(K):
        partner = k ^ 1
        if partner >= K:
            continue
        wi = wbase.clone()
        wi[:, k] = 127
        wi[:, partner] = 127
        w = torch._make_per_channel_quantized_tensor(wi, sc, torch.zeros(16, dtype=torch.long), 0)
        p = torch.ops.qplugin.linear_prepack(w, b)
        for i in range(6):
            a = base.clone()
            a[i, k] = 255
            a[i, partner] = 127
            x = torch._make_per_tensor_quantized_tensor(a, 0.01, 0)
            got = torch.ops.qplugin.linear(x, p, scale, 100).int_repr()
            assert torch.equal(got, reference(x, w, b, scale, 100)), f"{isa} K{K} row {i} k {k}"


def _pair_pattern(N, K, total, lane, sign):
    """Weights that put, in every k-octet (k-groups g, g + 1 of 4 bytes), four weights of one s16
    lane of the AVX2 pair step (k 8o + 0, 1, 4, 5 for lane 0; 8o + 2, 3, 6, 7 for lane 1) at a
    positive-part sum (sign +1) or negative-part magnitude sum (sign -1) of `total`, the rest 0."""
    wi = torch.zeros(N, K, dtype=torch.int8)
    big = 127 if sign > 0 else -128
    vals = [big, big, sign * (total - 2 * abs(big)), 0]
    for o in range(K // 8):
        base = 8 * o + 2 * lane
        for k, v in zip((base, base + 1, base + 4, base + 5), vals):
            wi[:, k] = v
    return wi


@pytest.mark.parametrize("M,K,N", [(6, 64, 16), (12, 1027, 24), (6, 4099, 17), (13, 1027, 24),
                                   (1, 16, 8)])
@pytest.mark.parametrize("total", [258, 259])
def test_pair_step_weight_bound(isa, M, K, N, total):
    """The AVX2 kernel adds the VPMADDUBSW products of two k-groups in s16 before widening
    ("pair step", 6-row tiles on two full panels, k-loops of 16 groups or more) where its
    packing proves that no s16 lane can leave [-32768, 32767]: with A bytes <= 127, a lane's
    four weights must have positive parts summing to at most 258 and negative parts to at most
    258 in magnitude (127 * 258 = 32766; 127 * 259 = 32893 would wrap).
    Here every A byte is 127 and every k-octet of every column sits exactly at the bound (258:
    paired, the lanes reach +-32766) or one past it (259: must not be paired; a pairing would
    wrap every octet), in either lane, both signs; K = 4099: 512 octets in one k-loop. Per-channel
    scales put each column's exact result mid-range. Bit-exact."""
    a = torch.full((M, K), 127, dtype=torch.uint8)
    cols = []
    for n in range(N):
        cols.append(_pair_pattern(1, K, total, lane=n % 2, sign=1 if (n // 2) % 2 == 0 else -1))
    wi = torch.cat(cols)
    acc = (a.long() @ wi.long().T)[0]
    sa, s_out = 0.01, 0.1
    sc = torch.tensor([500.0 / max(abs(int(v)), 1) for v in acc], dtype=torch.double) * s_out / 0.1
    w = torch._make_per_channel_quantized_tensor(wi, sc, torch.zeros(N, dtype=torch.long), 0)
    x = torch._make_per_tensor_quantized_tensor(a, sa, 0)
    b = torch.zeros(N)
    want = reference(x, w, b, s_out, 100)
    assert int(want.min()) > 0 and int(want.max()) < 255 or K < 8
    got = torch.ops.qplugin.linear(x, torch.ops.qplugin.linear_prepack(w, b), s_out, 100)
    assert torch.equal(got.int_repr(), want)


# (M, K, N): K = 1027 ends in a partial k-group, K = 68 and 260 in an odd full group (17 and 65
# groups), which the pair-step loop takes alone; 12 and 18 rows make two and three row tiles.
PAIR_OUTLIER_SHAPES = [(6, 1027, 32), (12, 68, 300), (6, 576, 48), (18, 260, 40)]


@pytest.mark.parametrize("M,K,N", PAIR_OUTLIER_SHAPES)
@pytest.mark.parametrize("place", ["first", "second", "both", "last", "spread"])
def test_pair_steps_with_outliers(isa, M, K, N, place):
    """7-bit rows with a few k-groups holding bytes above 127 ("mode 2") take the AVX2 pair steps
    too: the k-loop runs over A in place, and each outlier's octet (k-groups g, g + 1) that the
    loop paired is corrected after it: its pair-step term recomputed and subtracted (the same
    instructions on the same bytes), the exact products of both groups added. Weights at the
    pair bound in every octet (258: every octet paired, lanes at +-32766 with bytes at 127), so
    that bytes of 255 saturate their VPMADDUBSW pair sums and the VPADDW wraps. Outliers in the
    first or the second group of octets, in both groups of one octet (corrected once), in the
    last group (an odd full group or a partial one, which the loop takes alone), and spread over
    the rows of every tile. One thread (the outlier limit depends on the call's panels).
    Bit-exact."""
    g = torch.Generator().manual_seed(M * 1000 + K + N)
    a = torch.randint(0, 128, (M, K), generator=g, dtype=torch.uint8)
    a[torch.rand(M, K, generator=g) < 0.5] = 127
    wi = torch.cat([_pair_pattern(1, K, 258, lane=n % 2, sign=1 if (n // 2) % 2 == 0 else -1)
                    for n in range(N)])
    kg, octs = (K + 3) // 4, K // 8
    ntiles = -(-M // 6)
    per_tile = max(1, min(_hi_limit((M // ntiles) * kg, -(-N // 8)), 6))
    hits = []  # (row, k-group)
    for t in range(ntiles):
        r0 = t * M // ntiles
        if place == "first":
            hits += [(r0, 0), (r0 + 1, 2 * (octs // 2))]
        elif place == "second":
            hits += [(r0, 1), (r0 + 2, 2 * (octs - 1) + 1)]
        elif place == "both":
            hits += [(r0 + 3, 4), (r0 + 3, 5)]
        elif place == "last":
            hits += [(r0, kg - 1), (r0 + 4, kg - 1)]
        else:
            while len(hits) < (t + 1) * per_tile:
                hits.append((r0 + int(torch.randint(0, M // ntiles, (1,), generator=g)),
                             int(torch.randint(0, kg, (1,), generator=g))))
    for j, (i, q) in enumerate(hits):
        for k in range(4 * q, min(4 * q + 4, K)):
            a[i, k] = 255 if (j + k) % 3 else 128
    acc = a.long() @ wi.long().T
    # Per-channel scales that put each column's largest result at 120 codes from the zero point.
    sc = torch.tensor([120.0 / max(int(v), 1) for v in acc.abs().amax(0)], dtype=torch.double)
    w = torch._make_per_channel_quantized_tensor(wi, sc, torch.zeros(N, dtype=torch.long), 0)
    x = torch._make_per_tensor_quantized_tensor(a, 0.01, 0)
    b = torch.zeros(N)
    want = reference(x, w, b, 0.01, 100)
    with using_threads(1):
        got = torch.ops.qplugin.linear(x, torch.ops.qplugin.linear_prepack(w, b), 0.01, 100)
    assert torch.equal(got.int_repr(), want)


@pytest.mark.parametrize("M,K,N", [(1, 8, 8), (6, 72, 16), (12, 576, 64), (18, 1027, 70),
                                   (12, 4099, 300), (6, 20, 9), (24, 2304, 33), (13, 1027, 70)])
@pytest.mark.parametrize("spikes", [0.0, 0.02, 0.3])
def test_pair_steps_realistic_weights(isa, M, K, N, spikes):
    """Per-channel symmetric weights as an observer gives them (Gaussian, each column's largest
    magnitude at 127), so that most k-octets pair on the AVX2 tier, with a fraction of the
    columns' octets raised past the pair bound at random places (those octets take their two
    groups one at a time; panels whose pairs cover too little take the plain loop), against
    7-bit A with half of the bytes at 127; 6-row tiles (M = 6, 12, 18, 24) and others; 1 and 2
    threads. Bit-exact."""
    g = torch.Generator().manual_seed(K * 7 + N + int(spikes * 100))
    a = torch.randint(0, 128, (M, K), generator=g, dtype=torch.uint8)
    a[torch.rand(M, K, generator=g) < 0.5] = 127
    wf = torch.randn(N, K, generator=g)
    wi = torch.round(wf / wf.abs().amax(1, keepdim=True) * 127).to(torch.int8)
    octs = K // 8
    if spikes > 0 and octs > 0:
        hit = torch.rand(N, octs, generator=g) < spikes
        for n, o in hit.nonzero().tolist():
            lane = (n + o) % 2
            wi[n, 8 * o + 2 * lane] = 127
            wi[n, 8 * o + 2 * lane + 1] = 127
            wi[n, 8 * o + 2 * lane + 4] = 100
    sc = torch.rand(N, generator=g, dtype=torch.double) * 0.01 + 0.002
    w = torch._make_per_channel_quantized_tensor(wi, sc, torch.zeros(N, dtype=torch.long), 0)
    x = torch._make_per_tensor_quantized_tensor(a, 0.01, 0)
    b = torch.randn(N, generator=g)
    scale = _scale_for(K)
    p = torch.ops.qplugin.linear_prepack(w, b)
    want = reference(x, w, b, scale, 100)
    for threads in (1, 2):
        with using_threads(threads):
            got = torch.ops.qplugin.linear(x, p, scale, 100)
        assert torch.equal(got.int_repr(), want), threads


def _bounded_weights(N, K, seed, extreme):
    """int8 weights in [-60, 60] but for one extreme pair (k = 0, 1) of column N // 2: "pos"
    (127, 127), "neg" (-128, -128), "mid" (100, 100) or none. The AVX2 packing's mode-4 bound
    (UbswBound: the largest A byte for which every VPMADDUBSW pair sum stays in s16) is then
    32767 // 254 = 129, 32768 // 256 = 128, 32767 // 200 = 163, or 255 (32767 // 120 = 273)."""
    g = torch.Generator().manual_seed(seed)
    wi = torch.randint(-60, 61, (N, K), generator=g, dtype=torch.int8)
    pair = {"pos": (127, 127), "neg": (-128, -128), "mid": (100, 100), "none": None}[extreme]
    if pair is not None:
        wi[N // 2, 0], wi[N // 2, 1] = pair
    sc = torch.rand(N, generator=g, dtype=torch.double) * 0.01 + 0.002
    w = torch._make_per_channel_quantized_tensor(wi, sc, torch.zeros(N, dtype=torch.long), 0)
    return w, torch.randn(N, generator=g)


_UBSW_BOUND = {"pos": 129, "neg": 128, "mid": 163, "none": 255}


@pytest.mark.parametrize("M,K,N", [(6, 64, 24), (13, 200, 40), (12, 1027, 70), (1, 64, 16)])
@pytest.mark.parametrize("extreme", ["pos", "neg", "mid", "none"])
@pytest.mark.parametrize("over", [0, 1])
def test_ubsw_bound(isa, M, K, N, extreme, over):
    """Mode 4 of the AVX2 kernel: a row tile whose bytes exceed 127 but not the packing's bound t
    runs VPMADDUBSW on A in place without pair steps. Rows of bytes <= 127 with the first two
    bytes of every row at t + over (the pair positions that meet the extreme weights: t * 254 or
    t * 256 reaches the s16 limit exactly, t + 1 passes it) and, for t = 255, bytes up to 255
    everywhere (a pair step, four products, would overflow s16 there): bit-exact against the
    exact reference whether the tile takes mode 4 (over = 0) or not (over = 1)."""
    t = _UBSW_BOUND[extreme]
    if t + over > 255:
        pytest.skip("no byte above 255")
    w, b = _bounded_weights(N, K, seed=K + N, extreme=extreme)
    g = torch.Generator().manual_seed(M * K + over)
    hi = t + over
    a = torch.randint(0, hi + 1, (M, K), generator=g, dtype=torch.uint8)
    a[:, :2] = t + over
    a[torch.rand(M, K, generator=g) < 0.3] = hi
    x = torch._make_per_tensor_quantized_tensor(a, 0.01, 3)
    scale = _scale_for(K) * 2
    got = torch.ops.qplugin.linear(x, torch.ops.qplugin.linear_prepack(w, b), scale, 100)
    assert torch.equal(got.int_repr(), reference(x, w, b, scale, 100))


def test_ubsw_bound_mixed_tiles(isa):
    """Row tiles (6 rows each) decide one by one: 7-bit (mode 1, pair steps); one k-group a row
    at the bound 129 (few: mode 2 with pair steps); 5% of the bytes at 129 (mode 4); a first row
    with 20% of its bytes at 129 and a later one with 255 at the extreme pair (the scan must not
    stop at the first row and take mode 4: 255 * 254 saturates); full range. Several B chunks, 1 and 2 threads."""
    w, b = _bounded_weights(500, 1000, seed=3, extreme="pos")
    g = torch.Generator().manual_seed(4)
    a = torch.randint(0, 128, (30, 1000), generator=g, dtype=torch.uint8)
    a[6:12, :2] = 129
    a[12:18][torch.rand(6, 1000, generator=g) < 0.05] = 129
    a[18][torch.rand(1000, generator=g) < 0.2] = 129  # too many k-groups for mode 2
    a[20, :2] = 255
    a[24:30] = torch.randint(0, 256, (6, 1000), generator=g, dtype=torch.uint8)
    x = torch._make_per_tensor_quantized_tensor(a, 0.01, 3)
    scale = _scale_for(1000) * 2
    p = torch.ops.qplugin.linear_prepack(w, b)
    for threads in (1, 2):
        with using_threads(threads):
            got = torch.ops.qplugin.linear(x, p, scale, 100)
        assert torch.equal(got.int_repr(), reference(x, w, b, scale, 100)), threads
