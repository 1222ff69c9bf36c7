

from _conv_common import (  # noqa: E402,F401  (tests/conv/_conv_common.py)
    ISAS, START_ISA, F, assert_qclose, exact, make, pytest, qplugin, torch, torch_oracle,
    warnings)

# (N, Cin, Cout, S, k, stride, pad, dil, groups)
CASES = [
    (1, 16, 32, 10, 3, 1, 1, 1, 1), (2, 16, 32, 11, 3, 2, 1, 1, 1), (1, 3, 17, 33, 7, 2, 3, 1, 1),
    (4, 17, 63, 9, 5, 1, 2, 1, 1), (1, 8, 16, 9, 3, 3, 0, 2, 2), (2, 64, 64, 7, 1, 1, 0, 1, 1),
    (1, 32, 48, 5, 1, 2, 0, 1, 2), (1, 12, 24, 8, 3, 1, 3, 3, 4), (1, 5, 7, 1, 1, 1, 0, 1, 1),
    (1, 4, 8, 3, 3, 1, 1, 1, 1),
]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("xzp", [0, 128, 255])
@pytest.mark.parametrize("per_ch", [False, True])
def test_parity(case, xzp, per_ch):
    N, Cin, Cout, S, k, s, p, d, g = case
    x, w, b = make(2, N, Cin, Cout, S, k, g, xzp=xzp, per_ch=per_ch)
    args = ([s, s], [p, p], [d, d], g)
    pq = torch.ops.qplugin.conv2d_prepack(w, b, *args)
    for relu in (False, True):
        name = "conv2d_relu" if relu else "conv2d"
        y = getattr(torch.ops.qplugin, name)(x, pq, 0.05, 100)
        if not per_ch or all(z == 0 for z in w.q_per_channel_zero_points().tolist()):
            pt = torch.ops.quantized.conv2d_prepack(w, b, *args)
            r = getattr(torch.ops.quantized, name)(x, pt, 0.05, 100)
        ref = exact(F.conv2d, x, w, b, 0.05, 100, relu, stride=s, padding=p, dilation=d,
                    groups=g)
        if not per_ch or all(z == 0 for z in w.q_per_channel_zero_points().tolist()):
            assert_qclose(y, torch_oracle(r, ref, x, w, name))
            assert y.stride() == r.stride()
        assert_qclose(y, ref)
        assert y.is_contiguous(memory_format=torch.channels_last)


@pytest.mark.parametrize("case", CASES[:6])
def test_isa_identical(isa, case):
    N, Cin, Cout, S, k, s, p, d, g = case
    x, w, b = make(2, N, Cin, Cout, S, k, g, per_ch=True)
    args = (w, b, [s, s], [p, p], [d, d], g)
    y = torch.ops.qplugin.conv2d(x, torch.ops.qplugin.conv2d_prepack(*args), 0.05, 100)
    torch.ops.qplugin._set_cpu_isa("scalar")
    ys = torch.ops.qplugin.conv2d(x, torch.ops.qplugin.conv2d_prepack(*args), 0.05, 100)
    assert torch.equal(y.int_repr(), ys.int_repr())


def test_layouts_and_weight_zp():
    x, w, b = make(2, 2, 16, 24, 9, 3, 1, wzp=7)
    pq = torch.ops.qplugin.conv2d_prepack(w, b, [1, 1], [1, 1], [1, 1], 1)
    ref = exact(F.conv2d, x, w, b, 0.05, 100, padding=1)
    for xi in (x, x.contiguous(memory_format=torch.channels_last), x[:, :, :, :]
               .transpose(2, 3).contiguous().transpose(2, 3)):
        assert_qclose(torch.ops.qplugin.conv2d(xi, pq, 0.05, 100), ref)


def test_unpack_and_accessors():
    x, w, b = make(2, 1, 8, 12, 6, 3, 2, per_ch=True)
    pq = torch.ops.qplugin.conv2d_prepack(w, b, [2, 1], [1, 0], [1, 2], 2)
    w2, b2 = torch.ops.qplugin.conv2d_unpack(pq)
    assert torch.equal(w2.int_repr(), w.int_repr()) and torch.equal(b2, b)
    assert torch.equal(w2.q_per_channel_scales(), w.q_per_channel_scales())
    assert pq.stride() == [2, 1] and pq.padding() == [1, 0] and pq.dilation() == [1, 2]
    assert pq.groups() == 2 and not pq.transpose() and pq.output_padding() == [0, 0]
    import io
    buf = io.BytesIO()
    torch.save(pq, buf)
    buf.seek(0)
    pq2 = torch.load(buf, weights_only=False)
    assert torch.equal(torch.ops.qplugin.conv2d(x, pq, 0.1, 3).int_repr(),
                       torch.ops.qplugin.conv2d(x, pq2, 0.1, 3).int_repr())


def test_bad_inputs():
    x, w, b = make(2, 1, 4, 6, 5, 3, 1)
    P = torch.ops.qplugin.conv2d_prepack
    with pytest.raises(RuntimeError, match="out_channels .* divisible by groups"):
        P(torch.quantize_per_tensor(torch.randn(4, 1, 3, 3), 0.1, 0, torch.qint8), None,
          [1, 1], [0, 0], [1, 1], 3)
    with pytest.raises(RuntimeError, match="stride > 0"):
        P(w, b, [0, 1], [0, 0], [1, 1], 1)
    with pytest.raises(RuntimeError, match="dilation > 0"):
        P(w, b, [1, 1], [0, 0], [1, -1], 1)
    with pytest.raises(RuntimeError, match="qint8"):
        P(torch.quantize_per_tensor(torch.randn(6, 4, 3, 3), 0.1, 0, torch.quint8), None,
          [1, 1], [0, 0], [1, 1], 1)
    with pytest.raises(RuntimeError, match="quantized tensor"):
        P(torch.randn(6, 4, 3, 3), None, [1, 1], [0, 0], [1, 1], 1)
    pq = P(w, b, [1, 1], [0, 0], [1, 1], 1)
    with pytest.raises(RuntimeError, match="quantized tensor"):
        torch.ops.qplugin.conv2d(x.dequantize(), pq, 0.1, 0)
    with pytest.raises(RuntimeError, match="4-D input"):
        torch.ops.qplugin.conv2d(x[0], pq, 0.1, 0)
    with pytest.raises(RuntimeError, match="channels"):
        torch.ops.qplugin.conv2d(x[:, :3], pq, 0.1, 0)
    with pytest.raises(RuntimeError, match="kernel to fit"):
        torch.ops.qplugin.conv2d(x[:, :, :2, :2], pq, 0.1, 0)
    with pytest.raises(RuntimeError, match="output_scale"):
        torch.ops.qplugin.conv2d(x, pq, 0.0, 0)
    with pytest.raises(RuntimeError, match="output_zero_point"):
        torch.ops.qplugin.conv2d(x, pq, 0.1, 256)
