"""max_pool1d/2d/3d: bit-identical to PyTorch (quantized::max_pool1d/2d, aten::max_pool3d on
quantized tensors) over kernel/stride/padding/dilation/ceil_mode, layouts, dtypes and ISAs."""
import re

import pytest  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from _reference import isas_to_compare  # noqa: E402
from _pool_testutil import DTYPES, assert_same, one_thread, qtensor  # noqa: E402,F401
from qplugin.nn import _functional_pool as qF  # noqa: E402

CONFIGS = [  # kernel, stride, padding, dilation, ceil_mode
    (2, None, 0, 1, False), (3, 2, 1, 1, False), (3, 2, 1, 1, True), (3, 1, 1, 1, False),
    ((3, 2), (2, 1), (1, 0), (2, 1), True), (5, 3, 2, 1, True), (2, 2, 1, 2, False),
    ((1, 4), (1, 3), (0, 2), 1, True),
]


@pytest.mark.parametrize("cfg", CONFIGS)
@pytest.mark.parametrize("cl", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_max_pool2d_matches_torch(cfg, cl, dtype):
    k, s, p, d, c = cfg
    x = qtensor((2, 19, 13, 17), dtype, channels_last=cl, seed=hash(cfg) % 1000)
    y = qF.max_pool2d(x, k, s, p, d, c)
    ref = F.max_pool2d(x, k, s if s is not None else k, p, d, c)
    assert_same(y, ref)


@pytest.mark.parametrize("cfg", CONFIGS)
@pytest.mark.parametrize("C", [32, 64, 96])
@pytest.mark.parametrize("dtype", DTYPES)
def test_max_pool2d_channels_last_channel_blocks(cfg, C, dtype):
    """Channels-last windows with C a multiple of 32: the vector ISAs' horizontal pass holds
    32-byte channel blocks in registers over the taps (pool_generic_impl.h, hmax_s), on every
    ISA (byte-identical to the scalar one) and equal to PyTorch."""
    k, s, p, d, c = cfg
    x = qtensor((2, C, 13, 17), dtype, channels_last=True, seed=C + hash(cfg) % 1000)
    ref = F.max_pool2d(x, k, s if s is not None else k, p, d, c)
    for name in isas_to_compare():
        torch.ops.qplugin._set_cpu_isa(name)
        try:
            assert_same(qF.max_pool2d(x, k, s, p, d, c), ref)
        finally:
            torch.ops.qplugin._set_cpu_isa("auto")


@pytest.mark.parametrize("cfg", CONFIGS[:4])
def test_max_pool2d_op_schema_form(cfg):
    k, s, p, d, c = cfg
    x = qtensor((1, 8, 11, 11))
    kk = [k, k] if isinstance(k, int) else list(k)
    ss = [] if s is None else [s, s]
    y = torch.ops.qplugin.max_pool2d(x, kk, ss, [p, p], [d, d], c)
    ref = torch.ops.quantized.max_pool2d(x, kk, ss, [p, p], [d, d], c)
    assert_same(y, ref)


def test_max_pool2d_unbatched_and_strided(isa):
    x = qtensor((3, 16, 21, 20))
    xs = x[:, :, ::2, 1:]  # non-contiguous
    assert_same(qF.max_pool2d(xs, 3, 2, 1), F.max_pool2d(xs, 3, 2, 1))
    assert_same(qF.max_pool2d(x[0], 2), F.max_pool2d(x[0], 2))
    xp = x.permute(0, 1, 3, 2)
    assert_same(qF.max_pool2d(xp, 3, 2, 1), F.max_pool2d(xp, 3, 2, 1))


@pytest.mark.parametrize("cfg", CONFIGS[:5])
@pytest.mark.parametrize("dtype", DTYPES)
def test_max_pool1d_matches_torch(cfg, dtype):
    k, s, p, d, c = cfg
    k, s, p, d = [v[-1] if isinstance(v, tuple) else v for v in (k, s, p, d)]
    x = qtensor((3, 10, 37), dtype)
    y = qF.max_pool1d(x, k, s, p, d, c)
    ref = torch.ops.quantized.max_pool1d(x, [k], [] if s is None else [s], [p], [d], c)
    assert_same(y, ref)
    assert_same(qF.max_pool1d(x[0], k, s, p, d, c), torch.ops.quantized.max_pool1d(
        x[0], [k], [] if s is None else [s], [p], [d], c))


@pytest.mark.parametrize("cl", [False, True])
@pytest.mark.parametrize("cfg", [(2, None, 0, 1, False), (3, 2, 1, 1, True),
                                 ((1, 3, 2), (1, 2, 2), (0, 1, 1), (1, 1, 2), False)])
def test_max_pool3d_matches_torch(cl, cfg):
    k, s, p, d, c = cfg
    x = qtensor((2, 6, 5, 9, 8), channels_last=cl)
    y = qF.max_pool3d(x, k, s, p, d, c)
    ref = F.max_pool3d(x, k, s if s is not None else k, p, d, c)
    # Values must equal the float op on dequantized input too (max commutes with dequantize).
    torch.testing.assert_close(y.dequantize(), F.max_pool3d(x.dequantize(), k, s if s is not None
                                                            else k, p, d, c), rtol=0, atol=0)
    assert_same(y, ref)


def test_isas_byte_identical():
    x = qtensor((2, 67, 33, 29), seed=3)
    xc = x.contiguous(memory_format=torch.channels_last)
    outs = {}
    for name in isas_to_compare():
        torch.ops.qplugin._set_cpu_isa(name)
        outs[name] = [qF.max_pool2d(t, 3, 2, 1, 1, True).int_repr() for t in (x, xc)]
    torch.ops.qplugin._set_cpu_isa("auto")
    for v in outs.values():
        for a, b in zip(v, outs["scalar"]):
            assert torch.equal(a, b)


@pytest.mark.parametrize("fn, msg", [
    (lambda x: qF.max_pool2d(x, 5), "kernel is larger than the padded input"),
    (lambda x: qF.max_pool2d(x, 3, 1, 2), "padding at most half"),
    (lambda x: qF.max_pool2d(x, 2, 0), "stride of positive values"),
    (lambda x: qF.max_pool2d(x, 0), "kernel_size of positive values"),
    (lambda x: qF.max_pool2d(x, 2, 2, 0, 0), "dilation of positive values"),
    (lambda x: qF.max_pool2d(x, 2, 2, -1), "padding of non-negative values"),
    (lambda x: qF.max_pool2d(x.dequantize(), 2), "expected input to be a quantized tensor"),
    (lambda x: qF.max_pool2d(x[0, 0], 2), "expected a 3-D (C, H, W) or 4-D"),
    (lambda x: qF.max_pool2d(x, (2, 2, 2)), "kernel_size"),
])
def test_max_pool_bad_input(fn, msg):
    x = qtensor((1, 2, 4, 4))
    with pytest.raises((RuntimeError, ValueError), match=re.escape(msg)):
        fn(x)


def test_max_pool_return_indices():
    x = qtensor((1, 2, 4, 4))
    with pytest.raises(NotImplementedError, match="return_indices"):
        qF.max_pool2d(x, 2, return_indices=True)
