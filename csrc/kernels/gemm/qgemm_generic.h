// Portable pieces of the GEMM engine: B packing (any nr/kr), row sums and the scalar epilogue.
// Included by every kernels/gemm/qgemm_*_<isa>.cpp inside its own namespace (QPLUGIN_ISA_NS), so
// code built with different flags never shares an inline definition (ODR). The vector kernels
// use requant_one() for nothing but reference; their epilogue repeats its exact op sequence.
// Changes with: qgemm.h (layout and math contract).
#ifndef QPLUGIN_ISA_NS
#error "define QPLUGIN_ISA_NS before including qgemm_generic.h"
#endif
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/gemm/qgemm.h"

namespace qplugin {
namespace kernels {
namespace gemm {
namespace QPLUGIN_ISA_NS {
namespace generic {

inline int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

template <int NR, int KR>
int64_t packed_b_bytes(int64_t K, int64_t N) {
  return N * round_up(K, KR) + kPackSlack;
}

// Layout: see qgemm.h. Zero padding for k in [K, Kp); the slack is zeroed too (deterministic).
template <int NR, int KR>
void pack_b(const int8_t* w, int64_t ldw, int64_t K, int64_t N, int8_t* packed,
            int32_t* col_sums) {
  const int64_t Kp = round_up(K, KR);
  for (int64_t n = 0; n < N; ++n) {
    int32_t s = 0;
    const int8_t* wr = w + n * ldw;
    for (int64_t k = 0; k < K; ++k) s += wr[k];
    col_sums[n] = s;
  }
  for (int64_t p0 = 0; p0 < N; p0 += NR) {
    const int64_t width = N - p0 < NR ? N - p0 : NR;
    int8_t* dst = packed + p0 * Kp;
    for (int64_t kg = 0; kg < Kp; kg += KR) {
      for (int64_t c = 0; c < width; ++c) {
        const int8_t* wr = w + (p0 + c) * ldw;
        for (int64_t r = 0; r < KR; ++r) {
          const int64_t k = kg + r;
          *dst++ = k < K ? wr[k] : static_cast<int8_t>(0);
        }
      }
    }
  }
  std::memset(packed + N * Kp, 0, kPackSlack);
}

inline void row_sums(const uint8_t* a, int64_t lda, int64_t M, int64_t K, int32_t* out) {
  for (int64_t m = 0; m < M; ++m) {
    const uint8_t* ar = a + m * lda;
    int64_t s = 0;
    for (int64_t k = 0; k < K; ++k) s += ar[k];
    out[m] = static_cast<int32_t>(s);
  }
}

// int32 arithmetic that wraps (as the SIMD instructions do) without signed-overflow UB.
inline int32_t wrap_sub(int32_t x, int32_t y) {
  return static_cast<int32_t>(static_cast<uint32_t>(x) - static_cast<uint32_t>(y));
}
inline int32_t wrap_mul(int32_t x, int32_t y) {
  return static_cast<int32_t>(static_cast<uint32_t>(x) * static_cast<uint32_t>(y));
}

// The epilogue of one element: raw = sum_k A*W (wrapping int32), m-th row, n-th column.
inline uint8_t requant_one(int32_t raw, int64_t m, int64_t n, const QGemmEpilogue& e) {
  int32_t acc = wrap_sub(raw, e.col_offsets[n]);
  if (e.row_sums != nullptr) {
    const int32_t zw = e.w_zp != nullptr ? e.w_zp[n] : e.w_zp_scalar;
    acc = wrap_sub(acc, wrap_mul(zw, e.row_sums[m]));
  }
  float v = static_cast<float>(acc);
  v = v + e.bias_q[n];
  v = v * e.mult[n];
  v = v > e.lo ? v : e.lo;
  v = v < e.hi ? v : e.hi;
  return static_cast<uint8_t>(static_cast<int32_t>(std::nearbyint(v)) + e.out_zp);
}

// Float-output epilogue of one element (QGemmEpilogue::out_f32): stores into row m of the float
// output `c` (ldc in bytes), column n.
// The exact accumulator of element (m, n): the raw sum minus the zero-point terms (qgemm.h).
inline int32_t corrected_acc(int32_t raw, int64_t m, int64_t n, const QGemmEpilogue& e) {
  int32_t acc = wrap_sub(raw, e.col_offsets[n]);
  if (e.row_sums != nullptr) {
    const int32_t zw = e.w_zp != nullptr ? e.w_zp[n] : e.w_zp_scalar;
    acc = wrap_sub(acc, wrap_mul(zw, e.row_sums[m]));
  }
  return acc;
}

inline void store_f32_one(int32_t raw, int64_t m, int64_t n, const QGemmEpilogue& e, uint8_t* c,
                          int64_t ldc) {
  const int32_t acc = corrected_acc(raw, m, n, e);
  float v = std::fma(static_cast<float>(acc), e.mult[n], e.bias_q[n]);
  if (e.f32_relu) v = 0.0f > v ? 0.0f : v;
  std::memcpy(c + m * ldc + n * static_cast<int64_t>(sizeof(float)), &v, sizeof(float));
}

// Int32-output epilogue of one element (QGemmEpilogue::out_i32): the exact accumulator into row m
// of the int32 output `c` (ldc in bytes), column n.
inline void store_i32_one(int32_t raw, int64_t m, int64_t n, const QGemmEpilogue& e, uint8_t* c,
                          int64_t ldc) {
  const int32_t acc = corrected_acc(raw, m, n, e);
  std::memcpy(c + m * ldc + n * static_cast<int64_t>(sizeof(int32_t)), &acc, sizeof(int32_t));
}

}  // namespace generic
}  // namespace QPLUGIN_ISA_NS
}  // namespace gemm
}  // namespace kernels
}  // namespace qplugin
