"""The contract every stateful-or-not qplugin.nn module of the first families keeps, across
families (Quantize, DeQuantize; ReLU6, Hardswish, ELU; BatchNorm2d/3d, intrinsic.BNReLU2d/3d):
numerics against torch.ao.nn.quantized (x86 engine), from_float through torch.ao prepare against
torch.ao convert, pinned reprs, state_dict layouts and torch.ao's, the checkpoints of
tests/fixtures (make_fixtures.py), TorchScript, pickling, bad input. Family specifics:
tests/activation/test_activation_foundation.py, tests/batch_norm/test_batch_norm_modules.py.
"""
import copy
import io
import os
import warnings

import expecttest
import pytest
import torch
import torch.ao.nn.intrinsic as nni
import torch.ao.nn.intrinsic.quantized as nniq
import torch.ao.nn.quantized as nnq
import torch.ao.quantization as tq
from torch import nn

from qplugin import nn as qnn
from qplugin.nn import intrinsic as qnni
from _reference import assert_qclose
from _module_cases import (CHAINS, DTYPES, MODULES, QUANTIZED_INPUT_MODULES, _dtype_id, _fresh,
                           _observed, _qparams, _randomize_bn, assert_same_output, prepare_chain,
                           qinput, with_codes_of, x86_engine)  # noqa: F401 (autouse fixture)

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

FIXTURES = os.path.join(_ROOT, "tests", "fixtures")

# torch.ao.quantization and the quantized dtypes are deprecated in torch 2.13: silence that noise.
pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]


# --------------------------------------------------------------------------------------------
# numerics against torch.ao.nn.quantized


@pytest.mark.parametrize("dtype", DTYPES, ids=_dtype_id)
@pytest.mark.parametrize("name", list(MODULES))
def test_matches_torch_ao(name, dtype, isa):
    """`isa` (tests/conftest.py): every kernel ISA the CPU has."""
    build, exact = MODULES[name]
    q, t, x = build(dtype)
    yq, yt = q(x), t(x)
    if yt.is_quantized:
        assert_qclose(yq, yt, exact=exact)
    else:
        assert torch.equal(yq, yt)


@pytest.mark.parametrize("name", ["ReLU6", "Hardswish", "ELU", "BatchNorm2d", "BatchNorm3d",
                                  "BNReLU2d", "BNReLU3d"])
def test_matches_torch_ao_channels_last(name):
    build, exact = MODULES[name]
    q, t, x = build(torch.quint8)
    x = x.contiguous(memory_format=torch.channels_last if x.dim() == 4
                     else torch.channels_last_3d)
    yq, yt = q(x), t(x)
    assert_qclose(yq, yt, exact=exact)
    # Output memory format follows PyTorch's (channels-last for batch norm, kept for
    # relu6/hardswish, contiguous for elu).
    assert yq.stride() == yt.stride()


# --------------------------------------------------------------------------------------------
# from_float through torch.ao.quantization.prepare, against torch.ao.quantization.convert


@pytest.fixture(scope="module")
def prepared_models():
    """(prepared model, torch.ao.quantization.convert of it, input shape) for 2-D and 3-D
    (_module_cases.CHAINS)."""
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for key, (cls, shape) in CHAINS.items():
            model = cls().eval()
            for i, m in enumerate(model.modules()):
                if isinstance(m, nn.modules.batchnorm._BatchNorm):
                    _randomize_bn(m, 11 + i)
            prepared = prepare_chain(model, shape, seed=11)
            out[key] = (prepared, tq.convert(prepared), shape)
    return out


