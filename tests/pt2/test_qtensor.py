# qplugin.pt2.QTensor, the PT2 door's quantized-activation carrier: the shape/view ops run on the
# codes and keep the qparams; everything else is rejected by name; the carrier traces through
# torch.export (plain uint8 ops in the graph) and torch.compile (no graph break).
# Changes with: qplugin/pt2/_qtensor.py, docs/pt2.md.
import pytest
import torch

from qplugin.pt2 import QTensor


def _codes(shape, dtype=torch.uint8, seed=0):
    g = torch.Generator().manual_seed(seed)
    lo, hi = (0, 256) if dtype == torch.uint8 else (-128, 128)
    return torch.randint(lo, hi, shape, generator=g, dtype=torch.int32).to(dtype)


# (name, op on a 2x3x4x5 carrier or tensor): the same call runs on the QTensor and on its codes.
VIEW_OPS = [
    ("view", lambda t: t.view(6, 20)),
    ("view_neg", lambda t: t.view(-1, 5)),
    ("reshape", lambda t: t.reshape(2, 60)),
    ("torch.reshape", lambda t: torch.reshape(t, (12, 10))),
    ("flatten", lambda t: t.flatten(1)),
    ("torch.flatten", lambda t: torch.flatten(t, 2)),
    ("unflatten", lambda t: t.unflatten(3, (5, 1))),
    ("permute", lambda t: t.permute(0, 2, 3, 1)),
    ("transpose", lambda t: t.transpose(1, 3)),
    ("contiguous_cl", lambda t: t.contiguous(memory_format=torch.channels_last)),
    ("permute_contiguous", lambda t: t.permute(0, 2, 3, 1).contiguous()),
    ("squeeze", lambda t: t[:, :1].squeeze(1)),
    ("unsqueeze", lambda t: t.unsqueeze(2)),
    ("select", lambda t: t.select(1, 2)),
    ("narrow", lambda t: t.narrow(2, 1, 2)),
    ("getitem", lambda t: t[1, :, 1:3, ::2]),
    ("clone", lambda t: t.clone()),
    ("detach", lambda t: t.detach()),
    ("to_cl", lambda t: t.to(memory_format=torch.channels_last)),
    ("movedim", lambda t: t.movedim(1, -1)),
]


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8])
@pytest.mark.parametrize("name,op", VIEW_OPS, ids=[n for n, _ in VIEW_OPS])
def test_view_ops_keep_qparams(name, op, dtype):
    codes = _codes((2, 3, 4, 5), dtype)
    before = codes.clone()
    q = QTensor(codes, 0.25, 7 if dtype == torch.uint8 else -3)
    out = op(q)
    want = op(codes)
    assert isinstance(out, QTensor)
    assert (out.scale, out.zero_point, out.dtype) == (q.scale, q.zero_point, dtype)
    assert out.shape == want.shape and out.int_data.shape == want.shape
    assert out.stride() == want.stride()
    assert torch.equal(out.int_data, want)
    assert torch.equal(codes, before)  # input never modified


def test_splits_and_joins():
    codes = _codes((2, 6, 3))
    q = QTensor(codes, 0.5, 100)
    for parts, want in [(q.chunk(3, 1), codes.chunk(3, 1)), (q.split([1, 5], 1),
                                                            codes.split([1, 5], 1)),
                        (torch.split(q, 4, 1), torch.split(codes, 4, 1)),
                        (q.unbind(0), codes.unbind(0))]:
        assert len(parts) == len(want)
        for p, w in zip(parts, want):
            assert isinstance(p, QTensor) and (p.scale, p.zero_point) == (0.5, 100)
            assert torch.equal(p.int_data, w)
    a, b = q.chunk(2, 1)
    for fn in (torch.cat, torch.stack):
        out = fn([b, a], 0)
        assert isinstance(out, QTensor) and torch.equal(out.int_data,
                                                        fn([b.int_data, a.int_data], 0))
    out = torch.cat(tensors=[a, b], dim=1)
    assert torch.equal(out.int_data, codes)


