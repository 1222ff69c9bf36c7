// Picks the normalization kernel table for the ISA in use (kernels::current_isa(), which
// QPLUGIN_CPU_ISA and the _set_cpu_isa test hook lower). Changes with: norm_dispatch.h.
#include "kernels/norm/norm_dispatch.h"

namespace qplugin {
namespace kernels {

namespace {

bool cpu_has_vbmi() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512vbmi");
#else
  return false;
#endif
}

}  // namespace

void lut_rows_scalar(const uint8_t* x, uint8_t* y, int64_t rows, int64_t C,
                     const uint8_t* tables) {
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* xr = x + r * C;
    uint8_t* yr = y + r * C;
    for (int64_t c = 0; c < C; ++c) yr[c] = tables[c * 256 + xr[c]];
  }
}

const NormKernelTable& norm_table() {
  static const NormKernelTable& s = scalar::make_norm_table();
  static const NormKernelTable& a2 =
      detected_isa() >= Isa::kAvx2 ? avx2::make_norm_table() : s;
  static const NormKernelTable& a512 =
      detected_isa() >= Isa::kAvx512Vnni ? avx512vnni::make_norm_table(cpu_has_vbmi()) : a2;
  switch (current_isa()) {
    case Isa::kAvx512Vnni: return a512;
    case Isa::kAvx2: return a2;
    default: return s;
  }
}

}  // namespace kernels
}  // namespace qplugin
