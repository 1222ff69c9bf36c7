"""Small whole models for tests/models: float definitions (qplugin's QuantStub / DeQuantStub /
FloatFunctional), prepare + calibrate with qplugin.quantization (prepared) or with torch.ao
(prepared_torch_ao, the interop path), and conversion both ways (torch.ao.quantization.convert as
the oracle, qplugin.quantization.convert as the subject). Without torch.ao (legacy-blocked mode)
only the qplugin side exists. Also the float models tools/bench_dynamic.py and
tools/bench_models.py share with the tests (Encoder's blocks, _randomize_bn).
Changes with: qplugin/quantization.
"""
import copy
import functools
import math

import torch
from torch import nn

import qplugin.quantization as qq
from qplugin import nn as qnn
from qplugin._ao import torch_ao

tq = torch_ao("quantization")  # None in legacy-blocked mode


class ResNetish(nn.Module):
    """The demo's shape: Conv-BN-ReLU (fused), a residual block whose add goes through
    FloatFunctional, a depthwise-separable block with hardswish, max pooling, global average
    pooling and a Linear head."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.quant = qq.QuantStub()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(16, 16, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(16)
        self.relu2 = nn.ReLU()
        self.conv3 = nn.Conv2d(16, 16, 3, padding=1, bias=False)
        self.bn3 = nn.BatchNorm2d(16)
        self.skip_add = qnn.FloatFunctional()
        self.relu3 = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.dw = nn.Conv2d(16, 16, 3, padding=1, groups=16, bias=False)
        self.dw_bn = nn.BatchNorm2d(16)
        self.hswish = nn.Hardswish()
        self.pw = nn.Conv2d(16, 32, 1, bias=False)
        self.pw_bn = nn.BatchNorm2d(32)
        self.pw_relu = nn.ReLU()
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(32, num_classes)
        self.dequant = qq.DeQuantStub()

    def forward(self, x):
        x = self.relu1(self.bn1(self.conv1(self.quant(x))))
        y = self.relu2(self.bn2(self.conv2(x)))
        y = self.bn3(self.conv3(y))
        x = self.relu3(self.skip_add.add(x, y))
        x = self.pool(x)
        x = self.hswish(self.dw_bn(self.dw(x)))
        x = self.pw_relu(self.pw_bn(self.pw(x)))
        x = torch.flatten(self.gap(x), 1)
        return self.dequant(self.fc(x))

    FUSE = [["conv1", "bn1", "relu1"], ["conv2", "bn2", "relu2"], ["conv3", "bn3"],
            ["dw", "dw_bn"], ["pw", "pw_bn", "pw_relu"]]

    @staticmethod
    def example_input(batch=4, seed=0):
        g = torch.Generator().manual_seed(seed)
        return torch.randn(batch, 3, 16, 16, generator=g)


class TransformerBlock(nn.Module):
    """Pre-norm block: LayerNorm, gated MLP (two Linears, elementwise mul through
    FloatFunctional), residual add through FloatFunctional, LayerNorm, Linear head with ReLU."""

    def __init__(self, d=32, hidden=64):
        super().__init__()
        self.quant = qq.QuantStub()
        self.ln1 = nn.LayerNorm(d)
        self.fc_a = nn.Linear(d, hidden)
        self.relu_a = nn.ReLU()
        self.fc_g = nn.Linear(d, hidden)
        self.gate_mul = qnn.FloatFunctional()
        self.fc_o = nn.Linear(hidden, d)
        self.res_add = qnn.FloatFunctional()
        self.ln2 = nn.LayerNorm(d)
        self.head = nn.Linear(d, d)
        self.dequant = qq.DeQuantStub()

    def forward(self, x):
        x = self.quant(x)
        h = self.ln1(x)
        m = self.gate_mul.mul(self.relu_a(self.fc_a(h)), self.fc_g(h))
        x = self.res_add.add(x, self.fc_o(m))
        return self.dequant(self.head(self.ln2(x)))

    FUSE = [["fc_a", "relu_a"]]

    @staticmethod
    def example_input(batch=2, seed=0):
        g = torch.Generator().manual_seed(seed)
        return torch.randn(batch, 6, 32, generator=g)


class BagModel(nn.Module):
    """EmbeddingBag (weight-only, float qparams per row) feeding a quantized Linear."""

    def __init__(self, num=100, dim=16):
        super().__init__()
        self.bag = nn.EmbeddingBag(num, dim, mode="sum")
        self.quant = qq.QuantStub()
        self.fc = nn.Linear(dim, 8)
        self.dequant = qq.DeQuantStub()

    def forward(self, indices, offsets):
        return self.dequant(self.fc(self.quant(self.bag(indices, offsets))))

    FUSE = []

    @staticmethod
    def example_input(batch=4, seed=0):
        g = torch.Generator().manual_seed(seed)
        indices = torch.randint(0, 100, (batch * 5,), generator=g)
        offsets = torch.arange(0, batch * 5, 5)
        return indices, offsets


# A BERT-like float encoder for dynamic quantization (tests/dynamic/test_quantize_dynamic.py; at
# BERT-base size, tools/bench_dynamic.py): plain torch.nn modules, GELU, post-LayerNorm.
class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.h = heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x):
        B, T, D = x.shape
        q = self.q(x).view(B, T, self.h, D // self.h).transpose(1, 2)
        k = self.k(x).view(B, T, self.h, D // self.h).transpose(1, 2)
        v = self.v(x).view(B, T, self.h, D // self.h).transpose(1, 2)
        a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(D // self.h), -1)
        return self.o((a @ v).transpose(1, 2).reshape(B, T, D))


class EncoderBlock(nn.Module):
    def __init__(self, d, heads, ffn):
        super().__init__()
        self.attn = Attention(d, heads)
        self.ln1 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, ffn)
        self.fc2 = nn.Linear(ffn, d)
        self.ln2 = nn.LayerNorm(d)

    def forward(self, x):
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.fc2(torch.nn.functional.gelu(self.fc1(x))))


class Encoder(nn.Module):
    def __init__(self, d=64, heads=4, ffn=256, layers=2):
        super().__init__()
        self.blocks = nn.Sequential(*(EncoderBlock(d, heads, ffn) for _ in range(layers)))
        self.head = nn.Linear(d, 10)

    def forward(self, x):
        return self.head(self.blocks(x))


def _randomize_bn(model, seed):
    """Non-trivial batch-norm statistics, so folding them matters."""
    g = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            with torch.no_grad():
                m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
                m.weight.copy_(torch.rand(m.num_features, generator=g) + 0.5)
                m.bias.copy_(torch.randn(m.num_features, generator=g) * 0.1)


def float_model(cls, seed=0):
    torch.manual_seed(seed)
    m = cls()
    _randomize_bn(m, seed + 1)
    return m.eval()


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def prepared(cls, seed=0, calib_seed=100, calib_batches=4):
    """The float model fused (eval mode), prepared with qplugin's default x86 qconfig and
    observation list, and calibrated on `calib_batches` seeded inputs (a fresh copy of a cached
    one: calibrating with histogram observers is the slow part)."""
    return copy.deepcopy(_prepared(cls, seed, calib_seed, calib_batches, "qplugin"))


def prepared_torch_ao(cls, seed=0, calib_seed=100, calib_batches=4):
    """As :func:`prepared`, with torch.ao's fuse_modules, qconfig, observers and prepare (and
    qplugin's observation list): the model a torch.ao user has today."""
    return copy.deepcopy(_prepared(cls, seed, calib_seed, calib_batches, "torch.ao"))


@functools.lru_cache(maxsize=None)
def _prepared(cls, seed, calib_seed, calib_batches, workflow):
    w = qq if workflow == "qplugin" else tq
    m = float_model(cls, seed)
    if cls.FUSE:
        m = w.fuse_modules(m, cls.FUSE)
    m.qconfig = w.get_default_qconfig("x86")
    if cls is BagModel:
        m.bag.qconfig = w.float_qparams_weight_only_qconfig
    w.prepare(m, inplace=True, allow_list=qq.get_default_qconfig_propagation_list())
    with torch.no_grad():
        for i in range(calib_batches):
            m(*_as_tuple(cls.example_input(seed=calib_seed + i)))
    return m


def torch_ao_convert(prep):
    """torch.ao.quantization.convert of a model prepared either way (qplugin's stubs and fused
    modules become torch.ao's twins first)."""
    return qq._migrate._torch_ao_convert(prep)


def qplugin_convert(prep):
    return qq.convert(copy.deepcopy(prep))
