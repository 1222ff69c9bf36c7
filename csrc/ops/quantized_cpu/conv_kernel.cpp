// QuantizedCPU (and CPU, for a clear error on float input) kernels of the conv ops; the work is in
// packed/conv_packed_params.cpp (validation, packing, apply) and conv_gemm.cpp (compute).
// conv1d / conv_transpose1d run as 2-d with H = 1 on the 2d class, as PyTorch does.
// conv2d_add / conv2d_add_relu run on the conv driver's GEMM with int32 output (exact), finished
// in double (kernels/gemm/exact_gemm.h add_requant); other plans on ops/quantized_cpu/exact_gemm.h.
// The `.plain` overloads (PT2 door, docs/pt2.md section 3: uint8 codes + explicit qparams, CPU
// key) wrap the input with QArg::plain and call the same apply as the quantized overloads
// (QArg::quantized), so both doors give the same bytes.
// Schemas: ops/conv.cpp.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/checks.h"
#include "common/qarg.h"
#include "common/quant_utils.h"
#include "driver/conv_gemm.h"
#include "kernels/gemm/exact_gemm.h"
#include "ops/quantized_cpu/exact_gemm.h"
#include "packed/conv_packed_params.h"
#include "ops/quantized_cpu/registration.h"
#include "register.h"

