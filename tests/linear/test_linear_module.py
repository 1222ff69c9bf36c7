"""qplugin.nn.Linear, qplugin.nn.intrinsic.LinearReLU, the functional linear and the
LinearPackedParams object: from_float / from_reference, state dict (the torch.ao layout, both
directions), pickling of the packed object, torch.save, TorchScript script/trace save/load, copy.
"""
import collections
import copy
import io
import os
import pickle

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

import warnings  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402
import torch.ao.nn.intrinsic as nni  # noqa: E402
import torch.ao.nn.quantized as nnq  # noqa: E402
import torch.ao.quantization as tq  # noqa: E402

import qplugin  # noqa: E402,F401
from qplugin.nn._functional_linear import linear as qF_linear  # noqa: E402
from qplugin.nn.intrinsic.modules.linear_relu import LinearReLU  # noqa: E402
from qplugin.nn.modules.linear import Linear  # noqa: E402
from _reference import assert_qclose, module_oracle  # noqa: E402

warnings.filterwarnings("ignore", message=".*quantiz.*deprecated.*")
warnings.filterwarnings("ignore", category=DeprecationWarning)
torch.backends.quantized.engine = "x86"

FIXTURES = os.path.join(ROOT, "tests", "fixtures", "linear")
ISAS = ["scalar", "avx2", "avx512vnni"]
# The ISA at session start (QPLUGIN_CPU_ISA may cap it): restored after every ISA-forcing test.
START_ISA = torch.ops.qplugin._cpu_isa()

# What the lead's qplugin.quantization mapping adds (float / fused / QAT -> qplugin).
MAPPING = {
    torch.nn.Linear: Linear,
    torch.nn.modules.linear.NonDynamicallyQuantizableLinear: Linear,
    torch.ao.nn.qat.Linear: Linear,
    nni.LinearReLU: LinearReLU,
    torch.ao.nn.intrinsic.qat.LinearReLU: LinearReLU,
    torch.ao.nn.intrinsic.qat.LinearBn1d: Linear,
    torch.ao.quantization.QuantStub: nnq.Quantize,
    torch.ao.quantization.DeQuantStub: nnq.DeQuantize,
}


class Net(torch.nn.Module):
    def __init__(self, relu=False, bn=False, bias=True):
        super().__init__()
        self.quant = tq.QuantStub()
        self.fc = torch.nn.Linear(48, 40, bias=bias)
        self.bn = torch.nn.BatchNorm1d(40) if bn else torch.nn.Identity()
        self.relu = torch.nn.ReLU() if relu else torch.nn.Identity()
        self.fc2 = torch.nn.Linear(40, 24)
        self.dequant = tq.DeQuantStub()

    def forward(self, x):
        return self.dequant(self.fc2(self.relu(self.bn(self.fc(self.quant(x))))))


def _calib(m, n=4):
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for _ in range(n):
            m(torch.randn(16, 48, generator=g))
    return m


def _prepared(qconfig, relu=False):
    torch.manual_seed(0)
    m = Net(relu=relu).eval()
    if relu:
        m = tq.fuse_modules(m, [["fc", "relu"]])
    m.qconfig = qconfig
    return _calib(tq.prepare(m))


def _x(seed=1, shape=(16, 48)):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g)


def _compare_converted(prepared):
    """qplugin convert (MAPPING) vs torch.ao convert of the same prepared model."""
    ours = tq.convert(copy.deepcopy(prepared), mapping=MAPPING)
    ref = tq.convert(copy.deepcopy(prepared))
    x = _x()
    qx = ours.quant(x)
    for name in ("fc", "fc2"):
        a, b = getattr(ours, name), getattr(ref, name)
        assert isinstance(a, Linear)
        # The converted weights and qparams equal torch.ao's; the outputs: torch.ao's module
        # where it is a valid oracle for this input, else the exact reference (full-range
        # activations saturate PyTorch's AVX2 kernels: tests/_reference.py gemm_oracle).
        assert torch.equal(a.weight().int_repr(), b.weight().int_repr())
        assert (a.scale, a.zero_point) == (b.scale, b.zero_point)
        got = a(qx)
        want = module_oracle(b, qx, name)
        assert got.q_scale() == b.scale and got.q_zero_point() == b.zero_point
        assert_qclose(got.int_repr(), want)
        qx = b(qx)
    return ours, ref


