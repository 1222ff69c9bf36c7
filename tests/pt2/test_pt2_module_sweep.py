# PT2 door, every module (issue #15, "every qplugin.nn module (and intrinsic) runs on the new
# carrier"): each module class that qplugin.nn, qplugin.nn.intrinsic and qplugin.nn.dynamic export
# is found programmatically (a new class without a case or a skip reason fails
# test_every_exported_module_has_a_case), built in a tiny model (float model -> qplugin's
# prepare / convert, quantize_dynamic, or the qplugin module itself between Quantize and
# DeQuantize), turned into its PT2 form with qplugin.pt2.from_quantized and checked:
# - the PT2 model's output is bit-identical to the TorchScript-door model's, on every ISA;
# - torch.export.export(pmodel, inputs, strict=False) gives a graph with qplugin ops, no
#   quantized:: op and no quantized dtype (static modules: every qplugin op a .plain overload);
# - ep.module()(inputs) is bit-identical too, on every ISA;
# and to_quantized gives the TorchScript-door model back. Every qplugin.nn.functional form is swept
# the same way (test_functional_form_runs_on_pt2_door). What cannot run yet is in the SKIP /
# FUNCTIONAL_SKIP tables with the reason; weight-holder classes in INTERNAL.
# Changes with: qplugin/pt2 (routes, QTensor, from_quantized), tests/pt2/test_pt2_models.py (the
# 13-module smoke set and _check_graph, whose rules this file applies).
import copy
import functools
import importlib
import pickle
import pkgutil

import pytest
import torch
from torch import nn

import qplugin
from qplugin import nn as qnn
from qplugin.nn import dynamic as qnnd
from qplugin.nn import intrinsic as qnni
from _graph_checks import qplugin_targets
from _reference import table_args
from qplugin._tables import activation as activation_table

Q = qplugin.quantization
PACKAGES = (qnn, qnni, qnnd)


def _exported_module_classes():
    """{'qplugin.nn.Linear': class, ...}: every torch.nn.Module subclass a package exports."""
    out = {}
    for pkg in PACKAGES:
        names = set(pkg.__all__) | {n for n in dir(pkg) if not n.startswith("_")}
        for n in sorted(names):
            obj = getattr(pkg, n, None)
            if isinstance(obj, type) and issubclass(obj, nn.Module) and \
                    obj.__module__.startswith("qplugin."):
                out[f"{pkg.__name__}.{n}"] = obj
    return out


# ---------------------------------------------------------------------------------------------
# Model builders. Each returns (TorchScript-door model, inputs tuple); the model takes and returns
# float tensors (embeddings: int64 indices in).


class _Wrap(nn.Module):
    """QuantStub per input -> body -> DeQuantStub."""

    def __init__(self, body, n_inputs=1):
        super().__init__()
        self.quants = nn.ModuleList(Q.QuantStub() for _ in range(n_inputs))
        self.body = body
        self.dequant = Q.DeQuantStub()

    def forward(self, *xs):
        return self.dequant(self.body(*[q(x) for q, x in zip(self.quants, xs)]))


class _Boundary(nn.Module):
    """qplugin.nn.Quantize per input -> an already-quantized qplugin module -> DeQuantize (for
    modules whose float pattern exists in torch.ao only: built directly, so the case also runs
    when torch.ao is blocked)."""

    def __init__(self, body, qparams):
        super().__init__()
        self.quants = nn.ModuleList(qnn.Quantize(s, z, d) for s, z, d in qparams)
        self.body = body
        self.dequant = qnn.DeQuantize()

    def forward(self, *xs):
        return self.dequant(self.body(*[q(x) for q, x in zip(self.quants, xs)]))


def _randomize_bn(m, seed=0):
    g = torch.Generator().manual_seed(seed)
    c = m.num_features
    with torch.no_grad():
        m.weight.copy_(torch.rand(c, generator=g) + 0.5)
        m.bias.copy_(torch.randn(c, generator=g))
        m.running_mean.copy_(torch.randn(c, generator=g) * 0.3)
        m.running_var.copy_(torch.rand(c, generator=g) + 0.5)
    return m


def _inputs(shapes, seed=1):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(*s, generator=g) for s in shapes)


def _per_tensor_weights(prepared):
    # Per-tensor weight observers where the x86 per-channel one does not apply: ConvTranspose
    # (per channel is rejected, as torch.ao) and PReLU (a 1-D weight).
    for mod in prepared.modules():
        if isinstance(mod, (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d,
                            nn.PReLU)):
            mod.qconfig = Q.QConfig(activation=prepared.qconfig.activation,
                                    weight=Q.default_weight_observer)


def _float_body(make):
    """make() under seed 0, its batch norms' statistics and affine randomized."""
    torch.manual_seed(0)
    body = make()
    for m in body.modules():
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)):
            _randomize_bn(m)
    return body


def static(make, *shapes, fuse=None, fuse_train=False, act=torch.quint8, channels_last=False):
    """float body -> _Wrap -> qplugin prepare (x86 qconfig), calibration, convert. `fuse`: lists
    of submodule names for qplugin.quantization.fuse_modules in eval mode (batch norm folded at
    fusion), or with `fuse_train` fuse_modules_qat in training mode (a fused ConvBn / LinearBn
    module stays until convert folds the batch norm). `act`: the activations' dtype (qint8:
    a symmetric-range MinMax observer). `channels_last`: 4-D / 5-D inputs in that layout."""
    def build():
        body = _float_body(make)
        model = _Wrap(body, len(shapes))
        if fuse:
            if fuse_train:
                model.train()
                Q.fuse_modules_qat(body, fuse, inplace=True)
            else:
                model.eval()
                Q.fuse_modules(body, fuse, inplace=True)
        model.eval()
        model.qconfig = Q.get_default_qconfig("x86")
        if act != torch.quint8:
            model.qconfig = Q.QConfig(activation=Q.MinMaxObserver.with_args(dtype=act),
                                      weight=model.qconfig.weight)
        _per_tensor_weights(model)
        Q.prepare(model, inplace=True)
        xs = _inputs(shapes)
        if channels_last:
            xs = tuple(x.contiguous(memory_format=torch.channels_last if x.dim() == 4 else
                                    torch.channels_last_3d) for x in xs)
        with torch.no_grad():
            model(*xs)
            model(*[x * 1.5 for x in _inputs(shapes, seed=2)])
        return Q.convert(model), xs
    return build