# (model, submodule name, qplugin class, torch.ao quantized class)
FROM_FLOAT_CASES = [
    ("2d", "quant", qnn.Quantize, nnq.Quantize),
    ("2d", "bn", qnn.BatchNorm2d, nnq.BatchNorm2d),
    ("2d", "relu6", qnn.ReLU6, nnq.ReLU6),
    ("2d", "hardswish", qnn.Hardswish, nnq.Hardswish),
    ("2d", "block.0", qnn.ELU, nnq.ELU),
    ("2d", "bn2", qnni.BNReLU2d, nniq.BNReLU2d),
    ("2d", "dequant", qnn.DeQuantize, nnq.DeQuantize),
    ("3d", "bn", qnn.BatchNorm3d, nnq.BatchNorm3d),
    ("3d", "bn2", qnni.BNReLU3d, nniq.BNReLU3d),
]


@pytest.mark.parametrize("model,name,qcls,tcls", FROM_FLOAT_CASES,
                         ids=[f"{c[0]}-{c[2].__name__}" for c in FROM_FLOAT_CASES])
def test_from_float_matches_torch_convert(prepared_models, model, name, qcls, tcls):
    prepared, converted, shape = prepared_models[model]
    observed = prepared.get_submodule(name)
    ref = converted.get_submodule(name)
    assert type(ref) is tcls
    q = qcls.from_float(observed)
    assert type(q) is qcls
    assert _qparams(q) == _qparams(ref)
    if isinstance(q, qnn.Quantize):
        assert q.dtype == ref.dtype
    if isinstance(q, qnn.ELU):
        assert q.alpha == ref.alpha == 0.7
    if isinstance(q, qnn.BatchNorm2d) or isinstance(q, qnn.BatchNorm3d):
        for k in ("weight", "bias", "running_mean", "running_var"):
            assert torch.equal(getattr(q, k), getattr(ref, k))
        assert q.eps == ref.eps
    # Same output as torch's converted module on an input with the qparams it sees in the model
    # (those of the previous module's output) and uniform codes.
    x = torch.randn(shape, generator=torch.Generator().manual_seed(3)) * 2
    if isinstance(q, qnn.Quantize):
        assert_qclose(q(x), ref(x), exact=True)
        return
    xq = converted.quant(x)
    for prev in ("bn", "relu6", "hardswish", "block.0", "bn2"):
        if prev == name:
            break
        if prev.split(".")[0] in converted._modules:
            xq = converted.get_submodule(prev)(xq)
    xq = with_codes_of(xq, seed=4)
    if name == "dequant":
        assert torch.equal(q(xq), ref(xq))
        return
    assert_qclose(q(xq), ref(xq), exact=isinstance(q, qnn.ReLU6))


def test_from_float_use_precomputed_fake_quant_accepted(prepared_models):
    prepared, converted, _ = prepared_models["2d"]
    q = qnn.Hardswish.from_float(prepared.hardswish, use_precomputed_fake_quant=True)
    assert _qparams(q) == _qparams(converted.hardswish)


# --------------------------------------------------------------------------------------------
# reprs (pinned)


