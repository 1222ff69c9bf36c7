// What the packed-params classes (linear, conv, embedding) share: the qint8 weight and fp32 bias
// checks of prepack and the versioned, unpacked pickled state's envelope (a tuple whose first element is
// the integer version). Error messages name the op or Class.__setstate__ (STYLE.md).
// Changes with: linear_packed_params.cpp, conv_packed_params.cpp, embedding_packed_params.cpp.
#pragma once
#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <tuple>
#include <vector>

namespace qplugin {
namespace packed {

// weight: defined, a quantized tensor of one of `dtypes` (named `dtype_names` in messages) on the
// CPU. A weight that is not quantized gets "expected <as_quantized>, got a <dtype> tensor; <fix>".
inline void check_quantized_weight(const at::Tensor& weight, const char* op,
                                   std::initializer_list<at::ScalarType> dtypes,
                                   const char* dtype_names, const char* as_quantized,
                                   const char* fix) {
  TORCH_CHECK(weight.defined(), "qplugin::", op, ": expected a weight tensor, got None");
  TORCH_CHECK(weight.is_quantized(), "qplugin::", op, ": expected ", as_quantized, ", got a ",
              c10::toString(weight.scalar_type()), " tensor; ", fix);
  const auto st = weight.scalar_type();
  TORCH_CHECK(std::find(dtypes.begin(), dtypes.end(), st) != dtypes.end(), "qplugin::", op,
              ": expected weight of dtype ", dtype_names, ", got ", c10::toString(st));
  TORCH_CHECK(weight.device().is_cpu(), "qplugin::", op, ": expected weight on the CPU, got ",
              weight.device());
}

// weight: defined, a qint8 quantized tensor on the CPU.
inline void check_qint8_weight(const at::Tensor& weight, const char* op) {
  check_quantized_weight(weight, op, {at::kQInt8}, "torch.qint8",
                         "weight to be a quantized tensor of dtype torch.qint8",
                         "quantize it first (torch.quantize_per_tensor or "
                         "torch.quantize_per_channel with dtype=torch.qint8)");
}

// unpack(): copies of the weight and bias, so that the caller never aliases the packed object's.
inline std::tuple<at::Tensor, c10::optional<at::Tensor>> cloned_weight_and_bias(
    const at::Tensor& weight, const c10::optional<at::Tensor>& bias) {
  c10::optional<at::Tensor> b;
  if (bias.has_value()) b = bias->clone();
  return {weight.clone(), b};
}

// A given bias (None or undefined: no bias) of n outputs: float32 [n] on the CPU; returns a
// contiguous copy. outputs names n in messages ("out_features", "out_channels").
inline c10::optional<at::Tensor> checked_bias(const c10::optional<at::Tensor>& bias, int64_t n,
                                              const char* outputs, const char* op) {
  if (!bias.has_value() || !bias->defined()) return c10::nullopt;
  const at::Tensor& b = *bias;
  TORCH_CHECK(!b.is_quantized() && b.scalar_type() == at::kFloat, "qplugin::", op,
              ": expected bias of dtype torch.float32, got ", c10::toString(b.scalar_type()),
              "; pass bias.float()");
  TORCH_CHECK(b.dim() == 1 && b.size(0) == n, "qplugin::", op, ": expected bias of shape [", n,
              "] (", outputs, "), got shape ", b.sizes());
  TORCH_CHECK(b.device().is_cpu(), "qplugin::", op, ": expected bias on the CPU, got ",
              b.device());
  return b.detach().clone(at::MemoryFormat::Contiguous);
}

// " at <what> <channel>" for per-channel checks, "" for a per-tensor one (channel < 0).
inline std::string at_channel(const char* what, int64_t channel) {
  return channel >= 0 ? std::string(" at ") + what + " " + std::to_string(channel) : std::string();
}

// A weight scale must be finite and positive in double and as float32 (the kernels' form).
inline void check_weight_scale(const char* op, double s, const std::string& where) {
  const float f = static_cast<float>(s);
  TORCH_CHECK(std::isfinite(s) && s > 0.0 && std::isfinite(f) && f > 0.0f, "qplugin::", op,
              ": expected finite, positive weight scales (as float32), got ", s, where);
}

inline void check_weight_zp(const char* op, int64_t zp, const std::string& where) {
  TORCH_CHECK(zp >= -128 && zp <= 127, "qplugin::", op,
              ": expected weight zero points in [-128, 127] (torch.qint8), got ", zp, where);
}

// The elements of a pickled state (version, fields...): checks that it is a tuple, that its first
// element is an integer version this qplugin reads (1; newer ones ask for an upgrade) and that
// it has `size` elements. The reference lives as long as state. fields names the elements after the version, e.g. "weight, bias";
// cls is "Class.__setstate__".
inline const c10::ivalue::TupleElements& state_elements(const c10::IValue& state, const char* cls,
                                                         const char* fields, size_t size) {
  TORCH_CHECK(state.isTuple(), "qplugin::", cls, ": expected a tuple (version, ", fields,
              "), got ", state.tagKind());
  const auto& el = state.toTupleRef().elements();
  TORCH_CHECK(!el.empty() && el[0].isInt(), "qplugin::", cls,
              ": expected an integer version as the first element of the state, got ",
              el.empty() ? std::string("an empty tuple") : std::string(el[0].tagKind()));
  const int64_t version = el[0].toInt();
  TORCH_CHECK(version == 1, "qplugin::", cls, ": expected state version 1, got ", version,
              version > 1 ? "; the state was written by a newer qplugin, upgrade qplugin" : "");
  TORCH_CHECK(el.size() == size, "qplugin::", cls, ": expected a version-1 state (1, ", fields,
              ") of ", size, " elements, got ", el.size());
  return el;
}

// el[i] (i >= 1) is a tensor: "expected <what> as the <nth> element, got <kind>".
inline void check_state_tensor(const c10::ivalue::TupleElements& el, size_t i, bool optional,
                               const char* cls, const char* what) {
  static const char* kNth[] = {"first", "second", "third", "fourth", "fifth", "sixth"};
  TORCH_INTERNAL_ASSERT(i < 6, "qplugin: state element ", i);
  TORCH_CHECK(el[i].isTensor() || (optional && el[i].isNone()), "qplugin::", cls, ": expected ",
              what, " as the ", kNth[i], " element, got ", el[i].tagKind());
}

}  // namespace packed
}  // namespace qplugin
