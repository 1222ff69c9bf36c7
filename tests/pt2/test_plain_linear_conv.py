# The `.plain` overloads of the linear and conv ops (PT2 door, docs/pt2.md section 3): byte
# identity with the legacy (quantized-tensor) op on the same codes under every ISA (both doors run
# one core through QArg, csrc/common/qarg.h), same output layout; torch.library.opcheck (schema,
# fake tensor, aot dispatch with dynamic shapes); bad inputs raise errors naming the op.
# Changes with: csrc/ops/linear.cpp, csrc/ops/conv.cpp, ops/quantized_cpu/{linear,conv}_kernel.cpp,
# qplugin/pt2/fake/{linear,conv}.py, qplugin/pt2/routes/{linear,conv}.py.
import pytest
import torch

import qplugin  # noqa: F401
from qplugin.pt2.routes import all_routes

from _reference import qint8_weight as _qw

Q = torch.ops.qplugin
CL = torch.channels_last
CL3 = torch.channels_last_3d


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _qx(shape, scale=0.05, zp=17, seed=0, fmt=None):
    """Quantized input (quint8) and its plain form (codes with the same strides, scale, zp)."""
    x = torch.randn(shape, generator=_gen(seed)) * 2.0
    qx = torch.quantize_per_tensor(x, scale, zp, torch.quint8)
    if fmt is not None:
        qx = qx.contiguous(memory_format=fmt)
    codes = qx.int_repr()
    if codes.stride() != qx.stride():
        codes = torch.empty_strided(qx.shape, qx.stride(), dtype=torch.uint8).copy_(codes)
    assert codes.stride() == qx.stride()
    return qx, codes


def _same(y_plain, y_legacy):
    assert y_plain.dtype == torch.uint8
    assert y_legacy.dtype == torch.quint8
    assert y_plain.shape == y_legacy.shape
    assert y_plain.stride() == y_legacy.stride()
    assert torch.equal(y_plain, y_legacy.int_repr())


# ---------------------------------------------------------------------------------------------
# linear

LINEAR_OPS = [("linear", ()), ("linear_relu", ()), ("linear_leaky_relu", (0.1,)),
              ("linear_tanh", ())]
LINEAR_SHAPES = [((4, 16), 8), ((1, 3), 5), ((2, 3, 37), 70), ((65, 130), 33), ((0, 8), 4)]


@pytest.mark.parametrize("name,extra", LINEAR_OPS, ids=[n for n, _ in LINEAR_OPS])
@pytest.mark.parametrize("per_channel", [False, True], ids=["pt", "pc"])
def test_linear_plain_bytes_equal_legacy(isa, name, extra, per_channel):
    legacy = getattr(Q, name).default
    plain = getattr(Q, name).plain
    for i, (xshape, n) in enumerate(LINEAR_SHAPES):
        k = xshape[-1]
        w = Q.linear_prepack(_qw((n, k), per_channel, seed=i),
                             torch.randn(n, generator=_gen(i)) if i % 2 == 0 else None)
        for zp in (0, 17, 255):
            qx, codes = _qx(xshape, 0.04 + 0.01 * i, zp, seed=i)
            for oscale, ozp in ((0.1, 0), (0.03, 128), (0.5, 255)):
                y_l = legacy(qx, w, oscale, ozp, *extra)
                y_p = plain(codes, qx.q_scale(), qx.q_zero_point(), w, oscale, ozp, *extra)
                _same(y_p, y_l)
    # a non-contiguous input (a transposed view)
    w = Q.linear_prepack(_qw((6, 9), per_channel), None)
    qx, codes = _qx((9, 5), seed=7)
    y_l = legacy(qx.t(), w, 0.2, 3, *extra)
    y_p = plain(codes.t(), qx.q_scale(), qx.q_zero_point(), w, 0.2, 3, *extra)
    _same(y_p, y_l)


