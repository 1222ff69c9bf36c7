// Picks the pooling/resampling kernel table for the ISA in use (kernels::current_isa(), which
// QPLUGIN_CPU_ISA and the _set_cpu_isa test hook lower). Changes with: pool_dispatch.h.
#include "kernels/pool/pool_dispatch.h"

namespace qplugin {
namespace kernels {

const PoolKernelTable& pool_table() {
  return table_of_current_isa([] { return &scalar::make_pool_table(); },
                              [] { return &avx2::make_pool_table(); },
                              [] { return &avx512vnni::make_pool_table(); });
}

}  // namespace kernels
}  // namespace qplugin
