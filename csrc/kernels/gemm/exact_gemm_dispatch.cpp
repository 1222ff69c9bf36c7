// The exact GEMM kernel table of each ISA (exact_gemm.h). Changes with: exact_gemm_<isa>.cpp.
#include "kernels/gemm/exact_gemm.h"

namespace qplugin {
namespace kernels {
namespace gemm {

const ExactGemmKernels& exact_gemm_kernels_for(Isa isa) {
  const Isa best = detected_isa();  // never above what the CPU supports
  const int want = static_cast<int>(isa) < static_cast<int>(best) ? static_cast<int>(isa)
                                                                  : static_cast<int>(best);
  switch (static_cast<Isa>(want)) {
    case Isa::kAvx512Vnni: return avx512vnni::exact_gemm_table();
    case Isa::kAvx2: return avx2::exact_gemm_table();
    default: return scalar::exact_gemm_table();
  }
}

}  // namespace gemm
}  // namespace kernels
}  // namespace qplugin
