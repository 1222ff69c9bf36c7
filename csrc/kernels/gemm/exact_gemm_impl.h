// The exact GEMM body (exact_gemm.h), included once per ISA file inside that ISA's namespace and
// compiled with its flags. Written for the auto-vectorizer: int16 differences (staged once per
// 16 x 64 tile and k-chunk) multiplied into int32 sums (a widening multiply-add, VPMADDWD), four
// rows of A per column of B so each B load serves four dot products. An ISA file may replace the
// u8 x s8 kernel by defining QPLUGIN_EXACT_GEMM_U8S8_FN (exact_gemm_avx512vnni.cpp: VPDPBUSD).
// Changes with: exact_gemm.h, exact_gemm_<isa>.cpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/gemm/exact_gemm.h"

#ifndef QPLUGIN_EXACT_GEMM_NS
#error "define QPLUGIN_EXACT_GEMM_NS (the ISA namespace) before including exact_gemm_impl.h"
#endif

namespace qplugin {
namespace kernels {
namespace gemm {
namespace QPLUGIN_EXACT_GEMM_NS {
namespace {

// 16384 * 255 * 255 < 2^31: an int32 sum of this many products never overflows.
constexpr int64_t kKBlock = 16384;
// k-chunk staged as int16 differences: A [<= kMaxM][kChunk] and B [<= kMaxN][kChunk] (83 KB).
constexpr int64_t kChunk = 512;
constexpr int64_t kMaxM = 16, kMaxN = 64;

// One tile: M <= kMaxM rows, N <= kMaxN columns (the driver's tile, exact_gemm.cpp); larger
// problems are cut into such tiles here.
template <class TA, class TB>
void exact_tile(const TA* a, int64_t lda, int64_t M, int64_t K, int32_t za, const TB* b,
                int64_t ldb, int64_t N, const int32_t* zb, int64_t* acc, int64_t ldc) {
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) acc[m * ldc + n] = 0;
  // Heap, not stack: 83 KB would be a lot for threads with small stacks.
  std::vector<int16_t> abuf(static_cast<std::size_t>((kMaxM + 3) * kChunk));
  std::vector<int16_t> bbuf(static_cast<std::size_t>(kMaxN * kChunk));
  int16_t* ad[kMaxM + 3];
  int16_t* bd[kMaxN];
  for (int64_t r = 0; r < kMaxM + 3; ++r) ad[r] = abuf.data() + r * kChunk;
  for (int64_t n = 0; n < kMaxN; ++n) bd[n] = bbuf.data() + n * kChunk;
  const int64_t Mp = (M + 3) / 4 * 4;
  for (int64_t k0 = 0; k0 < K; k0 += kChunk) {
    const int64_t kc = K - k0 < kChunk ? K - k0 : kChunk;
    // Differences from the zero points, once per chunk; A padded to a multiple of 4 rows.
    for (int64_t r = 0; r < Mp; ++r) {
      if (r < M) {
        const TA* ar = a + r * lda + k0;
        for (int64_t k = 0; k < kc; ++k)
          ad[r][k] = static_cast<int16_t>(static_cast<int32_t>(ar[k]) - za);
      } else {
        for (int64_t k = 0; k < kc; ++k) ad[r][k] = 0;
      }
    }
    for (int64_t n = 0; n < N; ++n) {
      const TB* br = b + n * ldb + k0;
      const int32_t z = zb[n];
      for (int64_t k = 0; k < kc; ++k)
        bd[n][k] = static_cast<int16_t>(static_cast<int32_t>(br[k]) - z);
    }
    // kChunk <= kKBlock: each chunk's int32 sums are exact; chunks add up in int64.
    for (int64_t m0 = 0; m0 < Mp; m0 += 4) {
      const int64_t mr = M - m0 < 4 ? M - m0 : 4;
      for (int64_t n = 0; n < N; ++n) {
        const int16_t* bv = bd[n];
        int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (int64_t k = 0; k < kc; ++k) {
          const int32_t v = bv[k];
          s0 += static_cast<int32_t>(ad[m0][k]) * v;
          s1 += static_cast<int32_t>(ad[m0 + 1][k]) * v;
          s2 += static_cast<int32_t>(ad[m0 + 2][k]) * v;
          s3 += static_cast<int32_t>(ad[m0 + 3][k]) * v;
        }
        int64_t* c = acc + m0 * ldc + n;
        c[0] += s0;
        if (mr > 1) c[ldc] += s1;
        if (mr > 2) c[2 * ldc] += s2;
        if (mr > 3) c[3 * ldc] += s3;
      }
    }
  }
  static_assert(kChunk <= kKBlock, "chunk sums must stay exact in int32");
}

template <class TA, class TB>
void exact_gemm_impl(const TA* a, int64_t lda, int64_t M, int64_t K, int32_t za, const TB* b,
                     int64_t ldb, int64_t N, const int32_t* zb, int64_t* acc, int64_t ldc) {
  for (int64_t m0 = 0; m0 < M; m0 += kMaxM) {
    const int64_t mc = M - m0 < kMaxM ? M - m0 : kMaxM;
    for (int64_t n0 = 0; n0 < N; n0 += kMaxN) {
      const int64_t nc = N - n0 < kMaxN ? N - n0 : kMaxN;
      exact_tile(a + m0 * lda, lda, mc, K, za, b + n0 * ldb, ldb, nc, zb + n0,
                 acc + m0 * ldc + n0, ldc);
    }
  }
}

void u8s8(const uint8_t* a, int64_t lda, int64_t M, int64_t K, int32_t za, const int8_t* b,
          int64_t ldb, int64_t N, const int32_t* zb, int64_t* acc, int64_t ldc) {
  exact_gemm_impl(a, lda, M, K, za, b, ldb, N, zb, acc, ldc);
}
void u8u8(const uint8_t* a, int64_t lda, int64_t M, int64_t K, int32_t za, const uint8_t* b,
          int64_t ldb, int64_t N, const int32_t* zb, int64_t* acc, int64_t ldc) {
  exact_gemm_impl(a, lda, M, K, za, b, ldb, N, zb, acc, ldc);
}
void s8s8(const int8_t* a, int64_t lda, int64_t M, int64_t K, int32_t za, const int8_t* b,
          int64_t ldb, int64_t N, const int32_t* zb, int64_t* acc, int64_t ldc) {
  exact_gemm_impl(a, lda, M, K, za, b, ldb, N, zb, acc, ldc);
}

}  // namespace

const ExactGemmKernels& exact_gemm_table() {
#ifndef QPLUGIN_EXACT_GEMM_U8S8_FN
#define QPLUGIN_EXACT_GEMM_U8S8_FN u8s8
#endif
  static const ExactGemmKernels t{QPLUGIN_EXACT_GEMM_ISA, QPLUGIN_EXACT_GEMM_NAME,
                                  &QPLUGIN_EXACT_GEMM_U8S8_FN, &u8u8, &s8s8};
  return t;
}

}  // namespace QPLUGIN_EXACT_GEMM_NS
}  // namespace gemm
}  // namespace kernels
}  // namespace qplugin
