"""Whole-model benchmark (a benchmark, not a test): fp32 torch vs torch.ao's eager int8 vs qplugin
on ResNet-18, ResNet-50, MobileNetV2 and MobileNetV3-Large, same process, same inputs.

    python tools/bench_models.py                         # all four, batch 1 and 8, 1 and 2 threads
    python tools/bench_models.py --model resnet18 --batch 1 --threads 1
    python tools/bench_models.py --isa avx2              # qplugin's AVX2 tier (and torch's AVX2
                                                         # paths, see docs/benchmarks.md)
    python tools/bench_models.py --model mobilenet_v2 --batch 8 --threads 1 --layers 8
                                                         # + the 8 layers that lose most to
                                                         # torch.ao inside the running model

The architectures are written here from their published definitions in the quantizable form that
torchvision's `torchvision.models.quantization` uses (torchvision does not import beside the
torch 2.13.0 CPU wheel on this machine): Conv-BN(-ReLU) fused with fuse_modules, residual adds
through FloatFunctional (add_relu in ResNet), ReLU instead of ReLU6 in MobileNetV2, hardswish /
hardsigmoid and a FloatFunctional mul in MobileNetV3's squeeze-excitation. Random weights,
initialised as torchvision's definitions initialise them (kaiming_normal_ convolutions;
`--init default`: PyTorch's default uniform init instead), and random batch-norm statistics,
calibrated on random data with torch.ao's default "x86" qconfig, converted
with torch.ao.quantization.convert and with qplugin.quantization.convert from the same prepared
model. Inputs 224x224, channels-first as a user passes them.

Calls of the three implementations are interleaved round by round so machine noise hits all alike;
medians. The ratio columns are qplugin / torch.ao and qplugin / fp32 (the issue-18 bars: <= 0.85
and <= 0.5).
"""
import argparse
import copy
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _isa_env import apply_isa_from_argv, torch_engine  # noqa: E402

apply_isa_from_argv()  # before torch and qplugin load their kernels

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, _ROOT)
sys.path.insert(0, os.path.join(_ROOT, "tests", "models"))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import qplugin  # noqa: E402
import qplugin.quantization as qq  # noqa: E402
from _models import _randomize_bn  # noqa: E402  (tests/models/_models.py)
from _timing import interleaved_medians  # noqa: E402  (tools/_timing.py)

warnings.filterwarnings("ignore")

try:
    import torch.ao.quantization as tq
    import torch.ao.nn.quantized as nnq
    _FF = nnq.FloatFunctional
except ImportError:  # pragma: no cover - torch without its legacy stack
    tq = None
    _FF = None


def _ff():
    return _FF() if _FF is not None else qplugin.nn.FloatFunctional()


def _stubs():
    if tq is not None:
        return tq.QuantStub(), tq.DeQuantStub()
    return qq.QuantStub(), qq.DeQuantStub()


class ConvBNAct(nn.Sequential):
    """conv - bn - act (act: "relu", "hardswish" or None); fused as [0, 1(, 2)] when relu."""

    def __init__(self, cin, cout, k=3, stride=1, groups=1, act="relu"):
        layers = [nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False),
                  nn.BatchNorm2d(cout)]
        if act == "relu":
            layers.append(nn.ReLU(inplace=False))
        elif act == "hardswish":
            layers.append(nn.Hardswish())
        super().__init__(*layers)
        self.act = act

    def fuse_list(self, prefix):
        names = [prefix + "0", prefix + "1"]
        if self.act == "relu":
            names.append(prefix + "2")
        return [names]


# ---------------------------------------------------------------- ResNet (He et al. 2015)
class _ResidualBlock(nn.Module):
    """convs (cin -> out channels, stride) + the input, or its 1x1 projection where the shape
    changes, through FloatFunctional add_relu."""

    def __init__(self, convs, cin, out, stride):
        super().__init__()
        self.body = nn.Sequential(*convs)
        self.down = None
        if stride != 1 or cin != out:
            self.down = ConvBNAct(cin, out, 1, stride, act=None)
        self.add_relu = _ff()

    def forward(self, x):
        idt = x if self.down is None else self.down(x)
        return self.add_relu.add_relu(self.body(x), idt)


class BasicBlock(_ResidualBlock):
    expansion = 1

    def __init__(self, cin, planes, stride=1):
        super().__init__([ConvBNAct(cin, planes, 3, stride),
                          ConvBNAct(planes, planes, 3, 1, act=None)], cin, planes, stride)