class TestRepr(expecttest.TestCase):
    def test_reprs(self):
        self.assertExpectedInline(repr(qnn.Quantize(0.05, 7, torch.quint8)), """\
Quantize(scale=tensor([0.0500]), zero_point=tensor([7]), dtype=torch.quint8)""")
        self.assertExpectedInline(repr(qnn.DeQuantize()), """DeQuantize()""")
        self.assertExpectedInline(repr(qnn.ReLU6()), """QuantizedReLU6()""")
        self.assertExpectedInline(repr(qnn.ReLU6(inplace=True)), """QuantizedReLU6(inplace=True)""")
        self.assertExpectedInline(repr(qnn.Hardswish(0.05, 7)), """QuantizedHardswish()""")
        self.assertExpectedInline(repr(qnn.ELU(0.05, 7, alpha=0.5)), """QuantizedELU(alpha=0.5)""")
        self.assertExpectedInline(repr(qnn.BatchNorm2d(4)), """\
QuantizedBatchNorm2d(4, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)""")
        self.assertExpectedInline(repr(qnn.BatchNorm3d(2, eps=1e-3, momentum=None)), """\
QuantizedBatchNorm3d(2, eps=0.001, momentum=None, affine=True, bias=True, track_running_stats=True)""")
        self.assertExpectedInline(repr(qnni.BNReLU2d(4)), """\
QuantizedBNReLU2d(4, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)""")
        self.assertExpectedInline(repr(qnni.BNReLU3d(4)), """\
QuantizedBNReLU3d(4, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)""")

    def test_repr_and_name_match_torch_ao(self):
        pairs = [(qnn.Quantize(0.05, 7, torch.qint8), nnq.Quantize(0.05, 7, torch.qint8)),
                 (qnn.ReLU6(True), nnq.ReLU6(True)),
                 (qnn.Hardswish(0.05, 7), nnq.Hardswish(0.05, 7)),
                 (qnn.ELU(0.05, 7, 0.5), nnq.ELU(0.05, 7, 0.5)),
                 (qnn.BatchNorm2d(4), nnq.BatchNorm2d(4)), (qnn.BatchNorm3d(4), nnq.BatchNorm3d(4)),
                 (qnni.BNReLU2d(4), nniq.BNReLU2d(4)), (qnni.BNReLU3d(4), nniq.BNReLU3d(4))]
        for q, t in pairs:
            # Same name and repr as PyTorch's (PyTorch's module tests compare _get_name());
            # type(q).__module__ tells qplugin's apart.
            self.assertEqual(repr(q), repr(t))
            self.assertEqual(q._get_name(), t._get_name())
            self.assertTrue(type(q).__module__.startswith("qplugin."))


# --------------------------------------------------------------------------------------------
# state_dict


@pytest.mark.parametrize("name", list(MODULES))
def test_state_dict_round_trip(name):
    q, _, x = MODULES[name][0](torch.quint8)
    sd = q.state_dict()
    assert sd._metadata[""]["version"] == 1 == type(q)._version
    if hasattr(q, "scale"):
        assert "scale" in sd and "zero_point" in sd
    fresh = _fresh(name)
    result = fresh.load_state_dict(sd)
    assert not result.missing_keys and not result.unexpected_keys
    assert _qparams(fresh) == _qparams(q)
    assert_same_output(fresh(x), q(x))
    # buffers keep their own dtype and shape
    for k, v in fresh.state_dict().items():
        assert v.dtype == sd[k].dtype and v.shape == sd[k].shape, k


def test_state_dict_layouts():
    def layout(m):
        return {k: (tuple(v.shape), str(v.dtype).replace("torch.", ""))
                for k, v in m.state_dict().items()}
    assert layout(qnn.Quantize(0.1, 1, torch.qint8)) == {
        "scale": ((1,), "float32"), "zero_point": ((1,), "int64")}
    assert layout(qnn.Hardswish(0.1, 1)) == {"scale": ((), "float32"), "zero_point": ((), "int64")}
    assert layout(qnn.Hardswish(0.1, 1, dtype=torch.float64)) == {
        "scale": ((), "float64"), "zero_point": ((), "int64")}
    assert layout(qnn.ELU(0.1, 1)) == {"scale": ((), "float64"), "zero_point": ((), "int64")}
    assert layout(qnn.BatchNorm2d(2)) == {
        "weight": ((2,), "float32"), "bias": ((2,), "float32"),
        "running_mean": ((2,), "float32"), "running_var": ((2,), "float32"),
        "num_batches_tracked": ((), "int64"), "scale": ((), "float32"),
        "zero_point": ((), "int64")}
    assert layout(qnn.DeQuantize()) == {} and layout(qnn.ReLU6()) == {}


@pytest.mark.parametrize("name", ["Quantize", "Hardswish", "ELU", "BatchNorm2d", "BatchNorm3d",
                                  "BNReLU2d", "BNReLU3d"])
