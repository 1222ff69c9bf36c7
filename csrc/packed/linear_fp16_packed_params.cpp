// LinearPackedParamsFp16: validation, fp16 rounding, apply, unpack and the pickled state.
// Changes with: linear_fp16_packed_params.h.
#include "packed/linear_fp16_packed_params.h"

#include "packed/serialization.h"

namespace qplugin {

namespace {
constexpr const char* kSetstate = "LinearPackedParamsFp16.__setstate__";
constexpr double kFp16Max = 65504.0;
}  // namespace

c10::intrusive_ptr<LinearPackedParamsFp16> LinearPackedParamsFp16::prepack(
    const at::Tensor& weight, const c10::optional<at::Tensor>& bias, const char* op) {
  TORCH_CHECK(weight.defined(), "qplugin::", op, ": expected a weight tensor, got None");
  TORCH_CHECK(!weight.is_quantized() && weight.scalar_type() == at::kFloat, "qplugin::", op,
              ": expected a float32 weight, got ", c10::toString(weight.scalar_type()),
              "; pass weight.float()");
  TORCH_CHECK(weight.device().is_cpu(), "qplugin::", op, ": expected weight on the CPU, got ",
              weight.device());
  TORCH_CHECK(weight.dim() == 2, "qplugin::", op,
              ": expected 2-D weight [out_features, in_features], got ", weight.dim(), "-D");
  auto p = c10::make_intrusive<LinearPackedParamsFp16>();
  // As PyTorch: values beyond the fp16 range saturate to +-65504 (NaN stays NaN).
  p->w_half_ = weight.detach().clamp(-kFp16Max, kFp16Max).to(at::kHalf).contiguous();
  p->w_float_ = p->w_half_.to(at::kFloat).contiguous();
  if (bias.has_value() && bias->defined()) {
    const at::Tensor& b = *bias;
    TORCH_CHECK(!b.is_quantized() && b.scalar_type() == at::kFloat, "qplugin::", op,
                ": expected bias of dtype torch.float32, got ", c10::toString(b.scalar_type()));
    TORCH_CHECK(b.dim() == 1 && b.size(0) == weight.size(0), "qplugin::", op,
                ": expected bias of shape [", weight.size(0), "] (out_features), got shape ",
                b.sizes());
    TORCH_CHECK(b.device().is_cpu(), "qplugin::", op, ": expected bias on the CPU, got ",
                b.device());
    p->bias_ = b.detach().clone(at::MemoryFormat::Contiguous);
  }
  return p;
}

template <bool ReluFused>
at::Tensor LinearPackedParamsFp16::apply(const at::Tensor& x) const {
  const char* op = ReluFused ? "linear_relu_dynamic_fp16" : "linear_dynamic_fp16";
  TORCH_CHECK(x.defined() && !x.is_quantized() && x.scalar_type() == at::kFloat, "qplugin::", op,
              ": expected a float32 input, got ",
              x.defined() ? c10::toString(x.scalar_type()) : "None");
  TORCH_CHECK(x.device().is_cpu(), "qplugin::", op, ": expected input on the CPU, got ",
              x.device());
  TORCH_CHECK(x.dim() >= 2, "qplugin::", op,
              ": expected input of rank >= 2 (batch, ..., in_features), got ", x.dim(),
              "-D; unsqueeze a 1-D input to (1, in_features)");
  TORCH_CHECK(x.size(-1) == in_features(), "qplugin::", op,
              ": expected input with in_features = ", in_features(),
              " in its last dimension (weight is [", out_features(), ", ", in_features(),
              "]), got ", x.size(-1), " (input shape ", x.sizes(), ")");
  at::Tensor y = bias_.has_value() ? at::linear(x, w_float_, *bias_) : at::linear(x, w_float_);
  if (ReluFused) y.relu_();
  return y;
}

template at::Tensor LinearPackedParamsFp16::apply<false>(const at::Tensor&) const;
template at::Tensor LinearPackedParamsFp16::apply<true>(const at::Tensor&) const;

std::tuple<at::Tensor, c10::optional<at::Tensor>> LinearPackedParamsFp16::unpack() const {
  return packed::cloned_weight_and_bias(w_float_, bias_);
}

LinearPackedParamsFp16::State LinearPackedParamsFp16::getstate() const {
  auto wb = unpack();
  return {kStateVersion, std::get<0>(wb), std::get<1>(wb)};
}

c10::intrusive_ptr<LinearPackedParamsFp16> LinearPackedParamsFp16::setstate(
    const c10::IValue& state) {
  TORCH_CHECK(state.isTuple(), "qplugin::", kSetstate,
              ": expected a tuple (version, weight, bias), got ", state.tagKind());
  const auto& el = state.toTupleRef().elements();
  TORCH_CHECK(!el.empty() && el[0].isInt(), "qplugin::", kSetstate,
              ": expected an integer version as the first element of the state");
  const int64_t version = el[0].toInt();
  TORCH_CHECK(version == 1, "qplugin::", kSetstate, ": expected state version 1, got ", version,
              version > 1 ? "; the state was written by a newer qplugin, upgrade qplugin" : "");
  TORCH_CHECK(el.size() == 3, "qplugin::", kSetstate,
              ": expected a version-1 state (1, weight, bias) of 3 elements, got ", el.size());
  TORCH_CHECK(el[1].isTensor(), "qplugin::", kSetstate,
              ": expected a float32 weight tensor as the second element, got ", el[1].tagKind());
  TORCH_CHECK(el[2].isNone() || el[2].isTensor(), "qplugin::", kSetstate,
              ": expected a float32 bias tensor or None as the third element, got ",
              el[2].tagKind());
  c10::optional<at::Tensor> bias;
  if (el[2].isTensor()) bias = el[2].toTensor();
  return prepack(el[1].toTensor(), bias, kSetstate);
}

}  // namespace qplugin
