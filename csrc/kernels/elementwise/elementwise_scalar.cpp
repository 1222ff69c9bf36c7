// Scalar (baseline x86-64 / portable C++) elementwise and affine kernels: the reference every
// other ISA must match byte for byte. Changes with: generic_impl.h, dispatch.h.
#define QPLUGIN_ISA_NS scalar
#include "kernels/elementwise/generic_impl.h"

namespace qplugin {
namespace kernels {
namespace scalar {

const KernelTable& make_table() {
  static const KernelTable t = [] {
    KernelTable k{};
    k.isa = Isa::kScalar;
    k.lut8 = &generic::lut8;
    k.lut8_nhwc_to_nchw = &generic::lut8_nhwc_to_nchw;
    k.lut8_nchw_to_nhwc = &generic::lut8_nchw_to_nhwc;
    k.u8 = {&generic::affine_rows<uint8_t>, &generic::affine_plane<uint8_t>,
            &generic::affine_nchw_to_nhwc<uint8_t>, &generic::clamp<uint8_t>};
    k.s8 = {&generic::affine_rows<int8_t>, &generic::affine_plane<int8_t>,
            &generic::affine_nchw_to_nhwc<int8_t>, &generic::clamp<int8_t>};
    return k;
  }();
  return t;
}

}  // namespace scalar
}  // namespace kernels
}  // namespace qplugin
