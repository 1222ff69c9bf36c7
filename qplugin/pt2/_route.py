"""Routes from the legacy (quantized-dtype) ops to their `.plain` overloads (docs/pt2.md §3).

A `qplugin.nn` module calls `torch.ops.qplugin.<op>` as on the TorchScript door; when its
quantized arguments are `QTensor`s, QTensor's `__torch_function__` looks the op up here and calls
the `.plain` overload instead: every QTensor argument `x` becomes `(x.int_data, x.scale,
x.zero_point)` in place (a list of QTensors becomes `(codes list, scales list, zero points
list)`), the arguments named in `drop` are left out, and the plain result is wrapped in a QTensor
with the output qparams `out` computes. One row per legacy overload, in `routes/<family>.py`
(each file defines `ROUTES`), so the modules, TorchScript forwards and functional forms stay the
same on both doors.
"""
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch

__all__ = ["Route", "same_as_input", "given", "to_plain"]

# (scale, zero_point, dtype of the codes) of an output, from the bound legacy arguments
# (name -> value as passed: QTensors still QTensors).
OutQParams = Callable[[Dict[str, Any]], Tuple[float, int, torch.dtype]]


@dataclass(frozen=True)
class Route:
    legacy: str                 # "hardswish", "conv2d.new", "add.Scalar" (qplugin:: omitted)
    plain: str                  # "hardswish.plain", "conv2d.plain", "add.Scalar_plain"
    out: Optional[OutQParams]   # None: the op returns no quantized tensor (e.g. *_unpack)
    drop: Tuple[str, ...] = ()  # legacy argument names the plain overload does not take


def to_plain(legacies: Tuple[str, ...], out: Optional[OutQParams]) -> List[Route]:
    """One row per legacy overload ("conv1d", "conv2d.new") to its `<op>.plain` overload, each
    with output qparams `out`."""
    return [Route(legacy, legacy.split(".")[0] + ".plain", out) for legacy in legacies]


def same_as_input(arg: str) -> OutQParams:
    """The output keeps the qparams and dtype of QTensor argument `arg` (relu6, max_pool, ...)."""
    def out(a):
        x = a[arg]
        return x.scale, x.zero_point, x.int_data.dtype
    return out


def given(scale: str, zero_point: str, dtype=torch.uint8,
          default: Optional[OutQParams] = None) -> OutQParams:
    """The output qparams are legacy arguments `scale` / `zero_point` (codes of `dtype`;
    dtype "input:<arg>" = the dtype of QTensor argument <arg>); when they are None, `default`
    computes PyTorch's defaults."""
    def out(a):
        s, z = a.get(scale), a.get(zero_point)
        if isinstance(dtype, str):
            d = a[dtype.split(":", 1)[1]].int_data.dtype
        else:
            d = dtype
        if s is None or z is None:
            assert default is not None, f"route: {scale}/{zero_point} are None and no default"
            ds, dz, _ = default(a)
            s = ds if s is None else s
            z = dz if z is None else z
        return float(s), int(z), d
    return out
