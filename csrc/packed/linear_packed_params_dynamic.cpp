// LinearPackedParams::gemm_f32 / gemm_i32: the packed int8 GEMM with a float- or int32-output
// epilogue
// (kernels/gemm/qgemm.h, QGemmEpilogue::out_f32), used by the dynamic linear ops
// (ops/cpu/linear_dynamic_kernel.cpp) and meant for ops that need the real-valued result before a
// nonlinearity. Changes with: linear_packed_params.h, kernels/gemm/qgemm.h.
#include <vector>

#include "driver/qgemm_parallel.h"
#include "packed/linear_packed_params.h"

namespace qplugin {

namespace {
// col_offset[n] = a_zp * colsum[n] - K * a_zp * w_zp[n], wrapped to int32 like the GEMM; computed
// as a_zp * (colsum[n] - K * w_zp[n]) in uint32 arithmetic (the same value mod 2^32), in plain
// loops the compiler vectorizes: at M = 1 this O(N) preparation was ~8% of the call.
void wrapped_col_offsets(int32_t a_zp, const int32_t* col_sums, int64_t K, int64_t N,
                         const int32_t* w_zp /* [N] or null */, int64_t w_zp_scalar,
                         int32_t* out) {
  const uint32_t az = static_cast<uint32_t>(a_zp);
  const uint32_t k32 = static_cast<uint32_t>(static_cast<uint64_t>(K));
  if (w_zp != nullptr) {
    for (int64_t n = 0; n < N; ++n) {
      const uint32_t t = static_cast<uint32_t>(col_sums[n]) - k32 * static_cast<uint32_t>(w_zp[n]);
      out[n] = static_cast<int32_t>(az * t);
    }
  } else {
    const uint32_t kz = k32 * static_cast<uint32_t>(static_cast<uint64_t>(w_zp_scalar));
    for (int64_t n = 0; n < N; ++n) {
      out[n] = static_cast<int32_t>(az * (static_cast<uint32_t>(col_sums[n]) - kz));
    }
  }
}
}  // namespace

void LinearPackedParams::gemm_f32(const uint8_t* a, int64_t lda, int64_t M, float a_scale,
                                  int32_t a_zp, bool relu, bool a_7bit, float* out,
                                  int64_t ldo) const {
  if (M <= 0 || N_ <= 0) return;
  // Per-call vectors, O(N): the input's qparams change with every call.
  // Per-thread buffers: the RNN ops call this once per time step (no allocation per call).
  thread_local std::vector<float> mult, zeros;
  thread_local std::vector<int32_t> col_offsets;
  mult.resize(static_cast<size_t>(N_));
  col_offsets.resize(static_cast<size_t>(N_));
  float* const mp = mult.data();
  // fbgemm's ReQuantizeForFloat multiplier: A_scale * B_scale[n] in float32.
  if (per_channel_) {
    const float* ws = w_scale_f_.data();
    for (int64_t n = 0; n < N_; ++n) mp[n] = a_scale * ws[n];
  } else {
    const float m0 = a_scale * w_scale_f_[0];
    for (int64_t n = 0; n < N_; ++n) mp[n] = m0;
  }
  const float* bias_p;
  if (bias_.has_value()) {
    bias_p = bias_->data_ptr<float>();  // [N] float32, contiguous (prepack)
  } else {
    if (static_cast<int64_t>(zeros.size()) < N_) zeros.assign(static_cast<size_t>(N_), 0.0f);
    bias_p = zeros.data();
  }
  wrapped_col_offsets(a_zp, col_sums_.data(), K_, N_, per_channel_ ? w_zp_i32_.data() : nullptr,
                      w_zp_, col_offsets.data());
  kernels::gemm::QGemmEpilogue e{col_offsets.data(),
                                 per_channel_ ? w_zp_i32_.data() : nullptr,
                                 static_cast<int32_t>(w_zp_),
                                 /*row_sums=*/nullptr,
                                 bias_p,
                                 mp,
                                 /*lo=*/0.0f,
                                 /*hi=*/0.0f,
                                 /*out_zp=*/0};
  e.a_7bit = a_7bit ? 1 : 0;
  e.out_f32 = 1;
  e.f32_relu = relu ? 1 : 0;
  driver::qgemm_parallel(*kernels_, a, lda, M, K_, packed_.data_ptr<int8_t>(), N_, e, any_w_zp_,
                      reinterpret_cast<uint8_t*>(out),
                      /*ldc=*/ldo * static_cast<int64_t>(sizeof(float)));
}

void LinearPackedParams::gemm_i32(const uint8_t* a, int64_t lda, int64_t M, int32_t a_zp,
                                  int32_t* out, int64_t ldo) const {
  if (M <= 0 || N_ <= 0) return;
  TORCH_INTERNAL_ASSERT(K_ <= kMaxExactI32K, "qplugin: gemm_i32 with K = ", K_);
  thread_local std::vector<int32_t> col_offsets;
  col_offsets.resize(static_cast<size_t>(N_));
  wrapped_col_offsets(a_zp, col_sums_.data(), K_, N_, per_channel_ ? w_zp_i32_.data() : nullptr,
                      w_zp_, col_offsets.data());
  kernels::gemm::QGemmEpilogue e{col_offsets.data(),
                                 per_channel_ ? w_zp_i32_.data() : nullptr,
                                 static_cast<int32_t>(w_zp_),
                                 /*row_sums=*/nullptr,
                                 /*bias_q=*/nullptr,
                                 /*mult=*/nullptr,
                                 /*lo=*/0.0f,
                                 /*hi=*/0.0f,
                                 /*out_zp=*/0};
  e.out_i32 = 1;
  driver::qgemm_parallel(*kernels_, a, lda, M, K_, packed_.data_ptr<int8_t>(), N_, e, any_w_zp_,
                         reinterpret_cast<uint8_t*>(out),
                         /*ldc=*/ldo * static_cast<int64_t>(sizeof(int32_t)));
}

}  // namespace qplugin
