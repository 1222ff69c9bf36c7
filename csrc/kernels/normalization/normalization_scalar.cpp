// Scalar (baseline x86-64 / portable C++) normalization kernels: the reference every other ISA
// must match byte for byte. Changes with: normalization_generic_impl.h, normalization.h.
#define QPLUGIN_ISA_NS scalar
#include "kernels/normalization/normalization_generic_impl.h"

namespace qplugin {
namespace kernels {
namespace scalar {

const NormKernelTable& make_norm_table() {
  static const NormKernelTable t = [] {
    NormKernelTable k{};
    k.isa = Isa::kScalar;
    k.plane_tables = true;
    k.row_tables = true;
    k.u8 = {&norm_generic::row_stats<uint8_t>, &norm_generic::col_stats<uint8_t>,
            &norm_generic::norm_row<uint8_t>, &norm_generic::affine_rows<uint8_t>,
            &norm_generic::affine_plane<uint8_t>};
    k.s8 = {&norm_generic::row_stats<int8_t>, &norm_generic::col_stats<int8_t>,
            &norm_generic::norm_row<int8_t>, &norm_generic::affine_rows<int8_t>,
            &norm_generic::affine_plane<int8_t>};
    return k;
  }();
  return t;
}

}  // namespace scalar
}  // namespace kernels
}  // namespace qplugin
