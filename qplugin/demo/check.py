"""python -m qplugin check: the op-level agreement report.

Reports the version, the kernel ISA in use and the registered ops, then runs the README examples
against PyTorch's own quantized ops on the same inputs and prints how closely they agree.

This file and qplugin/demo/run.py (the torch.ao comparison row of the demo) are the only places
in qplugin/ that call PyTorch's quantized ops: as the oracle of the report, never on a path of a
qplugin op or module. When PyTorch's quantized backend is gone, the report says so and the job
still runs qplugin's ops.
"""
import sys
import warnings

import torch

import qplugin


def _registered_ops():
    names = []
    for schema in torch._C._jit_get_all_schemas():
        if schema.name.startswith("qplugin::"):
            names.append(schema.name[len("qplugin::"):])
    return sorted(set(names))


def _agreement(a, b):
    """(max |int diff|, share identical) of two quantized tensors with equal qparams."""
    assert a.shape == b.shape and a.dtype == b.dtype
    assert a.q_scale() == b.q_scale() and a.q_zero_point() == b.q_zero_point()
    d = (a.int_repr().to(torch.int64) - b.int_repr().to(torch.int64)).abs()
    if d.numel() == 0:
        return 0, 1.0
    return int(d.max()), float((d == 0).to(torch.float64).mean())


def _exact(fn, x, scale, zp):
    """The exact reference: float64 op on the dequantized input, quantized with (scale, zp)
    rounding half to even, clamped to the dtype's range."""
    ints = x.int_repr()
    xd = (ints.to(torch.float64) - x.q_zero_point()) * x.q_scale()
    info = torch.iinfo(ints.dtype)
    q = torch.clamp(torch.round(fn(xd) / scale) + zp, info.min, info.max).to(ints.dtype)
    return torch._make_per_tensor_quantized_tensor(q, scale, zp)


def _examples():
    g = torch.Generator().manual_seed(0)
    x = torch.quantize_per_tensor(torch.randn(8, 64, 56, 56, generator=g), 0.05, 128, torch.quint8)
    C = x.shape[1]
    w, b, m = (torch.randn(C, generator=g) for _ in range(3))
    v = torch.rand(C, generator=g) + 0.5
    xs = torch.quantize_per_tensor(torch.randn(1, 3, 4, 4, generator=g), 0.1, 0, torch.quint8)
    yield ("quantized_batch_norm (README example)",
           torch.ops.qplugin.quantized_batch_norm(xs, torch.ones(3), torch.zeros(3),
                                                  torch.ones(3) * 0.5, torch.ones(3) * 0.2,
                                                  1e-5, 0.1, 0),
           torch.quantized_batch_norm(xs, torch.ones(3), torch.zeros(3), torch.ones(3) * 0.5,
                                      torch.ones(3) * 0.2, 1e-5, 0.1, 0))
    # Other families, one representative case each.
    xl = torch.quantize_per_tensor(torch.randn(32, 768, generator=g), 0.05, 128, torch.quint8)
    wl = torch.quantize_per_channel(torch.randn(1024, 768, generator=g) * 0.05,
                                    torch.rand(1024, generator=g, dtype=torch.double) * 1e-3 + 1e-3,
                                    torch.zeros(1024, dtype=torch.long), 0, torch.qint8)
    bl = torch.randn(1024, generator=g)
    yield ("linear 32x768->1024 per-channel",
           torch.ops.qplugin.linear(xl, torch.ops.qplugin.linear_prepack(wl, bl), 0.5, 64),
           torch.ops.quantized.linear(xl, torch.ops.quantized.linear_prepack(wl, bl), 0.5, 64))
    xc = x[:1].contiguous(memory_format=torch.channels_last)
    wc = torch.quantize_per_tensor(torch.randn(32, 64, 3, 3, generator=g) * 0.05, 0.002, 0,
                                   torch.qint8)
    bc = torch.randn(32, generator=g)
    args = (wc, bc, [1, 1], [1, 1], [1, 1], 1)
    yield ("conv2d 3x3 64->32 56x56",
           torch.ops.qplugin.conv2d.new(xc, torch.ops.qplugin.conv2d_prepack(*args), 0.2, 64),
           torch.ops.quantized.conv2d.new(xc, torch.ops.quantized.conv2d_prepack(*args), 0.2, 64))
    yield ("max_pool2d k3s2p1", torch.ops.qplugin.max_pool2d(x, [3, 3], [2, 2], [1, 1], [1, 1], False),
           torch.ops.quantized.max_pool2d(x, [3, 3], [2, 2], [1, 1], [1, 1], False))
    yield ("avg_pool2d k2s2", torch.ops.qplugin.avg_pool2d(x, [2, 2], [2, 2]),
           torch.nn.functional.avg_pool2d(x, 2, 2))
    x2 = torch.quantize_per_tensor(torch.randn(8, 64, 56, 56, generator=g), 0.05, 120, torch.quint8)
    yield ("add (different qparams)", torch.ops.qplugin.add(x, x2, 0.07, 100),
           torch.ops.quantized.add(x, x2, 0.07, 100))
    xn = torch.quantize_per_tensor(torch.randn(32, 128, 768, generator=g), 0.05, 128, torch.quint8)
    gn, bn = torch.randn(768, generator=g), torch.randn(768, generator=g)
    yield ("layer_norm 32x128x768", torch.ops.qplugin.layer_norm(xn, [768], gn, bn, 1e-5, 0.05, 128),
           torch.ops.quantized.layer_norm(xn, [768], gn, bn, 1e-5, 0.05, 128))
    for cl in (False, True):
        xi = x.contiguous(memory_format=torch.channels_last) if cl else x
        tag = " channels_last" if cl else ""
        yield (f"batch_norm2d 8x64x56x56{tag}",
               torch.ops.qplugin.batch_norm2d(xi, w, b, m, v, 1e-5, 0.1, 120),
               torch.ops.quantized.batch_norm2d(xi, w, b, m, v, 1e-5, 0.1, 120))
        yield (f"batch_norm2d_relu 8x64x56x56{tag}",
               torch.ops.qplugin.batch_norm2d_relu(xi, w, b, m, v, 1e-5, 0.1, 120),
               torch.ops.quantized.batch_norm2d_relu(xi, w, b, m, v, 1e-5, 0.1, 120))
        yield (f"relu6{tag}", torch.ops.qplugin.relu6(xi), torch.ops.quantized.relu6(xi))
        yield (f"hardswish{tag}", torch.ops.qplugin.hardswish(xi, 0.03, 10),
               torch.ops.quantized.hardswish(xi, 0.03, 10),
               _exact(torch.nn.functional.hardswish, xi, 0.03, 10))
        yield (f"elu{tag}", torch.ops.qplugin.elu(xi, 0.03, 40),
               torch.ops.quantized.elu(xi, 0.03, 40), _exact(torch.nn.functional.elu, xi, 0.03, 40))


