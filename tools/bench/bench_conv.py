"""Benchmark (not a test): torch.ops.qplugin.conv* vs torch.ops.quantized.conv* (x86 engine) vs
fp32 torch conv (NCHW and channels_last; the faster is reported), same inputs, one process.

Usage:  python tools/bench/bench_conv.py [--threads 1 2] [--isa auto] [--repeat 1]
        [--min-time 0.5] [--format nchw cl] [--only SUBSTRING]

Also provides cases() in the tuple format of tools/bench.py's op families:
(name, qplugin_fn, torch_quantized_fn, fp32_fn, bytes_moved).

Prints a markdown table: median times (calls interleaved round by round), qplugin/torch ratio
(the issue's bar: <= 1.15 per case, geometric mean <= 1.0, both input memory formats) and
qplugin GOPS (2 * MACs / time) against the int8 peak (465 GOPS per core by default).
Note: torch.ops.quantized.conv_transpose2d (x86) gives wrong results when in != out channels
(docs/oracle.md); it is timed anyway.
"""
import argparse
import math
import os
import statistics
import sys
import warnings

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))  # _timing

import torch  # noqa: E402
from _isa_env import torch_engine  # noqa: E402  (tools/_isa_env.py)

import qplugin  # noqa: E402,F401
from _timing import interleaved_medians  # noqa: E402  (tools/_timing.py)

warnings.filterwarnings("ignore", message=".*quantiz.*deprecated.*")

# (name, dim, N, Cin, Cout, spatial, kernel, stride, padding, groups, transpose)
CASES = [
    ("resnet 3x3 64->64 56x56", 2, 1, 64, 64, (56, 56), 3, 1, 1, 1, False),
    ("resnet 3x3 64->64 56x56", 2, 8, 64, 64, (56, 56), 3, 1, 1, 1, False),
    ("resnet 3x3 128->128 28x28", 2, 1, 128, 128, (28, 28), 3, 1, 1, 1, False),
    ("resnet 3x3 128->128 28x28", 2, 8, 128, 128, (28, 28), 3, 1, 1, 1, False),
    ("1x1 256->1024 14x14", 2, 1, 256, 1024, (14, 14), 1, 1, 0, 1, False),
    ("1x1 256->1024 14x14", 2, 8, 256, 1024, (14, 14), 1, 1, 0, 1, False),
    ("stem 7x7 s2 3->64 224x224", 2, 1, 3, 64, (224, 224), 7, 2, 3, 1, False),
    ("3x3 s2 64->128 56x56", 2, 1, 64, 128, (56, 56), 3, 2, 1, 1, False),
    ("dw 3x3 144 56x56", 2, 1, 144, 144, (56, 56), 3, 1, 1, 144, False),
    ("dw 3x3 144 56x56", 2, 8, 144, 144, (56, 56), 3, 1, 1, 144, False),
    ("dw 3x3 s2 96 112x112", 2, 1, 96, 96, (112, 112), 3, 2, 1, 96, False),
    ("conv1d k3 256->256 L1000", 1, 1, 256, 256, (1000,), 3, 1, 1, 1, False),
    ("conv3d k3 16->16 16x56x56", 3, 1, 16, 16, (16, 56, 56), 3, 1, 1, 1, False),
    ("convT2d k2s2 128->64 56x56", 2, 1, 128, 64, (56, 56), 2, 2, 0, 1, True),
    ("convT2d k4s2p1 64->64 56x56", 2, 1, 64, 64, (56, 56), 4, 2, 1, 1, True),
]

_MF = {1: None, 2: torch.channels_last, 3: torch.channels_last_3d}


