"""The user-model factory module that the main-job tests (tests/test_main.py,
tests/quantization/test_workflow.py) write out as mymodels.py for `python -m qplugin --model
mymodels:make` (calibration only) or `mymodels:make_with_eval` (with an eval loader).
"""

_TINY = '''
import torch
from torch import nn
from STUBS import QuantStub, DeQuantStub


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant, self.dequant = QuantStub(), DeQuantStub()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.relu = nn.ReLU()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        x = self.pool(self.relu(self.conv(self.quant(x))))
        return self.dequant(self.fc(torch.flatten(x, 1)))


def make():
    torch.manual_seed(0)
    calib = [torch.randn(4, 3, 16, 16) for _ in range(2)]
    return Tiny().eval(), calib


def make_with_eval():
    model, calib = make()
    return model, calib, [(x, torch.zeros(4, dtype=torch.long)) for x in calib]
'''


def tiny_factory_source(stubs="torch.ao.quantization"):
    """Source of a module with a small conv net `Tiny` whose QuantStub / DeQuantStub come from
    `stubs`, make() -> (model, calibration batches) and make_with_eval() -> (model, calibration
    batches, [(input, labels)])."""
    return _TINY.replace("STUBS", stubs)
