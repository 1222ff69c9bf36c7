# torch.ops.qplugin.conv{1,2,3}d_dynamic / conv_transpose{1,2,3}d_dynamic and the modules
# qplugin.nn.dynamic.Conv* / ConvTranspose* (float in, float out).
# Oracles: an exact reference built from PyTorch's definition (apply_dynamic in fbgemm/onednn:
# the input quantized per call with the dynamic qparams of linear_dynamic, the conv computed in
# exact integers -- float64 conv of integer codes, exact at these sizes -- requantized with the
# *input's* scale and zero point, dequantized), on every ISA; and torch.ops.quantized's dynamic
# convs / torch.ao.nn.quantized.dynamic modules where they are a valid oracle (tests/_reference.py
# gemm_oracle: on AVX2-only CPUs without reduce_range torch saturates; torch's transposed conv is
# garbage for in_channels != out_channels on x86 and kernel == stride == 2 on fbgemm,
# TORCH_ORACLE_NOTES.md -- those cases are checked against the exact reference only).
# Comparisons are in code space: y / s_in + zp recovers the output code exactly.
import copy
import io

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from _dyn_reference import choose_qparams, quantize_codes, torch_ao_dynamic
from _reference import gemm_oracle

import qplugin.quantization as qq
from qplugin.nn import dynamic as qnnd

ops = torch.ops.qplugin


# (dim, transposed, c_in, c_out, spatial, kernel, stride, padding, dilation, groups, out_pad,
#  torch_ok): torch_ok False = a configuration where torch's own op is known wrong.
CASES = {
    "c1": (1, False, 4, 6, (17,), 3, 1, 1, 1, 1, 0, True),
    "c1_grp": (1, False, 6, 9, (40,), 5, 2, 2, 2, 3, 0, True),
    "c2": (2, False, 3, 8, (10, 9), 3, 1, 1, 1, 1, 0, True),
    "c2_dw": (2, False, 16, 16, (12, 12), 3, 2, 1, 1, 16, 0, True),
    "c2_mix": (2, False, 8, 12, (11, 13), (3, 2), (2, 1), (1, 0), (2, 1), 2, 0, True),
    "c2_big_k": (2, False, 40, 24, (7, 7), 3, 1, 1, 1, 1, 0, True),
    "c3": (3, False, 4, 6, (5, 6, 7), 3, 1, 1, 1, 1, 0, True),
    "c3_grp": (3, False, 4, 4, (3, 8, 8), (1, 3, 3), (1, 2, 2), (0, 1, 1), 1, 2, 0, True),
    "t1": (1, True, 6, 6, (9,), 3, 2, 1, 1, 1, 1, True),
    "t2": (2, True, 8, 8, (6, 7), 3, 2, 1, 1, 1, 1, True),
    "t2_grp": (2, True, 4, 4, (5, 5), 3, 1, 0, 1, 2, 0, True),
    "t3": (3, True, 4, 4, (3, 4, 4), 3, 2, 1, 1, 1, 0, True),
    "t2_k2s2": (2, True, 8, 4, (6, 6), 2, 2, 0, 1, 1, 0, False),
}


def _tup(v, d):
    return tuple(v) if isinstance(v, tuple) else (v,) * d