def qat(make, *shapes, fuse=None):
    """float body -> fuse_modules_qat -> prepare_qat (x86 QAT qconfig), two training steps'
    worth of forward passes, eval, convert (the QAT modules' mapping)."""
    def build():
        body = _float_body(make)
        model = _Wrap(body, len(shapes)).train()
        if fuse:
            Q.fuse_modules_qat(body, fuse, inplace=True)
        model.qconfig = Q.get_default_qat_qconfig("x86")
        Q.prepare_qat(model, inplace=True)
        with torch.no_grad():
            model(*_inputs(shapes, seed=3))
            model(*_inputs(shapes, seed=4))
        model.eval()
        return Q.convert(model), _inputs(shapes)
    return build


def direct(make, *shapes):
    """A qplugin module built directly (`make()` returns it with its weights and output
    qparams), between qplugin.nn.Quantize and DeQuantize (quint8, scale 0.05, zero point 128)."""
    def build():
        torch.manual_seed(0)
        model = _Boundary(make(), [(0.05, 128, torch.quint8)] * len(shapes))
        return model.eval(), _inputs(shapes)
    return build


def dynamic(make, *shapes, dtype=torch.qint8, qconfig_spec=None, fuse=None):
    """float body (fused with qplugin.quantization.fuse_modules when `fuse`) ->
    qplugin.quantization.quantize_dynamic."""
    def build():
        torch.manual_seed(0)
        body = make().eval()
        if fuse:
            Q.fuse_modules(body, fuse, inplace=True)
        # In a Sequential: convert swaps children, never the model itself.
        model = nn.Sequential(body) if not isinstance(body, nn.Sequential) else body
        return Q.quantize_dynamic(model, qconfig_spec, dtype=dtype), _inputs(shapes)
    return build


def dynamic_from_float(qcls, make, *shapes):
    """float module with the default dynamic qconfig -> qcls.from_float (dynamic convs: not in
    quantize_dynamic's default mapping, as in torch.ao)."""
    def build():
        torch.manual_seed(0)
        m = make().eval()
        m.qconfig = Q.default_dynamic_qconfig
        return qcls.from_float(m).eval(), _inputs(shapes)
    return build


def embedding(make, *inputs, qconfig=None):
    """float Embedding / EmbeddingBag with a weight-only qconfig -> prepare / convert; inputs are
    given (indices, offsets)."""
    def build():
        torch.manual_seed(0)
        m = _Holder(make()).eval()  # convert swaps children, never the model itself
        m.qconfig = qconfig or Q.float_qparams_weight_only_qconfig
        Q.prepare(m, inplace=True)
        return Q.convert(m), tuple(inputs)
    return build


class _Holder(nn.Module):
    def __init__(self, body):
        super().__init__()
        self.body = body

    def forward(self, *xs):
        return self.body(*xs)


class _Functional(nn.Module):
    """A FloatFunctional (QFunctional after convert) operation on one or two quantized inputs."""

    def __init__(self, op, *extra):
        super().__init__()
        self.f = qnn.FloatFunctional()
        self.op, self.extra = op, extra

    def forward(self, x, y=None):
        fn = getattr(self.f, self.op)
        if self.op == "cat":
            return fn([x, y], *self.extra)
        if y is None:
            return fn(x, *self.extra)
        return fn(x, y, *self.extra)


def _qlinear(cls, *extra, in_f=12, out_f=7):
    """A static qplugin Linear-family module with random qint8 weights and output qparams."""
    def make():
        q = cls(in_f, out_f, *extra)
        w = torch.quantize_per_tensor(torch.randn(out_f, in_f) * 0.2, 0.01, 0, torch.qint8)
        q.set_weight_bias(w, torch.randn(out_f) * 0.1)
        q.scale, q.zero_point = 0.04, 100
        return q
    return make


def _qconv_add(cls, padding_mode="zeros"):
    """A ConvAdd2d / ConvAddReLU2d (3 -> 4 channels, 3x3, padding 1) with random qint8 weights
    and output qparams (built directly: its float pattern exists in torch.ao only)."""
    def make():
        q = cls(3, 4, 3, padding=1, padding_mode=padding_mode)
        w = torch.quantize_per_tensor(torch.randn(4, 3, 3, 3) * 0.2, 0.01, 0, torch.qint8)
        q.set_weight_bias(w, torch.randn(4) * 0.1)
        q.scale, q.zero_point = 0.06, 110
        return q
    return make


def _seq(*mods):
    return lambda: nn.Sequential(*[m() for m in mods])


def _lstm_body():
    return nn.LSTM(6, 5, num_layers=2)