def test_linear_plain_mutation_check():
    # The identity test can fail: another output zero point gives other bytes.
    w = Q.linear_prepack(_qw((8, 16), False), None)
    qx, codes = _qx((4, 16))
    y_l = Q.linear(qx, w, 0.1, 0)
    y_p = Q.linear.plain(codes, qx.q_scale(), qx.q_zero_point(), w, 0.1, 1)
    assert not torch.equal(y_p, y_l.int_repr())


# ---------------------------------------------------------------------------------------------
# conv

def _conv_case(kind, per_channel, seed):
    """(legacy op, plain op, packed weight, input shape, formats) for one conv kind."""
    g = _gen(seed)
    b = torch.randn(8, generator=g)
    if kind in ("conv1d", "conv1d_relu"):
        w = Q.conv1d_prepack(_qw((8, 2, 3), per_channel, seed=seed), b, [2], [1], [1], 2)
        return getattr(Q, kind).default, getattr(Q, kind).plain, w, (2, 4, 11), [None]
    if kind in ("conv2d", "conv2d_relu"):
        w = Q.conv2d_prepack(_qw((8, 3, 3, 3), per_channel, seed=seed), b, [1, 2], [1, 1],
                             [1, 1], 1)
        return getattr(Q, kind).new, getattr(Q, kind).plain, w, (2, 3, 9, 10), [None, CL]
    if kind == "conv2d_dw":
        w = Q.conv2d_prepack(_qw((8, 1, 3, 3), per_channel, seed=seed), b, [1, 1], [1, 1],
                             [1, 1], 8)
        return Q.conv2d.new, Q.conv2d.plain, w, (1, 8, 7, 6), [None, CL]
    if kind == "conv2d_grouped_dil":
        w = Q.conv2d_prepack(_qw((8, 2, 2, 3), per_channel, seed=seed), b, [2, 1], [0, 2],
                             [2, 1], 2)
        return Q.conv2d_relu.new, Q.conv2d_relu.plain, w, (2, 4, 9, 8), [None, CL]
    if kind in ("conv3d", "conv3d_relu"):
        w = Q.conv3d_prepack(_qw((8, 2, 2, 3, 2), per_channel, seed=seed), b, [1, 2, 1],
                             [1, 0, 1], [1, 1, 1], 1)
        return getattr(Q, kind).new, getattr(Q, kind).plain, w, (2, 2, 4, 7, 5), [None, CL3]
    if kind == "conv_transpose1d":
        w = Q.conv_transpose1d_prepack(_qw((4, 4, 3), per_channel, axis=1, seed=seed), b, [2],
                                       [1], [1], [1], 2)
        return Q.conv_transpose1d.default, Q.conv_transpose1d.plain, w, (2, 4, 7), [None]
    if kind == "conv_transpose2d":
        w = Q.conv_transpose2d_prepack(_qw((6, 8, 3, 2), per_channel, axis=1, seed=seed), b,
                                       [2, 1], [1, 0], [1, 0], [1, 1], 1)
        return Q.conv_transpose2d.default, Q.conv_transpose2d.plain, w, (2, 6, 5, 4), [None, CL]
    if kind == "conv_transpose3d":
        w = Q.conv_transpose3d_prepack(_qw((3, 8, 2, 2, 2), per_channel, axis=1, seed=seed), b,
                                       [2, 1, 2], [0, 1, 0], [1, 0, 0], [1, 1, 1], 1)
        return (Q.conv_transpose3d.default, Q.conv_transpose3d.plain, w, (1, 3, 3, 4, 3),
                [None, CL3])
    raise AssertionError(kind)


CONV_KINDS = ["conv1d", "conv1d_relu", "conv2d", "conv2d_relu", "conv2d_dw", "conv2d_grouped_dil",
              "conv3d", "conv3d_relu", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]


