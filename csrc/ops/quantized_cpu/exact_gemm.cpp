// Threaded driver of the exact int64 GEMM (exact_gemm.h -> kernels/gemm/exact_gemm.h): tiles of
// 16 rows x 64 columns over at::parallel_for, each computed by the current ISA's kernel (all
// ISAs give identical results: integer math). Changes with: exact_gemm.h,
// kernels/gemm/exact_gemm*.
#include "ops/quantized_cpu/exact_gemm.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <type_traits>

#include "kernels/gemm/exact_gemm.h"

namespace qplugin {
namespace ops {

namespace {
constexpr int64_t kTileM = 16, kTileN = 64;

template <class TA, class TB>
auto kernel_of(const kernels::gemm::ExactGemmKernels& k) {
  if constexpr (std::is_same<TA, uint8_t>::value && std::is_same<TB, int8_t>::value) {
    return k.u8s8;
  } else if constexpr (std::is_same<TA, uint8_t>::value) {
    return k.u8u8;
  } else {
    return k.s8s8;
  }
}
}  // namespace

template <class TA, class TB>
void exact_gemm_s64(const TA* a, int64_t lda, int64_t M, int64_t K, int32_t za, const TB* b,
                    int64_t ldb, int64_t N, const int32_t* zb, int64_t* acc, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  const auto fn = kernel_of<TA, TB>(
      kernels::gemm::exact_gemm_kernels_for(kernels::current_isa()));
  const int64_t tm = (M + kTileM - 1) / kTileM, tn = (N + kTileN - 1) / kTileN;
  // About 2^16 multiply-adds per task at least.
  const int64_t grain =
      std::max<int64_t>(1, (int64_t{1} << 16) / (kTileM * kTileN * std::max<int64_t>(K, 1)));
  at::parallel_for(0, tm * tn, grain, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t m0 = (t / tn) * kTileM, n0 = (t % tn) * kTileN;
      const int64_t mc = std::min(kTileM, M - m0), nc = std::min(kTileN, N - n0);
      fn(a + m0 * lda, lda, mc, K, za, b + n0 * ldb, ldb, nc, zb + n0, acc + m0 * ldc + n0, ldc);
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
