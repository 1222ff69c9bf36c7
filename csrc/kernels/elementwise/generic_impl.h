// Portable reference forms of the elementwise/affine kernels. Included by every
// kernels/elementwise/*_<isa>.cpp inside its own namespace (QPLUGIN_ISA_NS), so code built with
// different flags never shares an inline definition (ODR). The vector kernels call these for
// tails, so tails and bodies round the same way.
// Math: y = out_zp + nearbyint(min(max(fma(a, x - in_zp, b), lo), hi)); max/min written as
// (v > lo ? v : lo) / (v < hi ? v : hi), which is exactly MAXPS/MINPS (NaN -> the bound).
#ifndef QPLUGIN_ISA_NS
#error "define QPLUGIN_ISA_NS before including generic_impl.h"
#endif
#include <cmath>
#include <cstdint>

#include "common/inline.h"
#include "kernels/dispatch.h"

namespace qplugin {
namespace kernels {
namespace QPLUGIN_ISA_NS {
namespace generic {

template <typename T>
inline T affine_one(T x, float a, float b, int32_t in_zp, int32_t out_zp, float lo, float hi) {
  float v = std::fma(a, static_cast<float>(static_cast<int32_t>(x) - in_zp), b);
  v = v > lo ? v : lo;
  v = v < hi ? v : hi;
  return static_cast<T>(static_cast<int32_t>(std::nearbyint(v)) + out_zp);
}

template <typename T>
void affine_rows(const T* x, T* y, int64_t rows, int64_t C, const AffineParams& p) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * C;
    T* yr = y + r * C;
    for (int64_t c = 0; c < C; ++c) {
      yr[c] = affine_one<T>(xr[c], p.alpha[c], p.beta[c], p.in_zp, p.out_zp, p.lo, p.hi);
    }
  }
}

template <typename T>
void affine_plane(const T* x, T* y, int64_t n, int64_t c, const AffineParams& p) {
  const float a = p.alpha[c], b = p.beta[c];
  for (int64_t i = 0; i < n; ++i) y[i] = affine_one<T>(x[i], a, b, p.in_zp, p.out_zp, p.lo, p.hi);
}

template <typename T>
void affine_nchw_to_nhwc(const T* x, T* y, int64_t C, int64_t HW, int64_t p0, int64_t p1,
                         const AffineParams& p) {
  // Walk pixel blocks so both the 'C' strided reads and the row writes stay in cache.
  constexpr int64_t kBlock = 64;
  for (int64_t pb = p0; pb < p1; pb += kBlock) {
    const int64_t pe = pb + kBlock < p1 ? pb + kBlock : p1;
    for (int64_t c = 0; c < C; ++c) {
      const float a = p.alpha[c], b = p.beta[c];
      const T* xc = x + c * HW;
      for (int64_t i = pb; i < pe; ++i) {
        y[i * C + c] = affine_one<T>(xc[i], a, b, p.in_zp, p.out_zp, p.lo, p.hi);
      }
    }
  }
}

template <typename T>
void clamp(const T* x, T* y, int64_t n, T lo, T hi) {
  for (int64_t i = 0; i < n; ++i) {
    T v = x[i] < lo ? lo : x[i];
    y[i] = v > hi ? hi : v;
  }
}

inline void lut8(const uint8_t* x, uint8_t* y, int64_t n, const uint8_t* table) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const uint8_t a = table[x[i]], b = table[x[i + 1]], c = table[x[i + 2]], d = table[x[i + 3]];
    y[i] = a; y[i + 1] = b; y[i + 2] = c; y[i + 3] = d;
  }
  for (; i < n; ++i) y[i] = table[x[i]];
}

inline void lut8_rows(const uint8_t* x, int64_t xs, uint8_t* y, int64_t ys, int64_t width,
                      int64_t rows, const uint8_t* table) {
  for (int64_t r = 0; r < rows; ++r) lut8(x + r * xs, y + r * ys, width, table);
}

// The transposing forms below: pixels [p0, p1) in blocks of 64 and, within a block, channel by
// channel (one table or one output row at a time); f(c, pb, pe) does channel c, pixels [pb, pe).
template <class F>
QPLUGIN_ALWAYS_INLINE void by_pixel_blocks(int64_t C, int64_t p0, int64_t p1, F f) {
  constexpr int64_t kBlock = 64;
  for (int64_t pb = p0; pb < p1; pb += kBlock) {
    const int64_t pe = pb + kBlock < p1 ? pb + kBlock : p1;
    for (int64_t c = 0; c < C; ++c) f(c, pb, pe);
  }
}

inline void lut8_nchw_to_nhwc(const uint8_t* x, uint8_t* y, int64_t C, int64_t HW, int64_t p0,
                              int64_t p1, const uint8_t* tables) {
  by_pixel_blocks(C, p0, p1, [&](int64_t c, int64_t pb, int64_t pe) {
    const uint8_t* t = tables + c * 256;
    const uint8_t* xc = x + c * HW;
    for (int64_t i = pb; i < pe; ++i) y[i * C + c] = t[xc[i]];
  });
}

inline void lut8_nhwc_to_nchw(const uint8_t* x, uint8_t* y, int64_t C, int64_t HW, int64_t p0,
                              int64_t p1, const uint8_t* table) {
  by_pixel_blocks(C, p0, p1, [&](int64_t c, int64_t pb, int64_t pe) {
    uint8_t* yc = y + c * HW;
    for (int64_t i = pb; i < pe; ++i) yc[i] = table[x[i * C + c]];
  });
}

}  // namespace generic
}  // namespace QPLUGIN_ISA_NS
}  // namespace kernels
}  // namespace qplugin
