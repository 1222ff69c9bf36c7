// Portable reference forms of the normalization kernels (statistics and layer-norm rows).
// Included by every kernels/norm/norm_<isa>.cpp inside its own namespace (QPLUGIN_ISA_NS), so code
// built with different flags never shares an inline definition (ODR). Vector kernels call these
// for tails, so tails and bodies round the same way. Changes with: norm_dispatch.h.
#ifndef QPLUGIN_ISA_NS
#error "define QPLUGIN_ISA_NS before including norm_generic_impl.h"
#endif
#include <cmath>
#include <cstdint>

#include "kernels/norm/norm_dispatch.h"

namespace qplugin {
namespace kernels {
namespace QPLUGIN_ISA_NS {
namespace norm_generic {

// Exact: int64 sums of codes (|x| <= 255) and squares (<= 65025) cannot overflow below 2^47
// elements.
template <typename T>
void row_stats(const T* x, int64_t n, int64_t* s1, int64_t* s2) {
  int64_t a = 0, b = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = x[i];
    a += v;
    b += v * v;
  }
  *s1 += a;
  *s2 += b;
}

template <typename T>
void col_stats(const T* x, int64_t rows, int64_t C, int64_t* s1, int64_t* s2) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * C;
    for (int64_t c = 0; c < C; ++c) {
      const int64_t v = xr[c];
      s1[c] += v;
      s2[c] += v * v;
    }
  }
}

template <typename T>
inline T norm_one(T x, float mean, float rstd, float g, float b, int32_t out_zp, float lo,
                  float hi) {
  float v = static_cast<float>(static_cast<int32_t>(x)) - mean;
  v = v * rstd;
  v = std::fma(v, g, b);
  v = v > lo ? v : lo;
  v = v < hi ? v : hi;
  return static_cast<T>(static_cast<int32_t>(std::nearbyint(v)) + out_zp);
}

template <typename T>
void norm_row(const T* x, T* y, int64_t n, const RowNormParams& p) {
  for (int64_t j = 0; j < n; ++j) {
    y[j] = norm_one<T>(x[j], p.mean, p.rstd, p.g[j], p.b[j], p.out_zp, p.lo, p.hi);
  }
}

}  // namespace norm_generic
}  // namespace QPLUGIN_ISA_NS
}  // namespace kernels
}  // namespace qplugin