QCONFIGS = {
    "x86_per_channel_symmetric": tq.get_default_qconfig("x86"),
    "per_tensor_symmetric": tq.default_qconfig,
    "per_tensor_affine": tq.QConfig(
        activation=tq.HistogramObserver.with_args(reduce_range=True),
        weight=tq.MinMaxObserver.with_args(dtype=torch.qint8, qscheme=torch.per_tensor_affine)),
    "per_channel_affine": tq.QConfig(
        activation=tq.MinMaxObserver.with_args(dtype=torch.quint8),
        weight=tq.PerChannelMinMaxObserver.with_args(dtype=torch.qint8,
                                                     qscheme=torch.per_channel_affine)),
    "narrow_range": tq.QConfig(
        activation=tq.MinMaxObserver.with_args(dtype=torch.quint8),
        weight=tq.PerChannelMinMaxObserver.with_args(
            dtype=torch.qint8, qscheme=torch.per_channel_symmetric, quant_min=-100,
            quant_max=100)),
}


@pytest.mark.parametrize("qc", sorted(QCONFIGS))
def test_from_float_matches_torch_ao(isa, qc):
    _compare_converted(_prepared(QCONFIGS[qc]))


def test_from_float_fused_linear_relu(isa):
    ours, ref = _compare_converted(_prepared(tq.get_default_qconfig("x86"), relu=True))
    assert type(ours.fc) is LinearReLU and ours.fc._get_name() == "QuantizedLinearReLU"


def _prepared_qat(fuse, **net_kw):
    """Net(**net_kw) with fc and `fuse` fused for QAT, prepare_qat'ed, calibrated, in eval."""
    torch.manual_seed(0)
    m = Net(**net_kw).train()
    m = tq.fuse_modules_qat(m, [["fc", fuse]])
    m.qconfig = tq.get_default_qat_qconfig("x86")
    return _calib(tq.prepare_qat(m)).eval()


def test_from_float_qat(isa):
    m = _prepared_qat("relu", relu=True)
    assert type(m.fc) is torch.ao.nn.intrinsic.qat.LinearReLU
    assert type(m.fc2) is torch.ao.nn.qat.Linear
    ours, _ = _compare_converted(m)
    assert type(ours.fc) is LinearReLU and type(ours.fc2) is Linear


def test_from_float_qat_linear_bn(isa):
    m = _prepared_qat("bn", bn=True)
    assert type(m.fc) is torch.ao.nn.intrinsic.qat.LinearBn1d
    _compare_converted(m)


def test_from_float_errors():
    with pytest.raises(TypeError, match=r"qplugin.nn.Linear.from_float: expected Linear"):
        Linear.from_float(torch.nn.Conv1d(2, 2, 1))
    with pytest.raises(ValueError, match=r"expected a module with a qconfig"):
        Linear.from_float(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match=r"expected dtype torch.qint8, got torch.float16"):
        Linear(2, 2, dtype=torch.float16)


def test_from_reference(isa):
    torch.manual_seed(0)
    fl = torch.nn.Linear(30, 20)
    qparams = {"qscheme": torch.per_channel_affine, "dtype": torch.qint8,
               "scale": torch.rand(20, dtype=torch.double) * 0.01 + 0.005,
               "zero_point": torch.zeros(20, dtype=torch.long), "axis": 0}
    ref = torch.ao.nn.quantized.reference.Linear.from_float(fl, qparams)
    ours = Linear.from_reference(ref, 0.05, 128)
    theirs = nnq.Linear.from_reference(ref, 0.05, 128)
    x = torch.quantize_per_tensor(_x(shape=(7, 30)), 0.03, 120, torch.quint8)
    assert_qclose(ours(x), theirs(x))
    fused_ref = torch.nn.Sequential(ref, torch.nn.ReLU())
    ours_r = LinearReLU.from_reference(fused_ref, 0.05, 128)
    assert_qclose(ours_r(x), torch.ao.nn.intrinsic.quantized.LinearReLU.from_reference(
        fused_ref, 0.05, 128)(x))


def _module(relu=False, bias=True, per_channel=True, seed=0):
    g = torch.Generator().manual_seed(seed)
    m = (LinearReLU if relu else Linear)(12, 9, bias)
    if per_channel:
        w = torch.quantize_per_channel(torch.randn(9, 12, generator=g),
                                       torch.rand(9, dtype=torch.double, generator=g) * 0.02 + 0.01,
                                       torch.randint(-3, 4, (9,), generator=g), 0, torch.qint8)
    else:
        w = torch.quantize_per_tensor(torch.randn(9, 12, generator=g), 0.02, 2, torch.qint8)
    m.set_weight_bias(w, torch.randn(9, generator=g) if bias else None)
    m.scale, m.zero_point = 0.07, 101
    return m


def _qx(shape=(5, 12), seed=3):
    return torch.quantize_per_tensor(_x(seed, shape), 0.04, 110, torch.quint8)


def test_weight_bias_accessors():
    m = _module()
    w, b = m.weight(), m.bias()
    assert w.dtype == torch.qint8 and w.shape == (9, 12) and b.shape == (9,)
    m2 = Linear(12, 9)
    m2.set_weight_bias(w, b)
    m2.scale, m2.zero_point = m.scale, m.zero_point
    assert torch.equal(m2(_qx()).int_repr(), m(_qx()).int_repr())
    assert Linear(3, 4, bias_=False).bias() is None
    assert torch.equal(Linear(3, 4).bias(), torch.zeros(4))
    assert m.in_features == 12 and m.out_features == 9


