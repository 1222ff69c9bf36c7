"""Hostile sizes: every op that derives an output (or scratch) size from its arguments raises a
RuntimeError naming the op -- never std::bad_alloc, a segfault, a hang or a silently wrapped
int64 -- for huge strides, paddings, dilations, kernel sizes, output sizes, scale factors and
index values near INT64_MAX; and leaves its inputs untouched. The checks and the 2^40 element
limit: csrc/common/checks.h.
"""
import os

import pytest
import torch

import qplugin  # noqa: F401
from qplugin.nn import functional as qF

Q = torch.ops.qplugin
I64_MAX = 2**63 - 1
BIG = 2**62
LIMIT = 2**40
# Under ASan a failed operator new aborts the process (it is not turned into std::bad_alloc),
# so the cases that need a real allocation failure run in the normal build only.
SANITIZED = bool(os.environ.get("QPLUGIN_SANITIZE_RUN"))


def qu8(*shape, fill=None):
    x = torch.rand(*shape) if fill is None else torch.full(shape, float(fill))
    return torch.quantize_per_tensor(x, 0.05, 3, torch.quint8)


def qw8(*shape):
    return torch.quantize_per_tensor(torch.randn(*shape), 0.02, 0, torch.qint8)


class Unchanged:
    """Asserts that the quantized (or plain) tensors given are bit-identical on exit."""

    def __init__(self, *ts):
        self.ts = ts
        self.before = [self._snap(t) for t in ts]

    @staticmethod
    def _snap(t):
        if t.is_quantized:
            return (t.int_repr().clone(), t.q_scale(), t.q_zero_point(), t.shape, t.stride())
        return (t.clone(), None, None, t.shape, t.stride())

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for t, b in zip(self.ts, self.before):
            a = self._snap(t)
            assert torch.equal(a[0], b[0]) and a[1:] == b[1:], "an input was modified"
        return False


def raises(op, fn, *inputs):
    # inputs: the tensors to check for modification (for an expanded view: its base, whose
    # int_repr can be copied).
    with Unchanged(*inputs):
        with pytest.raises(RuntimeError, match=f"qplugin::{op}\\b"):
            fn()


# ---- conv / conv_transpose (prepack and apply) -----------------------------------------------

def test_conv_transpose_stride_2_31_known_case():
    # Used to end in "MemoryError: std::bad_alloc" (one packed phase per stride residue).
    w = qw8(2, 2, 3)
    raises("conv_transpose1d_prepack",
           lambda: Q.conv_transpose1d_prepack(w, None, [2**31], [0], [2**31 - 1], [1], 1), w)
    w2 = qw8(2, 2, 3, 3)
    raises("conv_transpose2d_prepack",
           lambda: Q.conv_transpose2d_prepack(w2, None, [2**31, 2**31], [0, 0],
                                              [2**31 - 1, 0], [1, 1], 1), w2)
    w3 = qw8(2, 2, 1, 1, 1)
    raises("conv_transpose3d_prepack",
           lambda: Q.conv_transpose3d_prepack(w3, None, [2**21, 2**21, 2**21], [0, 0, 0],
                                              [0, 0, 0], [1, 1, 1], 1), w3)


@pytest.mark.parametrize("stride", [I64_MAX, BIG])
def test_conv_transpose_stride_overflow(stride):
    w = qw8(2, 2, 3, 3)
    raises("conv_transpose2d_prepack",
           lambda: Q.conv_transpose2d_prepack(w, None, [stride, stride], [0, 0], [0, 0], [1, 1],
                                              1), w)


