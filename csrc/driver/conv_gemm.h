// The conv compute drivers: implicit GEMM (im2col row blocks -> kernels/gemm/qgemm.h, 1x1
// stride-1 convs read the NDHWC input in place), transposed conv by output phases, and the
// depthwise kernels (kernels/conv/dwconv.h). Threads over batch x pixel blocks x channel blocks.
// Changes with: conv_plan.h (the packed form they read), conv_gemm.cpp,
// packed/conv_packed_params.cpp (fills the plan at prepack).
#pragma once
#include <cstdint>

#include "driver/conv_plan.h"

namespace qplugin {
namespace driver {

// Per-call requantization terms (qgemm.h / dwconv.h).
struct ConvRequant {
  const float* mult;       // [C_out]
  const float* bias_q;     // [C_out]
  float lo, hi;
  int32_t out_zp;
  int32_t in_zp;
  // 1: y is int32 storage [N][OD][OH][OW][C_out] receiving the exact accumulators (qgemm.h
  // QGemmEpilogue::out_i32; mult, bias_q, lo, hi, out_zp unused but mult / bias_q must point at
  // C_out values). GEMM plans only (not depthwise or transposed); K <= 33025 keeps it exact.
  int32_t out_i32 = 0;
};

// x [N][C][HW] -> y [N][HW][C], u8, threaded.
void nchw_to_nhwc_u8(const uint8_t* x, int64_t N, int64_t C, int64_t HW, uint8_t* y);

// x: NDHWC u8 [N][ID][IH][IW][C_in] contiguous (or NCDHW when x_nchw, only where
// conv_reads_nchw(p)); y: NDHWC u8 [N][OD][OH][OW][C_out].
void conv_forward(const ConvPlan& p, const uint8_t* x, int64_t N, const int64_t in[3],
                  uint8_t* y, const int64_t out[3], const ConvRequant& rq, bool x_nchw = false);

// Whether conv_forward takes a contiguous NCDHW input as is (the depthwise 1x3x3 kernel reads
// its rows in place), saving the NDHWC conversion.
bool conv_reads_nchw(const ConvPlan& p);

}  // namespace driver
}  // namespace qplugin
