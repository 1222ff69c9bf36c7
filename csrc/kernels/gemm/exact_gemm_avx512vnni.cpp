// Exact int64 GEMM (exact_gemm.h) for avx512vnni: exact_gemm_impl.h compiled with this ISA's flags
// (setup.py), with the u8 x s8 kernel on VPDPBUSD. Changes with: exact_gemm_impl.h.
#include <immintrin.h>

#include <cstdint>
#include <vector>

namespace qplugin {
namespace kernels {
namespace gemm {
namespace avx512vnni {
namespace {

// u8 x s8 with VPDPBUSD (the non-saturating form; VPDPBUSDS is never used): raw products of the
// codes, then the zero points by row / column sums, all exact:
//   acc = sum_k a*b - zb[n] * sum_k a - za * sum_k b + K * za * zb[n]           (int64)
// A lane adds 4 products of |u8 * s8| <= 32640 per instruction; per 16384-k block a lane holds
// at most 256 * 4 * 32640 < 2^31 and the 16-lane total at most 16384 * 32640 < 2^31; blocks add
// up in int64. Four rows of A share each 64-byte load of B; the K tail uses masked loads.
void u8s8_vnni(const uint8_t* a, int64_t lda, int64_t M, int64_t K, int32_t za, const int8_t* b,
               int64_t ldb, int64_t N, const int32_t* zb, int64_t* acc, int64_t ldc) {
  constexpr int64_t kBlock = 16384;
  // Row sums of A (a . 1) and column sums of B (1 . b), on VPDPBUSD too (the same bounds).
  const __m512i ones_s8 = _mm512_set1_epi8(1);
  const __m512i ones_u8 = _mm512_set1_epi8(1);
  auto dot_sum = [&](const void* row, bool a_side) {
    const uint8_t* p = static_cast<const uint8_t*>(row);
    int64_t total = 0;
    for (int64_t k0 = 0; k0 < K; k0 += kBlock) {
      const int64_t k1 = K - k0 < kBlock ? K : k0 + kBlock;
      __m512i s = _mm512_setzero_si512();
      int64_t k = k0;
      for (; k + 64 <= k1; k += 64) {
        const __m512i v = _mm512_loadu_si512(p + k);
        s = a_side ? _mm512_dpbusd_epi32(s, v, ones_s8) : _mm512_dpbusd_epi32(s, ones_u8, v);
      }
      if (k < k1) {
        const __mmask64 mask = (~0ULL) >> (64 - (k1 - k));
        const __m512i v = _mm512_maskz_loadu_epi8(mask, p + k);
        s = a_side ? _mm512_dpbusd_epi32(s, v, ones_s8) : _mm512_dpbusd_epi32(s, ones_u8, v);
      }
      total += _mm512_reduce_add_epi32(s);
    }
    return total;
  };
  std::vector<int64_t> rsum(static_cast<std::size_t>(M)), csum(static_cast<std::size_t>(N));
  for (int64_t m = 0; m < M; ++m) rsum[m] = dot_sum(a + m * lda, true);
  for (int64_t n = 0; n < N; ++n) csum[n] = dot_sum(b + n * ldb, false);
  for (int64_t m0 = 0; m0 < M; m0 += 4) {
    const int64_t mr = M - m0 < 4 ? M - m0 : 4;
    // Rows past M repeat the last row (computed, then dropped).
    const uint8_t* ar[4];
    for (int64_t r = 0; r < 4; ++r) ar[r] = a + (m0 + (r < mr ? r : mr - 1)) * lda;
    for (int64_t n = 0; n < N; ++n) {
      const int8_t* br = b + n * ldb;
      int64_t tot[4] = {0, 0, 0, 0};
      for (int64_t k0 = 0; k0 < K; k0 += kBlock) {
        const int64_t k1 = K - k0 < kBlock ? K : k0 + kBlock;
        __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
        __m512i s2 = _mm512_setzero_si512(), s3 = _mm512_setzero_si512();
        int64_t k = k0;
        for (; k + 64 <= k1; k += 64) {
          const __m512i bv = _mm512_loadu_si512(br + k);
          s0 = _mm512_dpbusd_epi32(s0, _mm512_loadu_si512(ar[0] + k), bv);
          s1 = _mm512_dpbusd_epi32(s1, _mm512_loadu_si512(ar[1] + k), bv);
          s2 = _mm512_dpbusd_epi32(s2, _mm512_loadu_si512(ar[2] + k), bv);
          s3 = _mm512_dpbusd_epi32(s3, _mm512_loadu_si512(ar[3] + k), bv);
        }
        if (k < k1) {
          const __mmask64 mask = (~0ULL) >> (64 - (k1 - k));  // 1..63 lanes
          const __m512i bv = _mm512_maskz_loadu_epi8(mask, br + k);
          s0 = _mm512_dpbusd_epi32(s0, _mm512_maskz_loadu_epi8(mask, ar[0] + k), bv);
          s1 = _mm512_dpbusd_epi32(s1, _mm512_maskz_loadu_epi8(mask, ar[1] + k), bv);
          s2 = _mm512_dpbusd_epi32(s2, _mm512_maskz_loadu_epi8(mask, ar[2] + k), bv);
          s3 = _mm512_dpbusd_epi32(s3, _mm512_maskz_loadu_epi8(mask, ar[3] + k), bv);
        }
        tot[0] += _mm512_reduce_add_epi32(s0);
        tot[1] += _mm512_reduce_add_epi32(s1);
        tot[2] += _mm512_reduce_add_epi32(s2);
        tot[3] += _mm512_reduce_add_epi32(s3);
      }
      const int64_t z = zb[n];
      const int64_t corr = K * static_cast<int64_t>(za) * z - static_cast<int64_t>(za) * csum[n];
      for (int64_t r = 0; r < mr; ++r) acc[(m0 + r) * ldc + n] = tot[r] - z * rsum[m0 + r] + corr;
    }
  }
}

}  // namespace
}  // namespace avx512vnni
}  // namespace gemm
}  // namespace kernels
}  // namespace qplugin

#define QPLUGIN_EXACT_GEMM_NS avx512vnni
#define QPLUGIN_EXACT_GEMM_ISA ::qplugin::kernels::Isa::kAvx512Vnni
#define QPLUGIN_EXACT_GEMM_NAME "xgemm_s64_4x1__avx512vnni"
#define QPLUGIN_EXACT_GEMM_U8S8_FN u8s8_vnni
#include "kernels/gemm/exact_gemm_impl.h"
