// QuantizedCPU (and CPU, for a clear error on float input) kernels of the activations: relu6,
// hardswish, elu, prelu, leaky_relu, sigmoid, hardsigmoid, celu, threshold, clamp, tanh, gelu,
// silu, mish, softplus (exact table maps, ops/quantized_cpu/unary_lut.h; relu6 and clamp through
// kernels/elementwise/* via kernels/dispatch.h) and softmax (double per row).
// Schemas: ops/activation.cpp.
// Output memory format and default qparams follow PyTorch's quantized ops (celu and softmax
// return contiguous tensors; the others keep channels-last).
// Two doors (docs/pt2.md section 3): each op's core takes its quantized operands as QArg
// (common/qarg.h); the legacy op (QuantizedCPU, and CPU for the float-input error) wraps its
// tensors with QArg::quantized, the `.plain` overload (CPU) wraps plain codes and their qparams
// with QArg::plain, and both call the same core: byte-identical on every ISA by construction.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "common/checks.h"
#include "common/qarg.h"
#include "common/quant_utils.h"
#include "kernels/dispatch.h"
#include "kernels/softmax/softmax.h"
#include "ops/quantized_cpu/unary_lut.h"
#include "register.h"

namespace qplugin {
namespace ops {
namespace {

constexpr int64_t kGrain = 64 * 1024;

using unary::keep_format;
using unary::map_codes;
using unary::map_unary;
using unary::map_unary_cached;

// The quantized operand of an activation on each door (every activation but prelu takes quint8,
// qint8 and qint32 codes).
QArg legacy_in(const char* op, const char* arg, const at::Tensor& qx) {
  return QArg::quantized(op, arg, qx, {at::kQUInt8, at::kQInt8, at::kQInt32});
}
QArg plain_in(const char* op, const char* arg, const at::Tensor& x, double scale, int64_t zp) {
  return QArg::plain(op, arg, x, scale, zp, {at::kQUInt8, at::kQInt8, at::kQInt32});
}

at::Tensor hardswish_core(const QArg& qx, double output_scale, int64_t output_zero_point) {
  return map_unary("hardswish", qx, output_scale, output_zero_point, keep_format(qx),
                   [](double v) { return v * std::min(std::max(v + 3.0, 0.0), 6.0) / 6.0; });
}

at::Tensor elu_core(const QArg& qx, double output_scale, int64_t output_zero_point,
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

at::Tensor relu6_core(const QArg& qx, bool inplace) {
  const int64_t zp = qx.q_zero_point();
  const auto r = qrange(qx.scalar_type());
  const float inv_scale = 1.0f / static_cast<float>(qx.q_scale());
  const double six_d = static_cast<double>(zp) + std::nearbyint(6.0f * inv_scale);
  const int64_t six = static_cast<int64_t>(
      std::min<double>(std::max<double>(six_d, r.first), r.second));
  const int64_t lo = std::min(std::max(zp, r.first), r.second);
  const auto fmt = keep_format(qx);
  const bool dense = qx.is_contiguous(fmt);
  TORCH_INTERNAL_ASSERT(!(inplace && qx.is_plain()), "qplugin::relu6: in-place on the PT2 door");
  at::Tensor x = dense ? qx.tensor() : qx.tensor().contiguous(fmt);
  at::Tensor y = (inplace && dense) ? qx.tensor()
                                    : new_output(qx, qx.sizes(), qx.scalar_type(), qx.q_scale(),
                                                 zp, fmt);
  if (qx.numel() > 0) {
    switch (qx.scalar_type()) {
      case at::kQUInt8: relu6_run<uint8_t>(x, y, lo, six); break;
      case at::kQInt8: relu6_run<int8_t>(x, y, lo, six); break;
      default: relu6_run<int32_t>(x, y, lo, six); break;
    }
  }
  if (inplace && !dense) {
    qx.tensor().copy_(y);  // strided in-place: write back through qx's own strides
    return qx.tensor();
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
at::Tensor prelu_core(const QArg& qx, const QArg& weight, double output_scale,
                      int64_t output_zero_point) {
  const char* op = "prelu";
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
  const at::Tensor x = qx.tensor().contiguous(fmt);
  at::Tensor y = new_output(qx, qx.sizes(), at::kQUInt8, output_scale, output_zero_point, fmt);
  const int64_t numel = qx.numel();
  if (numel == 0) return y;

  // Weight codes as table rows: code = stored byte (qint8 offset by 128).
  const bool w_signed = weight.scalar_type() == at::kQInt8;
  const int64_t zw = weight.q_zero_point(), zx = qx.q_zero_point();
  const at::Tensor wcodes = weight.is_plain() ? weight.tensor() : weight.tensor().int_repr();
  const at::Tensor wi = wcodes.reshape({nw}).to(at::kLong).contiguous();
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
  const int64_t rows_cl = numel / C;
  if ((cl || inner == 1) && kernels::current_isa() != kernels::Isa::kScalar && C >= 16 &&
      rows_cl >= 64) {
    // [rows][C] on a vector ISA: blocks of 256 pixel rows through two vector kernels, a
    // transposing copy to [C][256] (copy8_nchw_to_nhwc, or lut8_nhwc_to_nchw with the identity
    // table where an ISA has no copy) and then lut8_nchw_to_nhwc with one table per channel back
    // to [256][C]. Pure lookups: the same bytes as the scalar loop below.
    std::vector<uint8_t> per_chan(static_cast<size_t>(C) * 256);
    for (int64_t c = 0; c < C; ++c)
      std::memcpy(per_chan.data() + c * 256,
                  tables.data() + static_cast<size_t>(chan_row[c]) * 256, 256);
    uint8_t ident[256];
    for (int v = 0; v < 256; ++v) ident[v] = static_cast<uint8_t>(v);
    constexpr int64_t kBlk = 256;
    const int64_t nblk = (rows_cl + kBlk - 1) / kBlk;
    at::parallel_for(0, nblk, std::max<int64_t>(1, kGrain / (kBlk * C)), [&](int64_t b0,
                                                                             int64_t b1) {
      std::vector<uint8_t> tmp(static_cast<size_t>(C * kBlk));
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t r0 = b * kBlk, len = std::min(kBlk, rows_cl - r0);
        if (k.copy8_nchw_to_nhwc != nullptr) {
          // [len][C] -> [C][len] is copy8's [C'][HW'] -> [HW'][C'] with C' = len, HW' = C.
          k.copy8_nchw_to_nhwc(xp + r0 * C, tmp.data(), /*C=*/len, /*HW=*/C, 0, C);
        } else {
          k.lut8_nhwc_to_nchw(xp + r0 * C, tmp.data(), C, len, 0, len, ident);
        }
        k.lut8_nchw_to_nhwc(tmp.data(), yp + r0 * C, C, len, 0, len, per_chan.data());
      }
    });
  } else if (cl || inner == 1) {
    // [rows][C]: the table changes with every element. Four rows at a time, so each channel's
    // table pointer is loaded once per 4 lookups (all loads before the stores, which the
    // compiler must assume may alias the tables).
    const int64_t rows = numel / C;
    std::vector<const uint8_t*> tab_of(static_cast<size_t>(C));
    for (int64_t c = 0; c < C; ++c)
      tab_of[c] = tables.data() + static_cast<size_t>(chan_row[c]) * 256;
    const uint8_t* const* tp = tab_of.data();
    at::parallel_for(0, rows, std::max<int64_t>(4, kGrain / C), [&](int64_t r0, int64_t r1) {
      const int64_t Cl = C;
      int64_t r = r0;
      for (; r + 4 <= r1; r += 4) {
        const uint8_t* x0 = xp + r * Cl;
        uint8_t* y0 = yp + r * Cl;
        for (int64_t c = 0; c < Cl; ++c) {
          const uint8_t* t = tp[c];
          const uint8_t a = t[x0[c]], b = t[x0[Cl + c]], d = t[x0[2 * Cl + c]],
                        e = t[x0[3 * Cl + c]];
          y0[c] = a;
          y0[Cl + c] = b;
          y0[2 * Cl + c] = d;
          y0[3 * Cl + c] = e;
        }
      }
      for (; r < r1; ++r) {
        const uint8_t* xr = xp + r * Cl;
        uint8_t* yr = yp + r * Cl;
        for (int64_t c = 0; c < Cl; ++c) yr[c] = tp[c][xr[c]];
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

// ---- leaky_relu, sigmoid, hardsigmoid, tanh, celu, threshold, clamp, gelu, silu, mish,
// softplus, softmax ----

double finite_scalar(const char* op, const char* what, const c10::Scalar& s) {
  const double v = s.toDouble();
  TORCH_CHECK(std::isfinite(v), "qplugin::", op, ": expected a finite ", what, ", got ", v);
  return v;
}

// Fixed output qparams PyTorch picks for sigmoid/hardsigmoid ([0, 1]) and tanh ([-1, 1]) on
// quantized tensors: 1/256 (2/256) scale over the 8-bit range, 2^-32 (2^-31) for qint32.
std::pair<double, int64_t> fixed_qparams(const QArg& qx, bool symmetric) {
  switch (qx.scalar_type()) {
    case at::kQUInt8: return symmetric ? std::make_pair(2.0 / 256, int64_t(128))
                                       : std::make_pair(1.0 / 256, int64_t(0));
    case at::kQInt8: return symmetric ? std::make_pair(2.0 / 256, int64_t(0))
                                      : std::make_pair(1.0 / 256, int64_t(-128));
    default: return symmetric ? std::make_pair(std::ldexp(1.0, -31), int64_t(0))
                              : std::make_pair(std::ldexp(1.0, -32), int64_t(0));
  }
}

std::pair<double, int64_t> qparams_or(const char* op, const QArg& qx,
                                      std::optional<double> scale, std::optional<int64_t> zp,
                                      std::pair<double, int64_t> dflt) {
  TORCH_CHECK(scale.has_value() == zp.has_value(), "qplugin::", op,
              ": expected output_scale and output_zero_point both given or both None, got ",
              scale.has_value() ? "only output_scale" : "only output_zero_point");
  return scale.has_value() ? std::make_pair(*scale, *zp) : dflt;
}

at::Tensor leaky_relu_core(const QArg& qx, const c10::Scalar& negative_slope, bool inplace,
                           double output_scale, int64_t output_zero_point) {
  const char* op = "leaky_relu";
  const double a = finite_scalar(op, "negative_slope", negative_slope);
  // Like PyTorch, inplace cannot change qparams: with new output qparams a new tensor is
  // returned (quantized::leaky_relu ignores inplace); with equal ones qx is updated.
  const bool in_place =
      inplace && qx.q_scale() == output_scale && qx.q_zero_point() == output_zero_point;
  // Computed where the tier prefers it: y = zp_out + (q - zp_in) * s_in / s_out above zp_in,
  // times a below.
  unary::AffineHint h;
  h.c = qx.q_zero_point();
  h.a1 = qx.q_scale() / output_scale;
  h.a2 = a * h.a1;
  h.b1 = h.b2 = static_cast<double>(output_zero_point);
  h.two = true;
  return map_unary_cached(op, qx, output_scale, output_zero_point, keep_format(qx),
                          [a](double v) { return v > 0 ? v : v * a; }, {a}, in_place, &h);
}

double sigmoid_d(double v) { return 1.0 / (1.0 + std::exp(-v)); }

at::Tensor sigmoid_core(const QArg& qx, double output_scale, int64_t output_zero_point) {
  return map_unary_cached("sigmoid", qx, output_scale, output_zero_point, keep_format(qx),
                          sigmoid_d, {});
}

at::Tensor hardsigmoid_core(const QArg& qx, std::optional<double> output_scale,
                            std::optional<int64_t> output_zero_point) {
  const char* op = "hardsigmoid";
  const auto qp = qparams_or(op, qx, output_scale, output_zero_point, fixed_qparams(qx, false));
  // Computed where the tier prefers it: the ramp y = zp_out + ((q - zp_in) s_in + 3) / (6 s_out),
  // clamped to the table's range (its ends are f's 0 and 1).
  unary::AffineHint h;
  h.c = qx.q_zero_point();
  h.a1 = qx.q_scale() / (6.0 * qp.first);
  h.b1 = static_cast<double>(qp.second) + 0.5 / qp.first;
  return map_unary_cached(op, qx, qp.first, qp.second, keep_format(qx),
                          [](double v) { return std::min(std::max(v + 3.0, 0.0), 6.0) / 6.0; },
                          {}, /*inplace=*/false, &h);
}

at::Tensor tanh_core(const QArg& qx, std::optional<double> output_scale,
                     std::optional<int64_t> output_zero_point) {
  const char* op = "tanh";
  const auto qp = qparams_or(op, qx, output_scale, output_zero_point, fixed_qparams(qx, true));
  return map_unary_cached(op, qx, qp.first, qp.second, keep_format(qx),
                          [](double v) { return std::tanh(v); }, {});
}

at::Tensor celu_core(const QArg& qx, double output_scale, int64_t output_zero_point,
                     const c10::Scalar& alpha) {
  const char* op = "celu";
  const double a = finite_scalar(op, "alpha", alpha);
  TORCH_CHECK(a != 0.0, "qplugin::celu: expected a nonzero alpha, got 0");
  // Contiguous output whatever the input layout, as quantized::celu.
  return map_unary_cached(op, qx, output_scale, output_zero_point, at::MemoryFormat::Contiguous,
                          [a](double v) { return v > 0 ? v : a * std::expm1(v / a); }, {a});
}

// y = x if x > threshold else value, decided on the dequantized value (exact); the output keeps
// the input's qparams, so kept elements keep their codes.
at::Tensor threshold_core(const QArg& qx, const c10::Scalar& threshold,
                          const c10::Scalar& value) {
  const char* op = "threshold";
  const double t = threshold.toDouble(), v = value.toDouble();
  TORCH_CHECK(!std::isnan(t) && !std::isnan(v), "qplugin::threshold: expected threshold and value"
              " not NaN, got ", t, " and ", v);
  const double s = qx.q_scale();
  const int64_t zp = qx.q_zero_point();
  const auto r = qrange(qx.scalar_type());
  const int64_t qv = quantize_exact(v, s, zp, r.first, r.second);
  // Computed where the tier prefers it: the code itself above the split, qv below.
  unary::AffineHint h;
  h.c = zp;
  h.a1 = 1.0;
  h.b1 = static_cast<double>(zp);
  h.a2 = 0.0;
  h.b2 = static_cast<double>(qv);
  h.two = true;
  h.keep = true;
  return map_codes(op, qx, s, zp, keep_format(qx), [&](int64_t q) {
    return (static_cast<double>(q) - zp) * s > t ? q : qv;
  }, /*inplace=*/false, /*key=*/nullptr, &h);
}

// clamp(x, min, max) with the input's qparams: clamp(q, Q(min), Q(max)) (Q exact, round half to
// even), which equals requantizing the float clamp; min > max gives max, as torch.clamp.
at::Tensor clamp_core(const QArg& qx, const std::optional<c10::Scalar>& min,
                      const std::optional<c10::Scalar>& max) {
  const char* op = "clamp";
  TORCH_CHECK(min.has_value() || max.has_value(), "qplugin::clamp: expected at least one of min "
              "and max, got neither");
  const double s = qx.q_scale();
  const int64_t zp = qx.q_zero_point();
  const auto r = qrange(qx.scalar_type());
  int64_t lo = r.first, hi = r.second;
  if (min.has_value()) {
    const double m = min->toDouble();
    TORCH_CHECK(!std::isnan(m), "qplugin::clamp: expected min not NaN, got nan");
    lo = quantize_exact(m, s, zp, r.first, r.second);
  }
  if (max.has_value()) {
    const double m = max->toDouble();
    TORCH_CHECK(!std::isnan(m), "qplugin::clamp: expected max not NaN, got nan");
    hi = quantize_exact(m, s, zp, r.first, r.second);
  }
  if (qx.scalar_type() == at::kQInt32) {
    return map_codes(op, qx, s, zp, keep_format(qx),
                     [lo, hi](int64_t q) { return std::min(std::max(q, lo), hi); });
  }
  // 8-bit: a min/max pass (no table), as relu6.
  const auto fmt = keep_format(qx);
  const at::Tensor x = qx.tensor().contiguous(fmt);
  at::Tensor y = new_output(qx, qx.sizes(), qx.scalar_type(), s, zp, fmt);
  const int64_t n = x.numel();
  const auto& k = kernels::table();
  at::parallel_for(0, n, unary::kGrain, [&](int64_t b, int64_t e) {
    if (qx.scalar_type() == at::kQInt8) {
      k.s8.clamp(reinterpret_cast<const int8_t*>(x.data_ptr()) + b,
                 reinterpret_cast<int8_t*>(y.data_ptr()) + b, e - b, static_cast<int8_t>(lo),
                 static_cast<int8_t>(hi));
    } else {
      k.u8.clamp(reinterpret_cast<const uint8_t*>(x.data_ptr()) + b,
                 reinterpret_cast<uint8_t*>(y.data_ptr()) + b, e - b, static_cast<uint8_t>(lo),
                 static_cast<uint8_t>(hi));
    }
  });
  return y;
}

at::Tensor gelu_core(const QArg& qx, std::optional<double> output_scale,
                     std::optional<int64_t> output_zero_point, c10::string_view approximate) {
  const char* op = "gelu";
  const auto qp =
      qparams_or(op, qx, output_scale, output_zero_point, {qx.q_scale(), qx.q_zero_point()});
  if (approximate == "none") {
    return map_unary_cached(op, qx, qp.first, qp.second, keep_format(qx),
                            [](double v) { return 0.5 * v * (1.0 + std::erf(v * M_SQRT1_2)); },
                            {0.0});
  }
  TORCH_CHECK(approximate == "tanh", "qplugin::gelu: expected approximate 'none' or 'tanh', got '",
              std::string(approximate), "'");
  return map_unary_cached(op, qx, qp.first, qp.second, keep_format(qx), [](double v) {
    const double k = std::sqrt(2.0 / M_PI);
    return 0.5 * v * (1.0 + std::tanh(k * (v + 0.044715 * v * v * v)));
  }, {1.0});  // the key's 1.0 tells the tanh form from erf's 0.0
}

at::Tensor silu_core(const QArg& qx, double output_scale, int64_t output_zero_point) {
  return map_unary_cached("silu", qx, output_scale, output_zero_point, keep_format(qx),
                          [](double v) { return v * sigmoid_d(v); }, {});
}

// log(1 + e^v), overflow-safe.
double softplus_d(double v) { return v > 30.0 ? v : std::log1p(std::exp(v)); }

at::Tensor mish_core(const QArg& qx, double output_scale, int64_t output_zero_point) {
  return map_unary_cached("mish", qx, output_scale, output_zero_point, keep_format(qx),
                          [](double v) { return v * std::tanh(softplus_d(v)); }, {});
}

// torch.nn.functional.softplus: log(1 + exp(beta * x)) / beta, linear (x) where beta * x >
// threshold.
at::Tensor softplus_core(const QArg& qx, double output_scale, int64_t output_zero_point,
                         const c10::Scalar& beta, const c10::Scalar& threshold) {
  const char* op = "softplus";
  const double b = finite_scalar(op, "beta", beta), t = threshold.toDouble();
  TORCH_CHECK(b != 0.0, "qplugin::softplus: expected a nonzero beta, got 0");
  TORCH_CHECK(!std::isnan(t), "qplugin::softplus: expected a threshold that is not NaN, got nan");
  return map_unary_cached(op, qx, output_scale, output_zero_point, keep_format(qx),
                          [b, t](double v) {
                            return v * b > t ? v : std::log1p(std::exp(v * b)) / b;
                          }, {b, t});
}

// softmax over `dim`: y = quantize(exp(x - max) / sum exp(x - max)) in double. For 8-bit codes
// x - max = (q - qmax) * s takes at most 256 values: a table of exp(-k s), and the kernels of
// kernels/softmax (the reference in double, vector fast paths that reproduce it). qint32 codes
// take exp per element here.
at::Tensor softmax_core(const QArg& qx, int64_t dim, double output_scale,
                        int64_t output_zero_point) {
  const char* op = "softmax";
  checks::check_output_qparams(op, output_scale, output_zero_point, qx.scalar_type());
  const int64_t nd = std::max<int64_t>(qx.dim(), 1);
  TORCH_CHECK(dim >= -nd && dim < nd, "qplugin::softmax: expected dim in [", -nd, ", ", nd - 1,
              "], got ", dim);
  if (dim < 0) dim += nd;
  const at::Tensor x = qx.tensor().contiguous();
  at::Tensor y = new_output(qx, qx.sizes(), qx.scalar_type(), output_scale, output_zero_point,
                            at::MemoryFormat::Contiguous);
  if (x.numel() == 0) return y;
  int64_t outer = 1, inner = 1;
  const int64_t D = qx.dim() == 0 ? 1 : qx.size(dim);
  for (int64_t d = 0; d < dim; ++d) outer *= qx.size(d);
  for (int64_t d = dim + 1; d < qx.dim(); ++d) inner *= qx.size(d);
  const double s = qx.q_scale();
  const auto r = qrange(qx.scalar_type());
  if (qx.scalar_type() != at::kQInt32) {
    double etab[256];
    for (int k = 0; k < 256; ++k) etab[k] = std::exp(-k * s);
    const kernels::softmax::Params p =
        kernels::softmax::plan(etab, output_scale, output_zero_point, r.first, r.second, D);
    const auto& tab = kernels::softmax::table();
    const bool u8 = qx.scalar_type() == at::kQUInt8;
    const void* xp = x.data_ptr();
    void* yp = y.data_ptr();
    // About 64K codes per task.
    const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 16) / D);
    if (inner == 1) {
      at::parallel_for(0, outer, grain, [&](int64_t b, int64_t e) {
        if (u8) {
          tab.u8.rows(static_cast<const uint8_t*>(xp) + b * D, static_cast<uint8_t*>(yp) + b * D,
                      D, e - b, p);
        } else {
          tab.s8.rows(static_cast<const int8_t*>(xp) + b * D, static_cast<int8_t*>(yp) + b * D,
                      D, e - b, p);
        }
      });
    } else {
      // Columns of the [outer][D][inner] view, flattened (o, j); a task takes a run of them.
      at::parallel_for(0, outer * inner, std::max<int64_t>(64, grain), [&](int64_t b, int64_t e) {
        while (b < e) {
          const int64_t o = b / inner, j0 = b % inner, j1 = std::min(inner, j0 + (e - b));
          const int64_t base = o * D * inner;
          if (u8) {
            tab.u8.cols(static_cast<const uint8_t*>(xp) + base, static_cast<uint8_t*>(yp) + base,
                        D, inner, j0, j1, p);
          } else {
            tab.s8.cols(static_cast<const int8_t*>(xp) + base, static_cast<int8_t*>(yp) + base,
                        D, inner, j0, j1, p);
          }
          b += j1 - j0;
        }
      });
    }
    return y;
  }
  const int32_t* xp = static_cast<const int32_t*>(x.data_ptr());
  int32_t* yp = static_cast<int32_t*>(y.data_ptr());
  at::parallel_for(0, outer * inner, std::max<int64_t>(1, 4096 / std::max<int64_t>(D, 1)),
                   [&](int64_t b, int64_t e) {
    for (int64_t row = b; row < e; ++row) {
      const int64_t o = row / inner, j = row % inner;
      const int64_t base = o * D * inner + j;
      int64_t m = xp[base];
      for (int64_t t = 1; t < D; ++t) m = std::max<int64_t>(m, xp[base + t * inner]);
      auto ex = [&](int64_t q) { return std::exp(static_cast<double>(q - m) * s); };
      double sum = 0.0;
      for (int64_t t = 0; t < D; ++t) sum += ex(xp[base + t * inner]);
      for (int64_t t = 0; t < D; ++t) {
        const double v = ex(xp[base + t * inner]) / sum;
        yp[base + t * inner] = static_cast<int32_t>(
            quantize_exact(v, output_scale, output_zero_point, r.first, r.second));
      }
    }
  });
  return y;
}

// ---- The two doors ------------------------------------------------------------------------
// Legacy (quantized tensors): the arg names of the messages are the ones the ops always used.
// `.plain` (docs/pt2.md section 3): every quantized operand x followed by (x_scale,
// x_zero_point), optional output qparams required, `inplace` dropped.

at::Tensor relu6_q(const at::Tensor& qx, bool inplace) {
  return relu6_core(legacy_in("relu6", "qx", qx), inplace);
}
at::Tensor relu6_p(const at::Tensor& qx, double s, int64_t z) {
  return relu6_core(plain_in("relu6", "qx", qx, s, z), false);
}
at::Tensor hardswish_q(const at::Tensor& qx, double os, int64_t oz) {
  return hardswish_core(legacy_in("hardswish", "input", qx), os, oz);
}
at::Tensor hardswish_p(const at::Tensor& qx, double s, int64_t z, double os, int64_t oz) {
  return hardswish_core(plain_in("hardswish", "input", qx, s, z), os, oz);
}
at::Tensor elu_q(const at::Tensor& qx, double os, int64_t oz, const at::Scalar& alpha,
                 const at::Scalar& scale, const at::Scalar& input_scale) {
  return elu_core(legacy_in("elu", "input", qx), os, oz, alpha, scale, input_scale);
}
at::Tensor elu_p(const at::Tensor& qx, double s, int64_t z, double os, int64_t oz,
                 const at::Scalar& alpha, const at::Scalar& scale, const at::Scalar& input_scale) {
  return elu_core(plain_in("elu", "self", qx, s, z), os, oz, alpha, scale, input_scale);
}
at::Tensor prelu_q(const at::Tensor& qx, const at::Tensor& weight, double os, int64_t oz) {
  return prelu_core(QArg::quantized("prelu", "qx", qx, {at::kQUInt8}),
                    QArg::quantized("prelu", "weight", weight, {at::kQUInt8, at::kQInt8}), os, oz);
}
at::Tensor prelu_p(const at::Tensor& qx, double s, int64_t z, const at::Tensor& weight, double ws,
                   int64_t wz, double os, int64_t oz) {
  return prelu_core(QArg::plain("prelu", "qx", qx, s, z, {at::kQUInt8}),
                    QArg::plain("prelu", "weight", weight, ws, wz, {at::kQUInt8, at::kQInt8}),
                    os, oz);
}
at::Tensor leaky_relu_q(const at::Tensor& qx, const c10::Scalar& slope, bool inplace, double os,
                        int64_t oz) {
  return leaky_relu_core(legacy_in("leaky_relu", "input", qx), slope, inplace, os, oz);
}
at::Tensor leaky_relu_p(const at::Tensor& qx, double s, int64_t z, const c10::Scalar& slope,
                        double os, int64_t oz) {
  return leaky_relu_core(plain_in("leaky_relu", "qx", qx, s, z), slope, false, os, oz);
}
at::Tensor sigmoid_q(const at::Tensor& qx, double os, int64_t oz) {
  return sigmoid_core(legacy_in("sigmoid", "input", qx), os, oz);
}
at::Tensor sigmoid_p(const at::Tensor& qx, double s, int64_t z, double os, int64_t oz) {
  return sigmoid_core(plain_in("sigmoid", "qx", qx, s, z), os, oz);
}
at::Tensor hardsigmoid_q(const at::Tensor& qx, std::optional<double> os,
                         std::optional<int64_t> oz) {
  return hardsigmoid_core(legacy_in("hardsigmoid", "input", qx), os, oz);
}
at::Tensor hardsigmoid_p(const at::Tensor& qx, double s, int64_t z, double os, int64_t oz) {
  return hardsigmoid_core(plain_in("hardsigmoid", "qx", qx, s, z), os, oz);
}
at::Tensor celu_q(const at::Tensor& qx, double os, int64_t oz, const c10::Scalar& alpha) {
  return celu_core(legacy_in("celu", "input", qx), os, oz, alpha);
}
at::Tensor celu_p(const at::Tensor& qx, double s, int64_t z, double os, int64_t oz,
                  const c10::Scalar& alpha) {
  return celu_core(plain_in("celu", "self", qx, s, z), os, oz, alpha);
}
at::Tensor threshold_q(const at::Tensor& qx, const c10::Scalar& t, const c10::Scalar& v) {
  return threshold_core(legacy_in("threshold", "input", qx), t, v);
}
at::Tensor threshold_p(const at::Tensor& qx, double s, int64_t z, const c10::Scalar& t,
                       const c10::Scalar& v) {
  return threshold_core(plain_in("threshold", "qx", qx, s, z), t, v);
}
at::Tensor clamp_q(const at::Tensor& qx, const std::optional<c10::Scalar>& mn,
                   const std::optional<c10::Scalar>& mx) {
  return clamp_core(legacy_in("clamp", "input", qx), mn, mx);
}
at::Tensor clamp_p(const at::Tensor& qx, double s, int64_t z, const std::optional<c10::Scalar>& mn,
                   const std::optional<c10::Scalar>& mx) {
  return clamp_core(plain_in("clamp", "qx", qx, s, z), mn, mx);
}
at::Tensor softmax_q(const at::Tensor& qx, int64_t dim, double os, int64_t oz) {
  return softmax_core(legacy_in("softmax", "input", qx), dim, os, oz);
}
at::Tensor softmax_p(const at::Tensor& qx, double s, int64_t z, int64_t dim, double os,
                     int64_t oz) {
  return softmax_core(plain_in("softmax", "qx", qx, s, z), dim, os, oz);
}
at::Tensor tanh_q(const at::Tensor& qx, std::optional<double> os, std::optional<int64_t> oz) {
  return tanh_core(legacy_in("tanh", "input", qx), os, oz);
}
at::Tensor tanh_p(const at::Tensor& qx, double s, int64_t z, double os, int64_t oz) {
  return tanh_core(plain_in("tanh", "qx", qx, s, z), os, oz);
}
at::Tensor gelu_q(const at::Tensor& qx, std::optional<double> os, std::optional<int64_t> oz,
                  c10::string_view approximate) {
  return gelu_core(legacy_in("gelu", "input", qx), os, oz, approximate);
}
at::Tensor gelu_p(const at::Tensor& qx, double s, int64_t z, double os, int64_t oz,
                  c10::string_view approximate) {
  return gelu_core(plain_in("gelu", "qx", qx, s, z), os, oz, approximate);
}
at::Tensor silu_q(const at::Tensor& qx, double os, int64_t oz) {
  return silu_core(legacy_in("silu", "input", qx), os, oz);
}
at::Tensor silu_p(const at::Tensor& qx, double s, int64_t z, double os, int64_t oz) {
  return silu_core(plain_in("silu", "qx", qx, s, z), os, oz);
}
at::Tensor mish_q(const at::Tensor& qx, double os, int64_t oz) {
  return mish_core(legacy_in("mish", "input", qx), os, oz);
}
at::Tensor mish_p(const at::Tensor& qx, double s, int64_t z, double os, int64_t oz) {
  return mish_core(plain_in("mish", "qx", qx, s, z), os, oz);
}
at::Tensor softplus_q(const at::Tensor& qx, double os, int64_t oz, const c10::Scalar& beta,
                      const c10::Scalar& threshold) {
  return softplus_core(legacy_in("softplus", "input", qx), os, oz, beta, threshold);
}
at::Tensor softplus_p(const at::Tensor& qx, double s, int64_t z, double os, int64_t oz,
                      const c10::Scalar& beta, const c10::Scalar& threshold) {
  return softplus_core(plain_in("softplus", "qx", qx, s, z), os, oz, beta, threshold);
}

}  // namespace
}  // namespace ops
}  // namespace qplugin

#define QPLUGIN_ACT_IMPL(m, NAME) \
  m.impl(#NAME, TORCH_FN(qplugin::ops::NAME##_q));
#define QPLUGIN_ACT_PLAIN_IMPL(m, NAME) \
  m.impl(#NAME ".plain", TORCH_FN(qplugin::ops::NAME##_p));
#define QPLUGIN_ACT_OPS(X, m)                                                              \
  X(m, relu6) X(m, hardswish) X(m, elu) X(m, prelu) X(m, leaky_relu) X(m, sigmoid)         \
  X(m, hardsigmoid) X(m, celu) X(m, threshold) X(m, clamp) X(m, softmax) X(m, tanh)        \
  X(m, gelu) X(m, silu) X(m, mish) X(m, softplus)

// The PT2 door's `.plain` overloads take plain codes (CPU key); registered for QuantizedCPU too,
// so that a quantized tensor passed to one gets QArg::plain's "expected a plain tensor of codes"
// instead of the dispatcher's "could not run ... QuantizedCPU backend".
TORCH_LIBRARY_IMPL(qplugin, QuantizedCPU, m) {
  QPLUGIN_ACT_OPS(QPLUGIN_ACT_IMPL, m)
  QPLUGIN_ACT_OPS(QPLUGIN_ACT_PLAIN_IMPL, m)
}
TORCH_LIBRARY_IMPL(qplugin, CPU, m) {
  QPLUGIN_ACT_OPS(QPLUGIN_ACT_IMPL, m)
  QPLUGIN_ACT_OPS(QPLUGIN_ACT_PLAIN_IMPL, m)
}

// Keeps this file in static links: qplugin_register_all() (csrc/register.cpp) calls it.
QPLUGIN_REGISTRATION_ANCHOR(quantized_cpu_activation_kernel)
