// Quantization helpers shared by kernels in ops/: dtype ranges and exact (double) requantization.
#pragma once
#include <ATen/ATen.h>

#include <cmath>
#include <cstdint>
#include <utility>

namespace qplugin {

inline std::pair<int64_t, int64_t> qrange(at::ScalarType t) {
  switch (t) {
    case at::kQUInt8: return {0, 255};
    case at::kQInt8: return {-128, 127};
    case at::kQInt32: return {INT32_MIN, INT32_MAX};
    default: TORCH_INTERNAL_ASSERT(false, "qplugin: qrange of a non-quantized dtype ", t);
  }
  return {0, 0};
}

// q = clamp(nearbyint(v / scale) + zp, qmin, qmax), in double, round half to even.
// NaN maps to the zero point (never reached by the ops that use it with finite inputs).
inline int64_t quantize_exact(double v, double scale, int64_t zp, int64_t qmin, int64_t qmax) {
  double r = v / scale;
  if (std::isnan(r)) return zp;
  r = std::nearbyint(r) + static_cast<double>(zp);
  if (r < static_cast<double>(qmin)) return qmin;
  if (r > static_cast<double>(qmax)) return qmax;
  return static_cast<int64_t>(r);
}

}  // namespace qplugin
