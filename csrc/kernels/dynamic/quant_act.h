// Per-call activation quantization of the dynamic ops (torch-free): min/max of a float buffer and
// its quantization to u8 with fbgemm's dynamic-linear formula, so that qplugin's dynamic linear
// sees the same bytes as torch.ops.quantized.linear_dynamic:
//   q = (uint8) nearbyint(min(max(fma(x, inv_scale, zp), 0), top))   one rounding (FMA), ties even
// (top = 255, or 127 with reduce_range: fbgemm clamps to 255, but its values never exceed 127
// there; clamping makes "A fits in 7 bits" a guarantee for the GEMM).
// Every ISA gives identical bytes (the scalar tier uses std::fma).
// Changes with: quant_act_<isa>.cpp, kernels/dispatch.cpp (table choice),
// ops/cpu/linear_dynamic_kernel.cpp.
#pragma once
#include <cstdint>

#include "kernels/dispatch.h"

namespace qplugin {
namespace kernels {
namespace dynamic {

struct QuantActKernels {
  Isa isa;
  // *mn / *mx: min and max of x[0, n) (n >= 1); *nonfinite_sum: the sum of (x - x), which is 0
  // when every element is finite and NaN otherwise (NaN and inf inputs are rejected by the op).
  void (*minmax)(const float* x, int64_t n, float* mn, float* mx, float* nonfinite_sum);
  // q[i] as in the header comment, i in [0, n).
  void (*quantize)(const float* x, int64_t n, float inv_scale, float zp, float top,
                   uint8_t* q);
  // quantize_per_tensor.plain (the PT2 door's Quantize; torch's quantize_per_tensor bytes):
  //   t = fma(x, inv_scale, zp) (one rounding); q = clamp(nearbyint(t), lo, hi), ties to even;
  //   NaN and t >= hi -> hi. Codes int8 ([-128, 127]) when is_signed, else uint8 ([0, 255]).
  // Clamping before the rounding is the same (lo and hi are integers, rounding is monotone).
  void (*quantize_affine)(const float* x, int64_t n, float inv_scale, float zp, bool is_signed,
                          void* q);
};

// The kernels of current_isa().
const QuantActKernels& quant_act_kernels();

QPLUGIN_ISA_TABLES(QuantActKernels, quant_act_table);

}  // namespace dynamic
}  // namespace kernels
}  // namespace qplugin
