// ConvPlan: the packed form of a conv that the drivers (conv_gemm.h) run, chosen and filled at
// prepack by packed/conv_packed_params.cpp (ConvPackedParamsBase is a ConvPlan plus its config
// and pickled state). A plain struct: the driver layer sits below packed/ and knows no classes.
// Changes with: conv_gemm.{h,cpp} (the reader), packed/conv_packed_params.{h,cpp} (the writer).
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "kernels/conv/dwconv.h"
#include "kernels/gemm/qgemm.h"

namespace qplugin {
namespace driver {

struct ConvPlan {
  enum class Kind { kGemm, kDepthwise, kTransposed };

  struct Phase {
    // Output positions o = r + j * s (transposed) or o = j (direct) of this phase, per dim d/h/w.
    int64_t r[3];
    // Taps (kernel indices) of the phase per dim, in order.
    std::vector<int64_t> taps[3];
    int64_t K;                     // taps_d * taps_h * taps_w * C_in/g
    int64_t group_bytes;           // packed bytes of one group's B
    at::Tensor packed;             // int8 [groups * group_bytes]
    std::vector<int32_t> col_sums; // [C_out] (group g at g * C_out/g)
    // Implicit GEMM (QGemmKernels::igemm; direct conv, groups 1, dilation_w 1, every weight zero
    // point 0): nseg = taps_d * taps_h spans of kseg bytes (taps_w * C_in rounded up to kr, the
    // extra weights 0) per A row; packed_ind is B with that K order (the same tensor as packed
    // when kseg = taps_w * C_in). nseg = 0: not available.
    int64_t nseg = 0, kseg = 0;
    at::Tensor packed_ind;
    // Padding-skipping implicit GEMM (QGemmKernels::igemm over K ranges, when C_in is a multiple of kr):
    // tap_col_sums[t * C_out + n] = sum over c of W[n][c][tap t] (taps in (kd, kh, kw) order), so
    // that a pixel reading only some taps gets the zero-point term of exactly those. Empty: not
    // available (run_igemm then reads the zero-point-padded copy).
    std::vector<int32_t> tap_col_sums;
  };
  int64_t spatial_ = 2;
  Kind kind_ = Kind::kGemm;
  int64_t Cin_ = 0, Cout_ = 0;
  int64_t groups_ = 1;
  int64_t k_[3] = {1, 1, 1};   // kernel D, H, W (D = 1 for 2-d)
  int64_t s_[3] = {1, 1, 1}, p_[3] = {0, 0, 0}, d_[3] = {1, 1, 1}, op_[3] = {0, 0, 0};
  const kernels::gemm::QGemmKernels* gemm_ = nullptr;
  const kernels::conv::DwConvKernels* dw_ = nullptr;
  std::vector<Phase> phases_;     // gemm: 1; transposed: prod(stride)
  std::vector<int32_t> dw_w_;     // depthwise: [taps][C_out] weight minus zero point
  std::vector<int32_t> dw_wsum_;  // depthwise: [C_out] sum over taps
  std::vector<int8_t> dw_w8_;     // depthwise, all weight zero points 0: byte-lane form (dwconv.h)
  std::vector<int8_t> dw_w3_;     // depthwise 1x3x3, all weight zero points 0: w3 form (dwconv.h)
  std::vector<int8_t> dw_w5_;     // depthwise 1x5x5, all weight zero points 0: w5 form (dwconv.h)
  std::vector<float> w_scale_f_;  // [C_out]
  std::vector<int32_t> w_zp_i32_; // [C_out]
  bool any_w_zp_ = false;
};

}  // namespace driver
}  // namespace qplugin
