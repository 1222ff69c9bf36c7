"""torch.ops.qplugin.linear / linear_relu / linear_prepack / linear_unpack.

Oracles: (1) an exact integer reference (accumulators in int64) requantized with qplugin's float32
formula -> must match bit for bit; (2) the same accumulators requantized exactly in float64 and
(3) torch.ops.quantized.linear (x86 engine) -> within 1, >= 99% identical. Every ISA.
"""
import warnings  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402

import qplugin  # noqa: E402,F401
from _reference import assert_qclose, gemm_oracle, isas_to_compare  # noqa: E402

warnings.filterwarnings("ignore", message=".*quantiz.*deprecated.*")
torch.backends.quantized.engine = "x86"

ISAS = ["scalar", "avx2", "avx512vnni"]
# The ISA at session start (QPLUGIN_CPU_ISA may cap it): restored after every ISA-forcing test.
START_ISA = torch.ops.qplugin._cpu_isa()


# ---------------------------------------------------------------------------------------------
# References

def _wq(w):
    """(int64 weight values minus zero points [N, K], float64 scales [N], float32 scales [N])."""
    N = w.shape[0]
    if w.qscheme() == torch.per_tensor_affine:
        zp = torch.full((N,), w.q_zero_point(), dtype=torch.long)
        sc = torch.full((N,), w.q_scale(), dtype=torch.double)
    else:
        zp = w.q_per_channel_zero_points().long()
        sc = w.q_per_channel_scales().double()
    return w.int_repr().long() - zp[:, None], sc


def exact_acc(x, w):
    """int64 accumulators sum_k (x - zx)(w - zw), shape [M, N]."""
    K = x.shape[-1]
    a = x.int_repr().long().reshape(-1, K) - x.q_zero_point()
    wd, _ = _wq(w)
    return a @ wd.T


def ref_f32(x, w, b, scale, zp, relu=False):
    """qplugin's requantization, replayed in float32 torch ops: bit-exact expectation."""
    acc = exact_acc(x, w)
    N = w.shape[0]
    sa = torch.tensor(x.q_scale(), dtype=torch.float32)
    so = torch.tensor(scale, dtype=torch.float32)
    bias = b if b is not None else torch.zeros(N)
    if w.qscheme() == torch.per_tensor_affine:
        atw = sa * torch.tensor(w.q_scale(), dtype=torch.float32)
        mult = (atw / so).expand(N)
        rcp = torch.tensor(1.0 / float(atw), dtype=torch.float32)
        bq = bias * rcp if b is not None else torch.zeros(N)
    else:
        atw = sa * w.q_per_channel_scales().float()
        mult = atw / so
        bq = bias / atw if b is not None else torch.zeros(N)
    v = (acc.float() + bq) * mult
    lo = max(0, zp) if relu else 0
    v = torch.clamp(v, float(lo - zp), float(255 - zp))
    q = (torch.round(v) + zp).to(torch.uint8)
    return q.reshape(*x.shape[:-1], N)


def ref_f64(x, w, b, scale, zp, relu=False):
    """The real-number result, requantized once (float64, round half to even)."""
    acc = exact_acc(x, w).double()
    _, sc = _wq(w)
    bias = b.double() if b is not None else torch.zeros(w.shape[0], dtype=torch.double)
    v = acc * (x.q_scale() * sc) / scale + bias / scale
    q = torch.round(v) + zp
    q = torch.clamp(q, max(0, zp) if relu else 0, 255)
    return q.to(torch.uint8).reshape(*x.shape[:-1], w.shape[0])


