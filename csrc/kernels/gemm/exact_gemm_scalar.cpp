// Exact int64 GEMM (exact_gemm.h) for scalar: exact_gemm_impl.h compiled with this ISA's flags
// (setup.py). Changes with: exact_gemm_impl.h.
#define QPLUGIN_EXACT_GEMM_NS scalar
#define QPLUGIN_EXACT_GEMM_ISA ::qplugin::kernels::Isa::kScalar
#define QPLUGIN_EXACT_GEMM_NAME "xgemm_s64_4x1__scalar"
#include "kernels/gemm/exact_gemm_impl.h"
