"""Benchmark of the layer/group/instance-norm ops (issue 7's bars) against torch.ops.quantized and
the fp32 torch op, in the tuple format of tools/bench.py's bn_cases:
(name, qplugin_fn, torch_quantized_fn, fp32_fn, bytes_moved).

    python tools/bench/bench_normalization.py                 # 1 and 2 threads
    python tools/bench/bench_normalization.py --threads 1 --repeat 5

Bars (1 thread): qplugin <= torch.ops.quantized and <= fp32 in every case. The machine may be
shared, so --repeat runs the whole table several times and reports per-case medians.
"""
import os
import sys
import warnings

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, _ROOT)
sys.path.insert(0, os.path.join(_ROOT, "tools"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import qplugin  # noqa: E402,F401
from bench import _fmt, family_main, q  # noqa: E402  (tools/bench.py)

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

    # group_norm: 32 groups on 256x56x56; instance_norm: 64x112x112 (affine, as
    # InstanceNorm2d(affine=True)); both formats. op(ns, x, w, b): ns's op at out (0.05, 128).
    for label, shape, op, fp32 in (
            ("group_norm G=32", (1, 256, 56, 56),
             lambda ns, x, w, b: ns.group_norm(x, 32, w, b, 1e-5, 0.05, 128),
             lambda xf, w, b: F.group_norm(xf, 32, w, b, 1e-5)),
            ("instance_norm", (1, 64, 112, 112),
             lambda ns, x, w, b: ns.instance_norm(x, w, b, 1e-5, 0.05, 128),
             lambda xf, w, b: F.instance_norm(xf, weight=w, bias=b, eps=1e-5))):
        w, b = torch.randn(shape[1], generator=g), torch.randn(shape[1], generator=g)
        for cl in (False, True):
            x = q(shape, channels_last=cl)
            xf = x.dequantize()
            out.append((f"{label} {_fmt(shape, cl)}",
                        lambda op=op, x=x, w=w, b=b: op(torch.ops.qplugin, x, w, b),
                        lambda op=op, x=x, w=w, b=b: op(torch.ops.quantized, x, w, b),
                        lambda fp32=fp32, xf=xf, w=w, b=b: fp32(xf, w, b),
                        2 * x.numel()))
    return out


def main(argv=None):
    family_main("normalization", cases, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    main()
