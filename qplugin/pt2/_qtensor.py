"""QTensor: the carrier of a quantized activation on the PyTorch 2 front door (docs/pt2.md).

A plain uint8/int8 tensor of codes plus its quantization parameters: per tensor (a float scale and
an int zero point, Python numbers, so that torch.export bakes them into the graph as constants)
or per channel (float scales and int zero points as tensors, with the channel axis). No quantized
dtype anywhere: the codes are an ordinary tensor and every op on them is an ordinary op.

The shape and view ops that quantized models apply between modules (view, reshape, flatten,
permute, ...) are handled at the __torch_function__ level: they run on the codes and wrap the
result with the same qparams. That is what makes the carrier traceable: measured with torch
2.13, a wrapper subclass that handles them only in __torch_dispatch__ cannot be created inside a
module's forward under torch.export (pre-dispatch tracing never reaches its __torch_dispatch__:
"Unable to cast NotImplemented to Tensor"), while __torch_function__ handling leaves plain aten
ops on uint8 tensors in the exported graph and gives torch.compile no graph break. Any other op
raises NotImplementedError naming it (from __torch_dispatch__): arithmetic on codes without
requantization is the silent garbage qplugin exists to prevent. __tensor_flatten__ /
__tensor_unflatten__ describe it to PyTorch's subclass machinery; an exported program's inputs and
outputs are float (the model's Quantize / DeQuantize make and unmake QTensors inside), since torch
2.13's non-strict export does not yet track a QTensor passed in as an input.

Changes with: docs/pt2.md, tests/pt2/test_qtensor.py.
"""
import sys

import torch
from torch._subclasses.fake_tensor import FakeTensor

from . import _router

__all__ = ["QTensor"]

_T = torch.Tensor
_IS_QUANTIZED = _T.is_quantized.__get__
# PyTorch modules whose `t.is_quantized` means a quantized dtype (fakeification of a tensor).
_FAKE_CONVERTERS = frozenset({"torch._subclasses.fake_tensor", "torch._subclasses.meta_utils"})
try:  # qplugin::dequantize.plain (resolved once: forward does no lookup Dynamo must trace)
    _DEQUANTIZE_PLAIN = torch.ops.qplugin.dequantize.plain
except (AttributeError, RuntimeError):
    _DEQUANTIZE_PLAIN = None

# Ops that only move or select codes: result codes = op(codes), qparams unchanged (per tensor).
_SAME_QPARAMS = {
    _T.view, _T.reshape, torch.reshape, _T.flatten, torch.flatten, _T.unflatten, torch.unflatten,
    _T.permute, torch.permute, _T.transpose, torch.transpose, _T.t, torch.t, _T.contiguous,
    _T.squeeze, torch.squeeze, _T.unsqueeze, torch.unsqueeze, _T.select, torch.select,
    _T.narrow, torch.narrow, _T.__getitem__, _T.clone, torch.clone, _T.detach, torch.detach,
    _T.expand, _T.flip, torch.flip, _T.view_as, _T.reshape_as, _T.movedim, torch.movedim,
}
# relu forms (torch.nn.functional.relu(x, inplace) included).
_RELUS = {torch.relu, _T.relu, torch.relu_, _T.relu_, torch.nn.functional.relu}
# Ops returning a tuple or list of code tensors.
_SPLITS = {_T.chunk, torch.chunk, _T.split, torch.split, _T.unbind, torch.unbind}
def _check_per_tensor_args(scale, zero_point, dtype):
    if not isinstance(scale, float) or not (scale > 0.0) or scale == float("inf"):
        raise ValueError(f"qplugin.QTensor: expected a finite positive float scale, got {scale!r}")
    if isinstance(zero_point, bool) or not isinstance(zero_point, int):
        raise TypeError(f"qplugin.QTensor: expected an int zero_point, got {zero_point!r}")
    lo, hi = (0, 255) if dtype == torch.uint8 else (-128, 127)
    if not lo <= zero_point <= hi:
        raise ValueError(f"qplugin.QTensor: expected a zero_point in [{lo}, {hi}] for {dtype}, "
                         f"got {zero_point}")


