# PT2 door, whole models (issue #15, deliverables 3-7): a converted qplugin model turned into its
# PT2 form with qplugin.pt2.from_quantized runs on QTensor (plain uint8/int8 codes) through the
# .plain ops, bit-identical to the TorchScript-door model; it exports with torch.export
# (strict=False: qplugin:: ops, no quantized:: op, no quantized dtype), round-trips through
# torch.export.save/load in a fresh process, compiles with Inductor (0 graph breaks), packages
# with AOTInductor, and never creates a quantized-dtype tensor.
# Changes with: qplugin/pt2/_convert.py, qplugin/pt2/_router.py, qplugin/pt2/_qtensor.py,
# qplugin/demo/model.py, tests/test_cpp_loader.py (the C++ run of the .pt2).
import copy
import os
import pickle
import subprocess
import sys

import pytest
import torch
import torch._dynamo.testing
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

import qplugin
from qplugin.demo import data as demo_data
from qplugin.demo import model as demo_model
from qplugin.pt2 import QTensor
from _graph_checks import QUANTIZED_DTYPES, qplugin_targets

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _convert(float_model, calib):
    """float model (QuantStub ... DeQuantStub) -> qplugin-converted model, qplugin's own prepare
    and convert with the x86 default qconfig."""
    prepared = copy.deepcopy(float_model).eval()
    Q = qplugin.quantization
    prepared.qconfig = Q.get_default_qconfig("x86")
    for mod in prepared.modules():  # per-tensor weights (per channel is rejected, as torch.ao)
        if isinstance(mod, (torch.nn.ConvTranspose1d, torch.nn.ConvTranspose2d,
                            torch.nn.ConvTranspose3d)):
            mod.qconfig = Q.QConfig(activation=prepared.qconfig.activation,
                                    weight=Q.default_weight_observer)
    Q.prepare(prepared, inplace=True)
    with torch.no_grad():
        for x in calib:
            prepared(x)
    return qplugin.quantization.convert(prepared)


@pytest.fixture(scope="module")
def demo():
    """(TorchScript-door model, input batch of 5, channels_last) for DemoNet with BN statistics
    from data, fused, calibrated, converted."""
    torch.manual_seed(0)
    x, _ = demo_data.make_dataset(64, seed=3)
    model = demo_model.DemoNet().to(memory_format=torch.channels_last)
    model.train()
    with torch.no_grad():
        model(x)  # BN running statistics from data: the folded weights are not trivial
    demo_model.fuse(model.eval())
    qmodel = _convert(model, [x])
    return qmodel, x[:5].contiguous(memory_format=torch.channels_last)


@pytest.fixture(scope="module")
def demo_ep(demo):
    qmodel, x = demo
    pmodel = qplugin.pt2.from_quantized(qmodel)
    return pmodel, torch.export.export(pmodel, (x,), strict=False)


def _legacy(qmodel, x):
    with torch.no_grad():
        return qmodel(x)


def _check_graph(ep):
    """qplugin:: ops present, all .plain; no quantized:: op, no QTensor, no quantized dtype."""
    qops = qplugin_targets(ep)
    assert all(t.endswith(".plain") for t in qops), qops
    return qops
# ---------------------------------------------------------------------------------------------
# Conversion.


def test_demo_from_quantized_is_bit_identical(demo, isa):
    qmodel, x = demo
    pmodel = qplugin.pt2.from_quantized(qmodel)
    for xb in (x[:1], x):
        want = _legacy(qmodel, xb)
        got = pmodel(xb)
        assert type(got) is torch.Tensor and got.dtype == torch.float32
        assert torch.equal(got, want)


def test_from_quantized_copies_and_to_quantized_goes_back(demo):
    qmodel, x = demo
    want = _legacy(qmodel, x)
    before = {k: v.clone() for k, v in qmodel.state_dict().items() if isinstance(v, torch.Tensor)}
    pmodel = qplugin.pt2.from_quantized(qmodel)
    assert pmodel is not qmodel
    assert isinstance(pmodel.quant, qplugin.pt2.Quantize)
    assert isinstance(pmodel.dequant, qplugin.pt2.DeQuantize)
    assert isinstance(qmodel.quant, qplugin.nn.Quantize)  # the original is untouched
    assert torch.equal(_legacy(qmodel, x), want)
    after = qmodel.state_dict()
    assert all(torch.equal(after[k], v) for k, v in before.items())
    # Python scalars for the qparams: constants under export / compile.
    assert isinstance(pmodel.quant.scale, float) and isinstance(pmodel.quant.zero_point, int)
    assert isinstance(pmodel.res.skip.scale, float)
    back = qplugin.pt2.to_quantized(pmodel)
    assert isinstance(back.quant, qplugin.nn.Quantize)
    assert torch.equal(_legacy(back, x), want)
    assert set(back.state_dict()) == set(qmodel.state_dict())
    for k, v in qmodel.state_dict().items():
        if isinstance(v, torch.Tensor) and not v.is_quantized:
            assert torch.equal(back.state_dict()[k], v) and back.state_dict()[k].dtype == \
                v.dtype, k
    # The TorchScript door still works on the way back.
    assert torch.equal(torch.jit.script(back)(x), want)


