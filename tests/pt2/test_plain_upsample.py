# PT2 door of the resampling ops (docs/pt2.md section 3): every `.plain` overload gives the
# bytes, shape and strides of its legacy op on every ISA, dtype and layout (both call the same
# core, csrc/ops/quantized_cpu/upsample_kernel.cpp); opcheck on each; bad input names the op; the
# route rows keep the input's qparams.
# Changes with: csrc/ops/upsample.cpp, qplugin/pt2/fake/upsample.py, qplugin/pt2/routes/upsample.py.
import pytest
import torch

import qplugin.pt2.fake  # noqa: F401  (registers the fake kernels)
from _plain_pool_helpers import (as_quantized, assert_same, codes, codes_in_layout, opcheck,
                                 qparams, raises_naming)
from qplugin.pt2 import QTensor
from qplugin.pt2.routes import upsample as routes

Q = torch.ops.qplugin

# (op, spatial dims, input shape, args after the input)
CASES = [
    ("upsample_nearest1d", 1, (2, 3, 7), ([15], None)),
    ("upsample_nearest1d", 1, (2, 3, 7), ([14], 2.0)),
    ("upsample_nearest2d", 2, (2, 5, 6, 7), ([12, 14], None, None)),
    ("upsample_nearest2d", 2, (2, 5, 6, 7), ([13, 16], 2.3, 2.4)),
    ("upsample_nearest2d", 2, (2, 16, 9, 8), ([4, 3], None, None)),
    ("upsample_nearest3d", 3, (2, 3, 4, 5, 6), ([8, 7, 9], None, 1.5, None)),
    ("_upsample_nearest_exact1d", 1, (2, 3, 7), ([11], None)),
    ("_upsample_nearest_exact2d", 2, (2, 5, 6, 7), ([13, 16], 2.3, None)),
    ("_upsample_nearest_exact3d", 3, (2, 3, 4, 5, 6), ([8, 7, 9], None, None, None)),
    ("upsample_linear1d", 1, (2, 3, 7), ([15], False, None)),
    ("upsample_linear1d", 1, (2, 3, 7), ([15], True, None)),
    ("upsample_bilinear2d", 2, (2, 5, 6, 7), ([12, 14], False, None, None)),
    ("upsample_bilinear2d", 2, (2, 5, 6, 7), ([13, 9], True, None, None)),
    ("upsample_bilinear2d", 2, (1, 24, 5, 6), ([11, 13], False, 2.2, 2.1)),
    ("upsample_trilinear3d", 3, (2, 3, 4, 5, 6), ([8, 7, 9], False, None, None, None)),
    ("upsample_trilinear3d", 3, (1, 3, 3, 4, 5), ([5, 7, 9], True, None, None, None)),
]
IDS = [f"{c[0]}-{i}" for i, c in enumerate(CASES)]


def _layouts(shape, nd):
    out = [("contiguous", None), ("strided", "strided")]
    if nd >= 2:
        out.append(("channels_last", torch.channels_last if nd == 2 else torch.channels_last_3d))
    return out


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_plain_matches_legacy(case, isa):
    op, nd, shape, args = case
    gen = torch.Generator().manual_seed(len(IDS) + CASES.index(case))
    for dtype in (torch.uint8, torch.int8, torch.int32):
        for lname, layout in _layouts(shape, nd):
            x = codes_in_layout(shape, dtype, layout, gen)
            s, z = qparams(dtype, gen)
            legacy = getattr(Q, op)(as_quantized(x, s, z), *args)
            plain = getattr(Q, op).plain(x, s, z, *args)
            assert_same(legacy, plain, s, z)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_opcheck(case):
    op, nd, shape, args = case
    gen = torch.Generator().manual_seed(1)
    for lname, layout in _layouts(shape, nd):
        opcheck(getattr(Q, op).plain, (codes_in_layout(shape, torch.uint8, layout, gen), 0.1, 3) + args)
    opcheck(getattr(Q, op).plain, (codes_in_layout(shape, torch.int8, None, gen), 0.2, -4) + args)


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_bad_inputs_name_the_op(device):
    x = codes((1, 2, 6, 6)).to(device)
    raises_naming(lambda: Q.upsample_nearest2d.plain(x.float(), 0.1, 0, [12, 12]),
                  "qplugin::upsample_nearest2d", "self", "dtype")
    raises_naming(lambda: Q.upsample_bilinear2d.plain(x, 0.1, -1, [12, 12], False),
                  "qplugin::upsample_bilinear2d.plain", "self_zero_point")
    raises_naming(lambda: Q.upsample_bilinear2d.plain(x, float("inf"), 0, [12, 12], False),
                  "qplugin::upsample_bilinear2d.plain", "self_scale")
    raises_naming(lambda: Q.upsample_nearest2d.plain(x, 0.1, 0, [12, 0]),
                  "qplugin::upsample_nearest2d.plain", "output sizes")
    raises_naming(lambda: Q.upsample_trilinear3d.plain(x, 0.1, 0, [2, 3, 4], False),
                  "qplugin::upsample_trilinear3d.plain", "5-D")
    raises_naming(lambda: Q.upsample_nearest1d.plain(x[0], 0.1, 0, [3, 4]),
                  "qplugin::upsample_nearest1d.plain", "output_size")


def test_routes_cover_every_plain_overload_and_keep_input_qparams():
    assert {c[0] + ".plain" for c in CASES} == {r.plain for r in routes.ROUTES}
    for r in routes.ROUTES:
        assert hasattr(getattr(Q, r.legacy), "plain")
        qt = QTensor(codes((1, 2, 4, 4)), 0.5, 7)
        assert r.out({"self": qt}) == (0.5, 7, torch.uint8)
