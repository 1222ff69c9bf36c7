// Exact int64 GEMM (exact_gemm.h) for avx512vnni: exact_gemm_impl.h compiled with this ISA's flags
// (setup.py). Changes with: exact_gemm_impl.h.
#define QPLUGIN_EXACT_GEMM_NS avx512vnni
#define QPLUGIN_EXACT_GEMM_ISA ::qplugin::kernels::Isa::kAvx512Vnni
#define QPLUGIN_EXACT_GEMM_NAME "xgemm_s64_4x1__avx512vnni"
#include "kernels/gemm/exact_gemm_impl.h"
