"""Optional access to torch.ao (the legacy quantization stack PyTorch is retiring): every use of
torch.ao in qplugin goes through here, so nothing in qplugin requires it to be importable.
`torch_ao(name)` is the module or None; `classes(name)` is qplugin's float/QAT/fused class of
that name plus torch.ao's twin when torch.ao imports (for mapping tables and isinstance checks).
Changes with: qplugin/quantization (fused.py, qat.py, stubs.py), qplugin/nn from_float paths,
tests/conftest.py (QPLUGIN_BLOCK_TORCH_AO makes every torch.ao import here fail).
"""
import importlib
from typing import Optional, Tuple

__all__ = ["classes", "torch_ao"]

_MISSING = object()
_cache = {}


def torch_ao(name: str = "quantization") -> Optional[object]:
    """``torch.ao.<name>`` (e.g. "quantization", "nn.quantized", "nn.intrinsic", "nn.qat",
    "nn.intrinsic.qat"), or None when it cannot be imported (removed from PyTorch, or blocked
    by the tests' legacy-blocked mode). Not cached: the answer may change when a test installs
    or removes the block."""
    try:
        return importlib.import_module("torch.ao." + name)
    except Exception:  # ImportError, or a partially removed package raising anything else
        return None


# qplugin name -> (qplugin module, attribute; torch.ao module, attribute)
_QPLUGIN_HOME = {
    "intrinsic": "qplugin.quantization.fused",      # ≙ torch.ao.nn.intrinsic (float fused)
    "intrinsic.qat": "qplugin.quantization.qat",    # ≙ torch.ao.nn.intrinsic.qat
    "qat": "qplugin.quantization.qat",              # ≙ torch.ao.nn.qat
    "quantization": "qplugin.quantization.stubs",   # QuantStub / DeQuantStub / QuantWrapper
    "nn.quantized": "qplugin.nn",                   # FloatFunctional
}
_TORCH_AO_HOME = {"intrinsic": "nn.intrinsic", "intrinsic.qat": "nn.intrinsic.qat",
                  "qat": "nn.qat", "quantization": "quantization", "nn.quantized": "nn.quantized"}


def classes(name: str) -> Tuple[type, ...]:
    """The classes called `name` ("intrinsic.ConvReLU2d", "qat.Conv2d", "intrinsic.qat.ConvBn2d",
    "quantization.QuantStub", "nn.quantized.FloatFunctional"): qplugin's first, then torch.ao's
    when importable (absent when torch.ao is gone or lacks it)."""
    pkg, _, attr = name.rpartition(".")
    out = [getattr(importlib.import_module(_QPLUGIN_HOME[pkg]), attr)]
    ao = torch_ao(_TORCH_AO_HOME[pkg])
    theirs = getattr(ao, attr, None) if ao is not None else None
    if theirs is not None and theirs not in out:
        out.append(theirs)
    return tuple(out)
