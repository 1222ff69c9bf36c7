// AVX-512 fp16-weight GEMM (gemm_f16.h): one panel row of 16 fp16 weights -> one zmm
// (VCVTPH2PS), the activation broadcast, VFMADD231PS per k in order (identical bits to the scalar
// reference). Tiles of 6 rows x 4 panels (24 accumulators) and their row remainders; the 4-panel
// block of B (K * 128 bytes) stays in L2 while the row tiles stream A.
#include <immintrin.h>

#include "kernels/dynamic/gemm_f16.h"

namespace qplugin {
namespace kernels {
namespace dynamic {
namespace avx512vnni {
namespace {

constexpr int kMr = 6;
constexpr int kNv = 4;

template <int MR, int NV>
void tile(const float* a, int64_t lda, int64_t K, const uint16_t* wp, int64_t N,
          const float* bias, bool relu, float* c, int64_t ldc) {
  const int64_t pstride = K * kF16Panel;
  __m512 acc[MR][NV];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
  }
  for (int64_t k = 0; k < K; ++k) {
    __m512 b[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      b[v] = _mm512_cvtph_ps(_mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(wp + v * pstride + k * kF16Panel)));
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512 av = _mm512_set1_ps(a[r * lda + k]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_fmadd_ps(av, b[v], acc[r][v]);
    }
  }
  const __m512 zero = _mm512_setzero_ps();
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    const int64_t left = N - v * kF16Panel;
    if (left <= 0) break;
    const __mmask16 mask =
        static_cast<__mmask16>(left >= kF16Panel ? 0xFFFFu : (1u << left) - 1u);
    const __m512 bv = bias ? _mm512_maskz_loadu_ps(mask, bias + v * kF16Panel) : zero;
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      __m512 y = bias ? _mm512_add_ps(acc[r][v], bv) : acc[r][v];
      if (relu) y = _mm512_max_ps(zero, y);  // max(0, NaN) returns the NaN (second operand)
      _mm512_mask_storeu_ps(c + r * ldc + v * kF16Panel, mask, y);
    }
  }
}

template <int NV>
void row_tiles(const float* a, int64_t lda, int64_t M, int64_t K, const uint16_t* wp, int64_t N,
               const float* bias, bool relu, float* c, int64_t ldc) {
  int64_t m = 0;
  for (; m + kMr <= M; m += kMr) {
    tile<kMr, NV>(a + m * lda, lda, K, wp, N, bias, relu, c + m * ldc, ldc);
  }
  switch (M - m) {
    case 1: tile<1, NV>(a + m * lda, lda, K, wp, N, bias, relu, c + m * ldc, ldc); break;
    case 2: tile<2, NV>(a + m * lda, lda, K, wp, N, bias, relu, c + m * ldc, ldc); break;
    case 3: tile<3, NV>(a + m * lda, lda, K, wp, N, bias, relu, c + m * ldc, ldc); break;
    case 4: tile<4, NV>(a + m * lda, lda, K, wp, N, bias, relu, c + m * ldc, ldc); break;
    case 5: tile<5, NV>(a + m * lda, lda, K, wp, N, bias, relu, c + m * ldc, ldc); break;
    default: break;
  }
}

void gemm(const float* a, int64_t lda, int64_t M, int64_t K, const uint16_t* wp, int64_t N,
          const float* bias, bool relu, float* c, int64_t ldc) {
  constexpr int64_t kBlock = kNv * kF16Panel;
  for (int64_t n0 = 0; n0 < N; n0 += kBlock) {
    const int64_t nb = N - n0 < kBlock ? N - n0 : kBlock;
    const uint16_t* w = wp + (n0 / kF16Panel) * K * kF16Panel;
    const float* bb = bias ? bias + n0 : nullptr;
    switch ((nb + kF16Panel - 1) / kF16Panel) {
      case 4: row_tiles<4>(a, lda, M, K, w, nb, bb, relu, c + n0, ldc); break;
      case 3: row_tiles<3>(a, lda, M, K, w, nb, bb, relu, c + n0, ldc); break;
      case 2: row_tiles<2>(a, lda, M, K, w, nb, bb, relu, c + n0, ldc); break;
      default: row_tiles<1>(a, lda, M, K, w, nb, bb, relu, c + n0, ldc); break;
    }
  }
}

}  // namespace

const F16GemmKernels& f16_gemm_table() {
  static const F16GemmKernels t{Isa::kAvx512Vnni, &gemm};
  return t;
}

}  // namespace avx512vnni
}  // namespace dynamic
}  // namespace kernels
}  // namespace qplugin
