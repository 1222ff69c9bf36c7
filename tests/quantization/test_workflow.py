"""The qplugin.quantization workflow end to end: fuse_modules / fuse_modules_qat against
torch.ao's (same float outputs, same converted outputs), prepare / propagate_qconfig_ /
add_quant_dequant / QuantWrapper, prepare_qat + training + convert against torch.ao's QAT
(the same numbers step by step), TorchScript of the result, bad inputs, and `python -m qplugin`
with torch.ao blocked (its torch.ao row n/a). The tests without torch.ao comparisons run in
legacy-blocked mode too (tools/test.sh). Changes with: qplugin/quantization.
"""
import copy
import os
import subprocess
import sys
import textwrap

import pytest
import torch
from torch import nn

import qplugin.quantization as qq
from qplugin import nn as qnn
from qplugin.nn import intrinsic as qnni
from _block_torch_ao import BLOCKED, requires_torch_ao
from _factory import tiny_factory_source

tq = None if BLOCKED else pytest.importorskip("torch.ao.quantization")

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.filterwarnings("ignore::FutureWarning")]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Net(nn.Module):
    """Every fusion pattern: conv-bn-relu, conv-bn, conv-relu (1d, 2d, 3d), bn-relu, linear-bn,
    linear-relu, convtranspose-bn (eval only)."""

    def __init__(self, transpose=False):
        super().__init__()
        self.quant = qq.QuantStub()
        self.c1, self.b1, self.r1 = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU()
        self.c2, self.b2 = nn.Conv2d(8, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8)
        self.c3, self.r3 = nn.Conv2d(8, 8, 1), nn.ReLU()
        self.b4, self.r4 = nn.BatchNorm2d(8), nn.ReLU()
        # (Identity when not used: one forward for TorchScript)
        self.t5 = nn.ConvTranspose2d(8, 8, 2, stride=2) if transpose else nn.Identity()
        self.b5 = nn.BatchNorm2d(8) if transpose else nn.Identity()
        self.pool = nn.AdaptiveAvgPool2d(2)
        self.l6, self.b6 = nn.Linear(32, 16), nn.BatchNorm1d(16)
        self.l7, self.r7 = nn.Linear(16, 10), nn.ReLU()
        self.c8, self.b8, self.r8 = nn.Conv1d(1, 2, 3, padding=1), nn.BatchNorm1d(2), nn.ReLU()
        self.dequant = qq.DeQuantStub()
        g = torch.Generator().manual_seed(1)
        for m in self.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                with torch.no_grad():
                    m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
                    m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
                    m.weight.copy_(torch.rand(m.num_features, generator=g) + 0.5)
                    m.bias.copy_(torch.randn(m.num_features, generator=g) * 0.1)

    def forward(self, x):
        x = self.quant(x)
        x = self.r1(self.b1(self.c1(x)))
        x = self.b2(self.c2(x))
        x = self.r3(self.c3(x))
        x = self.r4(self.b4(x))
        x = self.b5(self.t5(x))
        x = torch.flatten(self.pool(x), 1)
        x = self.r7(self.l7(self.b6(self.l6(x))))
        x = self.r8(self.b8(self.c8(x.unsqueeze(1))))
        return self.dequant(x)

    FUSE = [["c1", "b1", "r1"], ["c2", "b2"], ["c3", "r3"], ["b4", "r4"], ["l6", "b6"],
            ["l7", "r7"], ["c8", "b8", "r8"]]


def _x(seed, n=4):
    return torch.randn(n, 3, 8, 8, generator=torch.Generator().manual_seed(seed))


def _names(model):
    return [(n, type(m).__name__) for n, m in model.named_modules()]


@requires_torch_ao
@pytest.mark.parametrize("transpose", [False, True])
def test_fuse_modules_matches_torch_ao(transpose):
    torch.manual_seed(0)
    m = Net(transpose).eval()
    groups = Net.FUSE + ([["t5", "b5"]] if transpose else [])
    ours, theirs = qq.fuse_modules(m, groups), tq.fuse_modules(m, groups)
    assert _names(ours) == _names(theirs)
    assert type(ours.c1).__module__ == "qplugin.quantization.fused"
    assert type(ours.c2) is nn.Conv2d and type(ours.b2) is nn.Identity  # folded
    for seed in range(3):
        x = _x(seed)
        with torch.no_grad():
            assert torch.equal(ours(x), theirs(x))
            # folding changes the arithmetic slightly, not the function
            assert torch.allclose(ours(x), m(x), atol=1e-5)


