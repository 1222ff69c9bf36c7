// LinearPackedParams: validation, packing, apply (the linear ops), unpack and the pickled state.
// Changes with: linear_packed_params.h, library.cpp, kernels/gemm/qgemm.h.
#include "packed/linear_packed_params.h"

#include <cmath>
#include <limits>

#include "common/checks.h"
#include "packed/serialization.h"
#include "driver/qgemm_parallel.h"

namespace qplugin {

namespace {

using kernels::gemm::QGemmEpilogue;
using kernels::gemm::QGemmKernels;

}  // namespace

c10::intrusive_ptr<LinearPackedParams> LinearPackedParams::prepack(
    const at::Tensor& weight, const c10::optional<at::Tensor>& bias, const char* op) {
  packed::check_qint8_weight(weight, op);
  TORCH_CHECK(weight.dim() == 2, "qplugin::", op,
              ": expected 2-D weight [out_features, in_features], got ", weight.dim(),
              "-D; flatten or reshape the weight first");
  auto p = c10::make_intrusive<LinearPackedParams>();
  const int64_t N = weight.size(0), K = weight.size(1);
  p->N_ = N;
  p->K_ = K;

  const auto qscheme = weight.qscheme();
  if (qscheme == at::kPerTensorAffine) {
    p->per_channel_ = false;
    p->w_scale_ = weight.q_scale();
    p->w_zp_ = weight.q_zero_point();
    packed::check_weight_scale(op, p->w_scale_, "");
    packed::check_weight_zp(op, p->w_zp_, "");
    p->w_scale_f_ = {static_cast<float>(p->w_scale_)};
    p->any_w_zp_ = p->w_zp_ != 0;
  } else if (qscheme == at::kPerChannelAffine) {
    TORCH_CHECK(weight.q_per_channel_axis() == 0, "qplugin::", op,
                ": expected a per-channel weight quantized along axis 0 (output channels), got "
                "axis ", weight.q_per_channel_axis());
    p->per_channel_ = true;
    p->w_scales_ = weight.q_per_channel_scales().to(at::kDouble).contiguous().clone();
    p->w_zps_ = weight.q_per_channel_zero_points().to(at::kLong).contiguous().clone();
    TORCH_CHECK(p->w_scales_.numel() == N && p->w_zps_.numel() == N, "qplugin::", op,
                ": expected ", N, " per-channel scales and zero points, got ",
                p->w_scales_.numel(), " and ", p->w_zps_.numel());
    const double* s = p->w_scales_.data_ptr<double>();
    const int64_t* z = p->w_zps_.data_ptr<int64_t>();
    p->w_scale_f_.resize(static_cast<size_t>(N));
    p->w_zp_i32_.resize(static_cast<size_t>(N));
    for (int64_t n = 0; n < N; ++n) {
      const std::string at = packed::at_channel("output channel", n);
      packed::check_weight_scale(op, s[n], at);
      packed::check_weight_zp(op, z[n], at);
      p->w_scale_f_[n] = static_cast<float>(s[n]);
      p->w_zp_i32_[n] = static_cast<int32_t>(z[n]);
      p->any_w_zp_ = p->any_w_zp_ || z[n] != 0;
    }
  } else {
    TORCH_CHECK_NOT_IMPLEMENTED(false, "qplugin::", op,
                                ": expected a weight quantized per tensor (torch.per_tensor_affine)"
                                " or per channel along axis 0 (torch.per_channel_affine), got ",
                                c10::toString(qscheme));
  }

  p->bias_ = packed::checked_bias(bias, p->N_, "out_features", op);

  const at::Tensor w = weight.int_repr().contiguous();
  p->pack_codes_(reinterpret_cast<const int8_t*>(w.data_ptr()), /*ldw=*/K);
  return p;
}

c10::intrusive_ptr<LinearPackedParams> LinearPackedParams::from_codes(const int8_t* w,
                                                                       int64_t ldw, int64_t N,
                                                                       int64_t K, double scale,
                                                                       int64_t zp) {
  TORCH_INTERNAL_ASSERT(N >= 0 && K >= 0 && ldw >= K && zp >= -128 && zp <= 127);
  auto p = c10::make_intrusive<LinearPackedParams>();
  p->N_ = N;
  p->K_ = K;
  p->per_channel_ = false;
  p->w_scale_ = scale;
  p->w_zp_ = zp;
  p->w_scale_f_ = {static_cast<float>(scale)};
  p->any_w_zp_ = zp != 0;
  p->pack_codes_(w, ldw);
  return p;
}

void LinearPackedParams::pack_codes_(const int8_t* w, int64_t ldw) {
  const QGemmKernels& k = kernels::gemm::qgemm_kernels_for(kernels::current_isa());
  kernels_ = &k;
  packed_ = at::empty({k.packed_b_bytes(K_, N_)}, at::device(at::kCPU).dtype(at::kChar));
  col_sums_.resize(static_cast<size_t>(N_));
  k.pack_b(w, ldw, K_, N_, packed_.data_ptr<int8_t>(), col_sums_.data());
}

template <bool ReluFused>
at::Tensor LinearPackedParams::apply(const QArg& x, double output_scale,
                                     int64_t output_zero_point) const {
  const char* op = x.is_plain() ? (ReluFused ? "linear_relu.plain" : "linear.plain")
                                : (ReluFused ? "linear_relu" : "linear");
  checks::check_linear_input(op, x, N_, K_);
  checks::check_output_qparams(op, output_scale, output_zero_point, at::kQUInt8);
  const double in_scale = x.q_scale();

  std::vector<int64_t> out_sizes(x.sizes().begin(), x.sizes().end());
  out_sizes.back() = N_;
  checks::check_numel(op, "an output (batch..., out_features)", out_sizes);  // checks.h
  at::Tensor y = new_output(x, out_sizes, at::kQUInt8, output_scale, output_zero_point);
  int64_t M = 1;
  for (int64_t d = 0; d + 1 < x.dim(); ++d) M *= x.size(d);
  if (M == 0 || N_ == 0) return y;

  // A as M x K rows with stride lda: a 2-D input with unit column stride is used in place.
  at::Tensor a;
  int64_t lda = K_;
  if (x.dim() == 2 && x.stride(1) == 1 && x.stride(0) >= K_) {
    a = x.tensor();
    lda = x.stride(0);
  } else {
    a = x.tensor().contiguous();
  }

  const auto rq = requant_for(op, in_scale, x.q_zero_point(), output_scale);
  const int64_t qmin = 0, qmax = 255;
  const int64_t lo = ReluFused ? std::max<int64_t>(qmin, output_zero_point) : qmin;
  QGemmEpilogue e{rq->col_offsets.data(),
                  per_channel_ ? w_zp_i32_.data() : nullptr,
                  static_cast<int32_t>(w_zp_),
                  /*row_sums=*/nullptr,
                  rq->bias_q.data(),
                  rq->mult.data(),
                  static_cast<float>(lo - output_zero_point),
                  static_cast<float>(qmax - output_zero_point),
                  static_cast<int32_t>(output_zero_point)};
  driver::qgemm_parallel(*kernels_, reinterpret_cast<const uint8_t*>(a.data_ptr()), lda, M, K_,
                      packed_.data_ptr<int8_t>(), N_, e, any_w_zp_,
                      reinterpret_cast<uint8_t*>(out_ptr(y)), /*ldc=*/N_);
  return y;
}

std::shared_ptr<const LinearPackedParams::Requant> LinearPackedParams::requant_for(
    const char* op, double in_scale, int64_t in_zp, double out_scale) const {
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_ && cache_->in_scale == in_scale && cache_->in_zp == in_zp &&
        cache_->out_scale == out_scale) {
      return cache_;
    }
  }
  const float sa = static_cast<float>(in_scale);
  TORCH_CHECK(std::isfinite(in_scale) && in_scale > 0 && sa > 0.0f && std::isfinite(sa),
              "qplugin::", op, ": expected input with a finite, positive scale, got ", in_scale);
  auto r = std::make_shared<Requant>();
  r->in_scale = in_scale;
  r->in_zp = in_zp;
  r->out_scale = out_scale;
  // Rounding order as PyTorch's fbgemm path: v = (acc + bias / (s_a * s_w)) * ((s_a * s_w) /
  // s_out), all in float32, so that outputs agree with torch.ops.quantized.linear bit for bit in
  // practice (every order gives the same real number; only float rounding near .5 differs).
  const float so = static_cast<float>(out_scale);
  const int32_t za = static_cast<int32_t>(in_zp);
  const float* bias = bias_.has_value() ? bias_->data_ptr<float>() : nullptr;
  r->mult.resize(static_cast<size_t>(N_));
  r->bias_q.resize(static_cast<size_t>(N_));
  r->col_offsets.resize(static_cast<size_t>(N_));
  float* mult = r->mult.data();
  float* bq = r->bias_q.data();
  bool finite = true;
  if (!per_channel_) {
    const float atw = sa * w_scale_f_[0];
    const float m = atw / so;
    const float rcp = static_cast<float>(1.0 / static_cast<double>(atw));
    finite = atw > 0.0f && std::isfinite(m) && std::isfinite(rcp);
    for (int64_t n = 0; n < N_; ++n) {
      mult[n] = m;
      bq[n] = bias != nullptr ? bias[n] * rcp : 0.0f;
    }
  } else {
    for (int64_t n = 0; n < N_; ++n) {
      const float atw = sa * w_scale_f_[n];
      mult[n] = atw / so;
      bq[n] = bias != nullptr ? bias[n] / atw : 0.0f;
      finite = finite && atw > 0.0f && std::isfinite(mult[n]);
    }
  }
  TORCH_CHECK(finite, "qplugin::", op,
              ": expected input_scale * weight_scale and its ratio to output_scale to be finite "
              "and non-zero in float32, got input scale ", in_scale, " and output scale ",
              out_scale);
  // col_offsets[n] = a_zp * colsum[n] - K * a_zp * w_zp[n], wrapped to int32 like the GEMM.
  for (int64_t n = 0; n < N_; ++n) {
    const int64_t zw = per_channel_ ? w_zp_i32_[n] : w_zp_;
    const int64_t v = static_cast<int64_t>(za) * col_sums_[n] - K_ * za * zw;
    r->col_offsets[n] = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v)));
  }
  std::shared_ptr<const Requant> out = std::move(r);
  std::lock_guard<std::mutex> lock(cache_mutex_);
  cache_ = out;
  return out;
}

