# PT2 door of the pooling ops (docs/pt2.md section 3): every `.plain` overload gives the bytes,
# shape and strides of its legacy op on every ISA, dtype and layout (both call the same core,
# csrc/ops/quantized_cpu/pooling_kernel.cpp); opcheck (schema, fake tensor, aot dispatch) on each;
# bad input names the op; the route rows keep the input's qparams.
# Changes with: csrc/ops/pooling.cpp, qplugin/pt2/fake/pooling.py, qplugin/pt2/routes/pooling.py.
import pytest
import torch

import qplugin.pt2.fake  # noqa: F401  (registers the fake kernels)
from _plain_pool_helpers import (as_quantized, assert_same, codes, codes_in_layout, opcheck,
                                 qparams, raises_naming)
from qplugin.pt2 import QTensor
from qplugin.pt2.routes import pooling as routes

Q = torch.ops.qplugin


def _mx(k, s, p, d, c):
    return dict(kernel_size=k, stride=s, padding=p, dilation=d, ceil_mode=c)


def _av(k, s, p, c, cip, dov=None, nd=2):
    a = dict(kernel_size=k, stride=s, padding=p, ceil_mode=c, count_include_pad=cip)
    if nd != 1:
        a["divisor_override"] = dov
    return a


# (op, pooled dims, input shape, kwargs)
CASES = [
    ("max_pool1d", 1, (2, 5, 17), _mx([3], [2], [1], [1], False)),
    ("max_pool1d", 1, (5, 17), _mx([4], [3], [2], [2], True)),
    ("max_pool2d", 2, (2, 8, 11, 13), _mx([3, 3], [2, 2], [1, 1], [1, 1], True)),
    ("max_pool2d", 2, (3, 9, 10), _mx([2], [], [0], [1], False)),
    ("max_pool2d", 2, (2, 16, 9, 12), _mx([3, 2], [1, 2], [1, 1], [2, 1], False)),
    ("max_pool3d", 3, (2, 4, 5, 7, 6), _mx([2, 3, 2], [1, 2, 2], [1, 1, 0], [1, 1, 2], True)),
    ("avg_pool1d", 1, (2, 6, 15), _av([4], [3], [2], True, False, nd=1)),
    ("avg_pool2d", 2, (2, 8, 11, 13), _av([3, 2], [2, 1], [1, 1], True, True)),
    ("avg_pool2d", 2, (2, 8, 9, 9), _av([3, 3], [2, 2], [1, 0], False, False, 5)),
    ("avg_pool2d", 2, (8, 9, 9), _av([3], [], [1], False, True)),
    # windows over 32768 codes: the widened (int32) path
    ("avg_pool2d", 2, (1, 2, 200, 200), _av([190, 190], [10, 10], [0, 0], False, True)),
    ("avg_pool3d", 3, (2, 4, 5, 7, 6), _av([2, 3, 3], [2, 2, 1], [1, 1, 1], True, False)),
    ("avg_pool3d", 3, (4, 5, 7, 6), _av([2], [1], [1], False, True, 3)),
    ("adaptive_avg_pool1d", 1, (2, 6, 15), dict(output_size=[4])),
    ("adaptive_avg_pool2d", 2, (2, 8, 11, 13), dict(output_size=[3, 5])),
    ("adaptive_avg_pool2d", 2, (2, 8, 7, 7), dict(output_size=[1, 1])),
    ("adaptive_avg_pool3d", 3, (2, 4, 5, 7, 6), dict(output_size=[2, 3, 4])),
    ("adaptive_max_pool2d", 2, (2, 8, 11, 13), dict(output_size=[4, 5])),
    ("adaptive_max_pool2d", 2, (8, 11, 13), dict(output_size=[7, 13])),
]
IDS = [f"{c[0]}-{i}" for i, c in enumerate(CASES)]


def _layouts(shape, nd):
    out = [("contiguous", None)]
    if len(shape) == nd + 2 and nd >= 2:
        out.append(("channels_last", torch.channels_last if nd == 2 else torch.channels_last_3d))
    out.append(("strided", "strided"))
    return out


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_plain_matches_legacy(case, isa):
    op, nd, shape, kw = case
    gen = torch.Generator().manual_seed(hash((op, shape)) % 2 ** 31)
    for dtype in (torch.uint8, torch.int8, torch.int32):
        for lname, layout in _layouts(shape, nd):
            x = codes_in_layout(shape, dtype, layout, gen)
            s, z = qparams(dtype, gen)
            legacy = getattr(Q, op)(as_quantized(x, s, z), **kw)
            plain = getattr(Q, op).plain(x, s, z, **kw)
            assert_same(legacy, plain, s, z)


@pytest.mark.parametrize("case", [c for c in CASES if c[2] != (1, 2, 200, 200)],
                         ids=[i for c, i in zip(CASES, IDS) if c[2] != (1, 2, 200, 200)])
