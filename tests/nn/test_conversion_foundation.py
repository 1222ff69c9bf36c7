"""Tests of qplugin.quantization.convert on models prepared with torch.ao.quantization.prepare:
same structure and outputs (within 1 unit, >= 99% identical) as torch.ao.quantization.convert,
hooks/qconfig/observer handling, TorchScript of the converted model.
"""
import copy
import sys

import pytest
import torch

import torch.ao.nn.intrinsic.quantized as nniq  # noqa: E402
import torch.ao.nn.quantized as nnq  # noqa: E402
import torch.ao.quantization as tq  # noqa: E402
from torch import nn  # noqa: E402

import qplugin  # noqa: E402
import qplugin.quantization  # noqa: E402
from qplugin import nn as qnn  # noqa: E402
from qplugin.nn import intrinsic as qnni  # noqa: E402
from _module_cases import CHAINS, Chain2d, prepare_chain, x86_engine  # noqa: E402,F401

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]

# torch.ao.nn.quantized class -> the qplugin class convert() must produce in its place.
TORCH_TO_QPLUGIN = {
    nnq.Quantize: qnn.Quantize,
    nnq.DeQuantize: qnn.DeQuantize,
    nnq.ReLU6: qnn.ReLU6,
    nnq.Hardswish: qnn.Hardswish,
    nnq.ELU: qnn.ELU,
    nnq.BatchNorm2d: qnn.BatchNorm2d,
    nnq.BatchNorm3d: qnn.BatchNorm3d,
    nniq.BNReLU2d: qnni.BNReLU2d,
    nniq.BNReLU3d: qnni.BNReLU3d,
}


SHAPES = {key: shape for key, (_, shape) in CHAINS.items()}


def _make_prepared(key, seed=21):
    torch.manual_seed(seed)
    model = CHAINS[key][0]().eval()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-1, 1)
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2)
    return prepare_chain(model, SHAPES[key], seed)


@pytest.fixture(scope="module", params=["2d", "3d"])
def converted(request):
    """(key, prepared, torch.ao.quantization.convert(prepared), qplugin convert(prepared))"""
    prepared = _make_prepared(request.param)
    return (request.param, prepared, tq.convert(prepared),
            qplugin.quantization.convert(prepared))


def _last_quantized_output(model, x):
    """The quantized tensor entering the final DeQuantize."""
    seen = {}
    h = model.dequant.register_forward_pre_hook(lambda m, args: seen.setdefault("x", args[0]))
    try:
        y = model(x)
    finally:
        h.remove()
    return seen["x"], y


def test_structure_matches_torch_convert(converted):
    _, prepared, ref, got = converted
    ref_mods, got_mods = dict(ref.named_modules()), dict(got.named_modules())
    assert ref_mods.keys() == got_mods.keys()
    for name, r in ref_mods.items():
        g = got_mods[name]
        expected = TORCH_TO_QPLUGIN.get(type(r), type(r))
        assert type(g) is expected, name
        assert not hasattr(g, "qconfig") and not hasattr(g, "activation_post_process"), name
        assert not g._forward_hooks and not g._forward_pre_hooks, name
    for name, r in ref_mods.items():
        if hasattr(r, "scale"):
            g = got_mods[name]
            assert (float(g.scale), int(g.zero_point)) == (float(r.scale), int(r.zero_point)), name
    # convert(inplace=False) leaves the prepared model alone
    assert hasattr(prepared.quant, "activation_post_process")
    assert type(prepared.bn) is nn.BatchNorm2d or type(prepared.bn) is nn.BatchNorm3d


def test_outputs_match_torch_convert(converted):
    key, _, ref, got = converted
    g = torch.Generator().manual_seed(5)
    for scale in (1.0, 2.0, 4.0):  # in range, and mostly saturated at the Quantize
        x = torch.randn(SHAPES[key], generator=g) * scale
        qr, yr = _last_quantized_output(ref, x)
        qg, yg = _last_quantized_output(got, x)
        assert (qg.dtype, qg.q_scale(), qg.q_zero_point()) == (
            qr.dtype, qr.q_scale(), qr.q_zero_point())
        d = (qg.int_repr().long() - qr.int_repr().long()).abs()
        assert int(d.max()) <= 1 and float((d != 0).double().mean()) <= 0.01, (
            int(d.max()), float((d != 0).double().mean()))
        assert torch.allclose(yg, yr, rtol=0, atol=qr.q_scale() * 1.0001)


def test_scripted_converted_model(converted, tmp_path):
    key, _, _, got = converted
    x = torch.randn(SHAPES[key], generator=torch.Generator().manual_seed(6)) * 2
    expected = got(x)
    scripted = torch.jit.script(got)
    assert torch.equal(scripted(x), expected)
    path = str(tmp_path / "converted.pt")
    torch.jit.save(scripted, path)
    loaded = torch.jit.load(path)
    assert torch.equal(loaded(x), expected)
    # the graph calls qplugin ops only (no torch.ops.quantized)
    code = "\n".join(m.code for m in loaded.modules() if hasattr(m, "code"))
    assert "qplugin." in code and "quantized." not in code