def make_case(name, per_channel=False, seed=0):
    dim, tr, cin, cout, sp, k, s, p, dil, g, op_, torch_ok = CASES[name]
    k, s, p, dil, op_ = (_tup(v, dim) for v in (k, s, p, dil, op_))
    gen = torch.Generator().manual_seed(seed)
    wshape = (cin, cout // g, *k) if tr else (cout, cin // g, *k)
    w = torch.randn(*wshape, generator=gen) * 0.3
    axis = 1 if tr else 0
    if per_channel:
        red = [i for i in range(w.dim()) if i != axis]
        scales = (w.abs().amax(red) / 127).clamp_min(1e-6).double()
        zps = torch.zeros(w.shape[axis], dtype=torch.int64)
        qw = torch.quantize_per_channel(w, scales, zps, axis, torch.qint8)
    else:
        qw = torch.quantize_per_tensor(w, float(w.abs().max() / 127), 0, torch.qint8)
    bias = torch.randn(cout, generator=gen)
    x = torch.randn(2, cin, *sp, generator=gen) * 2 + 0.3
    cfg = dict(dim=dim, tr=tr, k=k, s=s, p=p, d=dil, g=g, op=op_, torch_ok=torch_ok)
    return x, qw, bias, cfg


def prepack(ns, qw, bias, cfg):
    dim, s, p, d, g = cfg["dim"], list(cfg["s"]), list(cfg["p"]), list(cfg["d"]), cfg["g"]
    if cfg["tr"]:
        return getattr(ns, f"conv_transpose{dim}d_prepack")(qw, bias, s, p, list(cfg["op"]), d, g)
    return getattr(ns, f"conv{dim}d_prepack")(qw, bias, s, p, d, g)


def op_name(cfg):
    return f"conv_transpose{cfg['dim']}d_dynamic" if cfg["tr"] else f"conv{cfg['dim']}d_dynamic"


def exact(x, qw, bias, cfg, reduce_range):
    """(codes of the output, input scale, input zp, x codes): PyTorch's definition, exactly."""
    mn, mx = (float(x.min()), float(x.max())) if x.numel() else (0.0, 0.0)
    scale, zp = choose_qparams(mn, mx, reduce_range)
    xq = quantize_codes(x.reshape(-1), scale, zp, 127 if reduce_range else 255).reshape(x.shape)
    wq = qw.int_repr().to(torch.int64)
    axis = 1 if cfg["tr"] else 0
    if qw.qscheme() in (torch.per_channel_affine, torch.per_channel_symmetric):
        ws = qw.q_per_channel_scales().double()
        wz = qw.q_per_channel_zero_points()
    else:
        ws = torch.full([wq.shape[axis]], qw.q_scale(), dtype=torch.double)
        wz = torch.full([wq.shape[axis]], qw.q_zero_point(), dtype=torch.int64)
    shp = [1] * wq.dim()
    shp[axis] = -1
    wc = (wq - wz.view(shp)).double()
    a = (xq - zp).double()
    dim = cfg["dim"]
    if cfg["tr"]:
        acc = getattr(F, f"conv_transpose{dim}d")(a, wc, None, cfg["s"], cfg["p"], cfg["op"],
                                                  cfg["g"], cfg["d"])
        # per-channel scales of a transposed weight are per output channel within a group
        ws = ws.repeat(cfg["g"]) if ws.numel() * cfg["g"] == acc.shape[1] else ws
    else:
        acc = getattr(F, f"conv{dim}d")(a, wc, None, cfg["s"], cfg["p"], cfg["d"], cfg["g"])
    cshape = [1, -1] + [1] * dim
    s32 = float(np.float32(scale))
    v = acc * (s32 * ws).view(cshape) + bias.double().view(cshape)
    q = torch.clamp(torch.round(v / s32) + zp, 0, 255).to(torch.int64)
    return q, s32, zp, xq


def codes_of(y, scale, zp):
    return torch.round(y.double() / scale + zp).to(torch.int64)


def assert_codes(actual, expected, what, min_identical=0.99):
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} vs {expected.shape}"
    if actual.numel() == 0:
        return
    d = (actual - expected).abs()
    same = float((d == 0).double().mean())
    assert int(d.max()) <= 1 and same >= min_identical, (
        f"{what}: max code diff {int(d.max())}, {same:.4f} identical")


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("reduce_range", [True, False])
@pytest.mark.parametrize("per_channel", [False, True])
def test_conv_dynamic_op(isa, name, reduce_range, per_channel):
    if per_channel and CASES[name][1]:
        pytest.skip("per-channel transposed conv: covered by test_transposed_per_channel "
                    "(torch's x86 engine has none)")
    x, qw, bias, cfg = make_case(name, per_channel)
    packed = prepack(ops, qw, bias, cfg)
    x0 = x.clone()
    y = getattr(ops, op_name(cfg))(x, packed, reduce_range)
    assert torch.equal(x, x0), "input modified"
    q, scale, zp, xq = exact(x, qw, bias, cfg, reduce_range)
    assert y.dtype == torch.float32 and y.shape == q.shape
    yc = codes_of(y, scale, zp)
    # the float output is the dequantized code (to float rounding)
    torch.testing.assert_close(y.double(), (yc - zp).double() * scale, rtol=1e-6, atol=1e-6)
    assert_codes(yc, q, f"{name} vs exact ({isa})")
    # 2-d/3-d outputs are channels-last like torch's
    if cfg["dim"] == 2:
        assert y.is_contiguous(memory_format=torch.channels_last)
    if cfg["dim"] == 3:
        assert y.is_contiguous(memory_format=torch.channels_last_3d)
    # close to the float conv where no output is clamped to the input's range
    nnqd, _ = torch_ao_dynamic("conv2d_prepack")
    if nnqd is None or not cfg["torch_ok"]:
        return
    tp = prepack(torch.ops.quantized, qw, bias, cfg)
    yt = getattr(torch.ops.quantized, op_name(cfg))(x, tp, reduce_range)
    assert yt.shape == y.shape and yt.stride() == y.stride(), (yt.stride(), y.stride())
    oracle = gemm_oracle(codes_of(yt, scale, zp), q, xq, qw.int_repr(), name)
    assert_codes(yc, oracle, f"{name} vs torch ({isa})")


