// The softmax fast path's error bound (softmax.h) and the table choice by ISA.
// Changes with: softmax.h.
#include <algorithm>
#include <cmath>

#include "kernels/softmax/softmax.h"

namespace qplugin {
namespace kernels {
namespace softmax {

Params plan(const double* etab, double os, int64_t zp, int64_t qmin, int64_t qmax, int64_t D) {
  Params p{};
  p.etab = etab;
  p.os = os;
  p.zp = static_cast<int32_t>(zp);
  p.qmin = static_cast<int32_t>(qmin);
  p.qmax = static_cast<int32_t>(qmax);
  for (int h = 0; h < 16; ++h) p.e_hi[h] = h < 8 ? static_cast<float>(etab[32 * h]) : 0.0f;
  for (int l = 0; l < 32; ++l) p.e_lo[l] = static_cast<float>(etab[l]);
  for (int i = 0; i < 8; ++i) {
    p.e_a[i] = i < 4 ? static_cast<float>(etab[64 * i]) : 0.0f;
    p.e_b[i] = static_cast<float>(etab[8 * i]);
    p.e_c[i] = static_cast<float>(etab[i]);
  }
  const double rcap = static_cast<double>(qmax - zp + 1);
  // The fast path's quotient against the reference's, relative (u = 2^-53 double, 2^-24 float):
  //   e against etab[k], each of the two (the numerator, and every term of the sum):
  //     the factors' float roundings and products: 3 * 2^-24 (avx512vnni), 5 * 2^-24 (avx2);
  //     the factors' etab entries against etab[k]: exp of -j*s rounded in double, glibc's exp
  //     within an ulp, and k*s <= 745 where etab[k] is not 0: below 2^-40
  //   S' against S: the terms as above, and another order of one sum of D positive terms (each
  //     within (D - 1)u of the exact sum): 2(D - 1)u
  //   1 / (S' * os) in double: 2u, then to float: 2^-24
  //   the float product e * inv: 2^-24
  //   the reference's two divisions: 2u
  // i.e. 12 * 2^-24 + 2 * 2^-40 + (2D + 2)u to first order (1.01 covers the products of these).
  // Absolute: underflow of the float factors and products (each below 2^-126, times
  // 1 / (S' * os) <= 2^100, and S' >= 1).
  const double rel =
      1.01 * (12 * 0x1p-24 + 2 * 0x1p-40 + (2.0 * static_cast<double>(D) + 2) * 0x1p-53);
  const double err = rel * std::max(rcap, 1.0) + 0x1p-24;
  // 1 / (S' * os) must be a normal float of at most 2^100: S' lies in [1, D] (etab[0] = 1).
  const double inv_hi = 1.0 / os, inv_lo = 1.0 / (static_cast<double>(D) * os);
  p.fast = err <= 0.25 && std::fabs(rcap) < 0x1p24 && inv_hi <= 0x1p100 && inv_lo >= 0x1p-100;
  p.rcap = static_cast<float>(rcap);
  // Rounded down, so the comparison can only flag more lanes.
  p.thr = std::nextafter(static_cast<float>(0.5 - err), 0.0f);
  return p;
}

const Table& table() {
  return table_of_current_isa<make_table_tiers>();
}

}  // namespace softmax
}  // namespace kernels
}  // namespace qplugin
