# PT2 door of the embedding ops (csrc/ops/embedding.cpp): they take plain tensors already (uint8
# fused tables, float weights, int indices), so what the PT2 door needs is their fake kernels
# (qplugin/pt2/fake/embedding.py): opcheck (schema, fake tensor, aot dispatch) on each, with
# the real kernel's shapes, and bad input naming the op on both the real and the fake kernel.
# Changes with: csrc/ops/embedding.cpp, csrc/ops/cpu/embedding_kernel.cpp,
# qplugin/pt2/fake/embedding.py.
import pytest
import torch

import qplugin.pt2.fake  # noqa: F401  (registers the fake kernels)
from _plain_pool_helpers import opcheck, raises_naming

Q = torch.ops.qplugin


def _w(rows, cols, seed=0, dtype=torch.float32):
    return torch.randn(rows, cols, generator=torch.Generator().manual_seed(seed)).to(dtype)


@pytest.mark.parametrize("shape", [(10, 16), (3, 4, 8), (1, 1)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_opcheck_byte_prepack_unpack(shape, dtype):
    w = torch.randn(shape).to(dtype)
    opcheck(Q.embedding_bag_byte_prepack.default, (w,))
    opcheck(Q.embedding_bag_byte_unpack.default, (Q.embedding_bag_byte_prepack(w),))


@pytest.mark.parametrize("bits", [4, 2])
@pytest.mark.parametrize("optimized", [False, True])
def test_opcheck_nbit_prepack_unpack(bits, optimized):
    w = _w(12, 16)
    prepack = getattr(Q, f"embedding_bag_{bits}bit_prepack").default
    opcheck(prepack, (w, optimized, 50, 0.2))
    opcheck(getattr(Q, f"embedding_bag_{bits}bit_unpack").default, (prepack(w),))


def _tables():
    w = _w(20, 16, 1)
    return {8: Q.embedding_bag_byte_prepack(w), 4: Q.embedding_bag_4bit_prepack(w),
            2: Q.embedding_bag_2bit_prepack(w)}


@pytest.mark.parametrize("bits", [8, 4, 2])
@pytest.mark.parametrize("itype", [torch.int32, torch.int64])
def test_opcheck_rowwise_offsets(bits, itype):
    name = {8: "byte", 4: "4bit", 2: "2bit"}[bits]
    op = getattr(Q, f"embedding_bag_{name}_rowwise_offsets").default
    t = _tables()[bits]
    g = torch.Generator().manual_seed(bits)
    idx = torch.randint(0, 20, (11,), generator=g).to(itype)
    off = torch.tensor([0, 3, 3, 7], dtype=itype)
    psw = torch.rand(11, generator=g)
    for kw in (dict(offsets=off), dict(offsets=off, mode=1),
               dict(offsets=off, mode=2, include_last_offset=False),
               dict(offsets=torch.tensor([0, 3, 7, 11], dtype=itype), include_last_offset=True),
               dict(offsets=off, per_sample_weights=psw)):
        opcheck(op, (t, idx), kw)
    opcheck(op, (t, idx[:10].view(2, 5)), dict(mode=1))
    mapping = torch.randint(-1, 20, (30,), generator=g, dtype=torch.int32)
    opcheck(op, (t, torch.randint(0, 30, (9,), generator=g).to(itype)),
            dict(offsets=off, pruned_weights=True, compressed_indices_mapping=mapping))


def _both(fn, *needles):
    """The real kernel (cpu) and the fake kernel (meta) both refuse, naming the op."""
    for dev in ("cpu", "meta"):
        raises_naming(lambda: fn(dev), *needles)


def test_bad_inputs_name_the_op():
    _both(lambda d: Q.embedding_bag_byte_prepack(torch.zeros(3, 4, dtype=torch.int32,
                                                             device=d)),
          "qplugin::embedding_bag_byte_prepack", "float32")
    _both(lambda d: Q.embedding_bag_4bit_prepack(torch.zeros(3, 5, device=d)),
          "qplugin::embedding_bag_4bit_prepack", "embedding_dim")
    _both(lambda d: Q.embedding_bag_2bit_unpack(torch.zeros(3, 3, dtype=torch.uint8, device=d)),
          "qplugin::embedding_bag_2bit_unpack", "4 bytes")
    _both(lambda d: Q.embedding_bag_byte_unpack(torch.zeros(3, 9, device=d)),
          "qplugin::embedding_bag_byte_unpack", "uint8")
    t = _tables()[8]
    idx = torch.zeros(4, dtype=torch.int64)
    _both(lambda d: Q.embedding_bag_byte_rowwise_offsets(t.to(d), idx.to(d), None),
          "qplugin::embedding_bag_byte_rowwise_offsets", "offsets for 1-D indices")
    _both(lambda d: Q.embedding_bag_byte_rowwise_offsets(t.to(d), idx.float().to(d),
                                                         torch.zeros(1, dtype=torch.int64,
                                                                     device=d)),
          "qplugin::embedding_bag_byte_rowwise_offsets", "indices", "int64")
    _both(lambda d: Q.embedding_bag_byte_rowwise_offsets(
        t.to(d), idx.to(d), torch.zeros(1, dtype=torch.int64, device=d), mode=3),
        "qplugin::embedding_bag_byte_rowwise_offsets", "mode")
    _both(lambda d: Q.embedding_bag_byte_rowwise_offsets(
        t.to(d), idx.to(d), torch.zeros(1, dtype=torch.int64, device=d), mode=1,
        per_sample_weights=torch.ones(4, device=d)),
        "qplugin::embedding_bag_byte_rowwise_offsets", "per_sample_weights")


def test_fake_shapes_match_real():
    from torch._subclasses.fake_tensor import FakeTensorMode
    t = _tables()
    idx = torch.randint(0, 20, (9,))
    off = torch.tensor([0, 2, 5])
    real = {b: getattr(Q, f"embedding_bag_{n}_rowwise_offsets")(t[b], idx, off)
            for b, n in ((8, "byte"), (4, "4bit"), (2, "2bit"))}
    with FakeTensorMode() as mode:
        for b, n in ((8, "byte"), (4, "4bit"), (2, "2bit")):
            f = getattr(Q, f"embedding_bag_{n}_rowwise_offsets")(
                mode.from_tensor(t[b]), mode.from_tensor(idx), mode.from_tensor(off))
            assert f.shape == real[b].shape == (3, 16) and f.dtype == torch.float32