def test_load_torch_ao_state_dict(name):
    """PyTorch-style state dicts load: ELU's has no scale/zero_point (the constructor values are
    kept, no missing keys); BatchNorm's after PyTorch's from_float has [1]-shaped qparams with an
    int32 zero_point."""
    q, t, x = MODULES[name][0](torch.quint8)
    sd = t.state_dict()
    fresh = _fresh(name)
    before = _qparams(fresh)
    result = fresh.load_state_dict(sd, strict=True)
    assert not result.missing_keys and not result.unexpected_keys
    if name == "ELU":
        assert "scale" not in sd
        assert _qparams(fresh) == before
    else:
        assert _qparams(fresh) == _qparams(q)
        assert_same_output(fresh(x), q(x))
    if name.startswith("B"):
        sd = dict(sd)
        sd["scale"] = torch.tensor([0.125])
        sd["zero_point"] = torch.tensor([9], dtype=torch.int32)
        fresh.load_state_dict(sd)
        assert _qparams(fresh) == (0.125, 9)
        assert fresh.scale.shape == () and fresh.zero_point.dtype == torch.int64


def test_load_state_dict_without_qparams_keeps_constructor_values():
    m = qnn.Hardswish(0.25, 3)
    result = m.load_state_dict({}, strict=True)
    assert not result.missing_keys and _qparams(m) == (0.25, 3)
    bn = qnn.BatchNorm2d(2)
    bn.scale, bn.zero_point = 0.5, 4
    sd = {k: v for k, v in qnn.BatchNorm2d(2).state_dict().items()
          if k not in ("scale", "zero_point")}
    bn.load_state_dict(sd)
    assert _qparams(bn) == (0.5, 4)


def test_load_state_dict_rejects_bad_qparams():
    # As torch.nn loading, the valid entries load and the errors are raised together at the end.
    m = qnn.Hardswish(0.25, 3)
    with pytest.raises(RuntimeError, match=r"'scale'.*expected a finite, positive scale, got -1"):
        m.load_state_dict({"scale": torch.tensor(-1.0), "zero_point": torch.tensor(5)})
    assert _qparams(m) == (0.25, 5)
    with pytest.raises(RuntimeError, match=r"'zero_point'.*one-element integer tensor"):
        m.load_state_dict({"scale": torch.tensor(1.0), "zero_point": torch.tensor([1, 2])})
    assert _qparams(m) == (1.0, 5)


def test_qparam_assignment_writes_the_buffer():
    # PyTorch code assigns floats (ELU's plain attributes) or observer tensors (BatchNorm).
    m = qnn.ELU(0.25, 3)
    m.scale = 0.5
    m.zero_point = torch.tensor([7], dtype=torch.int32)
    assert m.scale.dtype == torch.float64 and m.scale.shape == () and _qparams(m) == (0.5, 7)
    assert "scale" in m._buffers and m.state_dict()["zero_point"].dtype == torch.int64
    with pytest.raises(ValueError, match="expected a finite, positive scale"):
        m.scale = 0.0
    with pytest.raises(ValueError, match=r"expected zero_point to be an integer \(an int or an"
                                         r" integral float\), got 1.5"):
        m.zero_point = 1.5
    m.zero_point = 4.0  # an integral float, as PyTorch's modules accept
    assert _qparams(m) == (0.5, 4) and m.zero_point.dtype == torch.int64