def test_inplace_and_remove_qconfig():
    prepared = _make_prepared("2d")
    out = qplugin.quantization.convert(prepared, inplace=True)
    assert out is prepared and type(prepared.bn) is qnn.BatchNorm2d
    assert type(prepared.block[0]) is qnn.ELU
    prepared = _make_prepared("2d")
    kept = qplugin.quantization.convert(prepared, remove_qconfig=False)
    assert kept.qconfig is not None
    # qconfig attributes stay on the unswapped modules (as torch's convert with
    # remove_qconfig=False); swapped ones are new modules without a qconfig.
    assert hasattr(kept, "qconfig") and hasattr(kept.block, "qconfig")


def test_user_hooks_survive_observer_hooks_do_not():
    prepared = _make_prepared("2d")
    calls = []
    prepared.hardswish.register_forward_hook(lambda m, i, o: calls.append(("post", o.dtype)))
    prepared.hardswish.register_forward_pre_hook(lambda m, i: calls.append(("pre", i[0].dtype)))
    got = qplugin.quantization.convert(prepared)
    assert len(got.hardswish._forward_hooks) == 1 and len(got.hardswish._forward_pre_hooks) == 1
    got(torch.randn(SHAPES["2d"]))
    assert calls == [("pre", torch.quint8), ("post", torch.quint8)]


def test_mapping_argument():
    prepared = _make_prepared("2d")

    class MyReLU6(nn.Module):  # from_float without use_precomputed_fake_quant
        @classmethod
        def from_float(cls, mod):
            return cls()

        def forward(self, x):
            return torch.ops.qplugin.relu6(x, False)

    mapping = qplugin.quantization.get_default_static_quant_module_mappings()
    mapping[nn.ReLU6] = MyReLU6
    got = qplugin.quantization.convert(prepared, mapping)
    assert type(got.relu6) is MyReLU6
    got(torch.randn(SHAPES["2d"]))
    # the default mapping itself is untouched
    assert qplugin.quantization.DEFAULT_STATIC_QUANT_MODULE_MAPPINGS[nn.ReLU6] is qnn.ReLU6
    # modules whose class is not mapped stay as they are (here: everything but the stubs)
    only_stubs = {tq.QuantStub: qnn.Quantize, tq.DeQuantStub: qnn.DeQuantize}
    got = qplugin.quantization.convert(prepared, only_stubs)
    assert type(got.quant) is qnn.Quantize and type(got.bn) is nn.BatchNorm2d
    assert not hasattr(got.bn, "activation_post_process")


def test_no_qconfig_no_swap():
    torch.manual_seed(0)
    model = Chain2d().eval()
    model.qconfig = tq.get_default_qconfig("x86")
    model.hardswish.qconfig = None
    prepared = tq.prepare(model)
    prepared(torch.randn(SHAPES["2d"]))
    ref, got = tq.convert(prepared), qplugin.quantization.convert(prepared)
    assert type(ref.hardswish) is nn.Hardswish and type(got.hardswish) is nn.Hardswish


def test_does_not_call_torch_convert(monkeypatch):
    prepared = _make_prepared("2d")

    def forbidden(*args, **kwargs):
        raise AssertionError("qplugin.quantization.convert called torch's convert")

    # (the package attribute torch.ao.quantization.quantize is the function; take the module)
    tq_quantize = sys.modules["torch.ao.quantization.quantize"]
    for name in ("convert", "_convert", "swap_module"):
        monkeypatch.setattr(tq_quantize, name, forbidden)
    monkeypatch.setattr(tq, "convert", forbidden)
    got = qplugin.quantization.convert(prepared)
    assert type(got.bn2) is qnni.BNReLU2d


def test_bad_arguments():
    with pytest.raises(TypeError, match=r"qplugin.quantization.convert: expected a"
                                        r" torch.nn.Module, got dict"):
        qplugin.quantization.convert({})
    with pytest.raises(TypeError, match=r"expected mapping to be a dict"):
        qplugin.quantization.convert(nn.Sequential(), mapping=[(nn.ReLU6, qnn.ReLU6)])


def test_deepcopy_and_pickle_of_converted_model():
    import io
    got = qplugin.quantization.convert(_make_prepared("2d"))
    x = torch.randn(SHAPES["2d"])
    expected = got(x)
    assert torch.equal(copy.deepcopy(got)(x), expected)
    buf = io.BytesIO()
    torch.save(got, buf)
    buf.seek(0)
    assert torch.equal(torch.load(buf, weights_only=False)(x), expected)
    # state_dict round trip into a freshly converted model with other calibration
    other = qplugin.quantization.convert(_make_prepared("2d", seed=99))
    assert not torch.equal(other(x), expected)
    other.load_state_dict(got.state_dict())
    assert torch.equal(other(x), expected)
