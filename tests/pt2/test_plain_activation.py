# The PT2 door of the activations (docs/pt2.md section 3): every `<op>.plain` overload of the
# activation table (qplugin/_tables/activation.py) and prelu is byte-identical to its legacy op
# on every ISA (random codes and qparams, several shapes, contiguous / channels_last /
# transposed / strided, quint8 and qint8), its Route row gives the legacy output's qparams
# (including PyTorch's defaults where they are optional), its fake kernel gives the real
# output's metadata, torch.library.opcheck passes, and bad inputs raise naming the op.
# Changes with: csrc/ops/activation.cpp, csrc/ops/quantized_cpu/activation_kernel.cpp,
# qplugin/pt2/fake/activation.py, qplugin/pt2/routes/activation.py, qplugin/_tables/activation.py.
import pytest
import torch

from qplugin._tables.activation import ROWS, SCALE, ZP
from _plain_act_helpers import (LAYOUTS, QDTYPES, bad_input_cases, check_fake_and_opcheck,
                                layouts_for, plain_call, qtensor, raises_naming,
                                routes_by_legacy, run_both)

ROUTES = routes_by_legacy()
OPS = sorted({r.op for r in ROWS})
SHAPES = ((2, 3, 4, 6), (5, 8), (2, 3, 2, 3, 4))


def _row(op):
    return next(r for r in ROWS if r.op == op)


def _cases(op, qdtype):
    """Argument tuples after the input: the table's cases (SCALE/ZP replaced by output qparams
    of the input's dtype), with None qparams where the op has PyTorch defaults."""
    zp = 3 if qdtype == torch.quint8 else -5
    out = []
    for op_row in [r for r in ROWS if r.op == op]:
        for case in op_row.cases:
            out.append(tuple(0.037 if a is SCALE else zp if a is ZP else a for a in case.args))
    if op in ("hardsigmoid", "tanh", "gelu"):
        out.append((None, None))
    if op == "clamp":
        out += [(None, 0.3), (-0.2, None)]
    if op == "softmax":
        out.append((-1, 0.004, zp))
    return out


def _layout_cases():
    for shape in SHAPES:
        for lay in layouts_for(len(shape)):
            yield shape, lay


def test_every_table_op_has_a_route_and_plain_overload():
    for op in OPS + ["prelu"]:
        assert op in ROUTES, f"no Route row for {op}"
        assert hasattr(getattr(torch.ops.qplugin, op), "plain"), f"no {op}.plain"


@pytest.mark.parametrize("qdtype", QDTYPES, ids=str)
@pytest.mark.parametrize("op", OPS)
def test_plain_is_byte_identical(op, qdtype, isa):
    gen = torch.Generator().manual_seed(hash((op, str(qdtype))) % 2 ** 31)
    route = ROUTES[op]
    n = 0
    for shape, lay in _layout_cases():
        for rest in _cases(op, qdtype):
            x = qtensor(shape, qdtype, gen, layout=LAYOUTS[lay])
            run_both(route, (x,) + rest, what=f"{op}{rest} {shape} {lay} {qdtype} {isa}")
            n += 1
    assert n >= 10


@pytest.mark.parametrize("lay", ["contiguous", "channels_last", "strided"])
def test_prelu_plain_is_byte_identical(lay, isa):
    gen = torch.Generator().manual_seed(7)
    for wdtype, nw in ((torch.quint8, 3), (torch.qint8, 3), (torch.quint8, 1)):
        x = qtensor((2, 3, 4, 6), torch.quint8, gen, layout=LAYOUTS[lay])
        w = qtensor((nw,), wdtype, gen)
        run_both(ROUTES["prelu"], (x, w, 0.05, 100), what=f"prelu {lay} {wdtype} {nw}")


def test_plain_on_empty_and_0d():
    gen = torch.Generator().manual_seed(1)
    for shape in ((0, 3, 4), ()):
        x = qtensor(shape, torch.quint8, gen)
        run_both(ROUTES["hardswish"], (x, 0.05, 10))
        run_both(ROUTES["relu6"], (x,))
        run_both(ROUTES["gelu"], (x, None, None))


def test_routes_fill_pytorch_defaults():
    """hardsigmoid / tanh default to fixed qparams per dtype, gelu to the input's: the routes
    compute them from the legacy arguments (the byte test checks they equal the legacy op's)."""
    gen = torch.Generator().manual_seed(2)
    for qdtype in QDTYPES:
        x = qtensor((4, 5), qdtype, gen)
        for op, want in (("hardsigmoid", {torch.quint8: (1 / 256, 0),
                                          torch.qint8: (1 / 256, -128)}[qdtype]),
                         ("tanh", {torch.quint8: (2 / 256, 128), torch.qint8: (2 / 256, 0)}[qdtype]),
                         ("gelu", (x.q_scale(), x.q_zero_point()))):
            _, pargs, (s, z, d), _, _ = plain_call(ROUTES[op], (x, None, None))
            assert (s, z) == want
            assert pargs[3:5] == [s, z]


@pytest.mark.parametrize("op", OPS + ["prelu"])
def test_opcheck_and_fake(op):
    gen = torch.Generator().manual_seed(3)
    for shape, lay in (((2, 3, 4, 6), "channels_last"), ((5, 8), "transposed"),
                       ((2, 3, 4, 6), "strided")):
        if op == "prelu":
            x = qtensor(shape, torch.quint8, gen, layout=LAYOUTS[lay])
            args = (x, qtensor((x.shape[1],), torch.qint8, gen), 0.05, 100)
        else:
            x = qtensor(shape, torch.qint8, gen, layout=LAYOUTS[lay])
            args = (x,) + _cases(op, torch.qint8)[0]
        check_fake_and_opcheck(ROUTES[op], args)


@pytest.mark.parametrize("op", OPS)
def test_bad_inputs_name_the_op(op):
    gen = torch.Generator().manual_seed(4)
    x = qtensor((2, 3, 4), torch.quint8, gen)
    plain, pargs, _, _, _ = plain_call(ROUTES[op], (x,) + _cases(op, torch.quint8)[0])
    bad_input_cases(plain, pargs, 0, _row(op).input_arg, op)
    if _row(op).takes_output_qparams:
        names = [a.name for a in plain._schema.arguments]
        for name, v, match in (("output_scale", 0.0, "output_scale"),
                               ("output_scale", float("nan"), "output_scale"),
                               ("output_zero_point", 256, "output_zero_point")):
            args = list(pargs)
            args[names.index(name)] = v  # by name: softmax / leaky_relu put arguments first
            raises_naming(op, lambda: plain(*args), match)


def test_prelu_bad_inputs():
    gen = torch.Generator().manual_seed(5)
    x = qtensor((2, 3, 4), torch.quint8, gen)
    w = qtensor((3,), torch.qint8, gen)
    plain, pargs, _, _, _ = plain_call(ROUTES["prelu"], (x, w, 0.05, 100))
    bad_input_cases(plain, pargs, 0, "qx", "prelu")
    bad_input_cases(plain, pargs, 3, "weight", "prelu")
    args = list(pargs)
    args[0] = args[0].to(torch.int8)  # prelu takes quint8 input only
    raises_naming("prelu", lambda: plain(*args), "expected qx of dtype Byte")
    args = list(pargs)
    args[3] = torch.zeros(2, dtype=torch.int8)  # neither 1 nor C weights
    raises_naming("prelu", lambda: plain(*args), "one per channel")