def test_transposed_per_channel(isa):
    # qplugin extension (per-channel weights along axis 1 of a transposed conv): exact reference.
    for name in ("t1", "t2", "t2_grp", "t3"):
        x, qw, bias, cfg = make_case(name, per_channel=True, seed=3)
        y = getattr(ops, op_name(cfg))(x, prepack(ops, qw, bias, cfg), True)
        q, scale, zp, _ = exact(x, qw, bias, cfg, True)
        assert_codes(codes_of(y, scale, zp), q, name)


@pytest.mark.parametrize("name", ["c2", "c1", "t2"])
def test_positive_input_clamps_like_torch(isa, name):
    # A non-negative input has zero point 0: PyTorch's requantization with the input's qparams
    # clamps every negative conv output to 0. Reproduced, not "fixed".
    x, qw, bias, cfg = make_case(name, seed=5)
    x = x.abs()
    y = getattr(ops, op_name(cfg))(x, prepack(ops, qw, bias, cfg), True)
    q, scale, zp, _ = exact(x, qw, bias, cfg, True)
    assert zp == 0 and float(y.min()) == 0.0
    assert_codes(codes_of(y, scale, zp), q, name)
    # ... where the float conv does have negative outputs
    if cfg["tr"]:
        yf = getattr(F, f"conv_transpose{cfg['dim']}d")(x, qw.dequantize(), bias, cfg["s"],
                                                        cfg["p"], cfg["op"], cfg["g"], cfg["d"])
    else:
        yf = getattr(F, f"conv{cfg['dim']}d")(x, qw.dequantize(), bias, cfg["s"], cfg["p"],
                                              cfg["d"], cfg["g"])
    assert bool((yf < 0).any())


def test_isas_identical():
    got = []
    for want in ("scalar", "avx2", "avx512vnni"):
        if ops._set_cpu_isa(want) != want:
            continue
        try:
            outs = []
            for name in ("c2", "c2_dw", "c3", "t2", "c1_grp"):
                x, qw, bias, cfg = make_case(name, per_channel=True if not CASES[name][1] else False)
                outs.append(getattr(ops, op_name(cfg))(x, prepack(ops, qw, bias, cfg), False))
            got.append(outs)
        finally:
            ops._set_cpu_isa("auto")
    for outs in got[1:]:
        for a, b in zip(got[0], outs):
            assert torch.equal(a, b)


# ---------------------------------------------------------------------------------- bad inputs

def _c2():
    x, qw, bias, cfg = make_case("c2")
    return x, prepack(ops, qw, bias, cfg)


def test_bad_rank():
    x, p = _c2()
    with pytest.raises(RuntimeError, match=r"qplugin::conv2d_dynamic: expected a 4-D input "
                       r"\(N, C, H, W\), got 3-D"):
        ops.conv2d_dynamic(x[0], p)
    x1, qw1, b1, cfg1 = make_case("c1")
    with pytest.raises(RuntimeError, match="qplugin::conv1d_dynamic: expected packed weights of "
                       "a 1-d conv"):
        ops.conv1d_dynamic(x1, p)