def test_conv_transpose_output_padding_and_dilation():
    w = qw8(2, 2, 3)
    raises("conv_transpose1d_prepack",
           lambda: Q.conv_transpose1d_prepack(w, None, [2], [0], [I64_MAX - 1], [I64_MAX], 1), w)
    # A legal prepack whose output does not fit: span 2^38 + 1 in both dims.
    w2 = qw8(2, 2, 3, 3)
    p = Q.conv_transpose2d_prepack(w2, None, [1, 1], [0, 0], [0, 0], [2**37, 2**37], 1)
    x = qu8(1, 2, 2, 2)
    raises("conv_transpose2d", lambda: Q.conv_transpose2d(x, p, 0.1, 0), x)
    p1 = Q.conv_transpose1d_prepack(qw8(2, 2, 3), None, [4], [0], [3], [2**38], 1)
    x1 = qu8(1, 2, 4)
    raises("conv_transpose1d", lambda: Q.conv_transpose1d(x1, p1, 0.1, 0), x1)


@pytest.mark.parametrize("op,wshape,nd", [("conv1d_prepack", (2, 2, 3), 1),
                                          ("conv2d_prepack", (2, 2, 3, 3), 2),
                                          ("conv3d_prepack", (2, 2, 3, 3, 3), 3)])
@pytest.mark.parametrize("what", ["stride", "padding", "dilation"])
def test_conv_prepack_huge_args(op, wshape, nd, what):
    w = qw8(*wshape)
    args = {"stride": [1] * nd, "padding": [0] * nd, "dilation": [1] * nd}
    args[what] = [I64_MAX] * nd
    raises(op, lambda: getattr(Q, op)(w, None, args["stride"], args["padding"],
                                       args["dilation"], 1), w)


def test_conv_dilated_kernel_span_overflow():
    w = qw8(2, 2, 3, 3)
    raises("conv2d_prepack", lambda: Q.conv2d_prepack(w, None, [1, 1], [0, 0], [BIG, 1], 1), w)
    raises("conv2d_prepack",
           lambda: Q.conv2d_prepack(w, None, [1, 1], [0, 0], [2**40, 1], 1), w)


def test_conv_huge_padding_output():
    # Output 2^31 x 2^31 per channel: above the element limit.
    p = Q.conv2d_prepack(qw8(4, 2, 3, 3), None, [1, 1], [2**30, 2**30], [1, 1], 1)
    x = qu8(1, 2, 4, 4)
    raises("conv2d", lambda: Q.conv2d(x, p, 0.1, 0), x)
    p3 = Q.conv3d_prepack(qw8(4, 2, 1, 1, 1), None, [1, 1, 1], [2**15, 2**15, 2**15],
                          [1, 1, 1], 1)
    x3 = qu8(1, 2, 2, 2, 2)
    raises("conv3d", lambda: Q.conv3d(x3, p3, 0.1, 0), x3)


def test_conv_huge_padding_small_output():
    # A small output (huge stride) but a padded input of 2^40 + L codes: the padded copy
    # (igemm path) used to be a huge new[].
    p = Q.conv1d_prepack(qw8(4, 2, 3), None, [2**39], [2**39], [1], 1)
    x = qu8(1, 2, 8)
    raises("conv1d", lambda: Q.conv1d(x, p, 0.1, 0), x)
    pr = Q.conv1d_prepack(qw8(4, 2, 3), None, [2**39], [2**39], [1], 1)
    raises("conv1d_relu", lambda: Q.conv1d_relu(x, pr, 0.1, 0), x)


def test_conv_normal_still_works():
    p = Q.conv2d_prepack(qw8(4, 2, 3, 3), None, [2, 2], [1, 1], [1, 1], 1)
    y = Q.conv2d(qu8(1, 2, 8, 8), p, 0.1, 0)
    assert y.shape == (1, 4, 4, 4)
    pt = Q.conv_transpose2d_prepack(qw8(2, 4, 3, 3), None, [64, 64], [0, 0], [0, 0], [1, 1], 1)
    y = Q.conv_transpose2d(qu8(1, 2, 2, 2), pt, 0.1, 0)
    assert y.shape == (1, 4, 67, 67)


# ---- pooling ----------------------------------------------------------------------------------

