# Tests of the batch-norm ops: quantized_batch_norm (≙ torch.quantized_batch_norm) and
# batch_norm{,1d,2d,3d}{,_relu} (≙ torch.ops.quantized.*), against PyTorch (x86 engine) and the
# exact float64 reference, under every ISA. Kernels: csrc/ops/quantized_cpu/batch_norm_kernel.cpp.
import re

import pytest
import torch

import _reference as ref
import _sweeps
from _sweeps import DTYPES, INT8_DTYPES, QRANGE, Draw

EPS = 1e-5
VECTOR_ISAS = ("avx2", "avx512vnni")  # compared with the scalar path


class BNOp:
    def __init__(self, name, ranks, relu):
        self.name = name
        self.ranks = ranks
        self.relu = relu
        self.qplugin = getattr(torch.ops.qplugin, name)
        self.torch_ao = getattr(ref, f"torch_ao_{name}")

    def __repr__(self):
        return self.name


OPS = [
    BNOp("quantized_batch_norm", (2, 3, 4, 5), False),
    BNOp("batch_norm", (2, 3, 4, 5), False),
    BNOp("batch_norm1d", (2, 3), False),
    BNOp("batch_norm2d", (4,), False),
    BNOp("batch_norm3d", (5,), False),
    BNOp("batch_norm_relu", (2, 3, 4, 5), True),
    BNOp("batch_norm1d_relu", (2, 3), True),
    BNOp("batch_norm2d_relu", (4,), True),
    BNOp("batch_norm3d_relu", (5,), True),
]
OP = {op.name: op for op in OPS}
OP_IDS = [op.name for op in OPS]


def rank_op(rank, relu):
    """The rank-specific op for a rank (batch_norm1d for 2-D and 3-D)."""
    base = {2: "batch_norm1d", 3: "batch_norm1d", 4: "batch_norm2d", 5: "batch_norm3d"}[rank]
    return OP[base + ("_relu" if relu else "")]


def output_format(rank):
    """PyTorch's output memory format: channels-last for 4-D/5-D, contiguous otherwise."""
    return {4: torch.channels_last, 5: torch.channels_last_3d}.get(rank, torch.contiguous_format)


def check_bn(op, x, weight, bias, mean, var, scale, zero_point, eps=EPS, msg=""):
    """qplugin's op: leaves its inputs alone, matches the exact float reference and PyTorch
    (within 1, >= 99% identical) with PyTorch's memory layout. Returns qplugin's output."""
    args = (x, weight, bias, mean, var, eps, scale, zero_point)
    where = f"{op} {x.dtype} {tuple(x.shape)} strides {x.stride()} {msg}"
    out = ref.call_unmodified(op.qplugin, *args)
    assert out.is_contiguous(memory_format=output_format(x.dim())), where
    ref.assert_qclose(out, ref.float_batch_norm(*args, relu=op.relu), msg=f"{where} vs float")
    expected = op.torch_ao(*args)
    ref.assert_qclose(out, expected, msg=f"{where} vs torch")
    ref.assert_same_layout(out, expected, msg=where)
    return out


def fixed_case(shape, dtype, layout="contiguous", seed=0):
    """A deterministic input and parameters for the given shape."""
    d = Draw(seed)
    x = d.qtensor(shape, dtype, layout=layout)
    w, b, m, v = d.bn_params(x)
    scale, zp = d.bn_output_qparams(x)
    return x, w, b, m, v, scale, zp


# ---------------------------------------------------------------------------------------------
# Parity with PyTorch and the float reference.


@pytest.mark.parametrize("seed", _sweeps.seeds())
@pytest.mark.parametrize("op", OPS, ids=OP_IDS)
def test_matches_torch_and_float_reference(op, seed, isa, draw):
    for dtype in DTYPES:
        rank = draw.choice(op.ranks)
        layout = draw.choice(_sweeps.layouts(rank))
        x = draw.qtensor(draw.shape(rank), dtype, layout=layout)
        w, b, m, v = draw.bn_params(x)
        scale, zp = draw.bn_output_qparams(x)
        check_bn(op, x, w, b, m, v, scale, zp, msg=f"{layout} {draw}")


