"""Benchmark (not a test): the parity ops of issue #13 — prelu, linear_leaky_relu, linear_tanh,
conv2d_add(_relu), matmul, 2-bit embedding bags, optimized_qparams prepack — qplugin vs
torch.ops.quantized vs the fp32 torch op, same inputs, one process.

Usage:  python tools/bench/bench_parity.py [--threads 1 2] [--isa auto|avx2|scalar] [--only TEXT]

PyTorch has linear_leaky_relu / linear_tanh / conv2d_add only on its onednn engine (symmetric
weights), so those rows switch torch.backends.quantized.engine to onednn for PyTorch's call.
Prints a markdown table: medians after warm-up (calls interleaved round by round), the ratios
qplugin / quantized and qplugin / fp32, the CPU and the ISA tier qplugin ran.
"""
import argparse
import os
import sys
import warnings

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))  # _timing

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import qplugin  # noqa: E402,F401
from _timing import interleaved_medians  # noqa: E402  (tools/_timing.py)

warnings.filterwarnings("ignore")
Q, T = torch.ops.qplugin, torch.ops.quantized


def _engine(name, fn):
    def run():
        prev = torch.backends.quantized.engine
        torch.backends.quantized.engine = name
        try:
            return fn()
        finally:
            torch.backends.quantized.engine = prev
    return run


def _x(shape, scale=4 / 255, zp=0, seed=0, cl=False):
    # Activation codes 0..127 (reduce_range): the range PyTorch's kernels are exact on every CPU.
    g = torch.Generator().manual_seed(seed)
    x = torch.quantize_per_tensor(torch.rand(shape, generator=g) * 2, scale, zp, torch.quint8)
    return x.contiguous(memory_format=torch.channels_last) if cl else x


def _w(shape, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.quantize_per_tensor(torch.randn(shape, generator=g) * 0.1, 0.002, 0, torch.qint8)


def cases():
    out = []
    for M in (1, 64):
        x = _x((M, 1024))
        w = _w((1024, 1024))
        b = torch.randn(1024)
        pq, pt = Q.linear_prepack(w, b), _engine("onednn", lambda: T.linear_prepack(w, b))()
        xf, wf = x.dequantize(), w.dequantize()
        out.append((f"linear_leaky_relu {M}x1024->1024", lambda x=x, pq=pq: Q.linear_leaky_relu(
            x, pq, 0.05, 64, 0.01), _engine("onednn", lambda x=x, pt=pt: T.linear_leaky_relu(
                x, pt, 0.05, 64, 0.01)), lambda xf=xf, wf=wf, b=b: F.leaky_relu(F.linear(xf, wf, b),
                                                                           0.01)))
        out.append((f"linear_tanh {M}x1024->1024", lambda x=x, pq=pq: Q.linear_tanh(
            x, pq, 1 / 128, 128), _engine("onednn", lambda x=x, pt=pt: T.linear_tanh(
                x, pt, 1 / 128, 128)), lambda xf=xf, wf=wf, b=b: torch.tanh(F.linear(xf, wf, b))))
    for N in (1, 8):
        x = _x((N, 64, 56, 56), cl=True)
        acc = _x((N, 64, 56, 56), seed=3, cl=True)
        w = _w((64, 64, 3, 3))
        b = torch.randn(64)
        args = ([1, 1], [1, 1], [1, 1], 1)
        pq = Q.conv2d_prepack(w, b, *args)
        pt = _engine("onednn", lambda: T.conv2d_prepack(w, b, *args))()
        xf, af, wf = x.dequantize(), acc.dequantize(), w.dequantize()
        out.append((f"conv2d_add 3x3 64->64 {N}x56x56 cl", lambda x=x, a=acc, pq=pq: Q.conv2d_add(
            x, a, pq, 0.1, 64), _engine("onednn", lambda x=x, a=acc, pt=pt: T.conv2d_add(
                x, a.clone(), pt, 0.1, 64)), lambda xf=xf, af=af, wf=wf, b=b: F.conv2d(
                    xf, wf, b, padding=1) + af))
    for cl in (False, True):
        x = _x((8, 64, 56, 56), zp=64, cl=cl)
        wt = torch.quantize_per_tensor(torch.rand(64) * 0.5, 0.5 / 255, 0, torch.quint8)
        xf, wfl = x.dequantize(), wt.dequantize()
        out.append((f"prelu 8x64x56x56{' cl' if cl else ''}", lambda x=x: Q.prelu(
            x, wt, 0.05, 64), lambda x=x: T.prelu(x, wt, 0.05, 64),
            lambda xf=xf: F.prelu(xf, wfl)))
    a, bq = _x((8, 128, 64)), _x((8, 64, 128), seed=2)
    af, bf = a.dequantize(), bq.dequantize()
    out.append(("matmul 8x(128x64 @ 64x128)", lambda: Q.matmul(a, bq, 0.05, 0),
                lambda: T.matmul(a, bq, 0.05, 0), lambda: torch.matmul(af, bf)))
    g = torch.Generator().manual_seed(0)
    table = torch.randn(10000, 128, generator=g)
    idx = torch.randint(0, 10000, (20000,), generator=g)
    offs = torch.arange(0, 20000, 20)
    p2q, p2t = Q.embedding_bag_2bit_prepack(table), T.embedding_bag_2bit_prepack(table)
    out.append(("embedding_bag 2-bit 10000x128 1000x20 sum",
                lambda: Q.embedding_bag_2bit_rowwise_offsets(p2q, idx, offs, False, 0, False),
                lambda: T.embedding_bag_2bit_rowwise_offsets(p2t, idx, offs, False, 0, False),
                lambda: F.embedding_bag(idx, table, offs, mode="sum")))
    small = table[:500]
    out.append(("embedding_bag_4bit_prepack optimized_qparams 500x128",
                lambda: Q.embedding_bag_4bit_prepack(small, True, 200, 0.16),
                lambda: T.embedding_bag_4bit_prepack(small, True, 200, 0.16),
                lambda: torch.aminmax(small, dim=1)))
    return out


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--isa", default="auto")
    ap.add_argument("--only", action="append", default=[],
                    help="run the rows whose name contains this text (repeatable)")
    args = ap.parse_args()
    isa = torch.ops.qplugin._set_cpu_isa(args.isa)
    print(f"CPU: {cpu_name()}; qplugin ISA {isa}; torch {torch.__version__}")
    print("| op / shape | threads | qplugin ms | torch.ops.quantized ms | fp32 ms | qplugin/quantized "
          "| qplugin/fp32 |")
    print("|---|---|---|---|---|---|---|")
    prev = torch.get_num_threads()
    try:
        for n in args.threads:
            torch.set_num_threads(n)
            for name, fq, ft, ff in cases():
                if args.only and not any(o in name for o in args.only):
                    continue
                fns = [fq, ft, ff]  # 0.3 s each, medians in ms
                a, b, c = (t * 1e3 for t in interleaved_medians(fns, 0.3 * len(fns), warmup=3))
                print(f"| {name} | {n} | {a:.3f} | {b:.3f} | {c:.3f} | {a / b:.2f} | {a / c:.2f} |",
                      flush=True)
    finally:
        torch.set_num_threads(prev)
        torch.ops.qplugin._set_cpu_isa("auto")


if __name__ == "__main__":
    main()
