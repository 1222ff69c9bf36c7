// What the two Linear packed-params classes (LinearPackedParams: qint8 weight;
// LinearPackedParamsFp16: float16 weight) share: the shape, the fp32 bias and its checks, and the
// pickled state, repacked on load for the running CPU (never the packed bytes or the ISA):
//   version 1: (1, weight [out, in] (Derived::unpack()'s form), bias: float32 [out] or None)
// CRTP, so that setstate builds the derived class through Derived::prepack.
// Changes with: linear_packed_params.{h,cpp}, linear_fp16_packed_params.{h,cpp}, library.cpp.
#pragma once
#include <ATen/ATen.h>
#include <torch/custom_class.h>

#include <tuple>

#include "packed/serialization.h"

namespace qplugin {

// Derived provides static prepack(weight, bias, op), unpack() -> (weight, bias), and its
// setstate (a static returning its own type) as setstate_as(state, "Class.__setstate__",
// <the weight element in messages>).
template <class Derived>
struct LinearParamsBase : torch::CustomClassHolder {
  using Ptr = c10::intrusive_ptr<Derived>;  // the handle ops and torchbind pass
  using State = std::tuple<int64_t, at::Tensor, c10::optional<at::Tensor>>;
  static constexpr int64_t kStateVersion = 1;

  State getstate() const {
    auto wb = static_cast<const Derived*>(this)->unpack();
    return {kStateVersion, std::get<0>(wb), std::get<1>(wb)};
  }

  int64_t in_features() const { return K_; }
  int64_t out_features() const { return N_; }
  c10::optional<at::Tensor> bias() const { return bias_; }

 protected:
  // Accepts every historical state version; raises a clear error for anything else.
  static Ptr setstate_as(const c10::IValue& state, const char* cls, const char* weight) {
    const auto& el = packed::state_elements(state, cls, "weight, bias", 3);
    packed::check_state_tensor(el, 1, false, cls, weight);
    packed::check_state_tensor(el, 2, true, cls, "a float32 bias tensor or None");
    c10::optional<at::Tensor> bias;
    if (el[2].isTensor()) bias = el[2].toTensor();
    return Derived::prepack(el[1].toTensor(), bias, cls);
  }

  int64_t N_ = 0;                   // out_features
  int64_t K_ = 0;                   // in_features
  c10::optional<at::Tensor> bias_;  // float32 [N_], contiguous, owned (packed::checked_bias)
};

}  // namespace qplugin
