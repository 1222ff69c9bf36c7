// The float-in / float-out dynamic linear step shared by the dynamic linear ops and the RNN ops
// (ops/cpu/linear_dynamic_kernel.cpp defines it; ops/cpu/rnn_dynamic_kernel.cpp uses it).
#pragma once
#include <cstdint>
#include <vector>

#include "packed/linear_packed_params.h"

namespace qplugin {
namespace ops {

// out[m][:] = dequant(quant(x[m][:]) @ W^T) + b (max(0, .) when relu), m < M: x M x K float32
// contiguous, quantized per call as a whole (PyTorch's dynamic qparams, reduce_range: 7 bits);
// out M x N float32 with row stride ldo. `scratch` holds the u8 codes (resized as needed).
// Raises (naming `op`) on NaN or inf in x.
void linear_dynamic_into(const char* op, const float* x, int64_t M, const LinearPackedParams& w,
                         bool reduce_range, bool relu, float* out, int64_t ldo,
                         std::vector<uint8_t>& scratch);

}  // namespace ops
}  // namespace qplugin
