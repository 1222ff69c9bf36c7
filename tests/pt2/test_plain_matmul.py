"""The PT2 door's `qplugin::matmul.plain` (uint8/int8 codes + explicit qparams): the legacy
op's bytes on every ISA (one core, csrc/ops/quantized_cpu/matmul_kernel.cpp), opcheck (schema,
fake kernel, AOT dispatch), and its bad inputs."""
import pytest
import torch

import qplugin.pt2.fake  # noqa: F401  (registers the fake kernels)

plain = torch.ops.qplugin.matmul.plain
legacy = torch.ops.qplugin.matmul


def _codes(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    lo, hi = (0, 256) if dtype == torch.uint8 else (-128, 128)
    return torch.randint(lo, hi, shape, generator=g, dtype=dtype)


CASES = [((4, 5), (5, 6)), ((2, 3, 40, 70), (3, 70, 33)), ((5,), (5, 6)), ((3, 4, 5), (5,)),
         ((0, 5), (5, 3)), ((2, 1, 3, 7), (1, 4, 7, 2))]
QPARAMS = {torch.uint8: ((0.05, 130), (0.02, 120), (0.2, 100)),
           torch.int8: ((0.05, 3), (0.02, -7), (0.2, -10))}


@pytest.mark.parametrize("i", range(len(CASES)))
@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8])
def test_plain_equals_legacy_bytes(isa, i, dtype):
    sa, sb = CASES[i]
    a, b = _codes(sa, dtype, i), _codes(sb, dtype, i + 9)
    (s_a, z_a), (s_b, z_b), (s, z) = QPARAMS[dtype]
    a0, b0 = a.clone(), b.clone()
    got = plain(a, s_a, z_a, b, s_b, z_b, s, z)
    assert torch.equal(a, a0) and torch.equal(b, b0)  # inputs untouched
    qa = torch._make_per_tensor_quantized_tensor(a, s_a, z_a)
    qb = torch._make_per_tensor_quantized_tensor(b, s_b, z_b)
    want = legacy(qa, qb, s, z)
    assert got.dtype == dtype and not got.is_quantized
    assert got.shape == want.shape and got.is_contiguous()
    assert torch.equal(got, want.int_repr())


@pytest.mark.parametrize("i", range(len(CASES)))
@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8])
def test_opcheck(i, dtype):
    sa, sb = CASES[i]
    (s_a, z_a), (s_b, z_b), (s, z) = QPARAMS[dtype]
    args = (_codes(sa, dtype, i), s_a, z_a, _codes(sb, dtype, i + 1), s_b, z_b, s, z)
    torch.library.opcheck(plain, args, test_utils=("test_schema", "test_faketensor",
                                                   "test_aot_dispatch_dynamic"))


def _bad():
    u = lambda *s: _codes(s, torch.uint8, 0)  # noqa: E731
    return [
        ((torch.rand(2, 3), 0.1, 0, u(3, 2), 0.1, 0, 0.1, 0),
         r"expected qa of dtype (uint8 or int8|Byte or Char) \(quantized codes\), got "
         r"(torch\.float32|Float)"),
        ((u(2, 3), 0.1, 0, _codes((3, 2), torch.int8, 1), 0.1, 0, 0.1, 0),
         r"expected qa and qb of the same dtype"),
        ((torch.quantize_per_tensor(torch.rand(2, 3), 0.1, 0, torch.quint8), 0.1, 0, u(3, 2),
          0.1, 0, 0.1, 0), r"expected qa to be a plain tensor of codes"),
        ((u(2, 3), 0.0, 0, u(3, 2), 0.1, 0, 0.1, 0), r"expected a finite, positive qa_scale"),
        ((u(2, 3), 0.1, 0, u(3, 2), 0.1, 300, 0.1, 0), r"expected qb_zero_point in \[0, 255\]"),
        ((u(2, 3), 0.1, 0, u(4, 2), 0.1, 0, 0.1, 0), r"expected qb with 3 rows"),
        ((u(2, 2, 3), 0.1, 0, u(3, 3, 2), 0.1, 0, 0.1, 0), r"expected broadcastable batch dimensions"),
        ((u(2, 3), 0.1, 0, u(3, 2), 0.1, 0, float("inf"), 0), r"expected a finite, positive output_scale"),
        ((u(2, 3), 0.1, 0, u(3, 2), 0.1, 0, 0.1, -1), r"expected output_zero_point in \[0, 255\]"),
    ]


@pytest.mark.parametrize("i", range(9))
def test_bad_inputs(i):
    args, pattern = _bad()[i]
    with pytest.raises(RuntimeError, match=r"qplugin::matmul(\.plain)?: " + pattern):
        plain(*args)


@pytest.mark.parametrize("i", [0, 1, 5, 6, 7, 8])
def test_fake_rejects_what_the_kernel_rejects(i):
    args, pattern = _bad()[i]
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode() as mode:
        fargs = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
        with pytest.raises(RuntimeError, match=pattern):
            plain(*fargs)
