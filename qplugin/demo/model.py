"""The demo model: a small ResNet-style CNN for 64x64 RGB images, written for eager-mode
quantization (QuantStub/DeQuantStub, FloatFunctional for the residual add, Conv-BN(-ReLU) groups
fused with qplugin.quantization.fuse_modules; nothing of torch.ao). Convolutions dominate its time, as in real CNNs.
Changes with: qplugin/demo/run.py, tools/cpp_loader (the saved model), tests/test_cpp_loader.py.
"""
import torch
from torch import nn
from qplugin.nn import FloatFunctional
from qplugin.quantization import DeQuantStub, QuantStub, fuse_modules

__all__ = ["DemoNet", "fuse", "macs_per_image"]


def _cbr(cin, cout, k=3, stride=1, groups=1, relu=True):
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
              nn.BatchNorm2d(cout)]
    if relu:
        layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class Residual(nn.Module):
    """relu(x + bn(conv(relu(bn(conv(x)))))), the add through FloatFunctional.add_relu."""

    def __init__(self, c):
        super().__init__()
        self.conv1 = _cbr(c, c)
        self.conv2 = _cbr(c, c, relu=False)
        self.skip = FloatFunctional()

    def forward(self, x):
        return self.skip.add_relu(self.conv2(self.conv1(x)), x)


class DepthwiseBlock(nn.Module):
    """MobileNetV3-style: 1x1 expand + hardswish, 3x3 depthwise (stride 2) + hardswish,
    1x1 project + ReLU."""

    def __init__(self, cin, hidden, cout):
        super().__init__()
        self.expand = _cbr(cin, hidden, k=1, relu=False)
        self.act1 = nn.Hardswish()
        self.dw = _cbr(hidden, hidden, k=3, stride=2, groups=hidden, relu=False)
        self.act2 = nn.Hardswish()
        self.project = _cbr(hidden, cout, k=1)

    def forward(self, x):
        return self.project(self.act2(self.dw(self.act1(self.expand(x)))))


class DemoNet(nn.Module):
    """64x64x3 -> 10 classes. stem 3->32 s2 (32x32) -> 32->64 (32x32) -> maxpool (16x16)
    -> residual 64 -> depthwise block 64->128->96 s2 (8x8) -> global average pool -> linear."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.quant = QuantStub()
        self.stem = _cbr(3, 32, stride=2)
        self.conv = _cbr(32, 64)
        self.pool = nn.MaxPool2d(2)
        self.res = Residual(64)
        self.block = DepthwiseBlock(64, 128, 96)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(96, num_classes)
        self.dequant = DeQuantStub()

    def forward(self, x):
        x = self.quant(x)
        x = self.block(self.res(self.pool(self.conv(self.stem(x)))))
        x = torch.flatten(self.avgpool(x), 1)
        return self.dequant(self.fc(x))


def fuse(model: DemoNet) -> DemoNet:
    """Fuses every Conv-BN(-ReLU) group in place (eval mode: BN folded into the conv)."""
    model.eval()
    groups = [m for m in model.modules()
              if type(m) is nn.Sequential and type(m[0]) is nn.Conv2d and len(m) > 1]
    for m in groups:
        fuse_modules(m, [[str(i) for i in range(len(m))]], inplace=True)
    return model


def macs_per_image(model: nn.Module, size=64) -> int:
    """Multiply-accumulates of the convolutions and linear layers for one image."""
    total = 0

    def hook(mod, inp, out):
        nonlocal total
        if isinstance(mod, nn.Conv2d):
            total += out[0].numel() * mod.in_channels // mod.groups * mod.kernel_size[0] * \
                mod.kernel_size[1]
        elif isinstance(mod, nn.Linear):
            total += mod.in_features * mod.out_features

    handles = [m.register_forward_hook(hook) for m in model.modules()
               if isinstance(m, (nn.Conv2d, nn.Linear))]
    with torch.no_grad():
        model(torch.zeros(1, 3, size, size))
    for h in handles:
        h.remove()
    return total
