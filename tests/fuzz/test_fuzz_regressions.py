# Named regression tests for what QPLUGIN_FUZZ=long found (NOTES_robust.md, "Findings"): each is
# the failing fuzz case reduced to a fixed input. Changes with: the kernels named per test.
import pytest
import torch
import torch.nn.functional as F

from _fuzz import deq64, requant64
from _reference import assert_bytes_equal, assert_qclose, using_isa
from _sweeps import make_q, with_layout

Q = torch.ops.qplugin


def _codes(shape, lo, hi, seed):
    return torch.randint(lo, hi + 1, shape, generator=torch.Generator().manual_seed(seed))


# ---------------------------------------------------------------------------------------------
# add/mul (csrc/kernels/binary/binary_plan.cpp): with input/output scale ratios ~1e5 the plan's
# float error bound exceeds 0.5 (thr <= 0: "every lane exact"), but the threshold was 0, so lanes
# whose float value was integral (clamped, or >= 2^23) were never sent to the exact path, and the
# AVX-512 second level resolved flagged lanes to floor(v) or floor(v) + 1 although v could be
# several units off: add_relu gave 3..7 where the exact result is 0 (fuzz seeds 462, 843) and
# 253 for 255 (seed 841), on AVX-512 only.

BINARY_CASES = {
    # a scale, a zp, b (None: the same tensor as a), out scale, out zp, shape
    "same_tensor_scale_1e4": (10000.0, 255, None, 0.0812610313296318, 0, (24, 4, 59)),
    "same_tensor_scale_2386": (2386.2294585763707, 255, None, 0.003921568859368563, 0,
                               (15, 24, 5, 20)),
    "tiny_out_scale": (2.7080594353536607e-06, 0, (0.07580231779513237, 255),
                       4.2479364026348776e-08, 0, (25, 20)),
}


@pytest.mark.parametrize("op", ["add", "add_relu"])
@pytest.mark.parametrize("name", list(BINARY_CASES))
def test_add_with_huge_scale_ratios_is_exact_on_every_isa(isa, name, op):
    sa, za, b_q, so, zo, shape = BINARY_CASES[name]
    # Seed 841's a held codes within 6 of its zero point 0; the others full-range codes.
    a = make_q(_codes(shape, 0, 6 if za == 0 else 255, 1), sa, za, torch.quint8)
    if b_q is None:
        b = a
    else:
        b = make_q(_codes(shape, 0, 255, 2), b_q[0], b_q[1], torch.quint8)
    v = deq64(a) + deq64(b)
    relu = op == "add_relu"
    # float64 suffices here: no value of these cases is near a tie (checked: within 1 of exact
    # would already fail before the fix, which was off by up to 7).
    expected = requant64(v, so, zo, torch.quint8, relu=relu)
    fn = getattr(Q, op)
    with using_isa(isa):
        got = fn(a, b, so, zo)
    assert_qclose(got, expected, max_diff=0, min_identical=1.0, msg=f"{name} {op} isa={isa}")
    with using_isa("scalar"):
        ref = fn(a, b, so, zo)
    assert_bytes_equal(got, ref, msg=f"{name} {op} isa={isa} vs scalar")


@pytest.mark.parametrize("op", ["mul", "mul_relu"])
def test_mul_with_huge_scale_ratio_is_exact_on_every_isa(isa, op):
    a = make_q(_codes((40, 33), 0, 255, 3), 300.0, 255, torch.quint8)
    b = make_q(_codes((40, 33), 0, 255, 4), 200.0, 250, torch.quint8)
    so, zo = 0.0137, 3
    expected = requant64(deq64(a) * deq64(b), so, zo, torch.quint8, relu=op == "mul_relu")
    with using_isa(isa):
        got = getattr(Q, op)(a, b, so, zo)
    assert_qclose(got, expected, max_diff=0, min_identical=1.0, msg=f"{op} isa={isa}")


# ---------------------------------------------------------------------------------------------
# max pooling (csrc/ops/quantized_cpu/pooling_kernel.cpp): a dilated window that skips over the
# whole input (it lies in the padding only) hit TORCH_INTERNAL_ASSERT ("please report a bug to
# PyTorch"); now a clear error. (PyTorch's float op gives -inf there, its quantized op 0.)