# Cases per exported class: {qualified class name: {case id: builder}}. Every case's converted
# model must hold an instance of its class (test_case_builds_its_class).
CASES = {
    # -- pooling and resampling (their modules call qplugin.nn.functional's forms) --
    "qplugin.nn.AdaptiveAvgPool1d": {"out3": static(lambda: nn.AdaptiveAvgPool1d(3), (2, 3, 10))},
    "qplugin.nn.AdaptiveAvgPool2d": {
        "out2x3": static(lambda: nn.AdaptiveAvgPool2d((2, 3)), (2, 3, 7, 9)),
        "channels_last_qint8": static(lambda: nn.AdaptiveAvgPool2d((2, 3)), (2, 3, 7, 9),
                                      act=torch.qint8, channels_last=True),
        "global": static(lambda: nn.AdaptiveAvgPool2d(1), (2, 3, 6, 6))},
    "qplugin.nn.AdaptiveAvgPool3d": {"out2": static(lambda: nn.AdaptiveAvgPool3d(2),
                                                    (1, 2, 5, 6, 7))},
    "qplugin.nn.AdaptiveMaxPool2d": {"out3": static(lambda: nn.AdaptiveMaxPool2d(3),
                                                    (2, 3, 7, 8))},
    "qplugin.nn.AvgPool1d": {"k3s2": static(lambda: nn.AvgPool1d(3, 2), (2, 3, 11))},
    "qplugin.nn.AvgPool2d": {
        "k3s2p1": static(lambda: nn.AvgPool2d(3, 2, padding=1), (2, 3, 9, 9)),
        "ceil_no_pad_count": static(lambda: nn.AvgPool2d(2, ceil_mode=True,
                                                         count_include_pad=False), (2, 3, 7, 7))},
    "qplugin.nn.AvgPool3d": {"k2": static(lambda: nn.AvgPool3d(2), (1, 2, 6, 6, 6))},
    "qplugin.nn.MaxPool1d": {"k3s2": static(lambda: nn.MaxPool1d(3, 2), (2, 3, 11))},
    "qplugin.nn.MaxPool2d": {
        "k2": static(lambda: nn.MaxPool2d(2), (2, 3, 6, 6)),
        "channels_last_qint8": static(lambda: nn.MaxPool2d(2), (2, 3, 6, 6), act=torch.qint8,
                                      channels_last=True),
        "k3s2p1d2": static(lambda: nn.MaxPool2d(3, 2, padding=1, dilation=2), (2, 3, 11, 11))},
    "qplugin.nn.MaxPool3d": {"k2": static(lambda: nn.MaxPool3d(2), (1, 2, 6, 6, 6))},
    "qplugin.nn.Upsample": {
        "nearest1d": static(lambda: nn.Upsample(scale_factor=2), (2, 3, 5)),
        "nearest2d": static(lambda: nn.Upsample(scale_factor=2), (2, 3, 4, 5)),
        "nearest2d_channels_last": static(lambda: nn.Upsample(scale_factor=2), (2, 3, 4, 5),
                                          channels_last=True),
        "nearest3d": static(lambda: nn.Upsample(size=(4, 6, 5)), (1, 2, 2, 3, 4)),
        "nearest_exact2d": static(lambda: nn.Upsample(scale_factor=1.5, mode="nearest-exact"),
                                  (2, 3, 4, 4)),
        "linear1d": static(lambda: nn.Upsample(scale_factor=2, mode="linear"), (2, 3, 5)),
        "bilinear2d": static(lambda: nn.Upsample(scale_factor=2, mode="bilinear"), (2, 3, 4, 5)),
        "bilinear2d_qint8": static(lambda: nn.Upsample(scale_factor=2, mode="bilinear"),
                                   (2, 3, 4, 5), act=torch.qint8),
        "bilinear2d_align": static(lambda: nn.Upsample(size=(7, 9), mode="bilinear",
                                                       align_corners=True), (2, 3, 4, 5)),
        "trilinear3d": static(lambda: nn.Upsample(scale_factor=2, mode="trilinear"),
                              (1, 2, 2, 3, 3))},
    # -- normalization --
    "qplugin.nn.BatchNorm2d": {"c3": static(lambda: nn.BatchNorm2d(3), (2, 3, 5, 5))},
    "qplugin.nn.BatchNorm3d": {"c3": static(lambda: nn.BatchNorm3d(3), (2, 3, 3, 4, 4))},
    "qplugin.nn.LayerNorm": {"last2": static(lambda: nn.LayerNorm([4, 5]), (2, 3, 4, 5)),
                             "qint8": static(lambda: nn.LayerNorm(5), (2, 3, 5),
                                             act=torch.qint8)},
    "qplugin.nn.GroupNorm": {"g2": static(lambda: nn.GroupNorm(2, 4), (2, 4, 3, 3))},
    "qplugin.nn.InstanceNorm1d": {"affine": static(lambda: nn.InstanceNorm1d(3, affine=True),
                                                   (2, 3, 8))},
    "qplugin.nn.InstanceNorm2d": {"plain": static(lambda: nn.InstanceNorm2d(3), (2, 3, 4, 5))},
    "qplugin.nn.InstanceNorm3d": {"affine": static(lambda: nn.InstanceNorm3d(2, affine=True),
                                                   (1, 2, 3, 4, 4))},
    # -- activations --
    "qplugin.nn.ReLU6": {"": static(nn.ReLU6, (2, 3, 4, 4)),
                         "qint8": static(nn.ReLU6, (2, 3, 4, 4), act=torch.qint8)},
    "qplugin.nn.Hardswish": {"": static(nn.Hardswish, (2, 3, 4, 4)),
                             "qint8_channels_last": static(nn.Hardswish, (2, 3, 4, 4),
                                                           act=torch.qint8, channels_last=True)},
    "qplugin.nn.ELU": {"alpha": static(lambda: nn.ELU(0.7), (2, 3, 4, 4))},
    "qplugin.nn.LeakyReLU": {"slope": static(lambda: nn.LeakyReLU(0.05), (2, 3, 4, 4))},
    "qplugin.nn.Sigmoid": {"": static(nn.Sigmoid, (2, 3, 4, 4)),
                           "qint8": static(nn.Sigmoid, (2, 3, 4, 4), act=torch.qint8)},
    "qplugin.nn.Tanh": {"": static(nn.Tanh, (2, 3, 4, 4))},
    "qplugin.nn.GELU": {"": static(nn.GELU, (2, 3, 4, 4)),
                        "tanh": static(lambda: nn.GELU(approximate="tanh"), (2, 3, 4, 4))},
    "qplugin.nn.SiLU": {"": static(nn.SiLU, (2, 3, 4, 4))},
    "qplugin.nn.Mish": {"": static(nn.Mish, (2, 3, 4, 4))},
    "qplugin.nn.Softplus": {"beta": static(lambda: nn.Softplus(beta=2.0, threshold=10.0),
                                           (2, 3, 4, 4))},
    "qplugin.nn.Softmax": {"dim1": static(lambda: nn.Softmax(dim=1), (2, 3, 4, 4)),
                           "dim_last": static(lambda: nn.Softmax(dim=-1), (2, 3, 5))},
    "qplugin.nn.PReLU": {"per_channel": static(lambda: nn.PReLU(3), (2, 3, 4, 4)),
                         "shared": static(lambda: nn.PReLU(), (2, 3, 4, 4))},
    "qplugin.nn.Dropout": {"": static(lambda: nn.Sequential(nn.Conv2d(3, 4, 1), nn.Dropout(0.3)),
                                      (2, 3, 4, 4))},
    # -- linear and conv (fused forms below under intrinsic) --
    "qplugin.nn.Linear": {
        "": static(lambda: nn.Linear(12, 7), (4, 12)),
        "qat": qat(lambda: nn.Linear(12, 7), (4, 12)),
        "3d_input_no_bias": static(lambda: nn.Linear(12, 7, bias=False), (2, 4, 12)),
        "linear_bn_folded": static(_seq(lambda: nn.Linear(12, 7), lambda: nn.BatchNorm1d(7)),
                                   (4, 12), fuse=[["0", "1"]], fuse_train=True)},
    "qplugin.nn.Conv1d": {
        "": static(lambda: nn.Conv1d(3, 5, 3), (2, 3, 11)),
        "bn_folded_at_convert": static(_seq(lambda: nn.Conv1d(3, 4, 3),
                                            lambda: nn.BatchNorm1d(4)),
                                       (2, 3, 11), fuse=[["0", "1"]], fuse_train=True),
        "reflect": static(lambda: nn.Conv1d(3, 5, 3, padding=1, padding_mode="reflect"),
                          (2, 3, 11))},
    "qplugin.nn.Conv2d": {
        "": static(lambda: nn.Conv2d(3, 8, 3, padding=1), (2, 3, 9, 9)),
        "channels_last": static(lambda: nn.Conv2d(3, 8, 3, padding=1), (2, 3, 9, 9),
                                channels_last=True),
        "depthwise_stride2": static(lambda: nn.Conv2d(6, 6, 3, stride=2, groups=6),
                                    (2, 6, 8, 8)),
        "dilation_groups": static(lambda: nn.Conv2d(4, 6, 3, dilation=2, groups=2),
                                  (1, 4, 9, 9)),
        "circular": static(lambda: nn.Conv2d(3, 4, 3, padding=1, padding_mode="circular"),
                           (2, 3, 6, 6)),
        "bn_folded_eval": static(_seq(lambda: nn.Conv2d(3, 4, 3), lambda: nn.BatchNorm2d(4)),
                                 (2, 3, 7, 7), fuse=[["0", "1"]]),
        "bn_folded_at_convert": static(_seq(lambda: nn.Conv2d(3, 4, 3),
                                            lambda: nn.BatchNorm2d(4)),
                                       (2, 3, 7, 7), fuse=[["0", "1"]], fuse_train=True)},
    "qplugin.nn.Conv3d": {
        "": static(lambda: nn.Conv3d(2, 4, 3, padding=1), (1, 2, 5, 5, 5)),
        "replicate": static(lambda: nn.Conv3d(2, 3, 3, padding=1, padding_mode="replicate"),
                            (1, 2, 4, 4, 4))},
    "qplugin.nn.ConvTranspose1d": {"s2": static(lambda: nn.ConvTranspose1d(4, 3, 3, stride=2),
                                                (2, 4, 6))},
    "qplugin.nn.ConvTranspose2d": {
        "s2": static(lambda: nn.ConvTranspose2d(4, 3, 3, stride=2), (2, 4, 5, 5)),
        "groups_outpad": static(lambda: nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1,
                                                           output_padding=1, groups=2),
                                (1, 4, 4, 4))},
    "qplugin.nn.ConvTranspose3d": {"s2": static(lambda: nn.ConvTranspose3d(2, 3, 2, stride=2),
                                                (1, 2, 3, 3, 3))},
    # -- embeddings (float out; int indices in) --
    "qplugin.nn.Embedding": {
        "byte": embedding(lambda: nn.Embedding(10, 8), torch.tensor([[1, 3, 9], [0, 2, 2]])),
        "4bit": embedding(lambda: nn.Embedding(10, 8), torch.tensor([1, 3, 9, 0]),
                          qconfig=Q.float_qparams_weight_only_qconfig_4bit)},
    "qplugin.nn.EmbeddingBag": {
        "sum_offsets": embedding(lambda: nn.EmbeddingBag(10, 8, mode="sum"),
                                 torch.tensor([1, 3, 9, 0, 2, 2, 7]), torch.tensor([0, 3, 5])),
        "mean_2d": embedding(lambda: nn.EmbeddingBag(10, 8, mode="mean"),
                             torch.tensor([[1, 3], [9, 0], [2, 2]])),
        "padding_idx": embedding(lambda: nn.EmbeddingBag(10, 8, mode="sum", padding_idx=2),
                                 torch.tensor([1, 2, 9, 2, 2, 7]), torch.tensor([0, 3, 4])),
        "per_sample_weights": embedding(lambda: nn.EmbeddingBag(10, 8, mode="sum"),
                                        torch.tensor([1, 3, 9, 0, 2]), torch.tensor([0, 2]),
                                        torch.tensor([0.5, 1.0, -2.0, 0.25, 3.0])),
        "max_4bit": embedding(lambda: nn.EmbeddingBag(10, 8, mode="max"),
                              torch.tensor([1, 3, 9, 0, 2]), torch.tensor([0, 2]),
                              qconfig=Q.float_qparams_weight_only_qconfig_4bit)},
    # -- FloatFunctional / QFunctional ops (QFunctional is what convert makes of FloatFunctional;
    #    the float class is covered through these, see ALIASES) --
    "qplugin.nn.QFunctional": {
        "add": static(lambda: _Functional("add"), (2, 3, 4, 4), (2, 3, 4, 4)),
        "add_broadcast": static(lambda: _Functional("add"), (2, 3, 4, 4), (1, 3, 1, 4)),
        "add_relu": static(lambda: _Functional("add_relu"), (2, 3, 4, 4), (2, 3, 4, 4)),
        "add_qint8": static(lambda: _Functional("add"), (2, 3, 4, 4), (2, 3, 4, 4),
                            act=torch.qint8),
        "mul_scalar_qint8": static(lambda: _Functional("mul_scalar", 0.5), (2, 3, 4, 4),
                                   act=torch.qint8),
        "cat_channels_last": static(lambda: _Functional("cat", 1), (2, 3, 4, 4), (2, 2, 4, 4),
                                    channels_last=True),
        "add_scalar": static(lambda: _Functional("add_scalar", 0.75), (2, 3, 4, 4)),
        "mul": static(lambda: _Functional("mul"), (2, 3, 4, 4), (2, 3, 4, 4)),
        "mul_scalar": static(lambda: _Functional("mul_scalar", -1.5), (2, 3, 4, 4)),
        "cat": static(lambda: _Functional("cat", 1), (2, 3, 4, 4), (2, 2, 4, 4)),
        "matmul": static(lambda: _Functional("matmul"), (2, 4, 5), (2, 5, 3))},
    # -- boundary modules (in every case; here alone) --
    "qplugin.nn.Quantize": {"identity": static(nn.Identity, (2, 3, 4))},
    "qplugin.nn.DeQuantize": {"identity": static(nn.Identity, (2, 3, 4))},
    # -- qplugin.nn.intrinsic --
    "qplugin.nn.intrinsic.BNReLU2d": {"": static(_seq(lambda: nn.BatchNorm2d(3), nn.ReLU),
                                                 (2, 3, 4, 4), fuse=[["0", "1"]])},
    "qplugin.nn.intrinsic.BNReLU3d": {"": static(_seq(lambda: nn.BatchNorm3d(3), nn.ReLU),
                                                 (1, 3, 3, 4, 4), fuse=[["0", "1"]])},
    "qplugin.nn.intrinsic.ConvReLU1d": {
        "": static(_seq(lambda: nn.Conv1d(3, 5, 3), nn.ReLU), (2, 3, 11), fuse=[["0", "1"]]),
        "bn_folded_eval": static(_seq(lambda: nn.Conv1d(3, 4, 3), lambda: nn.BatchNorm1d(4),
                                      nn.ReLU), (2, 3, 11), fuse=[["0", "1", "2"]])},
    "qplugin.nn.intrinsic.ConvReLU2d": {
        "": static(_seq(lambda: nn.Conv2d(3, 8, 3, stride=2), nn.ReLU), (2, 3, 9, 9),
                   fuse=[["0", "1"]]),
        "bn_folded_eval": static(_seq(lambda: nn.Conv2d(3, 4, 3), lambda: nn.BatchNorm2d(4),
                                      nn.ReLU), (2, 3, 7, 7), fuse=[["0", "1", "2"]]),
        "qat_bn": qat(_seq(lambda: nn.Conv2d(3, 4, 3), lambda: nn.BatchNorm2d(4), nn.ReLU),
                      (2, 3, 7, 7), fuse=[["0", "1", "2"]]),
        "bn_folded_at_convert": static(_seq(lambda: nn.Conv2d(3, 4, 3),
                                            lambda: nn.BatchNorm2d(4), nn.ReLU),
                                       (2, 3, 7, 7), fuse=[["0", "1", "2"]], fuse_train=True)},
    "qplugin.nn.intrinsic.ConvReLU3d": {
        "": static(_seq(lambda: nn.Conv3d(2, 3, 3), nn.ReLU), (1, 2, 5, 5, 5),
                   fuse=[["0", "1"]]),
        "qat_bn": qat(_seq(lambda: nn.Conv3d(2, 3, 3), lambda: nn.BatchNorm3d(3), nn.ReLU),
                      (1, 2, 5, 5, 5), fuse=[["0", "1", "2"]]),
        "bn_folded_at_convert": static(_seq(lambda: nn.Conv3d(2, 3, 3),
                                            lambda: nn.BatchNorm3d(3), nn.ReLU),
                                       (1, 2, 5, 5, 5), fuse=[["0", "1", "2"]],
                                       fuse_train=True)},
    "qplugin.nn.intrinsic.LinearReLU": {"": static(_seq(lambda: nn.Linear(12, 7), nn.ReLU),
                                                   (4, 12), fuse=[["0", "1"]])},
    "qplugin.nn.intrinsic.LinearLeakyReLU": {"": direct(_qlinear(qnni.LinearLeakyReLU, 0.1),
                                                        (4, 12))},
    "qplugin.nn.intrinsic.LinearTanh": {"": direct(_qlinear(qnni.LinearTanh), (4, 12))},
    "qplugin.nn.intrinsic.ConvAdd2d": {
        "": direct(_qconv_add(qnni.ConvAdd2d), (2, 3, 5, 5), (2, 4, 5, 5)),
        "reflect": direct(_qconv_add(qnni.ConvAdd2d, "reflect"), (2, 3, 5, 5), (2, 4, 5, 5))},
    "qplugin.nn.intrinsic.ConvAddReLU2d": {
        "": direct(_qconv_add(qnni.ConvAddReLU2d), (2, 3, 5, 5), (2, 4, 5, 5)),
        "circular": direct(_qconv_add(qnni.ConvAddReLU2d, "circular"), (2, 3, 5, 5),
                           (2, 4, 5, 5))},
    # -- qplugin.nn.dynamic (float in and out: no QTensor; the ops take plain tensors already) --
    "qplugin.nn.dynamic.Linear": {
        "qint8": dynamic(lambda: nn.Linear(12, 7), (4, 12)),
        "fp16": dynamic(lambda: nn.Linear(12, 7), (4, 12), dtype=torch.float16)},
    "qplugin.nn.dynamic.LinearReLU": {
        "qint8": dynamic(_seq(lambda: nn.Linear(12, 7), nn.ReLU), (4, 12), fuse=[["0", "1"]],
                         qconfig_spec={Q.fused.LinearReLU}),
        "fp16": dynamic(_seq(lambda: nn.Linear(12, 7), nn.ReLU), (4, 12), fuse=[["0", "1"]],
                        qconfig_spec={Q.fused.LinearReLU}, dtype=torch.float16)},
    "qplugin.nn.dynamic.LSTM": {"2layers": dynamic(_lstm_body, (4, 3, 6)),
                                "fp16": dynamic(_lstm_body, (4, 3, 6), dtype=torch.float16)},
    "qplugin.nn.dynamic.GRU": {"batch_first": dynamic(lambda: nn.GRU(6, 5, batch_first=True),
                                                      (3, 4, 6))},
    "qplugin.nn.dynamic.LSTMCell": {"": dynamic(lambda: nn.LSTMCell(6, 5), (3, 6))},
    "qplugin.nn.dynamic.GRUCell": {"": dynamic(lambda: nn.GRUCell(6, 5), (3, 6))},
    "qplugin.nn.dynamic.RNNCell": {"": dynamic(lambda: nn.RNNCell(6, 5), (3, 6))},
    "qplugin.nn.dynamic.Conv1d": {"": dynamic_from_float(qnnd.Conv1d,
                                                         lambda: nn.Conv1d(3, 5, 3), (2, 3, 11))},
    "qplugin.nn.dynamic.Conv2d": {"": dynamic_from_float(qnnd.Conv2d,
                                                         lambda: nn.Conv2d(3, 4, 3, padding=1),
                                                         (2, 3, 6, 6))},
    "qplugin.nn.dynamic.Conv3d": {"": dynamic_from_float(qnnd.Conv3d,
                                                         lambda: nn.Conv3d(2, 3, 3),
                                                         (1, 2, 5, 5, 5))},
    "qplugin.nn.dynamic.ConvTranspose1d": {"": dynamic_from_float(
        qnnd.ConvTranspose1d, lambda: nn.ConvTranspose1d(4, 3, 3, stride=2), (2, 4, 6))},
    "qplugin.nn.dynamic.ConvTranspose2d": {"": dynamic_from_float(
        qnnd.ConvTranspose2d, lambda: nn.ConvTranspose2d(4, 3, 3, stride=2), (2, 4, 5, 5))},
    "qplugin.nn.dynamic.ConvTranspose3d": {"": dynamic_from_float(
        qnnd.ConvTranspose3d, lambda: nn.ConvTranspose3d(2, 3, 2, stride=2), (1, 2, 3, 3, 3))},
}

