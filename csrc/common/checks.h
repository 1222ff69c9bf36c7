// Input-validation helpers shared by the QuantizedCPU kernels. Every message has the form
// "qplugin::<op>: expected <what>, got <actual>[; <fix>]" (STYLE.md section 7).
#pragma once
#include <ATen/ATen.h>

#include <cmath>
#include <initializer_list>
#include <string>

#include "common/quant_utils.h"

namespace qplugin {
namespace checks {

inline std::string dtype_list(std::initializer_list<at::ScalarType> types) {
  std::string s;
  size_t i = 0;
  for (auto t : types) {
    if (i > 0) s += (i + 1 == types.size()) ? " or " : ", ";
    s += c10::toString(t);
    ++i;
  }
  return s;
}

// A per-tensor affine quantized CPU tensor of one of `types`.
inline void check_quantized_input(const char* op, const char* arg, const at::Tensor& x,
                                  std::initializer_list<at::ScalarType> types) {
  TORCH_CHECK(x.is_quantized(), "qplugin::", op, ": expected ", arg, " to be a quantized tensor (",
              dtype_list(types), "), got a ", c10::toString(x.scalar_type()),
              " tensor; quantize it first (torch.quantize_per_tensor or qplugin.nn.Quantize)");
  bool ok = false;
  for (auto t : types) ok = ok || x.scalar_type() == t;
  TORCH_CHECK(ok, "qplugin::", op, ": expected ", arg, " of dtype ", dtype_list(types), ", got ",
              c10::toString(x.scalar_type()));
  TORCH_CHECK(x.qscheme() == at::kPerTensorAffine, "qplugin::", op, ": expected ", arg,
              " quantized per tensor (torch.per_tensor_affine), got ",
              c10::toString(x.qscheme()));
  TORCH_CHECK(x.device().is_cpu(), "qplugin::", op, ": expected ", arg, " on the CPU, got ",
              x.device());
}

// Output quantization parameters: finite positive scale (whose reciprocal is finite too) and a
// zero point inside the output dtype's range.
inline void check_output_qparams(const char* op, double scale, int64_t zero_point,
                                 at::ScalarType qtype) {
  TORCH_CHECK(std::isfinite(scale) && scale > 0.0 &&
                  std::isfinite(1.0f / static_cast<float>(scale)) &&
                  static_cast<float>(scale) > 0.0f,
              "qplugin::", op, ": expected a finite, positive output_scale, got ", scale);
  const auto r = qrange(qtype);
  TORCH_CHECK(zero_point >= r.first && zero_point <= r.second, "qplugin::", op,
              ": expected output_zero_point in [", r.first, ", ", r.second, "] for ",
              c10::toString(qtype), ", got ", zero_point);
}

// A 1-D floating-point tensor of `n` elements, returned as contiguous float32.
inline at::Tensor float_vector(const char* op, const char* arg, const at::Tensor& t, int64_t n) {
  TORCH_CHECK(!t.is_quantized() && at::isFloatingType(t.scalar_type()), "qplugin::", op,
              ": expected ", arg, " to be a floating-point tensor, got ",
              c10::toString(t.scalar_type()));
  TORCH_CHECK(t.dim() == 1 && t.numel() == n, "qplugin::", op, ": expected ", arg,
              " of shape [", n, "] (one value per channel), got shape ", t.sizes());
  TORCH_CHECK(t.device().is_cpu(), "qplugin::", op, ": expected ", arg, " on the CPU, got ",
              t.device());
  return t.to(at::kFloat).contiguous();
}

}  // namespace checks
}  // namespace qplugin
