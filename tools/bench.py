"""qplugin benchmark harness (a benchmark, not a test).

Times qplugin ops against torch.ops.quantized and the fp32 torch op on identical inputs, in one
process: medians of repeated runs after warm-up, at 1 and 2 threads. Prints a markdown table
with times and ratios (qplugin / quantized, qplugin / fp32) and, for memory-bound ops, the
effective bandwidth (bytes read + written by the int8 op per second).

    python tools/bench.py                 # all families
    python tools/bench.py --family norm   # one family
    python tools/bench.py --threads 1     # one thread count
    python tools/bench.py --isa avx2      # qplugin's AVX2 tier against torch's AVX2 paths
                                          # (on an AVX-512 machine too: tools/_isa_env.py)

Op families register cases with @case(family); later families add their own modules under
tools/bench/ and are imported here.
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _isa_env import apply_isa_from_argv, torch_engine  # noqa: E402

apply_isa_from_argv()  # before torch and qplugin load their kernels

import torch  # noqa: E402

import qplugin  # noqa: E402,F401

CASES = []


def case(family):
    def deco(fn):
        CASES.append((family, fn))
        return fn
    return deco


def median_time(fn, min_time=0.2, warmup=3, max_reps=2000):
    for _ in range(warmup):
        fn()
    times = []
    start = time.perf_counter()
    while (len(times) < 5 or time.perf_counter() - start < min_time) and len(times) < max_reps:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def q(shape, scale=0.05, zp=128, dtype=torch.quint8, channels_last=False, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.quantize_per_tensor(torch.randn(shape, generator=g) * 2, scale, zp, dtype)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last if len(shape) == 4
                         else torch.channels_last_3d)
    return x


def _fmt(shape, cl):
    return "x".join(map(str, shape)) + (" CL" if cl else "")


def bn_cases():
    out = []
    for shape in [(1, 64, 112, 112), (8, 64, 56, 56)]:
        for cl in (False, True):
            C = shape[1]
            g = torch.Generator().manual_seed(1)
            w, b, m = (torch.randn(C, generator=g) for _ in range(3))
            v = torch.rand(C, generator=g) + 0.5
            x = q(shape, channels_last=cl)
            xf = x.dequantize()
            for name, qfn, ref in [
                ("quantized_batch_norm", torch.ops.qplugin.quantized_batch_norm,
                 torch.quantized_batch_norm),
                ("batch_norm2d", torch.ops.qplugin.batch_norm2d, torch.ops.quantized.batch_norm2d),
            ]:
                out.append((f"{name} {_fmt(shape, cl)}",
                            lambda qfn=qfn, x=x: qfn(x, w, b, m, v, 1e-5, 0.1, 120),
                            lambda ref=ref, x=x: ref(x, w, b, m, v, 1e-5, 0.1, 120),
                            lambda xf=xf: torch.nn.functional.batch_norm(xf, m, v, w, b, False,
                                                                         0.1, 1e-5),
                            2 * x.numel()))
    return out


def act_cases():
    out = []
    shape = (1, 64, 112, 112)
    for cl in (False, True):
        x = q(shape, channels_last=cl)
        xf = x.dequantize()
        out.append((f"relu6 {_fmt(shape, cl)}", lambda x=x: torch.ops.qplugin.relu6(x),
                    lambda x=x: torch.ops.quantized.relu6(x),
                    lambda xf=xf: torch.nn.functional.relu6(xf), 2 * x.numel()))
        out.append((f"hardswish {_fmt(shape, cl)}",
                    lambda x=x: torch.ops.qplugin.hardswish(x, 0.05, 10),
                    lambda x=x: torch.ops.quantized.hardswish(x, 0.05, 10),
                    lambda xf=xf: torch.nn.functional.hardswish(xf), 2 * x.numel()))
        out.append((f"elu {_fmt(shape, cl)}", lambda x=x: torch.ops.qplugin.elu(x, 0.05, 40),
                    lambda x=x: torch.ops.quantized.elu(x, 0.05, 40),
                    lambda xf=xf: torch.nn.functional.elu(xf), 2 * x.numel()))
    return out


def _family(module):
    """Cases of an op family whose benchmark lives in tools/bench/<module>.py (a cases() function
    returning (name, qplugin_fn, torch_quantized_fn, fp32_fn, bytes_moved) tuples)."""
    def cases():
        import importlib
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench"))
        return importlib.import_module(module).cases()
    return cases


FAMILIES = {
    "norm": bn_cases,
    "activation": act_cases,
    "normalization": _family("bench_normalization"),
    "pooling": _family("bench_pooling"),
    "linear": _family("bench_linear"),
    "conv": _family("bench_conv"),
    "elementwise": _family("bench_elementwise"),
    "embedding": _family("bench_embedding"),
    "dynamic": _family("bench_dynamic_ops"),
}


def run(families, threads):
    torch.backends.quantized.engine = torch_engine()
    rows = []
    for fam in families:
        for name, fq, fref, ffp, nbytes in FAMILIES[fam]():
            for t in threads:
                torch.set_num_threads(t)
                tq, tr, tf = median_time(fq), median_time(fref), median_time(ffp)
                rows.append((fam, name, t, tq, tr, tf, nbytes))
                print(f"{name:45s} thr={t} qplugin {tq*1e3:8.3f} ms  quantized {tr*1e3:8.3f} ms  "
                      f"fp32 {tf*1e3:8.3f} ms  q/quant {tq/tr:5.2f}  q/fp32 {tq/tf:5.2f}  "
                      f"{nbytes/tq/1e9:6.1f} GB/s", file=sys.stderr, flush=True)
    return rows


def markdown(rows):
    lines = ["| op / shape | threads | qplugin ms | torch.ops.quantized ms | fp32 ms | "
             "qplugin/quantized | qplugin/fp32 | qplugin GB/s |",
             "|---|---|---|---|---|---|---|---|"]
    for fam, name, t, tq, tr, tf, nbytes in rows:
        lines.append(f"| {name} | {t} | {tq*1e3:.3f} | {tr*1e3:.3f} | {tf*1e3:.3f} | "
                     f"{tq/tr:.2f} | {tq/tf:.2f} | {nbytes/tq/1e9:.1f} |")
    return "\n".join(lines)


def family_main(family, cases, description, argv=None):
    """main() of a tools/bench/bench_<family>.py: its cases() through run(), the whole table
    --repeat times, per-case medians printed as markdown (the machine may be shared)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--threads", type=int, action="append", help="thread counts (default 1 and 2)")
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs of the whole table; per-case medians are reported (default 3)")
    ap.add_argument("--filter", default="", help="only cases whose name contains this")
    args = ap.parse_args(argv)
    FAMILIES[family] = lambda: [c for c in cases() if args.filter in c[0]]
    runs = [run([family], args.threads or [1, 2]) for _ in range(max(1, args.repeat))]
    rows = []
    for i, row in enumerate(runs[0]):
        fam, name, t = row[:3]
        med = [statistics.median(r[i][k] for r in runs) for k in (3, 4, 5)]
        rows.append((fam, name, t, *med, row[6]))
    print(f"qplugin {qplugin.__version__}, ISA {qplugin.cpu_isa()}, torch {torch.__version__}, "
          f"median of {len(runs)} runs\n")
    print(markdown(rows))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", action="append", choices=sorted(FAMILIES),
                    help="op family to run (repeatable; default: all)")
    ap.add_argument("--threads", type=int, action="append", help="thread counts (default 1 and 2)")
    ap.add_argument("--isa", default="auto",
                    help="qplugin tier (QPLUGIN_CPU_ISA); avx2 also holds torch's kernels to AVX2")
    args = ap.parse_args(argv)
    rows = run(args.family or list(FAMILIES), args.threads or [1, 2])
    print(f"qplugin {qplugin.__version__}, ISA {qplugin.cpu_isa()}, torch {torch.__version__} "
          f"(CPU capability {torch.backends.cpu.get_cpu_capability()}, torch.ops.quantized engine "
          f"{torch.backends.quantized.engine}: tools/_isa_env.py)\n")
    print(markdown(rows))


if __name__ == "__main__":
    main()