# A generated module of the activation table without a hand-written case above gets the default
# one (a new table row needs no edit here).
for _row in activation_table.ROWS:
    if _row.generated and _row.module:
        CASES.setdefault(f"qplugin.nn.{_row.module}", {"": static(_row.torch_module, (2, 3, 4, 4))})

# Exported classes that are covered by another class's cases.
ALIASES = {
    # The float-side module users put in their float model; convert turns it into QFunctional,
    # whose cases above build their models from it.
    "qplugin.nn.FloatFunctional": "qplugin.nn.QFunctional",
    # Weight holders of dynamic Linear (its `_packed_params` submodule): no forward of their own.
    "qplugin.nn.dynamic.LinearPackedParams": "qplugin.nn.dynamic.Linear",
    "qplugin.nn.dynamic.LinearPackedParamsFp16": "qplugin.nn.dynamic.Linear",
}

# Exported classes that legitimately cannot run on the PT2 door yet, with the reason (their
# cases stay in CASES and are skipped with it).
SKIP = {
    # (none: ConvAdd2d / ConvAddReLU2d ran skipped here until conv2d_add[_relu].plain existed)
}
# Skipped classes whose cases (in CASES) run as soon as the named overload is registered:
# {class: (op, overload)}.
READY_WHEN = {}


