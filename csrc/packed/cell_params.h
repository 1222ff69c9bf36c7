// CellParams (torchbind class qplugin.CellParams): the two packed projections of one RNN layer
// and direction (or one cell), W_ih and W_hh with their biases inside, either int8
// (LinearPackedParams, activations quantized per call; reduce_range as given) or float16
// (LinearPackedParamsFp16). qplugin's counterpart of PyTorch's rnn.CellParamsBase objects
// (torch.ops.quantized.make_quantized_cell_params{,_dynamic,_fp16}), consumed by
// qplugin::quantized_lstm / quantized_gru. One class for both weight types (as PyTorch's one base
// class), so that a layer list `CellParams[]` may hold either.
// Changes with: cell_params.cpp, library.cpp (class registration), ops/rnn_dynamic.cpp (schemas),
// ops/cpu/rnn_dynamic_kernel.cpp (make ops, consumers), qplugin/pt2/fake/packed.py (fake class).
//
// Pickled state (the unpacked weights; repacked on load for the running CPU):
//   version 1: (1, dtype: "qint8" | "float16", w_ih, b_ih or None, w_hh, b_hh or None,
//               reduce_range: bool)   w qint8 [G, in] / [G, H], or float32 holding fp16 values
#pragma once
#include <ATen/ATen.h>
#include <torch/custom_class.h>

#include <string>
#include <tuple>

#include "packed/linear_fp16_packed_params.h"
#include "packed/linear_packed_params.h"

namespace qplugin {

struct CellParams : torch::CustomClassHolder {
  using State = std::tuple<int64_t, std::string, at::Tensor, c10::optional<at::Tensor>,
                           at::Tensor, c10::optional<at::Tensor>, bool>;
  static constexpr int64_t kStateVersion = 1;

  // Holds the given objects (shared, not copied). op names the caller in error messages.
  static c10::intrusive_ptr<CellParams> make_int8(c10::intrusive_ptr<LinearPackedParams> w_ih,
                                                  c10::intrusive_ptr<LinearPackedParams> w_hh,
                                                  bool reduce_range, const char* op);
  static c10::intrusive_ptr<CellParams> make_fp16(
      c10::intrusive_ptr<LinearPackedParamsFp16> w_ih,
      c10::intrusive_ptr<LinearPackedParamsFp16> w_hh, const char* op);

  bool is_fp16() const { return static_cast<bool>(ih16_); }
  bool reduce_range() const { return reduce_range_; }
  // "qint8" or "float16" (the weight dtype, as torch.ao's modules name it).
  std::string dtype() const { return is_fp16() ? "float16" : "qint8"; }
  // Exactly one pair is set: ih_/hh_ (int8) or ih16_/hh16_ (float16).
  const LinearPackedParams* ih() const { return ih_.get(); }
  const LinearPackedParams* hh() const { return hh_.get(); }
  const LinearPackedParamsFp16* ih16() const { return ih16_.get(); }
  const LinearPackedParamsFp16* hh16() const { return hh16_.get(); }
  // [out_features, in_features] of W_ih and W_hh.
  std::vector<int64_t> w_ih_shape() const;
  std::vector<int64_t> w_hh_shape() const;

  // (w_ih, b_ih, w_hh, b_hh): qint8 weights, or float32 weights holding fp16 values.
  std::tuple<at::Tensor, c10::optional<at::Tensor>, at::Tensor, c10::optional<at::Tensor>>
  unpack() const;
  State getstate() const;
  static c10::intrusive_ptr<CellParams> setstate(const c10::IValue& state);

 private:
  c10::intrusive_ptr<LinearPackedParams> ih_, hh_;
  c10::intrusive_ptr<LinearPackedParamsFp16> ih16_, hh16_;
  bool reduce_range_ = false;
};

}  // namespace qplugin
