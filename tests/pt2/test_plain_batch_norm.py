# The PT2 door of the batch-norm ops (docs/pt2.md section 3): quantized_batch_norm and
# batch_norm[1d|2d|3d][_relu] `.plain` are byte-identical to the legacy ops on every ISA (random
# codes, qparams and statistics, every rank an op takes, contiguous / channels_last / transposed
# / strided inputs, weight and bias given or None, the table path and the direct path, quint8
# and qint8), their Route rows give the legacy output's qparams, their fake kernels give the
# real output's metadata, torch.library.opcheck passes, and bad inputs raise naming the op.
# Changes with: csrc/ops/batch_norm.cpp, csrc/ops/quantized_cpu/batch_norm_kernel.cpp,
# qplugin/pt2/fake/batch_norm.py, qplugin/pt2/routes/batch_norm.py.
import pytest
import torch

from _plain_act_helpers import (LAYOUTS, QDTYPES, bad_input_cases, check_fake_and_opcheck,
                                layouts_for, plain_call, qtensor, raises_naming,
                                routes_by_legacy, run_both)

ROUTES = routes_by_legacy()
# op -> input shapes it takes (C = 5).
OPS = {"quantized_batch_norm": ((4, 5), (2, 5, 4, 6), (2, 5, 2, 3, 4)),
       "batch_norm": ((4, 5), (2, 5, 7), (2, 5, 4, 6)),
       "batch_norm1d": ((4, 5), (2, 5, 7)),
       "batch_norm2d": ((2, 5, 4, 6), (2, 5, 32, 20)),  # the second takes the table path
       "batch_norm3d": ((2, 5, 2, 3, 4),)}
OPS.update({f"{op}_relu": OPS[op] for op in ("batch_norm", "batch_norm1d", "batch_norm2d",
                                             "batch_norm3d")})


def _stats(gen, c=5, affine=True):
    mean = torch.randn(c, generator=gen)
    var = torch.rand(c, generator=gen) + 0.1
    w = torch.randn(c, generator=gen) if affine else None
    b = torch.randn(c, generator=gen) if affine else None
    return w, b, mean, var


def _xq(shape, qdtype, gen, lay):
    """A quantized input of `shape` in layout `lay`: transposed / strided layouts change the
    shape they are applied to, so the tensor is made at the shape they map back to `shape`."""
    base = list(shape)
    if lay == "transposed":
        base[-1], base[-2] = base[-2], base[-1]
    elif lay == "strided":
        base[-1] = 2 * base[-1] - 1
    x = qtensor(tuple(base), qdtype, gen, layout=LAYOUTS[lay])
    assert tuple(x.shape) == tuple(shape), (lay, x.shape, shape)
    return x


def test_every_op_has_a_route():
    for op in OPS:
        assert op in ROUTES and hasattr(getattr(torch.ops.qplugin, op), "plain")


@pytest.mark.parametrize("qdtype", QDTYPES, ids=str)
@pytest.mark.parametrize("op", sorted(OPS))
def test_plain_is_byte_identical(op, qdtype, isa):
    gen = torch.Generator().manual_seed(21)
    zp = 10 if qdtype == torch.quint8 else -3
    for shape in OPS[op]:
        for lay in layouts_for(len(shape)):
            for affine in (True, False):
                x = _xq(shape, qdtype, gen, lay)
                w, b, mean, var = _stats(gen, affine=affine)
                run_both(ROUTES[op], (x, w, b, mean, var, 1e-5, 0.07, zp),
                         what=f"{op} {shape} {lay} affine={affine} {qdtype} {isa}")


@pytest.mark.parametrize("op", sorted(OPS))
def test_opcheck_and_fake(op):
    gen = torch.Generator().manual_seed(22)
    for shape in OPS[op]:
        for lay in ("channels_last", "transposed"):
            if lay == "channels_last" and len(shape) != 4:
                continue
            x = _xq(shape, torch.qint8, gen, lay)
            check_fake_and_opcheck(ROUTES[op], (x,) + _stats(gen) + (1e-5, 0.07, 1))


@pytest.mark.parametrize("op", sorted(OPS))
def test_bad_inputs_name_the_op(op):
    gen = torch.Generator().manual_seed(23)
    shape = OPS[op][0]
    x = qtensor(shape, torch.quint8, gen)
    plain, pargs, _, _, _ = plain_call(ROUTES[op], (x,) + _stats(gen) + (1e-5, 0.07, 1))
    bad_input_cases(plain, pargs, 0, "input" if op == "quantized_batch_norm" else "qx", op)
    cases = [(0, torch.zeros((2,) * 6, dtype=torch.uint8), "got 6-D"),
             (5, torch.ones(4), "expected mean of shape [5]"),
             (6, torch.ones(5, dtype=torch.int32), "expected var to be a floating-point tensor"),
             (3, torch.ones(3), "expected weight of shape [5]"),
             (4, torch.ones(5, 1), "expected bias of shape [5]"),
             (7, -1e-3, "expected a finite, non-negative eps"),
             (8, 0.0, "output_scale"), (9, 300, "output_zero_point")]
    for i, v, match in cases:
        args = list(pargs)
        args[i] = v
        raises_naming(op, lambda: plain(*args), match)
