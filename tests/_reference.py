# References for qplugin's op tests (STYLE.md section 8): torch_ao_<op> (PyTorch's own quantized
# op, x86 engine), float_<op> (exact: float64 op on dequantized inputs, quantized with the output
# qparams, round half to even, clamp), assert_qclose / assert_qequal, an input-mutation check and
# the ISA helpers (the scalar path is the reference of the vector paths), opcheck_schema.
# Changes with: tests/_sweeps.py, every tests/<family>/test_<op>.py.
import contextlib
import copy
import io
import json
import math
import os

import pytest
import torch

from _sweeps import INT_DTYPE, QRANGE

# ---------------------------------------------------------------------------------------------
# torch_ao_<op>: PyTorch's quantized ops (the oracle; conftest sets the x86 engine).


def torch_ao_quantized_batch_norm(input, weight, bias, mean, var, eps, output_scale,
                                  output_zero_point):
    return torch.quantized_batch_norm(input, weight, bias, mean, var, eps, output_scale,
                                      output_zero_point)


def _torch_ao_op(name):
    """torch_ao_<name>(*args) = torch.ops.quantized.<name>(*args), looked up at the call (it is
    gone in legacy-blocked mode, tests/_block_torch_ao.py)."""
    def call(*args):
        return getattr(torch.ops.quantized, name)(*args)
    call.__name__ = call.__qualname__ = f"torch_ao_{name}"
    return call


# torch_ao_batch_norm{,1d,2d,3d}{,_relu}(qx, weight, bias, mean, var, eps, output_scale,
# output_zero_point)
for _name in ("batch_norm", "batch_norm1d", "batch_norm2d", "batch_norm3d", "batch_norm_relu",
              "batch_norm1d_relu", "batch_norm2d_relu", "batch_norm3d_relu"):
    globals()[f"torch_ao_{_name}"] = _torch_ao_op(_name)


def torch_ao_relu6(qx, inplace=False):
    return torch.ops.quantized.relu6(qx, inplace)


def torch_ao_hardswish(input, output_scale, output_zero_point):
    return torch.ops.quantized.hardswish(input, output_scale, output_zero_point)


def torch_ao_elu(self, output_scale, output_zero_point, alpha=1, scale=1, input_scale=1):
    return torch.ops.quantized.elu(self, output_scale, output_zero_point, alpha, scale,
                                   input_scale)


# ---------------------------------------------------------------------------------------------
# float_<op>: exact references.


def dequantize64(q):
    """(int_repr - zero_point) * scale, in float64 (exact for every 8-bit and qint32 code)."""
    return (q.int_repr().to(torch.float64) - q.q_zero_point()) * q.q_scale()


def quantize64(v, scale, zero_point, dtype):
    """clamp(round_half_even(v / scale) + zero_point, qmin, qmax) in float64, as a contiguous
    per-tensor quantized tensor with exactly these qparams."""
    assert v.dtype == torch.float64
    assert not torch.isnan(v).any(), "the float reference produced NaN"
    qmin, qmax = QRANGE[dtype]
    r = (torch.round(v / scale) + zero_point).clamp(qmin, qmax)  # torch.round: half to even
    codes = r.to(torch.int64).to(INT_DTYPE[dtype]).contiguous()
    return torch._make_per_tensor_quantized_tensor(codes, scale, zero_point)


def _per_channel(t, x):
    """A [C] parameter as float64, shaped to broadcast over x's dim 1."""
    shape = [1] * x.dim()
    shape[1] = x.shape[1]
    return t.to(torch.float64).reshape(shape)


def float_batch_norm(input, weight, bias, mean, var, eps, output_scale, output_zero_point,
                     relu=False):
    """(x - mean) / sqrt(var + eps) * weight + bias [then relu], all float64; weight/bias None
    mean 1/0 (as float batch norm)."""
    x = dequantize64(input)
    y = (x - _per_channel(mean, x)) / torch.sqrt(_per_channel(var, x) + eps)
    if weight is not None:
        y = y * _per_channel(weight, x)
    if bias is not None:
        y = y + _per_channel(bias, x)
    if relu:
        y = torch.clamp_min(y, 0.0)
    return quantize64(y, output_scale, output_zero_point, input.dtype)


