// Conv2dPackedParams / Conv3dPackedParams (torchbind classes qplugin.Conv2dPackedParams and
// qplugin.Conv3dPackedParams; conv1d uses the 2d class with H = 1, as PyTorch does): a qint8
// conv or transposed-conv weight packed for the kernel chosen at prepack, its config and bias.
// Changes with: conv_packed_params.cpp (validation, packing, state), library.cpp (registration),
// ops/conv.cpp (schemas), driver/conv_gemm.{h,cpp} (the compute),
// qplugin/nn/modules/conv.py.
//
// Kinds of packing (chosen at prepack, stored; apply never consults the global ISA):
//   depthwise: groups == C_in > 1, one input channel per group (channel multiplier m = C_out /
//              C_in allowed): int32 [taps][C_out] weight minus zero point, kernels/conv/dwconv.h.
//   gemm:      everything else, implicit GEMM through kernels/gemm/qgemm.h; one packed B per
//              group ([N = C_out/g][K = taps * C_in/g], K ordered (kd, kh, kw, c)).
//   transposed: the output is split into stride_d*stride_h*stride_w phases (output positions with
//              the same residue mod stride); each phase is a direct conv over the input with the
//              taps that reach it, so one packed B per (phase, group). No float detour.
//
// Pickled state (never the packed bytes or the ISA; repacked on load for the running CPU):
//   version 1: (1, weight: qint8, bias: float32 [C_out]?, stride: int[], padding: int[],
//               output_padding: int[], dilation: int[], groups: int, flags: int)
//     weight: [C_out, C_in/g, k...] (conv) or [C_in, C_out/g, k...] (transposed), per tensor or
//     per channel along the output-channel axis (0; 1 for transposed, C_out/g scales shared by
//     the groups); spatial rank 2 (conv1d/conv2d) or 3; flags bit 0 = transpose.
#pragma once
#include <ATen/ATen.h>
#include <torch/custom_class.h>

#include <string>
#include <tuple>
#include <vector>

#include "driver/conv_plan.h"

namespace qplugin {

struct ConvPackedParamsBase : torch::CustomClassHolder, driver::ConvPlan {
  using State = std::tuple<int64_t, at::Tensor, c10::optional<at::Tensor>, std::vector<int64_t>,
                           std::vector<int64_t>, std::vector<int64_t>, std::vector<int64_t>,
                           int64_t, int64_t>;
  static constexpr int64_t kStateVersion = 1;
  static constexpr int64_t kFlagTranspose = 1;
  // Upper bound of stride_d * stride_h * stride_w of a transposed conv (conv_packed_params.cpp).
  static constexpr int64_t kMaxTransposePhases = 4096;

  // Validates and packs (op names the caller in error messages). spatial: 2 or 3.
  void init(int64_t spatial, const at::Tensor& weight, const c10::optional<at::Tensor>& bias,
            std::vector<int64_t> stride, std::vector<int64_t> padding,
            std::vector<int64_t> output_padding, std::vector<int64_t> dilation, int64_t groups,
            bool transpose, const char* op);

  // conv / conv_relu / conv_transpose on a quint8 input of rank spatial + 2 (NC[D]HW, any
  // memory format). Output: channels-last quint8 (as PyTorch's quantized conv).
  at::Tensor apply(const at::Tensor& x, double output_scale, int64_t output_zero_point,
                   bool relu, const char* op) const;
  at::Tensor apply_unguarded(const at::Tensor& x, double output_scale, int64_t output_zero_point,
                             bool relu, const char* op) const;

  std::tuple<at::Tensor, c10::optional<at::Tensor>> unpack() const;
  State getstate() const;
  // Parses every historical state version into (spatial, args) and prepacks; clear errors.
  void init_from_state(int64_t spatial, const c10::IValue& state, const char* cls);

  std::vector<int64_t> stride() const { return stride_; }
  std::vector<int64_t> padding() const { return padding_; }
  std::vector<int64_t> output_padding() const { return output_padding_; }
  std::vector<int64_t> dilation() const { return dilation_; }
  int64_t groups() const { return groups_; }
  bool transpose() const { return transpose_; }
  std::string kernel_name() const;
  // Shape and qscheme of the weight as given (conv1d: 4-D with H = 1); for __obj_flatten__.
  std::vector<int64_t> weight_shape() const { return weight_.sizes().vec(); }
  bool weight_per_channel() const { return weight_.qscheme() != at::kPerTensorAffine; }

  // The packed form (driver::ConvPlan, the base) is read by driver/conv_gemm.cpp.
  c10::optional<at::Tensor> bias_;  // float32 [C_out]

 private:
  std::vector<int64_t> stride_, padding_, output_padding_, dilation_;
  bool transpose_ = false;
  at::Tensor weight_;  // the qint8 weight as given (owned copy), for unpack and pickling
};

// The registered classes: the same implementation under PyTorch's two class names.
template <int kSpatialDim>
struct ConvPackedParams : ConvPackedParamsBase {
  static c10::intrusive_ptr<ConvPackedParams> prepack(
      const at::Tensor& weight, const c10::optional<at::Tensor>& bias, std::vector<int64_t> stride,
      std::vector<int64_t> padding, std::vector<int64_t> output_padding,
      std::vector<int64_t> dilation, int64_t groups, bool transpose, const char* op) {
    auto p = c10::make_intrusive<ConvPackedParams>();
    p->init(kSpatialDim, weight, bias, std::move(stride), std::move(padding),
            std::move(output_padding), std::move(dilation), groups, transpose, op);
    return p;
  }
  static c10::intrusive_ptr<ConvPackedParams> setstate(const c10::IValue& state) {
    auto p = c10::make_intrusive<ConvPackedParams>();
    p->init_from_state(kSpatialDim, state,
                       kSpatialDim == 2 ? "Conv2dPackedParams.__setstate__"
                                        : "Conv3dPackedParams.__setstate__");
    return p;
  }
};

using Conv2dPackedParams = ConvPackedParams<2>;
using Conv3dPackedParams = ConvPackedParams<3>;

}  // namespace qplugin
