"""qplugin.quantization fake quantization and QConfig presets against torch.ao's: FakeQuantize
(per tensor, per channel, float qparams), FusedMovingAvgObsFakeQuantize, FixedQParamsFakeQuantize
-- the same outputs, gradients, qparams and buffers step by step, with the observer / fake-quant
switches; state_dict and TorchScript; every default_* fake quant and qconfig preset and
get_default_qconfig / get_default_qat_qconfig for each backend with the same arguments.
Changes with: qplugin/quantization/{fake_quantize,qconfig}.py.
"""
import io

import pytest
import torch

import qplugin.quantization as qq
from _block_torch_ao import BLOCKED, requires_torch_ao

tq = None if BLOCKED else pytest.importorskip("torch.ao.quantization")

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]

FAKE_QUANTS = ["default_fake_quant", "default_weight_fake_quant", "default_dynamic_fake_quant",
               "default_per_channel_weight_fake_quant", "default_embedding_fake_quant",
               "default_embedding_fake_quant_4bit", "default_histogram_fake_quant",
               "default_fused_act_fake_quant", "default_fused_wt_fake_quant",
               "default_fused_per_channel_wt_fake_quant",
               "fused_wt_fake_quant_range_neg_127_to_127",
               "fused_per_channel_wt_fake_quant_range_neg_127_to_127",
               "default_fixed_qparams_range_neg1to1_fake_quant",
               "default_fixed_qparams_range_0to1_fake_quant"]


def _inputs(seed, n=4):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(6, 5, generator=g) * (1 + i) + 0.2 * i for i in range(n)]


def _same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b), (a, b)


@requires_torch_ao
@pytest.mark.parametrize("name", FAKE_QUANTS)
def test_fake_quant_presets_match_torch_ao(name):
    """Forward (values and gradient), scale / zero_point after each step, and the switches."""
    ours, theirs = getattr(qq, name)(), getattr(tq.fake_quantize, name)()
    assert type(ours).__name__ == type(theirs).__name__
    assert (ours.quant_min, ours.quant_max, ours.dtype, ours.qscheme, ours.ch_axis) == (
        theirs.quant_min, theirs.quant_max, theirs.dtype, theirs.qscheme, theirs.ch_axis)
    for step, x in enumerate(_inputs(3)):
        if step == 2:  # frozen observer: qparams kept
            ours.disable_observer()
            theirs.disable_observer()
        if step == 3:
            ours.disable_fake_quant()
            theirs.disable_fake_quant()
        xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
        ya, yb = ours(xa), theirs(xb)
        _same(ya.detach(), yb.detach())
        (ya * torch.arange(ya.numel()).view_as(ya)).sum().backward()
        (yb * torch.arange(yb.numel()).view_as(yb)).sum().backward()
        _same(xa.grad, xb.grad)
        _same(ours.scale, theirs.scale)
        _same(ours.zero_point, theirs.zero_point)
    sa, sb = ours.state_dict(), theirs.state_dict()
    assert sa.keys() == sb.keys()
    for k in sa:
        _same(sa[k], sb[k])


@requires_torch_ao
@pytest.mark.parametrize("cfg", [
    dict(observer=qq.MovingAverageMinMaxObserver, quant_min=0, quant_max=255),
    dict(observer=qq.MovingAverageMinMaxObserver, quant_min=0, quant_max=255,
         reduce_range=True),
    dict(observer=qq.MinMaxObserver, quant_min=-128, quant_max=127, dtype=torch.qint8,
         qscheme=torch.per_tensor_symmetric),
    dict(observer=qq.MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127,
         dtype=torch.qint8, qscheme=torch.per_channel_symmetric, ch_axis=1),
    dict(observer=qq.HistogramObserver, quant_min=0, quant_max=127),
], ids=lambda c: c["observer"].__name__ + str(sorted(k for k in c if k != "observer")))
def test_fake_quantize_configs_match_torch_ao(cfg):
    theirs_cfg = dict(cfg, observer=getattr(tq, cfg["observer"].__name__))
    ours, theirs = qq.FakeQuantize(**cfg), tq.FakeQuantize(**theirs_cfg)
    for x in _inputs(5) + [torch.zeros(6, 5), torch.full((6, 5), 3.0)]:
        _same(ours(x), theirs(x))
        _same(ours.scale, theirs.scale)
        _same(ours.zero_point, theirs.zero_point)


