// Scalar (baseline x86-64 / portable C++) elementwise and affine kernels: the reference every
// other ISA must match byte for byte. Changes with: generic_impl.h, dispatch.h.
#define QPLUGIN_ISA_NS scalar
#include "kernels/elementwise/generic_impl.h"

namespace qplugin::kernels::QPLUGIN_ISA_NS {

// The portable forms of generic_impl.h; no transposing copy (callers loop themselves).
template <typename T>
constexpr TypedKernels<T> typed() {
  return {&generic::affine_rows<T>, &generic::affine_plane<T>, &generic::affine_nchw_to_nhwc<T>,
          &generic::clamp<T>};
}

const KernelTable& make_table() {
  static const KernelTable t{.isa = Isa::kScalar,
                             .lut8 = &generic::lut8,
                             .lut8_rows = &generic::lut8_rows,
                             .lut8_nchw_to_nhwc = &generic::lut8_nchw_to_nhwc,
                             .lut8_nhwc_to_nchw = &generic::lut8_nhwc_to_nchw,
                             .pw_affine8 = nullptr,
                             .u8 = typed<uint8_t>(),
                             .s8 = typed<int8_t>()};
  return t;
}

}  // namespace qplugin::kernels::QPLUGIN_ISA_NS
