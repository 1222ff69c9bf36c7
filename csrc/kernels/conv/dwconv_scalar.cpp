// Depthwise conv, scalar (the reference every ISA matches byte for byte). See dwconv.h.
#include "kernels/conv/dwconv_impl.h"

namespace qplugin {
namespace kernels {
namespace conv {
namespace scalar {
namespace {

struct PixelScalar {
  template <int KV>
  static void run(const uint8_t* const* taps, int64_t ntaps, const DwConvArgs& a, uint8_t* y) {
    dw_pixel_scalar(taps, KV > 0 ? KV : ntaps, a, 0, y);
  }
};

void rows(const DwConvArgs& a, int64_t r0, int64_t r1) { dw_rows<PixelScalar>(a, r0, r1); }

}  // namespace

const DwConvKernels& dwconv_table() {
  static const DwConvKernels t{Isa::kScalar, "dwconv_u8s8_c1__scalar", &rows};
  return t;
}

}  // namespace scalar
}  // namespace conv
}  // namespace kernels
}  // namespace qplugin
