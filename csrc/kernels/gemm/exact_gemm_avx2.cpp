// Exact int64 GEMM (exact_gemm.h) for avx2: exact_gemm_impl.h compiled with this ISA's flags
// (setup.py). Changes with: exact_gemm_impl.h.
#define QPLUGIN_EXACT_GEMM_NS avx2
#define QPLUGIN_EXACT_GEMM_ISA ::qplugin::kernels::Isa::kAvx2
#define QPLUGIN_EXACT_GEMM_NAME "xgemm_s64_4x1__avx2"
#include "kernels/gemm/exact_gemm_impl.h"
