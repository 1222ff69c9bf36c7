// CPU kernels of quantize_per_tensor.plain and dequantize.plain (schemas: ops/quantize.cpp), the
// PT2 door's graph boundaries. Bit for bit what torch 2.13's quantize_per_tensor / dequantize give
// on x86 (FBGEMM's Quantize<T, LEGACY=true> and Dequantize; measured, tests/pt2/test_plain_quantize.py):
//   quantize:   t = fmaf(x, 1.0f / float(scale), float(zero_point))     one rounding
//               q = clamp(nearbyint(t), qmin, qmax)                     ties to even
//               NaN and +inf -> qmax, -inf -> qmin (FBGEMM clips t at the largest float below
//               2^31 with min_ps, which turns NaN into that bound)
//   dequantize: y = float(q - zero_point) * float(scale)                one rounding
// Output memory format: the input's suggest_memory_format(), as PyTorch's.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <cmath>
#include <cstdint>

#include "common/qarg.h"
#include "common/quant_utils.h"
#include "kernels/dynamic/quant_act.h"
#include "register.h"

namespace qplugin {
namespace ops {
namespace {

// Vectorized per ISA (kernels/dynamic/quant_act.h quantize_affine; every tier gives the scalar
// reference's bytes, tests/pt2/test_plain_quantize.py runs them all).
void quantize_loop(const float* x, int64_t n, float inv, float zp, bool is_signed, void* q) {
  const auto& k = kernels::dynamic::quant_act_kernels();
  uint8_t* qb = static_cast<uint8_t*>(q);
  at::parallel_for(0, n, 32768, [&](int64_t i0, int64_t i1) {
    k.quantize_affine(x + i0, i1 - i0, inv, zp, is_signed, qb + i0);
  });
}

at::ScalarType code_dtype(const char* op, at::ScalarType d) {
  switch (d) {
    case at::kByte:
    case at::kQUInt8: return at::kByte;
    case at::kChar:
    case at::kQInt8: return at::kChar;
    default: break;
  }
  TORCH_CHECK(false, "qplugin::", op, ": expected dtype torch.uint8 or torch.int8 (or "
              "torch.quint8 / torch.qint8, which give the same codes), got ", c10::toString(d));
  return at::kByte;
}

at::Tensor quantize_per_tensor_plain(const at::Tensor& x, double scale, int64_t zero_point,
                                     at::ScalarType dtype) {
  const char* op = "quantize_per_tensor.plain";
  TORCH_CHECK(!x.is_quantized() && x.scalar_type() == at::kFloat, "qplugin::", op,
              ": expected self of dtype torch.float32, got ",
              x.is_quantized() ? "a quantized " : "", c10::toString(x.scalar_type()),
              x.is_floating_point() ? "; convert it with .float() first" : "");
  TORCH_CHECK(x.device().is_cpu(), "qplugin::", op, ": expected self on the CPU, got ",
              x.device());
  const at::ScalarType cd = code_dtype(op, dtype);
  TORCH_CHECK(std::isfinite(scale) && scale > 0.0 && static_cast<float>(scale) > 0.0f &&
                  std::isfinite(1.0f / static_cast<float>(scale)),
              "qplugin::", op, ": expected a finite, positive scale (with a finite float32 "
              "reciprocal), got ", scale);
  const auto r = qrange(qtype_of_plain(cd));
  TORCH_CHECK(zero_point >= r.first && zero_point <= r.second, "qplugin::", op,
              ": expected zero_point in [", r.first, ", ", r.second, "] for ",
              c10::toString(cd), " codes, got ", zero_point);
  const auto fmt = x.suggest_memory_format();
  at::Tensor y = at::empty(x.sizes(), x.options().dtype(cd), fmt);
  if (x.numel() == 0) return y;
  const at::Tensor xc = x.contiguous(fmt);
  const float inv = 1.0f / static_cast<float>(scale);
  const float zp = static_cast<float>(zero_point);
  quantize_loop(xc.data_ptr<float>(), x.numel(), inv, zp, cd == at::kChar, y.data_ptr());
  return y;
}

template <typename T>
void dequantize_loop(const T* q, int64_t n, int32_t zp, float s, float* y) {
  at::parallel_for(0, n, 32768, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      y[i] = static_cast<float>(static_cast<int32_t>(q[i]) - zp) * s;
    }
  });
}

at::Tensor dequantize_plain(const at::Tensor& x, double scale, int64_t zero_point) {
  const QArg q = QArg::plain("dequantize", "self", x, scale, zero_point,
                             {at::kQUInt8, at::kQInt8});
  const auto fmt = x.suggest_memory_format();
  at::Tensor y = at::empty(x.sizes(), x.options().dtype(at::kFloat), fmt);
  if (x.numel() == 0) return y;
  const QArg xc = q.contiguous(fmt);
  const float s = static_cast<float>(scale);
  const int32_t zp = static_cast<int32_t>(zero_point);
  if (x.scalar_type() == at::kByte) {
    dequantize_loop(static_cast<const uint8_t*>(xc.data_ptr()), x.numel(), zp, s,
                    y.data_ptr<float>());
  } else {
    dequantize_loop(static_cast<const int8_t*>(xc.data_ptr()), x.numel(), zp, s,
                    y.data_ptr<float>());
  }
  return y;
}

}  // namespace
}  // namespace ops
}  // namespace qplugin

// Also under QuantizedCPU: a quantized tensor gets the ops' own message, not "no kernel".
#define QPLUGIN_REGISTER_QUANTIZE(m)                                                          \
  m.impl("quantize_per_tensor.plain", TORCH_FN(qplugin::ops::quantize_per_tensor_plain));    \
  m.impl("dequantize.plain", TORCH_FN(qplugin::ops::dequantize_plain));

TORCH_LIBRARY_IMPL(qplugin, CPU, m) { QPLUGIN_REGISTER_QUANTIZE(m) }
TORCH_LIBRARY_IMPL(qplugin, QuantizedCPU, m) { QPLUGIN_REGISTER_QUANTIZE(m) }
#undef QPLUGIN_REGISTER_QUANTIZE

// Keeps this file in static links: qplugin_register_all() (csrc/register.cpp) calls it.
QPLUGIN_REGISTRATION_ANCHOR(cpu_quantize_kernel)
