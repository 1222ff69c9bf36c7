"""qplugin pooling/resampling benchmark (a benchmark, not a test): the bars of issue 5.

Cases as tools/bench.py's families: (name, qplugin_fn, torch_quantized_fn, fp32_fn, bytes_moved),
NCHW and channels_last. The torch quantized reference of the aten-style ops is the aten op on a
quantized tensor (torch.nn.functional on QuantizedCPU), as torch.ao.nn.quantized.functional does.

    python tools/bench/bench_pooling.py [--threads 1] [--repeat 3]
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.dirname(HERE))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import qplugin  # noqa: E402,F401
from bench import _fmt, family_main, q  # noqa: E402  (tools/bench.py)


def cases():
    ops = torch.ops.qplugin
    out = []
    for cl in (False, True):
        x = q((1, 64, 112, 112), channels_last=cl)
        xf = x.dequantize()
        out.append((f"max_pool2d k3s2p1 {_fmt(x.shape, cl)}",
                    lambda x=x: ops.max_pool2d(x, [3, 3], [2, 2], [1, 1], [1, 1], False),
                    lambda x=x: torch.ops.quantized.max_pool2d(x, [3, 3], [2, 2], [1, 1], [1, 1],
                                                               False),
                    lambda xf=xf: F.max_pool2d(xf, 3, 2, 1), x.numel() + x.numel() // 4))
        for shape, k, s, p in [((1, 256, 56, 56), 2, 2, 0), ((1, 192, 28, 28), 3, 1, 1)]:
            x = q(shape, channels_last=cl)
            xf = x.dequantize()
            out.append((f"avg_pool2d k{k}s{s}p{p} {_fmt(shape, cl)}",
                        lambda x=x, k=k, s=s, p=p: ops.avg_pool2d(x, [k, k], [s, s], [p, p]),
                        lambda x=x, k=k, s=s, p=p: F.avg_pool2d(x, k, s, p),
                        lambda xf=xf, k=k, s=s, p=p: F.avg_pool2d(xf, k, s, p),
                        x.numel() + x.numel() // (s * s)))
        for n in (1, 32):
            x = q((n, 2048, 7, 7), channels_last=cl)
            xf = x.dequantize()
            out.append((f"adaptive_avg_pool2d ->1 {_fmt(x.shape, cl)}",
                        lambda x=x: ops.adaptive_avg_pool2d(x, [1, 1]),
                        lambda x=x: F.adaptive_avg_pool2d(x, 1),
                        lambda xf=xf: F.adaptive_avg_pool2d(xf, 1), x.numel() + x.numel() // 49))
        x = q((1, 128, 56, 56), channels_last=cl)
        xf = x.dequantize()
        out.append((f"upsample nearest x2 {_fmt(x.shape, cl)}",
                    lambda x=x: ops.upsample_nearest2d(x, [112, 112], 2.0, 2.0),
                    lambda x=x: F.interpolate(x, scale_factor=2, mode="nearest"),
                    lambda xf=xf: F.interpolate(xf, scale_factor=2, mode="nearest"), 5 * x.numel()))
        out.append((f"upsample bilinear x2 {_fmt(x.shape, cl)}",
                    lambda x=x: ops.upsample_bilinear2d(x, [112, 112], False, 2.0, 2.0),
                    lambda x=x: F.interpolate(x, scale_factor=2, mode="bilinear",
                                              align_corners=False),
                    lambda xf=xf: F.interpolate(xf, scale_factor=2, mode="bilinear",
                                                align_corners=False), 5 * x.numel()))
    return out


def main(argv=None):
    family_main("pooling", cases, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    main()
