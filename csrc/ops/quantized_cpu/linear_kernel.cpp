// QuantizedCPU (and CPU, for a clear error on float input) kernels of the linear ops; the work is
// in packed/linear_packed_params.cpp (validation, packing, the threaded GEMM call).
// linear_leaky_relu / linear_tanh run here on ops/quantized_cpu/exact_gemm.h. Each op's `.plain`
// overload (PT2 door, docs/pt2.md section 3: uint8 codes + explicit qparams, CPU key) wraps its
// input with QArg::plain and runs the same core as the quantized overload (QArg::quantized), so
// both doors give the same bytes.
// Schemas: ops/linear.cpp. Engine: kernels/gemm/qgemm.h.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/checks.h"
#include "common/qarg.h"
#include "common/quant_utils.h"
#include "kernels/dispatch.h"
#include "kernels/gemm/exact_gemm.h"
#include "ops/quantized_cpu/exact_gemm.h"
#include "packed/linear_packed_params.h"
#include "ops/quantized_cpu/registration.h"
#include "register.h"

namespace qplugin {
namespace ops {
namespace {

using Packed = c10::intrusive_ptr<LinearPackedParams>;

Packed linear_prepack_quantized_cpu(const at::Tensor& weight,
                                    const c10::optional<at::Tensor>& bias) {
  return LinearPackedParams::prepack(weight, bias, "linear_prepack");
}

template <bool ReluFused>
at::Tensor linear_quantized_cpu(const at::Tensor& x, const Packed& w, double output_scale,
                                int64_t output_zero_point) {
  const char* op = ReluFused ? "linear_relu" : "linear";
  TORCH_CHECK(w, "qplugin::", op, ": expected packed weights (qplugin.LinearPackedParams), got "
              "None");
  return w->apply<ReluFused>(QArg::quantized(op, "input", x, {at::kQUInt8}), output_scale,
                             output_zero_point);
}

// linear.plain / linear_relu.plain: X uint8 codes with (X_scale, X_zero_point); uint8 result codes
// with (Y_scale_i, Y_zero_point_i).
template <bool ReluFused>
at::Tensor linear_plain(const at::Tensor& x, double x_scale, int64_t x_zero_point, const Packed& w,
                        double output_scale, int64_t output_zero_point) {
  const char* op = ReluFused ? "linear_relu" : "linear";
  TORCH_CHECK(w, "qplugin::", op, ".plain: expected packed weights (qplugin.LinearPackedParams), "
              "got None");
  return w->apply<ReluFused>(QArg::plain(op, "X", x, x_scale, x_zero_point, {at::kQUInt8}),
                             output_scale, output_zero_point);
}

enum class Act { kLeakyRelu, kTanh };

// The exact decision for one element: quantize_exact(act(v)) with act in double (std::tanh).
template <Act A>
inline uint8_t act_exact(double v, double s, int64_t zp, double slope) {
  const double w = A == Act::kLeakyRelu ? (v >= 0.0 ? v : v * slope) : std::tanh(v);
  return static_cast<uint8_t>(quantize_exact(w, s, zp, 0, 255));
}

// Rows of int32 accumulators (rows x N, row stride N) to output bytes: the ISA kernel
// (ExactGemmKernels::act_requant, vectorized; tanh by its own exp with an error bound) decides
// every element it can vouch for, act_exact the few it flags (exact_gemm.h).
template <Act A>
void act_rows_i32(const int32_t* acc, int64_t rows, int64_t N, const double* mult,
                  const double* bias, double s, int64_t zp, double slope, uint8_t* out) {
  const auto& k = kernels::gemm::exact_gemm_kernels_for(kernels::current_isa());
  std::vector<uint8_t> unsure(static_cast<size_t>(N));
  for (int64_t m = 0; m < rows; ++m) {
    const int32_t* a = acc + m * N;
    uint8_t* o = out + m * N;
    const int64_t bad = k.act_requant(a, N, mult, bias,
                                      A == Act::kTanh ? kernels::gemm::kActTanh
                                                      : kernels::gemm::kActLeakyRelu,
                                      slope, s, zp, o, unsure.data());
    if (bad == 0) continue;
    for (int64_t n = 0; n < N; ++n) {
      if (unsure[n]) {
        o[n] = act_exact<A>(static_cast<double>(a[n]) * mult[n] + bias[n], s, zp, slope);
      }
    }
  }
}

// y = quant(act(x @ W^T + b)) with the activation on the real value (as PyTorch's onednn post-op
// ops; an activation on the requantized u8 would round twice). x: quint8 [..., K] per tensor;
// W: the packed qint8 weight (per tensor or per channel), as row-major codes (row_major(),
// built once per packed object) for the exact GEMM.
//   acc[m][n] = sum_k (x[m][k] - x_zp) * (W[n][k] - w_zp[n])       exact (exact_gemm.h)
//   v = acc * (x_scale * w_scale[n]) + b[n]                          double
//   y = clamp(nearbyint(act(v) / Y_scale) + Y_zp, 0, 255)            round half to even
// Output: contiguous quint8 [..., N] (PyTorch's layout). Every ISA gives the same bytes.
template <Act A>
at::Tensor linear_act_core(const QArg& x, const Packed& w, double output_scale,
                           int64_t output_zero_point, double negative_slope) {
  const char* op = A == Act::kLeakyRelu
                       ? (x.is_plain() ? "linear_leaky_relu.plain" : "linear_leaky_relu")
                       : (x.is_plain() ? "linear_tanh.plain" : "linear_tanh");
  TORCH_CHECK(w, "qplugin::", op, ": expected packed weights (qplugin.LinearPackedParams), got "
              "None");
  const int64_t N = w->out_features(), K = w->in_features();
  checks::check_linear_input(op, x, N, K);
  checks::check_output_qparams(op, output_scale, output_zero_point, at::kQUInt8);
  if (A == Act::kLeakyRelu) {
    TORCH_CHECK(std::isfinite(negative_slope), "qplugin::", op,
                ": expected a finite negative_slope, got ", negative_slope);
  }
  const double in_scale = x.q_scale();
  TORCH_CHECK(std::isfinite(in_scale) && in_scale > 0.0, "qplugin::", op,
              ": expected input with a finite, positive scale, got ", in_scale);
  std::vector<int64_t> out_sizes(x.sizes().begin(), x.sizes().end());
  out_sizes.back() = N;
  at::Tensor y = new_output(x, out_sizes, at::kQUInt8, output_scale, output_zero_point);
  int64_t M = 1;
  for (int64_t d = 0; d + 1 < x.dim(); ++d) M *= x.size(d);
  if (M == 0 || N == 0) return y;

  const auto rm = w->row_major();  // int8 [N][K] codes, zero points, scales (cached)
  std::vector<double> mult(static_cast<size_t>(N)), bias(static_cast<size_t>(N), 0.0);
  for (int64_t n = 0; n < N; ++n) mult[n] = in_scale * rm->scale[n];
  if (w->bias().has_value()) {
    const at::Tensor b = w->bias()->to(at::kDouble).contiguous();
    for (int64_t n = 0; n < N; ++n) bias[n] = b.data_ptr<double>()[n];
  }

  const QArg xc = x.contiguous();
  const uint8_t* xp = reinterpret_cast<const uint8_t*>(xc.data_ptr());
  const int32_t x_zp = static_cast<int32_t>(x.q_zero_point());
  uint8_t* out = reinterpret_cast<uint8_t*>(out_ptr(y));
  if (K <= LinearPackedParams::kMaxExactI32K) {
    // The packed GEMM's exact int32 accumulators (QGemmEpilogue::out_i32), finished in double
    // row block by row block (the int32 block stays in cache).
    constexpr int64_t kRows = 32;
    at::parallel_for(0, (M + kRows - 1) / kRows, 1, [&](int64_t b0, int64_t b1) {
      std::vector<int32_t> acc(static_cast<size_t>(kRows * N));
      for (int64_t blk = b0; blk < b1; ++blk) {
        const int64_t m0 = blk * kRows, rows = std::min(kRows, M - m0);
        // Inside a parallel region the GEMM's own parallel_for runs inline (ATen's rule); with
        // a single block (M <= kRows) it is the GEMM that spreads over the threads.
        w->gemm_i32(xp + m0 * K, K, rows, x_zp, acc.data(), N);
        act_rows_i32<A>(acc.data(), rows, N, mult.data(), bias.data(), output_scale,
                        output_zero_point, negative_slope, out + m0 * N);
      }
    });
    return y;
  }
  std::vector<int64_t> acc(static_cast<size_t>(M * N));
  exact_gemm_s64(xp, /*lda=*/K, M, K, x_zp,
                 reinterpret_cast<const int8_t*>(rm->codes.data_ptr()), /*ldb=*/K, N,
                 rm->zp.data(), acc.data(), /*ldc=*/N);
  at::parallel_for(0, M, std::max<int64_t>(1, 4096 / std::max<int64_t>(N, 1)),
                   [&](int64_t m0, int64_t m1) {
                     for (int64_t i = m0 * N; i < m1 * N; ++i) {
                       out[i] = act_exact<A>(static_cast<double>(acc[i]) * mult[i % N] +
                                                 bias[i % N],
                                             output_scale, output_zero_point, negative_slope);
                     }
                   });
  return y;
}

at::Tensor linear_leaky_relu_quantized_cpu(const at::Tensor& x, const Packed& w,
                                           double output_scale, int64_t output_zero_point,
                                           double negative_slope) {
  return linear_act_core<Act::kLeakyRelu>(
      QArg::quantized("linear_leaky_relu", "input", x, {at::kQUInt8}), w, output_scale,
      output_zero_point, negative_slope);
}

at::Tensor linear_tanh_quantized_cpu(const at::Tensor& x, const Packed& w, double output_scale,
                                     int64_t output_zero_point) {
  return linear_act_core<Act::kTanh>(QArg::quantized("linear_tanh", "input", x, {at::kQUInt8}),
                                     w, output_scale, output_zero_point, /*negative_slope=*/0.0);
}

at::Tensor linear_leaky_relu_plain(const at::Tensor& x, double x_scale, int64_t x_zero_point,
                                   const Packed& w, double output_scale, int64_t output_zero_point,
                                   double negative_slope) {
  return linear_act_core<Act::kLeakyRelu>(
      QArg::plain("linear_leaky_relu", "X", x, x_scale, x_zero_point, {at::kQUInt8}), w,
      output_scale, output_zero_point, negative_slope);
}

at::Tensor linear_tanh_plain(const at::Tensor& x, double x_scale, int64_t x_zero_point,
                             const Packed& w, double output_scale, int64_t output_zero_point) {
  return linear_act_core<Act::kTanh>(
      QArg::plain("linear_tanh", "X", x, x_scale, x_zero_point, {at::kQUInt8}), w, output_scale,
      output_zero_point, /*negative_slope=*/0.0);
}

std::tuple<at::Tensor, c10::optional<at::Tensor>> linear_unpack(const Packed& w) {
  TORCH_CHECK(w, "qplugin::linear_unpack: expected packed weights (qplugin.LinearPackedParams), "
                 "got None");
  return w->unpack();
}

// The ops, then their PT2 doors (`.plain`), registered for QuantizedCPU and CPU alike: on a float
// tensor an op raises its own "expected a quantized tensor", and a quantized tensor passed to a
// `.plain` overload gets QArg::plain's message, instead of the dispatcher's "no kernel".
void register_linear(torch::Library& m) {
  m.impl("linear_prepack", TORCH_FN(linear_prepack_quantized_cpu));
  QPLUGIN_IMPL_RELU_PAIR("linear", "", linear_quantized_cpu)
  QPLUGIN_IMPL_RELU_PAIR("linear", ".plain", linear_plain)
  QPLUGIN_IMPL_WITH_PLAIN(linear_leaky_relu)
  QPLUGIN_IMPL_WITH_PLAIN(linear_tanh)
}

}  // namespace
}  // namespace ops
}  // namespace qplugin

QPLUGIN_IMPL_QUANTIZED_AND_CPU(qplugin::ops::register_linear(m);)
// No tensor argument to dispatch on: one kernel for every key.
TORCH_LIBRARY_IMPL(qplugin, CatchAll, m) {
  m.impl("linear_unpack", TORCH_FN(qplugin::ops::linear_unpack));
}

// Keeps this file in static links: qplugin_register_all() (csrc/register.cpp) calls it.
QPLUGIN_REGISTRATION_ANCHOR(quantized_cpu_linear_kernel)