@pytest.mark.parametrize("dim", [1, 2, 3])
def test_max_pool_window_in_padding_only_raises(isa, dim):
    x = make_q(_codes((1, 2) + (1,) * (dim - 1) + (10,), 0, 255, 5), 0.1, 3, torch.quint8)
    k = [2] * dim
    s = [2] * dim
    p = [1] + [0] * (dim - 1)
    d = [2] + [1] * (dim - 1)
    if dim == 1:
        # 1-d: the one spatial dim is the one with padding and dilation (size 1 input).
        x = make_q(_codes((1, 2, 1), 0, 255, 5), 0.1, 3, torch.quint8)
    with pytest.raises(RuntimeError, match=r"max_pool\dd: expected every pooling window to cover "
                                           r"at least one input element.*padding only"):
        getattr(Q, f"max_pool{dim}d")(x, k, s, p, d, True)


def test_max_pool_window_partly_in_padding_still_works(isa):
    x = make_q(_codes((1, 2, 3, 10), 0, 255, 6), 0.1, 3, torch.quint8)
    y = Q.max_pool2d(x, [2, 2], [2, 2], [1, 0], [2, 1], False)
    ref = F.max_pool2d(x.int_repr().double(), [2, 2], [2, 2], [1, 0], [2, 1], False)
    assert torch.equal(y.int_repr().double(), ref)


# ---------------------------------------------------------------------------------------------
# nearest / nearest-exact 3-d, channels-last (csrc/ops/quantized_cpu/upsample_kernel.cpp): an
# output D-plane with the same source plane as the previous one was copied from that plane even
# when another thread's chunk held it (not yet written): a race that left one garbage plane in
# ~1 of 5 calls (fuzz seed 609: 2.5% of 102960 elements, off by up to 246).

@pytest.mark.parametrize("name,mode", [("_upsample_nearest_exact3d", "nearest-exact"),
                                       ("upsample_nearest3d", "nearest")])
@pytest.mark.parametrize("layout", ["channels_last", "channels_last_sliced"])
def test_nearest3d_channels_last_has_no_plane_copy_race(name, mode, layout):
    codes = _codes((3, 40, 4, 2, 8), -128, 127, 7)
    x = with_layout(make_q(codes, 1.4e-5, 33, torch.qint8), layout)
    size = [13, 3, 22]
    ref = F.interpolate(codes.double(), size=size, mode=mode).to(torch.int8)
    prev = torch.get_num_threads()
    try:
        for n in (2, 3, 4):
            torch.set_num_threads(n)
            for i in range(15):
                y = getattr(Q, name)(x, size, None, None, None)
                bad = int((y.int_repr() != ref).sum())
                assert bad == 0, f"{name} {layout} threads={n} call {i}: {bad} elements differ"
    finally:
        torch.set_num_threads(prev)


# ---------------------------------------------------------------------------------------------
# Linear/bilinear/trilinear resampling rounds the interpolated (code - zero point) half to even,
# the exact rule (torch 2.13 rounds the raw code, and with an odd zero point every exact tie
# lands 1 unit from the exact value; torch 2.14 rounds as qplugin does: docs/oracle.md). Found
# by QPLUGIN_FUZZ=long as a strict xfail; fixed in the kernels' lerp_v.

def test_bilinear_exact_ties_round_like_the_exact_reference():
    codes = (_codes((1, 36, 8, 3), -6, 6, 8) - 47).clamp(-128, 127)
    x = make_q(codes, 215.8768379657674, -47, torch.qint8)
    y = Q.upsample_bilinear2d(x, [15, 2], True, None, None)
    v = F.interpolate(codes.double() + 47, size=[15, 2], mode="bilinear", align_corners=True)
    expected = requant64(v * 215.8768379657674, 215.8768379657674, -47, torch.qint8)
    assert_qclose(y, expected, max_diff=1, min_identical=0.99)


# ---------------------------------------------------------------------------------------------
# A GEMM with K = 0 crashed the process on AMX CPUs (SIGSEGV in LDTILECFG): K % 64 == 0 sent it
# to the AMX kernel, whose tile configuration for K steps of 0 bytes (B tiles of 0 rows, 64 bytes
# a row) the CPU rejects. K = 0 comes from a transposed conv's output phase that no kernel tap
# reaches (stride 2 with dilation 2: every tap lands on the same parity) and from a linear with
# in_features 0. Found by QPLUGIN_FUZZ=long (conv seed 188 after the "low7" code kinds changed
# the draws); fixed in amx::gemm_prefers_amx / igemm_prefers_amx (csrc/kernels/gemm). The shapes
# give the empty phases at least 16 rows and 16 columns, the AMX kernel's minimum.