def _setup(case, fmt, seed=0):
    name, dim, N, Cin, Cout, sp, k, s, p, g, tr = case
    gen = torch.Generator().manual_seed(seed)
    x = torch.quantize_per_tensor(torch.rand(N, Cin, *sp, generator=gen) * 4, 4 / 255, 3,
                                  torch.quint8)
    if fmt == "cl" and dim > 1:
        x = x.contiguous(memory_format=_MF[dim])
    wshape = (Cin, Cout // g) if tr else (Cout, Cin // g)
    nch = wshape[1] if tr else wshape[0]
    scales = torch.rand(nch, generator=gen, dtype=torch.double) * 0.01 + 0.005
    wf = torch.randn(*wshape, *([k] * dim), generator=gen)
    if tr:  # PyTorch's x86 engine has no per-channel transposed conv
        w = torch.quantize_per_tensor(wf, 0.01, 0, torch.qint8)
    else:
        w = torch.quantize_per_channel(wf, scales, torch.zeros(nch, dtype=torch.long), 0,
                                       torch.qint8)
    b = torch.randn(Cout, generator=gen)
    st, pd, dl = [s] * dim, [p] * dim, [1] * dim
    if tr:
        opn = f"conv_transpose{dim}d"
        pq = getattr(torch.ops.qplugin, opn + "_prepack")(w, b, st, pd, [0] * dim, dl, g)
        pt = getattr(torch.ops.quantized, opn + "_prepack")(w, b, st, pd, [0] * dim, dl, g)
    else:
        opn = f"conv{dim}d"
        pq = getattr(torch.ops.qplugin, opn + "_prepack")(w, b, st, pd, dl, g)
        pt = getattr(torch.ops.quantized, opn + "_prepack")(w, b, st, pd, dl, g)
    fq, ft = getattr(torch.ops.qplugin, opn), getattr(torch.ops.quantized, opn)
    xf, wfd = x.dequantize().contiguous(), w.dequantize()
    F = torch.nn.functional
    if tr:
        ffn = getattr(F, f"conv_transpose{dim}d")
        fp32 = lambda xx: ffn(xx, wfd, b, s, p, 0, g)  # noqa: E731
    else:
        ffn = getattr(F, f"conv{dim}d")
        fp32 = lambda xx: ffn(xx, wfd, b, s, p, 1, g)  # noqa: E731
    xcl = xf.contiguous(memory_format=_MF[dim]) if dim > 1 else xf
    macs = None
    y = fq(x, pq, 0.05, 128)
    ysp = y.shape[2:]
    if tr:
        macs = N * Cin * (Cout // g) * (k ** dim) * math.prod(sp)
    else:
        macs = N * Cout * (Cin // g) * (k ** dim) * math.prod(ysp)
    return dict(q=lambda: fq(x, pq, 0.05, 128), t=lambda: ft(x, pt, 0.05, 128),
                f_nchw=lambda: fp32(xf), f_cl=lambda: fp32(xcl), macs=macs,
                bytes=x.numel() + w.numel() + y.numel())


def _label(case, fmt):
    name, dim, N = case[0], case[1], case[2]
    return f"{name} b{N}" + (f" {fmt}" if dim > 1 else "")


def cases():
    """The bar cases for tools/bench.py (its own timing loop): NCHW and channels_last input.
    torch.ao's engine: x86, or fbgemm for forced AVX2 on a VNNI CPU (tools/_isa_env.py)."""
    torch.backends.quantized.engine = torch_engine()
    out = []
    for c in CASES:
        for fmt in (("nchw", "cl") if c[1] > 1 else ("nchw",)):
            d = _setup(c, fmt)
            out.append((f"conv {_label(c, fmt)}", d["q"], d["t"], d["f_cl"], d["bytes"]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--isa", default="auto")
    ap.add_argument("--min-time", type=float, default=0.5)
    ap.add_argument("--peak", type=float, default=465.0)
    ap.add_argument("--format", nargs="+", default=["nchw", "cl"])
    ap.add_argument("--only", default=None)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    torch.backends.quantized.engine = "x86"
    isa = torch.ops.qplugin._set_cpu_isa(args.isa)
    print(f"torch {torch.__version__}, qplugin ISA {isa}, engine x86, {os.cpu_count()} CPUs")
    for t in args.threads:
        torch.set_num_threads(t)
        print(f"\n### {t} thread{'s' if t > 1 else ''}\n")
        print("| case | qplugin µs | torch.quantized µs | fp32 µs (best of NCHW/CL) | "
              "qplugin/torch | qplugin/fp32 | qplugin GOPS (% peak) |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        ratios = []
        for c in CASES:
            if args.only and args.only not in c[0]:
                continue
            for fmt in (args.format if c[1] > 1 else ["nchw"]):
                d = _setup(c, fmt)
                runs = [interleaved_medians([d["q"], d["t"], d["f_nchw"], d["f_cl"]],
                                            args.min_time, min_reps=3, max_reps=500)
                        for _ in range(args.repeat)]
                tq, tt, tn, tc = (statistics.median(r[i] for r in runs) for i in range(4))
                tf = min(tn, tc)
                gq = 2 * d["macs"] / tq / 1e9
                ratios.append(tq / tt)
                print(f"| {_label(c, fmt)} | {tq * 1e6:.0f} | {tt * 1e6:.0f} | {tf * 1e6:.0f} "
                      f"({'CL' if tc < tn else 'NCHW'}) | {tq / tt:.2f} | {tq / tf:.2f} | "
                      f"{gq:.0f} ({100 * gq / (args.peak * t):.0f}%) |", flush=True)
        if ratios:
            geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
            print(f"\ngeometric mean qplugin/torch = {geo:.3f}, worst = {max(ratios):.3f}")
    torch.ops.qplugin._set_cpu_isa("auto")


if __name__ == "__main__":
    main()
