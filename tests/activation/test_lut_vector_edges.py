"""Vector 256-entry lookups (kernels::table().lut8 / lut8_nchw_to_nhwc, AVX2 VPSHUFB + blend tree
and AVX-512 VPERMI2B): every ISA gives the scalar tier's bytes. All 256 codes through each
table-driven op, every length 0..64 (and past the 32/64-byte blocks) for the tails, odd offsets
(unaligned views), in-place and strided inputs, and the per-channel-table transpose of NCHW
batch_norm2d with channel counts and plane sizes around the 16 x 256 tile.
"""
import pytest
import torch
import torch.nn.functional as F

import qplugin  # noqa: F401

ops = torch.ops.qplugin


def _scalar_and(isa, fn):
    """fn() under `isa` (the fixture already set it) and under scalar."""
    got = fn()
    torch.ops.qplugin._set_cpu_isa("scalar")
    try:
        want = fn()
    finally:
        torch.ops.qplugin._set_cpu_isa(isa)
    return got, want


def _same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.q_scale() == want.q_scale() and got.q_zero_point() == want.q_zero_point()
    assert torch.equal(got.int_repr(), want.int_repr())


def _codes(dtype, n, seed, offset=0):
    g = torch.Generator().manual_seed(seed)
    raw = torch.randint(0, 256, (n + offset,), generator=g, dtype=torch.int32)
    if dtype == torch.qint8:
        raw = raw - 128
        base = raw.to(torch.int8)
    else:
        base = raw.to(torch.uint8)
    q = torch._make_per_tensor_quantized_tensor(base, 0.037, 3 if dtype == torch.qint8 else 131)
    return q[offset:]


OPS = {
    "hardswish": lambda x: ops.hardswish(x, 0.021, 17),
    "elu": lambda x: ops.elu(x, 0.03, 40),
    "sigmoid": lambda x: ops.sigmoid(x, 1 / 256, 0 if x.dtype == torch.quint8 else -128),
    "leaky_relu": lambda x: ops.leaky_relu(x, 0.1, False, 0.02, 60),
    "tanh": lambda x: ops.tanh(x),
    "gelu": lambda x: ops.gelu(x, 0.025, 20),
    "silu": lambda x: ops.silu(x, 0.025, 30),
    "hardsigmoid": lambda x: ops.hardsigmoid(x),
}


@pytest.mark.parametrize("dtype", [torch.quint8, torch.qint8])
@pytest.mark.parametrize("name", sorted(OPS))
def test_all_codes_every_length(isa, name, dtype):
    fn = OPS[name]
    # All 256 codes, in order and reversed, through the vector body (256 = 8 x 32 bytes).
    raw = torch.arange(256, dtype=torch.int32)
    base = (raw - 128).to(torch.int8) if dtype == torch.qint8 else raw.to(torch.uint8)
    zp = 3 if dtype == torch.qint8 else 131
    x = torch._make_per_tensor_quantized_tensor(torch.cat([base, base.flip(0)]), 0.037, zp)
    _same(*_scalar_and(isa, lambda: fn(x)))
    # Tails: every length 0..64 and around the 32/64-byte blocks, aligned and at odd offsets.
    for n in list(range(65)) + [95, 96, 97, 127, 128, 129, 255, 257, 1000]:
        for off in (0, 1, 7):
            x = _codes(dtype, n, seed=n * 3 + off, offset=off)
            _same(*_scalar_and(isa, lambda: fn(x)))


@pytest.mark.parametrize("name", ["hardswish", "elu", "sigmoid", "leaky_relu"])
def test_strided_and_channels_last(isa, name):
    fn = OPS[name]
    x = _codes(torch.quint8, 2 * 37 * 13 * 11, seed=5).reshape(2, 37, 13, 11)
    for v in (x, x.contiguous(memory_format=torch.channels_last), x[:, ::2], x.transpose(2, 3)):
        _same(*_scalar_and(isa, lambda: fn(v)))


@pytest.mark.parametrize("n", [63, 64, 65, 1001])
def test_inplace(isa, n):
    # In place (y == x): the vector body must read each block before writing it.
    def run():
        x = _codes(torch.quint8, n, seed=9)
        y = ops.leaky_relu(x, 0.1, True, x.q_scale(), x.q_zero_point())
        assert y.data_ptr() == x.data_ptr()
        return x

    _same(*_scalar_and(isa, run))


@pytest.mark.parametrize("C", [1, 15, 16, 17, 33, 64])
@pytest.mark.parametrize("HW", [(1, 1025), (31, 33), (32, 32), (16, 65), (40, 41)])
def test_batch_norm_nchw_tables(isa, C, HW):
    # NCHW input, >= 1024 pixels per channel: per-channel tables, then the 16 x 256 tile transpose
    # into the channels-last output (lut8_nchw_to_nhwc), with C and HW off the tile sizes.
    g = torch.Generator().manual_seed(C * 100 + HW[0])
    N = 2 if HW[0] * HW[1] < 1024 else 1
    x = _codes(torch.quint8, N * C * HW[0] * HW[1], seed=C + HW[1]).reshape(N, C, *HW)
    w, b, m = (torch.randn(C, generator=g) for _ in range(3))
    v = torch.rand(C, generator=g) + 0.5
    for fn in (ops.batch_norm2d, ops.batch_norm2d_relu):
        _same(*_scalar_and(isa, lambda: fn(x, w, b, m, v, 1e-5, 0.07, 100)))