@pytest.mark.parametrize("kind", CONV_KINDS)
@pytest.mark.parametrize("per_channel", [False, True], ids=["pt", "pc"])
def test_conv_plain_bytes_equal_legacy(isa, kind, per_channel):
    for seed in (0, 1):
        legacy, plain, w, xshape, fmts = _conv_case(kind, per_channel, seed)
        for fmt in fmts:
            for zp, oscale, ozp in ((0, 0.2, 0), (130, 0.05, 100), (255, 0.7, 255)):
                qx, codes = _qx(xshape, 0.03 + 0.02 * seed, zp, seed=seed, fmt=fmt)
                y_l = legacy(qx, w, oscale, ozp)
                y_p = plain(codes, qx.q_scale(), qx.q_zero_point(), w, oscale, ozp)
                _same(y_p, y_l)
        # batch of 3 (another N), a non-dense input (every other column)
        big = list(xshape)
        big[0], big[-1] = 3, xshape[-1] * 2
        qx, codes = _qx(tuple(big), seed=seed + 5)
        y_l = legacy(qx[..., ::2], w, 0.1, 7)
        y_p = plain(codes[..., ::2], qx.q_scale(), qx.q_zero_point(), w, 0.1, 7)
        _same(y_p, y_l)


def test_conv_plain_output_is_channels_last():
    _, plain, w, xshape, _ = _conv_case("conv2d", False, 0)
    _, codes = _qx(xshape)
    y = plain(codes, 0.05, 17, w, 0.1, 0)
    assert y.is_contiguous(memory_format=CL) and not y.is_contiguous()


# ---------------------------------------------------------------------------------------------
# opcheck

def _opcheck_cases():
    cases = []
    for name, extra in LINEAR_OPS:
        for pc in (False, True):
            w = Q.linear_prepack(_qw((6, 10), pc), torch.randn(6) if pc else None)
            _, codes = _qx((3, 4, 10))
            cases.append((f"{name}-{'pc' if pc else 'pt'}", getattr(Q, name).plain,
                          (codes, 0.05, 17, w, 0.1, 3, *extra)))
    for kind in CONV_KINDS:
        _, plain, w, xshape, fmts = _conv_case(kind, kind.endswith("d"), 0)
        for fmt in fmts:
            _, codes = _qx(xshape, fmt=fmt)
            cases.append((f"{kind}-{fmt}", plain, (codes, 0.05, 17, w, 0.1, 3)))
    return cases


_OPCHECK = _opcheck_cases()


@pytest.mark.parametrize("case", range(len(_OPCHECK)), ids=[c[0] for c in _OPCHECK])
def test_opcheck(case):
    _, op, args = _OPCHECK[case]
    torch.library.opcheck(op, args, test_utils=("test_schema", "test_faketensor",
                                                "test_aot_dispatch_dynamic"))


def test_fake_kernel_matches_real_metadata():
    # Shapes, strides and dtype of the fake result equal the real one's (opcheck compares them
    # too; this says which op when it fails).
    from torch._subclasses.fake_tensor import FakeTensorMode
    for name, op, args in _OPCHECK:
        real = op(*args)
        with FakeTensorMode(allow_non_fake_inputs=True) as m:
            fake_args = tuple(m.from_tensor(a) if isinstance(a, torch.Tensor) else a
                              for a in args)
            fake = op(*fake_args)
        assert (fake.shape, fake.stride(), fake.dtype) == (real.shape, real.stride(),
                                                           real.dtype), name


# ---------------------------------------------------------------------------------------------
# bad inputs: clear errors naming the op

