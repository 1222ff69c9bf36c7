"""Shared by tests/pt2/test_plain_{activation,elementwise,batch_norm}.py: a legacy op call and
its `.plain` twin compared byte for byte, through the op's Route row.

`run_both(route, args)` runs the legacy op `route.legacy` on `args` (quantized tensors where the
op takes them), then builds the `.plain` call from the same arguments the way the PT2 door does
(docs/pt2.md section 3; the router itself is qplugin.pt2's): every quantized tensor `x` becomes
its codes followed by `x_scale, x_zero_point` (lists: `xs_scales, xs_zero_points`), the route's
`drop` arguments are left out, and output qparams left None are filled in from the route's `out`
rule. It checks the plain schema follows the convention (argument names, order and types derived
from the legacy schema), that `out` gives the legacy result's qparams and code dtype, and that
the codes are identical: values, shape, strides (memory format) and dtype.
"""
import types

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import qplugin  # noqa: F401
import qplugin.pt2.fake  # noqa: F401  (registers the fake kernels)
from qplugin.pt2.routes import all_routes

QDTYPES = (torch.quint8, torch.qint8)
CODES = {torch.quint8: torch.uint8, torch.qint8: torch.int8, torch.qint32: torch.int32}
RANGE = {torch.quint8: (0, 255), torch.qint8: (-128, 127), torch.qint32: (-1000, 1000)}
OPCHECK_UTILS = ("test_schema", "test_faketensor", "test_aot_dispatch_dynamic")


def routes_by_legacy():
    return {r.legacy: r for r in all_routes()}


def overload(name):
    """"add.Scalar" -> torch.ops.qplugin.add.Scalar; "hardswish" -> ....hardswish.default."""
    op, _, ov = name.partition(".")
    return getattr(getattr(torch.ops.qplugin, op), ov or "default")


def qtensor(shape, qdtype, gen, scale=None, zero_point=None, layout=None):
    """A random per-tensor quantized tensor; `layout` maps a contiguous tensor to the layout
    under test (channels_last, a transpose, a strided slice)."""
    lo, hi = RANGE[qdtype]
    codes = torch.randint(lo, hi + 1, shape, generator=gen, dtype=torch.int64).to(CODES[qdtype])
    if scale is None:
        scale = float(torch.empty(()).uniform_(0.01, 0.2, generator=gen))
    if zero_point is None:
        zlo, zhi = (0, 255) if qdtype == torch.quint8 else (-128, 127)
        zero_point = int(torch.randint(max(lo, zlo), min(hi, zhi) + 1, (), generator=gen))
    q = torch._make_per_tensor_quantized_tensor(codes, scale, zero_point)
    return layout(q) if layout is not None else q


LAYOUTS = {
    "contiguous": None,
    "channels_last": lambda t: t.contiguous(memory_format=torch.channels_last),
    "transposed": lambda t: t.transpose(-1, -2),
    "strided": lambda t: t[..., ::2],
}


def layouts_for(dim):
    return [k for k in LAYOUTS if k != "channels_last" or dim == 4]


def _stand_in(q):
    """What a route's `out` reads of a QTensor (int_data, scale, zero_point), for any code dtype
    (QTensor itself carries 8-bit codes only)."""
    return types.SimpleNamespace(int_data=q.int_repr(), scale=q.q_scale(),
                                 zero_point=q.q_zero_point())


def _is_q(v):
    return isinstance(v, torch.Tensor) and v.is_quantized


def _is_qlist(v):
    return isinstance(v, (list, tuple)) and len(v) > 0 and all(_is_q(t) for t in v)


def bind(schema, args, kwargs=None):
    names = [a.name for a in schema.arguments]
    a = {x.name: x.default_value for x in schema.arguments if x.has_default_value()}
    a.update(zip(names, args))
    a.update(kwargs or {})
    missing = [n for n in names if n not in a]
    assert not missing, f"{schema.name}: unbound arguments {missing}"
    return a


