"""Legacy-blocked mode (QPLUGIN_BLOCK_TORCH_AO=1, read by tests/conftest.py): an import hook
that makes PyTorch's legacy quantization stack unimportable -- torch.ao.quantization,
torch.ao.nn.quantized, torch.ao.nn.intrinsic, torch.ao.nn.qat, torch.nn.quantized (and their
submodules, and the legacy aliases torch.quantization, torch.nn.intrinsic, torch.nn.qat) -- and
hides torch.ops.quantized, as if PyTorch had deleted them. Installed after `import torch` (torch
imports some of them itself) and before `import qplugin`; what torch already imported is purged
from sys.modules and from its parent packages, so later imports fail.
Tests that need torch.ao as an oracle use `requires_torch_ao` (a skip with the reason).
Changes with: tests/conftest.py, qplugin/_ao.py, tools/test.sh (the blocked stage).
"""
import importlib.abc
import os
import sys

import pytest

BLOCKED = os.environ.get("QPLUGIN_BLOCK_TORCH_AO", "0") == "1"
REASON = ("needs torch.ao (the legacy quantization stack) as the oracle; QPLUGIN_BLOCK_TORCH_AO=1"
          " blocks it")
requires_torch_ao = pytest.mark.skipif(BLOCKED, reason=REASON)


def skip_module_if_blocked():
    """Called at a test module's top, before it imports torch.ao: skips the whole module in
    legacy-blocked mode (every test there compares with, or migrates from, torch.ao)."""
    if BLOCKED:
        pytest.skip(REASON, allow_module_level=True)


BLOCKED_PACKAGES = ("torch.ao.quantization", "torch.ao.nn.quantized", "torch.ao.nn.intrinsic",
                    "torch.ao.nn.qat", "torch.nn.quantized", "torch.quantization",
                    "torch.nn.intrinsic", "torch.nn.qat")


def _is_blocked(name: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in BLOCKED_PACKAGES)


class _BlockTorchAO(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if _is_blocked(fullname):
            raise ImportError(f"{fullname} is blocked: QPLUGIN_BLOCK_TORCH_AO=1 simulates a"
                              " PyTorch without its legacy quantization stack", name=fullname)
        return None


_FINDER = _BlockTorchAO()


class _Placeholder:
    """torch.ao.quantization as torch's own internals see it in blocked mode."""

    class QuantWrapper:  # no module is an instance
        pass

    def __getattr__(self, name):
        raise AttributeError(f"torch.ao.quantization.{name}: blocked (QPLUGIN_BLOCK_TORCH_AO=1)")


def install() -> None:
    """Blocks the packages and hides torch.ops.quantized (idempotent)."""
    import torch
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    for name in [n for n in sys.modules if _is_blocked(n)]:
        del sys.modules[name]
        parent, _, attr = name.rpartition(".")
        if parent in sys.modules and attr in vars(sys.modules[parent]):
            delattr(sys.modules[parent], attr)
    # torch.jit._recursive checks `isinstance(m, torch.ao.quantization.QuantWrapper)` through
    # attribute access on every scripted module; a PyTorch without torch.ao.quantization would
    # not have that line. A placeholder attribute with a class nothing is an instance of stands in
    # for it: attribute access works, `import torch.ao.quantization` (what qplugin does, through
    # qplugin/_ao.py) still fails.
    torch.ao.quantization = _Placeholder()
    # Modules that re-export blocked ones (e.g. torch.ao.nn.sparse, quantizable) keep stale
    # references; the blocked names themselves are gone, which is what qplugin imports.
    ops_cls = type(torch.ops)
    if not getattr(ops_cls, "_qplugin_blocked", False):
        original = ops_cls.__getattr__

        def __getattr__(self, name):
            if name == "quantized":
                raise AttributeError("torch.ops.quantized is hidden: QPLUGIN_BLOCK_TORCH_AO=1")
            return original(self, name)

        ops_cls.__getattr__ = __getattr__
        ops_cls._qplugin_blocked = True
    torch.ops.__dict__.pop("quantized", None)
