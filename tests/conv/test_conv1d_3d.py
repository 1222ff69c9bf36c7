"""conv1d / conv3d (+relu): parity with torch.ops.quantized and the exact reference, every ISA,
unpack shapes, bad inputs (PyTorch returns an empty tensor for conv3d with a too-large kernel)."""
from _conv_common import (  # noqa: E402,F401  (tests/conv/_conv_common.py)
    ISAS, START_ISA, F, assert_qclose, exact, make, pytest, qplugin, torch, torch_oracle,
    warnings)

C1 = [(2, 16, 32, 50, 3, 1, 1, 1, 1), (1, 17, 34, 33, 5, 2, 2, 2, 17), (4, 8, 12, 7, 1, 1, 0, 1, 2),
      (1, 3, 5, 9, 7, 3, 3, 1, 1)]
C3 = [(2, 4, 8, 9, 3, 1, 1, 1, 1), (1, 16, 16, 7, 3, 2, 1, 1, 16), (1, 6, 9, 6, 1, 1, 0, 1, 3),
      (1, 3, 5, 8, 3, 1, 2, 2, 1)]


@pytest.mark.parametrize("dim,case", [(1, c) for c in C1] + [(3, c) for c in C3])
@pytest.mark.parametrize("per_ch", [False, True])
def test_parity(isa, dim, case, per_ch):
    N, Cin, Cout, S, k, s, p, d, g = case
    x, w, b = make(dim, N, Cin, Cout, S, k, g, per_ch=per_ch)
    args = ([s] * dim, [p] * dim, [d] * dim, g)
    pq = getattr(torch.ops.qplugin, f"conv{dim}d_prepack")(w, b, *args)
    fn = getattr(F, f"conv{dim}d")
    for relu in (False, True):
        name = f"conv{dim}d" + ("_relu" if relu else "")
        y = getattr(torch.ops.qplugin, name)(x, pq, 0.05, 100)
        ref = exact(fn, x, w, b, 0.05, 100, relu, stride=s, padding=p, dilation=d, groups=g)
        assert_qclose(y, ref)
        if g < Cin and not per_ch:
            pt = getattr(torch.ops.quantized, f"conv{dim}d_prepack")(w, b, *args)
            r = getattr(torch.ops.quantized, name)(x, pt, 0.05, 100)
            assert_qclose(y, torch_oracle(r, ref, x, w, name))
            assert y.stride() == r.stride()
    wu, bu = getattr(torch.ops.qplugin, f"conv{dim}d_unpack")(pq)
    assert torch.equal(wu.int_repr(), w.int_repr())


def test_bad_inputs():
    x, w, b = make(3, 1, 4, 4, 3, 3, 1)
    pq = torch.ops.qplugin.conv3d_prepack(w, b, [1] * 3, [0] * 3, [1] * 3, 1)
    with pytest.raises(RuntimeError, match="kernel to fit"):
        torch.ops.qplugin.conv3d(x[:, :, :2], pq, 0.1, 0)
    with pytest.raises(RuntimeError, match="5-D input"):
        torch.ops.qplugin.conv3d(x[0], pq, 0.1, 0)
    x1, w1, b1 = make(1, 1, 4, 6, 9, 3, 1)
    with pytest.raises(RuntimeError, match="3-D weight"):
        torch.ops.qplugin.conv1d_prepack(w, b, [1], [0], [1], 1)
    pq1 = torch.ops.qplugin.conv1d_prepack(w1, b1, [1], [0], [1], 1)
    with pytest.raises(RuntimeError, match="3-D input"):
        torch.ops.qplugin.conv1d(x1.unsqueeze(2), pq1, 0.1, 0)
