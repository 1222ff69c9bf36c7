# PT2 door of layer_norm / group_norm / instance_norm (docs/pt2.md section 3): every `.plain`
# overload gives the bytes, shape and strides of its legacy op on every ISA, dtype and layout
# (both call the same core, csrc/ops/quantized_cpu/normalization_kernel.cpp); opcheck on each;
# bad input names the op; the route rows take the explicit output qparams.
# Changes with: csrc/ops/normalization.cpp, qplugin/pt2/fake/normalization.py,
# qplugin/pt2/routes/normalization.py.
import pytest
import torch

import qplugin.pt2.fake  # noqa: F401  (registers the fake kernels)
from _plain_pool_helpers import (as_quantized, assert_same, codes, opcheck, qparams,
                                 raises_naming)
from qplugin.pt2 import QTensor
from qplugin.pt2.routes import normalization as routes

Q = torch.ops.qplugin


def _vec(shape, gen, present=True):
    return torch.randn(shape, generator=gen) if present else None


# (op, input shape, memory formats to try, args between input qparams and eps: a function of gen)
CASES = [
    ("layer_norm", (2, 5, 16), [None], lambda g: ([16], _vec([16], g), _vec([16], g))),
    ("layer_norm", (3, 4, 5, 6), [None, torch.channels_last],
     lambda g: ([5, 6], _vec([5, 6], g), None)),
    ("layer_norm", (7, 300), [None], lambda g: ([300], None, None)),
    ("group_norm", (2, 8, 5, 6), [None, torch.channels_last],
     lambda g: (4, _vec([8], g), _vec([8], g))),
    ("group_norm", (2, 6, 10), [None], lambda g: (3, None, _vec([6], g))),
    ("group_norm", (3, 4), [None], lambda g: (2, _vec([4], g), None)),
    ("group_norm", (2, 6, 3, 4, 5), [None, torch.channels_last_3d],
     lambda g: (2, _vec([6], g), _vec([6], g))),
    ("group_norm", (1, 4, 40, 40), [None, torch.channels_last],
     lambda g: (2, _vec([4], g), _vec([4], g))),
    ("instance_norm", (2, 4, 5, 6), [None, torch.channels_last],
     lambda g: (_vec([4], g), _vec([4], g))),
    ("instance_norm", (2, 3, 7), [None], lambda g: (None, None)),
    ("instance_norm", (2, 3, 4, 5, 6), [torch.channels_last_3d],
     lambda g: (_vec([3], g), None)),
]
IDS = [f"{c[0]}-{i}" for i, c in enumerate(CASES)]


def _out_qparams(dtype, gen):
    return qparams(dtype, gen)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_plain_matches_legacy(case, isa):
    op, shape, formats, mk = case
    gen = torch.Generator().manual_seed(100 + CASES.index(case))
    for dtype in (torch.uint8, torch.int8, torch.int32):
        for fmt in formats + ["strided"]:
            if fmt == "strided":
                wide = list(shape)
                wide[-1] *= 2
                x = codes(wide, dtype, gen=gen)[..., ::2]
            else:
                x = codes(shape, dtype, fmt, gen=gen)
            s, z = qparams(dtype, gen)
            os_, oz = _out_qparams(dtype, gen)
            args = mk(gen)
            eps = 1e-5
            legacy = getattr(Q, op)(as_quantized(x, s, z), *args, eps, os_, oz)
            plain = getattr(Q, op).plain(x, s, z, *args, eps, os_, oz)
            assert_same(legacy, plain, os_, oz)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_opcheck(case):
    op, shape, formats, mk = case
    gen = torch.Generator().manual_seed(7)
    for fmt in formats:
        x = codes(shape, torch.uint8, fmt, gen=gen)
        opcheck(getattr(Q, op).plain, (x, 0.1, 3) + tuple(mk(gen)) + (1e-5, 0.05, 128))
    x = codes(shape, torch.int8, gen=gen)
    opcheck(getattr(Q, op).plain, (x, 0.1, -3) + tuple(mk(gen)) + (1e-3, 0.05, 0))


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_bad_inputs_name_the_op(device):
    x = codes((2, 4, 5, 6)).to(device)
    w = torch.ones(4, device=device)
    raises_naming(lambda: Q.group_norm.plain(x.float(), 0.1, 0, 2, None, None, 1e-5, 0.1, 0),
                  "qplugin::group_norm", "input", "dtype")
    raises_naming(lambda: Q.group_norm.plain(x, 0.1, 0, 3, None, None, 1e-5, 0.1, 0),
                  "qplugin::group_norm.plain", "num_groups")
    raises_naming(lambda: Q.group_norm.plain(x, 0.1, 0, 2, w[:3], None, 1e-5, 0.1, 0),
                  "qplugin::group_norm.plain", "weight")
    raises_naming(lambda: Q.layer_norm.plain(x, 0.1, 0, [5, 5], None, None, 1e-5, 0.1, 0),
                  "qplugin::layer_norm.plain", "normalized_shape")
    raises_naming(lambda: Q.layer_norm.plain(x, 0.1, 0, [6], None, None, -1.0, 0.1, 0),
                  "qplugin::layer_norm.plain", "eps")
    raises_naming(lambda: Q.layer_norm.plain(x, 0.1, 0, [6], None, None, 1e-5, 0.1, 256),
                  "qplugin::layer_norm.plain", "output_zero_point")
    raises_naming(lambda: Q.layer_norm.plain(x, 0.1, 0, [6], None, None, 1e-5, -0.1, 0),
                  "qplugin::layer_norm.plain", "output_scale")
    raises_naming(lambda: Q.instance_norm.plain(x, 0.1, 256, w, w, 1e-5, 0.1, 0),
                  "qplugin::instance_norm.plain", "input_zero_point")
    raises_naming(lambda: Q.instance_norm.plain(x[0, 0], 0.1, 0, None, None, 1e-5, 0.1, 0),
                  "qplugin::instance_norm.plain", "3 dimensions")


def test_routes_take_the_output_qparams():
    assert {r.plain for r in routes.ROUTES} == {"layer_norm.plain", "group_norm.plain",
                                                 "instance_norm.plain"}
    for r in routes.ROUTES:
        assert hasattr(getattr(Q, r.legacy), "plain")
        qt = QTensor(codes((2, 4, 5), torch.int8), 0.5, 7)
        assert r.out({"input": qt, "output_scale": 0.25, "output_zero_point": -2}) == (
            0.25, -2, torch.int8)