def test_fused_moving_avg_observer_semantics():
    """FusedMovingAvgObsFakeQuantize (per tensor): the observer is a moving-average one, and
    after each update scale / zero_point equal the observer's own calculate_qparams. (Per
    channel, ATen's fused op rounds its qparams differently from the observer in the last bit --
    torch.ao's behaviour, which qplugin keeps: test_fake_quant_presets_match_torch_ao.)"""
    fq = qq.FusedMovingAvgObsFakeQuantize()
    for x in _inputs(7):
        fq(x)
        s, z = fq.activation_post_process.calculate_qparams()
        _same(fq.scale, s)
        _same(fq.zero_point, z.to(fq.zero_point.dtype))
    assert float(fq.activation_post_process.averaging_constant) == 0.01
    with pytest.raises(TypeError, match="MovingAverageMinMaxObserver"):
        qq.FusedMovingAvgObsFakeQuantize(observer=qq.MinMaxObserver)


def test_fixed_qparams_fake_quant():
    fq = qq.default_fixed_qparams_range_0to1_fake_quant()
    x = torch.tensor([-1.0, 0.0, 0.5, 0.9999, 2.0])
    y = fq(x)
    assert torch.equal(y, torch.tensor([0.0, 0.0, 0.5, 255 / 256, 255 / 256]))
    s, z = fq.calculate_qparams()
    assert float(s) == 1 / 256 and int(z) == 0
    with pytest.raises(TypeError, match="FixedQParamsObserver"):
        qq.FixedQParamsFakeQuantize(observer=qq.MinMaxObserver)


@pytest.mark.parametrize("bad, message", [
    (dict(quant_min=10, quant_max=5), "quant_min <= quant_max"),
    (dict(quant_min=-1, quant_max=255), "within torch.quint8's range"),
    (dict(quant_min=0, quant_max=300, dtype=torch.quint8), "within torch.quint8's range"),
])
def test_fake_quantize_bad_ranges(bad, message):
    with pytest.raises(ValueError, match=message):
        qq.FakeQuantize(**bad)


def test_nan_in_fake_quant_is_a_clear_error():
    x = torch.randn(3, 3)
    x[0, 0] = float("nan")
    for fq in (qq.default_fake_quant(), qq.default_fused_act_fake_quant()):
        with pytest.raises(ValueError, match="without NaN"):
            fq(x)


def test_enable_disable_helpers_apply_to_models():
    m = torch.nn.Sequential(qq.default_fake_quant(), torch.nn.ReLU(),
                            qq.default_fused_wt_fake_quant())
    m.apply(qq.disable_observer)
    m.apply(qq.disable_fake_quant)
    assert all(int(f.observer_enabled) == 0 and int(f.fake_quant_enabled) == 0
               for f in (m[0], m[2]))
    x = torch.randn(4, 4)
    assert torch.equal(m(x), torch.relu(x))  # passes through
    m.apply(qq.enable_observer)
    m.apply(qq.enable_fake_quant)
    assert all(int(f.observer_enabled) == 1 and int(f.fake_quant_enabled) == 1
               for f in (m[0], m[2]))
    assert not torch.equal(m(x), torch.relu(x))
    # scripted fake quants are recognised too
    s = torch.jit.script(qq.default_fake_quant())
    qq.disable_fake_quant(s)
    assert int(s.fake_quant_enabled) == 0


@pytest.mark.parametrize("name", ["default_fake_quant", "default_per_channel_weight_fake_quant",
                                  "default_fused_act_fake_quant",
                                  "default_fixed_qparams_range_0to1_fake_quant"])
