"""`--isa TIER` for the benchmarks (tools/bench.py, tools/bench_models.py): sets qplugin's tier and
holds PyTorch's own quantized kernels to the same tier. Must run before torch and qplugin load.

--isa avx2 on an AVX-512 machine: QPLUGIN_CPU_ISA=avx2 for qplugin; for torch,
ATEN_CPU_CAPABILITY=avx2 (ATen's vectorized kernels, the quantized elementwise ones included),
ONEDNN_MAX_CPU_ISA=AVX2 (the convolutions the x86 engine hands to oneDNN) and
FBGEMM_ENABLE_INSTRUCTIONS=AVX2 (FBGEMM's GEMM / embedding-bag kernels) and, for the fp32
column, MKL_ENABLE_INSTRUCTIONS=AVX2 (MKL's sgemm behind fp32 linear). docs/benchmarks.md says what
these switches can and cannot hold to AVX2. Variables already set in the environment win.
"""
import os
import sys

TORCH_AVX2_ENV = {
    "ATEN_CPU_CAPABILITY": "avx2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "FBGEMM_ENABLE_INSTRUCTIONS": "AVX2",
    "MKL_ENABLE_INSTRUCTIONS": "AVX2",
}


def apply_isa_from_argv(argv=None):
    """Reads --isa TIER / --isa=TIER from argv (left in place for argparse) and sets the
    environment for it; returns the tier or None."""
    argv = sys.argv if argv is None else argv
    isa = None
    for i, a in enumerate(argv):
        if a == "--isa" and i + 1 < len(argv):
            isa = argv[i + 1]
        elif a.startswith("--isa="):
            isa = a.split("=", 1)[1]
    if isa and isa != "auto":
        want = {"QPLUGIN_CPU_ISA": isa, **(TORCH_AVX2_ENV if isa == "avx2" else {})}
        missing = {k: v for k, v in want.items() if k not in os.environ or k == "QPLUGIN_CPU_ISA"}
        if "torch" in sys.modules and any(os.environ.get(k) != v for k, v in missing.items()):
            # Loaded already (python -m qplugin bench): the kernels are chosen, start afresh.
            os.environ.update(missing)
            os.execv(sys.executable, [sys.executable] + sys.argv)
        os.environ.update(missing)
    return isa
