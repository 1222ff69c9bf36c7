"""Benchmark of the elementwise ops (issue 6): add/add_relu/mul on 1x256x56x56, cat of two
2x128x28x28 on dim 1, sigmoid/leaky_relu/silu (and the other new activations) on 1x64x112x112,
both memory formats, against torch.ops.quantized and the fp32 torch op.

    python tools/bench/bench_elementwise.py              # 1 and 2 threads, markdown table
    python tools/bench/bench_elementwise.py --threads 1

cases() returns tools/bench.py's tuples (name, qplugin_fn, torch_quantized_fn, fp32_fn,
bytes_moved). Output qparams are what a calibrated model would carry (MinMaxObserver on the float
result), not round decimals: decimal scales make exact ties common, which qplugin resolves
exactly on a slower path (one such case is listed, marked "decimal scales"). Extension ops
without a PyTorch quantized op repeat the fp32 op in the quantized column (marked in the name).
"""
import argparse
import os
import statistics
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
_TOOLS = os.path.dirname(_HERE)
_ROOT = os.path.dirname(_TOOLS)
for p in (_ROOT, _TOOLS):
    if p not in sys.path:
        sys.path.insert(0, p)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.ao.quantization import MinMaxObserver  # noqa: E402

import qplugin  # noqa: E402,F401


def _qparams(t, dtype=torch.quint8):
    obs = MinMaxObserver(dtype=dtype)
    obs(t)
    s, z = obs.calculate_qparams()
    return float(s), int(z)


def _q(t, cl, dtype=torch.quint8):
    s, z = _qparams(t, dtype)
    x = torch.quantize_per_tensor(t, s, z, dtype)
    fmt = torch.channels_last if cl else torch.contiguous_format
    return x.contiguous(memory_format=fmt), t.contiguous(memory_format=fmt)


def _fmt(shape, cl):
    return "x".join(map(str, shape)) + (" CL" if cl else "")


