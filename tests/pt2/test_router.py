# The PT2 door's router (qplugin/pt2/_router.py): a legacy torch.ops.qplugin call on QTensors
# runs the .plain overload named by its Route row, arguments rewritten by the docs/pt2.md §3
# convention, result wrapped with the route's output qparams; in eager, under torch.export and
# torch.compile (no graph break). Tested on test-only ops defined here (the real rows are tested
# with the models in test_pt2_models.py and per family).
# Changes with: qplugin/pt2/_router.py, qplugin/pt2/_route.py, qplugin/pt2/_qtensor.py.
import pytest
import torch

import qplugin.pt2.routes as routes_pkg
from qplugin.pt2 import QTensor, _router
from qplugin.pt2._route import Route, given, same_as_input

_LIB = torch.library.Library("qplugin", "FRAGMENT")
# A unary op with optional output qparams (defaults: the input's) and a dropped inplace flag.
_LIB.define("_rt_shift(Tensor qx, int shift, float? output_scale=None, "
            "int? output_zero_point=None, bool inplace=False) -> Tensor")
_LIB.define("_rt_shift.plain(Tensor qx, float qx_scale, int qx_zero_point, int shift, "
            "float output_scale, int output_zero_point) -> Tensor")
# A list op (cat-like), two overloads in one packet: Tensor[] and Tensor, Scalar.
_LIB.define("_rt_join(Tensor[] qxs, int dim, float scale, int zero_point) -> Tensor")
_LIB.define("_rt_join.plain(Tensor[] qxs, float[] qxs_scales, int[] qxs_zero_points, int dim, "
            "float scale, int zero_point) -> Tensor")
_LIB.define("_rt_join.Scalar(Tensor qx, float other) -> Tensor")
_LIB.define("_rt_join.Scalar_plain(Tensor qx, float qx_scale, int qx_zero_point, float other) "
            "-> Tensor")
# A route whose .plain overload has an argument the convention cannot place.
_LIB.define("_rt_bad(Tensor qx) -> Tensor")
_LIB.define("_rt_bad.plain(Tensor qx, float mystery) -> Tensor")

CALLS = []


def _shift(qx, s, z, shift, os_, oz):
    CALLS.append(("shift", s, z, shift, os_, oz))
    return (qx.to(torch.int32) + shift).clamp(0, 255).to(torch.uint8)


def _join(qxs, scales, zps, dim, s, z):
    CALLS.append(("join", list(scales), list(zps), dim, s, z))
    return torch.cat(qxs, dim)


def _join_scalar(qx, s, z, other):
    CALLS.append(("join_scalar", s, z, other))
    return qx.clone()


for _name, _fn, _fake in [
        ("_rt_shift.plain", _shift, lambda qx, s, z, sh, os_, oz: torch.empty_like(qx)),
        ("_rt_join.plain", _join, lambda qxs, s, z, d, os_, oz: torch.cat(qxs, d)),
        ("_rt_join.Scalar_plain", _join_scalar, lambda qx, s, z, o: torch.empty_like(qx))]:
    _LIB.impl(_name, _fn, "CPU")
    torch.library.register_fake(f"qplugin::{_name}", _fake, lib=_LIB)

ROWS = [
    Route("_rt_shift", "_rt_shift.plain",
          given("output_scale", "output_zero_point", dtype="input:qx",
                default=same_as_input("qx")), drop=("inplace",)),
    Route("_rt_join", "_rt_join.plain", given("scale", "zero_point")),
    Route("_rt_join.Scalar", "_rt_join.Scalar_plain", same_as_input("qx")),
    Route("_rt_bad", "_rt_bad.plain", same_as_input("qx")),
]


@pytest.fixture(autouse=True)
def _routes(monkeypatch):
    real = routes_pkg.all_routes
    monkeypatch.setattr(routes_pkg, "all_routes", lambda: real() + ROWS)
    _router._reset()
    CALLS.clear()
    yield
    monkeypatch.undo()
    _router._reset()


