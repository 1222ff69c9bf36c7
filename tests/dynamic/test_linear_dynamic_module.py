# qplugin.nn.dynamic.Linear / LinearReLU (≙ torch.ao.nn.quantized.dynamic.Linear, torch.ao.nn
# .intrinsic.quantized.dynamic.LinearReLU): from_float with the dynamic qconfigs, from_reference,
# weight()/bias(), repr, state dict in torch.ao's layout (both directions), TorchScript, torch.save.
import copy
import io

import pytest
import torch

import qplugin
import qplugin.quantization as qq
from qplugin.nn import dynamic as qnnd
from _dyn_reference import linear_dynamic_exact, torch_ao_dynamic
from _reference import using_isa


def float_linear(K=24, N=12, bias=True, seed=0):
    torch.manual_seed(seed)
    return torch.nn.Linear(K, N, bias=bias).eval()


QCONFIGS = ["default_dynamic_qconfig", "per_channel_dynamic_qconfig", "float16_dynamic_qconfig"]


@pytest.mark.parametrize("qconfig", QCONFIGS)
@pytest.mark.parametrize("bias", [True, False])
def test_from_float_exact(isa, qconfig, bias):
    m = float_linear(bias=bias)
    m.qconfig = getattr(qq, qconfig)
    dm = qnnd.Linear.from_float(m)
    x = torch.randn(5, 3, 24)
    y = dm(x)
    assert y.shape == (5, 3, 12) and y.dtype == torch.float32
    if qconfig == "float16_dynamic_qconfig":
        assert dm.weight().dtype == torch.float32
        ref = torch.nn.functional.linear(x.double(), m.weight.half().double(),
                                         None if m.bias is None else m.bias.double()).float()
        torch.testing.assert_close(y, ref, rtol=1e-5, atol=1e-5)
    else:
        assert dm.weight().dtype == torch.qint8
        ref = linear_dynamic_exact(x, dm.weight(), dm.bias(), reduce_range=True)
        assert (y == ref).float().mean() >= 0.99
        torch.testing.assert_close(y, ref, rtol=1e-4, atol=1e-4)
    # int8 error against the float layer.
    assert (y - m(x)).abs().max() < 0.05


@pytest.mark.parametrize("qconfig", QCONFIGS)
def test_parity_with_torch_ao(qconfig):
    nnqd, tq = torch_ao_dynamic()
    if nnqd is None:
        pytest.skip("torch.ao unavailable")
    m = float_linear(K=64, N=48)
    m.qconfig = getattr(tq, qconfig)
    theirs = nnqd.Linear.from_float(m)
    m.qconfig = getattr(qq, qconfig)
    ours = qnnd.Linear.from_float(m)
    assert repr(ours) == repr(theirs)
    x = torch.randn(16, 64) * 3
    torch.testing.assert_close(ours(x), theirs(x), rtol=1e-4, atol=1e-4)
    if qconfig != "float16_dynamic_qconfig":
        assert torch.equal(ours.weight().int_repr(), theirs.weight().int_repr())
    # torch.ao's state dict loads into qplugin's module and back.
    fresh = qnnd.Linear(64, 48, dtype=ours._packed_params.dtype)
    fresh.load_state_dict(theirs.state_dict())
    torch.testing.assert_close(fresh(x), ours(x), rtol=0, atol=0)
    back = nnqd.Linear(64, 48, dtype=ours._packed_params.dtype)
    back.load_state_dict(ours.state_dict())
    torch.testing.assert_close(back(x), theirs(x), rtol=0, atol=0)
    assert set(ours.state_dict()) == set(theirs.state_dict())


def test_linear_relu_from_fused():
    from qplugin.quantization.fused import LinearReLU as FusedLinearReLU
    lin = float_linear()
    fused = FusedLinearReLU(lin, torch.nn.ReLU()).eval()
    fused.qconfig = qq.default_dynamic_qconfig
    dm = qnnd.LinearReLU.from_float(fused)
    assert dm._get_name() == "DynamicQuantizedLinearReLU"
    x = torch.randn(7, 24)
    plain = qnnd.Linear.from_float(fused)
    assert torch.equal(dm(x), plain(x).relu())


