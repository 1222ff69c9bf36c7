# conv2d_add[_relu].plain (PT2 door, docs/pt2.md section 3; nni.ConvAdd2d / ConvAddReLU2d): byte
# identity with the legacy conv2d_add[_relu] on the same codes under every ISA and layout (one
# core through QArg, csrc/ops/quantized_cpu/conv_kernel.cpp), the schema convention (qaccum gets
# its own qaccum_scale / qaccum_zero_point), torch.library.opcheck, fake metadata = real, bad
# inputs naming the op (eager and fake), the Route row, and qplugin.nn.intrinsic.ConvAdd2d /
# ConvAddReLU2d through qplugin.pt2.from_quantized: bit-identical, exported, compiled with 0
# graph breaks, packaged with AOTInductor.
# Changes with: csrc/ops/conv.cpp, csrc/ops/quantized_cpu/conv_kernel.cpp,
# qplugin/pt2/fake/conv.py, qplugin/pt2/routes/conv.py, qplugin/nn/intrinsic/modules/conv_add.py.
import pytest
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

import qplugin
from qplugin.nn import intrinsic as qnni
from qplugin.pt2 import QTensor
from _block_torch_ao import requires_torch_ao
from _plain_act_helpers import (assert_fake_matches, bad_input_cases, opcheck, plain_call,
                                raises_naming, routes_by_legacy, run_both)
from _graph_checks import qplugin_targets

Q = torch.ops.qplugin
CL = torch.channels_last
NAMES = {False: "conv2d_add", True: "conv2d_add_relu"}

CASES = [  # N, Cin, Cout, H, W, (kh, kw), (sh, sw), (ph, pw), (dh, dw), groups, bias
    (1, 4, 8, 6, 6, (3, 3), (1, 1), (1, 1), (1, 1), 1, True),
    (2, 3, 5, 7, 9, (3, 3), (2, 2), (0, 0), (1, 1), 1, False),
    (1, 8, 8, 5, 5, (3, 3), (1, 1), (2, 2), (2, 2), 4, True),
    (2, 6, 6, 4, 4, (1, 1), (1, 1), (0, 0), (1, 1), 6, True),
    (1, 16, 17, 9, 8, (3, 1), (1, 2), (1, 0), (1, 1), 1, True),
    (0, 4, 4, 5, 5, (3, 3), (1, 1), (1, 1), (1, 1), 1, True),
]


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _out(n, k, s, p, d):
    return (n + 2 * p - d * (k - 1) - 1) // s + 1


def _q(shape, seed, scale=0.05, zp=130, layout="contiguous"):
    """A quint8 tensor of `shape` in `layout`: contiguous, channels_last, or strided (every other
    column of a twice-as-wide tensor)."""
    wide = list(shape)
    if layout == "strided":
        wide[-1] *= 2
    codes = torch.randint(0, 256, wide, generator=_gen(seed), dtype=torch.uint8)
    q = torch._make_per_tensor_quantized_tensor(codes, scale, zp)
    if layout == "channels_last":
        q = q.contiguous(memory_format=CL)
    elif layout == "strided":
        q = q[..., ::2]
    assert tuple(q.shape) == tuple(shape)
    return q


def _w(shape, per_channel, seed):
    g = _gen(seed)
    codes = torch.randint(-128, 128, shape, generator=g, dtype=torch.int8)
    if per_channel:
        n = shape[0]
        sc = torch.rand(n, generator=g, dtype=torch.float64) * 0.01 + 0.001
        zp = torch.randint(-3, 4, (n,), generator=g)
        return torch._make_per_channel_quantized_tensor(codes, sc, zp, 0)
    return torch._make_per_tensor_quantized_tensor(codes, 0.004, 1)