def make(M, K, N, *, scheme="per_channel", w_zp=0, x_zp=128, bias=True, seed=0, x_scale=None,
         lead=None, full_range=False):
    g = torch.Generator().manual_seed(seed)
    shape = (lead or (M,)) + (K,)
    if full_range:
        xi = torch.randint(0, 256, shape, generator=g, dtype=torch.uint8)
    else:
        xi = torch.randint(0, 256, shape, generator=g, dtype=torch.int32).clamp(0, 255).to(
            torch.uint8)
    xs = x_scale if x_scale is not None else 0.02
    x = torch._make_per_tensor_quantized_tensor(xi, xs, x_zp)
    wi = torch.randint(-128, 128, (N, K), generator=g, dtype=torch.int8)
    if full_range:
        wi = torch.where(torch.rand(N, K, generator=g) < 0.5, 127, -128).to(torch.int8)
    if scheme == "per_tensor":
        w = torch._make_per_tensor_quantized_tensor(wi, 0.01, w_zp)
    else:
        sc = torch.rand(N, generator=g, dtype=torch.double) * 0.01 + 0.002
        if w_zp == "random":
            zps = torch.randint(-20, 21, (N,), generator=g)
        else:
            zps = torch.full((N,), w_zp, dtype=torch.long)
        w = torch._make_per_channel_quantized_tensor(wi, sc, zps, 0)
    b = torch.randn(N, generator=g) * 3 if bias else None
    return x, w, b


def out_qparams(x, w, b):
    """An output scale that spreads the float result over ~the quint8 range."""
    acc = exact_acc(x, w).double()
    _, sc = _wq(w)
    f = acc * (x.q_scale() * sc)
    if b is not None:
        f = f + b.double()
    lo, hi = f.min().item() if f.numel() else -1.0, f.max().item() if f.numel() else 1.0
    scale = max((hi - lo) / 255.0, 1e-3)
    zp = int(min(255, max(0, round(-lo / scale))))
    return scale, zp


def check(x, w, b, scale=None, zp=None, relu=False, torch_oracle=True, what=""):
    if scale is None:
        scale, zp = out_qparams(x, w, b)
    p = torch.ops.qplugin.linear_prepack(w, b)
    op = torch.ops.qplugin.linear_relu if relu else torch.ops.qplugin.linear
    y = op(x, p, scale, zp)
    assert y.dtype == torch.quint8 and y.q_scale() == scale and y.q_zero_point() == zp
    assert y.shape == x.shape[:-1] + (w.shape[0],)
    got = y.int_repr()
    assert torch.equal(got, ref_f32(x, w, b, scale, zp, relu)), f"{what}: not bit-exact"
    exact = ref_f64(x, w, b, scale, zp, relu)
    assert_qclose(got, exact, msg=what + " vs float64")
    if torch_oracle:
        # PyTorch where it is a valid oracle for this case; its AVX2 kernels saturate on
        # full-range inputs (gemm_oracle in tests/_reference.py), then the exact reference.
        tp = torch.ops.quantized.linear_prepack(w, b)
        top = torch.ops.quantized.linear_relu if relu else torch.ops.quantized.linear
        want = gemm_oracle(top(x, tp, scale, zp).int_repr(), exact, x.int_repr(), w.int_repr(),
                           what)
        assert_qclose(got, want, msg=what + " vs torch (or exact where torch saturates)")
    return y


# ---------------------------------------------------------------------------------------------
# Parity sweeps

KN = [(1, 1), (3, 7), (4, 16), (5, 17), (63, 63), (64, 64), (65, 65), (127, 129), (256, 200),
      (257, 48), (1000, 96)]