@requires_torch_ao
def test_fuse_modules_qat_matches_torch_ao():
    torch.manual_seed(0)
    m = Net().train()
    ours, theirs = qq.fuse_modules_qat(m, Net.FUSE), tq.fuse_modules_qat(m, Net.FUSE)
    assert _names(ours) == _names(theirs)
    assert type(ours.c1) is qq.fused.ConvBnReLU2d and type(ours.l6) is qq.fused.LinearBn1d
    x = _x(4)
    assert torch.equal(ours(x), theirs(x))


def test_fuse_modules_bad_inputs():
    m = Net().eval()
    with pytest.raises(NotImplementedError, match=r"cannot fuse \(Conv2d, Conv2d\)"):
        qq.fuse_modules(m, ["c1", "c2"])
    with pytest.raises(ValueError, match="no submodule named"):
        qq.fuse_modules(m, ["c1", "nope"])
    mixed = Net().eval()
    mixed.b1.train()
    with pytest.raises(ValueError, match="same mode"):
        qq.fuse_modules(mixed, ["c1", "b1"])
    with pytest.raises(NotImplementedError, match="ConvTranspose"):
        qq.fuse_modules_qat(Net(transpose=True).train(), ["t5", "b5"])
    with pytest.raises(TypeError, match="expected a torch.nn.Module"):
        qq.fuse_modules("model", [])
    with pytest.raises(TypeError, match=r"expected \(Conv2d, ReLU\)"):
        qq.fused.ConvReLU2d(nn.Conv1d(1, 1, 1), nn.ReLU())


def test_fuse_moves_hooks_and_inplace():
    m = Net().eval()
    calls = []
    m.c3.register_forward_pre_hook(lambda mod, inp: calls.append("pre"))
    m.r3.register_forward_hook(lambda mod, inp, out: calls.append("post"))
    fused = qq.fuse_modules(m, ["c3", "r3"], inplace=True)
    assert fused is m and type(m.r3) is nn.Identity and type(m.c3) is qq.fused.ConvReLU2d
    m(_x(0))
    assert calls == ["pre", "post"]


def _ptq(model, workflow, calib=3):
    w = qq if workflow == "qplugin" else tq
    m = w.fuse_modules(copy.deepcopy(model).eval(), Net.FUSE)
    m.qconfig = w.get_default_qconfig("x86")
    w.prepare(m, inplace=True, allow_list=qq.get_default_qconfig_propagation_list())
    with torch.no_grad():
        for s in range(calib):
            m(_x(10 + s))
    return m


def test_ptq_workflow_end_to_end_and_torchscript():
    """qplugin only: fuse -> prepare -> calibrate -> convert -> TorchScript (runs blocked too)."""
    torch.manual_seed(0)
    q = qq.convert(_ptq(Net(), "qplugin"))
    assert type(q.c1) is qnni.ConvReLU2d and type(q.c2) is qnn.Conv2d
    assert type(q.b4) is qnni.BNReLU2d and type(q.l6) is qnn.Linear
    assert type(q.l7) is qnni.LinearReLU and type(q.c8) is qnni.ConvReLU1d
    assert type(q.quant) is qnn.Quantize and type(q.dequant) is qnn.DeQuantize
    assert not any("activation_post_process" in n for n, _ in q.named_modules())
    x = _x(20)
    with torch.no_grad():
        y = q(x)
        s = torch.jit.script(q)
        assert torch.equal(s(x), y)
        assert "qplugin::" in str(s.inlined_graph) and "quantized::" not in str(s.inlined_graph)


@requires_torch_ao
def test_ptq_qplugin_and_torch_ao_prepared_agree():
    """Both ways: qplugin-prepared and torch.ao-prepared -> the same observer qparams and
    identical qplugin-converted outputs; torch.ao's convert of the qplugin-prepared model is the
    oracle (within the usual unit)."""
    torch.manual_seed(0)
    model = Net()
    ours_p, theirs_p = _ptq(model, "qplugin"), _ptq(model, "torch.ao")
    for (n1, a), (n2, b) in zip(ours_p.named_modules(), theirs_p.named_modules()):
        assert n1 == n2
        if n1.endswith("activation_post_process"):
            sa, za = a.calculate_qparams()
            sb, zb = b.calculate_qparams()
            assert torch.equal(sa, sb) and torch.equal(za, zb), n1
    ours, theirs = qq.convert(ours_p), qq.convert(theirs_p)
    oracle = qq._migrate._torch_ao_convert(ours_p)
    for seed in range(3):
        x = _x(30 + seed)
        with torch.no_grad():
            y = ours(x)
            assert torch.equal(y, theirs(x))
            assert float((y - oracle(x)).abs().max()) <= 2 * float(ours.dequant_scale()
                                                                 if hasattr(ours, "dequant_scale")
                                                                 else ours.c8.scale)


