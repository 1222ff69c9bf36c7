"""qplugin.nn LayerNorm, GroupNorm, InstanceNorm1d/2d/3d (qplugin/nn/modules/normalization.py):
from_float through torch.ao.quantization prepare/convert, parity with torch.ao.nn.quantized,
state_dict / torch.save / copy / TorchScript round trips, the versioned checkpoint fixture, pinned
reprs and clear errors.

Regenerate the fixture (only when adding a state-dict version):
    python tests/normalization/test_normalization_modules.py --write-fixture
"""
import copy
import io
import os
import sys

import expecttest  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
import torch.ao.nn.quantized as nnq  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.ao.quantization import DeQuantStub, QuantStub  # noqa: E402

from _normalization_testutil import (assert_q, exact, one_thread, pytestmark,  # noqa: E402,F401
                                     qtensor)
from qplugin.nn import _functional_normalization as qF  # noqa: E402
from qplugin.nn.modules import normalization as qnn  # noqa: E402

FIXTURE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures",
                       "normalization", "normalization_modules_v1.pt")

# The float -> qplugin module mapping the lead adds to qplugin.quantization.
QPLUGIN_MAPPING = {nn.LayerNorm: qnn.LayerNorm, nn.GroupNorm: qnn.GroupNorm,
                   nn.InstanceNorm1d: qnn.InstanceNorm1d, nn.InstanceNorm2d: qnn.InstanceNorm2d,
                   nn.InstanceNorm3d: qnn.InstanceNorm3d}


def _float_cases():
    """(name, float module, input shape); affine params randomized, running stats set."""
    g = torch.Generator().manual_seed(0)

    def rand_affine(m):
        with torch.no_grad():
            for p in (getattr(m, "weight", None), getattr(m, "bias", None)):
                if p is not None:
                    p.copy_(torch.randn(p.shape, generator=g))
            if getattr(m, "running_mean", None) is not None:
                m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=g) * 0.3)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=g) + 0.5)
        return m

    return [
        ("layer_norm", rand_affine(nn.LayerNorm(64)), (4, 10, 64)),
        ("layer_norm_2d_shape", rand_affine(nn.LayerNorm([6, 16])), (3, 6, 16)),
        ("layer_norm_no_affine", nn.LayerNorm(32, elementwise_affine=False), (5, 32)),
        ("layer_norm_no_bias", rand_affine(nn.LayerNorm(32, bias=False)), (5, 32)),
        ("group_norm", rand_affine(nn.GroupNorm(4, 16)), (2, 16, 9, 9)),
        ("group_norm_no_affine", nn.GroupNorm(2, 8, affine=False), (2, 8, 20)),
        ("instance_norm1d", rand_affine(nn.InstanceNorm1d(8, affine=True)), (3, 8, 40)),
        ("instance_norm2d", nn.InstanceNorm2d(8), (2, 8, 12, 12)),
        ("instance_norm3d", rand_affine(nn.InstanceNorm3d(4, affine=True)), (2, 4, 5, 6, 7)),
        ("instance_norm2d_running_stats",
         rand_affine(nn.InstanceNorm2d(8, affine=True, track_running_stats=True)), (2, 8, 10, 10)),
    ]


