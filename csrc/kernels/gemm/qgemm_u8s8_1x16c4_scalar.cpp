// Scalar (portable) GEMM kernel qgemm_u8s8_1x16c4__scalar: the reference every ISA must equal
// byte for byte, and the fallback on CPUs without AVX2. Built with the common flags (no ISA).
// Changes with: qgemm.h (contract), qgemm_generic.h (packing, epilogue).
#define QPLUGIN_ISA_NS scalar
#include "kernels/gemm/qgemm_generic.h"

namespace qplugin {
namespace kernels {
namespace gemm {
namespace scalar {
namespace {

constexpr int kNR = 16;
constexpr int kKR = 4;

// A: M x K u8 (lda); B: packed 16-column panels, k-groups of 4; C = requant(A·B), see qgemm.h.
void gemm(const uint8_t* a, int64_t lda, int64_t M, int64_t K, const int8_t* packed_b,
          int64_t N, int64_t n0, int64_t n1, const QGemmEpilogue& e, uint8_t* c, int64_t ldc) {
  const int64_t Kp = generic::round_up(K, kKR);
  for (int64_t p0 = n0; p0 < n1; p0 += kNR) {
    const int64_t width = N - p0 < kNR ? N - p0 : kNR;
    const int8_t* panel = packed_b + p0 * Kp;
    for (int64_t m = 0; m < M; ++m) {
      const uint8_t* ar = a + m * lda;
      // Wrapping int32 accumulation (as the vector kernels'), done in uint32 to avoid UB.
      uint32_t acc[kNR] = {0};
      for (int64_t k = 0; k < K; ++k) {
        const int8_t* bk = panel + (k / kKR) * width * kKR + (k % kKR);
        const uint32_t av = ar[k];
        for (int64_t j = 0; j < width; ++j) {
          acc[j] += av * static_cast<uint32_t>(static_cast<int32_t>(bk[j * kKR]));
        }
      }
      if (e.out_i32) {
        for (int64_t j = 0; j < width; ++j) {
          generic::store_i32_one(static_cast<int32_t>(acc[j]), m, p0 + j, e, c, ldc);
        }
        continue;
      }
      if (e.out_f32) {
        for (int64_t j = 0; j < width; ++j) {
          generic::store_f32_one(static_cast<int32_t>(acc[j]), m, p0 + j, e, c, ldc);
        }
        continue;
      }
      uint8_t* cr = c + m * ldc;
      for (int64_t j = 0; j < width; ++j) {
        cr[p0 + j] = generic::requant_one(static_cast<int32_t>(acc[j]), m, p0 + j, e);
      }
    }
  }
}

}  // namespace

const QGemmKernels& qgemm_table() {
  static const QGemmKernels t{Isa::kScalar,
                              "qgemm_u8s8_1x16c4__scalar",
                              /*mr=*/1,
                              kNR,
                              kKR,
                              &generic::packed_b_bytes<kNR, kKR>,
                              &generic::pack_b<kNR, kKR>,
                              &generic::row_sums,
                              &gemm};
  return t;
}

}  // namespace scalar
}  // namespace gemm
}  // namespace kernels
}  // namespace qplugin