def test_from_reference():
    nnqd, tq = torch_ao_dynamic()
    if nnqd is None:
        pytest.skip("torch.ao unavailable")
    import torch.ao.nn.quantized.reference as nnqr
    m = float_linear()
    wqp = {"qscheme": torch.per_tensor_affine, "dtype": torch.qint8, "scale": 0.01,
           "zero_point": 0}
    ref = nnqr.Linear.from_float(m, wqp)
    dm = qnnd.Linear.from_reference(ref)
    assert torch.equal(dm.weight().int_repr(), ref.get_quantized_weight().int_repr())
    x = torch.randn(3, 24)
    theirs = nnqd.Linear.from_reference(ref)
    torch.testing.assert_close(dm(x), theirs(x), rtol=1e-4, atol=1e-4)


def test_state_dict_roundtrip_and_versions():
    m = float_linear()
    m.qconfig = qq.per_channel_dynamic_qconfig
    dm = qnnd.Linear.from_float(m)
    sd = dm.state_dict()
    assert set(sd) == {"scale", "zero_point", "_packed_params.dtype",
                       "_packed_params._packed_params"}
    other = qnnd.Linear(1, 1)
    other.load_state_dict(sd)
    assert (other.in_features, other.out_features) == (24, 12)
    x = torch.randn(4, 24)
    assert torch.equal(other(x), dm(x))
    # A version-3 checkpoint (torch.ao before reduce_range) runs without reduce_range.
    sd3 = copy.copy(sd)
    sd3._metadata = copy.deepcopy(sd._metadata)
    sd3._metadata[""]["version"] = 3
    old = qnnd.Linear(24, 12)
    old.load_state_dict(sd3)
    w, b = dm.weight(), dm.bias()
    torch.testing.assert_close(old(x), linear_dynamic_exact(x, w, b, reduce_range=False),
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("qconfig", QCONFIGS)
def test_torchscript_and_save(qconfig, tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(20, 30), torch.nn.ReLU(),
                                torch.nn.Linear(30, 5)).eval()
    dtype = torch.float16 if "float16" in qconfig else torch.qint8
    qm = qq.quantize_dynamic(model, {torch.nn.Linear: getattr(qq, qconfig)}, dtype=dtype)
    x = torch.randn(6, 20)
    y = qm(x)
    sm = torch.jit.script(qm)
    assert torch.equal(sm(x), y)
    path = tmp_path / "m.pt"
    torch.jit.save(sm, str(path))
    loaded = torch.jit.load(str(path))
    assert torch.equal(loaded(x), y)
    buf = io.BytesIO()
    torch.save(qm, buf)
    buf.seek(0)
    again = torch.load(buf, weights_only=False)
    assert torch.equal(again(x), y)
    assert torch.equal(copy.deepcopy(qm)(x), y)


def test_bad_constructor_and_from_float():
    with pytest.raises(ValueError, match=r"qplugin.nn.dynamic.Linear: expected dtype torch.qint8 "
                                         r"or torch.float16, got torch.quint8"):
        qnnd.Linear(4, 4, dtype=torch.quint8)
    with pytest.raises(TypeError, match=r"qplugin.nn.dynamic.Linear.from_float: expected"):
        c = torch.nn.Conv2d(1, 1, 1)
        c.qconfig = qq.default_dynamic_qconfig
        qnnd.Linear.from_float(c)
    m = torch.nn.Linear(4, 4)
    with pytest.raises(ValueError, match=r"expected a module with a qconfig"):
        qnnd.Linear.from_float(m)
    dm = qnnd.Linear(4, 3)
    with pytest.raises(RuntimeError, match=r"qplugin::linear_dynamic: expected input with "
                                           r"in_features = 4"):
        dm(torch.randn(2, 5))