def _skip_reason(cls):
    """The reason `cls` is skipped now, or None when it runs."""
    if cls not in SKIP:
        return None
    need = READY_WHEN.get(cls)
    if need is not None and need[1] in getattr(torch.ops.qplugin, need[0]).overloads():
        return None
    return SKIP[cls]

# Classes with a static-door body: every qplugin op in their exported graph is a .plain overload.
# The others (embeddings, dynamic) call ops that take plain tensors already (no .plain overload:
# float weights / uint8 fused tables / float activations in, float out).
PLAIN_TENSOR_OPS = ("qplugin.embedding_", "qplugin.linear_dynamic", "qplugin.linear_relu_dynamic",
                    "qplugin.quantized_lstm_layer_dynamic", "qplugin.quantized_gru_layer_dynamic",
                    "qplugin.quantized_lstm_layer_dynamic_fp16",
                    "qplugin.quantized_gru_layer_dynamic_fp16",
                    "qplugin.quantized_lstm_cell_dynamic", "qplugin.quantized_gru_cell_dynamic",
                    "qplugin.quantized_rnn_tanh_cell_dynamic",
                    "qplugin.quantized_rnn_relu_cell_dynamic",
                    "qplugin.conv1d_dynamic", "qplugin.conv2d_dynamic", "qplugin.conv3d_dynamic",
                    "qplugin.conv_transpose1d_dynamic", "qplugin.conv_transpose2d_dynamic",
                    "qplugin.conv_transpose3d_dynamic")