def test_repr_and_name():
    assert Linear(3, 4)._get_name() == "QuantizedLinear"
    assert repr(Linear(3, 4)) == ("QuantizedLinear(in_features=3, out_features=4, scale=1.0, "
                                  "zero_point=0, qscheme=torch.per_tensor_affine)")
    assert repr(_module(relu=True)) == (
        "QuantizedLinearReLU(in_features=12, out_features=9, scale=0.07, zero_point=101, "
        "qscheme=torch.per_channel_affine)")


@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("bias", [False, True])
def test_state_dict_round_trip(relu, per_channel, bias):
    m = _module(relu, bias, per_channel)
    sd = m.state_dict()
    assert list(sd) == ["scale", "zero_point", "_packed_params.dtype",
                        "_packed_params._packed_params"]
    m2 = (LinearReLU if relu else Linear)(1, 1)
    m2.load_state_dict(sd)
    assert (m2.in_features, m2.out_features, m2.scale, m2.zero_point) == (12, 9, 0.07, 101)
    assert torch.equal(m2(_qx()).int_repr(), m(_qx()).int_repr())


def test_state_dict_is_interchangeable_with_torch_ao():
    m = _module()
    ao = nnq.Linear(1, 1)
    ao.load_state_dict(m.state_dict())
    assert_qclose(ao(_qx()), m(_qx()))
    back = Linear(1, 1)
    back.load_state_dict(ao.state_dict())
    assert torch.equal(back(_qx()).int_repr(), m(_qx()).int_repr())


def test_load_old_state_dict_versions():
    m = _module()
    w, b = m.weight(), m.bias()
    v1 = collections.OrderedDict({"scale": torch.tensor(0.07), "zero_point": torch.tensor(101),
                                  "weight": w, "bias": b})
    v1._metadata = {"": {"version": 1}}
    m1 = Linear(1, 1)
    m1.load_state_dict(v1)
    assert torch.equal(m1(_qx()).int_repr(), m(_qx()).int_repr())
    v2 = collections.OrderedDict({
        "scale": torch.tensor(0.07), "zero_point": torch.tensor(101),
        "_packed_params.weight": w, "_packed_params.bias": b,
        "_packed_params.dtype": torch.qint8})
    v2._metadata = {"": {"version": 2}, "_packed_params": {"version": 2}}
    m2 = Linear(1, 1)
    m2.load_state_dict(v2)
    assert torch.equal(m2(_qx()).int_repr(), m(_qx()).int_repr())


def test_fixture_checkpoint_version_3():
    """A state dict saved by this version (tests/fixtures/qplugin_linear_v3.pt)."""
    data = torch.load(os.path.join(FIXTURES, "qplugin_linear_v3.pt"), weights_only=False)
    m = Linear(1, 1)
    m.load_state_dict(data["state_dict"])
    assert torch.equal(m(data["input"]).int_repr(), data["output"].int_repr())


def test_fixture_scripted_packed_params_state_version_1():
    """A TorchScript archive holding a LinearPackedParams pickled with state version 1."""
    m = torch.jit.load(os.path.join(FIXTURES, "qplugin_linear_relu_scripted_v1.pt"))
    data = torch.load(os.path.join(FIXTURES, "qplugin_linear_v3.pt"), weights_only=False)
    y = m(data["input"])
    assert torch.equal(y.int_repr(), data["output_relu"].int_repr())


@pytest.mark.parametrize("relu", [False, True])
def test_torchscript_script_save_load(relu):
    m = _module(relu)
    s = torch.jit.script(m)
    x = _qx((2, 3, 12))
    assert torch.equal(s(x).int_repr(), m(x).int_repr())
    buf = io.BytesIO()
    torch.jit.save(s, buf)
    buf.seek(0)
    loaded = torch.jit.load(buf)
    assert torch.equal(loaded(x).int_repr(), m(x).int_repr())
    w, b = loaded._packed_params._weight_bias()
    assert torch.equal(w.int_repr(), m.weight().int_repr()) and torch.equal(b, m.bias())


def test_torchscript_trace_save_load():
    m = torch.nn.Sequential(_module(), _module(relu=True, seed=1).eval())
    m[1] = Linear(9, 6)
    m[1].set_weight_bias(torch.quantize_per_tensor(torch.randn(6, 9), 0.05, 0, torch.qint8),
                         torch.randn(6))
    x = _qx()
    t = torch.jit.trace(m, x)
    buf = io.BytesIO()
    torch.jit.save(t, buf)
    buf.seek(0)
    loaded = torch.jit.load(buf)
    assert torch.equal(loaded(x).int_repr(), m(x).int_repr())
    assert torch.equal(loaded(_qx(seed=9)).int_repr(), m(_qx(seed=9)).int_repr())


