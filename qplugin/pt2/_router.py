"""The PT2 door's router: a `torch.ops.qplugin.<legacy op>` call whose quantized arguments are
`QTensor`s runs the op's `.plain` overload (docs/pt2.md §3) and returns a QTensor.

`QTensor.__torch_function__` calls `route_call(func, args, kwargs)` for every qplugin op it sees
(an `OpOverloadPacket` such as `torch.ops.qplugin.conv2d`, or an `OpOverload`). The Route rows
(`qplugin.pt2.routes.all_routes()`) are compiled once into plans: for every argument of the
`.plain` schema, where its value comes from in the legacy call (the argument itself, its codes,
or the scale / zero point of a QTensor argument, or an output qparam that the route computes when
the legacy call passed None). Running a plan is plain Python on the bound arguments, so Dynamo
inlines it (no graph break) and torch.export traces only the `.plain` op.

Changes with: qplugin/pt2/_route.py (the rows), qplugin/pt2/_qtensor.py (the caller),
tests/pt2/test_pt2_models.py.
"""
import numbers
from typing import Any, Dict, List, Optional, Tuple

import torch

from ._route import Route

__all__ = ["route_call", "plans"]

_QUANTIZED_CODES = {torch.uint8, torch.int8, torch.int32}


def _kind(t) -> str:
    """'tensor', 'tensors', 'number' or 'other' for a schema argument type (for overload
    resolution of an OpOverloadPacket call)."""
    if isinstance(t, torch.OptionalType):
        t = t.getElementType()
    if isinstance(t, torch.TensorType):
        return "tensor"
    if isinstance(t, torch.ListType) and isinstance(t.getElementType(), torch.TensorType):
        return "tensors"
    if isinstance(t, (torch.FloatType, torch.IntType, torch.NumberType, torch.BoolType)):
        return "number"
    return "other"


