"""Benchmark of the layer/group/instance-norm ops (issue 7's bars) against torch.ops.quantized and
the fp32 torch op, in the tuple format of tools/bench.py's bn_cases:
(name, qplugin_fn, torch_quantized_fn, fp32_fn, bytes_moved).

    python tools/bench/bench_normalization.py                 # 1 and 2 threads
    python tools/bench/bench_normalization.py --threads 1 --repeat 5

Bars (1 thread): qplugin <= torch.ops.quantized and <= fp32 in every case. The machine may be
shared, so --repeat runs the whole table several times and reports per-case medians.
"""
import argparse
import os
import statistics
import sys
import warnings

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, _ROOT)
sys.path.insert(0, os.path.join(_ROOT, "tools"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import qplugin  # noqa: E402,F401
from bench import _fmt, markdown, q, run  # noqa: E402  (tools/bench.py)

warnings.filterwarnings("ignore", message=".*quantize_per_tensor.*deprecated.*")


def cases():
    out = []
    g = torch.Generator().manual_seed(1)

    # layer_norm 32x128x768 (a BERT-base block's activations), affine.
    shape = (32, 128, 768)
    x = q(shape)
    xf = x.dequantize()
    w, b = torch.randn(768, generator=g), torch.randn(768, generator=g)
    out.append((f"layer_norm {_fmt(shape, False)}",
                lambda x=x, w=w, b=b: torch.ops.qplugin.layer_norm(x, [768], w, b, 1e-5, 0.05, 128),
                lambda x=x, w=w, b=b: torch.ops.quantized.layer_norm(x, [768], w, b, 1e-5, 0.05,
                                                                     128),
                lambda xf=xf, w=w, b=b: F.layer_norm(xf, [768], w, b, 1e-5),
                2 * x.numel()))

    # group_norm: 32 groups on 256x56x56, both formats.
    shape = (1, 256, 56, 56)
    w, b = torch.randn(256, generator=g), torch.randn(256, generator=g)
    for cl in (False, True):
        x = q(shape, channels_last=cl)
        xf = x.dequantize()
        out.append((f"group_norm G=32 {_fmt(shape, cl)}",
                    lambda x=x, w=w, b=b: torch.ops.qplugin.group_norm(x, 32, w, b, 1e-5, 0.05, 128),
                    lambda x=x, w=w, b=b: torch.ops.quantized.group_norm(x, 32, w, b, 1e-5, 0.05, 128),
                    lambda xf=xf, w=w, b=b: F.group_norm(xf, 32, w, b, 1e-5),
                    2 * x.numel()))

    # instance_norm: 64x112x112, both formats (affine, as InstanceNorm2d(affine=True)).
    shape = (1, 64, 112, 112)
    w, b = torch.randn(64, generator=g), torch.randn(64, generator=g)
    for cl in (False, True):
        x = q(shape, channels_last=cl)
        xf = x.dequantize()
        out.append((f"instance_norm {_fmt(shape, cl)}",
                    lambda x=x, w=w, b=b: torch.ops.qplugin.instance_norm(x, w, b, 1e-5, 0.05, 128),
                    lambda x=x, w=w, b=b: torch.ops.quantized.instance_norm(x, w, b, 1e-5, 0.05, 128),
                    lambda xf=xf, w=w, b=b: F.instance_norm(xf, weight=w, bias=b, eps=1e-5),
                    2 * x.numel()))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, action="append", help="thread counts (default 1 and 2)")
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs of the whole table; per-case medians are reported (default 3)")
    args = ap.parse_args(argv)
    import bench
    bench.FAMILIES["normalization"] = cases
    runs = [run(["normalization"], args.threads or [1, 2]) for _ in range(max(1, args.repeat))]
    rows = []
    for i, row in enumerate(runs[0]):
        fam, name, t = row[:3]
        med = [statistics.median(r[i][k] for r in runs) for k in (3, 4, 5)]
        rows.append((fam, name, t, *med, row[6]))
    print(f"qplugin {qplugin.__version__}, ISA {qplugin.cpu_isa()}, torch {torch.__version__}, "
          f"median of {len(runs)} runs\n")
    print(markdown(rows))


if __name__ == "__main__":
    main()
