// Portable reference forms of the normalization kernels (statistics, layer-norm rows, per-channel
// affine). Included by every kernels/normalization/normalization_<isa>.cpp inside its own namespace
// (QPLUGIN_ISA_NS), so code built with different flags never shares an inline definition (ODR).
// Vector kernels call these for tails, so tails and bodies round the same way.
// Changes with: normalization.h.
#ifndef QPLUGIN_ISA_NS
#error "define QPLUGIN_ISA_NS before including normalization_generic_impl.h"
#endif
#include <cmath>
#include <cstdint>

#include "kernels/normalization/normalization.h"

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
inline T clamp_round(float v, float lo, float hi) {
  v = v < hi ? v : hi;  // NaN -> hi
  v = v > lo ? v : lo;
  return static_cast<T>(static_cast<int32_t>(std::nearbyint(v)));
}

template <typename T>
inline T norm_one(T x, float rstd, float shift, float g, float b, float lo, float hi) {
  const float v = std::fma(static_cast<float>(x), rstd, shift);
  return clamp_round<T>(std::fma(v, g, b), lo, hi);
}

template <typename T>
void norm_row(const T* x, T* y, int64_t n, const RowNormParams& p) {
  for (int64_t j = 0; j < n; ++j) {
    y[j] = norm_one<T>(x[j], p.rstd, p.shift, p.g[j], p.b[j], p.lo, p.hi);
  }
}

template <typename T>
inline T affine_one(T x, float a, float b, float lo, float hi) {
  return clamp_round<T>(std::fma(a, static_cast<float>(x), b), lo, hi);
}

template <typename T>
void affine_rows(const T* x, T* y, int64_t rows, int64_t C, const ChannelAffineParams& p) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * C;
    T* yr = y + r * C;
    for (int64_t c = 0; c < C; ++c) yr[c] = affine_one<T>(xr[c], p.alpha[c], p.beta[c], p.lo, p.hi);
  }
}

template <typename T>
void affine_plane(const T* x, T* y, int64_t n, int64_t c, const ChannelAffineParams& p) {
  const float a = p.alpha[c], b = p.beta[c];
  for (int64_t i = 0; i < n; ++i) y[i] = affine_one<T>(x[i], a, b, p.lo, p.hi);
}

}  // namespace norm_generic
}  // namespace QPLUGIN_ISA_NS
}  // namespace kernels
}  // namespace qplugin
