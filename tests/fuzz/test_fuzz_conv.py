# Property tests of conv1d/2d/3d (+relu) and conv_transpose1d/2d/3d: random shapes, groups (incl.
# depthwise), kernel/stride/padding/dilation/output_padding, input layouts, per-tensor and
# per-channel weights with any zero point, extreme activation zero points and tiny/huge scales,
# against the exact float64 reference (within 1 unit, >= 99% identical) and the scalar kernels
# (byte-identical) on every ISA. Changes with: tests/fuzz/_fuzz.py,
# csrc/packed/conv_packed_params.*, csrc/ops/quantized_cpu/conv_*.
import pytest
import torch
import torch.nn.functional as F

from _fuzz import LAYOUTS, LONG, Case, cases, check, deq64, output_qparams, requant64

Q = torch.ops.qplugin


def draw_conv(seed):
    c = Case("conv", seed)
    dim = c.choice((1, 2, 2, 3))
    transpose = c.chance(0.3)
    groups = c.choice((1, 1, 1, 2, 3, "depthwise"))
    cmax = 24 if LONG else 10
    if groups == "depthwise":
        groups = c.randint(1, cmax)
        cin_g, cout_g = 1, c.choice((1, 1, 2))
    else:
        cin_g, cout_g = c.size(1, cmax), c.size(1, cmax)
    cin, cout = cin_g * groups, cout_g * groups
    kmax = {1: 7, 2: 5, 3: 3}[dim]
    k = [c.randint(1, kmax) for _ in range(dim)]
    stride = [c.choice((1, 1, 2, 3)) for _ in range(dim)]
    dilation = [c.choice((1, 1, 2)) for _ in range(dim)]
    padding = [c.randint(0, max(0, (dilation[i] * (k[i] - 1)) // 2 + (1 if c.chance(0.2) else 0)))
               for i in range(dim)]
    out_pad = [c.randint(0, max(stride[i], dilation[i]) - 1) if transpose else 0
               for i in range(dim)]
    smax = {1: 40 if LONG else 24, 2: 20 if LONG else 11, 3: 9 if LONG else 6}[dim]
    spatial = []
    for i in range(dim):
        span = dilation[i] * (k[i] - 1) + 1
        lo = 1 if transpose else max(1, span - 2 * padding[i])
        spatial.append(c.randint(lo, max(lo, smax)))
    if transpose:
        # The transposed output must be non-empty: (in - 1) * stride - 2 pad + span + out_pad > 0.
        for i in range(dim):
            span = dilation[i] * (k[i] - 1) + 1
            while (spatial[i] - 1) * stride[i] - 2 * padding[i] + span + out_pad[i] <= 0:
                spatial[i] += 1
    n = c.choice((1, 1, 2, 3))
    xshape = c.shrink((n, cin, *spatial), keep=(1,) + tuple(range(2, 2 + dim)))
    relu = (not transpose) and c.chance(0.3)
    c.note(dim=dim, transpose=transpose, groups=groups, cin=cin, cout=cout, kernel=k,
           stride=stride, padding=padding, dilation=dilation, output_padding=out_pad, relu=relu)

    x = c.qtensor(xshape, torch.quint8, c.scale(), c.zero_point(torch.quint8),
                  layouts=LAYOUTS[dim + 2])
    wshape = (cin, cout_g, *k) if transpose else (cout, cin_g, *k)
    c.note(w_shape=wshape)
    w = c.qweight(wshape, axis=1 if transpose else 0)
    bias = None
    if c.chance(0.8):
        k_total = cin_g * int(torch.tensor(k).prod())
        mag = x.q_scale() * float(deq64(w).abs().max() + 1e-30) * 64 * k_total ** 0.5
        bias = c.randn(cout) * mag * c.choice((0.01, 1.0, 10.0))
    c.note(bias=bias is not None)

    x64, w64 = deq64(x), deq64(w)
    b64 = None if bias is None else bias.double()
    if transpose:
        fn = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[dim]
        v = fn(x64, w64, b64, stride, padding, out_pad, groups, dilation)
        prepack = getattr(Q, f"conv_transpose{dim}d_prepack")
        op = getattr(Q, f"conv_transpose{dim}d")
        args = (w, bias, stride, padding, out_pad, dilation, groups)
    else:
        fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[dim]
        v = fn(x64, w64, b64, stride, padding, dilation, groups)
        prepack = getattr(Q, f"conv{dim}d_prepack")
        op = getattr(Q, f"conv{dim}d_relu" if relu else f"conv{dim}d")
        args = (w, bias, stride, padding, dilation, groups)
    scale, zp = output_qparams(c, torch.relu(v) if relu else v)
    expected = requant64(v, scale, zp, torch.quint8, relu=relu)
    c.units = (torch.relu(v) if relu else v) / scale
    # Prepack inside run(): a packed object keeps the kernel of the ISA current at prepack.
    return c, (lambda: op(x, prepack(*args), scale, zp)), expected


@pytest.mark.parametrize("seed", cases(40))
def test_fuzz_conv(isa, seed):
    case, run, expected = draw_conv(seed)
    check(case, isa, run, expected)


def draw_conv_add(seed):
    """conv2d_add / conv2d_add_relu: a 2-d conv (any groups incl. depthwise, kernel, stride,
    padding, dilation, weight kind) plus a quint8 accumulator of the output's shape with its own
    qparams and layout; ReLU after the add (csrc/ops/quantized_cpu/conv_kernel.cpp: the conv
    driver's exact int32 accumulators, or the int64 GEMM for depthwise plans)."""
    c = Case("conv_add", seed)
    groups = c.choice((1, 1, 1, 2, "depthwise"))
    cmax = 24 if LONG else 10
    if groups == "depthwise":
        groups = c.randint(1, cmax)
        cin_g, cout_g = 1, 1
    else:
        cin_g, cout_g = c.size(1, cmax), c.size(1, cmax)
    cin, cout = cin_g * groups, cout_g * groups
    k = [c.randint(1, 5) for _ in range(2)]
    stride = [c.choice((1, 1, 2, 3)) for _ in range(2)]
    dilation = [c.choice((1, 1, 2)) for _ in range(2)]
    padding = [c.randint(0, (dilation[i] * (k[i] - 1)) // 2 + (1 if c.chance(0.2) else 0))
               for i in range(2)]
    smax = 20 if LONG else 11
    spatial = [c.randint(max(1, dilation[i] * (k[i] - 1) + 1 - 2 * padding[i]), smax)
               for i in range(2)]
    spatial = [max(s, dilation[i] * (k[i] - 1) + 1 - 2 * padding[i]) for i, s in enumerate(spatial)]
    n = c.choice((1, 1, 2, 3))
    xshape = c.shrink((n, cin, *spatial), keep=(1, 2, 3))
    relu = c.chance(0.5)
    c.note(groups=groups, cin=cin, cout=cout, kernel=k, stride=stride, padding=padding,
           dilation=dilation, relu=relu)
    x = c.qtensor(xshape, torch.quint8, c.scale(), c.zero_point(torch.quint8),
                  layouts=LAYOUTS[4])
    wshape = (cout, cin_g, *k)
    w = c.qweight(wshape)
    bias = None
    if c.chance(0.8):
        mag = x.q_scale() * float(deq64(w).abs().max() + 1e-30) * 64 * (cin_g * k[0] * k[1]) ** 0.5
        bias = c.randn(cout) * mag * c.choice((0.01, 1.0, 10.0))
    v = F.conv2d(deq64(x), deq64(w), None if bias is None else bias.double(), stride, padding,
                 dilation, groups)
    # The accumulator's scale: near the conv result's (both terms matter), or far from it.
    vmax = float(v.abs().max()) if v.numel() else 1.0
    a_scale = max(vmax, 1e-30) / 128 * c.choice((1.0, 1.0, 1e-3, 1e3))
    acc = c.qtensor(tuple(v.shape), torch.quint8, a_scale, c.zero_point(torch.quint8),
                    layouts=LAYOUTS[4], name="acc")
    v = v + deq64(acc)
    scale, zp = output_qparams(c, torch.relu(v) if relu else v)
    expected = requant64(v, scale, zp, torch.quint8, relu=relu)
    c.units = (torch.relu(v) if relu else v) / scale
    op = Q.conv2d_add_relu if relu else Q.conv2d_add
    args = (w, bias, stride, padding, dilation, groups)
    return c, (lambda: op(x, acc, Q.conv2d_prepack(*args), scale, zp)), expected


@pytest.mark.parametrize("seed", cases(20))
def test_fuzz_conv_add(isa, seed):
    case, run, expected = draw_conv_add(seed)
    check(case, isa, run, expected)