def _case_ids():
    out = []
    for cls in sorted(CASES):
        short = cls[len("qplugin.nn."):]
        out += [pytest.param(cls, cid, id=f"{short}-{cid}" if cid else short)
                for cid in CASES[cls]]
    return out


# ---------------------------------------------------------------------------------------------
# Checks.


def _flat_tensors(out):
    return [t for t in torch.utils._pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]


def _assert_equal(got, want, what):
    g, w = _flat_tensors(got), _flat_tensors(want)
    assert len(g) == len(w), f"{what}: {len(g)} tensors, expected {len(w)}"
    for i, (a, b) in enumerate(zip(g, w)):
        assert type(a) is torch.Tensor, f"{what}[{i}]: a {type(a).__name__} escaped"
        assert a.dtype == b.dtype and a.shape == b.shape, \
            f"{what}[{i}]: {a.dtype}{tuple(a.shape)} vs {b.dtype}{tuple(b.shape)}"
        assert torch.equal(a, b), \
            f"{what}[{i}]: max |diff| {(a.double() - b.double()).abs().max().item()}"


def _check_graph(ep, static_door):
    """_graph_checks.qplugin_targets; on the static door every qplugin op is a .plain overload,
    else every qplugin op is one that takes plain tensors (PLAIN_TENSOR_OPS) or a .plain one."""
    qops = qplugin_targets(ep)
    if static_door:
        assert all(t.endswith(".plain") for t in qops), qops
    else:
        assert all(t.endswith(".plain") or t.startswith(PLAIN_TENSOR_OPS) for t in qops), qops
    return qops
def _isas():
    """The ISAs this machine (and QPLUGIN_CPU_ISA) allows."""
    out = []
    try:
        for want in ("scalar", "avx2", "avx512vnni"):
            if torch.ops.qplugin._set_cpu_isa(want) == want:
                out.append(want)
    finally:
        torch.ops.qplugin._set_cpu_isa("auto")
    return out