def test_torch_save_and_copy():
    m = _module(relu=True)
    buf = io.BytesIO()
    torch.save(m, buf)
    buf.seek(0)
    m2 = torch.load(buf, weights_only=False)
    for other in (m2, copy.deepcopy(m), copy.copy(m)):
        assert type(other) is LinearReLU
        assert torch.equal(other(_qx()).int_repr(), m(_qx()).int_repr())
    d = copy.deepcopy(m)
    d.set_weight_bias(torch.quantize_per_tensor(torch.zeros(9, 12), 0.1, 0, torch.qint8), None)
    assert not torch.equal(d(_qx()).int_repr(), m(_qx()).int_repr())  # deep: m is unchanged


def test_functional_linear(isa):
    m = _module()
    x = _qx((2, 5, 12))
    y = qF_linear(x, m.weight(), m.bias(), m.scale, m.zero_point)
    assert torch.equal(y.int_repr(), m(x).int_repr())
    y0 = qF_linear(x, m.weight())  # output qparams default to the input's
    assert y0.q_scale() == x.q_scale() and y0.q_zero_point() == x.q_zero_point()
    ref = torch.ao.nn.quantized.functional.linear(x, m.weight(), None)
    assert_qclose(y0, ref)


# ---------------------------------------------------------------------------------------------
# The packed object: pickled state and its validation

def _packed():
    w = torch.quantize_per_channel(torch.randn(5, 7), torch.rand(5, dtype=torch.double) + 0.01,
                                   torch.zeros(5, dtype=torch.long), 0, torch.qint8)
    return torch.ops.qplugin.linear_prepack(w, torch.randn(5)), w


def test_packed_state_is_versioned_and_unpacked():
    p, w = _packed()
    state = p._get_method("__getstate__")()
    assert isinstance(state, tuple) and len(state) == 3 and state[0] == 1
    assert torch.equal(state[1].int_repr(), w.int_repr()) and state[2].shape == (5,)


def test_packed_object_python_pickle():
    p, w = _packed()
    p2 = pickle.loads(pickle.dumps(p))
    x = torch.quantize_per_tensor(torch.rand(3, 7), 0.01, 0, torch.quint8)
    assert torch.equal(torch.ops.qplugin.linear(x, p, 0.1, 5).int_repr(),
                       torch.ops.qplugin.linear(x, p2, 0.1, 5).int_repr())


@pytest.mark.parametrize("state,msg", [
    ((2, None, None), r"expected state version 1, got 2; the state was written by a newer "
                      r"qplugin"),
    ((0, None, None), r"expected state version 1, got 0"),
    (("1", None, None), r"expected an integer version as the first element of the state, got "
                        r"String"),
    ((), r"expected an integer version .* got an empty tuple"),
    ((1, None), r"expected a version-1 state \(1, weight, bias\) of 3 elements, got 2"),
    ((1, None, None), r"expected a qint8 weight tensor as the second element, got None"),
    ((1, "w", None), r"expected a qint8 weight tensor as the second element, got String"),
    (7, r"expected a tuple \(version, weight, bias\), got Int"),
])
def test_setstate_rejects_malformed_states(state, msg):
    p, _ = _packed()
    with pytest.raises(RuntimeError, match=r"qplugin::LinearPackedParams.__setstate__: " + msg):
        p._get_method("__setstate__")(state)


def test_setstate_validates_the_tensors():
    p, w = _packed()
    with pytest.raises(RuntimeError, match=r"qplugin::LinearPackedParams.__setstate__: expected "
                                           r"weight to be a quantized tensor"):
        p._get_method("__setstate__")((1, torch.randn(5, 7), None))
    with pytest.raises(RuntimeError, match=r"qplugin::LinearPackedParams.__setstate__: expected "
                                           r"bias of shape \[5\]"):
        p._get_method("__setstate__")((1, w, torch.zeros(4)))
    with pytest.raises(RuntimeError, match=r"expected a float32 bias tensor or None as the third "
                                           r"element, got Int"):
        p._get_method("__setstate__")((1, w, 3))
    p._get_method("__setstate__")((1, w, None))  # a valid state replaces the contents
    assert p.bias() is None


def test_functional_linear_scripts_and_rejects_float_input():
    fn = torch.jit.script(qF_linear)
    m = _module()
    x = _qx()
    assert torch.equal(fn(x, m.weight(), m.bias(), 0.07, 101).int_repr(), m(x).int_repr())
    with pytest.raises(ValueError, match=r"qplugin.nn.functional.linear: expected a quantized "
                                         r"input tensor"):
        qF_linear(torch.randn(2, 12), m.weight())