def _dynamo_tls():
    from torch._dynamo import symbolic_convert  # Dynamo's tracer state (current_tx while tracing)
    return symbolic_convert.tls


def _traced_int(value, codes):
    """`value` (a Python int: the zero point) as `q_zero_point()` returns it. Dynamo puts a
    method call on a QTensor (an opaque traceable wrapper subclass to it) in its graph and runs
    it on fake codes to learn the result; an int result is a graph break there ("torch.* op
    returned non-Tensor"; a float, like q_scale's, is taken as a constant). While Dynamo traces,
    on fake codes, the result is therefore a SymInt whose expression is the constant itself:
    Dynamo specializes on it (a constant, as q_scale) and it works as the int (int(), ==,
    arithmetic, int arguments of ops, QTensor's zero_point). Anywhere else (eager, export,
    AOTAutograd) the plain int."""
    if (isinstance(codes, FakeTensor) and codes.fake_mode.shape_env is not None
            and getattr(_dynamo_tls(), "current_tx", None) is not None):
        import sympy
        from torch.fx.experimental.sym_node import SymNode
        return torch.SymInt(SymNode(sympy.Integer(value), codes.fake_mode.shape_env, int, value))
    return value


class QTensor(torch.Tensor):
    """Quantized activation on plain tensors: `int_data` (uint8 or int8 codes) with `scale` and
    `zero_point` (per tensor: float and int; per channel: float32 and int64 tensors along
    `axis`). Value of a code q: (q - zero_point) * scale."""

    @staticmethod
    def __new__(cls, int_data, scale, zero_point, axis=None):
        if not isinstance(int_data, torch.Tensor) or int_data.dtype not in (torch.uint8,
                                                                            torch.int8):
            got = int_data.dtype if isinstance(int_data, torch.Tensor) else type(int_data)
            raise TypeError(f"qplugin.QTensor: expected uint8 or int8 codes, got {got}")
        if isinstance(int_data, QTensor):
            raise TypeError("qplugin.QTensor: expected plain codes, got a QTensor")
        return torch.Tensor._make_wrapper_subclass(
            cls, int_data.shape, strides=int_data.stride(),
            dtype=int_data.dtype, device=int_data.device, requires_grad=False)

    def __init__(self, int_data, scale, zero_point, axis=None):
        if axis is None:
            if isinstance(scale, int) and not isinstance(scale, bool):
                scale = float(scale)
            if isinstance(zero_point, torch.SymInt):  # q_zero_point() while Dynamo traces
                zero_point = int(zero_point)
            _check_per_tensor_args(scale, zero_point, int_data.dtype)
        else:
            if isinstance(axis, bool) or not isinstance(axis, int) or not (
                    -int_data.dim() <= axis < int_data.dim()):
                raise ValueError(f"qplugin.QTensor: expected an axis in "
                                 f"[{-int_data.dim()}, {int_data.dim()}), got {axis!r}")
            axis = axis % int_data.dim()
            n = int_data.shape[axis]
            if not (isinstance(scale, torch.Tensor) and scale.dim() == 1 and scale.numel() == n
                    and isinstance(zero_point, torch.Tensor) and zero_point.shape == scale.shape):
                raise ValueError(f"qplugin.QTensor: per-channel qparams need 1-D scale and "
                                 f"zero_point tensors of length {n} (size of axis {axis})")
        self.int_data = int_data
        self.scale = scale
        self.zero_point = zero_point
        self.axis = axis

    # -- PT2 traceability: the codes are the only inner tensor; qparams are static metadata --
    def __tensor_flatten__(self):
        if self.axis is None:
            return ["int_data"], (self.scale, self.zero_point, None)
        return ["int_data", "scale", "zero_point"], (None, None, self.axis)

    @staticmethod
    def __tensor_unflatten__(inner, ctx, outer_size, outer_stride):
        scale, zero_point, axis = ctx
        if axis is None:
            return QTensor(inner["int_data"], scale, zero_point)
        return QTensor(inner["int_data"], inner["scale"], inner["zero_point"], axis)

    def __repr__(self):
        if self.axis is None:
            q = f"scale={self.scale}, zero_point={self.zero_point}"
        else:
            q = f"axis={self.axis}, scale={self.scale}, zero_point={self.zero_point}"
        return f"QTensor({self.int_data}, {q})"

    def dequantize(self):
        """float32 values (codes - zero_point) * scale."""
        with torch._C.DisableTorchFunctionSubclass():
            if self.axis is None and _DEQUANTIZE_PLAIN is not None:
                # The same kernel as the TorchScript door's Tensor.dequantize.
                return _DEQUANTIZE_PLAIN(self.int_data, self.scale, self.zero_point)
            codes = self.int_data.to(torch.float32)
            if self.axis is None:
                return (codes - self.zero_point) * self.scale
            shape = [1] * codes.dim()
            shape[self.axis] = -1
            return ((codes - self.zero_point.reshape(shape).to(torch.float32))
                    * self.scale.reshape(shape).to(torch.float32))

    def _wrap(self, codes):
        return QTensor(codes, self.scale, self.zero_point)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if _router.is_qplugin_op(func):
            # A qplugin op called by a module as on the TorchScript door: its .plain overload.
            return _router.route_call(func, args, kwargs)
        name = getattr(func, "__name__", repr(func))
        if func is _T.dequantize or func is torch.dequantize:
            return args[0].dequantize()
        if func == _IS_QUANTIZED:
            # Module code branches on it (pooling, upsample, functional forms): a QTensor is a
            # quantized activation, on plain codes. Not to PyTorch's fake-tensor converter, which
            # asks whether the storage has a quantized dtype (it refuses those: "quantized nyi in
            # meta tensors", so a QTensor input of a compiled region would fall back to eager).
            return sys._getframe(1).f_globals.get("__name__") not in _FAKE_CONVERTERS
        if func in _RELUS:
            # relu of a per-tensor quantized tensor keeps its qparams: max(code, zero_point) (what
            # PyTorch's quantized relu computes; float nn.ReLU modules stay in converted models).
            q = args[0]
            if q.axis is not None:
                raise NotImplementedError(f"qplugin.QTensor: {name} on a per-channel QTensor")
            inplace = func in (torch.relu_, _T.relu_) or bool(
                kwargs.get("inplace", args[1] if len(args) > 1 else False))
            if inplace:
                with torch._C.DisableTorchFunctionSubclass():
                    q.int_data.clamp_min_(q.zero_point)
                return q
            return q._wrap(torch.clamp_min(q.int_data, q.zero_point))
        if func in (_T.q_scale, _T.q_zero_point, _T.int_repr):
            q = args[0]
            if q.axis is not None:
                raise NotImplementedError(f"qplugin.QTensor: {name} on a per-channel QTensor "
                                          f"(axis {q.axis}); use .scale / .zero_point")
            if func is _T.q_scale:
                return q.scale
            return _traced_int(q.zero_point, q.int_data) if func is _T.q_zero_point else q.int_data
        q = args[0] if args else None
        if not isinstance(q, QTensor):
            q = next((a for a in (list(args) + list(kwargs.values())) if isinstance(a, QTensor)),
                     None)
        if func in _SAME_QPARAMS or func in _SPLITS or func in (
                _T.max, torch.max, _T.argmax, torch.argmax, torch.cat, torch.concat,
                torch.concatenate, torch.stack) or func is _T.to:
            if q is not None and q.axis is not None:
                raise NotImplementedError(
                    f"qplugin.QTensor: {name} on a per-channel QTensor (axis {q.axis}) is not "
                    "supported; per-channel carriers hold weights, not activations")
        if func in _SAME_QPARAMS:
            return q._wrap(func(q.int_data, *args[1:], **kwargs))
        if func in _SPLITS:
            parts = func(q.int_data, *args[1:], **kwargs)
            return type(parts)(q._wrap(c) for c in parts)
        if func is _T.to:
            return cls._to(q, *args[1:], **kwargs)
        if func in (_T.max, torch.max):
            # scale > 0: the largest code is the largest value; max(x, y) of two tensors too,
            # when both carry the same qparams.
            other = args[1] if len(args) > 1 else kwargs.get("other")
            if isinstance(other, torch.Tensor):
                cls._same_qparams(name, [q, other])
                return q._wrap(torch.maximum(q.int_data, other.int_data))
            out = func(q.int_data, *args[1:], **kwargs)
            if isinstance(out, torch.Tensor):
                return q._wrap(out)
            return type(out)((q._wrap(out[0]), out[1]))
        if func in (_T.argmax, torch.argmax):
            return func(q.int_data, *args[1:], **kwargs)
        if func in (torch.cat, torch.concat, torch.concatenate, torch.stack):
            seq = args[0] if args else kwargs["tensors"]
            cls._same_qparams(name, seq)
            rest = {k: v for k, v in kwargs.items() if k != "tensors"}
            return seq[0]._wrap(func([t.int_data for t in seq], *args[1:], **rest))
        # Everything else (metadata, PyTorch's own helpers that export and copy call) takes the
        # default path; an op that computes on the codes then reaches __torch_dispatch__, which
        # rejects it by name.
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **kwargs)

    @staticmethod
    def _same_qparams(name, seq):
        if not all(isinstance(t, QTensor) and t.axis is None for t in seq):
            raise TypeError(f"qplugin.QTensor: {name} expects per-tensor QTensors only, got "
                            f"{[type(t).__name__ for t in seq]}")
        s0, z0, d0 = seq[0].scale, seq[0].zero_point, seq[0].dtype
        for t in seq[1:]:
            if (t.scale, t.zero_point, t.dtype) != (s0, z0, d0):
                raise ValueError(
                    f"qplugin.QTensor: {name} expects equal qparams, got (scale {s0}, zero_point "
                    f"{z0}, {d0}) and (scale {t.scale}, zero_point {t.zero_point}, {t.dtype}); "
                    "use qplugin's cat, which requantizes")

    @staticmethod
    def _to(q, *args, **kwargs):
        # Only memory_format / copy (and a no-op device or dtype) keep the codes meaningful.
        dtype = kwargs.get("dtype", next((a for a in args if isinstance(a, torch.dtype)), None))
        if dtype is not None and dtype != q.dtype:
            raise TypeError(f"qplugin.QTensor: to({dtype}) would reinterpret codes of dtype "
                            f"{q.dtype}; call .dequantize() for float values")
        return q._wrap(q.int_data.to(*args, **kwargs))

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        # Reached only by PyTorch's own machinery (e.g. detach/alias when a QTensor is a graph
        # input); user-level ops are handled above.
        kwargs = kwargs or {}
        aten = torch.ops.aten
        if func in (aten.detach.default, aten.alias.default, aten.clone.default,
                    aten.view.default, aten._unsafe_view.default, aten.t.default,
                    aten.permute.default, aten.transpose.int):
            q = args[0]
            if q.axis is None:
                return q._wrap(func(q.int_data, *args[1:], **kwargs))
        # NotImplementedError, not TypeError: Tensor's binary operators turn a TypeError into
        # NotImplemented, and Python's own message would hide this one.
        raise NotImplementedError(
            f"qplugin.QTensor: {func} is not supported on a quantized activation: expected a "
            "shape or view op (view, reshape, flatten, permute, transpose, contiguous, squeeze, "
            "unsqueeze, select, narrow, slicing, chunk, split, cat/stack of equal qparams, max, "
            "argmax, clone, detach); use a qplugin module or op, or call .dequantize() first")