def test_bad_channels():
    x, p = _c2()
    with pytest.raises(RuntimeError, match="conv2d_dynamic.*channels"):
        ops.conv2d_dynamic(torch.randn(1, 5, 8, 8), p)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite(bad):
    x, p = _c2()
    x[1, 2, 3, 4] = bad
    with pytest.raises(RuntimeError, match="qplugin::conv2d_dynamic: expected a finite input"):
        ops.conv2d_dynamic(x, p)


def test_bad_dtype_and_kind():
    x, p = _c2()
    with pytest.raises(RuntimeError, match="conv2d_dynamic: expected a float32 input, got Double"):
        ops.conv2d_dynamic(x.double(), p)
    qx = torch.quantize_per_tensor(x, 0.1, 10, torch.quint8)
    with pytest.raises(RuntimeError, match="conv2d_dynamic: expected a float32 input, got "
                       "QUInt8; the dynamic ops take float input"):
        ops.conv2d_dynamic(qx, p)
    with pytest.raises(RuntimeError, match="conv_transpose2d_dynamic: expected packed weights of "
                       "a transposed conv"):
        ops.conv_transpose2d_dynamic(x, p)


@pytest.mark.parametrize("name", ["c1", "c2", "c3", "t2", "t3"])
def test_empty_batch(name):
    x, qw, bias, cfg = make_case(name)
    packed = prepack(ops, qw, bias, cfg)
    full = getattr(ops, op_name(cfg))(x, packed, True)
    y = getattr(ops, op_name(cfg))(x[:0], packed, True)
    assert y.shape == (0, *full.shape[1:]) and y.dtype == torch.float32


def test_input_layouts_and_strides():
    x, qw, bias, cfg = make_case("c2")
    p = prepack(ops, qw, bias, cfg)
    y = ops.conv2d_dynamic(x, p, True)
    assert torch.equal(ops.conv2d_dynamic(x.contiguous(memory_format=torch.channels_last), p,
                                          True), y)
    big = torch.zeros(2, 3, 20, 9)
    big[:, :, ::2] = x
    assert torch.equal(ops.conv2d_dynamic(big[:, :, ::2], p, True), y)


# ------------------------------------------------------------------------------------- fakes

@pytest.mark.parametrize("name", ["c1", "c2_mix", "c3", "t1", "t2", "t3"])
def test_fake_kernel(name):
    from torch._subclasses.fake_tensor import FakeTensorMode
    x, qw, bias, cfg = make_case(name)
    p = prepack(ops, qw, bias, cfg)
    op = getattr(ops, op_name(cfg))
    real = op(x, p, True)
    with FakeTensorMode() as mode:
        fake = op(mode.from_tensor(x), p, True)
    assert fake.shape == real.shape and fake.dtype == real.dtype
    assert fake.stride() == real.stride()


# ----------------------------------------------------------------------------------- modules

MODULE_CASES = {
    "Conv1d": (torch.nn.Conv1d, dict(in_channels=4, out_channels=6, kernel_size=3, padding=1),
               (2, 4, 20)),
    "Conv2d": (torch.nn.Conv2d, dict(in_channels=4, out_channels=8, kernel_size=3, stride=2,
                                     padding=1, groups=2), (2, 4, 11, 10)),
    "Conv2d_reflect": (torch.nn.Conv2d, dict(in_channels=3, out_channels=5, kernel_size=3,
                                             padding=1, padding_mode="reflect"), (1, 3, 8, 8)),
    "Conv3d": (torch.nn.Conv3d, dict(in_channels=3, out_channels=4, kernel_size=(1, 3, 3),
                                     padding=(0, 1, 1)), (1, 3, 4, 6, 6)),
    "ConvTranspose1d": (torch.nn.ConvTranspose1d, dict(in_channels=5, out_channels=5,
                                                       kernel_size=3, stride=2), (2, 5, 9)),
    "ConvTranspose2d": (torch.nn.ConvTranspose2d, dict(in_channels=4, out_channels=4,
                                                       kernel_size=3, stride=2, padding=1,
                                                       output_padding=1), (1, 4, 6, 7)),
    "ConvTranspose3d": (torch.nn.ConvTranspose3d, dict(in_channels=3, out_channels=3,
                                                       kernel_size=3, padding=1), (1, 3, 3, 4, 4)),
}


