// Exact integer GEMM with 64-bit results (torch-free; one file per ISA, the same C++ compiled
// with each ISA's flags, so every ISA gives identical results by construction: integer math).
// Used by ops/quantized_cpu/exact_gemm.cpp (threads) for linear_leaky_relu / linear_tanh,
// conv2d_add[_relu] and matmul. Changes with: exact_gemm_impl.h, exact_gemm_<isa>.cpp,
// kernels/dispatch.cpp (table choice).
//
// Math: acc[m * ldc + n] = sum_k (A[m * lda + k] - za) * (B[n * ldb + k] - zb[n])   exact
//   A: M x K (u8 or s8), B: N x K (the [out][in] weight layout; s8 or u8), zb: [N].
//   Both differences fit int16 ([-255, 255]); products are summed in int32 over k-blocks of
//   16384 (16384 * 255 * 255 < 2^31) and the blocks in int64, so any K is exact.
#pragma once
#include <cstdint>

#include "kernels/dispatch.h"

namespace qplugin {
namespace kernels {
namespace gemm {

struct ExactGemmKernels {
  Isa isa;
  const char* name;  // e.g. "xgemm_s64_4x1__avx2"
  void (*u8s8)(const uint8_t* a, int64_t lda, int64_t M, int64_t K, int32_t za, const int8_t* b,
               int64_t ldb, int64_t N, const int32_t* zb, int64_t* acc, int64_t ldc);
  void (*u8u8)(const uint8_t* a, int64_t lda, int64_t M, int64_t K, int32_t za,
               const uint8_t* b, int64_t ldb, int64_t N, const int32_t* zb, int64_t* acc,
               int64_t ldc);
  void (*s8s8)(const int8_t* a, int64_t lda, int64_t M, int64_t K, int32_t za, const int8_t* b,
               int64_t ldb, int64_t N, const int32_t* zb, int64_t* acc, int64_t ldc);
  // The finishing pass of linear_leaky_relu / linear_tanh over one row of exact int32
  // accumulators (written for the auto-vectorizer, exact_gemm_impl.h):
  //   v = acc[n] * mult[n] + bias[n]                                   double
  //   out[n] = clamp(nearbyint(act(v) / s) + zp, 0, 255)               act: kActLeakyRelu
  //                                                                    (v or v * slope) or tanh
  // with the bytes of quantize_exact(act(v), s, zp, 0, 255) (act in double, std::tanh for tanh).
  // unsure[n] = 1 where this pass cannot vouch for that (non-finite or huge values; for tanh,
  // act(v) / s within the approximation's error bound of a rounding boundary): the caller
  // recomputes those elements with std::tanh / quantize_exact. Returns the number of them.
  int64_t (*act_requant)(const int32_t* acc, int64_t n, const double* mult, const double* bias,
                         int act, double slope, double s, int64_t zp, uint8_t* out,
                         uint8_t* unsure);
  // matmul's finishing pass (no division per element; exact_gemm_impl.h proves the margin):
  //   out[n] = quantize_exact(acc[n] * m, s, zp, 0, 255)'s byte, or unsure[n] = 1 where it
  // cannot vouch for that (the caller recomputes those). Returns the number of them.
  int64_t (*requant_i32)(const int32_t* acc, int64_t n, double m, double s, int64_t zp,
                         uint8_t* out, uint8_t* unsure);
  // conv2d_add[_relu]'s finishing pass over one output pixel (n = C_out channels):
  //   v = acc[n] * mult[n] + bias[n] + (a[n] - a_zp) * a_scale       double, in this order
  //   relu: v = (v < 0 ? 0 : v)   (a NaN stays NaN)
  //   out[n] = clamp(nearbyint(v / s) + zp, 0, 255)
  // with the bytes of quantize_exact(v, s, zp, 0, 255); unsure[n] = 1 where v is NaN or |v / s|
  // >= 1e15 (the caller recomputes those with quantize_exact). Returns the number of them.
  int64_t (*add_requant)(const int32_t* acc, const uint8_t* a, int64_t n, const double* mult,
                         const double* bias, int64_t a_zp, double a_scale, bool relu, double s,
                         int64_t zp, uint8_t* out, uint8_t* unsure);
};

constexpr int kActLeakyRelu = 0;
constexpr int kActTanh = 1;

// The kernels of `isa` (never above the CPU's).
const ExactGemmKernels& exact_gemm_kernels_for(Isa isa);

QPLUGIN_ISA_TABLES(ExactGemmKernels, exact_gemm_table);

}  // namespace gemm
}  // namespace kernels
}  // namespace qplugin