namespace qplugin {
namespace ops {
namespace {

using P2 = c10::intrusive_ptr<Conv2dPackedParams>;
using P3 = c10::intrusive_ptr<Conv3dPackedParams>;
using IntList = std::vector<int64_t>;

void check_1d_args(const char* op, const at::Tensor& w, const IntList& stride,
                   const IntList& padding, const IntList* output_padding, const IntList& dilation) {
  TORCH_CHECK(w.dim() == 3, "qplugin::", op, ": expected a 3-D weight [",
              output_padding ? "in_channels, out_channels/groups" : "out_channels, "
              "in_channels/groups", ", k], got ", w.dim(), "-D (shape ", w.sizes(), ")");
  auto one = [&](const char* what, const IntList& v) {
    TORCH_CHECK(v.size() == 1, "qplugin::", op, ": expected ", what, " with 1 value, got ",
                v.size(), " values");
  };
  one("stride", stride);
  one("padding", padding);
  one("dilation", dilation);
  if (output_padding) one("output_padding", *output_padding);
}

P2 conv1d_prepack(const at::Tensor& w, const c10::optional<at::Tensor>& b, IntList stride,
                  IntList padding, IntList dilation, int64_t groups) {
  TORCH_CHECK(w.defined(), "qplugin::conv1d_prepack: expected a weight tensor, got None");
  check_1d_args("conv1d_prepack", w, stride, padding, nullptr, dilation);
  return Conv2dPackedParams::prepack(w.unsqueeze(2), b, {1, stride[0]}, {0, padding[0]}, {0, 0},
                                     {1, dilation[0]}, groups, /*transpose=*/false,
                                     "conv1d_prepack");
}
P2 conv2d_prepack(const at::Tensor& w, const c10::optional<at::Tensor>& b, IntList stride,
                  IntList padding, IntList dilation, int64_t groups) {
  return Conv2dPackedParams::prepack(w, b, stride, padding, {}, dilation, groups, false,
                                     "conv2d_prepack");
}
P3 conv3d_prepack(const at::Tensor& w, const c10::optional<at::Tensor>& b, IntList stride,
                  IntList padding, IntList dilation, int64_t groups) {
  return Conv3dPackedParams::prepack(w, b, stride, padding, {}, dilation, groups, false,
                                     "conv3d_prepack");
}
P2 conv_transpose1d_prepack(const at::Tensor& w, const c10::optional<at::Tensor>& b,
                            IntList stride, IntList padding, IntList output_padding,
                            IntList dilation, int64_t groups) {
  TORCH_CHECK(w.defined(), "qplugin::conv_transpose1d_prepack: expected a weight tensor, got None");
  check_1d_args("conv_transpose1d_prepack", w, stride, padding, &output_padding, dilation);
  return Conv2dPackedParams::prepack(w.unsqueeze(2), b, {1, stride[0]}, {0, padding[0]},
                                     {0, output_padding[0]}, {1, dilation[0]}, groups,
                                     /*transpose=*/true, "conv_transpose1d_prepack");
}
P2 conv_transpose2d_prepack(const at::Tensor& w, const c10::optional<at::Tensor>& b,
                            IntList stride, IntList padding, IntList output_padding,
                            IntList dilation, int64_t groups) {
  return Conv2dPackedParams::prepack(w, b, stride, padding, output_padding, dilation, groups,
                                     true, "conv_transpose2d_prepack");
}
P3 conv_transpose3d_prepack(const at::Tensor& w, const c10::optional<at::Tensor>& b,
                            IntList stride, IntList padding, IntList output_padding,
                            IntList dilation, int64_t groups) {
  return Conv3dPackedParams::prepack(w, b, stride, padding, output_padding, dilation, groups,
                                     true, "conv_transpose3d_prepack");
}

template <class PP>
void check_packed(const char* op, const PP& w, bool transpose, bool one_d) {
  TORCH_CHECK(w, "qplugin::", op, ": expected packed weights, got None");
  TORCH_CHECK(w->transpose() == transpose, "qplugin::", op, ": expected packed weights of a ",
              transpose ? "transposed conv (conv_transpose*_prepack)" : "conv (conv*_prepack)",
              ", got ", w->transpose() ? "a transposed conv's" : "a conv's");
  (void)one_d;
}

// The input operand on either door: `base` names the op for QArg (which adds ".plain").
QArg conv_input(const char* base, const at::Tensor& x, bool plain, double x_scale,
                int64_t x_zero_point) {
  return plain ? QArg::plain(base, "qx", x, x_scale, x_zero_point, {at::kQUInt8})
               : QArg::quantized(base, "input", x, {at::kQUInt8});
}

// conv1d / conv_transpose1d: 3-D (N, C, L) input run as 2-d with H = 1.
template <class PP>
at::Tensor conv1d_core(const char* base, const char* op, const QArg& x, const PP& w, double scale,
                       int64_t zp, bool relu) {
  TORCH_CHECK(x.dim() == 3, "qplugin::", op, ": expected a 3-D input (N, C, L), got ", x.dim(),
              "-D (shape ", x.sizes(), ")");
  const QArg x4 = conv_input(base, x.tensor().unsqueeze(2), x.is_plain(), x.q_scale(),
                             x.q_zero_point());
  return w->apply(x4, scale, zp, relu, op).squeeze(2);
}

template <bool Relu>
at::Tensor conv1d(const at::Tensor& x, const P2& w, double scale, int64_t zp) {
  const char* op = Relu ? "conv1d_relu" : "conv1d";
  check_packed(op, w, false, true);
  return conv1d_core(op, op, conv_input(op, x, false, 0.0, 0), w, scale, zp, Relu);
}
template <bool Relu>
at::Tensor conv2d(const at::Tensor& x, const P2& w, double scale, int64_t zp) {
  const char* op = Relu ? "conv2d_relu" : "conv2d";
  check_packed(op, w, false, false);
  return w->apply(conv_input(op, x, false, 0.0, 0), scale, zp, Relu, op);
}
template <bool Relu>
at::Tensor conv3d(const at::Tensor& x, const P3& w, double scale, int64_t zp) {
  const char* op = Relu ? "conv3d_relu" : "conv3d";
  check_packed(op, w, false, false);
  return w->apply(conv_input(op, x, false, 0.0, 0), scale, zp, Relu, op);
}

// The .plain overloads: (qx, qx_scale, qx_zero_point, packed_weight, output_scale,
// output_zero_point) -> uint8 codes, channels-last like the quantized overloads.
template <bool Relu>
at::Tensor conv1d_plain(const at::Tensor& x, double xs, int64_t xzp, const P2& w, double scale,
                        int64_t zp) {
  const char* base = Relu ? "conv1d_relu" : "conv1d";
  const char* op = Relu ? "conv1d_relu.plain" : "conv1d.plain";
  check_packed(op, w, false, true);
  return conv1d_core(base, op, conv_input(base, x, true, xs, xzp), w, scale, zp, Relu);
}
// conv2d[_relu].plain and conv3d[_relu].plain (kDim 2 or 3).
template <int kDim, bool Relu>
at::Tensor conv_nd_plain(const at::Tensor& x, double xs, int64_t xzp,
                         const c10::intrusive_ptr<ConvPackedParams<kDim>>& w, double scale,
                         int64_t zp) {
  const char* base = kDim == 2 ? (Relu ? "conv2d_relu" : "conv2d")
                               : (Relu ? "conv3d_relu" : "conv3d");
  const char* op = kDim == 2 ? (Relu ? "conv2d_relu.plain" : "conv2d.plain")
                             : (Relu ? "conv3d_relu.plain" : "conv3d.plain");
  check_packed(op, w, false, false);
  return w->apply(conv_input(base, x, true, xs, xzp), scale, zp, Relu, op);
}
at::Tensor conv_transpose1d_plain(const at::Tensor& x, double xs, int64_t xzp, const P2& w,
                                  double scale, int64_t zp) {
  check_packed("conv_transpose1d.plain", w, true, true);
  return conv1d_core("conv_transpose1d", "conv_transpose1d.plain",
                     conv_input("conv_transpose1d", x, true, xs, xzp), w, scale, zp, false);
}
at::Tensor conv_transpose2d_plain(const at::Tensor& x, double xs, int64_t xzp, const P2& w,
                                  double scale, int64_t zp) {
  check_packed("conv_transpose2d.plain", w, true, false);
  return w->apply(conv_input("conv_transpose2d", x, true, xs, xzp), scale, zp, false,
                  "conv_transpose2d.plain");
}
at::Tensor conv_transpose3d_plain(const at::Tensor& x, double xs, int64_t xzp, const P3& w,
                                  double scale, int64_t zp) {
  check_packed("conv_transpose3d.plain", w, true, false);
  return w->apply(conv_input("conv_transpose3d", x, true, xs, xzp), scale, zp, false,
                  "conv_transpose3d.plain");
}
// Legacy default overloads (PyTorch's QConvInt8ForBC): the per-call stride/padding/dilation/
// groups were removed from the op's semantics; PyTorch warns once and ignores them (the packed
// object's config is used), and so does qplugin, so that old scripted models keep running.
template <int kDim, bool Relu>
at::Tensor conv_legacy(const at::Tensor& x, const c10::intrusive_ptr<ConvPackedParams<kDim>>& w,
                       IntList /*stride*/, IntList /*padding*/, IntList /*dilation*/,
                       int64_t /*groups*/, double scale, int64_t zp) {
  TORCH_WARN_ONCE("qplugin::",
                  kDim == 2 ? (Relu ? "conv2d_relu" : "conv2d") : (Relu ? "conv3d_relu" : "conv3d"),
                  ": the arguments [stride, padding, dilation, groups] are ignored (the packed "
                  "weight's config is used, as in PyTorch, which removed them); call the .new "
                  "overload without them");
  if constexpr (kDim == 2) {
    return conv2d<Relu>(x, w, scale, zp);
  } else {
    return conv3d<Relu>(x, w, scale, zp);
  }
}

// y = quant(conv(qx) + dequant(qaccum)), ReLU (conv2d_add_relu) after the add, as PyTorch's
// onednn conv2d_add[_relu] (sum post-op on the real-valued conv result):
//   acc[p][c] = sum_taps,ci (x - x_zp) * (w[c] - w_zp[c])        exact (exact_gemm.h), padding
//                                                                 taps contribute 0
//   v = acc * (x_scale * w_scale[c]) + bias[c] + (qaccum - a_zp) * a_scale      double
//   y = clamp(nearbyint(max(v, 0 if relu) / output_scale) + output_zp, 0, 255)  half to even
// qx: quint8 [N, C_in, H, W]; qaccum: quint8 of the output's shape [N, C_out, OH, OW] (any
// layout, any qparams; never written: PyTorch writes the result into a channels-last qaccum,
// qplugin does not). Output: channels-last quint8, as PyTorch's. Same bytes under every ISA.
// On the PT2 door (conv2d_add[_relu].plain) qx / qaccum are uint8 codes with explicit qparams
// and the output is uint8 codes (channels last); the same core runs for both doors.
// `op` names the overload in messages ("conv2d_add" or "conv2d_add.plain"); x and qaccum come
// from either door (QArg), the result is on x's door (quint8 or uint8 codes, channels last).
template <bool Relu>
at::Tensor conv2d_add_core(const char* op, const QArg& x, const QArg& qaccum, const P2& w,
                           double scale, int64_t zp) {
  TORCH_CHECK(x.dim() == 4, "qplugin::", op, ": expected a 4-D input qx (N, C, H, W), got ",
              x.dim(), "-D (shape ", x.sizes(), ")");
  checks::check_output_qparams(op, scale, zp, at::kQUInt8);
  const auto& p = *w;
  TORCH_CHECK(p.spatial_ == 2 && p.k_[0] == 1, "qplugin::", op,
              ": expected packed weights of a 2-d conv, got a ", p.spatial_, "-d one");
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t G = p.groups(), Cin = p.Cin_, Cout = p.Cout_;
  TORCH_CHECK(C == Cin, "qplugin::", op, ": expected an input with ", Cin,
              " channels (the weight's in_channels), got ", C, " (input shape ", x.sizes(), ")");
  const int64_t KH = p.k_[1], KW = p.k_[2], SH = p.s_[1], SW = p.s_[2];
  const int64_t PH = p.p_[1], PW = p.p_[2], DH = p.d_[1], DW = p.d_[2];
  const int64_t OH = (H + 2 * PH - DH * (KH - 1) - 1) / SH + 1;
  const int64_t OW = (W + 2 * PW - DW * (KW - 1) - 1) / SW + 1;
  TORCH_CHECK(H + 2 * PH - DH * (KH - 1) - 1 >= 0 && W + 2 * PW - DW * (KW - 1) - 1 >= 0,
              "qplugin::", op, ": expected an input at least as large as the dilated kernel ",
              "after padding, got input ", H, "x", W, ", kernel ", KH, "x", KW, ", padding ", PH,
              "x", PW, ", dilation ", DH, "x", DW);
  TORCH_CHECK(qaccum.dim() == 4 && qaccum.size(0) == N && qaccum.size(1) == Cout &&
                  qaccum.size(2) == OH && qaccum.size(3) == OW,
              "qplugin::", op, ": expected qaccum of the output's shape [", N, ", ", Cout, ", ",
              OH, ", ", OW, "], got ", qaccum.sizes());
  const double in_scale = x.q_scale(), a_scale = qaccum.q_scale();
  TORCH_CHECK(std::isfinite(in_scale) && in_scale > 0.0, "qplugin::", op,
              ": expected qx with a finite, positive scale, got ", in_scale);
  TORCH_CHECK(std::isfinite(a_scale) && a_scale > 0.0, "qplugin::", op,
              ": expected qaccum with a finite, positive scale, got ", a_scale);
  at::Tensor y = new_output(x, {N, Cout, OH, OW}, at::kQUInt8, scale, zp,
                            at::MemoryFormat::ChannelsLast);
  if (y.numel() == 0) return y;

  // Zero points and scales per channel, bias, from the packed weight.
  auto wb = p.unpack();
  const at::Tensor& qw = std::get<0>(wb);
  std::vector<int32_t> zw(static_cast<size_t>(Cout));
  std::vector<double> mult(static_cast<size_t>(Cout)), bias(static_cast<size_t>(Cout), 0.0);
  if (qw.qscheme() == at::kPerTensorAffine) {
    for (int64_t c = 0; c < Cout; ++c) {
      zw[c] = static_cast<int32_t>(qw.q_zero_point());
      mult[c] = in_scale * qw.q_scale();
    }
  } else {
    const at::Tensor s = qw.q_per_channel_scales().to(at::kDouble).contiguous();
    const at::Tensor z = qw.q_per_channel_zero_points().to(at::kLong).contiguous();
    for (int64_t c = 0; c < Cout; ++c) {
      zw[c] = static_cast<int32_t>(z.data_ptr<int64_t>()[c]);
      mult[c] = in_scale * s.data_ptr<double>()[c];
    }
  }
  if (std::get<1>(wb).has_value()) {
    const at::Tensor b = std::get<1>(wb)->to(at::kDouble).contiguous();
    for (int64_t c = 0; c < Cout; ++c) bias[c] = b.data_ptr<double>()[c];
  }

  const int64_t Cg = Cin / G, Cog = Cout / G, Kt = KH * KW * Cg, P = OH * OW;
  const uint8_t in_zp = static_cast<uint8_t>(x.q_zero_point());
  const QArg xl = x.contiguous(at::MemoryFormat::ChannelsLast);  // NHWC
  const uint8_t* xp = reinterpret_cast<const uint8_t*>(xl.data_ptr());
  const QArg ac = qaccum.contiguous(at::MemoryFormat::ChannelsLast);
  const uint8_t* ap = reinterpret_cast<const uint8_t*>(ac.data_ptr());
  const int64_t a_zp = qaccum.q_zero_point();
  uint8_t* yp = reinterpret_cast<uint8_t*>(out_ptr(y));
  const auto& xk = kernels::gemm::exact_gemm_kernels_for(kernels::current_isa());

  // Finish rows [r0, r1) of C_out accumulators (pixels of the images from `n0` on): the ISA pass
  // (ExactGemmKernels::add_requant) decides every element it can vouch for, quantize_exact the
  // rest (NaN or huge quotients).
  auto finish = [&](const int32_t* acc, int64_t n0, int64_t r0, int64_t r1) {
    std::vector<uint8_t> unsure(static_cast<size_t>(Cout));
    for (int64_t r = r0; r < r1; ++r) {
      const int32_t* ar = acc + r * Cout;
      const uint8_t* an = ap + (n0 * P + r) * Cout;
      uint8_t* yr = yp + (n0 * P + r) * Cout;
      if (xk.add_requant(ar, an, Cout, mult.data(), bias.data(), a_zp, a_scale, Relu, scale, zp,
                         yr, unsure.data()) == 0)
        continue;
      for (int64_t c = 0; c < Cout; ++c) {
        if (!unsure[c]) continue;
        double v = static_cast<double>(ar[c]) * mult[c] + bias[c] +
                   static_cast<double>(static_cast<int64_t>(an[c]) - a_zp) * a_scale;
        if (Relu && v < 0.0) v = 0.0;
        yr[c] = static_cast<uint8_t>(quantize_exact(v, scale, zp, /*qmin=*/0, /*qmax=*/255));
      }
    }
  };

  // Fast path: the conv driver's GEMM (the regular conv's packed weight and kernels) writing the
  // exact int32 accumulators (driver::ConvRequant::out_i32), exact while K * 255 * 255 < 2^31
  // (qgemm.h); images in chunks whose accumulators stay in cache (~1 MiB).
  if (p.kind_ == driver::ConvPlan::Kind::kGemm && Kt <= 33025) {
    std::vector<float> unused(static_cast<size_t>(Cout), 0.0f);
    driver::ConvRequant rq{unused.data(), unused.data(), 0.0f, 255.0f, 0,
                           static_cast<int32_t>(in_zp)};
    rq.out_i32 = 1;
    const int64_t per_image = P * Cout;
    const int64_t chunk = std::max<int64_t>(1, (int64_t{1} << 18) / std::max<int64_t>(1, per_image));
    std::vector<int32_t> acc(static_cast<size_t>(std::min(N, chunk) * per_image));
    const int64_t in[3] = {1, H, W}, out[3] = {1, OH, OW};
    for (int64_t n0 = 0; n0 < N; n0 += chunk) {
      const int64_t nb = std::min(chunk, N - n0);
      driver::conv_forward(p, xp + n0 * H * W * Cin, nb, in,
                           reinterpret_cast<uint8_t*>(acc.data()), out, rq);
      at::parallel_for(0, nb * P, std::max<int64_t>(1, 4096 / Cout), [&](int64_t r0, int64_t r1) {
        finish(acc.data(), n0, r0, r1);
      });
    }
    return y;
  }

  // General path (depthwise / grouped plans without a GEMM, K > 33025): im2col + the exact int64
  // GEMM. Weight [C_out][KH][KW][C_in/g] int8 (the im2col order).
  const at::Tensor wi = qw.int_repr().permute({0, 2, 3, 1}).contiguous();
  const int8_t* wp = reinterpret_cast<const int8_t*>(wi.data_ptr());
  std::vector<uint8_t> col(static_cast<size_t>(P * Kt));
  std::vector<int64_t> acc(static_cast<size_t>(P * Cout));
  for (int64_t n = 0; n < N; ++n) {
    const uint8_t* xn = xp + n * H * W * Cin;
    for (int64_t g = 0; g < G; ++g) {
      // im2col of group g: row (oh, ow), columns (kh, kw, c); padding = the input zero point.
      at::parallel_for(0, P, 64, [&](int64_t p0, int64_t p1) {
        for (int64_t pix = p0; pix < p1; ++pix) {
          const int64_t oh = pix / OW, ow = pix % OW;
          uint8_t* row = col.data() + pix * Kt;
          for (int64_t kh = 0; kh < KH; ++kh) {
            const int64_t ih = oh * SH - PH + kh * DH;
            for (int64_t kw = 0; kw < KW; ++kw) {
              const int64_t iw = ow * SW - PW + kw * DW;
              uint8_t* dst = row + (kh * KW + kw) * Cg;
              if (ih < 0 || ih >= H || iw < 0 || iw >= W) {
                std::fill(dst, dst + Cg, in_zp);
              } else {
                const uint8_t* src = xn + (ih * W + iw) * Cin + g * Cg;
                std::copy(src, src + Cg, dst);
              }
            }
          }
        }
      });
      exact_gemm_s64(col.data(), /*lda=*/Kt, /*M=*/P, Kt, static_cast<int32_t>(in_zp),
                     wp + g * Cog * Kt, /*ldb=*/Kt, /*N=*/Cog, zw.data() + g * Cog,
                     acc.data() + g * Cog, /*ldc=*/Cout);
    }
    const uint8_t* an = ap + n * P * Cout;
    uint8_t* yn = yp + n * P * Cout;
    at::parallel_for(0, P * Cout, 4096, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t c = i % Cout;
        double v = static_cast<double>(acc[i]) * mult[c] + bias[c] +
                   static_cast<double>(static_cast<int64_t>(an[i]) - a_zp) * a_scale;
        if (Relu && v < 0.0) v = 0.0;
        yn[i] = static_cast<uint8_t>(quantize_exact(v, scale, zp, /*qmin=*/0, /*qmax=*/255));
      }
    });
  }
  return y;
}

template <bool Relu>
at::Tensor conv2d_add(const at::Tensor& x, const at::Tensor& qaccum, const P2& w, double scale,
                      int64_t zp) {
  const char* op = Relu ? "conv2d_add_relu" : "conv2d_add";
  check_packed(op, w, false, false);
  const QArg qx = QArg::quantized(op, "qx", x, {at::kQUInt8});
  const QArg qa = QArg::quantized(op, "qaccum", qaccum, {at::kQUInt8});
  return conv2d_add_core<Relu>(op, qx, qa, w, scale, zp);
}
// .plain: (qx, qx_scale, qx_zero_point, qaccum, qaccum_scale, qaccum_zero_point, packed_weight,
// output_scale, output_zero_point) -> uint8 codes, channels last.
template <bool Relu>
at::Tensor conv2d_add_plain(const at::Tensor& x, double xs, int64_t xzp, const at::Tensor& qaccum,
                            double as, int64_t azp, const P2& w, double scale, int64_t zp) {
  const char* base = Relu ? "conv2d_add_relu" : "conv2d_add";
  const char* op = Relu ? "conv2d_add_relu.plain" : "conv2d_add.plain";
  check_packed(op, w, false, false);
  const QArg qx = QArg::plain(base, "qx", x, xs, xzp, {at::kQUInt8});
  const QArg qa = QArg::plain(base, "qaccum", qaccum, as, azp, {at::kQUInt8});
  return conv2d_add_core<Relu>(op, qx, qa, w, scale, zp);
}

at::Tensor conv_transpose1d(const at::Tensor& x, const P2& w, double scale, int64_t zp) {
  const char* op = "conv_transpose1d";
  check_packed(op, w, true, true);
  return conv1d_core(op, op, conv_input(op, x, false, 0.0, 0), w, scale, zp, false);
}
at::Tensor conv_transpose2d(const at::Tensor& x, const P2& w, double scale, int64_t zp) {
  check_packed("conv_transpose2d", w, true, false);
  return w->apply(conv_input("conv_transpose2d", x, false, 0.0, 0), scale, zp, false,
                  "conv_transpose2d");
}
at::Tensor conv_transpose3d(const at::Tensor& x, const P3& w, double scale, int64_t zp) {
  check_packed("conv_transpose3d", w, true, false);
  return w->apply(conv_input("conv_transpose3d", x, false, 0.0, 0), scale, zp, false,
                  "conv_transpose3d");
}

template <class PP>
std::tuple<at::Tensor, c10::optional<at::Tensor>> unpack_impl(const char* op, const PP& w,
                                                              bool squeeze) {
  TORCH_CHECK(w, "qplugin::", op, ": expected packed weights, got None");
  auto r = w->unpack();
  if (squeeze) {
    TORCH_CHECK(std::get<0>(r).dim() == 4 && std::get<0>(r).size(2) == 1, "qplugin::", op,
                ": expected packed weights of a 1-d conv (prepacked by conv1d_prepack or "
                "conv_transpose1d_prepack), got weight shape ", std::get<0>(r).sizes());
    std::get<0>(r) = std::get<0>(r).squeeze(2);
  }
  return r;
}
// Each rank's conv and transposed-conv unpack (P: the rank's packed-params class).
#define QPLUGIN_CONV_UNPACK(D, P)                                                               \
  std::tuple<at::Tensor, c10::optional<at::Tensor>> conv##D##d_unpack(const P& w) {             \
    return unpack_impl("conv" #D "d_unpack", w, /*squeeze=*/D == 1);                            \
  }                                                                                             \
  std::tuple<at::Tensor, c10::optional<at::Tensor>> conv_transpose##D##d_unpack(const P& w) {   \
    return unpack_impl("conv_transpose" #D "d_unpack", w, /*squeeze=*/D == 1);                  \
  }
QPLUGIN_CONV_UNPACK(1, P2)
QPLUGIN_CONV_UNPACK(2, P2)
QPLUGIN_CONV_UNPACK(3, P3)
#undef QPLUGIN_CONV_UNPACK

// The ops, then their PT2 doors (`.plain`), registered for QuantizedCPU and CPU alike: on a float
// tensor an op raises its own "expected a quantized tensor", and a quantized tensor passed to a
// `.plain` overload gets QArg::plain's message, instead of the dispatcher's "no kernel".
void register_conv(torch::Library& m) {
  // Per spatial rank D: the prepack ops and the transposed conv with its PT2 door.
#define QPLUGIN_IMPL_CONV_RANK(D)                                                     \
  m.impl("conv" #D "d_prepack", TORCH_FN(conv##D##d_prepack));                        \
  m.impl("conv_transpose" #D "d_prepack", TORCH_FN(conv_transpose##D##d_prepack));    \
  m.impl("conv_transpose" #D "d", TORCH_FN(conv_transpose##D##d));                    \
  m.impl("conv_transpose" #D "d.plain", TORCH_FN(conv_transpose##D##d_plain));
  QPLUGIN_IMPL_CONV_RANK(1) QPLUGIN_IMPL_CONV_RANK(2) QPLUGIN_IMPL_CONV_RANK(3)
#undef QPLUGIN_IMPL_CONV_RANK
  QPLUGIN_IMPL_RELU_PAIR("conv1d", "", conv1d)
  QPLUGIN_IMPL_RELU_PAIR("conv2d", ".new", conv2d)
  QPLUGIN_IMPL_RELU_PAIR("conv3d", ".new", conv3d)
  // Per rank D of 2 and 3: the legacy default overloads and the PT2 door of conv<D>d[_relu].
#define QPLUGIN_IMPL_CONV_ND(D)                                                        \
  m.impl("conv" #D "d", TORCH_FN((conv_legacy<D, false>)));                            \
  m.impl("conv" #D "d_relu", TORCH_FN((conv_legacy<D, true>)));                        \
  m.impl("conv" #D "d.plain", TORCH_FN((conv_nd_plain<D, false>)));                    \
  m.impl("conv" #D "d_relu.plain", TORCH_FN((conv_nd_plain<D, true>)));
  QPLUGIN_IMPL_CONV_ND(2) QPLUGIN_IMPL_CONV_ND(3)
#undef QPLUGIN_IMPL_CONV_ND
  QPLUGIN_IMPL_RELU_PAIR("conv2d_add", "", conv2d_add)
  QPLUGIN_IMPL_RELU_PAIR("conv1d", ".plain", conv1d_plain)
  QPLUGIN_IMPL_RELU_PAIR("conv2d_add", ".plain", conv2d_add_plain)
}

}  // namespace
}  // namespace ops
}  // namespace qplugin

QPLUGIN_IMPL_QUANTIZED_AND_CPU(qplugin::ops::register_conv(m);)
// No tensor argument to dispatch on: one kernel for every key.
TORCH_LIBRARY_IMPL(qplugin, CatchAll, m) {
#define QPLUGIN_IMPL_CONV_UNPACK(D)                                                           \
  m.impl("conv" #D "d_unpack", TORCH_FN(qplugin::ops::conv##D##d_unpack));                    \
  m.impl("conv_transpose" #D "d_unpack", TORCH_FN(qplugin::ops::conv_transpose##D##d_unpack));
  QPLUGIN_IMPL_CONV_UNPACK(1) QPLUGIN_IMPL_CONV_UNPACK(2) QPLUGIN_IMPL_CONV_UNPACK(3)
#undef QPLUGIN_IMPL_CONV_UNPACK
}

// Keeps this file in static links: qplugin_register_all() (csrc/register.cpp) calls it.
QPLUGIN_REGISTRATION_ANCHOR(quantized_cpu_conv_kernel)