class Bottleneck(_ResidualBlock):
    expansion = 4

    def __init__(self, cin, planes, stride=1):
        out = planes * 4
        super().__init__([ConvBNAct(cin, planes, 1), ConvBNAct(planes, planes, 3, stride),
                          ConvBNAct(planes, out, 1, act=None)], cin, out, stride)


class ResNet(nn.Module):
    def __init__(self, block, layers, num_classes=1000):
        super().__init__()
        self.quant, self.dequant = _stubs()
        self.stem = ConvBNAct(3, 64, 7, 2)
        self.pool = nn.MaxPool2d(3, 2, 1)
        blocks, cin = [], 64
        for i, n in enumerate(layers):
            planes = 64 * 2 ** i
            for j in range(n):
                blocks.append(block(cin, planes, 2 if (j == 0 and i > 0) else 1))
                cin = planes * block.expansion
        self.layers = nn.Sequential(*blocks)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, num_classes)

    def forward(self, x):
        x = self.pool(self.stem(self.quant(x)))
        x = torch.flatten(self.gap(self.layers(x)), 1)
        return self.dequant(self.fc(x))


# ---------------------------------------------------------------- MobileNets
class _InvertedResidual(nn.Module):
    """The blocks `layers`, plus the input (a FloatFunctional add) when res."""

    def __init__(self, layers, res):
        super().__init__()
        self.block = nn.Sequential(*layers)
        self.res = res
        self.skip_add = _ff()

    def forward(self, x):
        return self.skip_add.add(x, self.block(x)) if self.res else self.block(x)


class _MobileNet(nn.Module):
    """quant - features - global average pool - classifier - dequant."""

    def __init__(self, feats, classifier):
        super().__init__()
        self.quant, self.dequant = _stubs()
        self.features = nn.Sequential(*feats)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.classifier = classifier

    def forward(self, x):
        x = torch.flatten(self.gap(self.features(self.quant(x))), 1)
        return self.dequant(self.classifier(x))


# MobileNetV2 (Sandler et al.)
class InvertedResidualV2(_InvertedResidual):
    def __init__(self, cin, cout, stride, expand):
        hid = cin * expand
        layers = []
        if expand != 1:
            layers.append(ConvBNAct(cin, hid, 1))
        layers += [ConvBNAct(hid, hid, 3, stride, groups=hid), ConvBNAct(hid, cout, 1, act=None)]
        super().__init__(layers, stride == 1 and cin == cout)


class MobileNetV2(_MobileNet):
    CFG = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
           (6, 160, 3, 2), (6, 320, 1, 1)]

    def __init__(self, num_classes=1000):
        feats, cin = [ConvBNAct(3, 32, 3, 2)], 32
        for t, c, n, s in self.CFG:
            for i in range(n):
                feats.append(InvertedResidualV2(cin, c, s if i == 0 else 1, t))
                cin = c
        feats.append(ConvBNAct(cin, 1280, 1))
        super().__init__(feats, nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, num_classes)))