class _Plan:
    """One Route compiled against the registered schemas of its legacy and `.plain` overloads."""

    __slots__ = ("route", "legacy", "plain", "name", "names", "kinds", "defaults", "steps")

    def __init__(self, route: Route, legacy, plain):
        self.route, self.legacy, self.plain = route, legacy, plain
        self.name = f"qplugin::{route.legacy}"
        args = legacy._schema.arguments
        self.names = tuple(a.name for a in args)
        self.kinds = tuple(_kind(a.type) for a in args)
        self.defaults = {a.name: a.default_value for a in args if a.has_default_value()}
        legacy_by_name = {a.name: a for a in args}
        steps: List[Tuple[str, str, int]] = []
        for a in plain._schema.arguments:
            n = a.name
            la = legacy_by_name.get(n)
            if la is not None:
                # An optional legacy output qparam the .plain overload requires (docs/pt2.md §3):
                # when the call passes None, the route's default (PyTorch's) fills it.
                fill = -1
                if isinstance(la.type, torch.OptionalType) and not isinstance(
                        a.type, torch.OptionalType):
                    fill = 0 if isinstance(a.type, torch.FloatType) else 1
                steps.append(("arg", n, fill))
                continue
            for suffix, kind in (("_scale", "scale"), ("_zero_point", "zero_point"),
                                 ("_scales", "scales"), ("_zero_points", "zero_points")):
                base = n[:-len(suffix)]
                if n.endswith(suffix) and base in legacy_by_name:
                    steps.append((kind, base, -1))
                    break
            else:
                raise RuntimeError(
                    f"qplugin.pt2: route {route.legacy} -> {route.plain}: argument {n!r} of "
                    f"{plain._schema} is neither a legacy argument ({', '.join(self.names)}) nor "
                    "a qparam of one (<arg>_scale, <arg>_zero_point, <arg>_scales, "
                    "<arg>_zero_points)")
        self.steps = tuple(steps)

    def matches(self, args, kwargs) -> bool:
        """Whether a packet call's arguments fit this overload's schema (kinds only)."""
        if len(args) > len(self.names):
            return False
        for k in kwargs:
            if k not in self.names:
                return False
        for i, v in enumerate(args):
            kind = self.kinds[i]
            if kind == "tensor" and not (v is None or isinstance(v, torch.Tensor)):
                return False
            if kind == "tensors" and not isinstance(v, (list, tuple)):
                return False
            if kind == "number" and (isinstance(v, torch.Tensor) or not isinstance(
                    v, (numbers.Number, torch.SymInt, torch.SymFloat, torch.SymBool))):
                return False
        for n in self.names[len(args):]:
            if n not in kwargs and n not in self.defaults:
                return False
        return True

    def bind(self, args, kwargs) -> Dict[str, Any]:
        if len(args) > len(self.names):
            raise TypeError(f"{self.name}: expected at most {len(self.names)} arguments, got "
                            f"{len(args)}")
        bound = {}
        for i, v in enumerate(args):
            bound[self.names[i]] = v
        for k, v in kwargs.items():
            if k not in self.names:
                raise TypeError(f"{self.name}: unexpected argument {k!r}; expected one of "
                                f"{', '.join(self.names)}")
            bound[k] = v
        for n in self.names:
            if n not in bound:
                if n not in self.defaults:
                    raise TypeError(f"{self.name}: missing argument {n!r}")
                bound[n] = self.defaults[n]
        return bound

    def run(self, args, kwargs):
        from ._qtensor import QTensor
        a = self.bind(args, kwargs)
        for n, v in a.items():  # before the route reads qparams: activations are per tensor
            if isinstance(v, QTensor):
                self._per_tensor(n, v)
            elif isinstance(v, (list, tuple)):
                for t in v:
                    if isinstance(t, QTensor):
                        self._per_tensor(n, t)
        out = self.route.out(a) if self.route.out is not None else None
        plain_args = []
        for kind, n, fill in self.steps:
            v = a[n]
            if kind == "arg":
                if isinstance(v, QTensor):
                    v = v.int_data
                elif isinstance(v, (list, tuple)) and len(v) > 0 and isinstance(v[0], QTensor):
                    v = [t.int_data for t in v]
                elif v is None and fill >= 0:
                    if out is None:
                        raise RuntimeError(f"{self.name}: argument {n!r} is None and the route "
                                           "computes no output qparams")
                    v = out[fill]
                elif isinstance(v, torch.Tensor) and v.is_quantized:
                    raise TypeError(
                        f"{self.name}: argument {n!r} is a {v.dtype} tensor while other "
                        "arguments are qplugin.pt2.QTensor; expected QTensors only on the PT2 "
                        "door (qplugin.pt2.from_quantized converts a model)")
            elif kind in ("scale", "zero_point"):
                if not isinstance(v, QTensor):
                    raise TypeError(f"{self.name}: expected argument {n!r} to be a "
                                    f"qplugin.pt2.QTensor, got {type(v).__name__}")
                v = v.scale if kind == "scale" else v.zero_point
            else:  # scales / zero_points of a list of QTensors
                if not isinstance(v, (list, tuple)) or not all(isinstance(t, QTensor) for t in v):
                    raise TypeError(f"{self.name}: expected argument {n!r} to be a list of "
                                    "qplugin.pt2.QTensor")
                v = [t.scale for t in v] if kind == "scales" else [t.zero_point for t in v]
            plain_args.append(v)
        result = self.plain(*plain_args)
        if out is None:
            return result
        if not isinstance(result, torch.Tensor):
            raise NotImplementedError(f"{self.name}: the router wraps one tensor result, got "
                                      f"{type(result).__name__} from {self.route.plain}")
        scale, zero_point, dtype = out
        if result.dtype != dtype:
            raise RuntimeError(f"{self.name}: expected {self.route.plain} to return {dtype} "
                               f"codes, got {result.dtype}")
        return QTensor(result, scale, zero_point)

    def _per_tensor(self, n, t):
        if t.axis is not None:
            raise NotImplementedError(f"{self.name}: argument {n!r} is a per-channel QTensor "
                                      f"(axis {t.axis}); expected a per-tensor activation")