template at::Tensor LinearPackedParams::apply<false>(const QArg&, double, int64_t) const;
template at::Tensor LinearPackedParams::apply<true>(const QArg&, double, int64_t) const;

std::tuple<at::Tensor, c10::optional<at::Tensor>> LinearPackedParams::unpack() const {
  const auto opts = at::device(at::kCPU).dtype(at::kQInt8);
  at::Tensor w = per_channel_
                     ? at::_empty_per_channel_affine_quantized({N_, K_}, w_scales_.clone(),
                                                               w_zps_.clone(), /*axis=*/0, opts)
                     : at::_empty_affine_quantized({N_, K_}, opts, w_scale_, w_zp_);
  int8_t* dst = reinterpret_cast<int8_t*>(w.data_ptr());
  const int8_t* src = packed_.data_ptr<int8_t>();
  const int64_t kr = kernels_->kr, nr = kernels_->nr;
  const int64_t Kp = (K_ + kr - 1) / kr * kr;
  // Walk the packed buffer in order (panels, k-groups, columns, k within the group); the
  // offset of every element is kernels::gemm::packed_b_offset(n, k, N, Kp, nr, kr).
  for (int64_t p0 = 0; p0 < N_; p0 += nr) {
    const int64_t width = std::min(nr, N_ - p0);
    const int8_t* s = src + p0 * Kp;
    for (int64_t kg = 0; kg < Kp; kg += kr) {
      for (int64_t c = 0; c < width; ++c, s += kr) {
        int8_t* d = dst + (p0 + c) * K_ + kg;
        const int64_t cnt = std::min(kr, K_ - kg);  // the padding of the last group is dropped
        for (int64_t r = 0; r < cnt; ++r) d[r] = s[r];
      }
    }
  }
  c10::optional<at::Tensor> b;
  if (bias_.has_value()) b = bias_->clone();
  return {w, b};
}

