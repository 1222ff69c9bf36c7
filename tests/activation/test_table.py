"""Table-driven tests of the activation family: every row of qplugin/_tables/activation.py, every
test case of the row, on every ISA (the `isa` fixture), three dtypes, every 8-bit code.

Oracle: the row's float reference in float64 on the dequantized input, quantized with the output
qparams (round half to even): the kernels compute exactly this, so every code must match
(Case.exact). Cases with exact=False (softmax: a sum over the row) are held within one unit.
The generated surface (module classes, functional forms, exports, mapping) is checked against
the row too. Adding a row adds its cases here without editing this file.
"""
import copy
import inspect
import io

import pytest
import torch

import qplugin
from qplugin import nn as qnn
from qplugin._tables import activation as table
from qplugin.nn import functional as qF

from _reference import (INT_DTYPE, QRANGE, TABLE_OUT_QPARAMS, assert_qclose, assert_qequal,
                        table_args, table_call, table_reference)

DTYPES = (torch.quint8, torch.qint8, torch.qint32)
IN_QPARAMS = {torch.quint8: (0.05, 120), torch.qint8: (0.05, -7), torch.qint32: (0.05, 11)}
OUT_QPARAMS = TABLE_OUT_QPARAMS  # what SCALE/ZP stand for


def all_codes(dtype):
    """Every 8-bit code once as a [2, 8, 4, 4] tensor (qint32: 256 codes spread over +-300)."""
    scale, zp = IN_QPARAMS[dtype]
    if dtype == torch.qint32:
        c = torch.linspace(-300, 300, 256).round().to(torch.int32)
    else:
        c = (torch.arange(256) + QRANGE[dtype][0]).to(INT_DTYPE[dtype])
    return torch._make_per_tensor_quantized_tensor(c.reshape(2, 8, 4, 4), scale, zp)


def rand_q(shape, dtype, seed, channels_last=False):
    g = torch.Generator().manual_seed(seed)
    x = torch.quantize_per_tensor(torch.randn(shape, generator=g) * 3, *IN_QPARAMS[dtype], dtype)
    return x.contiguous(memory_format=torch.channels_last) if channels_last else x


CASES = [pytest.param(row, case, id=f"{row.name}-{i}")
         for row in table.ROWS for i, case in enumerate(row.cases)]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("row,case", CASES)
def test_case_against_float64(isa, row, case, dtype):
    x = all_codes(dtype)
    y = table_call(row, case, x)
    ref = table_reference(row, case, x)
    if case.exact:
        assert_qequal(y, ref, msg=f"{row.name} {case}")
    else:
        assert_qclose(y, ref, min_identical=0.95, msg=f"{row.name} {case}")


def _pytorch(row, case):
    """PyTorch's answer for a case: torch.ops.quantized.<torch_op> with the same arguments, or
    its aten op on a quantized tensor (default output qparams only); None: PyTorch has none."""
    if row.torch_op is not None:
        return lambda x: getattr(torch.ops.quantized, row.torch_op)(x, *table_args(case))
    if row.torch_on_quantized is not None and not case.args:
        return row.torch_on_quantized
    return None


PYTORCH_CASES = [p for p in CASES if _pytorch(*p.values) is not None]


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("row,case", PYTORCH_CASES)
def test_case_against_pytorch(isa, row, case, dtype, channels_last):
    """Within one unit of PyTorch on >= 99% of the codes, same qparams and memory format; where
    PyTorch (rounding in float) differs on more than 1%, qplugin must be exact."""
    x = rand_q((2, 16, 7, 9), dtype, 1, channels_last)
    y, ref = table_call(row, case, x), _pytorch(row, case)(x)
    assert y.stride() == ref.stride(), (y.stride(), ref.stride())
    if dtype == torch.qint32 and isinstance(row.output_qparams, dict) and table.SCALE not in case.args:
        # PyTorch computes these in float32 onto a 2^-31/2^-32 grid: off by up to ~2^8 codes.
        assert y.q_scale() == ref.q_scale() and y.q_zero_point() == ref.q_zero_point()
        d = (y.int_repr().long() - ref.int_repr().long()).abs()
        assert int(d.max()) <= 512
        return
    if row.torch_op is None and row.output_qparams == "input":
        # PyTorch's aten path (F.gelu on a quantized tensor) keeps the input's scale rounded to
        # float32; qplugin keeps it exactly (docs/deviations.md): compare the codes.
        assert (y.q_scale(), y.q_zero_point()) == (x.q_scale(), x.q_zero_point())
        ref = ref.int_repr()
    try:
        assert_qclose(y, ref, msg=f"{row.name} vs PyTorch")
    except AssertionError:
        assert_qclose(y, ref, max_diff=1, min_identical=0.0, msg=f"{row.name} vs PyTorch")
        assert_qequal(y, table_reference(row, case, x), msg=f"{row.name}: PyTorch differs on"
                      " more than 1%, so qplugin must be exact")


