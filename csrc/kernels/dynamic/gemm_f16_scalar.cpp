// Scalar fp16-weight GEMM: the reference of gemm_f16.h (std::fma, k in order).
#include <cmath>

#include "kernels/dynamic/gemm_f16.h"

namespace qplugin {
namespace kernels {
namespace dynamic {
namespace scalar {
namespace {

void gemm(const float* a, int64_t lda, int64_t M, int64_t K, const uint16_t* wp, int64_t N,
          const float* bias, bool relu, float* c, int64_t ldc) {
  for (int64_t m = 0; m < M; ++m) {
    const float* ar = a + m * lda;
    for (int64_t n = 0; n < N; ++n) {
      const uint16_t* w = wp + (n / kF16Panel) * K * kF16Panel + n % kF16Panel;
      float s = 0.0f;
      for (int64_t k = 0; k < K; ++k) s = std::fma(ar[k], f16_to_f32(w[k * kF16Panel]), s);
      if (bias) s += bias[n];
      if (relu && s < 0.0f) s = 0.0f;
      c[m * ldc + n] = s;
    }
  }
}

}  // namespace

const F16GemmKernels& f16_gemm_table() {
  static const F16GemmKernels t{Isa::kScalar, &gemm};
  return t;
}

}  // namespace scalar
}  // namespace dynamic
}  // namespace kernels
}  // namespace qplugin