def _check_exported(qmodel, pmodel, xs, static_door, back=None):
    """pmodel (the PT2 door's form of qmodel) exports on xs with a graph _check_graph accepts; on
    every ISA it, the exported module and `back` (to_quantized of it, if given) equal qmodel."""
    with torch.no_grad():
        ep = torch.export.export(pmodel, xs, strict=False)
    _check_graph(ep, static_door)
    emod = ep.module()
    for isa in _isas():
        torch.ops.qplugin._set_cpu_isa(isa)
        try:
            with torch.no_grad():
                want = qmodel(*xs)
                _assert_equal(pmodel(*xs), want, f"PT2 eager [{isa}]")
                _assert_equal(emod(*xs), want, f"exported [{isa}]")
                if back is not None:
                    _assert_equal(back(*xs), want, f"to_quantized [{isa}]")
        finally:
            torch.ops.qplugin._set_cpu_isa("auto")


@functools.lru_cache(maxsize=None)
def _built(cls, cid):
    return CASES[cls][cid]()


# ---------------------------------------------------------------------------------------------
# Tests.


# Public module classes defined under qplugin.nn but exported by no package: the weight holders
# inside exported modules (their `_packed_params` / `_params` submodules; swept with them).
INTERNAL = {
    "qplugin.nn.modules.linear.LinearPackedParams": "qplugin.nn.Linear's weight holder",
    "qplugin.nn.modules.embedding_ops.EmbeddingPackedParams": "Embedding(Bag)'s weight holder",
    "qplugin.nn.dynamic.rnn.PackedParameter": "dynamic RNN cells' qint8 weight holder",
    "qplugin.nn.dynamic.rnn.PackedParameterFp16": "dynamic RNN cells' float16 weight holder",
}


def _defined_module_classes():
    """{'<defining module>.<name>': class} of every public torch.nn.Module subclass defined in
    any module under qplugin.nn (so a class a package forgets to export is not missed either)."""
    out = {}
    for info in pkgutil.walk_packages(qnn.__path__, "qplugin.nn."):
        mod = importlib.import_module(info.name)
        for n, obj in vars(mod).items():
            if not n.startswith("_") and isinstance(obj, type) and issubclass(obj, nn.Module) \
                    and obj.__module__ == mod.__name__:
                out[f"{mod.__name__}.{n}"] = obj
    return out


def test_every_defined_module_is_exported_or_internal():
    exported = set(_exported_module_classes().values())
    defined = _defined_module_classes()
    missing = sorted(n for n, c in defined.items() if c not in exported and n not in INTERNAL)
    assert not missing, f"module classes neither exported (hence swept) nor internal: {missing}"
    assert set(INTERNAL) <= set(defined), sorted(set(INTERNAL) - set(defined))


def test_every_exported_module_has_a_case():
    found = _exported_module_classes()
    missing = sorted(set(found) - set(CASES) - set(ALIASES))
    assert not missing, f"exported module classes without a PT2 sweep case or a skip reason: " \
                        f"{missing}"
    stale = sorted((set(CASES) | set(ALIASES) | set(SKIP)) - set(found))
    assert not stale, f"sweep entries for classes no package exports: {stale}"
    # A skipped class keeps its case (skipped with the reason by test_module_runs_on_pt2_door),
    # ready for the day its blocker is gone.
    assert set(SKIP) <= set(CASES) and not set(CASES) & set(ALIASES)
    assert set(READY_WHEN) <= set(SKIP)
    assert all(v in CASES for v in ALIASES.values())
    assert all(CASES.values())  # at least one case per class


def _classes_in(model):
    return {type(m) for m in model.modules()}


@pytest.mark.parametrize("cls,cid", _case_ids())
def test_module_runs_on_pt2_door(cls, cid):
    if _skip_reason(cls) is not None:
        pytest.skip(f"{cls}: {_skip_reason(cls)}")
    target = _exported_module_classes()[cls]
    qmodel, xs = _built(cls, cid)
    qmodel = qmodel.eval()
    assert target in _classes_in(qmodel), \
        f"case {cls}/{cid} builds no {cls}: {sorted(c.__name__ for c in _classes_in(qmodel))}"
    static_door = not (cls.startswith("qplugin.nn.dynamic.") or "Embedding" in cls)
    pmodel = qplugin.pt2.from_quantized(qmodel)
    assert any(isinstance(m, target) for m in pmodel.modules()) or \
        target in (qnn.Quantize, qnn.DeQuantize)
    back = qplugin.pt2.to_quantized(pmodel)
    assert _classes_in(back) == _classes_in(qmodel)
    _check_exported(qmodel, pmodel, xs, static_door, back)


@pytest.mark.parametrize("cls,cid", [
    ("qplugin.nn.PReLU", "per_channel"),  # the PT2 twin class and its plain-codes weight
    ("qplugin.nn.Conv2d", "circular"),
    ("qplugin.nn.QFunctional", "matmul"),
    ("qplugin.nn.EmbeddingBag", "padding_idx"),
    ("qplugin.nn.dynamic.LSTM", "2layers"),
])
def test_pt2_form_pickles_and_copies(cls, cid):
    qmodel, xs = _built(cls, cid)
    pmodel = qplugin.pt2.from_quantized(qmodel.eval())
    with torch.no_grad():
        want = qmodel(*xs)
        for again in (pickle.loads(pickle.dumps(pmodel)), copy.deepcopy(pmodel)):
            _assert_equal(again(*xs), want, "pickled / copied PT2 form")
            _assert_equal(qplugin.pt2.to_quantized(again)(*xs), want, "and back")


# ---------------------------------------------------------------------------------------------
# qplugin.nn.functional: every form taking a quantized activation, called inside a float model's
# forward between QuantStub and DeQuantStub (the pooling / resampling modules call these too).

QF = qnn.functional
_S, _Z = 0.0413, 117  # output qparams where a form takes them