@pytest.mark.parametrize("row,case", CASES)
def test_case_empty_and_non_quantized(row, case):
    e = rand_q((0, 3), torch.quint8, 8)
    assert table_call(row, case, e).shape == (0, 3)
    with pytest.raises(RuntimeError, match=rf"qplugin::{row.op}: expected \w+ to be a quantized"):
        table_call(row, case, torch.randn(2, 3))


@pytest.mark.parametrize("row", [r for r in table.ROWS if r.functional == "generated"],
                         ids=lambda r: r.name)
def test_generated_functional(row):
    fn = getattr(qF, row.name)
    x = all_codes(torch.quint8)
    defaults = [a.default for a in row.module_args if a.to_op]
    want = getattr(torch.ops.qplugin, row.op)(x, *OUT_QPARAMS, *defaults)
    assert_qequal(fn(x, *OUT_QPARAMS), want)
    scripted = torch.jit.script(fn)
    assert_qequal(scripted(x, *OUT_QPARAMS), want)
    assert list(inspect.signature(fn).parameters) == (
        ["input", "scale", "zero_point"] + [a.name for a in row.module_args if a.to_op])
    with pytest.raises(ValueError, match=rf"qplugin.nn.functional.{row.name}: expected a quantized"):
        fn(torch.randn(3), *OUT_QPARAMS)
    with pytest.raises(torch.jit.Error, match=rf"qplugin.nn.functional.{row.name}: expected"):
        scripted(torch.randn(3), *OUT_QPARAMS)
    assert "Args:" in fn.__doc__ and "qplugin/_tables/activation.py" in fn.__doc__


def _module_args(row):
    return [a.default for a in row.module_args]


@pytest.mark.parametrize("row", [r for r in table.ROWS if r.generated], ids=lambda r: r.name)
def test_generated_module(row):
    cls = getattr(qnn, row.module)
    assert cls.__module__ == "qplugin.nn.modules.activation" and cls.__qualname__ == row.module
    assert issubclass(cls, row.torch_module) and cls._FLOAT_MODULE is row.torch_module
    m = cls(*OUT_QPARAMS)
    x = all_codes(torch.quint8)
    extra = [getattr(m, a.name) for a in row.module_args if a.to_op]
    want = getattr(torch.ops.qplugin, row.op)(x, float(m.scale), int(m.zero_point), *extra)
    assert_qequal(m(x), want)
    # TorchScript (the literal forward) with save/load; deepcopy; torch.save; state dict
    buf = io.BytesIO()
    torch.jit.save(torch.jit.script(m), buf)
    buf.seek(0)
    assert_qequal(torch.jit.load(buf)(x), want)
    assert_qequal(copy.deepcopy(m)(x), want)
    buf = io.BytesIO()
    torch.save(m, buf)
    buf.seek(0)
    assert_qequal(torch.load(buf, weights_only=False)(x), want)
    other = cls(0.5, 3)
    other.load_state_dict(m.state_dict())
    assert float(other.scale) == float(m.scale) and int(other.zero_point) == OUT_QPARAMS[1]
    want_dtype = torch.float32 if row.scale_dtype is None else row.scale_dtype
    assert m.state_dict()["scale"].dtype == want_dtype
    assert m.__repr__().startswith(row.repr_name + "(")
    # from_float through an observer, with the module's arguments carried over
    fm = row.torch_module(*_module_args(row))
    fm.activation_post_process = torch.ao.quantization.MinMaxObserver()
    fm.activation_post_process(torch.linspace(-2, 3, 50))
    q = cls.from_float(fm)
    s, z = fm.activation_post_process.calculate_qparams()
    assert float(q.scale) == pytest.approx(float(s), rel=1e-6) and int(q.zero_point) == int(z)
    with pytest.raises(TypeError, match=rf"qplugin.nn.{row.module}.from_float: expected an observed"):
        cls.from_float(torch.nn.Identity())
    with pytest.raises(ValueError, match=rf"qplugin.nn.{row.module}: expected a finite, positive"):
        cls(0.0, 0)


def test_exports_and_mapping_follow_the_table():
    mapping = qplugin.quantization.get_default_static_quant_module_mappings()
    for row in table.ROWS:
        assert callable(getattr(qF, row.name)) and row.name in qF.__all__
        if row.module:
            cls = getattr(qnn, row.module)
            assert row.module in qnn.__all__
            assert mapping[row.torch_module] is cls, row.name
