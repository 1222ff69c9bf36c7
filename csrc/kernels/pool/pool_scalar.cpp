// scalar pooling/resampling kernels: the portable forms of pool_generic_impl.h compiled with this
// tier's flags (setup.py). Must equal the scalar kernels byte for byte.
// Changes with: pool_generic_impl.h, pool_dispatch.h.
#define QPLUGIN_ISA_NS scalar
#include "kernels/pool/pool_generic_impl.h"

namespace qplugin {
namespace kernels {
namespace scalar {

const PoolKernelTable& make_pool_table() {
  static const PoolKernelTable t = [] {
    PoolKernelTable k{};
    k.isa = Isa::kScalar;
    k.u8 = pool_generic::typed<uint8_t>();
    k.s8 = pool_generic::typed<int8_t>();
    k.s32 = pool_generic::typed<int32_t>();
    return k;
  }();
  return t;
}

}  // namespace scalar
}  // namespace kernels
}  // namespace qplugin