def expected_plain_arguments(legacy_schema, bound, drop):
    """(name, type, has_default) of the `.plain` schema, derived from the legacy schema by the
    convention (docs/pt2.md section 3)."""
    out = []
    for arg in legacy_schema.arguments:
        if arg.name in drop:
            continue
        v = bound[arg.name]
        t = str(arg.type)
        if _is_q(v):
            out += [(arg.name, t, False), (arg.name + "_scale", "float", False),
                    (arg.name + "_zero_point", "int", False)]
        elif _is_qlist(v):
            out += [(arg.name, t, False), (arg.name + "_scales", "List[float]", False),
                    (arg.name + "_zero_points", "List[int]", False)]
        elif t in ("Optional[float]", "Optional[int]") and arg.name in _OUT_QPARAM_NAMES:
            out.append((arg.name, t[len("Optional["):-1], False))  # required on the PT2 door
        else:
            out.append((arg.name, t, arg.has_default_value()))
    return out


_OUT_QPARAM_NAMES = ("output_scale", "output_zero_point", "scale", "zero_point")


def plain_call(route, args, kwargs=None):
    """(plain overload, plain positional args, (scale, zero_point, dtype) from route.out,
    legacy op, bound legacy args)."""
    legacy = overload(route.legacy)
    plain = overload(route.plain)
    bound = bind(legacy._schema, args, kwargs)
    got = [(a.name, str(a.type), a.has_default_value()) for a in plain._schema.arguments]
    want = expected_plain_arguments(legacy._schema, bound, route.drop)
    assert got == want, f"{route.plain}: schema arguments {got}, convention says {want}"
    view = {k: (_stand_in(v) if _is_q(v) else [_stand_in(t) for t in v] if _is_qlist(v) else v)
            for k, v in bound.items()}
    s, z, d = route.out(view) if route.out is not None else (None, None, None)
    pargs = []
    for name, _, _ in want:
        if name in bound:
            v = bound[name]
            if _is_q(v):
                v = v.int_repr() if v.is_contiguous() else _codes_like(v)
            elif _is_qlist(v):
                v = [t.int_repr() if t.is_contiguous() else _codes_like(t) for t in v]
            elif v is None and name in _OUT_QPARAM_NAMES:
                v = s if name.endswith("scale") else z
            pargs.append(v)
        elif name.endswith("_zero_points"):
            pargs.append([t.q_zero_point() for t in bound[name[:-len("_zero_points")]]])
        elif name.endswith("_scales"):
            pargs.append([t.q_scale() for t in bound[name[:-len("_scales")]]])
        elif name.endswith("_zero_point"):
            pargs.append(bound[name[:-len("_zero_point")]].q_zero_point())
        else:
            pargs.append(bound[name[:-len("_scale")]].q_scale())
    return plain, pargs, (s, z, d), legacy, bound


def _codes_like(q):
    """The codes of quantized `q` as a plain tensor with q's exact strides and storage offset
    (int_repr() would make them dense), so layouts reach the plain kernel unchanged."""
    base = torch.empty_strided(q.size(), q.stride(), dtype=CODES[q.dtype])
    base.copy_(q.int_repr())
    assert base.stride() == q.stride()
    return base


def assert_same_codes(legacy_out, plain_out, what):
    assert plain_out.dtype == CODES[legacy_out.dtype], what
    assert plain_out.shape == legacy_out.shape, what
    assert plain_out.stride() == legacy_out.stride(), (
        f"{what}: strides {plain_out.stride()} vs legacy {legacy_out.stride()}")
    assert torch.equal(plain_out, legacy_out.int_repr()), f"{what}: codes differ"