def test_max_argmax_match_float():
    # scale > 0: the order of codes is the order of values.
    codes = _codes((4, 9), torch.int8, seed=3)
    q = QTensor(codes, 0.1, -5)
    ref = q.dequantize()
    vals, idx = q.max(1)
    assert isinstance(vals, QTensor) and torch.equal(vals.dequantize(), ref.max(1).values)
    assert torch.equal(idx, ref.max(1).indices)
    assert torch.equal(torch.max(q).dequantize(), ref.max())
    assert torch.equal(q.argmax(1), ref.argmax(1)) and torch.equal(torch.argmax(q), ref.argmax())
    other = QTensor(_codes((4, 9), torch.int8, seed=4), 0.1, -5)
    assert torch.equal(torch.max(q, other).dequantize(), torch.maximum(ref, other.dequantize()))


def test_dequantize_per_tensor_and_per_channel():
    codes = _codes((3, 4))
    q = QTensor(codes, 0.125, 130)
    assert torch.equal(q.dequantize(), (codes.float() - 130) * 0.125)
    assert torch.equal(torch.dequantize(q), q.dequantize())
    scale = torch.tensor([0.5, 0.25, 2.0, 1.0])
    zp = torch.tensor([0, 10, 255, 128])
    pc = QTensor(codes, scale, zp, axis=1)
    assert pc.axis == 1
    assert torch.equal(pc.dequantize(), (codes.float() - zp.float()) * scale)
    assert torch.equal(QTensor(codes, scale[:3], zp[:3], axis=-2).dequantize(),
                       (codes.float() - zp[:3, None].float()) * scale[:3, None])


@pytest.mark.parametrize("op", [
    lambda q: q + 1, lambda q: q * q, lambda q: torch.sigmoid(q), lambda q: q.float(),
    lambda q: q.sum(), lambda q: torch.nn.functional.max_pool2d(q, 2),
    lambda q: torch.nn.functional.conv2d(q, torch.zeros(1, 3, 1, 1)), lambda q: q.mean(),
], ids=["add", "mul", "sigmoid", "float", "sum", "max_pool2d", "conv2d", "mean"])
def test_arithmetic_is_rejected_by_name(op):
    q = QTensor(_codes((2, 3, 4, 4)), 0.1, 3)
    with pytest.raises(NotImplementedError, match=r"qplugin.QTensor: .*not supported"):
        op(q)


def test_bad_construction_and_mixed_qparams():
    codes = _codes((2, 3))
    with pytest.raises(TypeError, match="expected uint8 or int8 codes, got torch.float32"):
        QTensor(codes.float(), 0.1, 0)
    with pytest.raises(TypeError, match="expected plain codes"):
        QTensor(QTensor(codes, 0.1, 0), 0.1, 0)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="expected a finite positive float scale"):
            QTensor(codes, bad, 0)
    with pytest.raises(ValueError, match=r"zero_point in \[0, 255\]"):
        QTensor(codes, 0.1, 256)
    with pytest.raises(ValueError, match=r"zero_point in \[-128, 127\]"):
        QTensor(codes.to(torch.int8), 0.1, 128)
    with pytest.raises(TypeError, match="expected an int zero_point"):
        QTensor(codes, 0.1, 1.5)
    with pytest.raises(ValueError, match="expected an axis"):
        QTensor(codes, torch.ones(3), torch.zeros(3, dtype=torch.long), axis=2)
    with pytest.raises(ValueError, match="length 3"):
        QTensor(codes, torch.ones(2), torch.zeros(2, dtype=torch.long), axis=1)
    a, b = QTensor(codes, 0.1, 3), QTensor(codes, 0.2, 3)
    with pytest.raises(ValueError, match="expects equal qparams"):
        torch.cat([a, b])
    with pytest.raises(TypeError, match="per-tensor QTensors only"):
        torch.cat([a, codes])
    with pytest.raises(TypeError, match=r"to\(torch.float32\) would reinterpret"):
        a.to(torch.float32)
    pc = QTensor(codes, torch.ones(3), torch.zeros(3, dtype=torch.long), axis=1)
    with pytest.raises(NotImplementedError, match="per-channel QTensor"):
        pc.view(3, 2)


class _Between(torch.nn.Module):
    """Quantize by hand, the view ops a CNN/transformer applies between modules, dequantize."""

    def forward(self, x):
        q = QTensor(torch.clamp(torch.round(x / 0.1) + 3, 0, 255).to(torch.uint8), 0.1, 3)
        q = q.view(q.shape[0], 4, 4).permute(0, 2, 1).contiguous()
        a, b = q.chunk(2, 1)
        q = torch.cat([b, a], 1)
        q = torch.flatten(q, 1)[:, 1:].unsqueeze(0).squeeze(0)
        return q.dequantize(), q.max(1).values.dequantize(), q.argmax(1)


