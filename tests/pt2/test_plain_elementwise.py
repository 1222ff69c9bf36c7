# The PT2 door of the elementwise ops (docs/pt2.md section 3): add / add_relu / mul / mul_relu
# (.plain, .Scalar_plain, .Scalar2_plain), add_scalar / add_scalar_relu / mul_scalar /
# mul_scalar_relu (.plain, .Tensor_plain), cat / cat_relu (.plain) are byte-identical to their
# legacy overloads on every ISA (random codes and qparams, broadcasting, several layouts, quint8
# and qint8), their Route rows give the legacy output's qparams (PyTorch's scalar rules, cat's
# qx[0] default), their fake kernels give the real output's metadata, torch.library.opcheck
# passes, and bad inputs raise naming the op.
# Changes with: csrc/ops/elementwise.cpp, csrc/ops/quantized_cpu/{binary,cat}_kernel.cpp,
# qplugin/pt2/fake/elementwise.py, qplugin/pt2/routes/elementwise.py.
import pytest
import torch

from _plain_act_helpers import (LAYOUTS, QDTYPES, bad_input_cases, check_fake_and_opcheck,
                                layouts_for, plain_call, qtensor, raises_naming,
                                routes_by_legacy, run_both)
from qplugin.pt2.routes.elementwise import add_qparams, mul_qparams

ROUTES = routes_by_legacy()
BINARY = ("add", "add_relu", "mul", "mul_relu")
SCALAR = ("add_scalar", "add_scalar_relu", "mul_scalar", "mul_scalar_relu")
# Scalars: small, negative, zero, integer, and large enough to rescale add's output range.
SCALARS = (0.3, -0.7, 0.0, 3, 50.0, -40.0)


def _zp(qdtype):
    return 7 if qdtype == torch.quint8 else -9


def _binary_pairs(qdtype, gen):
    """(qa, qb): same shape in every layout, broadcasting both ways, lower-rank qa."""
    for shape in ((2, 3, 4, 6), (5, 8)):
        for lay in layouts_for(len(shape)):
            yield (qtensor(shape, qdtype, gen, layout=LAYOUTS[lay]),
                   qtensor(shape, qdtype, gen, layout=LAYOUTS[lay]))
    cl = LAYOUTS["channels_last"]
    yield qtensor((2, 3, 4, 6), qdtype, gen, layout=cl), qtensor((1, 3, 1, 1), qdtype, gen)
    yield qtensor((2, 3, 4, 6), qdtype, gen), qtensor((6,), qdtype, gen)
    yield qtensor((4, 6), qdtype, gen), qtensor((2, 3, 4, 6), qdtype, gen, layout=cl)
    yield qtensor((2, 1, 4, 1), qdtype, gen), qtensor((1, 3, 1, 6), qdtype, gen)
    yield qtensor((0, 3), qdtype, gen), qtensor((1, 3), qdtype, gen)


def test_every_overload_has_a_route_and_plain_overload():
    want = [f"{op}{ov}" for op in BINARY for ov in ("", ".Scalar", ".Scalar2")]
    want += [f"{op}{ov}" for op in SCALAR for ov in ("", ".Tensor")] + ["cat", "cat_relu"]
    for legacy in want:
        assert legacy in ROUTES, f"no Route row for {legacy}"


@pytest.mark.parametrize("qdtype", QDTYPES, ids=str)
@pytest.mark.parametrize("op", BINARY)
def test_binary_plain_is_byte_identical(op, qdtype, isa):
    gen = torch.Generator().manual_seed(11)
    for i, (qa, qb) in enumerate(_binary_pairs(qdtype, gen)):
        run_both(ROUTES[op], (qa, qb, 0.05 + 0.01 * i, _zp(qdtype)),
                 what=f"{op} case {i} {tuple(qa.shape)}x{tuple(qb.shape)} {qdtype} {isa}")


def _scalar_operands(qdtype, seed, layouts):
    """(layout, scalar b, qa [2, 3, 4, 6] in that layout) for each layout and b in SCALARS."""
    gen = torch.Generator().manual_seed(seed)
    for lay in layouts:
        for b in SCALARS:
            yield lay, b, qtensor((2, 3, 4, 6), qdtype, gen, layout=LAYOUTS[lay])