FUNCTIONAL_CASES = {
    "layer_norm": (lambda x: QF.layer_norm(x, [4, 5], scale=_S, zero_point=_Z), (2, 3, 4, 5)),
    "group_norm": (lambda x: QF.group_norm(x, 2, scale=_S, zero_point=_Z), (2, 4, 3, 3)),
    "instance_norm": (lambda x: QF.instance_norm(x, scale=_S, zero_point=_Z), (2, 3, 4, 5)),
    "max_pool1d": (lambda x: QF.max_pool1d(x, 3, 2, 1), (2, 3, 11)),
    "max_pool2d": (lambda x: QF.max_pool2d(x, 3, 2, 1, ceil_mode=True), (2, 3, 9, 9)),
    "max_pool3d": (lambda x: QF.max_pool3d(x, 2), (1, 2, 4, 6, 6)),
    "avg_pool1d": (lambda x: QF.avg_pool1d(x, 3, 2, 1, count_include_pad=False), (2, 3, 11)),
    "avg_pool2d": (lambda x: QF.avg_pool2d(x, 3, 2, 1, divisor_override=5), (2, 3, 9, 9)),
    "avg_pool3d": (lambda x: QF.avg_pool3d(x, 2, ceil_mode=True), (1, 2, 5, 5, 5)),
    "adaptive_avg_pool1d": (lambda x: QF.adaptive_avg_pool1d(x, 4), (2, 3, 10)),
    "adaptive_avg_pool2d": (lambda x: QF.adaptive_avg_pool2d(x, (3, 2)), (2, 3, 7, 9)),
    "adaptive_avg_pool3d": (lambda x: QF.adaptive_avg_pool3d(x, 2), (1, 2, 5, 6, 7)),
    "adaptive_max_pool2d": (lambda x: QF.adaptive_max_pool2d(x, (3, 4)), (2, 3, 7, 9)),
    "interpolate": (lambda x: QF.interpolate(x, scale_factor=2, mode="bilinear",
                                             align_corners=False), (2, 3, 4, 5)),
    "upsample": (lambda x: QF.upsample(x, size=(5, 7), mode="nearest"), (2, 3, 4, 5)),
    "upsample_bilinear": (lambda x: QF.upsample_bilinear(x, scale_factor=2), (2, 3, 4, 5)),
    "upsample_nearest": (lambda x: QF.upsample_nearest(x, scale_factor=3), (2, 3, 4, 5)),
    "relu6": (lambda x: QF.relu6(x), (2, 3, 4, 4)),
    "hardswish": (lambda x: QF.hardswish(x, _S, _Z), (2, 3, 4, 4)),
    "elu": (lambda x: QF.elu(x, _S, _Z, alpha=0.5), (2, 3, 4, 4)),
    "leaky_relu": (lambda x: QF.leaky_relu(x, 0.2), (2, 3, 4, 4)),
    "sigmoid": (lambda x: QF.sigmoid(x), (2, 3, 4, 4)),
    "hardsigmoid": (lambda x: QF.hardsigmoid(x), (2, 3, 4, 4)),
    "hardtanh": (lambda x: QF.hardtanh(x, -0.5, 0.75), (2, 3, 4, 4)),
    "clamp": (lambda x: QF.clamp(x, -0.3, 0.9), (2, 3, 4, 4)),
    "celu": (lambda x: QF.celu(x, _S, _Z, alpha=0.7), (2, 3, 4, 4)),
    "threshold": (lambda x: QF.threshold(x, 0.2, -0.4), (2, 3, 4, 4)),
    "tanh": (lambda x: QF.tanh(x), (2, 3, 4, 4)),
    "gelu": (lambda x: QF.gelu(x, approximate="tanh"), (2, 3, 4, 4)),
    "silu": (lambda x: QF.silu(x, _S, _Z), (2, 3, 4, 4)),
    "mish": (lambda x: QF.mish(x, _S, _Z), (2, 3, 4, 4)),
    "softplus": (lambda x: QF.softplus(x, _S, _Z, beta=1.5), (2, 3, 4, 4)),
    "softmax": (lambda x: QF.softmax(x, 1, _S, _Z), (2, 3, 4, 4)),
}

# A generated functional form of the activation table without a case above: its row's first
# test case (a new table row needs no edit here).
for _row in activation_table.ROWS:
    if _row.functional == "generated" and _row.name not in FUNCTIONAL_CASES:
        FUNCTIONAL_CASES[_row.name] = (
            lambda x, _f=getattr(QF, _row.name), _a=table_args(_row.cases[0], (_S, _Z)):
                _f(x, *_a), (2, 3, 4, 4))

# Functional forms that legitimately have no PT2 form.
FUNCTIONAL_SKIP = {
    # These take a quantized *weight* tensor and prepack it on every call (linear_prepack /
    # conv*_prepack on a qint8 tensor): a PT2 graph holds no quantized dtype, and on the PT2
    # door the weight is prepacked once, at convert time, in the qplugin.nn.Linear / Conv*d
    # modules (swept above), whose packed objects the graph lifts.
    "linear": "takes a quantized weight tensor, prepacked per call; use qplugin.nn.Linear",
    "conv1d": "takes a quantized weight tensor, prepacked per call; use qplugin.nn.Conv1d",
    "conv2d": "takes a quantized weight tensor, prepacked per call; use qplugin.nn.Conv2d",
    "conv3d": "takes a quantized weight tensor, prepacked per call; use qplugin.nn.Conv3d",
}


class _Fn(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def test_every_functional_form_has_a_case():
    names = set(QF.__all__)
    assert names == set(FUNCTIONAL_CASES) | set(FUNCTIONAL_SKIP), (
        f"missing: {sorted(names - set(FUNCTIONAL_CASES) - set(FUNCTIONAL_SKIP))}, stale: "
        f"{sorted((set(FUNCTIONAL_CASES) | set(FUNCTIONAL_SKIP)) - names)}")
    assert not set(FUNCTIONAL_CASES) & set(FUNCTIONAL_SKIP)


@pytest.mark.parametrize("name", sorted(FUNCTIONAL_CASES))
def test_functional_form_runs_on_pt2_door(name):
    fn, shape = FUNCTIONAL_CASES[name]
    qmodel, xs = direct(lambda: _Fn(fn), shape)()
    pmodel = qplugin.pt2.from_quantized(qmodel)
    _check_exported(qmodel, pmodel, xs, static_door=True)


@pytest.mark.parametrize("name", sorted(FUNCTIONAL_SKIP))
def test_skipped_functional_form(name):
    pytest.skip(f"qplugin.nn.functional.{name}: {FUNCTIONAL_SKIP[name]}")