def test_export_leaves_plain_uint8_ops():
    m, x = _Between(), torch.randn(3, 16, generator=torch.Generator().manual_seed(0))
    ep = torch.export.export(m, (x,), strict=False)
    quantized = {torch.quint8, torch.qint8, torch.qint32, torch.quint4x2}
    for node in ep.graph.nodes:
        val = node.meta.get("val")
        for v in (val if isinstance(val, (tuple, list)) else [val]):
            if isinstance(v, torch.Tensor):
                assert not isinstance(v, QTensor), node
                assert v.dtype not in quantized, node
        if node.op == "call_function":
            assert "quantized" not in str(node.target), node
    for got, want in zip(ep.module()(x), m(x)):
        assert torch.equal(got, want)


def test_compile_has_no_graph_break():
    m, x = _Between(), torch.randn(3, 16, generator=torch.Generator().manual_seed(1))
    torch._dynamo.reset()
    assert torch._dynamo.explain(m)(x).graph_break_count == 0
    for got, want in zip(torch.compile(m)(x), m(x)):
        assert torch.equal(got, want)


def test_relu_forms_match_pytorch_quantized_relu():
    # Converted models keep float nn.ReLU modules between quantized ones (torch.ao does too):
    # relu of a per-tensor QTensor is max(code, zero_point) with the same qparams, in every form.
    for dtype, zp in ((torch.uint8, 100), (torch.int8, -7)):
        lo, hi = (0, 256) if dtype == torch.uint8 else (-128, 128)
        c = torch.randint(lo, hi, (2, 3, 5), dtype=torch.int64).to(dtype)
        qdt = torch.quint8 if dtype == torch.uint8 else torch.qint8
        want = torch.relu(torch._make_per_tensor_quantized_tensor(c, 0.1, zp)).int_repr()
        assert not torch.equal(want, c)  # the case has codes below the zero point
        for f in (torch.relu, torch.nn.functional.relu, lambda t: t.relu(), torch.nn.ReLU()):
            out = f(QTensor(c, 0.1, zp))
            assert isinstance(out, QTensor) and (out.scale, out.zero_point) == (0.1, zp)
            assert torch.equal(out.int_data, want)
        for f in (torch.nn.ReLU(inplace=True), torch.relu_, lambda t: t.relu_()):
            q = QTensor(c.clone(), 0.1, zp)
            assert f(q) is q and torch.equal(q.int_data, want)
        assert qdt in (torch.quint8, torch.qint8)


def test_unsupported_compute_op_names_itself():
    q = QTensor(torch.zeros(2, 3, dtype=torch.uint8), 0.1, 3)
    with pytest.raises(NotImplementedError, match=r"qplugin\.QTensor: .*add"):
        q + q
    with pytest.raises(NotImplementedError, match=r"qplugin\.QTensor: .*sigmoid"):
        torch.sigmoid(q)


class _QParamsInForward(torch.nn.Module):
    def forward(self, x):
        q = QTensor(torch.clamp(torch.round(x / 0.5) + 10, 0, 255).to(torch.uint8), 0.5, 10)
        z = q.q_zero_point()
        r = QTensor(q.int_data, q.q_scale(), z)  # q_zero_point() is a valid zero_point
        return r.dequantize() + z, torch.full((2,), z), r.int_repr() - z, q.is_quantized


def test_compile_q_zero_point_is_a_constant():
    # Dynamo runs a method call on a QTensor on fake codes: an int result would be a graph
    # break; q_zero_point() is a constant there, as q_scale().
    m, x = _QParamsInForward(), torch.randn(3, 4, generator=torch.Generator().manual_seed(2))
    want = m(x)
    assert type(want[3]) is bool and type(QTensor(x.to(torch.uint8), 0.5, 10).q_zero_point()) is int
    torch._dynamo.reset()
    explain = torch._dynamo.explain(m)(x)
    assert explain.graph_break_count == 0 and explain.graph_count == 1, explain.break_reasons
    assert not explain.break_reasons  # (a break in the outermost frame is not counted)
    for backend in ("aot_eager", "inductor"):
        torch._dynamo.reset()
        got = torch.compile(m, backend=backend)(x)
        assert all(torch.equal(g, w) for g, w in zip(got[:3], want[:3])) and got[3] is True
    ep = torch.export.export(m, (x,), strict=False)
    assert all(torch.equal(g, w) for g, w in zip(ep.module()(x)[:3], want[:3]))
