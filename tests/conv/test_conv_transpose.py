"""conv_transpose1d/2d/3d: against the exact float64 reference only (PyTorch x86 quantized
conv_transpose is wrong when in != out channels and, with fbgemm, for kernel == stride == 2 —
docs/oracle.md), plus PyTorch parity in its correct configuration (equal channels, k3)."""
from _conv_common import (  # noqa: E402,F401  (tests/conv/_conv_common.py)
    ISAS, START_ISA, F, assert_qclose, exact, make, pytest, qplugin, torch, torch_oracle,
    warnings)

# (dim, N, Cin, Cout, S, k, stride, pad, out_pad, dil, groups)
CASES = [(2, 1, 128, 64, 12, 2, 2, 0, 0, 1, 1), (2, 1, 16, 16, 14, 4, 2, 1, 0, 1, 1),
         (2, 2, 8, 6, 7, 3, 3, 1, 2, 2, 2), (1, 2, 8, 6, 7, 3, 2, 1, 1, 1, 2),
         (3, 1, 4, 6, 5, 3, 2, 1, 1, 1, 1), (2, 1, 4, 6, 5, 1, 3, 0, 0, 1, 1),
         (2, 4, 17, 3, 5, 5, 1, 2, 0, 1, 1), (1, 1, 6, 9, 8, 3, 1, 0, 0, 3, 3),
         # groups 1, dilation 1: the phases' implicit GEMM (driver/conv_gemm.cpp
         # run_igemm_transposed): phases of 1 and 2 taps with padding after (k3 s2 p0 op1), C_in
         # not a multiple of 4 (zero weights after each span), 1-d, 3-d with stride 1
         (2, 2, 8, 5, 9, 3, 2, 0, 1, 1, 1), (2, 1, 3, 7, 6, 4, 3, 2, 2, 1, 1),
         (1, 3, 5, 4, 10, 5, 2, 3, 1, 1, 1), (3, 1, 4, 4, 4, 2, 1, 0, 0, 1, 1)]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("per_ch", [False, True])
def test_exact(isa, case, per_ch):
    dim, N, Cin, Cout, S, k, s, p, op, d, g = case
    x, w, b = make(dim, N, Cin, Cout, S, k, g, per_ch=per_ch, transpose=True, wzp=0)
    pq = getattr(torch.ops.qplugin, f"conv_transpose{dim}d_prepack")(
        w, b, [s] * dim, [p] * dim, [op] * dim, [d] * dim, g)
    assert pq.transpose() and pq.output_padding() == ([0, op] if dim == 1 else [op] * dim)
    y = getattr(torch.ops.qplugin, f"conv_transpose{dim}d")(x, pq, 0.05, 100)
    fn = getattr(F, f"conv_transpose{dim}d")
    assert_qclose(y, exact(fn, x, w, b, 0.05, 100, stride=s, padding=p, output_padding=op,
                          groups=g, dilation=d), max_diff=1, min_identical=0.99)
    wu, _ = getattr(torch.ops.qplugin, f"conv_transpose{dim}d_unpack")(pq)
    assert torch.equal(wu.int_repr(), w.int_repr())


def test_vs_torch_where_torch_is_right():
    # Activation codes within 0..127 (xzp=0): PyTorch's FBGEMM AVX2 kernels (a CPU without
    # AVX-512, or FBGEMM_ENABLE_INSTRUCTIONS=AVX2) saturate u8 x s8 pair sums on full-range
    # inputs (docs/oracle.md); this range keeps them exact.
    x, w, b = make(2, 1, 16, 16, 10, 3, 1, xzp=0, transpose=True)
    args = ([2, 2], [1, 1], [1, 1], [1, 1], 1)
    y = torch.ops.qplugin.conv_transpose2d(
        x, torch.ops.qplugin.conv_transpose2d_prepack(w, b, *args), 0.05, 100)
    r = torch.ops.quantized.conv_transpose2d(
        x, torch.ops.quantized.conv_transpose2d_prepack(w, b, *args), 0.05, 100)
    ref = exact(F.conv_transpose2d, x, w, b, 0.05, 100, stride=2, padding=1, output_padding=1)
    assert_qclose(y, ref)
    assert_qclose(y, torch_oracle(r, ref, x, w, "conv_transpose2d"))


def _crop_reference(dim, x, w, b, s, p, op, d, g, osc, ozp):
    """Exact oracle for any output_padding >= 0: the full transposed conv (no padding, float64),
    cropped to [p, p + out) per spatial dimension; positions past its extent get the bias only.
    (float torch rejects output_padding >= max(stride, dilation), so F cannot be the oracle.)"""
    fn = getattr(F, f"conv_transpose{dim}d")
    full = fn(x.dequantize().double(), w.dequantize().double(), None, stride=s, groups=g,
              dilation=d)
    ins, ks = x.shape[2:], w.shape[2:]
    outs = [(i - 1) * s - 2 * p + d * (k - 1) + op + 1 for i, k in zip(ins, ks)]
    y = torch.zeros(*full.shape[:2], *outs, dtype=torch.float64)
    src = full[(slice(None), slice(None)) + tuple(slice(p, p + o) for o in outs)]
    y[(slice(None), slice(None)) + tuple(slice(0, n) for n in src.shape[2:])] = src
    y += b.double().view(1, -1, *([1] * dim))
    return torch.clamp(torch.round(y / osc) + ozp, 0, 255).to(torch.int32)