def test_opcheck(case):
    op, nd, shape, kw = case
    gen = torch.Generator().manual_seed(0)
    for lname, layout in _layouts(shape, nd):
        x = codes_in_layout(shape, torch.uint8, layout, gen)
        opcheck(getattr(Q, op).plain, (x, 0.1, 3), kw)
    opcheck(getattr(Q, op).plain, (codes_in_layout(shape, torch.int8, None, gen), 0.2, -5), kw)


def test_fake_output_sizes_follow_pytorch_ceil_mode_rule():
    # ceil_mode: the last window must start inside the input or the left padding (5 -> 3, not 4
    # for input 5, kernel 2, stride 2, padding 1), as torch.nn.functional.max_pool1d.
    for n, k, s, p in [(5, 2, 2, 1), (6, 3, 2, 1), (7, 3, 3, 0), (10, 4, 3, 2)]:
        x = torch.empty(1, 1, n, dtype=torch.uint8, device="meta")
        got = Q.max_pool1d.plain(x, 0.1, 0, [k], [s], [p], [1], True).shape[-1]
        want = torch.nn.functional.max_pool1d(torch.zeros(1, 1, n), k, s, p,
                                              ceil_mode=True).shape[-1]
        assert got == want, (n, k, s, p)
        got = Q.avg_pool2d.plain(x.view(1, 1, 1, n), 0.1, 0, [1, k], [1, s], [0, p],
                                 True).shape[-1]
        want = torch.nn.functional.avg_pool2d(torch.zeros(1, 1, 1, n), (1, k), (1, s), (0, p),
                                              ceil_mode=True).shape[-1]
        assert got == want, (n, k, s, p)


def test_avg_pool3d_output_is_channels_last_3d():
    x = codes((2, 3, 4, 5, 6))
    y = Q.avg_pool3d.plain(x, 0.1, 0, [2, 2, 2])
    assert y.is_contiguous(memory_format=torch.channels_last_3d) and not y.is_contiguous()
    f = Q.avg_pool3d.plain(x.to("meta"), 0.1, 0, [2, 2, 2])
    assert f.stride() == y.stride()


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_bad_inputs_name_the_op(device):
    x = codes((1, 2, 6, 6)).to(device)
    raises_naming(lambda: Q.max_pool2d.plain(x.float(), 0.1, 0, [2], [2], [0], [1], False),
                  "qplugin::max_pool2d.plain", "qx", "dtype")
    raises_naming(lambda: Q.avg_pool2d.plain(x, 0.1, 300, [2]),
                  "qplugin::avg_pool2d.plain", "self_zero_point", "[0, 255]")
    raises_naming(lambda: Q.avg_pool2d.plain(x, 0.0, 3, [2]),
                  "qplugin::avg_pool2d.plain", "self_scale")
    raises_naming(lambda: Q.avg_pool2d.plain(x, 0.1, 3, [2], [1], [2]),
                  "qplugin::avg_pool2d.plain", "padding")
    raises_naming(lambda: Q.max_pool2d.plain(x, 0.1, 3, [9], [1], [0], [1], False),
                  "qplugin::max_pool2d.plain", "output size")
    raises_naming(lambda: Q.adaptive_avg_pool2d.plain(x, 0.1, 3, [0, 2]),
                  "qplugin::adaptive_avg_pool2d.plain", "output sizes")
    raises_naming(lambda: Q.max_pool3d.plain(x[0], 0.1, 3, [2, 2, 2]),
                  "qplugin::max_pool3d.plain", "4-D (C, D, H, W) or 5-D")
    raises_naming(lambda: Q.avg_pool2d.plain(x, 0.1, 3, [2], [2], [0], False, True, 0),
                  "qplugin::avg_pool2d.plain", "divisor_override")


def test_quantized_input_to_plain_is_refused():
    q = as_quantized(codes((1, 2, 6, 6)), 0.1, 3)
    raises_naming(lambda: Q.adaptive_max_pool2d.plain(q, 0.1, 3, [2, 2]),
                  "qplugin::adaptive_max_pool2d.plain", "plain tensor", "int_repr")


def test_routes_cover_every_plain_overload_and_keep_input_qparams():
    plain = {f"{name}.{o}" for name in dir(Q) if hasattr(getattr(Q, name), "overloads")
             for o in getattr(Q, name).overloads() if o == "plain"}
    ours = {r.plain for r in routes.ROUTES}
    assert {c[0] + ".plain" for c in CASES} == ours
    assert ours <= plain
    for r in routes.ROUTES:
        legacy, ov = (r.legacy.split(".") + ["default"])[:2]
        assert hasattr(getattr(Q, legacy), ov)
        arg = getattr(Q, legacy).default._schema.arguments[0].name
        qt = QTensor(codes((1, 2, 4, 4), torch.int8), 0.25, -3)
        assert r.out({arg: qt}) == (0.25, -3, torch.int8)