def cases():
    out = []
    g = torch.Generator().manual_seed(0)
    shape = (1, 256, 56, 56)
    for cl in (False, True):
        af = torch.randn(shape, generator=g) * 2
        bf = torch.randn(shape, generator=g) * 1.5 + 0.3
        qa, af = _q(af, cl)
        qb, bf = _q(bf, cl)
        n = qa.numel()
        s_add, z_add = _qparams(af + bf)
        s_relu, z_relu = _qparams(torch.relu(af + bf))
        s_mul, z_mul = _qparams(af * bf)
        out += [
            (f"add {_fmt(shape, cl)}",
             lambda qa=qa, qb=qb: torch.ops.qplugin.add(qa, qb, s_add, z_add),
             lambda qa=qa, qb=qb: torch.ops.quantized.add(qa, qb, s_add, z_add),
             lambda af=af, bf=bf: torch.add(af, bf), 3 * n),
            (f"add_relu {_fmt(shape, cl)}",
             lambda qa=qa, qb=qb: torch.ops.qplugin.add_relu(qa, qb, s_relu, z_relu),
             lambda qa=qa, qb=qb: torch.ops.quantized.add_relu(qa, qb, s_relu, z_relu),
             lambda af=af, bf=bf: torch.add(af, bf).relu_(), 3 * n),
            (f"mul {_fmt(shape, cl)}",
             lambda qa=qa, qb=qb: torch.ops.qplugin.mul(qa, qb, s_mul, z_mul),
             lambda qa=qa, qb=qb: torch.ops.quantized.mul(qa, qb, s_mul, z_mul),
             lambda af=af, bf=bf: torch.mul(af, bf), 3 * n),
        ]
        if not cl:
            # Equal input scales, output scale twice theirs: the float math is exact (no checks).
            qe = torch.quantize_per_tensor(af, 0.05, 128, torch.quint8)
            qf = torch.quantize_per_tensor(bf, 0.05, 128, torch.quint8)
            out.append((f"add, exact-float qparams (0.05,0.05->0.1) {_fmt(shape, cl)}",
                        lambda: torch.ops.qplugin.add(qe, qf, 0.1, 128),
                        lambda: torch.ops.quantized.add(qe, qf, 0.1, 128),
                        lambda af=af, bf=bf: torch.add(af, bf), 3 * n))
            # Decimal scales: 0.05*0.05/0.1 = 1/40 makes ~7% of products land next to a tie.
            out.append((f"mul, decimal scales (0.05,0.05->0.1) {_fmt(shape, cl)}",
                        lambda: torch.ops.qplugin.mul(qe, qf, 0.1, 128),
                        lambda: torch.ops.quantized.mul(qe, qf, 0.1, 128),
                        lambda af=af, bf=bf: torch.mul(af, bf), 3 * n))
    shape = (2, 128, 28, 28)
    for cl in (False, True):
        af = torch.randn(shape, generator=g)
        bf = torch.randn(shape, generator=g)
        qa, af = _q(af, cl)
        qb = torch.quantize_per_tensor(bf, qa.q_scale(), qa.q_zero_point(), torch.quint8)
        fmt = torch.channels_last if cl else torch.contiguous_format
        qb, bf = qb.contiguous(memory_format=fmt), bf.contiguous(memory_format=fmt)
        out.append((f"cat 2x{_fmt(shape, cl)} dim 1 (equal qparams)",
                    lambda qa=qa, qb=qb: torch.ops.qplugin.cat([qa, qb], 1, None, None),
                    lambda qa=qa, qb=qb: torch.ops.quantized.cat([qa, qb], 1, None, None),
                    lambda af=af, bf=bf: torch.cat([af, bf], 1), 4 * qa.numel()))
        qc, _ = _q(bf, cl)  # its own qparams: requantized through a table
        out.append((f"cat 2x{_fmt(shape, cl)} dim 1 (different qparams)",
                    lambda qa=qa, qc=qc: torch.ops.qplugin.cat([qa, qc], 1, None, None),
                    lambda qa=qa, qc=qc: torch.ops.quantized.cat([qa, qc], 1, None, None),
                    lambda af=af, bf=bf: torch.cat([af, bf], 1), 4 * qa.numel()))
    shape = (1, 64, 112, 112)
    for cl in (False, True):
        xf = torch.randn(shape, generator=g) * 2
        x, xf = _q(xf, cl)
        n = 2 * x.numel()
        s_l, z_l = _qparams(F.leaky_relu(xf, 0.1))
        s_s, z_s = _qparams(F.silu(xf))
        s_g, z_g = _qparams(F.gelu(xf))
        s_m, z_m = _qparams(F.mish(xf))
        out += [
            (f"sigmoid {_fmt(shape, cl)}",
             lambda x=x: torch.ops.qplugin.sigmoid(x, 1 / 256, 0),
             lambda x=x: torch.ops.quantized.sigmoid(x, 1 / 256, 0),
             lambda xf=xf: torch.sigmoid(xf), n),
            (f"leaky_relu {_fmt(shape, cl)}",
             lambda x=x: torch.ops.qplugin.leaky_relu(x, 0.1, False, s_l, z_l),
             lambda x=x: torch.ops.quantized.leaky_relu(x, 0.1, False, s_l, z_l),
             lambda xf=xf: F.leaky_relu(xf, 0.1), n),
            (f"silu {_fmt(shape, cl)} (no torch quantized op: fp32 twice)",
             lambda x=x: torch.ops.qplugin.silu(x, s_s, z_s),
             lambda xf=xf: F.silu(xf), lambda xf=xf: F.silu(xf), n),
            (f"gelu {_fmt(shape, cl)} (vs torch's aten gelu on quantized)",
             lambda x=x: torch.ops.qplugin.gelu(x, s_g, z_g),
             lambda x=x: F.gelu(x), lambda xf=xf: F.gelu(xf), n),
            (f"tanh {_fmt(shape, cl)} (vs torch.tanh on quantized)",
             lambda x=x: torch.ops.qplugin.tanh(x),
             lambda x=x: torch.tanh(x), lambda xf=xf: torch.tanh(xf), n),
            (f"mish {_fmt(shape, cl)} (no torch quantized op: fp32 twice)",
             lambda x=x: torch.ops.qplugin.mish(x, s_m, z_m),
             lambda xf=xf: F.mish(xf), lambda xf=xf: F.mish(xf), n),
            (f"hardsigmoid {_fmt(shape, cl)} (vs F.hardsigmoid on quantized)",
             lambda x=x: torch.ops.qplugin.hardsigmoid(x),
             lambda x=x: F.hardsigmoid(x), lambda xf=xf: F.hardsigmoid(xf), n),
            (f"clamp {_fmt(shape, cl)}",
             lambda x=x: torch.ops.qplugin.clamp(x, -1.0, 1.0),
             lambda x=x: torch.ops.quantized.clamp(x, -1.0, 1.0),
             lambda xf=xf: torch.clamp(xf, -1.0, 1.0), n),
        ]
    return out


def memcpy_gbps(nbytes, reps=50):
    """Read + write bandwidth of a plain byte copy (the machine's memcpy), GB/s."""
    src = torch.empty(nbytes, dtype=torch.uint8).fill_(1)
    dst = torch.empty_like(src)
    for _ in range(5):
        dst.copy_(src)
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        dst.copy_(src)
        ts.append(time.perf_counter() - t0)
    return 2 * nbytes / statistics.median(ts) / 1e9


def main(argv=None):
    import bench  # tools/bench.py: run() and markdown()

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, action="append", help="thread counts (default 1, 2)")
    ap.add_argument("--no-foundation", action="store_true",
                    help="skip relu6/hardswish/elu (tools/bench.py act_cases)")
    args = ap.parse_args(argv)
    bench.FAMILIES["elementwise"] = cases
    families = ["elementwise"] + ([] if args.no_foundation else ["activation"])
    threads = args.threads or [1, 2]
    rows = bench.run(families, threads)
    torch.set_num_threads(1)
    bw = {n: memcpy_gbps(n) for n in (2_400_000, 64 * 2**20)}
    print(f"qplugin {qplugin.__version__}, ISA {qplugin.cpu_isa()}, torch {torch.__version__}\n")
    print(bench.markdown(rows))
    print()
    print("memcpy (1 thread, read + write): " + ", ".join(
        f"{n / 1e6:.1f} MB: {v:.1f} GB/s" for n, v in bw.items()))


if __name__ == "__main__":
    main()
