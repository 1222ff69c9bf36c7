"""`--isa TIER` for the benchmarks (tools/bench.py, tools/bench_models.py): sets qplugin's tier and
holds PyTorch's own quantized kernels to the same tier. Must run before torch and qplugin load.

--isa avx2 on an AVX-512 machine: QPLUGIN_CPU_ISA=avx2 for qplugin; for torch,
ATEN_CPU_CAPABILITY=avx2 (ATen's vectorized kernels, the quantized elementwise ones included),
ONEDNN_MAX_CPU_ISA=AVX2 (the convolutions the x86 engine hands to oneDNN) and
FBGEMM_ENABLE_INSTRUCTIONS=AVX2 (FBGEMM's GEMM / embedding-bag kernels) and, for the fp32
column, MKL_ENABLE_INSTRUCTIONS=AVX2 (MKL's sgemm behind fp32 linear). docs/benchmarks.md says what
these switches can and cannot hold to AVX2. Variables already set in the environment win.

torch_engine(): the torch.backends.quantized engine the benchmarks give torch.ao. "x86", except
with --isa avx2 on a CPU with AVX-512 VNNI, where it is "fbgemm": the x86 engine hands a conv to
oneDNN only when the CPU itself has AVX-512 VNNI (should_use_onednn_quant in PyTorch's
quantized/cpu/OnednnUtils.h reads cpuinfo_has_x86_avx512vnni(), which ONEDNN_MAX_CPU_ISA does not
change), so an AVX2-only CPU runs every x86-engine conv, linear and embedding on FBGEMM; held to
AVX2 on a VNNI machine it would run the convs on oneDNN's AVX2 kernels instead (3x3 64->64 56^2,
batch 8, on an AMX Xeon: oneDNN 9.2 ms, FBGEMM 10.6-11.5 ms). QPLUGIN_BENCH_TORCH_ENGINE overrides.
"""
import os
import sys

TORCH_AVX2_ENV = {
    "ATEN_CPU_CAPABILITY": "avx2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "FBGEMM_ENABLE_INSTRUCTIONS": "AVX2",
    "MKL_ENABLE_INSTRUCTIONS": "AVX2",
}


_ISA = None


def _cpu_has_avx512vnni():
    try:
        with open("/proc/cpuinfo") as f:
            return "avx512_vnni" in f.read()
    except OSError:
        return False


def torch_engine():
    """The quantized engine for torch.ao's side of a benchmark (module docstring)."""
    env = os.environ.get("QPLUGIN_BENCH_TORCH_ENGINE")
    if env:
        return env
    isa = _ISA or os.environ.get("QPLUGIN_CPU_ISA")
    return "fbgemm" if isa == "avx2" and _cpu_has_avx512vnni() else "x86"


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
    global _ISA
    _ISA = isa
    if isa and isa != "auto":
        want = {"QPLUGIN_CPU_ISA": isa, **(TORCH_AVX2_ENV if isa == "avx2" else {})}
        missing = {k: v for k, v in want.items() if k not in os.environ or k == "QPLUGIN_CPU_ISA"}
        if "torch" in sys.modules and any(os.environ.get(k) != v for k, v in missing.items()):
            # Loaded already (python -m qplugin bench): the kernels are chosen, start afresh.
            os.environ.update(missing)
            os.execv(sys.executable, [sys.executable] + sys.argv)
        os.environ.update(missing)
    return isa
