# ConvTranspose1d/2d/3d modules: TorchScript script + save + load give identical bytes.
from _conv_common import pytest, torch  # noqa: E402,F401  (tests/conv/_conv_common.py)
from _reference import script_round_trip

import qplugin.nn as qnn  # noqa: E402


@pytest.mark.parametrize("dim,shape", [(1, (2, 8, 10)), (2, (1, 8, 6, 7)), (3, (1, 8, 3, 4, 5))])
def test_conv_transpose_module_scripts_and_round_trips(dim, shape):
    g = torch.Generator().manual_seed(dim)
    m = getattr(qnn, f"ConvTranspose{dim}d")(8, 4, 3, stride=2, padding=1, output_padding=1)
    w = torch.quantize_per_tensor(torch.randn(8, 4, *([3] * dim), generator=g) * 0.1, 0.003, 0,
                                  torch.qint8)
    m.set_weight_bias(w, torch.randn(4, generator=g))
    m.scale, m.zero_point = 0.07, 60
    x = torch.quantize_per_tensor(torch.randn(shape, generator=g), 0.05, 64, torch.quint8)
    expected = m(x)
    scripted, loaded = script_round_trip(m)
    for got in (scripted(x), loaded(x)):
        assert torch.equal(got.int_repr(), expected.int_repr())
        assert got.q_scale() == expected.q_scale() and got.q_zero_point() == expected.q_zero_point()