def _qat(workflow, steps=3):
    w = qq if workflow == "qplugin" else tq
    torch.manual_seed(0)
    m = Net().train()
    m = w.fuse_modules_qat(m, Net.FUSE)
    m.qconfig = w.get_default_qat_qconfig("x86")
    if workflow == "qplugin":
        qq.prepare_qat(m, inplace=True)
    else:
        # torch.ao's prepare_qat spelled out with qplugin's observation list (the one
        # difference of qplugin's default: it also observes e.g. pooling outputs)
        mapping = tq.quantization_mappings.get_default_qat_module_mappings()
        tq.propagate_qconfig_(m)
        tq.convert(m, mapping=mapping, inplace=True, remove_qconfig=False)
        tq.prepare(m, observer_non_leaf_module_list=set(mapping.values()), inplace=True,
                   allow_list=qq.get_default_qconfig_propagation_list())
    opt = torch.optim.SGD(m.parameters(), lr=0.05)
    outs = []
    for s in range(steps):
        y = m(_x(40 + s))
        outs.append(y.detach())
        loss = y.square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return m, outs


def test_qat_workflow_end_to_end():
    m, outs = _qat("qplugin")
    assert type(m.c1) is qq.qat.ConvBnReLU2d and type(m.l6) is qq.qat.LinearBn1d
    assert type(m.c3) is qq.qat.ConvReLU2d and type(m.l7) is qq.qat.LinearReLU
    assert isinstance(m.c1.weight_fake_quant, qq.FusedMovingAvgObsFakeQuantize)
    assert not torch.equal(outs[0], outs[-1])  # it trained
    m.apply(qq.qat.freeze_bn_stats)
    assert m.c1.freeze_bn and not m.c1.bn.training
    m.eval()
    q = qq.convert(m)
    assert type(q.c1) is qnni.ConvReLU2d and type(q.c2) is qnn.Conv2d and type(q.l6) is qnn.Linear
    x = _x(50)
    with torch.no_grad():
        assert torch.equal(torch.jit.script(q)(x), q(x))
        # the fake-quantized float model and the int8 model agree closely
        assert float((q(x) - m(x)).abs().max()) < 0.1


@requires_torch_ao
def test_qat_matches_torch_ao_step_by_step():
    """qplugin's fuse_modules_qat + QAT qconfig + prepare_qat + QAT modules train exactly like
    torch.ao's (the same random initialisation, forward values and updates); both convert to
    the same qplugin model."""
    ours, outs_a = _qat("qplugin")
    theirs, outs_b = _qat("torch.ao")
    for a, b in zip(outs_a, outs_b):
        assert torch.equal(a, b)
    ours.eval()
    theirs.eval()
    x = _x(60)
    with torch.no_grad():
        assert torch.equal(qq.convert(ours)(x), qq.convert(theirs)(x))


def test_prepare_qat_bad_inputs():
    with pytest.raises(ValueError, match="training mode"):
        qq.prepare_qat(Net().eval())
    with pytest.raises(TypeError, match="torch.nn.Module"):
        qq.prepare_qat(3)
    with pytest.raises(TypeError, match="torch.nn.Module"):
        qq.prepare("model")
    with pytest.raises(ValueError, match="expected a qconfig"):
        qq.qat.Linear(2, 2, qconfig=None)
    with pytest.raises(TypeError, match="from_float: expected"):
        lin = nn.Conv2d(1, 1, 1)
        lin.qconfig = qq.default_qat_qconfig
        qq.qat.Linear.from_float(lin)


def test_propagate_qconfig_dict_by_type_and_name():
    m = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Conv2d(1, 1, 1), nn.ReLU()))
    qq.propagate_qconfig_(m, {nn.Conv2d: qq.default_qconfig, "0": qq.default_per_channel_qconfig})
    # (the constructors are wrapped to create observers on the module's device, as torch.ao's)
    assert m[0].qconfig.weight().qscheme == torch.per_channel_symmetric
    assert m[1][0].qconfig.weight().qscheme == torch.per_tensor_symmetric
    assert m[1][1].qconfig is None and m.qconfig is None


def test_prepare_places_observers_and_hooks():
    m = nn.Sequential(qq.QuantStub(), nn.Conv2d(1, 2, 1), nn.ReLU(), qq.DeQuantStub())
    m.qconfig = qq.default_qconfig
    p = qq.prepare(m)
    assert not hasattr(m[1], "activation_post_process")  # not inplace
    assert isinstance(p[0].activation_post_process, qq.MinMaxObserver)
    assert isinstance(p[1].activation_post_process, qq.MinMaxObserver)
    assert not hasattr(p[3], "activation_post_process")  # DeQuantStub
    p(torch.randn(2, 1, 3, 3))
    assert float(p[1].activation_post_process.max_val) > float("-inf")
    with pytest.warns(UserWarning, match="None of the submodule got qconfig"):
        qq.prepare(nn.Sequential(nn.Linear(1, 1)))


