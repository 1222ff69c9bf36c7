"""NCHW input to the GEMM convolutions: the driver converts it to channels-last
(driver::nchw_to_nhwc_u8) before the implicit GEMM. Its paths: C = 1 (a copy), C = 2..4 (the
unrolled few-channel loop, e.g. an RGB stem), 5..15 (8x8 byte transposes and the channel tail),
>= 16 (the ISA's transposing copy). Pixel counts that are not multiples of the 64-pixel task or
of 8, batches above 1 and inputs large enough to be split across threads. The result must equal,
byte for byte, the same conv on the same values in channels-last memory (no conversion), on every
ISA and thread count; and stay within one unit of the exact reference.
"""
from _conv_common import F, assert_qclose, exact, pytest, torch


def _case(N, C, H, W, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.quantize_per_tensor(torch.rand(N, C, H, W, generator=g) * 2, 0.02, 37,
                                  torch.quint8)
    w = torch.quantize_per_channel(torch.randn(8, C, 3, 3, generator=g) * 0.1,
                                   torch.rand(8, generator=g, dtype=torch.double) * 0.002 + 0.001,
                                   torch.zeros(8, dtype=torch.long), 0, torch.qint8)
    b = torch.randn(8, generator=g)
    return x, w, b


@pytest.mark.parametrize("C", [1, 2, 3, 4, 5, 9, 16, 19])
@pytest.mark.parametrize("N,H,W", [(1, 5, 7), (2, 9, 9), (3, 30, 31), (2, 64, 65)])
def test_nchw_input_equals_channels_last(isa, C, N, H, W):
    x, w, b = _case(N, C, H, W, seed=C * 100 + H)
    assert x.is_contiguous() and not (C > 1 and x.is_contiguous(
        memory_format=torch.channels_last))
    p = torch.ops.qplugin.conv2d_prepack(w, b, [2, 2], [1, 1], [1, 1], 1)
    x_before = x.int_repr().clone()
    y = torch.ops.qplugin.conv2d(x, p, 0.05, 90)
    y_cl = torch.ops.qplugin.conv2d(x.contiguous(memory_format=torch.channels_last), p, 0.05, 90)
    assert torch.equal(y.int_repr(), y_cl.int_repr())
    assert torch.equal(x.int_repr(), x_before)
    assert_qclose(y, exact(F.conv2d, x, w, b, 0.05, 90, stride=[2, 2], padding=[1, 1]))


def test_nchw_input_threads():
    x, w, b = _case(4, 3, 112, 112, seed=7)  # large enough for the threaded conversion
    p = torch.ops.qplugin.conv2d_prepack(w, b, [2, 2], [1, 1], [1, 1], 1)
    prev = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        y1 = torch.ops.qplugin.conv2d(x, p, 0.05, 90)
        torch.set_num_threads(2)
        y2 = torch.ops.qplugin.conv2d(x, p, 0.05, 90)
    finally:
        torch.set_num_threads(prev)
    y_cl = torch.ops.qplugin.conv2d(x.contiguous(memory_format=torch.channels_last), p, 0.05, 90)
    assert torch.equal(y1.int_repr(), y2.int_repr())
    assert torch.equal(y1.int_repr(), y_cl.int_repr())
