// QuantizedCPU (and CPU, for a clear error on float input) kernels of relu6, hardswish and elu.
// Schemas: ops/activation.cpp. Microkernels: kernels/elementwise/* via kernels/dispatch.h.
// hardswish/elu on 8-bit inputs: a 256-entry table computed exactly in double per call
// (y = clamp(nearbyint(f((q - zp_in) * s_in) / s_out) + zp_out)), then one vector lookup pass.
// qint32 inputs: the same double math per element.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <cmath>
#include <cstring>

#include "common/checks.h"
#include "common/quant_utils.h"
#include "kernels/dispatch.h"

namespace qplugin {
namespace ops {
namespace {

constexpr int64_t kGrain = 64 * 1024;

// Output memory format rule of PyTorch's elementwise quantized ops (relu6, hardswish):
// qx.contiguous(qx.suggest_memory_format()).
at::MemoryFormat keep_format(const at::Tensor& x) { return x.suggest_memory_format(); }

template <typename F>
at::Tensor map_unary(const char* op, const at::Tensor& qx, double out_scale, int64_t out_zp,
                     at::MemoryFormat fmt, F f) {
  checks::check_quantized_input(op, "input", qx, {at::kQUInt8, at::kQInt8, at::kQInt32});
  checks::check_output_qparams(op, out_scale, out_zp, qx.scalar_type());
  // Channels-last 8-bit input to a contiguous output: look up and transpose in one pass.
  const bool cl_to_nchw = fmt == at::MemoryFormat::Contiguous && !qx.is_contiguous() &&
                          qx.scalar_type() != at::kQInt32 &&
                          ((qx.dim() == 4 && qx.is_contiguous(at::MemoryFormat::ChannelsLast)) ||
                           (qx.dim() == 5 && qx.is_contiguous(at::MemoryFormat::ChannelsLast3d)));
  at::Tensor x = cl_to_nchw ? qx : qx.contiguous(fmt);
  at::Tensor y = at::_empty_affine_quantized(qx.sizes(), qx.options(), out_scale, out_zp, fmt);
  const int64_t n = x.numel();
  if (n == 0) return y;
  const double in_scale = qx.q_scale();
  const int64_t in_zp = qx.q_zero_point();
  const auto r = qrange(qx.scalar_type());
  if (qx.scalar_type() == at::kQInt32) {
    const int32_t* xp = reinterpret_cast<const int32_t*>(x.data_ptr());
    int32_t* yp = reinterpret_cast<int32_t*>(y.data_ptr());
    at::parallel_for(0, n, kGrain / 16, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const double v = f((static_cast<double>(xp[i]) - in_zp) * in_scale);
        yp[i] = static_cast<int32_t>(quantize_exact(v, out_scale, out_zp, r.first, r.second));
      }
    });
    return y;
  }
  // 8-bit: table indexed by the raw byte (the two's-complement pattern for qint8).
  const bool is_signed = qx.scalar_type() == at::kQInt8;
  uint8_t table[256];
  for (int raw = 0; raw < 256; ++raw) {
    const int64_t q = is_signed ? static_cast<int8_t>(raw) : raw;
    const double v = f((static_cast<double>(q) - in_zp) * in_scale);
    const int64_t o = quantize_exact(v, out_scale, out_zp, r.first, r.second);
    table[raw] = static_cast<uint8_t>(is_signed ? static_cast<uint8_t>(static_cast<int8_t>(o)) : o);
  }
  const uint8_t* xp = reinterpret_cast<const uint8_t*>(x.data_ptr());
  uint8_t* yp = reinterpret_cast<uint8_t*>(y.data_ptr());
  const auto& k = kernels::table();
  if (cl_to_nchw) {
    const int64_t N = x.size(0), C = x.size(1), HW = n / (N * C);
    constexpr int64_t kPix = 256;
    const int64_t nblk = (HW + kPix - 1) / kPix;
    at::parallel_for(0, N * nblk, std::max<int64_t>(1, kGrain / (kPix * C)),
                     [&](int64_t b, int64_t e) {
                       for (int64_t j = b; j < e; ++j) {
                         const int64_t img = j / nblk, p0 = (j % nblk) * kPix;
                         const int64_t p1 = std::min(HW, p0 + kPix);
                         k.lut8_nhwc_to_nchw(xp + img * C * HW, yp + img * C * HW, C, HW, p0, p1,
                                             table);
                       }
                     });
    return y;
  }
  at::parallel_for(0, n, kGrain, [&](int64_t b, int64_t e) { k.lut8(xp + b, yp + b, e - b, table); });
  return y;
}

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
  return map_unary("elu", qx, output_scale, output_zero_point, at::MemoryFormat::Contiguous,
                   [a, s, is](double v) { return v > 0 ? v * s : std::expm1(v * is) * a * s; });
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