@pytest.mark.parametrize("dim,groups", [(1, 3), (1, 1), (2, 1)])
def test_conv_transpose_with_phases_no_tap_reaches(isa, dim, groups):
    cin, cout, k = 3 * groups, 21 * groups, 6
    x = make_q(_codes((1, cin) + (40,) * dim, 0, 255, 11), 0.01, 25, torch.quint8)
    w = make_q(_codes((cin, cout // groups) + (k,) * dim, -128, 127, 12), 0.01, 0, torch.qint8)
    bias = torch.randn(cout, generator=torch.Generator().manual_seed(13))
    st, pad, dil = [2] * dim, [2] * dim, [2] * dim
    op = getattr(Q, f"conv_transpose{dim}d")
    pq = getattr(Q, f"conv_transpose{dim}d_prepack")(w, bias, st, pad, [0] * dim, dil, groups)
    y = op(x, pq, 0.5, 100)
    fn = getattr(F, f"conv_transpose{dim}d")
    v = fn(deq64(x), deq64(w), bias.double(), st, pad, 0, groups, dil)
    expected = requant64(v, 0.5, 100, torch.quint8)
    # (Outputs at odd positions are the bias alone: their phases have K = 0.)
    assert_qclose(y, expected, max_diff=1, min_identical=0.99)


def test_linear_with_no_input_features(isa):
    x = make_q(torch.zeros(32, 0, dtype=torch.int64), 0.1, 3, torch.quint8)
    w = make_q(torch.zeros(64, 0, dtype=torch.int64), 0.1, 0, torch.qint8)
    bias = torch.randn(64, generator=torch.Generator().manual_seed(14))
    y = Q.linear(x, Q.linear_prepack(w, bias), 0.05, 100)
    expected = requant64(bias.double().expand(32, 64), 0.05, 100, torch.quint8)
    assert torch.equal(y.int_repr(), expected.int_repr())


# ---------------------------------------------------------------------------------------------
# Linear/bilinear/trilinear resampling with an explicit scale applied it to a dimension whose
# size does not change; PyTorch copies such a dimension whatever the scale
# (compute_source_index_and_lambda: F.interpolate(scale_factor=1.0465) on 8 pixels returns them,
# and torch's quantized bilinear copies when both sizes match). Up to 59 units off. Found by
# QPLUGIN_FUZZ=long (resample seed 542); fixed in upsample_kernel.cpp's linear_weights.

@pytest.mark.parametrize("dim", [1, 2, 3])
@pytest.mark.parametrize("align_corners", [False, True])
def test_linear_resample_keeps_an_unchanged_dimension(isa, dim, align_corners):
    s = 1.0464881395007368
    in_sizes = [8, 6, 5][:dim]
    # The first dimension keeps its size (8 -> floor(8 * s) = 8); the others double.
    size = [8] + [2 * n for n in in_sizes[1:]]
    scales = [s] + [2.0] * (dim - 1)
    codes = _codes((1, 3, *in_sizes), 0, 255, 15 + dim)
    x = make_q(codes, 0.05, 7, torch.quint8)
    name = {1: "upsample_linear1d", 2: "upsample_bilinear2d", 3: "upsample_trilinear3d"}[dim]
    y = getattr(Q, name)(x, size, align_corners, *scales)
    mode = {1: "linear", 2: "bilinear", 3: "trilinear"}[dim]
    v = F.interpolate((codes - 7).float(), scale_factor=scales, mode=mode,
                      align_corners=align_corners, recompute_scale_factor=False).double()
    assert list(v.shape[2:]) == size
    assert_qclose(y, make_q(torch.round(v).to(torch.int64) + 7, 0.05, 7, torch.quint8),
                  max_diff=1, min_identical=0.99)
    # Every size unchanged: the input itself, as torch's quantized bilinear gives.
    same = getattr(Q, name)(x, in_sizes, align_corners, *([s] * dim))
    assert torch.equal(same.int_repr(), x.int_repr())
    if dim == 2:
        ref = torch._C._nn.upsample_bilinear2d(x, in_sizes, align_corners, s, s)
        assert torch.equal(same.int_repr(), ref.int_repr())