@pytest.mark.parametrize("value", [I64_MAX, BIG, 2**40 + 1])
@pytest.mark.parametrize("what", ["kernel", "stride", "padding", "dilation"])
def test_max_pool_huge_args(what, value):
    x = qu8(1, 2, 8, 8)
    a = {"kernel": [2, 2], "stride": [2, 2], "padding": [0, 0], "dilation": [1, 1]}
    a[what] = [value, value]
    raises("max_pool2d", lambda: Q.max_pool2d(x, a["kernel"], a["stride"], a["padding"],
                                              a["dilation"], False), x)
    x1 = qu8(1, 2, 8)
    raises("max_pool1d", lambda: Q.max_pool1d(x1, a["kernel"][:1], a["stride"][:1],
                                              a["padding"][:1], a["dilation"][:1], True), x1)
    x3 = qu8(1, 2, 4, 4, 4)
    raises("max_pool3d", lambda: Q.max_pool3d(x3, a["kernel"] + [2], a["stride"] + [2],
                                              a["padding"] + [0], a["dilation"] + [1], False), x3)


def test_max_pool_dilated_kernel_overflow():
    x = qu8(1, 2, 8)
    raises("max_pool1d", lambda: Q.max_pool1d(x, [3], [1], [0], [BIG], False), x)


def test_max_pool_kernel_far_larger_than_input():
    # Kernel 2^20 with padding 2^19 over 4 values: one window, its taps computed, not scanned.
    x = qu8(1, 1, 4)
    y = Q.max_pool1d(x, [2**20], [2**20], [2**19], [1], False)
    assert y.shape == (1, 1, 1)
    assert torch.equal(y.int_repr().flatten(), x.int_repr().max().reshape(1))


@pytest.mark.skipif(SANITIZED, reason="needs a real allocation failure (ASan aborts instead)")
def test_max_pool_huge_scratch_row():
    # Padded row of 2^39 codes: below the element limit, above memory -> named error.
    x = qu8(1, 1, 4)
    raises("max_pool1d", lambda: Q.max_pool1d(x, [2**39], [2**39], [2**38], [1], False), x)


@pytest.mark.parametrize("value", [I64_MAX, BIG, 2**40 + 1])
@pytest.mark.parametrize("what", ["kernel", "stride", "padding"])
@pytest.mark.parametrize("ceil_mode", [False, True])
def test_avg_pool_huge_args(what, value, ceil_mode):
    a = {"kernel": [2, 2, 2], "stride": [2, 2, 2], "padding": [0, 0, 0]}
    a[what] = [value] * 3
    x1 = qu8(1, 2, 8)
    raises("avg_pool1d", lambda: Q.avg_pool1d(x1, a["kernel"][:1], a["stride"][:1],
                                              a["padding"][:1], ceil_mode, True), x1)
    x = qu8(1, 2, 8, 8)
    raises("avg_pool2d", lambda: Q.avg_pool2d(x, a["kernel"][:2], a["stride"][:2],
                                              a["padding"][:2], ceil_mode, True, None), x)
    x3 = qu8(1, 2, 4, 4, 4)
    raises("avg_pool3d", lambda: Q.avg_pool3d(x3, a["kernel"], a["stride"], a["padding"],
                                              ceil_mode, True, None), x3)


@pytest.mark.parametrize("size", [I64_MAX, BIG, 2**31])
def test_adaptive_pool_huge_output(size):
    x1 = qu8(1, 2, 8)
    raises("adaptive_avg_pool1d", lambda: Q.adaptive_avg_pool1d(x1, [size * 2**10 if size < BIG
                                                                      else size]), x1)
    x = qu8(1, 2, 8, 8)
    raises("adaptive_avg_pool2d", lambda: Q.adaptive_avg_pool2d(x, [size, size]), x)
    raises("adaptive_max_pool2d", lambda: Q.adaptive_max_pool2d(x, [size, size]), x)
    x3 = qu8(1, 2, 4, 4, 4)
    raises("adaptive_avg_pool3d", lambda: Q.adaptive_avg_pool3d(x3, [size, size, 1]), x3)


def test_adaptive_pool_large_output_small_input():
    # o * in in 128 bits: no wrap for output sizes near the limit on a real input.
    x = qu8(1, 1, 3)
    y = Q.adaptive_avg_pool1d(x, [5])
    assert y.shape == (1, 1, 5)