@pytest.mark.parametrize("M", [1, 2, 7, 64, 300])
@pytest.mark.parametrize("K,N", KN)
def test_parity_sweep(isa, M, K, N):
    # Cycle through weight schemes and zero points so every (M, K, N) sees a different mix.
    i = M * 31 + K * 7 + N
    scheme = ["per_channel", "per_tensor"][i % 2]
    w_zp = [0, 3, "random", -7][(i // 2) % 4] if scheme == "per_channel" else [0, 5, -3][i % 3]
    x_zp = [0, 128, 255][(i // 3) % 3]
    x, w, b = make(M, K, N, scheme=scheme, w_zp=w_zp, x_zp=x_zp, bias=(i % 5 != 0), seed=i)
    check(x, w, b, relu=(i % 4 == 1), what=f"{isa} M{M} K{K} N{N} {scheme} wzp{w_zp} xzp{x_zp}")


@pytest.mark.parametrize("scheme,w_zp", [("per_tensor", 0), ("per_tensor", 9), ("per_tensor", -128),
                                         ("per_channel", 0), ("per_channel", "random")])
@pytest.mark.parametrize("x_zp", [0, 128, 255])
def test_zero_points(isa, scheme, w_zp, x_zp):
    x, w, b = make(33, 77, 45, scheme=scheme, w_zp=w_zp, x_zp=x_zp, seed=x_zp)
    check(x, w, b, what=f"{isa} {scheme} wzp{w_zp} xzp{x_zp}")


@pytest.mark.parametrize("lead", [(5,), (2, 3), (2, 3, 4)])
def test_input_rank(isa, lead):
    x, w, b = make(0, 19, 21, lead=lead, seed=len(lead))
    y = check(x, w, b, what=f"{isa} rank {len(lead) + 1}")
    assert y.shape == lead + (21,)


def test_noncontiguous_and_strided_inputs(isa):
    x, w, b = make(40, 64, 33, seed=3)
    scale, zp = out_qparams(x, w, b)
    p = torch.ops.qplugin.linear_prepack(w, b)
    want = torch.ops.qplugin.linear(x, p, scale, zp).int_repr()
    # Row slice of a wider matrix: used in place with lda = 100.
    raw = torch.zeros(40, 100, dtype=torch.uint8)
    raw[:, 10:74] = x.int_repr()
    wide = torch._make_per_tensor_quantized_tensor(raw, x.q_scale(), x.q_zero_point())
    xs = wide[:, 10:74]
    assert xs.stride() == (100, 1)
    assert torch.equal(torch.ops.qplugin.linear(xs, p, scale, zp).int_repr(), want)
    # Transposed storage and a 3-D permuted input.
    xt = x.int_repr().t().contiguous().t()
    xt = torch._make_per_tensor_quantized_tensor(xt, x.q_scale(), x.q_zero_point())
    assert torch.equal(torch.ops.qplugin.linear(xt, p, scale, zp).int_repr(), want)
    x3 = x.reshape(8, 5, 64).transpose(0, 1)
    y3 = torch.ops.qplugin.linear(x3, p, scale, zp)
    assert torch.equal(y3.int_repr(), want.reshape(8, 5, 33).transpose(0, 1))


def test_full_range_inputs_do_not_saturate(isa):
    """0..255 activations with +-127/-128 weights: u8*s8 pair sums up to 2*255*128 exceed int16 —
    AVX2's VPMADDUBSW would saturate (PyTorch issue 44939); qplugin must stay exact."""
    for x_zp in (0, 255):
        x, w, b = make(13, 130, 40, scheme="per_tensor", x_zp=x_zp, full_range=True, seed=5)
        xi = x.int_repr()
        xi[:, :] = 255  # every activation at the top of the range
        x = torch._make_per_tensor_quantized_tensor(xi, x.q_scale(), x_zp)
        wi = w.int_repr()
        wi[:, ::2] = 127
        w = torch._make_per_tensor_quantized_tensor(wi, w.q_scale(), 0)
        # The float64 / exact-integer references decide; torch's fbgemm is only exact on VNNI.
        check(x, w, b, torch_oracle=False, what=f"{isa} saturating xzp{x_zp}")


@pytest.mark.parametrize("zp", [0, 1, 128, 254, 255])
def test_output_clamping_and_relu(isa, zp):
    x, w, b = make(17, 50, 23, seed=zp)
    scale, _ = out_qparams(x, w, b)
    for s in (scale, scale / 50):  # the second saturates most outputs at 0 and 255
        check(x, w, b, s, zp, what=f"{isa} zp{zp} scale{s}")
        check(x, w, b, s, zp, relu=True, what=f"{isa} relu zp{zp} scale{s}")


def test_relu_zero_point_floor(isa):
    x, w, b = make(9, 31, 29, seed=11)
    scale, _ = out_qparams(x, w, b)
    y = torch.ops.qplugin.linear_relu(x, torch.ops.qplugin.linear_prepack(w, b), scale, 100)
    assert y.int_repr().min().item() >= 100


def test_no_bias(isa):
    x, w, _ = make(20, 40, 30, seed=2)
    check(x, w, None, what=f"{isa} no bias")


def test_large_k(isa):
    x, w, b = make(3, 5000, 70, scheme="per_channel", w_zp="random", seed=8)
    check(x, w, b, what=f"{isa} K=5000")


# ---------------------------------------------------------------------------------------------
# Empty and zero-sized dimensions

def test_zero_in_features_gives_bias(isa):
    """K = 0: the empty sum is 0, so y = quantize(bias) (zero point without a bias). PyTorch's
    quantized linear returns uninitialized memory here (docs/oracle.md), so the oracle
    is the float op: F.linear on an empty inner dimension returns the bias."""
    w = torch._make_per_tensor_quantized_tensor(torch.zeros(6, 0, dtype=torch.int8), 0.1, 0)
    b = torch.tensor([0.0, 1.0, -1.0, 2.5, 100.0, -100.0])
    x = torch._make_per_tensor_quantized_tensor(torch.zeros(4, 0, dtype=torch.uint8), 0.1, 3)
    p = torch.ops.qplugin.linear_prepack(w, b)
    y = torch.ops.qplugin.linear(x, p, 0.5, 10)
    want = torch.quantize_per_tensor(torch.nn.functional.linear(x.dequantize(), w.dequantize(), b),
                                     0.5, 10, torch.quint8)
    assert torch.equal(y.int_repr(), want.int_repr())
    y0 = torch.ops.qplugin.linear(x, torch.ops.qplugin.linear_prepack(w, None), 0.5, 10)
    assert torch.equal(y0.int_repr(), torch.full((4, 6), 10, dtype=torch.uint8))
    yr = torch.ops.qplugin.linear_relu(x, p, 0.5, 10)
    assert yr.int_repr().min().item() == 10


def test_empty_batch_and_zero_out_features(isa):
    x, w, b = make(0, 16, 8, seed=1)
    y = torch.ops.qplugin.linear(x, torch.ops.qplugin.linear_prepack(w, b), 0.1, 0)
    assert y.shape == (0, 8)
    x, _, _ = make(5, 16, 8, seed=1)
    w0 = torch._make_per_tensor_quantized_tensor(torch.zeros(0, 16, dtype=torch.int8), 0.1, 0)
    y = torch.ops.qplugin.linear(x, torch.ops.qplugin.linear_prepack(w0, None), 0.1, 0)
    assert y.shape == (5, 0)


# ---------------------------------------------------------------------------------------------
# ISA identity, prepack-time kernel choice, unpack, packed size

def test_every_isa_gives_identical_bytes():
    x, w, b = make(37, 203, 141, scheme="per_channel", w_zp="random", x_zp=77, seed=21)
    scale, zp = out_qparams(x, w, b)
    outs = {}
    for name in isas_to_compare():
        torch.ops.qplugin._set_cpu_isa(name)
        p = torch.ops.qplugin.linear_prepack(w, b)
        assert p.kernel().endswith("__" + name)
        outs[name] = torch.ops.qplugin.linear_relu(x, p, scale, zp).int_repr()
    torch.ops.qplugin._set_cpu_isa(START_ISA)
    for name, y in outs.items():
        assert torch.equal(y, outs["scalar"]), name


def test_packed_object_keeps_its_kernel():
    x, w, b = make(10, 40, 50, seed=4)
    p_scalar = None
    if torch.ops.qplugin._set_cpu_isa("scalar") == "scalar":
        p_scalar = torch.ops.qplugin.linear_prepack(w, b)
    torch.ops.qplugin._set_cpu_isa(START_ISA)
    p_auto = torch.ops.qplugin.linear_prepack(w, b)
    assert p_auto.kernel().endswith("__" + torch.ops.qplugin._cpu_isa())
    assert p_scalar.kernel().endswith("__scalar")  # apply() never consults the global ISA
    y1 = torch.ops.qplugin.linear(x, p_scalar, 0.1, 128)
    y2 = torch.ops.qplugin.linear(x, p_auto, 0.1, 128)
    assert torch.equal(y1.int_repr(), y2.int_repr())


@pytest.mark.parametrize("scheme,w_zp", [("per_tensor", 0), ("per_tensor", -5),
                                         ("per_channel", 0), ("per_channel", "random")])
@pytest.mark.parametrize("K,N", [(1, 1), (5, 70), (64, 64), (131, 67)])
def test_unpack_is_bit_exact(isa, scheme, w_zp, K, N):
    _, w, b = make(1, K, N, scheme=scheme, w_zp=w_zp, seed=K + N)
    p = torch.ops.qplugin.linear_prepack(w, b)
    w2, b2 = torch.ops.qplugin.linear_unpack(p)
    assert w2.dtype == torch.qint8 and w2.qscheme() == w.qscheme() and w2.shape == w.shape
    assert torch.equal(w2.int_repr(), w.int_repr())
    if scheme == "per_tensor":
        assert w2.q_scale() == w.q_scale() and w2.q_zero_point() == w.q_zero_point()
    else:
        assert torch.equal(w2.q_per_channel_scales(), w.q_per_channel_scales())
        assert torch.equal(w2.q_per_channel_zero_points(), w.q_per_channel_zero_points())
        assert w2.q_per_channel_axis() == 0
    assert torch.equal(b2, b)
    w3, b3 = p.unpack()
    assert torch.equal(w3.int_repr(), w.int_repr()) and torch.equal(b3, b)


@pytest.mark.parametrize("K,N", [(1, 1), (7, 3), (100, 1), (1000, 1000), (4096, 17), (33, 4096)])
def test_packed_size_bound(isa, K, N):
    """Packed weights cost at most 1.1x the int8 weight bytes plus O(out_features)."""
    _, w, b = make(1, K, N, seed=1)
    p = torch.ops.qplugin.linear_prepack(w, b)
    assert p.packed_weight_bytes() <= 1.1 * K * N + 4 * N + 64
    # + column sums, float scales, int32 zero points, the double/int64 scales and zps, bias.
    assert p.packed_size_bytes() <= 1.1 * K * N + 40 * N + 64
    assert p.in_features() == K and p.out_features() == N


def test_bias_is_owned_by_the_packed_object():
    x, w, b = make(4, 10, 6, seed=9)
    p = torch.ops.qplugin.linear_prepack(w, b)
    y1 = torch.ops.qplugin.linear(x, p, 0.05, 100).int_repr()
    b.add_(100.0)  # the caller's tensor changes; the packed bias must not
    y2 = torch.ops.qplugin.linear(x, p, 0.05, 100).int_repr()
    assert torch.equal(y1, y2)


def test_threads_give_identical_results():
    x, w, b = make(150, 300, 500, scheme="per_channel", w_zp="random", seed=6)
    p = torch.ops.qplugin.linear_prepack(w, b)
    old = torch.get_num_threads()
    try:
        outs = []
        for t in (1, 2, 3):
            torch.set_num_threads(t)
            outs.append(torch.ops.qplugin.linear(x, p, 0.5, 128).int_repr())
            x1 = x[:1]
            outs.append(torch.ops.qplugin.linear(x1, p, 0.5, 128).int_repr())
    finally:
        torch.set_num_threads(old)
    for y in outs[2::2]:
        assert torch.equal(y, outs[0])
    for y in outs[3::2]:
        assert torch.equal(y, outs[1])


# ---------------------------------------------------------------------------------------------
# Bad input: clear errors

def _w(N=4, K=3):
    return torch.quantize_per_tensor(torch.randn(N, K), 0.1, 0, torch.qint8)


def _x(M=2, K=3):
    return torch.quantize_per_tensor(torch.rand(M, K), 0.1, 0, torch.quint8)


def test_prepack_rejects_float_weight():
    with pytest.raises(RuntimeError, match=r"qplugin::linear_prepack: expected weight to be a "
                                           r"quantized tensor of dtype torch.qint8, got a Float"):
        torch.ops.qplugin.linear_prepack(torch.randn(4, 3), None)


def test_prepack_rejects_quint8_weight():
    w = torch.quantize_per_tensor(torch.rand(4, 3), 0.1, 0, torch.quint8)
    with pytest.raises(RuntimeError, match=r"qplugin::linear_prepack: expected weight of dtype "
                                           r"torch.qint8, got QUInt8"):
        torch.ops.qplugin.linear_prepack(w, None)


def test_prepack_rejects_bad_weight_rank_and_axis():
    w3 = torch.quantize_per_tensor(torch.randn(2, 4, 3), 0.1, 0, torch.qint8)
    with pytest.raises(RuntimeError, match=r"expected 2-D weight \[out_features, in_features\], "
                                           r"got 3-D"):
        torch.ops.qplugin.linear_prepack(w3, None)
    w = torch.quantize_per_channel(torch.randn(4, 3), torch.rand(3).double() + 0.1,
                                   torch.zeros(3, dtype=torch.long), 1, torch.qint8)
    with pytest.raises(RuntimeError, match=r"along axis 0 \(output channels\), got axis 1"):
        torch.ops.qplugin.linear_prepack(w, None)


def test_prepack_rejects_bad_weight_scale():
    w = torch._make_per_channel_quantized_tensor(
        torch.zeros(3, 2, dtype=torch.int8), torch.tensor([0.1, 0.0, 0.1], dtype=torch.double),
        torch.zeros(3, dtype=torch.long), 0)
    with pytest.raises(RuntimeError, match=r"expected finite, positive weight scales.*got 0 at "
                                           r"output channel 1"):
        torch.ops.qplugin.linear_prepack(w, None)


@pytest.mark.parametrize("bias,msg", [
    (torch.zeros(5), r"expected bias of shape \[4\] \(out_features\), got shape \[5\]"),
    (torch.zeros(2, 2), r"expected bias of shape \[4\] \(out_features\), got shape \[2, 2\]"),
    (torch.zeros(4, dtype=torch.float64), r"expected bias of dtype torch.float32, got Double"),
    (torch.zeros(4, dtype=torch.int32), r"expected bias of dtype torch.float32, got Int"),
])
def test_prepack_rejects_bad_bias(bias, msg):
    with pytest.raises(RuntimeError, match="qplugin::linear_prepack: " + msg):
        torch.ops.qplugin.linear_prepack(_w(), bias)


def test_linear_rejects_k_mismatch_with_both_sizes():
    p = torch.ops.qplugin.linear_prepack(_w(4, 3), None)
    with pytest.raises(RuntimeError, match=r"qplugin::linear: expected input with in_features = 3"
                                           r" in its last dimension \(weight is \[4, 3\]\), got 5"):
        torch.ops.qplugin.linear(_x(2, 5), p, 0.1, 0)


def test_linear_rejects_rank1_and_float_input():
    p = torch.ops.qplugin.linear_prepack(_w(4, 3), None)
    x1 = torch.quantize_per_tensor(torch.rand(3), 0.1, 0, torch.quint8)
    with pytest.raises(RuntimeError, match=r"qplugin::linear: expected input of rank >= 2 .*got "
                                           r"1-D"):
        torch.ops.qplugin.linear(x1, p, 0.1, 0)
    with pytest.raises(RuntimeError, match=r"qplugin::linear_relu: expected input to be a "
                                           r"quantized tensor"):
        torch.ops.qplugin.linear_relu(torch.rand(2, 3), p, 0.1, 0)
    xs8 = torch.quantize_per_tensor(torch.rand(2, 3), 0.1, 0, torch.qint8)
    with pytest.raises(RuntimeError, match=r"expected input of dtype QUInt8, got QInt8"):
        torch.ops.qplugin.linear(xs8, p, 0.1, 0)


@pytest.mark.parametrize("scale", [float("nan"), 0.0, -1.0, float("inf"), 1e-46])
def test_linear_rejects_bad_output_scale(scale):
    p = torch.ops.qplugin.linear_prepack(_w(), None)
    with pytest.raises(RuntimeError, match=r"qplugin::linear: expected a finite, positive "
                                           r"output_scale"):
        torch.ops.qplugin.linear(_x(), p, scale, 0)


@pytest.mark.parametrize("zp", [-1, 256])
def test_linear_rejects_bad_output_zero_point(zp):
    p = torch.ops.qplugin.linear_prepack(_w(), None)
    with pytest.raises(RuntimeError, match=r"expected output_zero_point in \[0, 255\]"):
        torch.ops.qplugin.linear_relu(_x(), p, 0.1, zp)


def test_linear_rejects_zero_input_scale():
    p = torch.ops.qplugin.linear_prepack(_w(), None)
    x = torch._make_per_tensor_quantized_tensor(torch.zeros(2, 3, dtype=torch.uint8), 0.0, 0)
    with pytest.raises(RuntimeError, match=r"expected input with a finite, positive scale, got 0"):
        torch.ops.qplugin.linear(x, p, 0.1, 0)


def test_schemas_mirror_pytorch():
    """Same names, argument order, defaults and returns as torch.ops.quantized, modulo the
    namespace and the packed-params class."""
    for name in ("linear_prepack", "linear", "linear_relu", "linear_unpack"):
        ours = str(getattr(torch.ops.qplugin, name).default._schema).split("::", 1)[1]
        theirs = str(getattr(torch.ops.quantized, name).default._schema).split("::", 1)[1]
        assert ours.replace("qplugin.LinearPackedParams", "X") == theirs.replace(
            "quantized.LinearPackedParamsBase", "X")
        # PT2-door overloads (`.plain`) are pinned in tests/pt2/schemas/.
        assert [o for o in getattr(torch.ops.qplugin, name).overloads()
                if o != "plain" and not o.endswith("_plain")] == ["default"]


def test_schemas():
    s = {name: str(getattr(torch.ops.qplugin, name).default._schema)
         for name in ("linear_prepack", "linear", "linear_relu", "linear_unpack")}
    cls = "__torch__.torch.classes.qplugin.LinearPackedParams"
    assert s["linear_prepack"] == (f"qplugin::linear_prepack(Tensor W, Tensor? B=None) -> {cls} "
                                   "W_prepack")
    assert s["linear"] == (f"qplugin::linear(Tensor X, {cls} W_prepack, float Y_scale_i, "
                           "int Y_zero_point_i) -> Tensor Y")
    assert s["linear_relu"] == (f"qplugin::linear_relu(Tensor X, {cls} W_prepack, "
                                "float Y_scale_i, int Y_zero_point_i) -> Tensor Y")
    assert s["linear_unpack"] == (f"qplugin::linear_unpack({cls} W_prepack) -> "
                                  "(Tensor W_origin, Tensor? B_origin)")


def test_concurrent_calls_with_different_qparams():
    """The packed object caches the last per-call requantization vectors: concurrent callers
    with different input/output qparams must each get their own correct result."""
    import threading
    x, w, b = make(8, 200, 300, scheme="per_channel", w_zp="random", seed=12)
    p = torch.ops.qplugin.linear_prepack(w, b)
    cases = []
    for i in range(6):
        xi = torch._make_per_tensor_quantized_tensor(x.int_repr(), 0.01 + 0.003 * i, 20 * i)
        cases.append((xi, 0.2 + 0.05 * i, 10 * i))
    want = [torch.ops.qplugin.linear(xi, p, s, z).int_repr() for xi, s, z in cases]
    errors = []

    def worker(j):
        for r in range(60):
            xi, s, z = cases[(j + r) % len(cases)]
            y = torch.ops.qplugin.linear(xi, p, s, z).int_repr()
            if not torch.equal(y, want[(j + r) % len(cases)]):
                errors.append((j, r))

    threads = [threading.Thread(target=worker, args=(j,)) for j in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
