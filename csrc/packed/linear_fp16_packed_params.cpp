// LinearPackedParamsFp16: validation, fp16 rounding, apply, unpack and the pickled state.
// Changes with: linear_fp16_packed_params.h.
#include "packed/linear_fp16_packed_params.h"

#include <ATen/Parallel.h>

#include <algorithm>

#include "kernels/dynamic/gemm_f16.h"
#include "driver/output_pool.h"
#include "packed/serialization.h"

namespace qplugin {

namespace {
constexpr double kFp16Max = 65504.0;
}  // namespace

c10::intrusive_ptr<LinearPackedParamsFp16> LinearPackedParamsFp16::prepack(
    const at::Tensor& weight, const c10::optional<at::Tensor>& bias, const char* op) {
  TORCH_CHECK(weight.defined(), "qplugin::", op, ": expected a weight tensor, got None");
  TORCH_CHECK(!weight.is_quantized() && weight.scalar_type() == at::kFloat, "qplugin::", op,
              ": expected a float32 weight, got ", c10::toString(weight.scalar_type()),
              "; pass weight.float()");
  TORCH_CHECK(weight.device().is_cpu(), "qplugin::", op, ": expected weight on the CPU, got ",
              weight.device());
  TORCH_CHECK(weight.dim() == 2, "qplugin::", op,
              ": expected 2-D weight [out_features, in_features], got ", weight.dim(), "-D");
  auto p = c10::make_intrusive<LinearPackedParamsFp16>();
  // As PyTorch: values beyond the fp16 range saturate to +-65504 (NaN stays NaN).
  p->w_half_ = weight.detach().clamp(-kFp16Max, kFp16Max).to(at::kHalf).contiguous();
  const int64_t N = p->w_half_.size(0), K = p->w_half_.size(1);
  p->N_ = N;
  p->K_ = K;
  const int64_t panels = (N + kernels::dynamic::kF16Panel - 1) / kernels::dynamic::kF16Panel;
  p->w_panels_ =
      at::empty({panels * K * kernels::dynamic::kF16Panel}, weight.options().dtype(at::kHalf));
  kernels::dynamic::pack_f16_panels(reinterpret_cast<const uint16_t*>(p->w_half_.data_ptr()), N, K,
                                    reinterpret_cast<uint16_t*>(p->w_panels_.data_ptr()));
  p->bias_ = packed::checked_bias(bias, p->N_, "out_features", op);
  return p;
}

template <bool ReluFused>
at::Tensor LinearPackedParamsFp16::apply(const at::Tensor& x) const {
  const char* op = ReluFused ? "linear_relu_dynamic_fp16" : "linear_dynamic_fp16";
  TORCH_CHECK(x.defined() && !x.is_quantized() && x.scalar_type() == at::kFloat, "qplugin::", op,
              ": expected a float32 input, got ",
              x.defined() ? c10::toString(x.scalar_type()) : "None");
  TORCH_CHECK(x.device().is_cpu(), "qplugin::", op, ": expected input on the CPU, got ",
              x.device());
  TORCH_CHECK(x.dim() >= 2, "qplugin::", op,
              ": expected input of rank >= 2 (batch, ..., in_features), got ", x.dim(),
              "-D; unsqueeze a 1-D input to (1, in_features)");
  TORCH_CHECK(x.size(-1) == in_features(), "qplugin::", op,
              ": expected input with in_features = ", in_features(),
              " in its last dimension (weight is [", out_features(), ", ", in_features(),
              "]), got ", x.size(-1), " (input shape ", x.sizes(), ")");
  std::vector<int64_t> out_sizes(x.sizes().begin(), x.sizes().end());
  out_sizes.back() = out_features();
  at::Tensor y = driver::empty_pooled_float(out_sizes);  // x is float32 (checked above)
  const int64_t M = c10::multiply_integers(x.sizes().slice(0, x.dim() - 1));
  const int64_t N = out_features();
  if (M == 0 || N == 0) return y;
  const at::Tensor xc = x.contiguous();
  gemm_into(xc.data_ptr<float>(), M, ReluFused, y.data_ptr<float>(), N);
  return y;
}

void LinearPackedParamsFp16::gemm_into(const float* a, int64_t M, bool relu, float* c,
                                       int64_t ldc) const {
  const int64_t N = out_features(), K = in_features();
  if (M == 0 || N == 0) return;
  const uint16_t* wp = reinterpret_cast<const uint16_t*>(w_panels_.data_ptr());
  const float* bias = bias_.has_value() ? bias_->data_ptr<float>() : nullptr;
  const auto& kern = kernels::dynamic::f16_gemm_kernels();
  const auto& gemm = kern.gemm;
  // Work items: blocks of 64 columns (4 panels: a tile's width) by chunks of 96 rows; each item
  // is the same arithmetic whatever the split, so the thread count never changes the bits.
  // Tall calls with enough column blocks to share take all rows in one item where the kernel
  // prefers it (tall_rows: the AVX2 kernel then converts a column block's weights to fp32 once
  // for all rows, gemm_f16_avx2.cpp).
  constexpr int64_t kCols = 4 * kernels::dynamic::kF16Panel;
  const int64_t col_blocks = (N + kCols - 1) / kCols;
  const int64_t kRows = kern.tall_rows > 0 && M >= kern.tall_rows && col_blocks >= 8 ? M : 96;
  const int64_t row_chunks = (M + kRows - 1) / kRows;
  const int64_t items = col_blocks * row_chunks;
  // About 2^18 multiply-adds per item and thread at least (small calls stay on one thread).
  const int64_t grain = std::max<int64_t>(
      1, (int64_t{1} << 18) / std::max<int64_t>(1, std::min(M, kRows) * kCols * K));
  at::parallel_for(0, items, grain, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      // Row chunks fastest: consecutive items reuse one column block of B (K x 128 bytes) from
      // L2 while A streams, so B (up to tens of MB) is read once, not once per row chunk, and two
      // threads split B between them.
      const int64_t n0 = (i / row_chunks) * kCols, m0 = (i % row_chunks) * kRows;
      gemm(a + m0 * K, K, std::min(kRows, M - m0), K, wp + n0 * K, std::min(kCols, N - n0),
           bias ? bias + n0 : nullptr, relu, c + m0 * ldc + n0, ldc);
    }
  });
}

template at::Tensor LinearPackedParamsFp16::apply<false>(const at::Tensor&) const;
template at::Tensor LinearPackedParamsFp16::apply<true>(const at::Tensor&) const;

std::tuple<at::Tensor, c10::optional<at::Tensor>> LinearPackedParamsFp16::unpack() const {
  c10::optional<at::Tensor> b;
  if (bias_.has_value()) b = bias_->clone();
  return {w_half_.to(at::kFloat), b};  // a new tensor: no clone needed
}

}  // namespace qplugin
