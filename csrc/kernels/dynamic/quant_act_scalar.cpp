// Scalar activation quantization of the dynamic ops: the reference (quant_act.h).
#include <cmath>

#include "kernels/dynamic/quant_act.h"

namespace qplugin {
namespace kernels {
namespace dynamic {
namespace scalar {
namespace {

void minmax(const float* x, int64_t n, float* mn, float* mx, float* nonfinite_sum) {
  float lo = x[0], hi = x[0], s = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
    s += v - v;
  }
  *mn = lo;
  *mx = hi;
  *nonfinite_sum = s;
}

void quantize(const float* x, int64_t n, float inv_scale, float zp, float top, uint8_t* q) {
  for (int64_t i = 0; i < n; ++i) {
    float t = std::fma(x[i], inv_scale, zp);
    t = t > 0.0f ? t : 0.0f;
    t = t < top ? t : top;
    q[i] = static_cast<uint8_t>(static_cast<int32_t>(std::nearbyint(t)));
  }
}

template <typename T>
void quantize_affine_t(const float* x, int64_t n, float inv_scale, float zp, float lo, float hi,
                       T* q) {
  for (int64_t i = 0; i < n; ++i) {
    const float t = std::fma(x[i], inv_scale, zp);
    float r;
    if (!(t < hi)) {
      r = hi;  // NaN, +inf and everything at or above the top code
    } else {
      r = std::nearbyint(t);
      r = r < lo ? lo : r;
    }
    q[i] = static_cast<T>(static_cast<int32_t>(r));
  }
}

void quantize_affine(const float* x, int64_t n, float inv_scale, float zp, bool is_signed,
                     void* q) {
  if (is_signed) {
    quantize_affine_t(x, n, inv_scale, zp, -128.0f, 127.0f, static_cast<int8_t*>(q));
  } else {
    quantize_affine_t(x, n, inv_scale, zp, 0.0f, 255.0f, static_cast<uint8_t*>(q));
  }
}

}  // namespace

const QuantActKernels& quant_act_table() {
  static const QuantActKernels t{Isa::kScalar, &minmax, &quantize, &quantize_affine};
  return t;
}

}  // namespace scalar
}  // namespace dynamic
}  // namespace kernels
}  // namespace qplugin