std::shared_ptr<const LinearPackedParams::RowMajor> LinearPackedParams::row_major() const {
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (row_major_) return row_major_;
  }
  auto r = std::make_shared<RowMajor>();
  const at::Tensor w = std::get<0>(unpack());
  r->codes = w.int_repr().contiguous();
  r->zp.resize(static_cast<size_t>(N_));
  r->scale.resize(static_cast<size_t>(N_));
  for (int64_t n = 0; n < N_; ++n) {
    r->zp[n] = per_channel_ ? w_zp_i32_[n] : static_cast<int32_t>(w_zp_);
    r->scale[n] = per_channel_ ? w_scales_.data_ptr<double>()[n] : w_scale_;
  }
  std::shared_ptr<const RowMajor> out = std::move(r);
  std::lock_guard<std::mutex> lock(cache_mutex_);
  if (!row_major_) row_major_ = out;
  return row_major_;
}

int64_t LinearPackedParams::packed_size_bytes() const {
  int64_t bytes = packed_.numel();
  bytes += static_cast<int64_t>(col_sums_.size() * sizeof(int32_t));
  bytes += static_cast<int64_t>(w_scale_f_.size() * sizeof(float));
  bytes += static_cast<int64_t>(w_zp_i32_.size() * sizeof(int32_t));
  if (per_channel_) bytes += w_scales_.nbytes() + w_zps_.nbytes();
  if (bias_.has_value()) bytes += bias_->nbytes();
  return bytes;
}

}  // namespace qplugin