@pytest.mark.parametrize("qdtype", QDTYPES, ids=str)
@pytest.mark.parametrize("op", BINARY)
def test_scalar_plain_is_byte_identical(op, qdtype, isa):
    for lay, b, qa in _scalar_operands(qdtype, 12, ("contiguous", "channels_last", "strided")):
        run_both(ROUTES[f"{op}.Scalar"], (qa, b), what=f"{op}.Scalar {b} {lay} {qdtype}")
        run_both(ROUTES[f"{op}.Scalar2"], (b, qa), what=f"{op}.Scalar2 {b} {lay} {qdtype}")


@pytest.mark.parametrize("qdtype", QDTYPES, ids=str)
@pytest.mark.parametrize("op", SCALAR)
def test_deprecated_scalar_plain_is_byte_identical(op, qdtype, isa):
    for lay, b, qa in _scalar_operands(qdtype, 13, ("contiguous", "channels_last", "transposed")):
        run_both(ROUTES[op], (qa, b), what=f"{op} {b} {lay} {qdtype}")
        run_both(ROUTES[f"{op}.Tensor"], (qa, torch.tensor(float(b))),
                 what=f"{op}.Tensor {b} {lay} {qdtype}")


def test_scalar_rules_cover_every_branch():
    """add: zero point shifted in range, rescaled below qmin and above qmax; mul: b > 0, == 0,
    < 0. The byte tests compare these with the legacy op's qparams; here the branches are
    checked to be reached (so the comparison could fail in each)."""
    assert add_qparams(0.1, 128, torch.uint8, 0.3) == (0.1, 125)
    s, z = add_qparams(0.1, 128, torch.uint8, 50.0)
    assert z == 0 and s > 0.1
    s, z = add_qparams(0.1, 128, torch.uint8, -40.0)
    assert z == 255 and s > 0.1
    assert mul_qparams(0.1, 3, torch.uint8, 2.0) == (0.1 * 2.0, 3)
    assert mul_qparams(0.1, 3, torch.uint8, 0.0) == (1.0, 0)
    assert mul_qparams(0.1, 3, torch.int8, -2.0) == (0.1 * 2.0, 127 - (3 + 128))


def _cat_lists(qdtype, gen):
    cl = LAYOUTS["channels_last"]
    s = 0.05
    same = dict(scale=s, zero_point=_zp(qdtype))
    yield [qtensor((2, 3, 4, 5), qdtype, gen, **same), qtensor((2, 2, 4, 5), qdtype, gen, **same)], 1
    yield [qtensor((2, 3, 4, 5), qdtype, gen), qtensor((2, 3, 4, 5), qdtype, gen)], -1
    yield [qtensor((2, 3, 4, 5), qdtype, gen, layout=cl),
           qtensor((2, 5, 4, 5), qdtype, gen, layout=cl, **same)], 1
    yield [qtensor((2, 3, 4, 5), qdtype, gen, layout=cl), qtensor((2, 3, 4, 5), qdtype, gen)], 0
    yield [qtensor((4, 3), qdtype, gen, layout=LAYOUTS["transposed"]),
           qtensor((3, 2), qdtype, gen), qtensor((3, 0), qdtype, gen)], 1
    yield [qtensor((700, 100), qdtype, gen), qtensor((700, 60), qdtype, gen)], 1  # long rows


@pytest.mark.parametrize("qdtype", QDTYPES, ids=str)
@pytest.mark.parametrize("op", ("cat", "cat_relu"))
def test_cat_plain_is_byte_identical(op, qdtype, isa):
    gen = torch.Generator().manual_seed(14)
    for i, (xs, dim) in enumerate(_cat_lists(qdtype, gen)):
        for qp in ((None, None), (0.05, _zp(qdtype)), (0.11, _zp(qdtype) + 3)):
            run_both(ROUTES[op], (xs, dim) + qp, what=f"{op} case {i} {qp} {qdtype} {isa}")


