"""QuantStub / DeQuantStub / QuantWrapper (≙ torch.ao.quantization.stubs): the markers of the
quantized region, swapped for qplugin.nn.Quantize / DeQuantize by convert.
Changes with: __init__.py (mapping), qplugin/nn/modules/quantize.py.
"""
from torch import nn

__all__ = ["DeQuantStub", "QuantStub", "QuantWrapper"]


def _base(name):
    # While torch.ao exists, the stubs also subclass torch.ao's (plain modules), only so that
    # torch.ao.quantization.prepare treats them as stubs (it skips DeQuantStub by isinstance);
    # everything they do is here. Without torch.ao: nn.Module.
    from .._ao import torch_ao
    tq = torch_ao("quantization")
    return getattr(tq, name) if tq is not None else nn.Module


class _Stub:
    """The stubs' body: an optional qconfig, identity forward."""

    def __init__(self, qconfig=None):
        nn.Module.__init__(self)
        if qconfig:
            self.qconfig = qconfig

    def forward(self, x):
        return x


class QuantStub(_Stub, _base("QuantStub")):
    r"""Identity in float; observed by prepare, then converted to qplugin.nn.Quantize.

    Args:
        qconfig: the qconfig for this stub (else the one propagated from its parent).
    """


class DeQuantStub(_Stub, _base("DeQuantStub")):
    r"""Identity in float; converted to qplugin.nn.DeQuantize."""


class QuantWrapper(nn.Module):
    r"""Wraps `module` between a QuantStub and a DeQuantStub (the stubs take its qconfig)."""

    def __init__(self, module):
        super().__init__()
        qconfig = getattr(module, "qconfig", None)
        self.add_module("quant", QuantStub(qconfig))
        self.add_module("dequant", DeQuantStub(qconfig))
        self.add_module("module", module)
        self.train(module.training)

    def forward(self, X):
        return self.dequant(self.module(self.quant(X)))