def test_from_quantized_inplace(demo):
    qmodel, x = demo
    want = _legacy(qmodel, x)
    m = copy.deepcopy(qmodel)
    out = qplugin.pt2.from_quantized(m, inplace=True)
    assert out is m and isinstance(m.quant, qplugin.pt2.Quantize)
    assert torch.equal(m(x), want)


def test_pt2_model_pickles(demo, tmp_path):
    qmodel, x = demo
    pmodel = qplugin.pt2.from_quantized(qmodel)
    want = pmodel(x)
    again = pickle.loads(pickle.dumps(pmodel))
    assert torch.equal(again(x), want)
    torch.save(pmodel, tmp_path / "m.pt")
    assert torch.equal(torch.load(tmp_path / "m.pt", weights_only=False)(x), want)


def test_from_quantized_errors(demo):
    qmodel, _ = demo
    with pytest.raises(TypeError, match="expected a torch.nn.Module, got int"):
        qplugin.pt2.from_quantized(3)
    with pytest.raises(TypeError, match="expected an eager module, got a TorchScript module"):
        qplugin.pt2.from_quantized(torch.jit.script(qmodel))
    pmodel = qplugin.pt2.from_quantized(qmodel)
    # A quantized-dtype input to the PT2 model's Quantize: rejected with a clear message.
    with pytest.raises(ValueError, match="expected a torch.float32 input tensor"):
        pmodel.quant(torch.zeros(1, 3, 8, 8, dtype=torch.float64))
    # A legacy qplugin op without a PT2 route, called on a QTensor: named in the error.
    q = QTensor(torch.zeros(1, 4, dtype=torch.uint8), 0.1, 0)
    with pytest.raises(NotImplementedError, match=r"qplugin\.pt2: .*has no PT2 route"):
        torch.ops.qplugin.linear_prepack(q, None)


# ---------------------------------------------------------------------------------------------
# torch.export.


def test_demo_export(demo, demo_ep, isa):
    qmodel, x = demo
    _, ep = demo_ep
    qops = _check_graph(ep)
    assert any("conv2d_relu.plain" in t for t in qops) and any("linear.plain" in t for t in qops)
    assert torch.equal(ep.module()(x), _legacy(qmodel, x))


def test_demo_export_save_load_fresh_process(demo, demo_ep, tmp_path):
    qmodel, x = demo
    _, ep = demo_ep
    path, inp, out = tmp_path / "demo.pt2", tmp_path / "x.pt", tmp_path / "y.pt"
    torch.export.save(ep, str(path))
    torch.save(x, inp)
    code = (f"import sys; sys.path.insert(0, {ROOT!r}); import qplugin, torch; "
            f"ep = torch.export.load({str(path)!r}); "
            f"torch.save(ep.module()(torch.load({str(inp)!r})), {str(out)!r})")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert torch.equal(torch.load(out), _legacy(qmodel, x))


# ---------------------------------------------------------------------------------------------
# torch.compile.


def test_demo_compile_no_graph_break(demo):
    qmodel, x = demo
    pmodel = qplugin.pt2.from_quantized(qmodel)
    torch._dynamo.reset()
    explain = torch._dynamo.explain(pmodel)(x)
    assert explain.graph_break_count == 0, explain.break_reasons
    assert explain.graph_count == 1
    torch._dynamo.reset()
    cm = torch.compile(pmodel, backend="inductor")
    want = _legacy(qmodel, x)
    assert torch.equal(cm(x), want)
    assert torch.equal(cm(x), want)  # second call: the compiled artifact, not tracing


def _packed_objects(model):
    return [(name, v) for name, mod in model.named_modules() for k, v in vars(mod).items()
            if isinstance(v, torch.ScriptObject)]


