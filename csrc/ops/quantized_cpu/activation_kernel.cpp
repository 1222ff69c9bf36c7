// QuantizedCPU (and CPU, for a clear error on float input) kernels of relu6, hardswish and elu.
// Schemas: ops/activation.cpp. Microkernels: kernels/elementwise/* via kernels/dispatch.h.
// hardswish/elu: exact table maps (ops/quantized_cpu/unary_lut.h).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <cmath>
#include <cstring>

#include "common/checks.h"
#include "common/quant_utils.h"
#include "kernels/dispatch.h"
#include "ops/quantized_cpu/unary_lut.h"
#include "register.h"

namespace qplugin {
namespace ops {
namespace {

constexpr int64_t kGrain = 64 * 1024;

using unary::keep_format;
using unary::map_unary;

at::Tensor hardswish_quantized_cpu(const at::Tensor& qx, double output_scale,
                                   int64_t output_zero_point) {
  return map_unary("hardswish", qx, output_scale, output_zero_point, keep_format(qx),
                   [](double v) { return v * std::min(std::max(v + 3.0, 0.0), 6.0) / 6.0; });
}

at::Tensor elu_quantized_cpu(const at::Tensor& qx, double output_scale, int64_t output_zero_point,
                             const at::Scalar& alpha, const at::Scalar& scale,
                             const at::Scalar& input_scale) {
  const double a = alpha.toDouble(), s = scale.toDouble(), is = input_scale.toDouble();
  TORCH_CHECK(std::isfinite(a) && std::isfinite(s) && std::isfinite(is), "qplugin::elu: expected "
              "finite alpha, scale and input_scale, got ", a, ", ", s, ", ", is);
  // Output contiguous (NCHW) whatever the input layout, as quantized::elu.
  return unary::map_unary_cached(
      "elu", qx, output_scale, output_zero_point, at::MemoryFormat::Contiguous,
      [a, s, is](double v) { return v > 0 ? v * s : std::expm1(v * is) * a * s; }, {a, s, is});
}

// relu6 keeps the input's qparams: y = min(max(q, zp), q6), q6 = quantize(6.0) computed like
// PyTorch's quantize_val (float reciprocal of the scale) so the bytes match it exactly.
template <typename T>
void relu6_run(const at::Tensor& x, at::Tensor& y, T lo, T hi) {
  const T* xp = reinterpret_cast<const T*>(x.data_ptr());
  T* yp = reinterpret_cast<T*>(y.data_ptr());
  const int64_t n = x.numel();
  const auto& k = kernels::table();
  at::parallel_for(0, n, kGrain, [&](int64_t b, int64_t e) {
    if constexpr (std::is_same<T, uint8_t>::value) {
      k.u8.clamp(xp + b, yp + b, e - b, lo, hi);
    } else if constexpr (std::is_same<T, int8_t>::value) {
      k.s8.clamp(xp + b, yp + b, e - b, lo, hi);
    } else {
      for (int64_t i = b; i < e; ++i) yp[i] = std::min(std::max(xp[i], lo), hi);
    }
  });
}

at::Tensor relu6_quantized_cpu(const at::Tensor& qx, bool inplace) {
  checks::check_quantized_input("relu6", "qx", qx, {at::kQUInt8, at::kQInt8, at::kQInt32});
  const int64_t zp = qx.q_zero_point();
  const auto r = qrange(qx.scalar_type());
  const float inv_scale = 1.0f / static_cast<float>(qx.q_scale());
  const double six_d = static_cast<double>(zp) + std::nearbyint(6.0f * inv_scale);
  const int64_t six = static_cast<int64_t>(
      std::min<double>(std::max<double>(six_d, r.first), r.second));
  const int64_t lo = std::min(std::max(zp, r.first), r.second);
  const auto fmt = keep_format(qx);
  const bool dense = qx.is_contiguous(fmt);
  at::Tensor x = dense ? qx : qx.contiguous(fmt);
  at::Tensor y = (inplace && dense) ? qx
                                    : at::_empty_affine_quantized(qx.sizes(), qx.options(),
                                                                  qx.q_scale(), zp, fmt);
  if (qx.numel() > 0) {
    switch (qx.scalar_type()) {
      case at::kQUInt8: relu6_run<uint8_t>(x, y, lo, six); break;
      case at::kQInt8: relu6_run<int8_t>(x, y, lo, six); break;
      default: relu6_run<int32_t>(x, y, lo, six); break;
    }
  }
  if (inplace && !dense) {
    qx.copy_(y);  // strided in-place: write back through qx's own strides
    return qx;
  }
  return y;
}

}  // namespace
}  // namespace ops
}  // namespace qplugin

#define QPLUGIN_REGISTER_ACT(m)                                          \
  m.impl("relu6", TORCH_FN(qplugin::ops::relu6_quantized_cpu));         \
  m.impl("hardswish", TORCH_FN(qplugin::ops::hardswish_quantized_cpu)); \
  m.impl("elu", TORCH_FN(qplugin::ops::elu_quantized_cpu));

TORCH_LIBRARY_IMPL(qplugin, QuantizedCPU, m) { QPLUGIN_REGISTER_ACT(m) }
TORCH_LIBRARY_IMPL(qplugin, CPU, m) { QPLUGIN_REGISTER_ACT(m) }

// Keeps this file in static links: qplugin_register_all() (csrc/register.cpp) calls it.
QPLUGIN_REGISTRATION_ANCHOR(quantized_cpu_activation_kernel)