# output_padding >= stride (and >= dilation): PyTorch's quantized prepack accepts it (float torch
# does not) and computes exactly _crop_reference (checked: x86 and fbgemm, equal channels);
# qplugin follows (NOTES_ops2.md). (dim, Cin, Cout, S, k, stride, pad, out_pad, dil, groups)
BIG_OP_CASES = [(2, 4, 4, 6, 3, 1, 1, 1, 1, 1), (2, 4, 4, 6, 3, 1, 0, 1, 1, 1),
                (2, 8, 8, 5, 3, 1, 2, 1, 1, 1), (2, 4, 6, 5, 3, 2, 1, 3, 1, 2),
                (2, 4, 4, 6, 3, 1, 1, 2, 2, 1), (2, 4, 4, 5, 3, 1, 1, 5, 1, 1),
                (1, 6, 6, 7, 3, 1, 1, 1, 1, 1), (1, 4, 6, 7, 2, 2, 0, 4, 1, 2),
                (3, 4, 4, 4, 3, 1, 1, 1, 1, 1), (3, 4, 4, 4, 2, 1, 0, 2, 1, 1)]


@pytest.mark.parametrize("case", BIG_OP_CASES)
def test_output_padding_at_least_stride(isa, case):
    dim, Cin, Cout, S, k, s, p, op, d, g = case
    x, w, b = make(dim, 2, Cin, Cout, S, k, g, transpose=True)
    args = ([s] * dim, [p] * dim, [op] * dim, [d] * dim, g)
    pq = getattr(torch.ops.qplugin, f"conv_transpose{dim}d_prepack")(w, b, *args)
    y = getattr(torch.ops.qplugin, f"conv_transpose{dim}d")(x, pq, 0.05, 100)
    ref = _crop_reference(dim, x, w, b, s, p, op, d, g, 0.05, 100)
    assert_qclose(y, ref, max_diff=1, min_identical=0.99)
    if dim == 2 and Cin == Cout and g == 1:  # PyTorch is right here (x86, equal channels)
        # Codes within 0..127 (xzp=0) for PyTorch: its FBGEMM AVX2 kernels saturate on
        # full-range inputs (docs/oracle.md).
        x, w, b = make(dim, 2, Cin, Cout, S, k, g, xzp=0, transpose=True)
        y = torch.ops.qplugin.conv_transpose2d(
            x, torch.ops.qplugin.conv_transpose2d_prepack(w, b, *args), 0.05, 100)
        r = torch.ops.quantized.conv_transpose2d(
            x, torch.ops.quantized.conv_transpose2d_prepack(w, b, *args), 0.05, 100)
        assert_qclose(y, r.int_repr().int())
        # The oracle agrees with PyTorch: the crop reference is PyTorch's math.
        assert_qclose(r, _crop_reference(dim, x, w, b, s, p, op, d, g, 0.05, 100))


def test_output_padding_module():
    m = qplugin.nn.ConvTranspose2d(4, 4, 3, stride=1, padding=1, output_padding=1)
    x, _, _ = make(2, 1, 4, 4, 6, 3, 1, transpose=True)
    assert m(x).shape == (1, 4, 7, 7)
    assert "output_padding=(1, 1)" in repr(m)


def test_bad_inputs():
    x, w, b = make(2, 1, 4, 6, 5, 3, 1, transpose=True)
    with pytest.raises(RuntimeError, match=r"qplugin::conv_transpose2d_prepack: expected "
                                           r"output_padding >= 0, got output_padding \[-1, 0\]"):
        torch.ops.qplugin.conv_transpose2d_prepack(w, b, [2, 2], [0, 0], [-1, 0], [1, 1], 1)
    with pytest.raises(RuntimeError, match="in_channels .* divisible"):
        torch.ops.qplugin.conv_transpose2d_prepack(w, b, [1, 1], [0, 0], [0, 0], [1, 1], 3)
    pq = torch.ops.qplugin.conv2d_prepack(
        torch.quantize_per_tensor(torch.randn(6, 4, 3, 3), 0.1, 0, torch.qint8), None,
        [1, 1], [0, 0], [1, 1], 1)
    with pytest.raises(RuntimeError, match="transposed conv"):
        torch.ops.qplugin.conv_transpose2d(x, pq, 0.1, 0)