# ---- upsample / interpolate -------------------------------------------------------------------

@pytest.mark.parametrize("size", [I64_MAX, BIG, 2**31])
def test_upsample_huge_output(size):
    x1 = qu8(1, 2, 4)
    x = qu8(1, 2, 4, 4)
    x3 = qu8(1, 2, 2, 2, 2)
    big1 = size if size >= BIG else size * 2**10
    raises("upsample_nearest1d", lambda: Q.upsample_nearest1d(x1, [big1], None), x1)
    raises("_upsample_nearest_exact1d", lambda: Q._upsample_nearest_exact1d(x1, [big1], None), x1)
    raises("upsample_nearest2d", lambda: Q.upsample_nearest2d(x, [size, size], None, None), x)
    raises("_upsample_nearest_exact2d",
           lambda: Q._upsample_nearest_exact2d(x, [size, size], None, None), x)
    raises("upsample_nearest3d",
           lambda: Q.upsample_nearest3d(x3, [size, size, 2], None, None, None), x3)
    raises("upsample_linear1d", lambda: Q.upsample_linear1d(x1, [big1], False, None), x1)
    raises("upsample_bilinear2d",
           lambda: Q.upsample_bilinear2d(x, [size, size], True, None, None), x)
    raises("upsample_trilinear3d",
           lambda: Q.upsample_trilinear3d(x3, [size, size, 2], False, None, None, None), x3)


@pytest.mark.parametrize("factor", [1e30, float("inf"), float("nan"), 2.0**40])
@pytest.mark.parametrize("mode", ["nearest", "bilinear", "nearest-exact"])
def test_interpolate_huge_scale_factor(factor, mode):
    x = qu8(1, 2, 4, 4)
    kw = {"align_corners": False} if mode == "bilinear" else {}
    raises("interpolate", lambda: qF.interpolate(x, scale_factor=factor, mode=mode, **kw), x)


def test_interpolate_huge_size():
    x = qu8(1, 2, 4, 4)
    raises("interpolate", lambda: qF.interpolate(x, size=[2**70, 2]), x)


@pytest.mark.parametrize("scale", [1e-300, 1e300, float("inf")])
def test_upsample_extreme_scales_argument(scale):
    # The scales argument only sets the source-index step; extreme values stay in range
    # (no float -> int64 overflow) and give valid indices.
    x = qu8(1, 2, 4, 4)
    for fn in (lambda: Q.upsample_nearest2d(x, [6, 6], scale, scale),
               lambda: Q._upsample_nearest_exact2d(x, [6, 6], scale, scale),
               lambda: Q.upsample_bilinear2d(x, [6, 6], False, scale, scale)):
        with Unchanged(x):
            y = fn()
        assert y.shape == (1, 2, 6, 6)
        assert int(y.int_repr().min()) >= int(x.int_repr().min())
        assert int(y.int_repr().max()) <= int(x.int_repr().max())


# ---- linear ----------------------------------------------------------------------------------

def test_linear_huge_output():
    w = qw8(4096, 1)
    p = Q.linear_prepack(w, None)
    base = qu8(1, 1)
    x = base.expand(2**30, 1)
    raises("linear", lambda: Q.linear(x, p, 0.1, 0), base)
    raises("linear_relu", lambda: Q.linear_relu(x, p, 0.1, 0), base)


# ---- embedding bags --------------------------------------------------------------------------

def _byte_table(rows=10, dim=8):
    return Q.embedding_bag_byte_prepack(torch.randn(rows, dim))