def test_skip_packed_params_guards(demo):
    # qplugin.pt2.skip_packed_params_guards drops exactly the class-name and __obj_flatten__
    # guards of the packed objects (each of them loses its guards, nothing else is dropped); the
    # compiled model stays bit-identical, does not recompile, and still reads the module's
    # current packed object on every call (the objects are graph inputs): swapping in new weights
    # of the same shape gives the new eager result without recompiling.
    qmodel, x = demo
    qmodel = copy.deepcopy(qmodel)
    pmodel = qplugin.pt2.from_quantized(qmodel)
    seen = {}

    def spy(guards):
        keep = qplugin.pt2.skip_packed_params_guards(guards)
        seen["all"] = [g.name for g in guards]
        seen["dropped"] = [g.name for g, k in zip(guards, keep) if not k]
        return keep

    torch._dynamo.reset()
    cnt = torch._dynamo.testing.CompileCounterWithBackend("inductor")
    cm = torch.compile(pmodel, backend=cnt, options={"guard_filter_fn": spy})
    assert torch.equal(cm(x), _legacy(qmodel, x))
    packed = _packed_objects(pmodel)
    assert packed
    suffixes = (".__obj_flatten__()", "._type().qualified_name()")
    dropped = seen["dropped"]
    assert dropped and all(n.endswith(suffixes) for n in dropped), dropped
    owners = {n[:-len(sfx)] for n in dropped for sfx in suffixes if n.endswith(sfx)}
    assert len(owners) == len(packed), (owners, [n for n, _ in packed])
    kept_obj = [n for n in seen["all"] if n.endswith(suffixes) and n not in dropped]
    assert not kept_obj, kept_obj
    assert len(seen["all"]) > len(dropped)  # the other guards stay

    before = cm(x)
    assert torch.equal(before, _legacy(qmodel, x))
    assert cnt.frame_count == 1
    # New weights of the same shape and config in one conv: read at call time.
    conv = next(m for m in qmodel.modules() if isinstance(m, qplugin.nn.Conv2d))
    w = conv.weight()
    w2 = torch.quantize_per_tensor(torch.randn(w.shape) * 0.1, 0.01, 0, torch.qint8) \
        if w.qscheme() == torch.per_tensor_affine else torch.quantize_per_channel(
            torch.randn(w.shape) * 0.1, w.q_per_channel_scales(),
            w.q_per_channel_zero_points(), 0, torch.qint8)
    conv.set_weight_bias(w2, conv.bias())
    pconv = next(m for m in pmodel.modules() if isinstance(m, qplugin.nn.Conv2d))
    if pconv is not conv:  # from_quantized copied the module: swap there too
        pconv.set_weight_bias(w2, conv.bias())
    want = _legacy(qmodel, x)
    assert not torch.equal(want, before)  # the swap changes the result
    assert torch.equal(cm(x), want)
    assert cnt.frame_count == 1


def test_compile_qtensor_input_no_graph_break(demo):
    # A compiled region that takes and returns QTensors (the model's inner modules): the input
    # is fakeified (QTensor is not a quantized-dtype tensor to PyTorch's fake-tensor converter)
    # and the conv / pool ops trace to their .plain overloads.
    qmodel, x = demo
    pmodel = qplugin.pt2.from_quantized(qmodel)
    inner = nn.Sequential(pmodel.stem, pmodel.conv, pmodel.pool, pmodel.res)
    q = pmodel.quant(x)
    want = inner(q)
    torch._dynamo.reset()
    explain = torch._dynamo.explain(inner)(q)
    assert explain.graph_break_count == 0 and not explain.break_reasons, explain.break_reasons
    assert explain.graph_count == 1
    torch._dynamo.reset()
    got = torch.compile(inner, backend="aot_eager")(q)
    assert isinstance(got, QTensor) and (got.scale, got.zero_point) == (want.scale,
                                                                         want.zero_point)
    assert torch.equal(got.int_data, want.int_data)


# ---------------------------------------------------------------------------------------------
# AOTInductor.


def test_demo_aoti_package(demo, demo_ep, tmp_path):
    qmodel, x = demo
    _, ep = demo_ep
    path = torch._inductor.aoti_compile_and_package(ep, package_path=str(tmp_path / "d.pt2"))
    runner = torch._inductor.aoti_load_package(path)
    assert torch.equal(runner(x), _legacy(qmodel, x))


# ---------------------------------------------------------------------------------------------
# Never a quantized dtype on the PT2 path (after conversion).