def _float_mod(case, qconfig=None):
    ft, kw, shape = MODULE_CASES[case]
    torch.manual_seed(0)
    f = ft(**kw).eval()
    if qconfig is None:
        qconfig = qq.default_dynamic_qconfig
    f.qconfig = qconfig
    return f, torch.randn(*shape) * 1.5, case.split("_")[0]


def _per_channel_ok(case):
    return not case.startswith("ConvTranspose")


@pytest.mark.parametrize("case", list(MODULE_CASES))
@pytest.mark.parametrize("per_channel", [False, True])
def test_module_vs_torch_ao(isa, case, per_channel):
    if per_channel and not _per_channel_ok(case):
        pytest.skip("torch.ao's transposed convs have no per-channel weights")
    qconfig = qq.per_channel_dynamic_qconfig if per_channel else qq.default_dynamic_qconfig
    f, x, cls = _float_mod(case, qconfig)
    m = getattr(qnnd, cls).from_float(f)
    y = m(x)
    assert y.dtype == torch.float32
    # int8 error only, against the float module (PyTorch's clamp to the input range aside: these
    # inputs are symmetric and outputs stay within it)
    yf = f(x)
    assert (y - yf).abs().max() < 0.1 * (1 + yf.abs().max())
    nnqd, tq = torch_ao_dynamic("conv2d_prepack")
    if nnqd is None:
        return
    f2 = copy.deepcopy(f)
    f2.qconfig = tq.per_channel_dynamic_qconfig if per_channel else tq.default_dynamic_qconfig
    with pytest.warns(UserWarning):
        t = getattr(nnqd, cls).from_float(f2)
    assert torch.equal(t.weight().int_repr(), m.weight().int_repr())
    assert torch.equal(t.bias(), m.bias())
    assert m._get_name() == t._get_name()
    if f.padding_mode == "zeros":  # qplugin.nn's conv repr also names a non-zeros padding_mode
        assert repr(m) == repr(t)
    yt = t(x)
    mn, mx = float(x.min()), float(x.max())
    scale, zp = choose_qparams(mn, mx, True)
    assert_codes(codes_of(y, float(np.float32(scale)), zp),
                 codes_of(yt, float(np.float32(scale)), zp), f"{case} module vs torch.ao")
    assert y.stride() == yt.stride()


@pytest.mark.parametrize("case", list(MODULE_CASES))
def test_state_dict_both_ways_and_serialization(case):
    f, x, cls = _float_mod(case)
    m = getattr(qnnd, cls).from_float(f)
    y = m(x)
    sd = m.state_dict()
    assert set(sd) == {"weight", "bias", "scale", "zero_point"}
    # a fresh module from the state dict
    m2 = getattr(qnnd, cls)(**{k: v for k, v in MODULE_CASES[case][1].items()})
    m2.load_state_dict(sd)
    assert torch.equal(m2(x), y)
    # TorchScript script / save / load
    s = torch.jit.script(m)
    assert torch.equal(s(x), y)
    assert torch.equal(s(x, False), m(x, False))
    buf = io.BytesIO()
    torch.jit.save(s, buf)
    buf.seek(0)
    assert torch.equal(torch.jit.load(buf)(x), y)
    # torch.save of a whole model, deepcopy
    model = torch.nn.Sequential(m, torch.nn.ReLU())
    buf = io.BytesIO()
    torch.save(model, buf)
    buf.seek(0)
    loaded = torch.load(buf, weights_only=False)
    assert torch.equal(loaded(x), model(x))
    assert torch.equal(copy.deepcopy(m)(x), y)
    nnqd, tq = torch_ao_dynamic("conv2d_prepack")
    if nnqd is None:
        return
    # torch.ao's module <-> qplugin's, through the state dict
    with pytest.warns(UserWarning):
        t = getattr(nnqd, cls)(**MODULE_CASES[case][1])
    t.load_state_dict(sd)
    assert torch.equal(t.weight().int_repr(), m.weight().int_repr())
    m3 = getattr(qnnd, cls)(**MODULE_CASES[case][1])
    m3.load_state_dict(t.state_dict())
    assert torch.equal(m3(x), y)


