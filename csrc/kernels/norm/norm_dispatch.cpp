// Picks the normalization kernel table for the ISA in use (kernels::current_isa(), which
// QPLUGIN_CPU_ISA and the _set_cpu_isa test hook lower). Changes with: norm_dispatch.h.
#include "kernels/norm/norm_dispatch.h"

namespace qplugin {
namespace kernels {

const NormKernelTable& norm_table() {
  static const NormKernelTable& s = scalar::make_norm_table();
  static const NormKernelTable& a2 =
      detected_isa() >= Isa::kAvx2 ? avx2::make_norm_table() : s;
  static const NormKernelTable& a512 =
      detected_isa() >= Isa::kAvx512Vnni ? avx512vnni::make_norm_table() : a2;
  switch (current_isa()) {
    case Isa::kAvx512Vnni: return a512;
    case Isa::kAvx2: return a2;
    default: return s;
  }
}

}  // namespace kernels
}  // namespace qplugin