def _bad_input_cases():
    w_lin = Q.linear_prepack(_qw((6, 10), False), None)
    _, codes_lin = _qx((3, 10))
    _, plain2, w2, xshape2, _ = _conv_case("conv2d", False, 0)
    _, codes2 = _qx(xshape2)
    _, _, w_t, _, _ = _conv_case("conv_transpose2d", False, 0)
    qx_lin, _ = _qx((3, 10))
    return [
        # (op name in the message, callable, message regex)
        ("linear.plain", lambda: Q.linear.plain(codes_lin.float(), 0.05, 17, w_lin, 0.1, 0),
         r"qplugin::linear\.plain: expected X of dtype Byte .*got Float"),
        ("linear.plain", lambda: Q.linear.plain(qx_lin, 0.05, 17, w_lin, 0.1, 0),
         r"qplugin::linear\.plain: expected X to be a plain tensor of codes"),
        ("linear.plain", lambda: Q.linear.plain(codes_lin.to(torch.int8), 0.05, 17, w_lin, 0.1, 0),
         r"qplugin::linear\.plain: expected X of dtype Byte .*got Char"),
        ("linear.plain", lambda: Q.linear.plain(codes_lin, 0.0, 17, w_lin, 0.1, 0),
         r"qplugin::linear\.plain: expected a finite, positive X_scale, got 0"),
        ("linear.plain", lambda: Q.linear.plain(codes_lin, -1.0, 17, w_lin, 0.1, 0),
         r"qplugin::linear\.plain: expected a finite, positive X_scale"),
        ("linear.plain", lambda: Q.linear.plain(codes_lin, float("nan"), 17, w_lin, 0.1, 0),
         r"qplugin::linear\.plain: expected a finite, positive X_scale"),
        ("linear.plain", lambda: Q.linear.plain(codes_lin, 0.05, 256, w_lin, 0.1, 0),
         r"qplugin::linear\.plain: expected X_zero_point in \[0, 255\].*got 256"),
        ("linear.plain", lambda: Q.linear.plain(codes_lin, 0.05, -1, w_lin, 0.1, 0),
         r"qplugin::linear\.plain: expected X_zero_point in \[0, 255\]"),
        ("linear.plain", lambda: Q.linear.plain(codes_lin[:, :9], 0.05, 1, w_lin, 0.1, 0),
         r"qplugin::linear\.plain: expected input with in_features = 10"),
        ("linear.plain", lambda: Q.linear.plain(codes_lin[0], 0.05, 1, w_lin, 0.1, 0),
         r"qplugin::linear\.plain: expected input of rank >= 2"),
        ("linear.plain", lambda: Q.linear.plain(codes_lin, 0.05, 1, w_lin, 0.0, 0),
         r"qplugin::linear\.plain: expected a finite, positive output_scale"),
        ("linear.plain", lambda: Q.linear.plain(codes_lin, 0.05, 1, w_lin, 0.1, 300),
         r"qplugin::linear\.plain: expected output_zero_point in \[0, 255\]"),
        ("linear_relu.plain", lambda: Q.linear_relu.plain(codes_lin.float(), 0.05, 1, w_lin, 0.1,
                                                          0),
         r"qplugin::linear_relu\.plain: expected X of dtype Byte"),
        ("linear_tanh.plain", lambda: Q.linear_tanh.plain(codes_lin, 0.05, 1000, w_lin, 0.1, 0),
         r"qplugin::linear_tanh\.plain: expected X_zero_point"),
        ("linear_leaky_relu.plain",
         lambda: Q.linear_leaky_relu.plain(codes_lin[:, :3], 0.05, 1, w_lin, 0.1, 0, 0.1),
         r"qplugin::linear_leaky_relu\.plain: expected input with in_features = 10"),
        ("conv2d.plain", lambda: plain2(codes2.float(), 0.05, 17, w2, 0.1, 0),
         r"qplugin::conv2d\.plain: expected qx of dtype Byte .*got Float"),
        ("conv2d.plain", lambda: plain2(codes2, 0.0, 17, w2, 0.1, 0),
         r"qplugin::conv2d\.plain: expected a finite, positive qx_scale"),
        ("conv2d.plain", lambda: plain2(codes2, 0.05, 256, w2, 0.1, 0),
         r"qplugin::conv2d\.plain: expected qx_zero_point in \[0, 255\]"),
        ("conv2d.plain", lambda: plain2(codes2[:, :2], 0.05, 1, w2, 0.1, 0),
         r"qplugin::conv2d\.plain: expected input with 3 channels"),
        ("conv2d.plain", lambda: plain2(codes2[0], 0.05, 1, w2, 0.1, 0),
         r"qplugin::conv2d\.plain: expected a 4-D input"),
        ("conv2d.plain", lambda: plain2(codes2, 0.05, 1, w_t, 0.1, 0),
         r"qplugin::conv2d\.plain: expected packed weights of a conv"),
        # dilated kernel height 3 with no height padding over an input of height 2
        ("conv2d_relu.plain", lambda: Q.conv2d_relu.plain(
            _qx((2, 4, 2, 8))[1], 0.05, 1, _conv_case("conv2d_grouped_dil", False, 0)[2], 0.1,
            0), r"qplugin::conv2d_relu\.plain: expected the \(dilated\) kernel to fit"),
        ("conv2d.plain", lambda: plain2(codes2, 0.05, 1, w2, float("inf"), 0),
         r"qplugin::conv2d\.plain: expected a finite, positive output_scale"),
        ("conv1d.plain", lambda: Q.conv1d.plain(codes2, 0.05, 1, w2, 0.1, 0),
         r"qplugin::conv1d\.plain: expected a 3-D input"),
        ("conv_transpose2d.plain", lambda: Q.conv_transpose2d.plain(codes2, 0.05, 1, w2, 0.1, 0),
         r"qplugin::conv_transpose2d\.plain: expected packed weights of a transposed conv"),
        ("conv3d.plain", lambda: Q.conv3d.plain(torch.quantize_per_tensor(
            torch.zeros(1, 2, 3, 3, 3), 0.1, 0, torch.quint8), 0.05, 1,
            _conv_case("conv3d", False, 0)[2], 0.1, 0),
         r"qplugin::conv3d\.plain: expected qx to be a plain tensor of codes"),
    ]


