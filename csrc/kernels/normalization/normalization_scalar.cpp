// Scalar (baseline x86-64 / portable C++) normalization kernels: the reference every other ISA
// must match byte for byte. Changes with: normalization_generic_impl.h, normalization.h.
#define QPLUGIN_ISA_NS scalar
#include "kernels/normalization/normalization_generic_impl.h"

namespace qplugin::kernels::QPLUGIN_ISA_NS {

// The portable forms of normalization_generic_impl.h.
template <typename T>
constexpr TypedNormKernels<T> typed() {
  return {&norm_generic::row_stats<T>, &norm_generic::col_stats<T>, &norm_generic::norm_row<T>,
          &norm_generic::affine_rows<T>, &norm_generic::affine_plane<T>};
}

const NormKernelTable& make_norm_table() {
  static const NormKernelTable t{.isa = Isa::kScalar,
                                 .plane_tables = true,
                                 .row_tables = true,
                                 .u8 = typed<uint8_t>(),
                                 .s8 = typed<int8_t>()};
  return t;
}

}  // namespace qplugin::kernels::QPLUGIN_ISA_NS