def test_quant_wrapper_and_add_quant_dequant():
    lin = nn.Linear(4, 3)
    lin.qconfig = qq.default_qconfig
    wrapped = qq.add_quant_dequant(nn.Sequential(lin))
    assert type(wrapped[0]) is qq.QuantWrapper and wrapped[0].module is lin
    p = qq.prepare(wrapped)
    p(torch.randn(5, 4))
    q = qq.convert(p)
    assert type(q[0].quant) is qnn.Quantize and type(q[0].module) is qnn.Linear
    assert q(torch.randn(5, 4)).dtype == torch.float32


def test_quantize_and_quantize_qat_one_call():
    def calib(model, n):
        with torch.no_grad():
            for s in range(n):
                model(_x(70 + s))

    m = qq.fuse_modules(Net().eval(), Net.FUSE)
    m.qconfig = qq.get_default_qconfig("x86")
    q = qq.quantize(m, calib, (2,))
    assert type(q.c1) is qnni.ConvReLU2d
    qat = qq.fuse_modules_qat(Net().train(), Net.FUSE)
    qat.qconfig = qq.get_default_qat_qconfig("x86")
    q2 = qq.quantize_qat(qat, calib, (2,))
    assert type(q2.c1) is qnni.ConvReLU2d and type(q2.l6) is qnn.Linear


def test_float_functional_is_qplugins_own():
    f = qnn.FloatFunctional()
    a, b = torch.randn(3), torch.randn(3)
    assert torch.equal(f.add(a, b), a + b) and torch.equal(f.mul(a, b), a * b)
    assert torch.equal(f.add_relu(a, b), torch.relu(a + b))
    assert torch.equal(f.cat([a, b]), torch.cat([a, b]))
    assert torch.equal(f.add_scalar(a, 2.0), a + 2.0)
    with pytest.raises(RuntimeError, match="not intended to use the 'forward'"):
        f(a)
    assert type(f).__module__.startswith("qplugin.nn")


def test_no_torch_ao_needed_by_the_workflow():
    """The whole package imports and calibrates with torch.ao blocked (a fresh interpreter)."""
    script = textwrap.dedent(f"""
        import sys
        sys.path[:0] = [{ROOT!r}, {os.path.join(ROOT, "tests")!r}]
        import torch, _block_torch_ao
        _block_torch_ao.install()
        import qplugin, qplugin.quantization as qq
        from qplugin.demo import model as M
        try:
            import torch.ao.quantization
            raise SystemExit("torch.ao.quantization imported")
        except ImportError:
            pass
        assert not hasattr(torch.ops, "quantized")
        m = M.fuse(M.DemoNet())
        m.qconfig = qq.get_default_qconfig("x86")
        qq.prepare(m, inplace=True)
        m(torch.randn(2, 3, 64, 64))
        q = torch.jit.script(qq.convert(m))
        assert q(torch.randn(1, 3, 64, 64)).shape == (1, 10)
        assert not [n for n in sys.modules if n.startswith(("torch.ao.quantization",
                    "torch.ao.nn.quantized", "torch.ao.nn.intrinsic", "torch.ao.nn.qat"))]
        print("ok")
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr


_FACTORY = tiny_factory_source("qplugin.quantization")  # torch.ao is blocked there


def test_main_job_with_torch_ao_blocked(tmp_path):
    """`python -m qplugin` with torch.ao blocked: it runs, the torch.ao row says n/a."""
    (tmp_path / "mymodels.py").write_text(_FACTORY)
    script = textwrap.dedent(f"""
        import runpy, sys
        sys.path[:0] = [{str(tmp_path)!r}, {ROOT!r}, {os.path.join(ROOT, "tests")!r}]
        import torch, _block_torch_ao
        _block_torch_ao.install()
        sys.argv = ["qplugin", "--model", "mymodels:make_with_eval", "--save", {str(tmp_path / "m.pt")!r}]
        runpy.run_module("qplugin", run_name="__main__")
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=600, cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "torch.ao int8: not available here" in r.stdout
    row = [ln for ln in r.stdout.splitlines() if ln.startswith("| torch.ao int8")]
    assert row and row[0].count("n/a") == 5, r.stdout
    qrow = [ln for ln in r.stdout.splitlines() if ln.startswith("| qplugin int8")]
    assert qrow and "n/a" not in qrow[0].split("|")[2], r.stdout
    assert torch.jit.load(str(tmp_path / "m.pt"))(torch.randn(2, 3, 16, 16)).shape == (2, 4)