class _NoQuantizedTensors(TorchDispatchMode):
    """Fails on any op (aten or qplugin) that takes or returns a quantized-dtype tensor."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        flat = torch.utils._pytree.tree_leaves((args, kwargs, out))
        for t in flat:
            if isinstance(t, torch.Tensor) and not isinstance(t, QTensor):
                assert t.dtype not in QUANTIZED_DTYPES, f"{func} touched a {t.dtype} tensor"
        return out


def _raise(name):
    def f(*a, **k):
        raise AssertionError(f"{name} called on the PT2 path")
    return f


def test_no_quantized_dtype_on_pt2_path(demo, tmp_path, monkeypatch):
    qmodel, x = demo
    want = _legacy(qmodel, x)
    pmodel = qplugin.pt2.from_quantized(qmodel)
    for name in ("quantize_per_tensor", "quantize_per_channel",
                 "_make_per_tensor_quantized_tensor", "_make_per_channel_quantized_tensor"):
        monkeypatch.setattr(torch, name, _raise(f"torch.{name}"))
    with _NoQuantizedTensors():
        assert torch.equal(pmodel(x), want)
    assert torch.equal(pmodel(x), want)
    ep = torch.export.export(pmodel, (x,), strict=False)
    _check_graph(ep)
    assert torch.equal(ep.module()(x), want)
    torch._dynamo.reset()
    assert torch.equal(torch.compile(pmodel)(x), want)


def test_no_quantized_dtype_check_can_fail(monkeypatch):
    # The dispatch-mode check above is not vacuous: a quantized tensor created under it fails.
    with pytest.raises(AssertionError, match="touched a torch.quint8 tensor"):
        with _NoQuantizedTensors():
            torch._make_per_tensor_quantized_tensor(torch.zeros(2, dtype=torch.uint8), 0.1, 0)


# ---------------------------------------------------------------------------------------------
# Single modules: each converted alone, PT2 form bit-identical to the legacy one, exported.


class _Wrap(nn.Module):
    def __init__(self, body):
        super().__init__()
        self.quant = qplugin.quantization.QuantStub()
        self.body = body
        self.dequant = qplugin.quantization.DeQuantStub()

    def forward(self, x):
        return self.dequant(self.body(self.quant(x)))


class _Add(nn.Module):
    def __init__(self, relu=False):
        super().__init__()
        self.f = qplugin.nn.FloatFunctional()
        self.relu = relu

    def forward(self, x):
        return self.f.add_relu(x, x) if self.relu else self.f.add(x, x)


SINGLE = {
    "linear": (lambda: nn.Linear(12, 7), (4, 12)),
    "linear_relu": (lambda: nn.Sequential(nn.Linear(12, 7), nn.ReLU()), (4, 12)),
    "conv2d": (lambda: nn.Conv2d(3, 8, 3, padding=1), (2, 3, 9, 9)),
    "conv2d_relu": (lambda: nn.Sequential(nn.Conv2d(3, 8, 3, stride=2), nn.ReLU()), (2, 3, 9, 9)),
    "conv2d_depthwise": (lambda: nn.Conv2d(6, 6, 3, groups=6), (2, 6, 8, 8)),
    "conv1d": (lambda: nn.Conv1d(3, 5, 3), (2, 3, 11)),
    "conv_transpose2d": (lambda: nn.ConvTranspose2d(4, 3, 3, stride=2), (2, 4, 5, 5)),
    "relu6": (lambda: nn.ReLU6(), (2, 3, 4, 4)),
    "hardswish": (lambda: nn.Hardswish(), (2, 3, 4, 4)),
    "add": (lambda: _Add(), (2, 3, 4, 4)),
    "add_relu": (lambda: _Add(relu=True), (2, 3, 4, 4)),
    "max_pool2d": (lambda: nn.MaxPool2d(2), (2, 3, 6, 6)),
    "adaptive_avg_pool2d": (lambda: nn.AdaptiveAvgPool2d(1), (2, 3, 6, 6)),
}


def _fuse_if_needed(body):
    if isinstance(body, nn.Sequential) and len(body) == 2:
        qplugin.quantization.fuse_modules(body, [["0", "1"]], inplace=True)
    return body


@pytest.mark.parametrize("name", sorted(SINGLE))
def test_single_module(name, isa):
    make, shape = SINGLE[name]
    torch.manual_seed(1)
    m = _Wrap(_fuse_if_needed(make().eval())).eval()
    x = torch.randn(*shape)
    qmodel = _convert(m, [x, torch.randn(*shape) * 1.5])
    pmodel = qplugin.pt2.from_quantized(qmodel)
    want = _legacy(qmodel, x)
    assert torch.equal(pmodel(x), want)
    ep = torch.export.export(pmodel, (x,), strict=False)
    _check_graph(ep)
    assert torch.equal(ep.module()(x), want)