@pytest.mark.parametrize("fname", sorted(f for f in os.listdir(FIXTURES) if f.endswith(".pt")))
def test_fixture_checkpoint(fname, isa):
    """Exact bytes under every ISA (DESIGN.md: every ISA path gives the scalar path's bytes)."""
    entry = torch.load(os.path.join(FIXTURES, fname), weights_only=True)
    assert entry["fixture_format"] == 1
    cls_path = entry["class"]
    cls = {"qplugin.nn": qnn, "qplugin.nn.intrinsic": qnni}[cls_path.rsplit(".", 1)[0]]
    cls = getattr(cls, cls_path.rsplit(".", 1)[1])
    sd = entry["state_dict"]
    assert sd._metadata[""]["version"] == entry["version"]
    assert entry["version"] <= cls._version
    args = [getattr(torch, a) if isinstance(a, str) else a for a in entry["init_args"]]
    # A fresh module with other constructor qparams: the checkpoint's must win.
    if cls is qnn.Quantize:
        args[0], args[1] = 1.0, 0
    elif cls in (qnn.Hardswish, qnn.ELU):
        args[0], args[1] = 1.0, 0
    m = cls(*args, **entry["init_kwargs"])
    result = m.load_state_dict(sd, strict=True)
    assert not result.missing_keys and not result.unexpected_keys
    for k, v in sd.items():
        assert torch.equal(m.state_dict()[k], v), k
    inp = entry["input"]
    if "values" in inp:
        x = inp["values"]
    else:
        x = torch._make_per_tensor_quantized_tensor(inp["int_repr"], inp["scale"],
                                                    inp["zero_point"])
        assert x.dtype == getattr(torch, inp["dtype"])
    y = m(x)
    out = entry["output"]
    if "values" in out:
        assert torch.equal(y, out["values"])
    else:
        assert y.dtype == getattr(torch, out["dtype"])
        assert (y.q_scale(), y.q_zero_point()) == (out["scale"], out["zero_point"])
        assert torch.equal(y.int_repr(), out["int_repr"])


def test_every_module_has_a_fixture():
    names = {f.rsplit("_v", 1)[0] for f in os.listdir(FIXTURES) if f.endswith(".pt")}
    assert names == {"quantize", "dequantize", "relu6", "hardswish", "elu", "batchnorm2d",
                     "batchnorm3d", "bnrelu2d", "bnrelu3d"}


# --------------------------------------------------------------------------------------------
# TorchScript, pickling, deepcopy


@pytest.mark.parametrize("name", list(MODULES))
def test_torchscript_save_load(name, tmp_path):
    q, _, x = MODULES[name][0](torch.quint8)
    expected = q(x)
    scripted = torch.jit.script(q)
    assert_same_output(scripted(x), expected)
    path = str(tmp_path / f"{name}.pt")
    torch.jit.save(scripted, path)
    loaded = torch.jit.load(path)
    assert_same_output(loaded(x), expected)
    # the buffers travel with the scripted module
    if hasattr(q, "scale"):
        assert _qparams(loaded) == _qparams(q)


@pytest.mark.parametrize("name", list(MODULES))
def test_torch_save_load_and_deepcopy(name):
    q, _, x = MODULES[name][0](torch.quint8)
    expected = q(x)
    buf = io.BytesIO()
    torch.save(q, buf)
    buf.seek(0)
    loaded = torch.load(buf, weights_only=False)
    assert type(loaded) is type(q)
    assert_same_output(loaded(x), expected)
    dup = copy.deepcopy(q)
    assert_same_output(dup(x), expected)
    if hasattr(q, "scale"):
        assert dup.scale is not q.scale and _qparams(dup) == _qparams(q)
        # deepcopy / unpickling keep the buffers (no __setattr__ detour)
        assert "scale" in dup._buffers and "scale" in loaded._buffers


# --------------------------------------------------------------------------------------------
# bad input


@pytest.mark.parametrize("name", QUANTIZED_INPUT_MODULES)
def test_forward_rejects_float_input(name):
    q, _, x = MODULES[name][0](torch.quint8)
    xf = x.dequantize()
    if name == "DeQuantize":
        # as torch.ao.nn.quantized.DeQuantize: a float tensor passes through
        assert q(xf) is xf
        return
    with pytest.raises(RuntimeError, match=r"qplugin::\w+: expected (input|qx) to be a quantized"
                                           r" tensor"):
        q(xf)
    with pytest.raises(RuntimeError, match=r"expected (input|qx) to be a quantized tensor"):
        torch.jit.script(q)(xf)