class _Wrapped(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.quant = QuantStub()
        self.norm = inner
        self.dequant = DeQuantStub()

    def forward(self, x):
        return self.dequant(self.norm(self.quant(x)))


def _convert(fmod, shape):
    """prepare -> calibrate -> convert, once with qplugin's mapping and once with torch.ao's."""
    torch.backends.quantized.engine = "x86"
    m = _Wrapped(copy.deepcopy(fmod)).eval()
    m.qconfig = torch.ao.quantization.get_default_qconfig("x86")
    prepared = torch.ao.quantization.prepare(m)
    g = torch.Generator().manual_seed(1)
    for _ in range(3):
        prepared(torch.randn(shape, generator=g) * 2 + 0.5)
    mapping = dict(torch.ao.quantization.quantization_mappings.get_default_static_quant_module_mappings())
    ours = torch.ao.quantization.convert(copy.deepcopy(prepared), mapping={**mapping, **QPLUGIN_MAPPING})
    theirs = torch.ao.quantization.convert(copy.deepcopy(prepared), mapping=mapping)
    return ours, theirs


@pytest.mark.parametrize("case", range(len(_float_cases())))
def test_prepare_convert_matches_torch_ao(case):
    name, fmod, shape = _float_cases()[case]
    ours, theirs = _convert(fmod, shape)
    assert type(ours.norm) is QPLUGIN_MAPPING[type(fmod)]
    q = ours.norm
    x = ours.quant(torch.randn(shape, generator=torch.Generator().manual_seed(2)) * 2 + 0.5)
    y = q(x)
    s, z = float(q.scale), int(q.zero_point)
    if getattr(fmod, "track_running_stats", False):
        # Eval-mode float semantics (running statistics); torch.ao drops them, so compare with
        # the exact reference of the float module instead.
        rm, rv = fmod.running_mean.double(), fmod.running_var.double()
        want = exact(lambda t: F.batch_norm(t, rm, rv, fmod.weight.double(), fmod.bias.double(),
                                            False, 0.0, fmod.eps), x, s, z)
        assert_q(y, want, s, z, what=name)
        assert q.track_running_stats and torch.equal(q.running_mean, fmod.running_mean)
        return
    ref = theirs.norm(x)
    assert ref.q_scale() == pytest.approx(s) and ref.q_zero_point() == z
    assert_q(y, ref.int_repr(), s, z, what=name)
    # And the whole converted model end to end (quantize -> norm -> dequantize).
    xf = torch.randn(shape, generator=torch.Generator().manual_seed(3))
    assert torch.allclose(ours(xf), theirs(xf), atol=s * 1.01, rtol=0)


def _qmodules():
    out = []
    for name, fmod, shape in _float_cases():
        ours, _ = _convert(fmod, shape)
        x = ours.quant(torch.randn(shape, generator=torch.Generator().manual_seed(4)))
        out.append((name, ours.norm, x))
    return out


def test_state_dict_round_trip_and_copies():
    for name, m, x in _qmodules():
        y = m(x)
        sd = m.state_dict()
        assert sd["scale"].dtype == torch.float64 and sd["zero_point"].dtype == torch.int64
        # A module with other parameters takes the state dict and computes the same bytes.
        fresh = copy.deepcopy(m)
        with torch.no_grad():
            fresh.scale.fill_(0.5)
            fresh.zero_point.fill_(3)
            if fresh.weight is not None:
                fresh.weight.mul_(2)
        fresh.load_state_dict(sd)
        assert torch.equal(fresh(x).int_repr(), y.int_repr()), name
        for c in (copy.deepcopy(m), copy.copy(m)):
            assert torch.equal(c(x).int_repr(), y.int_repr()), name
        buf = io.BytesIO()
        torch.save(m, buf)
        buf.seek(0)
        loaded = torch.load(buf, weights_only=False)
        assert type(loaded) is type(m) and torch.equal(loaded(x).int_repr(), y.int_repr()), name


def test_torchscript_save_load():
    for name, m, x in _qmodules():
        y = m(x)
        scripted = torch.jit.script(m)
        assert "qplugin" in scripted.code and "quantized." not in scripted.code, scripted.code
        buf = io.BytesIO()
        torch.jit.save(scripted, buf)
        buf.seek(0)
        loaded = torch.jit.load(buf)
        assert torch.equal(loaded(x).int_repr(), y.int_repr()), name
        assert torch.equal(loaded.state_dict()["scale"], m.state_dict()["scale"])


def test_loads_torch_ao_state_dict():
    # torch.ao.nn.quantized's layout (float32 scale buffer) loads into the qplugin module.
    w, b = torch.randn(32), torch.randn(32)
    theirs = nnq.LayerNorm(32, nn.Parameter(w), nn.Parameter(b), 0.07, 120)
    ours = qnn.LayerNorm(32, torch.ones(32), torch.zeros(32), 1.0, 0)
    ours.load_state_dict(theirs.state_dict())
    x = qtensor((6, 32), seed=5)
    assert float(ours.scale) == pytest.approx(0.07) and int(ours.zero_point) == 120
    assert_q(ours(x), theirs(x), float(ours.scale), 120)
    theirs_in = nnq.InstanceNorm2d(8, nn.Parameter(torch.randn(8)), nn.Parameter(torch.randn(8)),
                                   0.05, 128, affine=True)
    ours_in = qnn.InstanceNorm2d(8, torch.ones(8), torch.zeros(8), 1.0, 0, affine=True)
    ours_in.load_state_dict(theirs_in.state_dict())
    x = qtensor((2, 8, 6, 6), seed=6)
    assert_q(ours_in(x), theirs_in(x), float(ours_in.scale), 128)


def test_newer_state_dict_version_is_refused():
    m = qnn.GroupNorm(2, 4, torch.ones(4), torch.zeros(4), 0.1, 10)
    sd = m.state_dict()
    sd._metadata[""]["version"] = 99
    with pytest.raises(RuntimeError, match="saved by a newer qplugin"):
        m.load_state_dict(sd)


def _fixture_entries():
    """What the v1 fixture holds: constructor args, state dict, an input and its output."""
    entries = {}
    for name, m, x in _qmodules():
        entries[name] = {"class": type(m).__name__, "state_dict": m.state_dict(), "input": x,
                         "output": m(x), "config": _config(m)}
    return entries


def _config(m):
    if isinstance(m, qnn.LayerNorm):
        return {"normalized_shape": list(m.normalized_shape), "eps": m.eps,
                "elementwise_affine": m.elementwise_affine}
    if isinstance(m, qnn.GroupNorm):
        return {"num_groups": m.num_groups, "num_channels": m.num_channels, "eps": m.eps,
                "affine": m.affine}
    return {"num_features": m.num_features, "eps": m.eps, "affine": m.affine,
            "track_running_stats": m.track_running_stats}


def _build(cls_name, config, sd):
    cls = getattr(qnn, cls_name)
    w, b = sd.get("weight"), sd.get("bias")
    if cls is qnn.LayerNorm:
        return cls(config["normalized_shape"], w, b, 1.0, 0, config["eps"],
                   config["elementwise_affine"])
    if cls is qnn.GroupNorm:
        return cls(config["num_groups"], config["num_channels"], w, b, 1.0, 0, config["eps"],
                   config["affine"])
    return cls(config["num_features"], w, b, 1.0, 0, config["eps"], 0.1, config["affine"],
               config["track_running_stats"])


def test_fixture_v1_loads():
    entries = torch.load(FIXTURE, weights_only=False)
    assert set(entries) == {name for name, _, _ in _float_cases()}
    for name, e in entries.items():
        m = _build(e["class"], e["config"], e["state_dict"])
        m.load_state_dict(e["state_dict"])
        out = e["output"]
        assert_q(m(e["input"]), out, out.q_scale(), out.q_zero_point(), min_identical=0.99,
                 what=name)


def test_instance_norm_ranks_and_unbatched():
    for cls, rank in ((qnn.InstanceNorm1d, 3), (qnn.InstanceNorm2d, 4), (qnn.InstanceNorm3d, 5)):
        m = cls(4, torch.randn(4), torch.randn(4), 0.05, 128, affine=True)
        shape = (2, 4) + (5,) * (rank - 2)
        x = qtensor(shape, seed=rank)
        batched = m(x)
        assert torch.equal(m(x[1]).int_repr(), batched[1].int_repr())  # unbatched input
        for bad in (rank - 2, rank + 1):
            xb = qtensor((4,) * bad, seed=1)
            with pytest.raises(ValueError, match=f"qplugin.nn.{cls.__name__}: expected .* got "
                                                 f"{bad}-D"):
                m(xb)
        with pytest.raises(Exception, match=f"got {rank + 1}-D"):  # TorchScript raises too
            torch.jit.script(m)(qtensor((4,) * (rank + 1), seed=1))


def test_constructor_and_from_float_errors():
    with pytest.raises(ValueError, match="qplugin.nn.LayerNorm: expected weight of shape \\[8\\]"):
        qnn.LayerNorm(8, torch.ones(7), None, 0.1, 0)
    # GroupNorm: num_channels is metadata (as PyTorch); bias is checked against the input.
    gn = qnn.GroupNorm(2, 6, None, torch.ones(4), 0.1, 0)
    with pytest.raises(RuntimeError, match="qplugin::group_norm: expected bias"):
        gn(qtensor((1, 6, 3, 3)))
    with pytest.raises(ValueError, match="expected a finite, positive scale, got nan"):
        qnn.InstanceNorm2d(3, None, None, float("nan"), 0)
    with pytest.raises(ValueError, match="expected a finite, positive scale, got 0.0"):
        qnn.GroupNorm(1, 3, None, None, 0.0, 0)
    with pytest.raises(TypeError, match="expected weight to be a floating-point tensor or None"):
        qnn.LayerNorm(3, torch.ones(3, dtype=torch.long), None, 0.1, 0)
    with pytest.raises(ValueError, match="activation_post_process observer"):
        qnn.LayerNorm.from_float(nn.LayerNorm(4))
    with pytest.raises(TypeError, match="expected an observed torch.nn.modules.normalization.GroupNorm"):
        qnn.GroupNorm.from_float(nn.LayerNorm(4))
    # Errors of the op surface through the module (channels not divisible by groups).
    m = qnn.GroupNorm(2, 4, None, None, 0.1, 0, affine=False)
    with pytest.raises(RuntimeError, match="qplugin::group_norm: expected the number of channels"):
        m(qtensor((1, 5, 3, 3)))


def test_functional_forms():
    x = qtensor((2, 8, 6, 6), seed=9)
    w, b = torch.randn(8), torch.randn(8)
    assert torch.equal(qF.group_norm(x, 2, w, b, 1e-5, scale=0.05, zero_point=128).int_repr(),
                       torch.ops.qplugin.group_norm(x, 2, w, b, 1e-5, 0.05, 128).int_repr())
    assert torch.equal(qF.instance_norm(x, scale=0.05, zero_point=128).int_repr(),
                       torch.ops.qplugin.instance_norm(x, None, None, 1e-5, 0.05, 128).int_repr())
    assert torch.equal(qF.layer_norm(x, [6, 6], scale=0.05, zero_point=128).int_repr(),
                       torch.ops.qplugin.layer_norm(x, [6, 6], None, None, 1e-5, 0.05,
                                                    128).int_repr())
    with pytest.raises(TypeError):
        qF.layer_norm(x, [6])  # scale and zero_point are required
    scripted = torch.jit.script(qF.layer_norm)
    assert torch.equal(scripted(x, [6], scale=0.05, zero_point=128).int_repr(),
                       qF.layer_norm(x, [6], scale=0.05, zero_point=128).int_repr())


class TestReprs(expecttest.TestCase):
    def test_reprs(self):
        w8, b8 = torch.ones(8), torch.zeros(8)
        self.assertExpectedInline(
            repr(qnn.LayerNorm(768, torch.ones(768), torch.zeros(768), 0.125, 128)), """QuantizedLayerNorm((768,), eps=1e-05, elementwise_affine=True, bias=True, scale=0.125, zero_point=128)""")
        self.assertExpectedInline(
            repr(qnn.LayerNorm([4, 5], None, None, 0.5, 0, eps=1e-6, elementwise_affine=False)),
            """QuantizedLayerNorm((4, 5), eps=1e-06, elementwise_affine=False, bias=False, scale=0.5, zero_point=0)""")
        self.assertExpectedInline(repr(qnn.GroupNorm(2, 8, w8, b8, 0.25, 3)), """QuantizedGroupNorm(2, 8, eps=1e-05, affine=True, bias=True, scale=0.25, zero_point=3)""")
        self.assertExpectedInline(
            repr(qnn.InstanceNorm1d(8, None, None, 0.1, 0)), """QuantizedInstanceNorm1d(8, eps=1e-05, momentum=0.1, affine=False, bias=False, track_running_stats=False, scale=0.1, zero_point=0)""")
        self.assertExpectedInline(
            repr(qnn.InstanceNorm2d(8, w8, b8, 0.1, -5, affine=True)), """QuantizedInstanceNorm2d(8, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=False, scale=0.1, zero_point=-5)""")
        self.assertExpectedInline(
            repr(qnn.InstanceNorm3d(8, w8, b8, 0.1, 7, affine=True, track_running_stats=True)),
            """QuantizedInstanceNorm3d(8, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True, scale=0.1, zero_point=7)""")


def _write_fixture():
    os.makedirs(os.path.dirname(FIXTURE), exist_ok=True)
    torch.save(_fixture_entries(), FIXTURE)
    print(f"wrote {FIXTURE}")


if __name__ == "__main__":
    if "--write-fixture" in sys.argv:
        _write_fixture()
    else:
        sys.exit(pytest.main([__file__, "-q"]))
