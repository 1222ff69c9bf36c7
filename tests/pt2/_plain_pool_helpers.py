# Shared helpers of the PT2-door tests of pooling, upsample, normalization and embedding
# (tests/pt2/test_plain_{pooling,upsample,normalization,embedding}.py): random codes in a chosen
# layout, the matching legacy quantized tensor, byte identity of the two doors, opcheck.
# Changes with: qplugin/pt2/fake/*.py, csrc/common/qarg.h.
import pytest
import torch

QDTYPE = {torch.uint8: torch.quint8, torch.int8: torch.qint8, torch.int32: torch.qint32}
OPCHECK_UTILS = ("test_schema", "test_faketensor", "test_aot_dispatch_dynamic")


def codes(shape, dtype=torch.uint8, memory_format=None, gen=None, lo=None, hi=None):
    """Random codes of `dtype` (the full range unless lo/hi), in `memory_format` if given."""
    info = torch.iinfo(dtype)
    lo = info.min if lo is None else lo
    hi = info.max if hi is None else hi
    x = torch.randint(lo, hi + 1, shape, dtype=torch.int64, generator=gen).to(dtype)
    if memory_format is not None:
        x = x.contiguous(memory_format=memory_format)
    return x


def codes_in_layout(shape, dtype, layout, gen):
    """codes(shape, dtype) in `layout`: a memory format, None (contiguous), or "strided" (a
    non-dense view: every other element of a wider last dim)."""
    if layout == "strided":
        wide = list(shape)
        wide[-1] *= 2
        return codes(wide, dtype, gen=gen)[..., ::2]
    return codes(shape, dtype, layout, gen=gen)


def qparams(dtype, gen=None):
    """A random (scale, zero_point) for codes of `dtype`."""
    scale = float(torch.empty(()).uniform_(0.01, 0.5, generator=gen))
    if dtype == torch.uint8:
        zp = int(torch.randint(0, 256, (), generator=gen))
    elif dtype == torch.int8:
        zp = int(torch.randint(-128, 128, (), generator=gen))
    else:
        zp = int(torch.randint(-1000, 1000, (), generator=gen))
    return scale, zp


def as_quantized(x, scale, zp):
    """The legacy door's operand: a quantized tensor with the bytes and strides of codes `x`."""
    base = x if x._base is None else x._base
    q = torch._make_per_tensor_quantized_tensor(base, scale, zp)
    if q.stride() != base.stride():  # channels-last base: rebuilt in that layout
        q = torch._make_per_tensor_quantized_tensor(base.contiguous(), scale, zp)
        q = q.as_strided(base.shape, base.stride())
        q.copy_(torch._make_per_tensor_quantized_tensor(base.contiguous(), scale, zp))
    if x._base is not None:
        q = q.as_strided(x.shape, x.stride(), x.storage_offset())
    assert q.stride() == x.stride(), (q.stride(), x.stride())
    assert torch.equal(q.int_repr(), x)
    return q


def assert_same(legacy, plain, scale=None, zero_point=None):
    """The two doors gave the same result: same shape, strides and bytes (and the legacy output
    carries the qparams the route promises)."""
    assert not plain.is_quantized
    assert legacy.is_quantized
    assert plain.dtype == {torch.quint8: torch.uint8, torch.qint8: torch.int8,
                           torch.qint32: torch.int32}[legacy.dtype]
    assert plain.shape == legacy.shape
    assert plain.stride() == legacy.stride(), (plain.stride(), legacy.stride())
    assert torch.equal(plain, legacy.int_repr())
    if scale is not None:
        assert legacy.q_scale() == scale and legacy.q_zero_point() == zero_point


def opcheck(op, args, kwargs=None):
    torch.library.opcheck(op, args, kwargs, test_utils=OPCHECK_UTILS)


def raises_naming(fn, *needles):
    """fn() raises a RuntimeError whose message holds every needle (the op name, the arg...)."""
    with pytest.raises(RuntimeError) as e:
        fn()
    msg = str(e.value)
    for n in needles:
        assert n in msg, f"{n!r} not in error message: {msg}"
    return msg