def _torch_quantized_available():
    try:
        x = torch.quantize_per_tensor(torch.zeros(1), 1.0, 0, torch.quint8)
        torch.ops.quantized.relu6(x)
        return True
    except Exception:  # the oracle is optional: any failure means "not available"
        return False


def _qplugin_only():
    x = torch.quantize_per_tensor(torch.randn(1, 3, 4, 4), 0.1, 0, torch.quint8)
    yield ("quantized_batch_norm (README example)",
           lambda: torch.ops.qplugin.quantized_batch_norm(
               x, torch.ones(3), torch.zeros(3), torch.ones(3) * 0.5, torch.ones(3) * 0.2, 1e-5,
               0.1, 0))
    yield ("hardswish", lambda: torch.ops.qplugin.hardswish(x, 0.03, 10))
    yield ("max_pool2d", lambda: torch.ops.qplugin.max_pool2d(x, [2, 2], [2, 2], [0, 0], [1, 1],
                                                              False))


def main():
    warnings.filterwarnings("ignore", category=UserWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    torch.backends.quantized.engine = "x86"
    print(f"qplugin {qplugin.__version__} (torch {torch.__version__})")
    print(f"library: {qplugin.library_path()}")
    print(f"kernel ISA: {qplugin.cpu_isa()} (CPU supports "
          f"{torch.ops.qplugin._detected_cpu_isa()}; QPLUGIN_CPU_ISA may lower it)")
    ops = _registered_ops()
    print(f"registered ops ({len(ops)}): {', '.join(ops)}")
    if not _torch_quantized_available():
        for name, fn in _qplugin_only():
            y = fn()
            print(f"  {name:42s} {str(tuple(y.shape)):>20s} {str(y.dtype)}")
        print("\nPyTorch's quantized backend is not available: no agreement report (qplugin's ops"
              " ran).")
        return 0
    print("\nagreement with torch.ops.quantized (x86 engine), same inputs:")
    print(f"  {'case':42s} {'max |diff|':>10s} {'identical':>10s} {'= exact':>8s}  layout")
    ok = True
    for name, ours, theirs, *exact in _examples():
        diff, same = _agreement(ours, theirs)
        ex = _agreement(ours, exact[0])[1] if exact else None
        layout_ok = ours.stride() == theirs.stride()
        ok = ok and diff <= 1 and layout_ok and max(same, ex or 0.0) >= 0.99
        print(f"  {name:42s} {diff:10d} {same:10.2%} {'' if ex is None else f'{ex:.2%}':>8s}  "
              f"{'same' if layout_ok else 'DIFFERENT'}")
    print("\n'= exact': share identical to the float64 reference (hardswish/elu are computed "
          "exactly;\nPyTorch's float32 kernels are off by one on a few percent of elements)")
    print("\nOK: all within 1 unit of PyTorch, >= 99% identical to PyTorch or the exact "
          "reference, same output layout" if ok else "\nMISMATCH")
    return 0 if ok else 1