def run_both(route, args, kwargs=None, what=""):
    """Legacy op vs `.plain` on the same arguments (see the module docstring)."""
    plain, pargs, (s, z, d), legacy, bound = plain_call(route, args, kwargs)
    y = legacy(*args, **(kwargs or {}))
    p = plain(*pargs)
    what = what or route.plain
    assert_same_codes(y, p, what)
    assert (s, z, d) == (y.q_scale(), y.q_zero_point(), CODES[y.dtype]), (
        f"{what}: route out {(s, z, d)} vs legacy qparams "
        f"{(y.q_scale(), y.q_zero_point(), CODES[y.dtype])}")
    return plain, pargs


def assert_fake_matches(plain, pargs):
    """The fake kernel's output metadata (shape, strides, dtype) equals the real kernel's."""
    real = plain(*pargs)
    with FakeTensorMode() as mode:
        fargs = [mode.from_tensor(a) if isinstance(a, torch.Tensor)
                 else [mode.from_tensor(t) for t in a]
                 if isinstance(a, list) and a and isinstance(a[0], torch.Tensor) else a
                 for a in pargs]
        fake = plain(*fargs)
    assert (fake.shape, fake.stride(), fake.dtype) == (real.shape, real.stride(), real.dtype), (
        f"{plain}: fake {(fake.shape, fake.stride(), fake.dtype)} vs real "
        f"{(real.shape, real.stride(), real.dtype)}")


def opcheck(plain, pargs):
    res = torch.library.opcheck(plain, tuple(pargs), test_utils=OPCHECK_UTILS)
    assert res == {u: "SUCCESS" for u in OPCHECK_UTILS}, res


def check_fake_and_opcheck(route, args):
    """The plain overload `route` leads to, on the legacy arguments args: the fake kernel
    matches the real one (assert_fake_matches) and opcheck passes."""
    plain, pargs, _, _, _ = plain_call(route, args)
    assert_fake_matches(plain, pargs)
    opcheck(plain, pargs)


def raises_naming(op_name, fn, match=None):
    """fn() raises a RuntimeError whose message names qplugin::<op_name> (and `match`)."""
    with pytest.raises(RuntimeError) as e:
        fn()
    msg = str(e.value)
    assert f"qplugin::{op_name}" in msg, msg
    if match is not None:
        assert match in msg, msg
    return msg


def bad_input_cases(plain, pargs, arg_index, arg_name, op_name):
    """Common bad inputs of a plain overload's quantized operand at position arg_index (its
    scale and zero point follow): float codes, a quantized tensor, a wrong code dtype, a
    nonpositive / non-finite scale, an out-of-range zero point. Each must raise naming the op
    and the argument, in eager and under FakeTensorMode (the fake kernel)."""
    x = pargs[arg_index]
    lo_hi = {torch.uint8: (0, 255), torch.int8: (-128, 127)}[x.dtype]
    bad = [
        ("float codes", arg_index, x.float(), f"expected {arg_name} of dtype"),
        ("wrong dtype", arg_index, x.to(torch.int16), f"expected {arg_name} of dtype"),
        ("quantized", arg_index,
         torch._make_per_tensor_quantized_tensor(x, 0.1, 0) if x.dtype != torch.int16 else x,
         f"expected {arg_name} to be a plain tensor of codes"),
        ("zero scale", arg_index + 1, 0.0, f"{arg_name}_scale"),
        ("negative scale", arg_index + 1, -0.5, f"{arg_name}_scale"),
        ("inf scale", arg_index + 1, float("inf"), f"{arg_name}_scale"),
        ("zero point high", arg_index + 2, lo_hi[1] + 1, f"{arg_name}_zero_point"),
        ("zero point low", arg_index + 2, lo_hi[0] - 1, f"{arg_name}_zero_point"),
    ]
    for label, i, v, match in bad:
        args = list(pargs)
        args[i] = v
        raises_naming(op_name, lambda: plain(*args), match)
        if label == "quantized":
            continue  # FakeTensorMode cannot hold quantized tensors (torch 2.13)
        with FakeTensorMode() as mode:
            fargs = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
            raises_naming(op_name, lambda: plain(*fargs), match)
