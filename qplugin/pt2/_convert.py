"""PT2 form of a converted qplugin model (docs/pt2.md §4): `from_quantized`, `to_quantized`,
and the float <-> QTensor boundary modules `Quantize` / `DeQuantize`.

The qplugin.nn modules run unchanged on the PT2 door: their forwards call
`torch.ops.qplugin.<op>` as on the TorchScript door, and `QTensor.__torch_function__` reroutes
those calls to the `.plain` overloads (qplugin/pt2/_router.py). Conversion therefore only
- swaps the boundary modules (qplugin.nn.Quantize / DeQuantize, which make and unmake
  quantized-dtype tensors) for `qplugin.pt2.Quantize` / `DeQuantize` (plain codes, no quantized
  dtype: qplugin::quantize_per_tensor.plain / dequantize.plain), and
- turns one-element `scale` / `zero_point` buffers into Python float / int attributes, so that
  the modules' `float(self.scale)` is a constant under torch.export and torch.compile (a buffer
  would be a graph input, and `float()` of it a data-dependent scalar or a graph break).
  `to_quantized` turns them back into buffers of the original dtype and shape;
- gives the one module keeping a quantized-dtype buffer (qplugin.nn.PReLU, its weight) a PT2
  twin class (`PReLU` below): the buffer becomes plain codes, its qparams Python numbers, and
  forward wraps them in a QTensor per call (a QTensor buffer cannot be exported: torch.export
  fakifies buffers, and FakeTensor rejects a tensor reporting is_quantized).
All are plain module classes and attributes: a PT2 model pickles (torch.save) like any module.

Changes with: qplugin/pt2/_router.py, qplugin/nn/modules/quantize.py, qplugin/nn/modules/prelu.py
(the twin's forward), tests/pt2/test_pt2_models.py, tests/pt2/test_pt2_module_sweep.py.
"""
import copy
from typing import Dict, Tuple

import torch

from qplugin.nn.modules.prelu import PReLU as _LegacyPReLU  # qplugin.nn imports before pt2

from ._qtensor import QTensor

__all__ = ["Quantize", "DeQuantize", "from_quantized", "to_quantized"]

_CODES = {torch.quint8: torch.uint8, torch.qint8: torch.int8}
_QDTYPE = {v: k for k, v in _CODES.items()}
# Attribute recording the buffers from_quantized turned into Python scalars:
# {name: (dtype, shape)}, so that to_quantized restores them exactly.
_SCALARS = "_qplugin_pt2_scalars"
# Attribute recording the per-tensor quantized buffers from_quantized turned into plain codes:
# {name: (quantized dtype, scale, zero_point)}.
_QBUFFERS = "_qplugin_pt2_qbuffers"


def _plain_op(name):
    """torch.ops.qplugin.<name>.plain, or None when this build does not register it."""
    try:
        return getattr(getattr(torch.ops.qplugin, name), "plain")
    except (AttributeError, RuntimeError):
        return None


# Resolved once at import (qplugin's library is loaded by then), so that forward does no lookup
# that Dynamo would have to trace.
_QUANTIZE_PLAIN = _plain_op("quantize_per_tensor")


class Quantize(torch.nn.Module):
    """float32 tensor -> qplugin.pt2.QTensor (per tensor, quint8 or qint8 codes):
    ``qplugin::quantize_per_tensor.plain`` (round half to even, clamp), the PT2 form of
    qplugin.nn.Quantize. scale / zero_point are Python numbers (constants in an exported graph).
    """

    def __init__(self, scale: float, zero_point: int, dtype: torch.dtype = torch.quint8):
        super().__init__()
        if dtype not in _CODES:
            raise ValueError(f"qplugin.pt2.Quantize: expected dtype torch.quint8 or torch.qint8, "
                             f"got {dtype}")
        self.scale = float(scale)
        self.zero_point = int(zero_point)
        self.dtype = dtype
        QTensor(torch.zeros(0, dtype=_CODES[dtype]), self.scale, self.zero_point)  # checks

    def forward(self, X: torch.Tensor) -> QTensor:
        if isinstance(X, QTensor):
            raise ValueError("qplugin.pt2.Quantize: expected a torch.float32 input tensor, got a "
                             "qplugin.pt2.QTensor (it is quantized already)")
        if X.dtype != torch.float32:
            raise ValueError(f"qplugin.pt2.Quantize: expected a torch.float32 input tensor, got "
                             f"{X.dtype}; convert it with .float() first")
        if _QUANTIZE_PLAIN is None:
            raise NotImplementedError("qplugin.pt2.Quantize: this build of qplugin registers no "
                                      "qplugin::quantize_per_tensor.plain")
        codes = _QUANTIZE_PLAIN(X, self.scale, self.zero_point, _CODES[self.dtype])
        return QTensor(codes, self.scale, self.zero_point)

    @classmethod
    def from_quantized(cls, mod):
        return cls(float(mod.scale), int(mod.zero_point), mod.dtype)

    def to_quantized(self):
        from qplugin.nn import Quantize as LegacyQuantize
        return LegacyQuantize(self.scale, self.zero_point, self.dtype)

    def extra_repr(self):
        return f"scale={self.scale}, zero_point={self.zero_point}, dtype={self.dtype}"


