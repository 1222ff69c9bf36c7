"""Exact references for the dynamic ops (tests/dynamic): PyTorch's dynamic activation qparams
(quant_utils::ChooseQuantizationParams, preserve_sparsity off), the fbgemm quantization
q = round_half_even(clamp(fma(x, 1/scale, zp), 0, top)) and the exact int64 GEMM with the float32
epilogue y = float32(acc) * float32(s_a * s_w[n]) + bias[n]. Independent of torch.ao (and
torch_ao_dynamic, which finds torch.ao's dynamic modules where they exist)."""
import math

import numpy as np
import torch


def choose_qparams(mn, mx, reduce_range):
    """(scale as float64, zero point) for the dynamic input (min/max already float32)."""
    qmin, qmax = (0, 127) if reduce_range else (0, 255)
    mn = min(np.float32(mn), np.float32(0.0))
    mx = max(np.float32(mx), np.float32(0.0))
    scale = (float(mx) - float(mn)) / (qmax - qmin)
    if np.float32(scale) == 0 or np.isinf(np.float32(1.0) / np.float32(scale)):
        scale = 0.1
    small = float(np.float32(6.1e-5))
    if scale < small:
        org = np.float32(scale)
        scale = small
        if mn == 0:
            mx = np.float32(small * (qmax - qmin))
        elif mx == 0:
            mn = np.float32(-small * (qmax - qmin))
        else:
            amp = np.float32(np.float32(small) / org)
            mn, mx = np.float32(mn * amp), np.float32(mx * amp)
    zmin = qmin - float(mn) / scale
    zmax = qmax - float(mx) / scale
    emin = abs(qmin) - abs(float(mn) / scale)
    emax = abs(qmax) - abs(float(mx) / scale)
    z = zmin if emin < emax else zmax
    zp = qmin if z < qmin else qmax if z > qmax else int(np.rint(z))
    return scale, zp


def quantize_codes(x, scale, zp, top):
    """u8 codes of float32 x: fma in float64 (x * inv is exact there; the sum is rounded once to
    float32 except in double-rounding corner cases far rarer than the tests' sizes), clamp,
    round half to even."""
    inv = np.float32(1.0) / np.float32(scale)
    t = (x.double().numpy() * float(inv) + float(zp)).astype(np.float32)
    t = np.minimum(np.maximum(t, np.float32(0)), np.float32(top))
    return torch.from_numpy(np.rint(t).astype(np.int64))


def fma_f32(a, b, c):
    """float32 a * b + c rounded once (an exact FMA) for float32 tensors: the product is exact in
    float64 (24 + 24 bits); the float64 sum's rounding error (TwoSum) decides the one case in which
    rounding the float64 sum to float32 is not the FMA's result, a sum exactly halfway between two
    float32 values."""
    p = a.double() * b.double()
    c64 = c.double()
    s = p + c64
    bb = s - p
    err = (p - (s - bb)) + (c64 - bb)
    r = s.float()
    r64 = r.double()
    up = torch.nextafter(r, torch.full_like(r, math.inf))
    dn = torch.nextafter(r, torch.full_like(r, -math.inf))
    tie_up = (s - r64) * 2 == up.double() - r64  # s halfway between r and the next float up
    tie_dn = (s - r64) * 2 == dn.double() - r64
    r = torch.where(tie_up & (err > 0), up, r)
    return torch.where(tie_dn & (err < 0), dn, r)


def linear_dynamic_exact(x, qweight, bias, reduce_range, relu=False):
    """float32 output of linear_dynamic computed exactly (int64 GEMM) from the definition."""
    x2 = x.reshape(-1, x.shape[-1]).float()
    if x2.numel():
        mn, mx = float(x2.min()), float(x2.max())
    else:
        mn = mx = 0.0
    scale, zp = choose_qparams(mn, mx, reduce_range)
    q = quantize_codes(x2, scale, zp, 127 if reduce_range else 255)
    wq = qweight.int_repr().to(torch.int64)
    if qweight.qscheme() in (torch.per_channel_affine, torch.per_channel_symmetric):
        ws = qweight.q_per_channel_scales().to(torch.float32)
        wz = qweight.q_per_channel_zero_points().to(torch.int64)
    else:
        ws = torch.full([wq.shape[0]], qweight.q_scale(), dtype=torch.float32)
        wz = torch.full([wq.shape[0]], qweight.q_zero_point(), dtype=torch.int64)
    acc = (q - zp) @ (wq - wz[:, None]).t()
    mult = torch.tensor(np.float32(scale), dtype=torch.float32) * ws
    b = bias.float() if bias is not None else torch.zeros_like(mult)
    # y = fma(float(acc), mult, bias) in float32, as PyTorch's build of fbgemm computes it.
    y = fma_f32(acc.to(torch.float32), mult.expand_as(acc), b.expand_as(acc))
    if relu:
        y = torch.relu(y)
    return y.reshape(*x.shape[:-1], wq.shape[0])


def torch_ao_dynamic(probe="linear_prepack"):
    """(torch.ao.nn.quantized.dynamic, torch.ao.quantization), or (None, None) where torch.ao or
    torch.ops.quantized.<probe> is missing (legacy-blocked mode: tests/_block_torch_ao.py)."""
    try:
        import torch.ao.nn.quantized.dynamic as nnqd
        import torch.ao.quantization as tq
        getattr(torch.ops.quantized, probe)
        return nnqd, tq
    except Exception:
        return None, None