def _q(shape=(2, 3), scale=0.5, zp=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    return QTensor(torch.randint(0, 200, shape, generator=g, dtype=torch.uint8), scale, zp)


def test_unary_route_fills_optional_output_qparams():
    q = _q()
    out = torch.ops.qplugin._rt_shift(q, 3)
    assert isinstance(out, QTensor) and (out.scale, out.zero_point) == (0.5, 10)
    assert torch.equal(out.int_data, (q.int_data.int() + 3).clamp(0, 255).to(torch.uint8))
    assert CALLS == [("shift", 0.5, 10, 3, 0.5, 10)]
    # Explicit output qparams (keyword and positional; the dropped inplace flag accepted).
    out = torch.ops.qplugin._rt_shift(q, 1, output_scale=0.25, output_zero_point=4)
    assert (out.scale, out.zero_point) == (0.25, 4)
    out = torch.ops.qplugin._rt_shift.default(q, 1, 0.125, 2, True)
    assert (out.scale, out.zero_point) == (0.125, 2)
    assert CALLS[1:] == [("shift", 0.5, 10, 1, 0.25, 4), ("shift", 0.5, 10, 1, 0.125, 2)]


def test_list_route_and_packet_overload_resolution():
    a, b = _q(seed=1), _q(scale=0.25, zp=3, seed=2)
    out = torch.ops.qplugin._rt_join([a, b], 0, 0.75, 5)
    assert isinstance(out, QTensor) and (out.scale, out.zero_point) == (0.75, 5)
    assert torch.equal(out.int_data, torch.cat([a.int_data, b.int_data]))
    out = torch.ops.qplugin._rt_join(a, 2.5)  # the Scalar overload, by argument kinds
    assert (out.scale, out.zero_point) == (0.5, 10)
    assert CALLS == [("join", [0.5, 0.25], [10, 3], 0, 0.75, 5), ("join_scalar", 0.5, 10, 2.5)]


def test_errors_name_the_op_and_argument():
    q = _q()
    with pytest.raises(TypeError, match=r"qplugin::_rt_shift: missing argument 'shift'"):
        torch.ops.qplugin._rt_shift.default(q)
    with pytest.raises(TypeError, match=r"qplugin::_rt_shift: unexpected argument 'bogus'"):
        torch.ops.qplugin._rt_shift.default(q, 1, bogus=2)
    pc = QTensor(torch.zeros(3, 2, dtype=torch.uint8), torch.ones(3),
                 torch.zeros(3, dtype=torch.long), axis=0)
    with pytest.raises(NotImplementedError, match=r"argument 'qx' is a per-channel QTensor"):
        torch.ops.qplugin._rt_shift(pc, 1)
    with pytest.raises(TypeError, match=r"expected plain codes with explicit qparams"):
        torch.ops.qplugin._rt_shift.plain(q, 0.5, 10, 1, 0.5, 10)
    with pytest.raises(RuntimeError, match=r"argument 'mystery' .* is neither a legacy argument"):
        torch.ops.qplugin._rt_bad(q)
    with pytest.raises(NotImplementedError, match=r"has no PT2 route"):
        torch.ops.qplugin._cpu_isa.default(q)
    assert CALLS == []


class _M(torch.nn.Module):
    def forward(self, x):
        q = QTensor(torch.clamp(torch.round(x / 0.5) + 10, 0, 255).to(torch.uint8), 0.5, 10)
        assert q.is_quantized and q.q_scale() == 0.5 and q.q_zero_point() == 10
        q = torch.ops.qplugin._rt_shift(q, 2)
        a, b = q.chunk(2, 1)
        q = torch.ops.qplugin._rt_join([b, a], 1, 0.5, 10)
        return q.int_repr().to(torch.int32), q.dequantize()


def test_export_and_compile_trace_the_plain_overloads():
    m, x = _M(), torch.randn(3, 4, generator=torch.Generator().manual_seed(5))
    want = m(x)
    ep = torch.export.export(m, (x,), strict=False)
    targets = [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]
    assert "qplugin._rt_shift.plain" in targets and "qplugin._rt_join.plain" in targets
    assert not any(t in ("qplugin._rt_shift.default", "qplugin._rt_join.default")
                   for t in targets)
    for got, w in zip(ep.module()(x), want):
        assert torch.equal(got, w)
    torch._dynamo.reset()
    explain = torch._dynamo.explain(m)(x)
    assert explain.graph_break_count == 0, explain.break_reasons
    for got, w in zip(torch.compile(m, backend="aot_eager")(x), want):
        assert torch.equal(got, w)