@pytest.mark.parametrize("dtype", [torch.quint8, torch.qint8], ids=_dtype_id)
def test_quantize_output_holds_its_codes(dtype):
    """Eager Quantize hands the codes' storage to the quantized tensor (set_) instead of copying
    it; scripted and traced modules copy (_make_per_tensor_quantized_tensor). All: the plain op's
    bytes, the module's qparams, its memory format's strides, storage of their own."""
    q = qnn.Quantize(0.043, 3 if dtype == torch.quint8 else -5, dtype)
    scripted = torch.jit.script(q)
    g = torch.Generator().manual_seed(11)
    base = torch.randn(2, 6, 9, 10, generator=g) * 4
    traced = torch.jit.trace(q, base, check_trace=False)
    inputs = [base, base.contiguous(memory_format=torch.channels_last), base[:, ::2, 1:, :7],
              base.transpose(2, 3), base[0, 0, 0, 0], base[:0], base.flatten()[5:400]]
    for x in inputs:
        x_before = x.clone()
        codes = torch.ops.qplugin.quantize_per_tensor(x, 0.043, q.zero_point.item(), dtype)
        for mod in (q, scripted, traced):
            if mod is traced and x.shape != base.shape:
                continue  # a trace keeps its input's shape
            for ctx in (torch.no_grad, torch.inference_mode):
                with ctx():
                    y = mod(x)
                    y2 = mod(x)
                assert y.dtype == dtype and y.qscheme() == torch.per_tensor_affine
                assert y.q_scale() == q.scale.item() and y.q_zero_point() == q.zero_point.item()
                assert y.shape == x.shape and y.stride() == codes.stride()
                assert torch.equal(y.int_repr(), codes)
                assert y.untyped_storage().nbytes() == codes.numel()
                if x.numel():
                    assert y.data_ptr() != y2.data_ptr()
                assert torch.equal(x, x_before)