def float_relu6(qx):
    """min(max(x, 0), 6) with the input's qparams."""
    x = dequantize64(qx)
    return quantize64(torch.clamp(x, 0.0, 6.0), qx.q_scale(), qx.q_zero_point(), qx.dtype)


def hardswish64(v):
    # Same evaluation order as qplugin's table: (v * relu6(v + 3)) / 6.
    return v * torch.clamp(v + 3.0, 0.0, 6.0) / 6.0


def float_hardswish(input, output_scale, output_zero_point):
    return quantize64(hardswish64(dequantize64(input)), output_scale, output_zero_point,
                      input.dtype)


def elu64(v, alpha=1.0, scale=1.0, input_scale=1.0):
    # PyTorch's generalized ELU: x > 0 ? x * scale : expm1(x * input_scale) * alpha * scale.
    return torch.where(v > 0, v * scale, torch.expm1(v * input_scale) * alpha * scale)


def float_elu(self, output_scale, output_zero_point, alpha=1, scale=1, input_scale=1):
    return quantize64(elu64(dequantize64(self), float(alpha), float(scale), float(input_scale)),
                      output_scale, output_zero_point, self.dtype)


def exact_code_table(fn, dtype, in_scale, in_zp, out_scale, out_zp):
    """Per-code reference with Python's libm (math.*): out code for every input code of an 8-bit
    dtype, as a dict. Independent of torch's vectorized float64 functions."""
    qmin, qmax = QRANGE[dtype]
    table = {}
    for q in range(qmin, qmax + 1):
        v = fn((q - in_zp) * in_scale)
        r = v / out_scale
        assert not math.isnan(r), f"the reference gave NaN for code {q}"
        if math.isinf(r):
            o = qmax if r > 0 else qmin
        else:
            o = min(max(round(r) + out_zp, qmin), qmax)  # round(): half to even
        table[q] = o
    return table


# ---------------------------------------------------------------------------------------------
# Test cases of the op tables (qplugin/_tables/): a Case's arguments with SCALE/ZP standing for
# output qparams the test chooses.

TABLE_OUT_QPARAMS = (0.02, 9)


def table_args(case, out_qparams=TABLE_OUT_QPARAMS):
    """The op's arguments after the input, SCALE/ZP replaced by out_qparams."""
    from qplugin._tables.activation import SCALE, ZP
    return [out_qparams[0] if a is SCALE else out_qparams[1] if a is ZP else a
            for a in case.args]


def table_call(row, case, x, out_qparams=TABLE_OUT_QPARAMS):
    """torch.ops.qplugin.<row.op>(x, *case args)."""
    return getattr(torch.ops.qplugin, row.op)(x, *table_args(case, out_qparams))


def table_out_qparams(row, case, x, out_qparams=TABLE_OUT_QPARAMS):
    """The output qparams the op must give: the chosen ones, the input's or the row's fixed."""
    from qplugin._tables.activation import SCALE
    if any(a is SCALE for a in case.args):
        return out_qparams
    if row.output_qparams == "input":
        return x.q_scale(), x.q_zero_point()
    assert isinstance(row.output_qparams, dict), f"{row.name}: a case without output qparams"
    return row.output_qparams[x.dtype]


def table_reference(row, case, x, out_qparams=TABLE_OUT_QPARAMS):
    """The exact answer: the row's float reference in float64 on dequantized x, quantized."""
    scale, zp = table_out_qparams(row, case, x, out_qparams)
    v = row.reference(dequantize64(x), *case.ref_args, **case.ref_kwargs)
    return quantize64(v, scale, zp, x.dtype)


# ---------------------------------------------------------------------------------------------
# Comparisons.


def _describe(q):
    return (f"{q.dtype} {tuple(q.shape)} scale={q.q_scale()!r} zero_point={q.q_zero_point()} "
            f"strides={q.stride()}")


