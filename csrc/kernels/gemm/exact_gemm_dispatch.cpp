// The exact GEMM kernel table of each ISA (exact_gemm.h). Changes with: exact_gemm_<isa>.cpp.
#include "kernels/gemm/exact_gemm.h"

namespace qplugin {
namespace kernels {
namespace gemm {

const ExactGemmKernels& exact_gemm_kernels_for(Isa isa) {
  return *for_isa(supported_isa(isa), [] { return &scalar::exact_gemm_table(); },
                  [] { return &avx2::exact_gemm_table(); }, [] { return &avx512vnni::exact_gemm_table(); });
}

}  // namespace gemm
}  // namespace kernels
}  // namespace qplugin
