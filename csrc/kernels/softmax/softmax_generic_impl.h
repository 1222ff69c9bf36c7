// The reference forms of the softmax kernels (softmax.h), included by every
// kernels/softmax/softmax_<isa>.cpp inside its own namespace (QPLUGIN_ISA_NS), so code built with
// different flags never shares an inline definition (ODR). The vector kernels call these for the
// lanes their fast path leaves undecided and for tails, so every lane rounds as the reference.
// Changes with: softmax.h.
#ifndef QPLUGIN_ISA_NS
#error "define QPLUGIN_ISA_NS before including softmax_generic_impl.h"
#endif
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/softmax/softmax.h"

namespace qplugin {
namespace kernels {
namespace softmax {
namespace QPLUGIN_ISA_NS {
namespace generic {

// The reference output code of one lane: etab[k] / S / os rounded, shifted, clamped (softmax.h).
inline int32_t out_code(double e, double S, const Params& p) {
  const double r = std::nearbyint((e / S) / p.os) + static_cast<double>(p.zp);
  if (r < static_cast<double>(p.qmin)) return p.qmin;
  if (r > static_cast<double>(p.qmax)) return p.qmax;
  return static_cast<int32_t>(r);
}

// The reference sum of one row: x[t * step] for t in [0, D), max code m.
template <typename T>
inline double row_sum(const T* x, int64_t step, int64_t D, int32_t m, const Params& p) {
  double S = 0.0;
  for (int64_t t = 0; t < D; ++t) S += p.etab[m - static_cast<int32_t>(x[t * step])];
  return S;
}

template <typename T>
inline int32_t row_max(const T* x, int64_t step, int64_t D) {
  int32_t m = x[0];
  for (int64_t t = 1; t < D; ++t) m = std::max<int32_t>(m, x[t * step]);
  return m;
}

// One row (x[t * step], y[t * step]) in full.
template <typename T>
inline void row(const T* x, T* y, int64_t step, int64_t D, const Params& p) {
  const int32_t m = row_max(x, step, D);
  const double S = row_sum(x, step, D, m, p);
  for (int64_t t = 0; t < D; ++t) {
    y[t * step] = static_cast<T>(out_code(p.etab[m - static_cast<int32_t>(x[t * step])], S, p));
  }
}

// The vector kernels' lanes their fast path left undecided (bit l of und: lane l of the vector
// of codes tmp), recomputed by the reference in tmp. Columns form: lane l is column j + l of the
// [D][inner] slice x at position t, with max code ms[l] and the reference's sum S[l] (summed on
// first need: S[l] < 0 until then).
template <typename T>
inline void fix_columns(T* tmp, uint32_t und, const T* x, int64_t t, int64_t inner, int64_t j,
                        int64_t D, const int32_t* ms, double* S, const Params& p) {
  const T* xt = x + t * inner + j;
  for (uint32_t u = und; u; u &= u - 1) {
    const int l = __builtin_ctz(u);
    if (S[l] < 0) S[l] = row_sum(x + j + l, inner, D, ms[l], p);
    tmp[l] = static_cast<T>(out_code(p.etab[ms[l] - static_cast<int32_t>(xt[l])], S[l], p));
  }
}

// Rows form: lane l holds the code xs[l] of the row xr (D codes, max mx); *S the reference's
// sum of the row, summed on first need (< 0 until then).
template <typename T>
inline void fix_row(T* tmp, uint32_t und, const T* xs, const T* xr, int64_t D, int32_t mx,
                    double* S, const Params& p) {
  if (*S < 0) *S = row_sum(xr, 1, D, mx, p);
  for (uint32_t u = und; u; u &= u - 1) {
    const int l = __builtin_ctz(u);
    tmp[l] = static_cast<T>(out_code(p.etab[mx - static_cast<int32_t>(xs[l])], *S, p));
  }
}

// The vector kernels' rows form, eight rows per phase: a row's max, sum and division are one
// latency chain, the rows of a block are independent, so their chains overlap. max_of(row) is the
// row's max code, sum_of(row, max) its sum S' (any order), out(row, y_row, max, float(1 / (S' *
// os))) writes its codes.
template <typename T, typename MaxOf, typename SumOf, typename Out>
inline void rows_in_phases(const T* x, T* y, int64_t D, int64_t nrows, const Params& p,
                           MaxOf max_of, SumOf sum_of, Out out) {
  constexpr int64_t kRows = 8;
  for (int64_t r0 = 0; r0 < nrows; r0 += kRows) {
    const int64_t nb = nrows - r0 < kRows ? nrows - r0 : kRows;
    const T* xb = x + r0 * D;
    int32_t mx[kRows];
    double Sv[kRows];
    for (int64_t b = 0; b < nb; ++b) mx[b] = max_of(xb + b * D);
    for (int64_t b = 0; b < nb; ++b) Sv[b] = sum_of(xb + b * D, mx[b]);
    for (int64_t b = 0; b < nb; ++b) {
      out(xb + b * D, y + (r0 + b) * D, mx[b], static_cast<float>(1.0 / (Sv[b] * p.os)));
    }
  }
}

// Columns [j0, j1) of a [D][inner] slice, kBlock columns at a time so the walks over t read
// whole cache lines.
template <typename T>
void cols(const T* x, T* y, int64_t D, int64_t inner, int64_t j0, int64_t j1, const Params& p) {
  constexpr int64_t kBlock = 64;
  int32_t m[kBlock];
  double S[kBlock];
  for (int64_t jb = j0; jb < j1; jb += kBlock) {
    const int64_t n = std::min(kBlock, j1 - jb);
    for (int64_t l = 0; l < n; ++l) m[l] = x[jb + l];
    for (int64_t t = 1; t < D; ++t) {
      const T* xt = x + t * inner + jb;
      for (int64_t l = 0; l < n; ++l) m[l] = std::max<int32_t>(m[l], xt[l]);
    }
    for (int64_t l = 0; l < n; ++l) S[l] = 0.0;
    for (int64_t t = 0; t < D; ++t) {  // each lane sums in t order: the reference's S
      const T* xt = x + t * inner + jb;
      for (int64_t l = 0; l < n; ++l) S[l] += p.etab[m[l] - static_cast<int32_t>(xt[l])];
    }
    for (int64_t t = 0; t < D; ++t) {
      const T* xt = x + t * inner + jb;
      T* yt = y + t * inner + jb;
      for (int64_t l = 0; l < n; ++l) {
        yt[l] = static_cast<T>(out_code(p.etab[m[l] - static_cast<int32_t>(xt[l])], S[l], p));
      }
    }
  }
}

template <typename T>
void rows(const T* x, T* y, int64_t D, int64_t nrows, const Params& p) {
  for (int64_t r = 0; r < nrows; ++r) row(x + r * D, y + r * D, 1, D, p);
}

}  // namespace generic
}  // namespace QPLUGIN_ISA_NS
}  // namespace softmax
}  // namespace kernels
}  // namespace qplugin
