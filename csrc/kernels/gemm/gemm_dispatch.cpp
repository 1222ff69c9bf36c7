// The GEMM kernel table of each ISA (kernel + its packing + tile sizes chosen together).
// Changes with: qgemm.h, qgemm_*_<isa>.cpp, kernels/dispatch.cpp (ISA detection).
#include "kernels/gemm/qgemm.h"

namespace qplugin {
namespace kernels {
namespace gemm {

const QGemmKernels& qgemm_kernels_for(Isa isa) {
  // Never above what the CPU supports, whatever the caller asks for.
  return *for_isa(supported_isa(isa), [] { return &scalar::qgemm_table(); },
                  [] { return &avx2::qgemm_table(); }, [] { return &avx512vnni::qgemm_table(); });
}

}  // namespace gemm
}  // namespace kernels
}  // namespace qplugin
