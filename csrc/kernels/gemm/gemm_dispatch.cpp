// The GEMM kernel table of each ISA (kernel + its packing + tile sizes chosen together).
// Changes with: qgemm.h, qgemm_*_<isa>.cpp, kernels/dispatch.cpp (ISA detection).
#include "kernels/gemm/qgemm.h"

namespace qplugin {
namespace kernels {
namespace gemm {

const QGemmKernels& qgemm_kernels_for(Isa isa) {
  // Never above what the CPU supports, whatever the caller asks for.
  const Isa best = detected_isa();
  const int want = static_cast<int>(isa) < static_cast<int>(best) ? static_cast<int>(isa)
                                                                  : static_cast<int>(best);
  switch (static_cast<Isa>(want)) {
    case Isa::kAvx512Vnni: return avx512vnni::qgemm_table();
    case Isa::kAvx2: return avx2::qgemm_table();
    default: return scalar::qgemm_table();
  }
}

}  // namespace gemm
}  // namespace kernels
}  // namespace qplugin