def test_forward_bad_input_messages():
    with pytest.raises(ValueError, match=r"qplugin.nn.Quantize: expected a torch.float32 input"
                                         r" tensor, got a quantized tensor"):
        qnn.Quantize(0.1, 0, torch.quint8)(qinput((3,)))
    with pytest.raises(ValueError, match=r"expected a torch.float32 input tensor, got another"):
        qnn.Quantize(0.1, 0, torch.quint8)(torch.zeros(3, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"BNReLU2d: expected a 4-D \(N, C, H, W\) input, got 3-D"):
        qnni.BNReLU2d(3)(qinput((2, 3, 4)))
    with pytest.raises(ValueError, match=r"BNReLU3d: expected a 5-D .* got 4-D"):
        qnni.BNReLU3d(3)(qinput((2, 3, 4, 4)))
    with pytest.raises(RuntimeError, match=r"qplugin::batch_norm2d: expected a 4-D"):
        qnn.BatchNorm2d(3)(qinput((2, 3, 4)))
    with pytest.raises(RuntimeError, match=r"qplugin::batch_norm3d: expected .*\[4\]"):
        qnn.BatchNorm3d(4)(qinput((2, 3, 2, 2, 2)))
    with pytest.raises(RuntimeError, match=r"qplugin::hardswish: expected output_zero_point in"
                                           r" \[0, 255\]"):
        qnn.Hardswish(0.1, -3)(qinput((3,)))


BAD_CONSTRUCTORS = [
    (lambda: qnn.Quantize(0.1, 0, torch.float32), ValueError,
     r"qplugin.nn.Quantize: expected dtype torch.quint8, torch.qint8 or torch.qint32, got"
     r" torch.float32"),
    (lambda: qnn.Quantize(0.1, 0, "quint8"), TypeError, r"expected dtype to be a torch.dtype"),
    (lambda: qnn.Quantize(0.1, 300, torch.quint8), ValueError,
     r"expected zero_point in \[0, 255\] for torch.quint8, got 300"),
    (lambda: qnn.Quantize(-0.1, 0, torch.quint8), ValueError,
     r"expected a finite, positive scale, got -0.1"),
    (lambda: qnn.Quantize(0.1, 0, torch.quint8, factory_kwargs={"dtype": torch.int32}),
     TypeError, r"factory_kwargs\['dtype'\] to be a floating-point"),
    (lambda: qnn.ReLU6(inplace=1), TypeError, r"qplugin.nn.ReLU6: expected inplace to be a bool"),
    (lambda: qnn.Hardswish("0.1", 0), TypeError,
     r"qplugin.nn.Hardswish: expected scale to be a float, got str"),
    (lambda: qnn.Hardswish(float("nan"), 0), ValueError, r"expected a finite, positive scale"),
    (lambda: qnn.Hardswish(0.1, 0.5), ValueError, r"expected zero_point to be an integer \(an int"
                                                   r" or an integral float\), got 0.5"),
    (lambda: qnn.Hardswish(0.1, float("nan")), ValueError, r"expected zero_point to be an integer"),
    (lambda: qnn.Hardswish(0.1, "1"), TypeError, r"expected zero_point to be an int, got str"),
    (lambda: qnn.Hardswish(0.1, 0, dtype=torch.int8), TypeError,
     r"expected dtype to be None or a floating-point torch.dtype"),
    (lambda: qnn.Hardswish(1e-50, 0), ValueError, r"representable as a positive, finite"),
    (lambda: qnn.ELU(0.1, 0, alpha="1"), TypeError, r"qplugin.nn.ELU: expected alpha to be a"
                                                    r" float"),
    (lambda: qnn.ELU(0.1, torch.tensor([1, 2])), TypeError, r"one-element integer tensor"),
    (lambda: qnn.BatchNorm2d(0), ValueError, r"qplugin.nn.BatchNorm2d: expected a positive"
                                             r" num_features, got 0"),
    (lambda: qnn.BatchNorm3d(2.0), TypeError, r"qplugin.nn.BatchNorm3d: expected num_features"
                                              r" to be an int, got float"),
    (lambda: qnni.BNReLU2d(2, eps=-1.0), ValueError, r"qplugin.nn.intrinsic.BNReLU2d: expected a"
                                                     r" non-negative eps"),
    (lambda: qnn.BatchNorm2d(2, dtype=torch.qint8), TypeError, r"floating-point torch.dtype"),
]


@pytest.mark.parametrize("make,exc,pattern", BAD_CONSTRUCTORS,
                         ids=[f"bad{i}" for i in range(len(BAD_CONSTRUCTORS))])
def test_constructor_rejects_bad_arguments(make, exc, pattern):
    with pytest.raises(exc, match=pattern):
        make()


def test_from_float_rejects_wrong_modules():
    x4 = torch.randn(2, 3, 4, 4)
    fused = _observed(nni.BNReLU2d(nn.BatchNorm2d(3), nn.ReLU()), x4)
    plain = _observed(nn.BatchNorm2d(3), x4)
    # PyTorch's BatchNorm2d.from_float takes the fused module and silently drops its ReLU.
    with pytest.raises(TypeError, match=r"qplugin.nn.BatchNorm2d.from_float: expected an observed"
                       r" torch.nn.modules.batchnorm.BatchNorm2d, got .*BNReLU2d; a fused"
                       r" BatchNorm \+ ReLU converts to qplugin.nn.intrinsic.BNReLU2d"):
        qnn.BatchNorm2d.from_float(fused)
    with pytest.raises(TypeError, match=r"qplugin.nn.intrinsic.BNReLU2d.from_float: expected an"
                       r" observed .*BNReLU2d, got .*BatchNorm2d; a plain BatchNorm2d converts to"
                       r" qplugin.nn.BatchNorm2d"):
        qnni.BNReLU2d.from_float(plain)
    with pytest.raises(TypeError, match=r"BatchNorm3d.from_float: expected an observed"
                       r" .*BatchNorm3d, got .*BatchNorm2d"):
        qnn.BatchNorm3d.from_float(plain)
    with pytest.raises(ValueError, match=r"qplugin.nn.Hardswish.from_float: expected a module with"
                       r" an output observer .*qplugin.quantization.prepare"):
        qnn.Hardswish.from_float(nn.Hardswish())
    with pytest.raises(TypeError, match=r"qplugin.nn.ELU.from_float: expected an observed"
                       r" torch.nn.modules.activation.ELU, got .*Hardswish"):
        qnn.ELU.from_float(nn.Hardswish())
    with pytest.raises(TypeError, match=r"qplugin.nn.ReLU6.from_float: expected an observed"):
        qnn.ReLU6.from_float(nn.ReLU())
    with pytest.raises(ValueError, match=r"Quantize.from_float: expected a module with an output"
                       r" observer"):
        qnn.Quantize.from_float(tq.QuantStub())
    no_stats = nn.BatchNorm2d(3, track_running_stats=False)
    no_stats.activation_post_process = plain.activation_post_process
    with pytest.raises(ValueError, match=r"track_running_stats=True"):
        qnn.BatchNorm2d.from_float(no_stats)
    with pytest.raises(TypeError, match=r"BNReLU2d.from_reference: expected a"
                       r" torch.ao.nn.intrinsic.BNReLU2d"):
        qnni.BNReLU2d.from_reference(nn.BatchNorm2d(3), 0.1, 0)


# --------------------------------------------------------------------------------------------
# the ops against torch.ops.quantized; public names


def test_ops_match_torch():
    x = qinput((4, 3, 8, 8))
    w, b = torch.rand(3) + 0.5, torch.randn(3)
    mean, var = torch.randn(3), torch.rand(3) + 0.5
    for name in ("quantized_batch_norm", "batch_norm", "batch_norm2d", "batch_norm_relu",
                 "batch_norm2d_relu"):
        got = getattr(torch.ops.qplugin, name)(x, w, b, mean, var, 1e-5, 0.0413, 100)
        ref = (torch.quantized_batch_norm if name == "quantized_batch_norm"
               else getattr(torch.ops.quantized, name))(x, w, b, mean, var, 1e-5, 0.0413, 100)
        assert_qclose(got, ref)
    x3, x5 = qinput((4, 3, 64)), qinput((2, 3, 4, 4, 8))
    for name, xx in (("batch_norm1d", x3), ("batch_norm1d_relu", x3), ("batch_norm3d", x5),
                     ("batch_norm3d_relu", x5)):
        got = getattr(torch.ops.qplugin, name)(xx, w, b, mean, var, 1e-5, 0.0413, 100)
        assert_qclose(got, getattr(torch.ops.quantized, name)(xx, w, b, mean, var, 1e-5, 0.0413,
                                                              100))
    qp = torch.ops.qplugin
    assert_qclose(qp.relu6(x), torch.ops.quantized.relu6(x), exact=True)
    assert_qclose(qp.hardswish(x, 0.0271, 7), torch.ops.quantized.hardswish(x, 0.0271, 7))
    assert_qclose(qp.elu(x, 0.0271, 7, 0.5), torch.ops.quantized.elu(x, 0.0271, 7, 0.5))
    assert_qclose(qp.elu(x, 0.0271, 7, 0.5, 1.5, 0.75),
                  torch.ops.quantized.elu(x, 0.0271, 7, 0.5, 1.5, 0.75))


def test_public_names():
    assert set(qnn.__all__) >= {"Quantize", "DeQuantize", "ReLU6", "Hardswish", "ELU",
                                "BatchNorm2d", "BatchNorm3d", "functional", "intrinsic"}
    assert qnni.BNReLU2d.__mro__[1] is qnn.BatchNorm2d
    for cls in (qnn.Quantize, qnn.DeQuantize, qnn.ReLU6, qnn.Hardswish, qnn.ELU,
                qnn.BatchNorm2d, qnn.BatchNorm3d, qnni.BNReLU2d, qnni.BNReLU3d):
        assert cls._version == 1
        assert cls.__doc__ and cls.from_float.__doc__