class _BrokenPlan:
    """A Route whose .plain schema does not follow the convention: the error, when called."""

    def __init__(self, route: Route, message: str):
        self.route, self.message = route, message

    def matches(self, args, kwargs) -> bool:
        return True

    def run(self, args, kwargs):
        raise RuntimeError(self.message)


_BY_OVERLOAD: Optional[Dict[Any, _Plan]] = None
_BY_PACKET: Optional[Dict[Any, Tuple[_Plan, ...]]] = None


def _overload(qualified: str):
    """torch.ops.qplugin.<op>.<overload> for 'op' / 'op.overload', or None if not registered."""
    op, _, ov = qualified.partition(".")
    packet = getattr(torch.ops.qplugin, op, None) if hasattr(torch.ops.qplugin, op) else None
    if packet is None:
        return None, None
    try:
        return packet, getattr(packet, ov or "default")
    except AttributeError:
        return packet, None


def plans():
    """{legacy OpOverload: plan} and {OpOverloadPacket: plans}, built once from the routes whose
    `.plain` overload is registered."""
    global _BY_OVERLOAD, _BY_PACKET
    if _BY_OVERLOAD is None:
        from .routes import all_routes
        by_ov, by_packet = {}, {}
        for r in all_routes():
            packet, legacy = _overload(r.legacy)
            _, plain = _overload(r.plain)
            if legacy is None or plain is None:
                continue
            try:
                p = _Plan(r, legacy, plain)
            except RuntimeError as e:  # a row that breaks the convention fails when called
                p = _BrokenPlan(r, str(e))
            by_ov[legacy] = p
            by_packet.setdefault(packet, []).append(p)
        _BY_PACKET = {k: tuple(v) for k, v in by_packet.items()}
        _BY_OVERLOAD = by_ov
    return _BY_OVERLOAD, _BY_PACKET


def _reset():
    """Recompiles the plans from the current routes (tests that add routes). Done eagerly, as at
    import (qplugin/pt2/__init__.py): torch.compile traces route_call, and building the plans
    (importing the route modules) inside a compiled region would be a graph break."""
    global _BY_OVERLOAD, _BY_PACKET
    _BY_OVERLOAD = _BY_PACKET = None
    plans()


def is_qplugin_op(func) -> bool:
    if isinstance(func, torch._ops.OpOverload):
        return func.namespace == "qplugin"
    if isinstance(func, torch._ops.OpOverloadPacket):
        return func._qualified_op_name.startswith("qplugin::")
    return False


def route_call(func, args, kwargs):
    """Runs a legacy qplugin op called with QTensor arguments through its `.plain` overload."""
    by_ov, by_packet = plans()
    if isinstance(func, torch._ops.OpOverload):
        plan = by_ov.get(func)
        if plan is None:
            if func.overloadpacket._qualified_op_name.endswith(".plain") or \
                    func._overloadname.endswith("plain"):
                raise TypeError(f"{func}: expected plain codes with explicit qparams, got a "
                                "qplugin.pt2.QTensor; call the legacy op instead (it routes "
                                "here) or pass x.int_data, x.scale, x.zero_point")
            raise NotImplementedError(
                f"qplugin.pt2: {func} has no PT2 route (no .plain overload registered for "
                "it); it cannot run on qplugin.pt2.QTensor")
        return plan.run(args, kwargs)
    cands = by_packet.get(func, ())
    for plan in cands:
        if len(cands) == 1 or plan.matches(args, kwargs):
            return plan.run(args, kwargs)
    raise NotImplementedError(
        f"qplugin.pt2: torch.ops.qplugin.{func._qualified_op_name.split('::')[-1]} has no PT2 "
        "route for these arguments (routed overloads: "
        f"{', '.join(p.route.legacy for p in cands) or 'none'}); it cannot run on "
        "qplugin.pt2.QTensor")