# MobileNetV3-Large (Howard et al.)
def _div8(v):
    n = max(8, int(v + 4) // 8 * 8)
    return n + 8 if n < 0.9 * v else n


class SqueezeExcitation(nn.Module):
    def __init__(self, c):
        super().__init__()
        sq = _div8(c // 4)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(c, sq, 1)
        self.relu = nn.ReLU()
        self.fc2 = nn.Conv2d(sq, c, 1)
        self.hsig = nn.Hardsigmoid()
        self.mul = _ff()

    def forward(self, x):
        s = self.hsig(self.fc2(self.relu(self.fc1(self.avgpool(x)))))
        return self.mul.mul(s, x)


class InvertedResidualV3(_InvertedResidual):
    def __init__(self, cin, k, hid, cout, se, act, stride):
        layers = []
        if hid != cin:
            layers.append(ConvBNAct(cin, hid, 1, act=act))
        layers.append(ConvBNAct(hid, hid, k, stride, groups=hid, act=act))
        if se:
            layers.append(SqueezeExcitation(hid))
        layers.append(ConvBNAct(hid, cout, 1, act=None))
        super().__init__(layers, stride == 1 and cin == cout)


class MobileNetV3Large(_MobileNet):
    # (kernel, expanded, out, SE, activation, stride)
    CFG = [(3, 16, 16, False, "relu", 1), (3, 64, 24, False, "relu", 2),
           (3, 72, 24, False, "relu", 1), (5, 72, 40, True, "relu", 2),
           (5, 120, 40, True, "relu", 1), (5, 120, 40, True, "relu", 1),
           (3, 240, 80, False, "hardswish", 2), (3, 200, 80, False, "hardswish", 1),
           (3, 184, 80, False, "hardswish", 1), (3, 184, 80, False, "hardswish", 1),
           (3, 480, 112, True, "hardswish", 1), (3, 672, 112, True, "hardswish", 1),
           (5, 672, 160, True, "hardswish", 2), (5, 960, 160, True, "hardswish", 1),
           (5, 960, 160, True, "hardswish", 1)]

    def __init__(self, num_classes=1000):
        feats, cin = [ConvBNAct(3, 16, 3, 2, act="hardswish")], 16
        for k, hid, cout, se, act, s in self.CFG:
            feats.append(InvertedResidualV3(cin, k, hid, cout, se, act, s))
            cin = cout
        feats.append(ConvBNAct(cin, 960, 1, act="hardswish"))
        super().__init__(feats, nn.Sequential(nn.Linear(960, 1280), nn.Hardswish(),
                                              nn.Dropout(0.2), nn.Linear(1280, num_classes)))


def _torchvision_init(model):
    """The weight initialisation of torchvision's definitions of these models (its resnet.py,
    mobilenetv2.py and mobilenetv3.py): convolutions kaiming_normal_(mode="fan_out") (ResNet with
    nonlinearity="relu", the MobileNets with the default leaky_relu gain at a = 0, the same
    sqrt(2)), their biases 0; the MobileNets' Linear layers normal_(0, 0.01) with bias 0 (ResNet
    keeps nn.Linear's default). Batch norms are randomized afterwards (build()).
    Why it matters: per-channel int8 codes of bell-shaped weights (these, and trained ones) keep
    most k-pairs' weight sums small, which qplugin's AVX2 kernel exploits (docs/notes/
    avx2_gemm.md, pair steps); PyTorch's default nn.Conv2d init (kaiming_uniform_, a = sqrt(5))
    gives uniformly distributed codes, where it cannot. `--init default` keeps that init."""
    mobilenet = not isinstance(model, ResNet)
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            if mobilenet:
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
            else:
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Linear) and mobilenet:
            nn.init.normal_(m.weight, 0, 0.01)
            nn.init.zeros_(m.bias)
    return model


MODELS = {
    "resnet18": lambda: ResNet(BasicBlock, [2, 2, 2, 2]),
    "resnet50": lambda: ResNet(Bottleneck, [3, 4, 6, 3]),
    "mobilenet_v2": MobileNetV2,
    "mobilenet_v3_large": MobileNetV3Large,
}


def _fuse_lists(model):
    out = []
    for name, m in model.named_modules():
        if isinstance(m, ConvBNAct):
            out += m.fuse_list(name + "." if name else "")
    return out


INITS = ("torchvision", "default")


def build(name, calib_batches=2, seed=0, init="torchvision"):
    """(fp32 model, torch.ao int8 model or None, qplugin int8 model), all in eval mode. init:
    "torchvision" (its definitions' weight init, _torchvision_init) or "default" (nn.Conv2d's
    and nn.Linear's own, uniform)."""
    if init not in INITS:
        raise ValueError(f"bench_models.build: expected init in {INITS}, got {init!r}")
    torch.manual_seed(seed)
    fm = MODELS[name]()
    if init == "torchvision":
        _torchvision_init(fm)
    fm = fm.eval()
    _randomize_bn(fm, seed + 1)
    fuse = qq.fuse_modules if hasattr(qq, "fuse_modules") and tq is None else tq.fuse_modules
    m = fuse(copy.deepcopy(fm), _fuse_lists(fm))
    qcfg_mod = tq if tq is not None else qq
    m.qconfig = qcfg_mod.get_default_qconfig("x86")
    qcfg_mod.prepare(m, inplace=True)
    g = torch.Generator().manual_seed(seed + 2)
    with torch.no_grad():
        for _ in range(calib_batches):
            m(torch.randn(2, 3, 224, 224, generator=g))
    ao = tq.convert(copy.deepcopy(m)) if tq is not None else None
    qp = qq.convert(copy.deepcopy(m))
    return fm, ao, qp


def _time(fns, min_time):
    return [t * 1e3 for t in interleaved_medians(fns, min_time)]  # ms


def layer_times(ao, qp, x, reps=15):
    """Per-layer times inside the running models (not one layer called alone): forward pre/post
    hooks on every leaf module of both int8 models, `reps` whole-model calls of each, alternated;
    medians in ms, {name: (qplugin, torch.ao)} for the leaves both models have. Inside a model a
    layer reads what the layer before wrote and weights that other layers evicted, which a layer
    timed alone on its own warm inputs does not show. FloatFunctional calls are not modules'
    forwards and are not timed."""
    import statistics
    import time
    acc, handles = {}, []
    for tag, model in (("ao", ao), ("qp", qp)):
        for n, m in model.named_modules():
            if next(m.children(), None) is not None or isinstance(m, (nn.Identity, nn.Dropout)):
                continue
            st = {}
            handles.append(m.register_forward_pre_hook(
                lambda mod, inp, st=st: st.__setitem__("t", time.perf_counter())))
            handles.append(m.register_forward_hook(
                lambda mod, inp, out, st=st, key=(tag, n):
                acc.setdefault(key, []).append(time.perf_counter() - st["t"])))
    try:
        with torch.no_grad():
            for _ in range(reps):
                ao(x)
                qp(x)
    finally:
        for h in handles:
            h.remove()
    return {n: (statistics.median(v) * 1e3, statistics.median(acc[("ao", n)]) * 1e3)
            for (tag, n), v in acc.items() if tag == "qp" and ("ao", n) in acc}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", action="append", choices=sorted(MODELS))
    ap.add_argument("--batch", type=int, action="append")
    ap.add_argument("--threads", type=int, action="append")
    ap.add_argument("--isa", default="auto", help="qplugin ISA tier (QPLUGIN_CPU_ISA)")
    ap.add_argument("--min-time", type=float, default=2.0, help="seconds per case")
    ap.add_argument("--layers", type=int, default=0, metavar="N",
                    help="also print the N layers with the largest qplugin - torch.ao time "
                         "inside the model (layer_times), per batch and thread count")
    ap.add_argument("--init", choices=INITS, default="torchvision",
                    help="weight init: torchvision's definitions' (default) or PyTorch's "
                         "default nn.Conv2d init (uniform weights)")
    args = ap.parse_args()
    models = args.model or list(MODELS)
    batches = args.batch or [1, 8]
    threads = args.threads or [1, 2]
    torch.backends.quantized.engine = torch_engine()  # before build(): convert prepacks
    print(f"qplugin ISA: {qplugin.cpu_isa()}; "
          f"torch {torch.__version__} CPU capability {torch.backends.cpu.get_cpu_capability()}, "
          f"torch.ao engine {torch.backends.quantized.engine} (tools/_isa_env.py); "
          f"weight init: {args.init}")
    print("| model | batch | threads | fp32 ms | torch.ao ms | qplugin ms | qplugin/torch.ao | qplugin/fp32 | max abs diff vs torch.ao |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in models:
        fm, ao, qp = build(name, init=args.init)
        for b in batches:
            x = torch.randn(b, 3, 224, 224, generator=torch.Generator().manual_seed(7))
            with torch.no_grad():
                diff = (qp(x) - ao(x)).abs().max().item() if ao is not None else float("nan")
            for t in threads:
                torch.set_num_threads(t)
                fns = [lambda: fm(x), (lambda: ao(x)) if ao is not None else (lambda: None),
                       lambda: qp(x)]
                with torch.no_grad():
                    f32, a, q = _time(fns, args.min_time)
                ao_s = f"{a:.2f}" if ao is not None else "n/a"
                r_ao = f"{q / a:.2f}" if ao is not None else "n/a"
                print(f"| {name} | {b} | {t} | {f32:.2f} | {ao_s} | {q:.2f} | {r_ao} | "
                      f"{q / f32:.2f} | {diff:.3g} |", flush=True)
                if args.layers > 0 and ao is not None:
                    lt = sorted(layer_times(ao, qp, x).items(),
                                key=lambda kv: kv[1][1] - kv[1][0])
                    for n, (lq, la) in lt[:args.layers]:
                        print(f"|   {n} ({type(dict(qp.named_modules())[n]).__name__}) | | | | "
                              f"{la:.3f} | {lq:.3f} | {lq / la:.2f} | | |", flush=True)


if __name__ == "__main__":
    main()