def test_from_reference():
    nnqd, tq = torch_ao_dynamic("conv2d_prepack")
    if nnqd is None:
        pytest.skip("needs torch.ao (reference modules)")
    import torch.ao.nn.quantized.reference as nnqr
    f, x, _ = _float_mod("Conv2d")
    obs = tq.default_weight_observer()
    obs(f.weight)
    s, z = obs.calculate_qparams()
    ref = nnqr.Conv2d.from_float(f, {"qscheme": torch.per_tensor_affine,
                                     "dtype": torch.qint8, "scale": s, "zero_point": z})
    m = qnnd.Conv2d.from_reference(ref, 1.0, 0)
    assert torch.equal(m.weight().int_repr(), ref.get_quantized_weight().int_repr())
    assert m(x).shape == f(x).shape


def test_from_float_errors():
    f, x, _ = _float_mod("Conv2d", qq.float16_dynamic_qconfig)
    with pytest.raises(ValueError, match="expected a weight observer of dtype torch.qint8"):
        qnnd.Conv2d.from_float(f)
    with pytest.raises(TypeError, match="expected torch.nn.modules.conv.Conv2d, got Conv1d"):
        qnnd.Conv2d.from_float(torch.nn.Conv1d(2, 2, 1))


def test_module_bad_rank():
    f, x, _ = _float_mod("Conv2d")
    m = qnnd.Conv2d.from_float(f)
    with pytest.raises(ValueError, match=r"qplugin.nn.dynamic.Conv2d: expected a 4-D input"):
        m(x[0])


def test_quantize_dynamic_mapping_matches_torch_ao():
    # Dynamic convs are not in torch.ao's default dynamic mapping; neither in qplugin's. With an
    # explicit qconfig_spec and mapping they convert.
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Flatten(),
                                torch.nn.Linear(4 * 6 * 6, 5)).eval()
    q = qq.quantize_dynamic(model)
    assert type(q[0]) is torch.nn.Conv2d and type(q[2]) is qnnd.Linear
    q2 = qq.quantize_dynamic(model, {torch.nn.Conv2d}, mapping={torch.nn.Conv2d: qnnd.Conv2d})
    assert type(q2[0]) is qnnd.Conv2d
    x = torch.randn(2, 3, 8, 8)
    assert (q2(x) - model(x)).abs().max() < 0.1


def test_from_torch_ao_and_state_dict():
    nnqd, tq = torch_ao_dynamic("conv2d_prepack")
    if nnqd is None:
        pytest.skip("needs torch.ao")
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1),
                                torch.nn.ConvTranspose1d(4, 4, 3)).eval()
    with pytest.warns(UserWarning):
        t0 = nnqd.Conv2d(3, 4, 3, padding=1)
        t1 = nnqd.ConvTranspose1d(4, 4, 3)
    f0 = copy.deepcopy(model[0])
    f0.qconfig = tq.default_dynamic_qconfig
    with pytest.warns(UserWarning):
        t0 = nnqd.Conv2d.from_float(f0)
    tmodel = torch.nn.Sequential(t0, t1)
    q = qq.from_torch_ao(tmodel)
    assert type(q[0]) is qnnd.Conv2d and type(q[1]) is qnnd.ConvTranspose1d
    x = torch.randn(1, 3, 6, 6)
    assert torch.equal(q[0](x), q[0](x)) and q[0](x).shape == t0(x).shape
    scale, zp = choose_qparams(float(x.min()), float(x.max()), True)
    s32 = float(np.float32(scale))
    assert_codes(codes_of(q[0](x), s32, zp), codes_of(t0(x), s32, zp), "from_torch_ao")
    fresh = torch.nn.Sequential(qnnd.Conv2d(3, 4, 3, padding=1), qnnd.ConvTranspose1d(4, 4, 3))
    qq.load_torch_ao_state_dict(fresh, tmodel.state_dict())
    assert torch.equal(fresh[0](x), q[0](x))