_BAD = _bad_input_cases()


@pytest.mark.parametrize("case", range(len(_BAD)), ids=[f"{i}-{c[0]}" for i, c in
                                                        enumerate(_BAD)])
def test_bad_input_names_the_op(case):
    _, call, msg = _BAD[case]
    with pytest.raises(RuntimeError, match=msg):
        call()


def test_fake_kernels_reject_like_the_real_ones():
    # The checks the fake kernels make are cheap and name the op too.
    from torch._subclasses.fake_tensor import FakeTensorMode
    w = Q.linear_prepack(_qw((6, 10), False), None)
    _, codes = _qx((3, 10))
    codes_i8 = codes.to(torch.int8)
    with FakeTensorMode() as m:
        fx = m.from_tensor(codes)
        with pytest.raises(Exception, match=r"qplugin::linear\.plain: expected input with "
                                            r"in_features = 10"):
            Q.linear.plain(fx[:, :9], 0.05, 1, w, 0.1, 0)
        with pytest.raises(Exception, match=r"qplugin::linear\.plain: expected X of dtype Byte"):
            Q.linear.plain(m.from_tensor(codes_i8), 0.05, 1, w, 0.1, 0)


# ---------------------------------------------------------------------------------------------
# routes

def test_routes_name_registered_overloads():
    rows = {r.legacy: r for r in all_routes()}
    for legacy in ("linear", "linear_relu", "linear_leaky_relu", "linear_tanh", "conv1d",
                   "conv1d_relu", "conv2d.new", "conv2d_relu.new", "conv3d.new",
                   "conv3d_relu.new", "conv_transpose1d", "conv_transpose2d",
                   "conv_transpose3d"):
        r = rows[legacy]
        name, _, ov = r.plain.partition(".")
        assert ov in getattr(Q, name).overloads(), r.plain
        lname, _, lov = legacy.partition(".")
        assert (lov or "default") in getattr(Q, lname).overloads(), legacy
    assert "conv2d" not in rows and "conv3d" not in rows  # deprecated overloads: none


def test_route_output_qparams():
    r = {r.legacy: r for r in all_routes()}
    assert r["linear"].out({"Y_scale_i": 0.5, "Y_zero_point_i": 3}) == (0.5, 3, torch.uint8)
    assert r["conv2d.new"].out({"output_scale": 2, "output_zero_point": 0}) == (2.0, 0,
                                                                                 torch.uint8)
