// Picks the normalization kernel table for the ISA in use (kernels::current_isa(), which
// QPLUGIN_CPU_ISA and the _set_cpu_isa test hook lower). Changes with: normalization.h.
#include "kernels/normalization/normalization.h"

namespace qplugin {
namespace kernels {

void lut_rows_scalar(const uint8_t* x, uint8_t* y, int64_t rows, int64_t C,
                     const uint8_t* tables) {
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* xr = x + r * C;
    uint8_t* yr = y + r * C;
    for (int64_t c = 0; c < C; ++c) yr[c] = tables[c * 256 + xr[c]];
  }
}

const NormKernelTable& norm_table() {
  return table_of_current_isa<make_norm_table_tiers>();
}

}  // namespace kernels
}  // namespace qplugin