def test_fake_quant_torchscript_and_state_dict(name):
    eager, other = getattr(qq, name)(), getattr(qq, name)()
    scripted = torch.jit.script(getattr(qq, name)())
    for x in _inputs(11, 2):
        _same(scripted(x), eager(x))
    buf = io.BytesIO()
    torch.save(eager.state_dict(), buf)
    buf.seek(0)
    other.load_state_dict(torch.load(buf, weights_only=True))
    _same(other.scale, eager.scale)
    _same(other.zero_point, eager.zero_point)


QCONFIGS = ["default_qconfig", "default_per_channel_qconfig", "default_dynamic_qconfig",
            "float16_dynamic_qconfig", "float16_static_qconfig", "per_channel_dynamic_qconfig",
            "float_qparams_weight_only_qconfig", "float_qparams_weight_only_qconfig_4bit",
            "default_qat_qconfig", "default_dynamic_qat_qconfig", "default_weight_only_qconfig",
            "default_activation_only_qconfig", "default_qat_qconfig_v2",
            "default_symmetric_qnnpack_qconfig", "default_per_channel_symmetric_qnnpack_qconfig",
            "default_symmetric_qnnpack_qat_qconfig",
            "default_per_channel_symmetric_qnnpack_qat_qconfig", "default_embedding_qat_qconfig",
            "default_embedding_qat_qconfig_4bit", "default_quint8_weight_qconfig"]


def _describe(ctor):
    m = ctor()
    inner = getattr(m, "activation_post_process", m) if hasattr(m, "fake_quant_enabled") else m
    d = {"class": type(m).__name__, "inner": type(inner).__name__}
    for k in ("dtype", "qscheme", "quant_min", "quant_max", "reduce_range", "is_dynamic",
              "ch_axis", "averaging_constant", "bins"):
        if hasattr(inner, k):
            d[k] = getattr(inner, k)
    if isinstance(getattr(inner, "eps", None), torch.Tensor):
        d["eps"] = float(inner.eps)
    return d


@requires_torch_ao
@pytest.mark.parametrize("name", QCONFIGS)
def test_qconfig_presets_match_torch_ao(name):
    ours, theirs = getattr(qq, name), getattr(tq, name)
    assert isinstance(ours, qq.QConfig) and ours._fields == ("activation", "weight")
    for field in ("activation", "weight"):
        assert _describe(getattr(ours, field)) == _describe(getattr(theirs, field)), field


@requires_torch_ao
@pytest.mark.parametrize("backend", ["x86", "fbgemm", "qnnpack", "onednn"])
@pytest.mark.parametrize("version", [0, 1])
def test_default_qconfigs_per_backend_match_torch_ao(backend, version):
    if version == 0:
        pairs = [(qq.get_default_qconfig(backend), tq.get_default_qconfig(backend))]
    else:
        pairs = []
    pairs.append((qq.get_default_qat_qconfig(backend, version),
                  tq.get_default_qat_qconfig(backend, version)))
    for ours, theirs in pairs:
        for field in ("activation", "weight"):
            assert _describe(getattr(ours, field)) == _describe(getattr(theirs, field))


def test_get_default_qconfig_bad_arguments():
    with pytest.raises(ValueError, match=r"expected backend in \['fbgemm', 'x86', 'qnnpack',"
                                         r" 'onednn'\], got 'arm'"):
        qq.get_default_qconfig("arm")
    with pytest.raises(ValueError, match="version 0"):
        qq.get_default_qconfig("x86", version=1)
    with pytest.raises(ValueError, match="version 0 or 1"):
        qq.get_default_qat_qconfig("x86", version=2)
    with pytest.raises(ValueError, match="got 'arm'"):
        qq.get_default_qat_qconfig("arm")


def test_qconfig_equals():
    assert qq.qconfig_equals(qq.get_default_qconfig("x86"), qq.get_default_qconfig("fbgemm"))
    assert not qq.qconfig_equals(qq.get_default_qconfig("x86"), qq.get_default_qconfig("qnnpack"))
    assert qq.qconfig_equals(None, None) and not qq.qconfig_equals(None, qq.default_qconfig)