class DeQuantize(torch.nn.Module):
    """qplugin.pt2.QTensor -> float32 ``(q - zero_point) * scale``
    (``qplugin::dequantize.plain``); a float input passes through, as qplugin.nn.DeQuantize."""

    def forward(self, Xq: torch.Tensor) -> torch.Tensor:
        if isinstance(Xq, QTensor):
            return Xq.dequantize()
        if Xq.is_quantized:
            raise TypeError("qplugin.pt2.DeQuantize: expected a qplugin.pt2.QTensor, got a "
                            f"{Xq.dtype} tensor (a TorchScript-door model part); convert the "
                            "model with qplugin.pt2.from_quantized")
        return Xq

    @classmethod
    def from_quantized(cls, mod):
        return cls()

    def to_quantized(self):
        from qplugin.nn import DeQuantize as LegacyDeQuantize
        return LegacyDeQuantize()


def _qbuffer(mod, name: str) -> QTensor:
    """The QTensor of a quantized buffer from_quantized turned into plain codes."""
    _, scale, zero_point = mod._qplugin_pt2_qbuffers[name]
    return QTensor(mod._buffers[name], scale, zero_point)


class PReLU(_LegacyPReLU):
    """qplugin.nn.PReLU on the PT2 door: the same module (state, repr, output qparams) with its
    quint8 / qint8 weight held as plain codes plus Python qparams; forward passes it to
    qplugin::prelu as a QTensor (routed to prelu.plain)."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return torch.ops.qplugin.prelu(input, _qbuffer(self, "weight"), float(self.scale),
                                       int(self.zero_point))


def _twin_map():
    """{qplugin.nn class keeping quantized buffers: its PT2 twin (same state, forward on
    QTensor)}."""
    return {_LegacyPReLU: PReLU}


def _untwin_map():
    return {v: k for k, v in _twin_map().items()}


def _swap_map():
    from qplugin import nn as qnn
    return {qnn.Quantize: Quantize, qnn.DeQuantize: DeQuantize}


def _scalars_of(mod) -> Dict[str, Tuple[torch.dtype, Tuple[int, ...]]]:
    """One-element scale / zero_point buffers of a module (its own, not its children's)."""
    found = {}
    for name in ("scale", "zero_point"):
        b = mod._buffers.get(name)
        if isinstance(b, torch.Tensor) and not b.is_quantized and b.numel() == 1:
            found[name] = (b.dtype, tuple(b.shape))
    return found


def _quantized_buffers_of(mod) -> Dict[str, torch.Tensor]:
    """Per-tensor quint8 / qint8 buffers of a module (its own, not its children's)."""
    return {n: b for n, b in mod._buffers.items()
            if isinstance(b, torch.Tensor) and not isinstance(b, QTensor) and b.is_quantized
            and b.dtype in _CODES and b.qscheme() in (torch.per_tensor_affine,
                                                      torch.per_tensor_symmetric)}


def _check_no_quantized_state(model):
    for name, t in list(model.named_buffers()) + list(model.named_parameters()):
        if t.is_quantized:
            raise NotImplementedError(
                f"qplugin.pt2.from_quantized: {name} is a {t.dtype} tensor; the PT2 door has no "
                "route for modules keeping quantized-dtype tensors yet")


def from_quantized(model: torch.nn.Module, inplace: bool = False) -> torch.nn.Module:
    """The PT2 form of a model converted by qplugin.quantization.convert (or migrated with
    from_torch_ao): Quantize / DeQuantize swapped for qplugin.pt2's, qparam buffers as Python
    scalars; every other qplugin.nn module is kept (same packed params) and runs on
    qplugin.pt2.QTensor through the `.plain` ops. A deep copy unless ``inplace=True``. The result
    takes and returns float tensors, as the original; it exports with torch.export, compiles with
    torch.compile and packages with AOTInductor. ``to_quantized`` goes back."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"qplugin.pt2.from_quantized: expected a torch.nn.Module, got "
                        f"{type(model).__name__}")
    if isinstance(model, torch.jit.ScriptModule):
        raise TypeError("qplugin.pt2.from_quantized: expected an eager module, got a "
                        "TorchScript module; convert the eager model")
    if not inplace:
        model = copy.deepcopy(model)
    swap = _swap_map()
    if type(model) in swap:
        return swap[type(model)].from_quantized(model)
    for parent in list(model.modules()):
        for name, child in list(parent._modules.items()):
            if child is not None and type(child) in swap:
                parent._modules[name] = swap[type(child)].from_quantized(child)
    for mod in model.modules():
        if isinstance(mod, (Quantize, DeQuantize)):
            continue
        scalars = _scalars_of(mod)
        if not scalars:
            continue
        values = {n: mod._buffers[n] for n in scalars}
        for n in scalars:
            del mod._buffers[n]
        for n, t in values.items():
            v = t.item()
            object.__setattr__(mod, n, float(v) if n == "scale" else int(v))
        object.__setattr__(mod, _SCALARS, dict(getattr(mod, _SCALARS, {}), **scalars))
    twins = _twin_map()
    for mod in model.modules():
        twin = twins.get(type(mod))
        if twin is None:
            continue
        # A module keeping per-tensor quantized buffers (PReLU's weight): the buffers become
        # plain codes, their qparams Python scalars (_QBUFFERS), and the module's class a twin
        # whose forward wraps them in a QTensor per call. (A QTensor *buffer* cannot be used:
        # torch.export fakifies buffers and a QTensor reports is_quantized, which FakeTensor
        # rejects: "quantized nyi in meta tensors".)
        qbufs = {}
        for n, t in _quantized_buffers_of(mod).items():
            mod._buffers[n] = t.int_repr()
            qbufs[n] = (t.dtype, float(t.q_scale()), int(t.q_zero_point()))
        object.__setattr__(mod, _QBUFFERS, qbufs)
        mod.__class__ = twin
    _check_no_quantized_state(model)
    return model


def to_quantized(model: torch.nn.Module, inplace: bool = False) -> torch.nn.Module:
    """The TorchScript-door form of a from_quantized model: qplugin.nn.Quantize / DeQuantize
    back, qparam scalars back into buffers of their original dtype and shape. A deep copy unless
    ``inplace=True``."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"qplugin.pt2.to_quantized: expected a torch.nn.Module, got "
                        f"{type(model).__name__}")
    if not inplace:
        model = copy.deepcopy(model)
    if isinstance(model, (Quantize, DeQuantize)):
        return model.to_quantized()
    for parent in list(model.modules()):
        for name, child in list(parent._modules.items()):
            if isinstance(child, (Quantize, DeQuantize)):
                parent._modules[name] = child.to_quantized()
    for mod in model.modules():
        if type(mod) in _untwin_map():
            mod.__class__ = _untwin_map()[type(mod)]
        for n, (_, scale, zero_point) in mod.__dict__.pop(_QBUFFERS, {}).items():
            mod._buffers[n] = torch._make_per_tensor_quantized_tensor(
                mod._buffers[n], scale, zero_point)
        scalars = mod.__dict__.pop(_SCALARS, None)
        if not scalars:
            continue
        for n, (dtype, shape) in scalars.items():
            v = mod.__dict__.pop(n)
            mod.register_buffer(n, torch.full(shape, v, dtype=dtype))
    return model
