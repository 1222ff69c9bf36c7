"""Benchmark (not a test): the dynamic linear ops -- torch.ops.qplugin.linear_dynamic (int8
weights, reduce_range=True as the dynamic modules call it) and linear_dynamic_fp16 -- vs
torch.ops.quantized's (x86 engine) vs fp32 torch.nn.functional.linear, float input and output,
the same weights. The cases of issue #17's linear bar: M = 1, 32, 256 for 768 -> 3072 and
4096 -> 4096. tools/bench_dynamic.py runs the same ops next to the models.

Usage:  python tools/bench/bench_dynamic_ops.py [--threads 1] [--repeat 3]
        python tools/bench.py --family dynamic
"""
import os
import sys

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))

import torch  # noqa: E402

import qplugin  # noqa: E402,F401

CASES = [(m, k, n) for (k, n) in ((768, 3072), (4096, 4096)) for m in (1, 32, 256)]


def cases():
    torch.backends.quantized.engine = "x86"
    F = torch.nn.functional
    out = []
    for (M, K, N) in CASES:
        g = torch.Generator().manual_seed(M + K + N)
        w = torch.randn(N, K, generator=g) * 0.05
        b = torch.randn(N, generator=g)
        x = torch.randn(M, K, generator=g)
        scales = (w.abs().amax(1) / 127).double()
        qw = torch.quantize_per_channel(w, scales, torch.zeros(N, dtype=torch.long), 0,
                                        torch.qint8)
        pq, pt = torch.ops.qplugin.linear_prepack(qw, b), torch.ops.quantized.linear_prepack(qw, b)
        nbytes = 4 * M * K + K * N + 4 * M * N
        out.append((f"linear_dynamic {M}x{K}->{N} per-channel",
                    lambda x=x, p=pq: torch.ops.qplugin.linear_dynamic(x, p, True),
                    lambda x=x, p=pt: torch.ops.quantized.linear_dynamic(x, p, True),
                    lambda x=x, w=w, b=b: F.linear(x, w, b), nbytes))
        ph = torch.ops.qplugin.linear_prepack_fp16(w, b)
        pth = torch.ops.quantized.linear_prepack_fp16(w, b)
        out.append((f"linear_dynamic_fp16 {M}x{K}->{N}",
                    lambda x=x, p=ph: torch.ops.qplugin.linear_dynamic_fp16(x, p),
                    lambda x=x, p=pth: torch.ops.quantized.linear_dynamic_fp16(x, p),
                    lambda x=x, w=w, b=b: F.linear(x, w, b), nbytes + K * N))
    return out


def main(argv=None):
    from bench import family_main  # noqa: E402  (tools/bench.py)
    family_main("dynamic", cases, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    main()