def assert_qclose(actual, expected, max_diff=1, min_identical=0.99, msg="", *, exact=False):
    """actual and expected agree: int codes at most max_diff apart everywhere and identical on at
    least min_identical of the elements (exact=True: identical everywhere). Each side is a
    quantized tensor or a tensor of integer codes; when both are quantized, dtype, qscheme, scale
    and zero point must match too. The message names the worst index and the mismatch share.
    The one within-one-unit comparator of the suite."""
    if exact:
        max_diff, min_identical = 0, 1.0
    where = f"{msg}: " if msg else ""
    if actual.is_quantized and expected.is_quantized:
        assert actual.dtype == expected.dtype, f"{where}dtype {actual.dtype} != {expected.dtype}"
        assert actual.qscheme() == torch.per_tensor_affine, f"{where}qscheme {actual.qscheme()}"
        assert actual.q_scale() == expected.q_scale(), (
            f"{where}scale {actual.q_scale()!r} != {expected.q_scale()!r}")
        assert actual.q_zero_point() == expected.q_zero_point(), (
            f"{where}zero point {actual.q_zero_point()} != {expected.q_zero_point()}")
    assert actual.shape == expected.shape, (
        f"{where}shape {tuple(actual.shape)} != {tuple(expected.shape)}")
    n = actual.numel()
    if n == 0:
        return
    a = (actual.int_repr() if actual.is_quantized else actual).to(torch.int64)
    e = (expected.int_repr() if expected.is_quantized else expected).to(torch.int64)
    d = (a - e).abs_()
    worst = int(d.argmax())
    dmax = int(d.reshape(-1)[worst])
    n_diff = int((d != 0).sum())
    identical = 1.0 - n_diff / n
    if dmax > max_diff or identical < min_identical:
        idx = tuple(int(i) for i in torch.unravel_index(torch.tensor(worst), tuple(d.shape)))
        describe = (f"; actual {_describe(actual)}, expected {_describe(expected)}"
                    if actual.is_quantized and expected.is_quantized else "")
        raise AssertionError(
            f"{where}{n_diff} of {n} elements ({n_diff / n:.3%}) differ; worst |diff| {dmax} at "
            f"index {idx}: actual {int(a[idx])}, expected {int(e[idx])} "
            f"(allowed: max_diff={max_diff}, identical >= {min_identical:.2%}){describe}")


def assert_qequal(actual, expected, msg=""):
    """Bit-identical quantized tensors (values and qparams; not strides: see assert_same_layout)."""
    assert_qclose(actual, expected, max_diff=0, min_identical=1.0, msg=msg)


def assert_copies_match(m, args, expected, tmp_path):
    """The copies of module m -- torch.save / torch.load, torch.jit.script (and its save / load
    through tmp_path), copy.deepcopy -- give `expected` on args, bit for bit."""
    buf = io.BytesIO()
    torch.save(m, buf)
    buf.seek(0)
    assert_qequal(torch.load(buf, weights_only=False)(*args), expected)
    s = torch.jit.script(m)
    assert_qequal(s(*args), expected)
    path = str(tmp_path / "scripted.pt")
    torch.jit.save(s, path)
    assert_qequal(torch.jit.load(path)(*args), expected)
    assert_qequal(copy.deepcopy(m)(*args), expected)


def script_round_trip(m):
    """(torch.jit.script(m), that scripted module saved to a buffer and loaded back)."""
    scripted = torch.jit.script(m)
    buf = io.BytesIO()
    torch.jit.save(scripted, buf)
    buf.seek(0)
    return scripted, torch.jit.load(buf)


def effective_strides(t):
    """Strides of the dims that have more than one element: the ones that say where data is.
    The stride of a size-1 dim is arbitrary (PyTorch itself picks different ones for the same
    memory layout), and an empty tensor has no layout at all."""
    if t.numel() == 0:
        return ()
    return tuple((i, s) for i, (n, s) in enumerate(zip(t.shape, t.stride())) if n > 1)


