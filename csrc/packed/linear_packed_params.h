// LinearPackedParams (torchbind class qplugin.LinearPackedParams): a qint8 Linear weight packed for
// the GEMM kernel chosen at prepack time, its quantization parameters and the fp32 bias.
// Changes with: linear_packed_params.cpp, library.cpp (class registration and pickling),
// ops/linear.cpp (schemas), qplugin/nn/modules/linear.py.
//
// Memory: the packed weight is N * round_up(K, 4) + 64 bytes (the int8 weight plus at most 3 bytes
// per output channel); the rest is O(out_features): column sums, scales and zero points (as given,
// for a bit-exact unpack, and as the kernels use them) and the bias. No float copy of the weight
// and no second copy of the int8 weight is kept: unpack() rebuilds it from the packed buffer.
//
// Pickled state (never the packed bytes or the ISA; repacked on load for the running CPU):
//   version 1: (1, weight: qint8 [out, in] per-tensor or per-channel (axis 0),
//               bias: float32 [out] or None)
#pragma once
#include <ATen/ATen.h>
#include <torch/custom_class.h>

#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "common/qarg.h"
#include "kernels/gemm/qgemm.h"
#include "packed/linear_params_base.h"

namespace qplugin {

struct LinearPackedParams : LinearParamsBase<LinearPackedParams> {
  // Validates and packs (op names the caller in error messages). Kernels of the current ISA.
  static Ptr prepack(const at::Tensor& weight, const c10::optional<at::Tensor>& bias,
                     const char* op);

  // A per-tensor weight given as raw int8 codes [N][K] (row stride ldw), no bias and no
  // validation (the caller's job): the packed GEMM for an op whose right operand is an
  // activation (matmul, gemm_i32). unpack/getstate are not meant for it.
  static Ptr from_codes(const int8_t* w, int64_t ldw, int64_t N, int64_t K, double scale,
                        int64_t zp);

  // y = requant(x @ W^T + b) over the last dimension of x (quint8 / uint8 codes, any zero point;
  // either door, validated by the caller: QArg, common/qarg.h). The output is on x's door.
  template <bool ReluFused>
  at::Tensor apply(const QArg& x, double output_scale, int64_t output_zero_point) const;

  // Float-output GEMM over the packed weight (linear_packed_params_dynamic.cpp; the dynamic ops):
  //   out[m][n] = float(sum_k (a[m][k] - a_zp) * (W[n][k] - w_zp[n])) * (a_scale * s_w[n])
  //               + bias[n]                       (exact int32 sum; then max(0, .) when relu)
  // a: M x K u8 codes, row stride lda; out: M x N float32, row stride ldo (elements).
  // a_7bit: every byte of a is <= 127 (lets the AVX2 kernel skip its scan).
  void gemm_f32(const uint8_t* a, int64_t lda, int64_t M, float a_scale, int32_t a_zp,
                bool relu, bool a_7bit, float* out, int64_t ldo) const;

  // Exact int32 GEMM over the packed weight (QGemmEpilogue::out_i32; linear_leaky_relu /
  // linear_tanh finish in double):
  //   out[m][n] = sum_k (a[m][k] - a_zp) * (W[n][k] - w_zp[n])
  // exact when K <= kMaxExactI32K (checked by the caller). a: M x K u8 codes, row stride lda;
  // out: M x N int32, row stride ldo (elements).
  static constexpr int64_t kMaxExactI32K = 33025;  // 33025 * 255 * 255 < 2^31
  void gemm_i32(const uint8_t* a, int64_t lda, int64_t M, int32_t a_zp, int32_t* out,
                int64_t ldo) const;

  // The weight (bit-exact: same int8 values, scales, zero points and qscheme) and bias.
  // getstate, in_features/out_features/bias: LinearParamsBase.
  std::tuple<at::Tensor, c10::optional<at::Tensor>> unpack() const;
  static Ptr setstate(const c10::IValue& state) {
    return setstate_as(state, "LinearPackedParams.__setstate__", "a qint8 weight tensor");
  }

  // The weight is quantized per output channel (else per tensor); for __obj_flatten__.
  bool per_channel() const { return per_channel_; }
  // Bytes held: the packed weight plus the O(out_features) vectors.
  int64_t packed_size_bytes() const;
  // Bytes of the packed weight buffer alone.
  int64_t packed_weight_bytes() const { return packed_.numel(); }
  // Name of the kernel chosen at prepack, e.g. "qgemm_u8s8_6x64c4__avx512vnni".
  std::string kernel_name() const { return kernels_->name; }

  // The weight as int8 [N][K] row-major codes with per-output-channel zero points and scales,
  // for the ops that need exact accumulators instead of the packed GEMM (linear_leaky_relu,
  // linear_tanh: ops/quantized_cpu/linear_kernel.cpp). Built from the packed buffer on first use
  // and kept: N * K more bytes, only for layers that run those ops.
  struct RowMajor {
    at::Tensor codes;              // int8 [N, K] contiguous
    std::vector<int32_t> zp;       // [N]
    std::vector<double> scale;     // [N]
  };
  std::shared_ptr<const RowMajor> row_major() const;

 private:
  // Per-call requantization vectors (qgemm.h), which depend on the input scale and zero point
  // and the output scale. Static quantization calls a layer with the same qparams every time,
  // so the last set is cached (one entry; O(out_features); computing it costs two float
  // divisions per output channel, ~10 us at N = 3072 against a ~25 us GEMV).
  struct Requant {
    double in_scale;
    int64_t in_zp;
    double out_scale;
    std::vector<float> mult, bias_q;
    std::vector<int32_t> col_offsets;
  };
  std::shared_ptr<const Requant> requant_for(const char* op, double in_scale, int64_t in_zp,
                                             double out_scale) const;
  // Packs codes [N_][K_] (row stride ldw) with the current ISA's kernels (sets kernels_,
  // packed_, col_sums_).
  void pack_codes_(const int8_t* w, int64_t ldw);
  mutable std::mutex cache_mutex_;
  mutable std::shared_ptr<const Requant> cache_;
  mutable std::shared_ptr<const RowMajor> row_major_;  // row_major(), under cache_mutex_

  const kernels::gemm::QGemmKernels* kernels_ = nullptr;
  at::Tensor packed_;                // int8 [packed_b_bytes]
  std::vector<int32_t> col_sums_;    // [N] sum_k W[n][k]
  bool per_channel_ = false;
  // As given (for unpack): per-tensor: w_scale_, w_zp_; per-channel: double [N] / int64 [N].
  double w_scale_ = 1.0;
  int64_t w_zp_ = 0;
  at::Tensor w_scales_;
  at::Tensor w_zps_;
  // As the kernels use them: float scales, int32 zero points, one per output channel.
  std::vector<float> w_scale_f_;
  std::vector<int32_t> w_zp_i32_;
  bool any_w_zp_ = false;
};

}  // namespace qplugin
