// Exact int64-accumulating GEMM (exact_gemm.h): dot products of zero-point-corrected rows.
// Changes with: exact_gemm.h.
#include "ops/quantized_cpu/exact_gemm.h"

#include <ATen/Parallel.h>

#include <algorithm>

namespace qplugin {
namespace ops {

namespace {
// 16384 * 255 * 255 < 2^31: an int32 partial sum of this many products never overflows.
constexpr int64_t kKBlock = 16384;
}  // namespace

template <class TA, class TB>
void exact_gemm_s64(const TA* a, int64_t lda, int64_t M, int64_t K, int32_t za, const TB* b,
                    int64_t ldb, int64_t N, const int32_t* zb, int64_t* acc, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(K, 1));
  at::parallel_for(0, M * N, grain, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t m = i / N, n = i % N;
      const TA* ar = a + m * lda;
      const TB* br = b + n * ldb;
      const int32_t zbn = zb[n];
      int64_t total = 0;
      for (int64_t k0 = 0; k0 < K; k0 += kKBlock) {
        const int64_t k1 = std::min(K, k0 + kKBlock);
        int32_t s = 0;
        for (int64_t k = k0; k < k1; ++k) {
          s += (static_cast<int32_t>(ar[k]) - za) * (static_cast<int32_t>(br[k]) - zbn);
        }
        total += s;
      }
      acc[m * ldc + n] = total;
    }
  });
}

template void exact_gemm_s64<uint8_t, int8_t>(const uint8_t*, int64_t, int64_t, int64_t, int32_t,
                                              const int8_t*, int64_t, int64_t, const int32_t*,
                                              int64_t*, int64_t);
template void exact_gemm_s64<uint8_t, uint8_t>(const uint8_t*, int64_t, int64_t, int64_t,
                                               int32_t, const uint8_t*, int64_t, int64_t,
                                               const int32_t*, int64_t*, int64_t);
template void exact_gemm_s64<int8_t, int8_t>(const int8_t*, int64_t, int64_t, int64_t, int32_t,
                                             const int8_t*, int64_t, int64_t, const int32_t*,
                                             int64_t*, int64_t);

}  // namespace ops
}  // namespace qplugin
