// Picks the pooling/resampling kernel table for the ISA in use (kernels::current_isa(), which
// QPLUGIN_CPU_ISA and the _set_cpu_isa test hook lower). Changes with: pool_dispatch.h.
#include "kernels/pool/pool_dispatch.h"

namespace qplugin {
namespace kernels {

const PoolKernelTable& pool_table() {
  static const PoolKernelTable& s = scalar::make_pool_table();
  static const PoolKernelTable& a2 = detected_isa() >= Isa::kAvx2 ? avx2::make_pool_table() : s;
  static const PoolKernelTable& a512 =
      detected_isa() >= Isa::kAvx512Vnni ? avx512vnni::make_pool_table() : a2;
  switch (current_isa()) {
    case Isa::kAvx512Vnni: return a512;
    case Isa::kAvx2: return a2;
    default: return s;
  }
}

}  // namespace kernels
}  // namespace qplugin
