"""Benchmark of the elementwise ops (issue 6): add/add_relu/mul on 1x256x56x56, cat of two
2x128x28x28 on dim 1, every activation of qplugin/_tables/activation.py (relu6, hardswish, elu:
tools/bench.py) on 1x64x112x112, both memory formats, against torch.ops.quantized and the fp32
torch op.

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


# tools/bench.py's act_cases times these (the foundation activations).
_IN_BENCH_PY = {"relu6", "hardswish", "elu"}


def activation_cases(x, xf, label):
    """One case per op of qplugin/_tables/activation.py (its first test case's arguments; SCALE/ZP
    become the qparams a calibrated model would carry), against torch.ops.quantized.<torch_op>
    or PyTorch's aten op on a quantized tensor or, failing both, the fp32 op twice. A new row gets its bench case here without an edit."""
    from qplugin._tables import activation as table
    out, seen = [], set(_IN_BENCH_PY)
    for row in table.ROWS:
        if row.op in seen:
            continue
        seen.add(row.op)
        case = row.cases[0]
        ref = row.reference(xf, *case.ref_args, **case.ref_kwargs)
        s, z = _qparams(ref)
        args = [s if a is table.SCALE else z if a is table.ZP else a for a in case.args]
        qop = getattr(torch.ops.qplugin, row.op)
        if row.torch_op is not None:
            top = getattr(torch.ops.quantized, row.torch_op)
            name, tfn = f"{row.op} {label}", (lambda x=x, top=top, args=args: top(x, *args))
        elif row.torch_on_quantized is not None and not args:
            name = f"{row.op} {label} (vs torch's aten {row.op} on quantized)"
            tfn = lambda x=x, f=row.torch_on_quantized: f(x)  # noqa: E731
        else:
            name = f"{row.op} {label} (no torch quantized op: fp32 twice)"
            tfn = (lambda xf=xf, row=row, case=case:
                   row.reference(xf, *case.ref_args, **case.ref_kwargs))
        out.append((name, lambda x=x, qop=qop, args=args: qop(x, *args), tfn,
                    lambda xf=xf, row=row, case=case:
                    row.reference(xf, *case.ref_args, **case.ref_kwargs), 2 * x.numel()))
    return out


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
        out += activation_cases(x, xf, _fmt(shape, cl))
    # Softmax over the innermost dim (attention scores: batch 8, 12 heads, sequence 128), the
    # kernels' row form; the table's case above is over dim 1 (their column form).
    shape = (8, 12, 128, 128)
    xf = torch.randn(shape, generator=g) * 2
    x, xf = _q(xf, False)
    out.append((f"softmax {_fmt(shape, False)} dim -1",
                lambda x=x: torch.ops.qplugin.softmax(x, -1, 1 / 256, 0),
                lambda x=x: torch.ops.quantized.softmax(x, -1, 1 / 256, 0),
                lambda xf=xf: torch.softmax(xf, -1), 2 * x.numel()))
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
