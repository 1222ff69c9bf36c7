// QuantizedCPU (and CPU, for a clear error on float input) kernels of relu6, hardswish, elu and
// prelu.
// Schemas: ops/activation.cpp. Microkernels: kernels/elementwise/* via kernels/dispatch.h.
// hardswish/elu: exact table maps (ops/quantized_cpu/unary_lut.h).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <cmath>
#include <cstring>
#include <vector>

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

// prelu (≙ quantized::prelu): y = quant(x >= 0 ? x : x * w[c]) with x = (qx - x_zp) * x_scale,
// w[c] = (weight[c] - w_zp) * w_scale, in double, round half to even. qx: quint8 of rank >= 1,
// channel c = index along dim 1 (dim 0 of a 1-d input); weight: quint8 (PyTorch's dtype; qint8
// accepted too, an extension) per tensor, 0-d or 1-d with 1 or C values. Runs as one 256-entry
// table per distinct weight value (at most 256; looked up by kernels::table().lut8 along NCHW
// planes), so every ISA gives the same bytes. Output in
// the input's suggested memory format (as PyTorch's).
at::Tensor prelu_quantized_cpu(const at::Tensor& qx, const at::Tensor& weight,
                               double output_scale, int64_t output_zero_point) {
  const char* op = "prelu";
  checks::check_quantized_input(op, "qx", qx, {at::kQUInt8});
  checks::check_quantized_input(op, "weight", weight, {at::kQUInt8, at::kQInt8});
  TORCH_CHECK(qx.dim() >= 1, "qplugin::prelu: expected qx of rank >= 1, got a 0-d tensor");
  TORCH_CHECK(weight.dim() <= 1, "qplugin::prelu: expected a 0-d or 1-d weight, got ",
              weight.dim(), "-D (shape ", weight.sizes(), ")");
  const int64_t C = qx.dim() >= 2 ? qx.size(1) : qx.size(0);
  const int64_t nw = weight.numel();
  TORCH_CHECK(nw == 1 || nw == C, "qplugin::prelu: expected weight with 1 value or one per "
              "channel (", C, ", dim ", qx.dim() >= 2 ? 1 : 0, " of qx), got ", nw,
              " (qx shape ", qx.sizes(), ")");
  checks::check_output_qparams(op, output_scale, output_zero_point, at::kQUInt8);
  const double sx = qx.q_scale(), sw = weight.q_scale();
  TORCH_CHECK(std::isfinite(sx) && sx > 0.0 && std::isfinite(sw) && sw > 0.0,
              "qplugin::prelu: expected finite, positive scales of qx and weight, got ", sx,
              " and ", sw);
  const auto fmt = keep_format(qx);
  const at::Tensor x = qx.contiguous(fmt);
  at::Tensor y = at::_empty_affine_quantized(qx.sizes(), qx.options().dtype(at::kQUInt8),
                                             output_scale, output_zero_point, fmt);
  const int64_t numel = qx.numel();
  if (numel == 0) return y;

  // Weight codes as table rows: code = stored byte (qint8 offset by 128).
  const bool w_signed = weight.scalar_type() == at::kQInt8;
  const int64_t zw = weight.q_zero_point(), zx = qx.q_zero_point();
  const at::Tensor wi = weight.int_repr().reshape({nw}).to(at::kLong).contiguous();
  const int64_t* wv = wi.data_ptr<int64_t>();
  std::vector<int> row_of(256, -1);
  std::vector<uint8_t> tables;
  std::vector<int> chan_row(static_cast<size_t>(C));
  for (int64_t c = 0; c < C; ++c) {
    const int64_t q = wv[nw == 1 ? 0 : c];
    const int code = static_cast<int>(w_signed ? q + 128 : q);
    if (row_of[code] < 0) {
      row_of[code] = static_cast<int>(tables.size() / 256);
      const double wr = static_cast<double>(q - zw) * sw;
      for (int64_t v = 0; v < 256; ++v) {
        const double xr = static_cast<double>(v - zx) * sx;
        tables.push_back(static_cast<uint8_t>(quantize_exact(
            xr >= 0.0 ? xr : xr * wr, output_scale, output_zero_point, 0, 255)));
      }
    }
    chan_row[c] = row_of[code];
  }
  // Layout: contiguous [outer][C][inner], or channels-last [pixels][C] (inner = 1).
  const bool cl = fmt == at::MemoryFormat::ChannelsLast || fmt == at::MemoryFormat::ChannelsLast3d;
  int64_t inner = 1;
  if (!cl) {
    for (int64_t d = 2; d < qx.dim(); ++d) inner *= qx.size(d);
  }
  const uint8_t* xp = reinterpret_cast<const uint8_t*>(x.data_ptr());
  uint8_t* yp = reinterpret_cast<uint8_t*>(y.data_ptr());
  const auto& k = kernels::table();
  if (cl || inner == 1) {
    // [rows][C]: the table changes with every element.
    const int64_t rows = numel / C;
    at::parallel_for(0, rows, std::max<int64_t>(1, kGrain / C), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const uint8_t* xr = xp + r * C;
        uint8_t* yr = yp + r * C;
        for (int64_t c = 0; c < C; ++c)
          yr[c] = tables[static_cast<size_t>(chan_row[c]) * 256 + xr[c]];
      }
    });
  } else {
    // [outer * C][inner]: one table per row, the ISA's 8-bit table lookup.
    const int64_t rows = numel / inner;
    at::parallel_for(0, rows, std::max<int64_t>(1, kGrain / inner), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        k.lut8(xp + r * inner, yp + r * inner, inner,
               tables.data() + static_cast<size_t>(chan_row[r % C]) * 256);
      }
    });
  }
  return y;
}

}  // namespace
}  // namespace ops
}  // namespace qplugin

#define QPLUGIN_REGISTER_ACT(m)                                          \
  m.impl("relu6", TORCH_FN(qplugin::ops::relu6_quantized_cpu));         \
  m.impl("hardswish", TORCH_FN(qplugin::ops::hardswish_quantized_cpu)); \
  m.impl("elu", TORCH_FN(qplugin::ops::elu_quantized_cpu));             \
  m.impl("prelu", TORCH_FN(qplugin::ops::prelu_quantized_cpu));

TORCH_LIBRARY_IMPL(qplugin, QuantizedCPU, m) { QPLUGIN_REGISTER_ACT(m) }
TORCH_LIBRARY_IMPL(qplugin, CPU, m) { QPLUGIN_REGISTER_ACT(m) }

// Keeps this file in static links: qplugin_register_all() (csrc/register.cpp) calls it.
QPLUGIN_REGISTRATION_ANCHOR(quantized_cpu_activation_kernel)