@pytest.mark.parametrize("S", (1, 3, 17, 63))
@pytest.mark.parametrize("C", (1, 3, 17, 63))
def test_odd_sizes(C, S):
    shapes = {2: (S, C), 3: (2, C, S), 4: (2, C, S, S), 5: (1, C, S, 3, S)}
    for rank, shape in shapes.items():
        for dtype in DTYPES:
            for layout in ("contiguous", "channels_last") if rank >= 4 else ("contiguous",):
                x, w, b, m, v, scale, zp = fixed_case(shape, dtype, layout, seed=C * 100 + S)
                for relu in (False, True):
                    check_bn(rank_op(rank, relu), x, w, b, m, v, scale, zp, msg=layout)


_EXTREME_SCALES = (1e-4, 1e-2, 1.0, 10.0)


@pytest.mark.parametrize("out_zp", ("qmin", "mid", "qmax"))
@pytest.mark.parametrize("in_zp", ("qmin", "mid", "qmax"))
@pytest.mark.parametrize("dtype", INT8_DTYPES, ids=str)
def test_extreme_qparams(dtype, in_zp, out_zp):
    qmin, qmax = QRANGE[dtype]
    pick = {"qmin": qmin, "mid": (qmin + qmax + 1) // 2, "qmax": qmax}
    d = Draw(7)
    for in_scale in _EXTREME_SCALES:
        x = d.qtensor((2, 17, 5, 7), dtype, in_scale, pick[in_zp],
                      layout=d.choice(("contiguous", "channels_last")))
        w, b, m, v = d.bn_params(x)
        for out_scale in _EXTREME_SCALES:
            for op in (OP["quantized_batch_norm"], OP["batch_norm_relu"]):
                check_bn(op, x, w, b, m, v, out_scale, pick[out_zp],
                         msg=f"in_scale {in_scale} out_scale {out_scale}")


@pytest.mark.parametrize("rank", (2, 3, 4, 5))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_relu_is_plain_output_clamped_at_zero_point(rank, dtype, isa):
    # Same rounding, then clamp: y_relu == max(y, zp) code for code (both sizes: the direct
    # kernels, and >= 1024 pixels per channel, where 8-bit NCHW inputs go through tables).
    shapes = {2: [(5, 17), (2000, 17)], 3: [(2, 17, 7), (2, 17, 600)],
              4: [(2, 17, 3, 5), (2, 17, 33, 37)], 5: [(1, 17, 2, 3, 5), (1, 17, 2, 33, 17)]}
    for shape in shapes[rank]:
        x, w, b, m, v, scale, zp = fixed_case(shape, dtype, seed=rank)
        for generic in (True, False):
            plain = (OP["batch_norm"] if generic else rank_op(rank, False)).qplugin
            fused = (OP["batch_norm_relu"] if generic else rank_op(rank, True)).qplugin
            y = plain(x, w, b, m, v, EPS, scale, zp)
            y_relu = fused(x, w, b, m, v, EPS, scale, zp)
            clamped = _sweeps.make_q(y.int_repr().to(torch.int64).clamp_min(zp), scale, zp, dtype)
            ref.assert_qequal(y_relu, clamped, msg=f"{shape} generic={generic}")
            ref.assert_same_layout(y_relu, y)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_all_entry_points_agree(dtype):
    """quantized_batch_norm, batch_norm and batch_normNd compute the same bytes."""
    for rank, shape in {2: (3, 17), 3: (2, 17, 9), 4: (2, 17, 5, 7), 5: (1, 17, 3, 5, 7)}.items():
        x, w, b, m, v, scale, zp = fixed_case(shape, dtype, seed=rank)
        for relu in (False, True):
            outs = [op.qplugin(x, w, b, m, v, EPS, scale, zp)
                    for op in OPS if op.relu == relu and rank in op.ranks]
            assert len(outs) == (2 if relu else 3)
            for out in outs[1:]:
                ref.assert_bytes_equal(out, outs[0], msg=f"rank {rank} relu={relu}")


# ---------------------------------------------------------------------------------------------
# Layouts.

_LAYOUT_SHAPES = {
    2: [(3, 17), (2000, 17)],
    3: [(2, 17, 19), (2, 17, 700)],
    4: [(2, 17, 9, 13), (2, 17, 33, 37)],
    5: [(2, 17, 3, 5, 7), (1, 17, 3, 19, 23)],
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("rank,layout", [(r, lay) for r in (2, 3, 4, 5)
                                         for lay in _sweeps.layouts(r)])
def test_layouts(rank, layout, dtype):
    for shape in _LAYOUT_SHAPES[rank]:
        x, w, b, m, v, scale, zp = fixed_case(shape, dtype, layout, seed=rank)
        for relu in (False, True):
            check_bn(rank_op(rank, relu), x, w, b, m, v, scale, zp, msg=layout)


# ---------------------------------------------------------------------------------------------
# Empty inputs and optional weight/bias (qplugin extensions over PyTorch's behaviour).


_EMPTY_SHAPES = [(0, 5), (0, 5, 3), (2, 5, 0), (0, 5, 3, 4), (2, 5, 0, 4), (2, 0, 3, 4),
                 (0, 5, 2, 3, 4), (1, 5, 2, 0, 4)]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("op,shape", [(op, shape) for op in OPS for shape in _EMPTY_SHAPES
                                      if len(shape) in op.ranks], ids=str)
def test_empty_input(op, shape, dtype):
    C = shape[1]
    x = _sweeps.make_q(torch.zeros(shape, dtype=torch.int64), 0.1, 3, dtype)
    w, b, m, v = torch.ones(C), torch.zeros(C), torch.zeros(C), torch.ones(C)
    args = (x, w, b, m, v, EPS, 0.25, 1)
    out = ref.call_unmodified(op.qplugin, *args)
    # Not PyTorch: on an empty input it returns qx.clone(), with the *input's* scale and zero
    # point instead of output_scale/output_zero_point. The float reference has the right ones.
    ref.assert_qequal(out, ref.float_batch_norm(*args, relu=op.relu))
    assert out.shape == x.shape and out.numel() == 0


@pytest.mark.parametrize("which", ("weight", "bias", "both"))
@pytest.mark.parametrize("rank", (2, 3, 4, 5))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_weight_and_bias_may_be_none(dtype, rank, which):
    # qplugin extension: None means weight 1 / bias 0 (as float batch norm). PyTorch raises
    # "Weight must be provided", so the references are the explicit tensors and the float op.
    shape = {2: (3, 17), 3: (2, 17, 9), 4: (2, 17, 5, 7), 5: (1, 17, 3, 5, 7)}[rank]
    x, w, b, m, v, scale, zp = fixed_case(shape, dtype, seed=rank)
    C = shape[1]
    w_arg = None if which in ("weight", "both") else w
    b_arg = None if which in ("bias", "both") else b
    w_ref = torch.ones(C) if w_arg is None else w
    b_ref = torch.zeros(C) if b_arg is None else b
    for relu in (False, True):
        for op in (OP["batch_norm_relu" if relu else "batch_norm"], rank_op(rank, relu)):
            out = ref.call_unmodified(op.qplugin, x, w_arg, b_arg, m, v, EPS, scale, zp)
            ref.assert_bytes_equal(out, op.qplugin(x, w_ref, b_ref, m, v, EPS, scale, zp))
            ref.assert_qclose(out, ref.float_batch_norm(x, w_arg, b_arg, m, v, EPS, scale, zp,
                                                        relu=relu))
            ref.assert_qclose(out, op.torch_ao(x, w_ref, b_ref, m, v, EPS, scale, zp))
    out = OP["quantized_batch_norm"].qplugin(x, w_arg, b_arg, m, v, EPS, scale, zp)
    ref.assert_qclose(out, ref.torch_ao_quantized_batch_norm(x, w_ref, b_ref, m, v, EPS, scale, zp))


def test_parameter_dtypes_and_strides():
    """float64 / float16 and non-contiguous weight, bias, mean, var are read as float32 values."""
    x, w, b, m, v, scale, zp = fixed_case((2, 17, 5, 7), torch.quint8)
    op = OP["batch_norm2d"]
    want = op.qplugin(x, w, b, m, v, EPS, scale, zp)
    params = (w, b, m, v)
    out = op.qplugin(x, *(t.double() for t in params), EPS, scale, zp)
    ref.assert_bytes_equal(out, want, msg="float64")
    strided = [torch.stack([t, torch.full_like(t, float("nan"))], 1)[:, 0] for t in params]
    assert not strided[0].is_contiguous()
    ref.assert_bytes_equal(op.qplugin(x, *strided, EPS, scale, zp), want, msg="strided")
    half = [t.half() for t in params]
    ref.assert_bytes_equal(op.qplugin(x, *half, EPS, scale, zp),
                           op.qplugin(x, *(t.float() for t in half), EPS, scale, zp), msg="half")


@pytest.mark.parametrize("case", [
    "out_scale_1e-30",
    # Regression: alpha = w/sqrt(var+eps) * s_in/s_out overflowing float32 used to turn
    # fma(inf, 0, beta) into NaN -> qmin at the input zero point.
    "out_scale_1e-38",
    "huge_weight"])
@pytest.mark.parametrize("relu", (False, True))
def test_overflowing_scale_factors_saturate(case, relu, isa):
    # Not PyTorch: its requantization overflows the float->int conversion (at output_scale 1e-30
    # a value of +2e31 units comes out as qmin), so the exact float reference is the oracle.
    C = 6
    w, b, m, v = torch.ones(C), torch.full((C,), 0.5), torch.zeros(C), torch.ones(C)
    in_scale, out_scale = 10.0, 0.1
    if case == "out_scale_1e-30":
        out_scale = 1e-30
    elif case == "out_scale_1e-38":
        out_scale = 1e-38
    else:
        w = torch.full((C,), 3e38)
    # Codes around the zero point (100), in both the direct (2-D) and table (NCHW) paths.
    codes = torch.tensor([0, 1, 99, 100, 101, 255])
    for shape in [(1, C), (2, C, 40, 40)]:
        x = _sweeps.make_q(codes.reshape(1, C, *([1] * (len(shape) - 2))).expand(shape),
                           in_scale, 100, torch.quint8)
        op = OP["batch_norm_relu" if relu else "batch_norm"]
        out = op.qplugin(x, w, b, m, v, EPS, out_scale, 0)
        ref.assert_qequal(out, ref.float_batch_norm(x, w, b, m, v, EPS, out_scale, 0, relu=relu),
                          msg=f"{case} {shape}")


# ---------------------------------------------------------------------------------------------
# ISAs: every vector path equals the scalar path byte for byte.


def _isa_shapes(C):
    # Vector tails: C in 15/16/17/33 against 16-wide channel blocks; pixel counts that are not
    # multiples of 16/64 (15, 81, 143, 1221); >= 1024 pixels per channel (the table paths, also
    # with many small images: 64 x 17).
    return [
        (2, (37, C), ("contiguous", "transposed")),
        (3, (2, C, 15), ("contiguous", "sliced")),
        (3, (2, C, 1030), ("contiguous",)),
        (4, (2, C, 3, 5), ("contiguous", "channels_last")),
        (4, (1, C, 8, 8), ("contiguous", "channels_last")),
        (4, (2, C, 9, 9), ("contiguous", "channels_last", "transposed")),
        (4, (1, C, 13, 11), ("contiguous", "channels_last")),
        (4, (1, C, 33, 37), ("contiguous", "channels_last", "sliced")),
        (4, (64, C, 1, 17), ("contiguous", "channels_last")),
        (4, (2, C, 1, 1), ("contiguous",)),
        (5, (2, C, 3, 5, 7), ("contiguous", "channels_last")),
        (5, (1, C, 4, 17, 17), ("contiguous", "channels_last")),
    ]


@pytest.mark.parametrize("isa", VECTOR_ISAS, indirect=True)
@pytest.mark.parametrize("C", (15, 16, 17, 33))
def test_isas_give_scalar_bytes(C, isa):
    d = Draw(C)
    for rank, shape, layouts in _isa_shapes(C):
        for dtype in DTYPES:
            for layout in layouts:
                x = d.qtensor(shape, dtype, layout=layout)
                w, b, m, v = d.bn_params(x)
                scale, zp = d.bn_output_qparams(x)
                for op in (OP["batch_norm"], OP["batch_norm_relu"]):
                    args = (x, w, b, m, v, EPS, scale, zp)
                    want = ref.on_scalar(op.qplugin, *args)
                    got = op.qplugin(*args)
                    ref.assert_bytes_equal(got, want, msg=f"{op} {isa} {dtype} {shape} {layout}")


@pytest.mark.parametrize("isa", VECTOR_ISAS, indirect=True)
@pytest.mark.parametrize("gain", (1.0, 2e5, 5e7))
def test_bounded_affine_paths(gain, isa):
    """The AVX2 tier's bounded affine kernels (AffineParams::bounded: round first, saturating
    packs, out_zp added in int16 with saturation, byte clamp), also taken for large NCHW inputs
    there instead of per-channel tables: channel counts and plane sizes around the 32-code step
    and the 16 x 32 transpose, both dtypes, ReLU, and scale ratios that saturate most outputs
    (gain 2e5: |r| up to ~1e8, still bounded; 5e7: beyond 2^30, the unbounded path)."""
    g = torch.Generator().manual_seed(int(gain) % 1000 + 7)
    for C, hw in ((1, (33, 33)), (15, (32, 33)), (16, (31, 31)), (17, (8, 8)), (32, (5, 7)),
                  (33, (40, 41)), (64, (4, 4)), (65, (1, 1))):
        for dtype in (torch.quint8, torch.qint8):
            lo, hi = (0, 255) if dtype == torch.quint8 else (-128, 127)
            raw = torch.randint(lo, hi + 1, (2, C, *hw), generator=g)
            x = torch._make_per_tensor_quantized_tensor(
                raw.to(torch.uint8 if dtype == torch.quint8 else torch.int8), 0.04, lo + 100)
            w = torch.randn(C, generator=g) * gain
            b, m = torch.randn(C, generator=g), torch.randn(C, generator=g)
            v = torch.rand(C, generator=g) + 0.5
            for layout in (torch.contiguous_format, torch.channels_last):
                xl = x.contiguous(memory_format=layout)
                for op in (OP["batch_norm"], OP["batch_norm_relu"]):
                    args = (xl, w, b, m, v, EPS, 0.05, lo + 120)
                    ref.assert_bytes_equal(op.qplugin(*args), ref.on_scalar(op.qplugin, *args),
                                           msg=f"{op} {isa} {dtype} C={C} {hw} {layout} {gain}")


@pytest.mark.parametrize("layout", ("contiguous", "channels_last"))
def test_large_input(layout):
    """1 x 64 x 112 x 112 (a ResNet stem activation), once per layout: PyTorch, the float
    reference, the scalar path's bytes, and the same bytes on one thread."""
    x, w, b, m, v, scale, zp = fixed_case((1, 64, 112, 112), torch.quint8, layout, seed=11)
    for op in (OP["batch_norm2d"], OP["batch_norm2d_relu"]):
        args = (x, w, b, m, v, EPS, scale, zp)
        out = check_bn(op, x, w, b, m, v, scale, zp, msg=layout)
        ref.assert_bytes_equal(out, ref.on_scalar(op.qplugin, *args))
        ref.assert_bytes_equal(out, ref.on_one_thread(op.qplugin, *args))


# ---------------------------------------------------------------------------------------------
# opcheck: the schema test only (quantized dtypes cannot run on FakeTensor in torch 2.13).


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("op", OPS, ids=OP_IDS)
def test_opcheck_schema(op, dtype):
    for rank in op.ranks:
        shape = {2: (3, 5), 3: (2, 5, 7), 4: (2, 5, 3, 4), 5: (1, 5, 2, 3, 4)}[rank]
        for layout in ("contiguous", "channels_last"):
            x, w, b, m, v, scale, zp = fixed_case(shape, dtype, layout)
            ref.opcheck_schema(op.qplugin.default, (x, w, b, m, v, EPS, scale, zp), op.name)
            ref.opcheck_schema(op.qplugin.default, (x, None, None, m, v, EPS, scale, zp),
                               op.name)


# ---------------------------------------------------------------------------------------------
# Bad inputs: "qplugin::<op>: expected <what>, got <actual>".


def _good_args(op, rank=None, dtype=torch.quint8, C=5):
    rank = rank or op.ranks[-1]
    shape = (2, C) + (3,) * (rank - 2)
    x = _sweeps.make_q(torch.randint(0, 100, shape), 0.1, 3, dtype)
    return [x, torch.ones(C), torch.zeros(C), torch.zeros(C), torch.ones(C), EPS, 0.2, 4]


def _raises(op, args, pattern):
    with pytest.raises(RuntimeError, match=pattern):
        op.qplugin(*args)


@pytest.mark.parametrize("op", OPS, ids=OP_IDS)
def test_rejects_float_input(op):
    args = _good_args(op)
    args[0] = args[0].dequantize()
    _raises(op, args, rf"qplugin::{op}: expected input to be a quantized tensor .*got a Float "
                      r"tensor")


@pytest.mark.parametrize("op", OPS, ids=OP_IDS)
def test_rejects_unsupported_quantized_dtype(op):
    args = _good_args(op)
    args[0] = torch.quantize_per_tensor(args[0].dequantize(), 0.1, 3, torch.quint4x2)
    _raises(op, args, rf"qplugin::{op}: expected input of dtype QUInt8, QInt8 or QInt32, got "
                      r"QUInt4x2")


@pytest.mark.parametrize("op", OPS, ids=OP_IDS)
def test_rejects_per_channel_input(op):
    args = _good_args(op)
    x = args[0].dequantize()
    args[0] = torch.quantize_per_channel(x, torch.full((5,), 0.1), torch.zeros(5, dtype=torch.long),
                                         1, torch.quint8)
    _raises(op, args, rf"qplugin::{op}: expected input quantized per tensor .*got "
                      r"per_channel_affine")


@pytest.mark.parametrize("op,rank", [(op, r) for op in OPS for r in range(1, 7)
                                     if r not in op.ranks], ids=str)
def test_rejects_wrong_rank(op, rank):
    args = _good_args(op)
    shape = (2, 5, 3, 3, 3, 3)[:rank] if rank > 1 else (5,)
    args[0] = _sweeps.make_q(torch.randint(0, 100, shape), 0.1, 3, torch.quint8)
    _raises(op, args, rf"qplugin::{op}: expected a .*input.*, got {rank}-D")


@pytest.mark.parametrize("bad_shape", [(4,), (6,), (1, 5)], ids=str)
@pytest.mark.parametrize("which", ("weight", "bias", "mean", "var"))
@pytest.mark.parametrize("op", OPS, ids=OP_IDS)
def test_rejects_parameter_of_wrong_shape(op, which, bad_shape):
    args = _good_args(op, C=5)
    i = {"weight": 1, "bias": 2, "mean": 3, "var": 4}[which]
    args[i] = torch.ones(bad_shape)
    _raises(op, args, rf"qplugin::{op}: expected {which} of shape \[5\].*got shape "
                      + re.escape(str(list(bad_shape))))


@pytest.mark.parametrize("which", ("weight", "bias", "mean", "var"))
def test_rejects_non_float_parameter(which):
    op = OP["batch_norm2d"]
    args = _good_args(op, C=5)
    i = {"weight": 1, "bias": 2, "mean": 3, "var": 4}[which]
    args[i] = torch.ones(5, dtype=torch.int64)
    _raises(op, args, rf"qplugin::{op}: expected {which} to be a floating-point tensor, got Long")


@pytest.mark.parametrize("scale", (float("nan"), float("inf"), float("-inf"), 0.0, -0.5), ids=str)
@pytest.mark.parametrize("op", OPS, ids=OP_IDS)
def test_rejects_bad_output_scale(op, scale):
    args = _good_args(op)
    args[6] = scale
    _raises(op, args, rf"qplugin::{op}: expected a finite, positive output_scale, got")


_BAD_ZERO_POINTS = [(torch.quint8, -1), (torch.quint8, 256), (torch.quint8, 300),
                    (torch.qint8, -129), (torch.qint8, 128),
                    (torch.qint32, 2 ** 31), (torch.qint32, -(2 ** 31) - 1)]


@pytest.mark.parametrize("dtype,zp", _BAD_ZERO_POINTS, ids=str)
@pytest.mark.parametrize("op", OPS, ids=OP_IDS)
def test_rejects_output_zero_point_out_of_range(op, dtype, zp):
    args = _good_args(op, dtype=dtype)
    args[7] = zp
    qmin, qmax = QRANGE[dtype]
    name = {torch.quint8: "QUInt8", torch.qint8: "QInt8", torch.qint32: "QInt32"}[dtype]
    _raises(op, args, re.escape(f"qplugin::{op}: expected output_zero_point in [{qmin}, {qmax}] "
                                f"for {name}, got {zp}"))


@pytest.mark.parametrize("case", ["negative_var", "zero_var_zero_eps", "var_plus_eps_zero",
                                  "nan_var", "inf_var", "nan_mean", "inf_mean"])
@pytest.mark.parametrize("op", OPS, ids=OP_IDS)
def test_rejects_bad_statistics(op, case):
    args = _good_args(op)
    mean, var = torch.zeros(5), torch.ones(5)
    if case == "negative_var":
        var[2] = -1.0
    elif case == "zero_var_zero_eps":
        var[2] = 0.0
        args[5] = 0.0
    elif case == "var_plus_eps_zero":
        var[2] = -0.5
        args[5] = 0.5
    elif case == "nan_var":
        var[2] = float("nan")
    elif case == "inf_var":
        var[2] = float("inf")
    elif case == "nan_mean":
        mean[2] = float("nan")
    elif case == "inf_mean":
        mean[2] = float("-inf")
    args[3], args[4] = mean, var
    _raises(op, args, rf"qplugin::{op}: expected finite mean and var \+ eps > 0 .*got .*"
                      r"at channel 2")


@pytest.mark.parametrize("eps", (-1e-5, float("nan"), float("inf")), ids=str)
@pytest.mark.parametrize("op", OPS, ids=OP_IDS)
def test_rejects_bad_eps(op, eps):
    args = _good_args(op)
    args[5] = eps
    _raises(op, args, rf"qplugin::{op}: expected a finite, non-negative eps, got")


@pytest.mark.parametrize("isa", VECTOR_ISAS, indirect=True)
@pytest.mark.parametrize("dtype", (torch.quint8, torch.qint8), ids=str)
@pytest.mark.parametrize("rank", (3, 4, 5))
def test_fixed_point_channels(rank, dtype, isa):
    """The AVX2 tier's fixed-point channel maps (kernels::FixedAffine: s16 lanes, planned per
    channel on all 256 codes, taken on bounded inputs of >= 1024 pixels per channel, NCHW planes
    and the fused NCHW -> NHWC transpose): channels whose slope spans 1e-4 .. 300 (beyond the
    largest fixed-point slope, 64, they keep the float form), both signs, offsets pushing outputs
    into saturation, ReLU, zero points at the ends; the scalar tier's bytes."""
    g = torch.Generator().manual_seed(rank * 10 + (dtype == torch.qint8))
    C = 40
    shape = {3: (2, C, 1100), 4: (1, C, 33, 35), 5: (1, C, 3, 19, 20)}[rank]
    lo, hi = (0, 255) if dtype == torch.quint8 else (-128, 127)
    raw = torch.randint(lo, hi + 1, shape, generator=g)
    raw.view(-1)[: 256] = torch.arange(lo, hi + 1)  # every code in channel 0
    for in_zp, out_zp in ((lo + 100, lo + 120), (lo, hi), (hi, lo)):
        x = torch._make_per_tensor_quantized_tensor(
            raw.to(torch.uint8 if dtype == torch.quint8 else torch.int8), 0.05, in_zp)
        gain = torch.logspace(-4, 2.5, C) * torch.where(torch.rand(C, generator=g) < 0.5, -1, 1)
        w = gain * 0.1
        b = torch.randn(C, generator=g) * 4
        m = torch.randn(C, generator=g)
        v = torch.rand(C, generator=g) + 0.5
        for op in (OP["batch_norm"], OP["batch_norm_relu"]):
            args = (x, w, b, m, v, EPS, 0.1, out_zp)
            want = ref.on_scalar(op.qplugin, *args)
            got = op.qplugin(*args)
            ref.assert_bytes_equal(got, want, msg=f"{op} {isa} {dtype} {shape} {in_zp} {out_zp}")


@pytest.mark.parametrize("isa", VECTOR_ISAS, indirect=True)
def test_fixed_point_plan_cache(isa):
    """The fixed-point plans are cached per thread (4 slots, keyed by the tier, alpha, beta, the
    zero points and the clamp range): parameter sets that differ from each other in one of those
    only (the last channel's weight or bias, the input or output zero point, ReLU), called in turn
    so that some calls hit the cache and others evict from it, each give the scalar tier's bytes."""
    g = torch.Generator().manual_seed(7)
    C = 16
    raw = torch.randint(0, 256, (2, C, 24, 24), generator=g, dtype=torch.uint8)
    raw.view(-1)[:256] = torch.arange(256, dtype=torch.uint8)
    w = torch.linspace(0.05, 0.4, C) * torch.where(torch.arange(C) % 2 == 0, 1.0, -1.0)
    b = torch.randn(C, generator=g)
    m = torch.randn(C, generator=g)
    m[-1] = 0.0  # so that w2 moves the last channel's slope and not its offset
    v = torch.rand(C, generator=g) + 0.5
    w2 = w.clone()
    w2[-1] *= 1.37
    b2 = b.clone()
    b2[-1] += 3.0
    sets = [  # (op, input zero point, weight, bias, output zero point)
        (OP["batch_norm"], 128, w, b, 128),
        (OP["batch_norm"], 128, w2, b, 128),
        (OP["batch_norm"], 128, w, b2, 128),
        (OP["batch_norm"], 131, w, b, 128),
        (OP["batch_norm"], 128, w, b, 125),
        (OP["batch_norm_relu"], 128, w, b, 128),
    ]
    order = [0, 1, 0, 1, 2, 3, 4, 5, 0, 2, 1, 5, 4, 3, 0]
    for i in order:
        op, in_zp, wi, bi, out_zp = sets[i]
        x = torch._make_per_tensor_quantized_tensor(raw, 0.05, in_zp)
        args = (x, wi, bi, m, v, EPS, 0.1, out_zp)
        want = ref.on_scalar(op.qplugin, *args)
        got = op.qplugin(*args)
        ref.assert_bytes_equal(got, want, msg=f"{op} {isa} set {i}")
