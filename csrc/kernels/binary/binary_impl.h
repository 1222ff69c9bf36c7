// Portable reference form of the add/mul microkernels (binary.h states the math). Included by
// every kernels/binary/binary_<isa>.cpp inside its own namespace (QPLUGIN_ISA_NS) so code built
// with different flags never shares an inline definition; the vector kernels use it for tails.
#ifndef QPLUGIN_ISA_NS
#error "define QPLUGIN_ISA_NS before including binary_impl.h"
#endif
#include <cmath>
#include <cstdint>

#include "kernels/binary/binary.h"

namespace qplugin {
namespace kernels {
namespace binary {
namespace QPLUGIN_ISA_NS {
namespace generic {

// One output; *undecided counts the lanes fix() decides.
template <typename T, bool kMul>
inline T one(T a, T b, const Params& p, int64_t* undecided) {
  const int32_t ai = a, bi = b;
  float v;
  if (kMul) {
    v = std::fma(static_cast<float>((ai - p.za) * (bi - p.zb)), p.ra, p.c);
  } else {
    v = std::fma(static_cast<float>(ai), p.ra, std::fma(static_cast<float>(bi), p.rb, p.c));
  }
  const float lo = p.lo - static_cast<float>(p.zadd), hi = p.hi - static_cast<float>(p.zadd);
  v = v > lo ? v : lo;
  v = v < hi ? v : hi;
  const float r = std::nearbyint(v);
  if (std::fabs(v - r) > p.thr) {
    ++*undecided;
    return static_cast<T>(p.fix(p.ctx, ai, bi));
  }
  return static_cast<T>(static_cast<int32_t>(r) + p.zadd);
}

// The table form (Params::table), element by element; the vector kernels' tails.
template <typename T>
void run_table(const T* a, int64_t as, const T* b, int64_t bs, T* y, int64_t n,
               const uint8_t* table) {
  for (int64_t i = 0; i < n; ++i) {
    y[i] = static_cast<T>(table[table_key(a[i * as], b[i * bs])]);
  }
}

template <typename T, bool kMul>
void run(const T* a, int64_t as, const T* b, int64_t bs, T* y, int64_t n, const Params& p) {
  if (p.table != nullptr) {
    run_table(a, as, b, bs, y, n, p.table);
    return;
  }
  int64_t undecided = 0;
  for (int64_t i = 0; i < n; ++i) y[i] = one<T, kMul>(a[i * as], b[i * bs], p, &undecided);
  if (undecided) p.note(p.ctx, undecided);
}

}  // namespace generic
}  // namespace QPLUGIN_ISA_NS
}  // namespace binary
}  // namespace kernels
}  // namespace qplugin