def assert_same_layout(actual, expected, msg=""):
    """Same memory layout: equal strides on every dim of size > 1, both dense or both not."""
    where = f"{msg}: " if msg else ""
    assert effective_strides(actual) == effective_strides(expected), (
        f"{where}strides {actual.stride()} != {expected.stride()} for shape {tuple(actual.shape)}")


def assert_bytes_equal(actual, expected, msg=""):
    """Identical codes, qparams and strides (for comparing one ISA's output with another's)."""
    assert_qequal(actual, expected, msg=msg)
    where = f"{msg}: " if msg else ""
    assert actual.stride() == expected.stride(), (
        f"{where}strides {actual.stride()} != {expected.stride()}")


# ---------------------------------------------------------------------------------------------
# Inputs must not change.


def _snapshot(value):
    if not isinstance(value, torch.Tensor):
        return None
    if value.is_quantized:
        return (value.int_repr().clone(), value.q_scale(), value.q_zero_point(), value.stride(),
                value.storage_offset())
    return (value.detach().clone(), None, None, value.stride(), value.storage_offset())


def _same(before, value):
    data, scale, zp, stride, offset = before
    if value.stride() != stride or value.storage_offset() != offset:
        return False
    if value.is_quantized:
        return (torch.equal(value.int_repr(), data) and value.q_scale() == scale
                and value.q_zero_point() == zp)
    return torch.equal(value.isnan(), data.isnan()) and torch.equal(
        value.nan_to_num(0.0), data.nan_to_num(0.0))


def call_unmodified(fn, *args, **kwargs):
    """fn(*args, **kwargs), asserting that no tensor argument changed (values, qparams, strides)."""
    named = list(enumerate(args)) + list(kwargs.items())
    before = {k: _snapshot(v) for k, v in named}
    out = fn(*args, **kwargs)
    for k, v in named:
        if before[k] is not None:
            assert _same(before[k], v), f"{getattr(fn, '__name__', fn)} modified argument {k!r}"
    return out


# ---------------------------------------------------------------------------------------------
# ISA helpers: the scalar path is the reference every vector path must equal byte for byte.


@contextlib.contextmanager
def using_isa(name):
    """Temporarily sets the kernel ISA (must be available), restoring the previous one."""
    prev = torch.ops.qplugin._cpu_isa()
    got = torch.ops.qplugin._set_cpu_isa(name)
    assert got == name, f"_set_cpu_isa({name!r}) gave {got!r}"
    try:
        yield
    finally:
        torch.ops.qplugin._set_cpu_isa(prev)


@contextlib.contextmanager
def using_threads(n):
    """Temporarily sets torch's intra-op thread count, restoring the previous one."""
    prev = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(prev)


def available_isas():
    """The kernel ISAs this process may use (the CPU's, capped by QPLUGIN_CPU_ISA), lowest first."""
    prev = torch.ops.qplugin._cpu_isa()
    try:
        return [name for name in ("scalar", "avx2", "avx512vnni")
                if torch.ops.qplugin._set_cpu_isa(name) == name]
    finally:
        torch.ops.qplugin._set_cpu_isa(prev)


def isas_to_compare():
    """The ISAs of a byte-identity test (every tier must give the scalar path's bytes). Skips the
    test when fewer than two are available: in the scalar-only pass it would compare scalar with
    scalar and could not fail."""
    isas = available_isas()
    if len(isas) < 2:
        pytest.skip(f"byte identity across ISAs needs two tiers; available: {isas}")
    return isas


def on_scalar(fn, *args, **kwargs):
    """fn(*args, **kwargs) computed with the scalar kernels."""
    with using_isa("scalar"):
        return fn(*args, **kwargs)


@pytest.fixture(autouse=True)
def one_thread():
    """One intra-op thread unless a test asks for more: the machine may be shared, and a parallel
    region waits for its slowest (descheduled) thread. Restores the previous count. Autouse in
    the test modules that import it (directly or through a family helper)."""
    prev = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(prev)


def on_one_thread(fn, *args, **kwargs):
    """fn(*args, **kwargs) with torch.set_num_threads(1): results must not depend on how
    at::parallel_for splits the work."""
    prev = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return fn(*args, **kwargs)
    finally:
        torch.set_num_threads(prev)


