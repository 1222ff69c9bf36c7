// The float-in / float-out dynamic linear step shared by the dynamic linear ops and the RNN ops
// (ops/cpu/linear_dynamic_kernel.cpp defines it; ops/cpu/rnn_dynamic_kernel.cpp uses it), their
// weight handles, and the activation quantization step the dynamic convs share
// (ops/cpu/conv_dynamic_kernel.cpp).
#pragma once
#include <cstdint>
#include <vector>

#include "packed/linear_fp16_packed_params.h"
#include "packed/linear_packed_params.h"

namespace qplugin {
namespace ops {

// The weight handles the dynamic linear and RNN ops take: int8 (activations quantized per call)
// and float16.
using Packed = c10::intrusive_ptr<LinearPackedParams>;
using PackedFp16 = c10::intrusive_ptr<LinearPackedParamsFp16>;

struct DynamicQParams {
  double scale;
  int32_t zero_point;
};

// The per-call activation quantization of every int8 dynamic op: min/max of x[0, numel) (raises
// naming `op` on NaN or inf), PyTorch's dynamic qparams (quant_utils::ChooseQuantizationParams,
// qmax 255, or 127 with reduce_range), codes written to out[0, numel) (fbgemm's rounding).
// Used by linear_dynamic_into and the dynamic convs (ops/cpu/conv_dynamic_kernel.cpp).
DynamicQParams quantize_dynamic_into(const char* op, const float* x, int64_t numel,
                                     bool reduce_range, uint8_t* out);

// out[m][:] = dequant(quant(x[m][:]) @ W^T) + b (max(0, .) when relu), m < M: x M x K float32
// contiguous, quantized per call as a whole (PyTorch's dynamic qparams, reduce_range: 7 bits);
// out M x N float32 with row stride ldo. `scratch` holds the u8 codes (resized as needed).
// Raises (naming `op`) on NaN or inf in x.
void linear_dynamic_into(const char* op, const float* x, int64_t M, const LinearPackedParams& w,
                         bool reduce_range, bool relu, float* out, int64_t ldo,
                         std::vector<uint8_t>& scratch);

}  // namespace ops
}  // namespace qplugin
