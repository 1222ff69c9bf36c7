// scalar pooling/resampling kernels: the portable forms of pool_generic_impl.h compiled with this
// tier's flags (setup.py). Must equal the scalar kernels byte for byte.
// Changes with: pool_generic_impl.h, pool_dispatch.h.
#define QPLUGIN_ISA_NS scalar
#include "kernels/pool/pool_generic_impl.h"

namespace qplugin::kernels::QPLUGIN_ISA_NS {

const PoolKernelTable& make_pool_table() {
  static const PoolKernelTable t{.isa = Isa::kScalar,
                                 .u8 = pool_generic::typed<uint8_t>(),
                                 .s8 = pool_generic::typed<int8_t>(),
                                 .s32 = pool_generic::typed<int32_t>()};
  return t;
}

}  // namespace qplugin::kernels::QPLUGIN_ISA_NS