def _opcheck_cases():
    gen = torch.Generator().manual_seed(15)
    cl = LAYOUTS["channels_last"]
    qa = qtensor((2, 3, 4, 6), torch.qint8, gen, layout=cl)
    qb = qtensor((1, 3, 1, 1), torch.qint8, gen)
    for op in BINARY:
        yield op, (qa, qb, 0.05, 2)
        yield op, (qtensor((4, 6), torch.quint8, gen), qtensor((2, 3, 4, 6), torch.quint8, gen),
                   0.05, 2)
        yield f"{op}.Scalar", (qa, 0.25)
        yield f"{op}.Scalar2", (-1.5, qa)
    for op in SCALAR:
        yield op, (qa, 2)
        yield f"{op}.Tensor", (qa, torch.tensor(0.5))
    for op in ("cat", "cat_relu"):
        yield op, ([qa, qtensor((2, 5, 4, 6), torch.qint8, gen, layout=cl)], 1, None, None)
        yield op, ([qtensor((3, 4), torch.quint8, gen), qtensor((3, 2), torch.quint8, gen)], -1,
                   0.1, 4)


@pytest.mark.parametrize("legacy,args", list(_opcheck_cases()),
                         ids=lambda v: v if isinstance(v, str) else "")
def test_opcheck_and_fake(legacy, args):
    check_fake_and_opcheck(ROUTES[legacy], args)


@pytest.mark.parametrize("op", BINARY)
def test_binary_bad_inputs(op):
    gen = torch.Generator().manual_seed(16)
    qa, qb = qtensor((2, 3), torch.quint8, gen), qtensor((2, 3), torch.quint8, gen)
    plain, pargs, _, _, _ = plain_call(ROUTES[op], (qa, qb, 0.1, 3))
    bad_input_cases(plain, pargs, 0, "qa", op)
    bad_input_cases(plain, pargs, 3, "qb", op)
    args = list(pargs)
    args[3] = torch.zeros(4, 3, dtype=torch.uint8)
    raises_naming(op, lambda: plain(*args), "expected broadcastable shapes")
    args = list(pargs)
    args[3] = pargs[3].to(torch.int8)
    raises_naming(op, lambda: plain(*args), "expected qb of dtype")
    for i, v in ((6, 0.0), (7, 256)):
        args = list(pargs)
        args[i] = v
        raises_naming(op, lambda: plain(*args), "output_")


@pytest.mark.parametrize("legacy", [f"{op}.Scalar" for op in BINARY] + list(SCALAR))
def test_scalar_bad_inputs(legacy):
    gen = torch.Generator().manual_seed(17)
    plain, pargs, _, _, _ = plain_call(ROUTES[legacy], (qtensor((2, 3), torch.qint8, gen), 0.5))
    base = legacy.split(".")[0].replace("_scalar", "")
    bad_input_cases(plain, pargs, 0, "qa", base)
    args = list(pargs)
    args[3] = float("inf")
    raises_naming(base, lambda: plain(*args), "expected a finite scalar")


def test_cat_bad_inputs():
    gen = torch.Generator().manual_seed(18)
    xs = [qtensor((2, 3), torch.quint8, gen), qtensor((2, 4), torch.quint8, gen)]
    plain, pargs, _, _, _ = plain_call(ROUTES["cat"], (xs, 1, None, None))
    codes, scales, zps = pargs[0], pargs[1], pargs[2]

    def call(c=codes, s=scales, z=zps, dim=1):
        return lambda: plain(c, s, z, dim, 0.1, 3)
    raises_naming("cat", call(c=[codes[0], codes[1].float()]), "expected qx[1] of dtype")
    raises_naming("cat", call(c=[codes[0], codes[1].to(torch.int8)]), "expected qx[1] of dtype")
    raises_naming("cat", call(c=[codes[0], torch._make_per_tensor_quantized_tensor(
        codes[1], 0.1, 0)]), "expected qx[1] to be a plain tensor of codes")
    raises_naming("cat", call(s=[scales[0], 0.0]), "qx[1]_scale")
    raises_naming("cat", call(z=[zps[0], -1]), "qx[1]_zero_point")
    raises_naming("cat", call(s=scales[:1]), "one qx_scales and qx_zero_points entry per tensor")
    raises_naming("cat", call(dim=0), "expected qx[1] of size 3 at dimension 1")
    raises_naming("cat", call(dim=2), "expected dim in")
    raises_naming("cat", call(c=[codes[0], torch.zeros(2, 3, 1, dtype=torch.uint8)]),
                  "expected qx[1] with 2 dimensions")
    raises_naming("cat", lambda: plain(codes, scales, zps, 1, -0.1, 3), "output_scale")