@pytest.mark.parametrize("bad", [I64_MAX, -I64_MAX - 1, 2**31, 10])
def test_embedding_bag_index_near_int64_max(bad):
    t = _byte_table()
    idx = torch.tensor([0, bad, 1], dtype=torch.long)
    off = torch.tensor([0, 2], dtype=torch.long)
    raises("embedding_bag_byte_rowwise_offsets",
           lambda: Q.embedding_bag_byte_rowwise_offsets(t, idx, off), t, idx, off)
    t4 = Q.embedding_bag_4bit_prepack(torch.randn(10, 8))
    raises("embedding_bag_4bit_rowwise_offsets",
           lambda: Q.embedding_bag_4bit_rowwise_offsets(t4, idx, off), t4, idx, off)
    from torch.ao.quantization import PerChannelMinMaxObserver
    wf = torch.randn(10, 8)
    obs = PerChannelMinMaxObserver(ch_axis=0, qscheme=torch.per_channel_affine_float_qparams,
                                   dtype=torch.quint8)
    obs(wf)
    s, z = obs.calculate_qparams()
    pk = Q.embedding_bag_prepack(torch.quantize_per_channel(wf, s, z, 0, torch.quint8))
    raises("embedding_bag_byte", lambda: Q.embedding_bag_byte(pk, idx, off), idx, off)
    raises("embedding_byte", lambda: Q.embedding_byte(pk, idx), idx)


@pytest.mark.parametrize("bad_offsets", [[0, I64_MAX], [I64_MAX, 0], [-1, 2], [0, 2**40]])
@pytest.mark.parametrize("include_last", [False, True])
def test_embedding_bag_offsets_near_int64_max(bad_offsets, include_last):
    t = _byte_table()
    idx = torch.tensor([0, 1, 2], dtype=torch.long)
    off = torch.tensor(bad_offsets, dtype=torch.long)
    raises("embedding_bag_byte_rowwise_offsets",
           lambda: Q.embedding_bag_byte_rowwise_offsets(t, idx, off, False, 0, False, None, None,
                                                        include_last), t, idx, off)


def test_embedding_bag_int32_index_extremes():
    t = _byte_table()
    idx = torch.tensor([0, 2**31 - 1, -2**31], dtype=torch.int32)
    off = torch.tensor([0, 1], dtype=torch.int32)
    raises("embedding_bag_byte_rowwise_offsets",
           lambda: Q.embedding_bag_byte_rowwise_offsets(t, idx, off), t, idx, off)


# ---- cat -------------------------------------------------------------------------------------

def test_cat_size_overflow():
    base = qu8(1, 1)
    a = base.expand(2**62, 1)
    raises("cat", lambda: Q.cat([a, a], 0, None, None), base)
    raises("cat_relu", lambda: Q.cat_relu([a, a], 0, None, None), base)


def test_cat_above_limit():
    base = qu8(1, 1)
    a = base.expand(2**39 + 1, 1)
    raises("cat", lambda: Q.cat([a, a], 0, None, None), base)


# ---- norms (outputs the size of an expanded input) -------------------------------------------

def test_norms_huge_expanded_input():
    base = qu8(1, 4, 1, 1)
    x = base.expand(2**30, 4, 2**10, 2**10)
    w, b = torch.ones(4), torch.zeros(4)
    mean, var = torch.zeros(4), torch.ones(4)
    raises("batch_norm2d", lambda: Q.batch_norm2d(x, w, b, mean, var, 1e-5, 0.1, 0), base)
    raises("quantized_batch_norm",
           lambda: Q.quantized_batch_norm(x, w, b, mean, var, 1e-5, 0.1, 0), base)
    raises("group_norm", lambda: Q.group_norm(x, 2, w, b, 1e-5, 0.1, 0), base)
    raises("instance_norm", lambda: Q.instance_norm(x, w, b, 1e-5, 0.1, 0), base)
    base2 = qu8(1, 1, 8)
    x2 = base2.expand(2**30, 2**10, 8)
    raises("layer_norm", lambda: Q.layer_norm(x2, [8], None, None, 1e-5, 0.1, 0), base2)


# ---- broadcasting binary ops -------------------------------------------------------------------

def test_binary_broadcast_huge_output():
    ba, bb = qu8(1, 1), qu8(1, 1)
    a = ba.expand(2**30, 1)
    b = bb.expand(1, 2**30)
    raises("add", lambda: Q.add(a, b, 0.1, 0), ba, bb)
    raises("mul_relu", lambda: Q.mul_relu(a, b, 0.1, 0), ba, bb)