# ---------------------------------------------------------------------------------------------
# opcheck. Ops on quint8/qint8/qint32 tensors cannot run on FakeTensor in torch 2.13 ("quantized
# nyi in meta tensors"), so only opcheck's schema test applies (STYLE.md section 8). Known
# failures live in tests/opcheck_failures.json with a reason, and must keep failing.

_OPCHECK_FAILURES_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                      "opcheck_failures.json")
with open(_OPCHECK_FAILURES_PATH) as _f:
    OPCHECK_FAILURES = {k: v for k, v in json.load(_f).items() if not k.startswith("_")}


def opcheck_schema(op, args, case_id):
    """torch.library.opcheck(op, args, test_utils=("test_schema",)), or, for a case recorded in
    opcheck_failures.json, the recorded failure."""
    from torch.testing._internal.optests import OpCheckError

    known = OPCHECK_FAILURES.get(case_id, {})
    if "test_schema" in known:
        with pytest.raises(OpCheckError, match="test_schema failed"):
            torch.library.opcheck(op, args, test_utils=("test_schema",))
        return
    assert torch.library.opcheck(op, args, test_utils=("test_schema",)) == {
        "test_schema": "SUCCESS"}


# ---------------------------------------------------------------------------------------------
# PyTorch as a GEMM/conv oracle depends on the CPU (docs/oracle.md).
# On a CPU without AVX-512 VNNI, FBGEMM's and oneDNN's u8 x s8 kernels add pairs of products in
# int16 (VPMADDUBSW), which saturates once |x0*w0 + x1*w1| > 32767 for raw codes x (uint8) and
# w (int8). On VNNI machines the same calls are exact. So a test never trusts PyTorch's linear or
# conv result blindly: it decides per case whether PyTorch is a valid oracle (within one unit of
# the exact float64 reference, >= 99% identical) and otherwise falls back to the exact reference.
# The fallback is only allowed where saturation is possible at all; PyTorch off the exact result
# on inputs it cannot saturate on still fails the test (then the reference or qplugin is wrong).
# Reproduce an AVX2-only PyTorch on an AVX-512 machine with
#   FBGEMM_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2
# (tools/test.sh runs the GEMM/conv/model folders that way too).

INT16_MAX = 32767


def u8s8_pairs_may_saturate(x_codes, w_codes):
    """True when some pair of raw u8 x s8 products could leave int16: the condition under which
    PyTorch's AVX2 (VPMADDUBSW) GEMM/conv kernels may be inexact. Bound: 2 * max(x) * max|w|."""
    if x_codes.numel() == 0 or w_codes.numel() == 0:
        return False
    xm = int(x_codes.to(torch.int32).max())
    wm = int(w_codes.to(torch.int32).abs().max())
    return 2 * xm * wm > INT16_MAX


def torch_is_valid_oracle(torch_codes, exact_codes, min_identical=0.99):
    """PyTorch's codes are within one unit of the exact codes and identical on >= min_identical."""
    t = torch_codes.to(torch.int64)
    e = exact_codes.to(torch.int64)
    if t.shape != e.shape:
        return False
    if t.numel() == 0:
        return True
    d = (t - e).abs()
    return int(d.max()) <= 1 and float((d == 0).double().mean()) >= min_identical


def exact_linear_u8(x, w, b, scale, zp, relu=False):
    """A quint8 linear's codes from exact int64 accumulators, requantized with qplugin's float32
    formula (kernels/gemm/qgemm.h): bit-exact for every ISA. w per-channel qint8."""
    K = x.shape[-1]
    a = x.int_repr().long().reshape(-1, K) - x.q_zero_point()
    wd = w.int_repr().long() - w.q_per_channel_zero_points()[:, None]
    acc = a @ wd.T
    atw = torch.tensor(x.q_scale(), dtype=torch.float32) * w.q_per_channel_scales().float()
    mult = atw / torch.tensor(scale, dtype=torch.float32)
    v = (acc.float() + b / atw) * mult
    v = torch.clamp(v, float(0 if relu else -zp), float(255 - zp))
    return (torch.round(v) + zp).to(torch.uint8)