def _case(i, per_channel, seed=0, x_layout="contiguous", a_layout="contiguous", xq=(0.05, 130),
          aq=(0.03, 140)):
    """(qx, qaccum, packed weight) of CASES[i]."""
    N, Cin, Cout, H, W, (kh, kw), (sh, sw), (ph, pw), (dh, dw), g, has_b = CASES[i]
    x = _q((N, Cin, H, W), seed + i, *xq, layout=x_layout)
    acc = _q((N, Cout, _out(H, kh, sh, ph, dh), _out(W, kw, sw, pw, dw)), seed + i + 3, *aq,
             layout=a_layout)
    w = _w((Cout, Cin // g, kh, kw), per_channel, seed + i + 7)
    b = torch.randn(Cout, generator=_gen(i)) if has_b else None
    packed = Q.conv2d_prepack(w, b, [sh, sw], [ph, pw], [dh, dw], g)
    return x, acc, packed


def _route(relu):
    return routes_by_legacy()[NAMES[relu]]


# ---------------------------------------------------------------------------------------------
# Byte identity with the legacy op.

LAYOUTS = ["contiguous", "channels_last", "strided"]


@pytest.mark.parametrize("relu", [False, True], ids=["add", "add_relu"])
@pytest.mark.parametrize("per_channel", [False, True], ids=["pt", "pc"])
@pytest.mark.parametrize("x_layout", LAYOUTS)
@pytest.mark.parametrize("a_layout", LAYOUTS)
def test_bytes_equal_legacy(isa, relu, per_channel, x_layout, a_layout):
    for i in range(len(CASES)):
        x, acc, packed = _case(i, per_channel, x_layout=x_layout, a_layout=a_layout)
        for oscale, ozp in ((0.06, 110), (0.5, 0), (0.02, 255)):
            plain, pargs = run_both(_route(relu), (x, acc, packed, oscale, ozp),
                                    what=f"{NAMES[relu]}.plain case {i}")
            if x.numel() > 0:  # the layouts reached the plain kernel unchanged
                assert pargs[0].stride() == x.stride() and pargs[3].stride() == acc.stride()


@pytest.mark.parametrize("relu", [False, True], ids=["add", "add_relu"])
def test_bytes_equal_legacy_extreme_qparams(isa, relu):
    # Zero points at the ends of the range, a tiny and a large accumulator scale: saturation.
    for xq, aq in (((0.2, 0), (0.001, 255)), ((0.01, 255), (1.5, 0)), ((0.05, 128), (0.05, 128))):
        x, acc, packed = _case(0, True, seed=4, xq=xq, aq=aq)
        run_both(_route(relu), (x, acc, packed, 0.04, 7))


def test_plain_output_layout_and_mutation_check():
    x, acc, packed = _case(0, False)
    codes_x, codes_a = x.int_repr(), acc.int_repr()
    y = Q.conv2d_add.plain(codes_x, x.q_scale(), x.q_zero_point(), codes_a, acc.q_scale(),
                           acc.q_zero_point(), packed, 0.06, 110)
    assert y.dtype == torch.uint8
    assert y.is_contiguous(memory_format=CL) and not y.is_contiguous()
    # The identity check can fail: another accumulator zero point gives other bytes.
    legacy = Q.conv2d_add(x, acc, packed, 0.06, 110)
    other = Q.conv2d_add.plain(codes_x, x.q_scale(), x.q_zero_point(), codes_a, acc.q_scale(),
                               acc.q_zero_point() + 3, packed, 0.06, 110)
    assert torch.equal(y, legacy.int_repr()) and not torch.equal(other, legacy.int_repr())
    # qaccum is read only, on both doors.
    assert torch.equal(acc.int_repr(), codes_a)


# ---------------------------------------------------------------------------------------------
# opcheck and the fake kernel.


def _plain_args(i, relu, per_channel, x_layout="contiguous", a_layout="contiguous"):
    x, acc, packed = _case(i, per_channel, x_layout=x_layout, a_layout=a_layout)
    plain, pargs, _, _, _ = plain_call(_route(relu), (x, acc, packed, 0.06, 110))
    return plain, pargs


_OPCHECK = [(relu, pc, i, xl, al) for relu in (False, True) for pc in (False, True)
            for i, xl, al in ((0, "contiguous", "contiguous"), (1, "channels_last", "contiguous"),
                              (2, "contiguous", "channels_last"), (4, "strided", "strided"))]


@pytest.mark.parametrize("case", _OPCHECK, ids=[f"{NAMES[r]}-{'pc' if p else 'pt'}-{i}-{xl}-{al}"
                                                for r, p, i, xl, al in _OPCHECK])
def test_opcheck(case):
    relu, pc, i, xl, al = case
    plain, pargs = _plain_args(i, relu, pc, xl, al)
    opcheck(plain, pargs)


@pytest.mark.parametrize("relu", [False, True], ids=["add", "add_relu"])
@pytest.mark.parametrize("i", range(len(CASES)))
def test_fake_metadata_equals_real(relu, i):
    for xl, al in (("contiguous", "contiguous"), ("channels_last", "strided")):
        plain, pargs = _plain_args(i, relu, i % 2 == 1, xl, al)
        assert_fake_matches(plain, pargs)


# ---------------------------------------------------------------------------------------------
# Bad inputs: RuntimeError naming qplugin::conv2d_add[_relu].plain, eager and fake.


@pytest.mark.parametrize("relu", [False, True], ids=["add", "add_relu"])
def test_bad_operands(relu):
    plain, pargs = _plain_args(0, relu, False)
    op = f"{NAMES[relu]}.plain"
    bad_input_cases(plain, pargs, 0, "qx", op)
    bad_input_cases(plain, pargs, 3, "qaccum", op)


def _with(pargs, **kw):
    idx = {"qx": 0, "qx_scale": 1, "qx_zero_point": 2, "qaccum": 3, "qaccum_scale": 4,
           "qaccum_zero_point": 5, "packed_weight": 6, "output_scale": 7,
           "output_zero_point": 8}
    a = list(pargs)
    for k, v in kw.items():
        a[idx[k]] = v
    return a


def _bad_shapes(pargs):
    x, acc = pargs[0], pargs[3]  # x [1, 4, 6, 6], acc [1, 8, 6, 6]
    w_t = Q.conv_transpose2d_prepack(_w((4, 8, 3, 3), False, 0), None, [1, 1], [1, 1], [0, 0],
                                     [1, 1], 1)
    w_big = Q.conv2d_prepack(_w((8, 4, 3, 3), False, 0), None, [1, 1], [0, 0], [1, 1], 1)
    return [
        ("accum height", _with(pargs, qaccum=acc[:, :, :5]),
         "expected qaccum of the output's shape [1, 8, 6, 6], got [1, 8, 5, 6]"),
        ("accum channels", _with(pargs, qaccum=acc[:, :7]),
         "expected qaccum of the output's shape [1, 8, 6, 6], got [1, 7, 6, 6]"),
        ("accum batch", _with(pargs, qaccum=torch.cat([acc, acc])),
         "expected qaccum of the output's shape [1, 8, 6, 6], got [2, 8, 6, 6]"),
        ("accum rank", _with(pargs, qaccum=acc[0]),
         "expected qaccum of the output's shape [1, 8, 6, 6], got [8, 6, 6]"),
        ("3-D input", _with(pargs, qx=x[0]), "expected a 4-D input qx (N, C, H, W), got 3-D"),
        ("channels", _with(pargs, qx=x[:, :3]), "expected an input with 4 channels"),
        ("kernel too large", _with(pargs, qx=x[:, :, :2, :2], qaccum=acc[:, :, :1, :1],
                                   packed_weight=w_big),
         "expected an input at least as large as the dilated kernel"),
        ("transposed packed", _with(pargs, packed_weight=w_t),
         "expected packed weights of a conv (conv*_prepack)"),
        ("output scale", _with(pargs, output_scale=0.0),
         "expected a finite, positive output_scale"),
        ("output scale nan", _with(pargs, output_scale=float("nan")),
         "expected a finite, positive output_scale"),
        ("output zero point", _with(pargs, output_zero_point=256),
         "expected output_zero_point in [0, 255]"),
    ]


@pytest.mark.parametrize("relu", [False, True], ids=["add", "add_relu"])
def test_bad_shapes_and_config(relu):
    plain, pargs = _plain_args(0, relu, False)
    op = f"{NAMES[relu]}.plain"
    for label, args, match in _bad_shapes(pargs):
        raises_naming(op, lambda: plain(*args), match)
        with FakeTensorMode() as mode:
            fargs = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
            raises_naming(op, lambda: plain(*fargs), match)


def test_quantized_accum_on_plain_door():
    # qaccum as a quint8 tensor (the legacy door's operand) on .plain: QArg::plain's message.
    plain, pargs = _plain_args(0, False, False)
    qa = torch._make_per_tensor_quantized_tensor(pargs[3], 0.03, 140)
    raises_naming("conv2d_add.plain", lambda: plain(*_with(pargs, qaccum=qa)),
                  "expected qaccum to be a plain tensor of codes")


def test_legacy_messages_unchanged():
    # The legacy door keeps its names (no ".plain") after the move onto QArg.
    x, acc, packed = _case(0, False)
    msg = raises_naming("conv2d_add", lambda: Q.conv2d_add(x, acc.int_repr(), packed, 0.1, 0),
                        "expected qaccum to be a quantized tensor")
    assert ".plain" not in msg
    msg = raises_naming("conv2d_add_relu", lambda: Q.conv2d_add_relu(x, acc[:, :, :5], packed,
                                                                     0.1, 0),
                        "expected qaccum of the output's shape")
    assert ".plain" not in msg


# ---------------------------------------------------------------------------------------------
# Routing: torch.ops.qplugin.conv2d_add on QTensors runs the .plain overload.


def _qt(q):
    return QTensor(q.int_repr() if q.is_contiguous() else
                   torch.empty_strided(q.shape, q.stride(), dtype=torch.uint8).copy_(q.int_repr()),
                   q.q_scale(), q.q_zero_point())


@pytest.mark.parametrize("relu", [False, True], ids=["add", "add_relu"])
def test_route_qtensor_call(relu):
    r = _route(relu)
    assert r.plain == f"{NAMES[relu]}.plain"
    assert r.out({"output_scale": 0.06, "output_zero_point": 110}) == (0.06, 110, torch.uint8)
    x, acc, packed = _case(2, True, x_layout="channels_last")
    packet = getattr(Q, NAMES[relu])
    want = packet(x, acc, packed, 0.06, 110)
    for call in (lambda a, b: packet(a, b, packed, 0.06, 110),
                 lambda a, b: packet.default(a, b, packed, 0.06, 110),
                 lambda a, b: packet(a, qaccum=b, packed_weight=packed, output_scale=0.06,
                                     output_zero_point=110)):
        got = call(_qt(x), _qt(acc))
        assert isinstance(got, QTensor)
        assert (got.scale, got.zero_point) == (want.q_scale(), want.q_zero_point())
        assert got.int_data.stride() == want.stride()
        assert torch.equal(got.int_data, want.int_repr())


# ---------------------------------------------------------------------------------------------
# Modules: qplugin.nn.intrinsic.ConvAdd2d / ConvAddReLU2d through qplugin.pt2.from_quantized.


class _Net(nn.Module):
    """Two float inputs -> Quantize each -> ConvAdd[ReLU]2d -> DeQuantize."""

    def __init__(self, relu, padding_mode="zeros", padding=1, stride=1, kernel=(3, 3)):
        super().__init__()
        self.q1 = qplugin.nn.Quantize(0.04, 120, torch.quint8)
        self.q2 = qplugin.nn.Quantize(0.03, 131, torch.quint8)
        cls = qnni.ConvAddReLU2d if relu else qnni.ConvAdd2d
        self.conv = cls(4, 6, kernel, stride=stride, padding=padding, padding_mode=padding_mode)
        w = _w((6, 4) + tuple(kernel), True, 5)
        self.conv.set_weight_bias(w, torch.randn(6, generator=_gen(2)))
        self.conv.scale, self.conv.zero_point = 0.07, 100
        self.dequant = qplugin.nn.DeQuantize()

    def forward(self, x, y):
        return self.dequant(self.conv(self.q1(x), self.q2(y)))


def _inputs(n=2, out_hw=(7, 5)):
    g = _gen(3)
    return (torch.randn(n, 4, 7, 5, generator=g) * 2,
            torch.randn(n, 6, *out_hw, generator=g).contiguous(memory_format=CL))


def _check_graph(ep, relu):
    qops = qplugin_targets(ep)
    assert all(t.endswith(".plain") for t in qops), qops
    assert f"qplugin.{NAMES[relu]}.plain" in qops, qops
@pytest.mark.parametrize("relu", [False, True], ids=["add", "add_relu"])
def test_module_from_quantized_bit_identical_and_exports(isa, relu):
    torch.manual_seed(0)
    qmodel = _Net(relu).eval()
    pmodel = qplugin.pt2.from_quantized(qmodel)
    x, y = _inputs()
    with torch.no_grad():
        want = qmodel(x, y)
    got = pmodel(x, y)
    assert type(got) is torch.Tensor and torch.equal(got, want)
    assert torch.equal(pmodel(x[:1], y[:1]), qmodel(x[:1], y[:1]))
    ep = torch.export.export(pmodel, (x, y), strict=False)
    _check_graph(ep, relu)
    assert torch.equal(ep.module()(x, y), want)
    back = qplugin.pt2.to_quantized(pmodel)
    assert torch.equal(back(x, y), want)


# Padded convs (issue #15): every padding_mode the module takes ('zeros' pads inside the kernel,
# the others pad the codes in Python first, conv.py _pad_quantized), symmetric and asymmetric
# padding, stride 2. The 7x5 input gives the output's height and width (extra_input's shape).
PADDED = [("zeros", 1, 1, (3, 3)), ("zeros", (2, 1), 2, (3, 3)), ("reflect", 1, 1, (3, 3)),
          ("reflect", (1, 2), 1, (3, 5)), ("replicate", 1, 2, (3, 3)),
          ("circular", (2, 1), 1, (3, 3)), ("circular", 1, 1, (1, 3))]


@pytest.mark.parametrize("relu", [False, True], ids=["add", "add_relu"])
@pytest.mark.parametrize("case", PADDED, ids=[f"{m}-p{p}-s{s}-k{k[0]}x{k[1]}"
                                              for m, p, s, k in PADDED])
def test_padded_module_exports_bit_identical(relu, case):
    mode, padding, stride, kernel = case
    qmodel = _Net(relu, mode, padding, stride, kernel).eval()
    assert qmodel.conv.padding_mode == mode
    ph, pw = (padding, padding) if isinstance(padding, int) else padding
    out_hw = (_out(7, kernel[0], stride, ph, 1), _out(5, kernel[1], stride, pw, 1))
    x, y = _inputs(out_hw=out_hw)
    with torch.no_grad():
        want = qmodel(x, y)
    assert want.shape == (2, 6) + out_hw
    pmodel = qplugin.pt2.from_quantized(qmodel)
    assert torch.equal(pmodel(x, y), want)
    ep = torch.export.export(pmodel, (x, y), strict=False)
    _check_graph(ep, relu)
    assert torch.equal(ep.module()(x, y), want)
    # Other values through the same exported program (its constants are not the inputs').
    x2, y2 = x.flip(0) * 1.5, y.flip(0)
    with torch.no_grad():
        want2 = qmodel(x2, y2)
    assert torch.equal(ep.module()(x2, y2), want2)
    # The padding mode matters: the zeros-padded conv of the same weights gives other bytes.
    if mode != "zeros":
        other = _Net(relu, "zeros", padding, stride, kernel).eval()
        with torch.no_grad():
            assert not torch.equal(other(x, y), want)


@pytest.mark.parametrize("relu", [False, True], ids=["add", "add_relu"])
def test_module_compile_no_graph_break(relu):
    qmodel = _Net(relu).eval()
    pmodel = qplugin.pt2.from_quantized(qmodel)
    x, y = _inputs()
    with torch.no_grad():
        want = qmodel(x, y)
    torch._dynamo.reset()
    explain = torch._dynamo.explain(pmodel)(x, y)
    assert explain.graph_break_count == 0, explain.break_reasons
    assert explain.graph_count == 1
    torch._dynamo.reset()
    cm = torch.compile(pmodel, backend="aot_eager")
    assert torch.equal(cm(x, y), want)
    assert torch.equal(cm(x, y), want)


@pytest.mark.parametrize("relu", [False, True], ids=["add", "add_relu"])
def test_module_aoti_package(relu, tmp_path):
    # AOTInductor: the packed object is packaged, the proxy executor calls the .plain op.
    qmodel = _Net(relu).eval()
    pmodel = qplugin.pt2.from_quantized(qmodel)
    x, y = _inputs()
    with torch.no_grad():
        want = qmodel(x, y)
    ep = torch.export.export(pmodel, (x, y), strict=False)
    path = torch._inductor.aoti_compile_and_package(ep, package_path=str(tmp_path / "c.pt2"))
    assert torch.equal(torch._inductor.aoti_load_package(path)(x, y), want)


def test_module_torchscript_door_unchanged():
    # The modules' TorchScript forward still calls the legacy ops (no overload names there).
    qmodel = _Net(True).eval()
    x, y = _inputs()
    want = qmodel(x, y)
    assert torch.equal(torch.jit.script(qmodel)(x, y), want)


@requires_torch_ao
@pytest.mark.parametrize("relu", [False, True], ids=["add", "add_relu"])
def test_module_from_torch_ao_prepared_model(relu):
    # The model as users get it: nni.ConvAdd[ReLU]2d prepared and calibrated by torch.ao, converted
    # by qplugin.quantization.convert, then its PT2 form.
    import torch.ao.nn.intrinsic as nni
    import torch.ao.quantization as tq
    import qplugin.quantization as qq

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.q1, self.q2 = tq.QuantStub(), tq.QuantStub()
            conv = nn.Conv2d(4, 6, 3, padding=1)
            self.conv = (nni.ConvAddReLU2d(conv, torch.add, nn.ReLU()) if relu
                         else nni.ConvAdd2d(conv, torch.add))
            self.dequant = tq.DeQuantStub()

        def forward(self, x, y):
            return self.dequant(self.conv(self.q1(x), self.q2(y)))

    torch.manual_seed(0)
    m = Net().eval()
    m.qconfig = tq.get_default_qconfig("x86")
    tq.prepare(m, inplace=True, allow_list=qq.get_default_qconfig_propagation_list())
    x, y = _inputs()
    for _ in range(3):
        m(torch.randn_like(x), torch.randn_like(y))
    qmodel = qq.convert(m)
    assert type(qmodel.conv) is (qnni.ConvAddReLU2d if relu else qnni.ConvAdd2d)
    pmodel = qplugin.pt2.from_quantized(qmodel)
    with torch.no_grad():
        want = qmodel(x, y)
    assert torch.equal(pmodel(x, y), want)
    ep = torch.export.export(pmodel, (x, y), strict=False)
    _check_graph(ep, relu)
    assert torch.equal(ep.module()(x, y), want)