def gemm_oracle(torch_codes, exact_codes, x_codes, w_codes, what=""):
    """The oracle for a u8 x s8 GEMM/conv case: PyTorch's result where it is valid for this case,
    else the exact reference. Raises when PyTorch is off where it cannot saturate (its kernels
    are exact there on every CPU, so a difference means the reference or the case is wrong)."""
    if torch_is_valid_oracle(torch_codes, exact_codes):
        return torch_codes
    if not u8s8_pairs_may_saturate(x_codes, w_codes):
        d = (torch_codes.to(torch.int64) - exact_codes.to(torch.int64)).abs()
        raise AssertionError(
            f"{what}: PyTorch is up to {int(d.max()) if d.numel() else 0} off the exact reference "
            f"on inputs where its u8 x s8 kernels cannot saturate")
    return exact_codes


def exact_module_codes(mod, qx):
    """The exact output codes of a converted Linear / Conv{1,2,3}d (or their fused ReLU forms),
    torch.ao's or qplugin's: float64 op on the dequantized input and weight, plus bias, quantized
    with the module's output qparams (round half to even, clamp)."""
    import torch.nn.functional as F

    w = mod.weight()
    b = mod.bias()
    xd = qx.dequantize().double()
    wd = w.dequantize().double()
    bd = b.double() if b is not None else None
    name = type(mod).__name__
    if name.startswith("Linear"):
        y = F.linear(xd, wd, bd)
    else:
        dim = wd.dim() - 2
        assert getattr(mod, "padding_mode", "zeros") == "zeros", "exact_module_codes: zeros only"
        fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[dim]
        y = fn(xd, wd, bd, stride=mod.stride, padding=mod.padding, dilation=mod.dilation,
               groups=mod.groups)
    q = torch.round(y / float(mod.scale)) + int(mod.zero_point)
    if "ReLU" in name:
        q = torch.clamp(q, min=int(mod.zero_point))
    return torch.clamp(q, 0, 255).to(torch.uint8)


def module_oracle(torch_mod, qx, what=""):
    """torch_mod(qx) as quantized codes where PyTorch is a valid oracle for this input, else the
    exact reference (see gemm_oracle)."""
    return gemm_oracle(torch_mod(qx).int_repr(), exact_module_codes(torch_mod, qx),
                       qx.int_repr(), torch_mod.weight().int_repr(), what)


@contextlib.contextmanager
def quantized_engine(name):
    """torch.backends.quantized.engine set to name for the block (PyTorch has some fused ops,
    e.g. linear_leaky_relu and conv2d_add, on its onednn engine only)."""
    prev = torch.backends.quantized.engine
    torch.backends.quantized.engine = name
    try:
        yield
    finally:
        torch.backends.quantized.engine = prev


def qint8_weight(shape, per_channel=False, axis=0, seed=1):
    """A random qint8 weight (normal, std 0.3): per tensor (scale 0.006, zero point 2) or per
    channel along axis (scales in [0.002, 0.012), zero points in [-4, 4])."""
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(shape, generator=g) * 0.3
    if per_channel:
        n = shape[axis]
        s = torch.rand(n, generator=g, dtype=torch.float64) * 0.01 + 0.002
        z = torch.randint(-4, 5, (n,), generator=g)
        return torch.quantize_per_channel(w, s, z, axis, torch.qint8)
    return torch.quantize_per_tensor(w, 0.006, 2, torch.qint8)


def weight64(w):
    """A per-tensor or per-channel (axis 0) quantized weight dequantized in float64."""
    if w.qscheme() == torch.per_tensor_affine:
        return dequantize64(w)
    shape = [-1] + [1] * (w.dim() - 1)
    zp = w.q_per_channel_zero_points().to(torch.float64).reshape(shape)
    sc = w.q_per_channel_scales().to(torch.float64).reshape(shape)
    return (w.int_repr().to(torch.float64) - zp) * sc
