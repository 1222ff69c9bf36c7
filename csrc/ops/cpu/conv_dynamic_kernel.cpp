// CPU-key kernels of the dynamic conv ops (schemas: ops/conv_dynamic.cpp). PyTorch's numerics
// (fbgemm / onednn PackedConvWeight*::apply_dynamic): the float input is quantized per call to
// quint8 with the dynamic qparams of linear_dynamic (quantize_dynamic_into, ops/cpu/
// linear_dynamic.h), the quantized conv runs with the *input's* scale and zero point as output
// qparams (so the result is clamped to [(0 - zp) * s, (255 - zp) * s] and rounded to the input's
// step — PyTorch's "poor numerical accuracy" warning on these modules), then dequantized.
// The conv itself is qplugin's packed conv (packed/conv_packed_params.h): exact int32
// accumulation, the same bytes on every ISA. Fake kernels: qplugin/_meta_dynamic.py.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/non_differentiable.h"
#include "ops/cpu/linear_dynamic.h"
#include "packed/conv_packed_params.h"
#include "register.h"

namespace qplugin {
namespace ops {
namespace {

const char* const kRankHint[] = {"", "(N, C, L)", "(N, C, H, W)", "(N, C, D, H, W)"};

// Dim: the conv's spatial rank as the user sees it (1, 2, 3); the 1-d ops run on the 2-d packed
// class with H = 1, as PyTorch does.
template <int Dim, bool Transpose, class PP>
at::Tensor conv_dynamic_cpu(const at::Tensor& x, const c10::intrusive_ptr<PP>& w,
                            bool reduce_range) {
  static const std::string name = std::string(Transpose ? "conv_transpose" : "conv") +
                                  std::to_string(Dim) + "d_dynamic";
  const char* op = name.c_str();
  TORCH_CHECK(w, "qplugin::", op, ": expected packed weights, got None");
  TORCH_CHECK(w->transpose() == Transpose, "qplugin::", op, ": expected packed weights of a ",
              Transpose ? "transposed conv (conv_transpose*_prepack)" : "conv (conv*_prepack)",
              ", got ", w->transpose() ? "a transposed conv's" : "a conv's");
  TORCH_CHECK(x.defined() && !x.is_quantized() && x.scalar_type() == at::kFloat, "qplugin::", op,
              ": expected a float32 input, got ",
              x.defined() ? c10::toString(x.scalar_type()) : "None",
              x.defined() && x.is_quantized()
                  ? "; the dynamic ops take float input, dequantize it first or use the static "
                    "quantized conv"
                  : "");
  TORCH_CHECK(x.device().is_cpu(), "qplugin::", op, ": expected input on the CPU, got ",
              x.device());
  TORCH_CHECK(x.dim() == Dim + 2, "qplugin::", op, ": expected a ", Dim + 2, "-D input ",
              kRankHint[Dim], ", got ", x.dim(), "-D (shape ", x.sizes(), ")");
  if (Dim == 1) {
    const auto wt = std::get<0>(w->unpack());
    TORCH_CHECK(wt.dim() == 4 && wt.size(2) == 1, "qplugin::", op,
                ": expected packed weights of a 1-d conv (conv1d_prepack or "
                "conv_transpose1d_prepack), got weight shape ", wt.sizes());
  }
  const auto mf = x.suggest_memory_format();
  const at::Tensor xc = x.contiguous(mf);
  const int64_t numel = xc.numel();
  // Quantize into a quint8 tensor of the same layout (elementwise, so the buffer order is kept).
  std::vector<uint8_t> codes(static_cast<size_t>(numel));
  const DynamicQParams qp =
      quantize_dynamic_into(op, xc.data_ptr<float>(), numel, reduce_range, codes.data());
  at::Tensor qx = at::_empty_affine_quantized(xc.sizes(), xc.options().dtype(at::kQUInt8),
                                              qp.scale, qp.zero_point, mf);
  if (numel > 0) {
    std::memcpy(qx.data_ptr(), codes.data(), static_cast<size_t>(numel));
  }
  // 1-d: dequantized before the squeeze, as PyTorch, so the output keeps the (N, L, C) memory
  // order of the channels-last 2-d result (strides (C*L, 1, C)).
  if (Dim == 1) {
    return at::dequantize(w->apply(QArg::quantized(op, "input", qx.unsqueeze(2), {at::kQUInt8}), qp.scale, qp.zero_point, /*relu=*/false, op))
        .squeeze(2);
  }
  return at::dequantize(w->apply(QArg::quantized(op, "input", qx, {at::kQUInt8}), qp.scale, qp.zero_point, /*relu=*/false, op));
}

using P2 = Conv2dPackedParams;
using P3 = Conv3dPackedParams;

}  // namespace
}  // namespace ops
}  // namespace qplugin

#define QPLUGIN_REGISTER_CONV_DYNAMIC(m)                                                        \
  m.impl("conv1d_dynamic", TORCH_FN((qplugin::ops::conv_dynamic_cpu<1, false, qplugin::ops::P2>))); \
  m.impl("conv2d_dynamic", TORCH_FN((qplugin::ops::conv_dynamic_cpu<2, false, qplugin::ops::P2>))); \
  m.impl("conv3d_dynamic", TORCH_FN((qplugin::ops::conv_dynamic_cpu<3, false, qplugin::ops::P3>))); \
  m.impl("conv_transpose1d_dynamic",                                                          \
         TORCH_FN((qplugin::ops::conv_dynamic_cpu<1, true, qplugin::ops::P2>)));               \
  m.impl("conv_transpose2d_dynamic",                                                          \
         TORCH_FN((qplugin::ops::conv_dynamic_cpu<2, true, qplugin::ops::P2>)));               \
  m.impl("conv_transpose3d_dynamic",                                                          \
         TORCH_FN((qplugin::ops::conv_dynamic_cpu<3, true, qplugin::ops::P3>)));

TORCH_LIBRARY_IMPL(qplugin, CPU, m) { QPLUGIN_REGISTER_CONV_DYNAMIC(m) }
// A quantized input reaches the same kernel, which rejects it with a clear message.
TORCH_LIBRARY_IMPL(qplugin, QuantizedCPU, m) { QPLUGIN_REGISTER_CONV_DYNAMIC(m) }
#undef QPLUGIN_REGISTER_CONV_DYNAMIC
// Inference only: outputs never require grad (common/non_differentiable.h says why).
TORCH_LIBRARY_IMPL(qplugin, Autograd, m) {
  for (const char* op : {"conv1d_dynamic", "conv2d_dynamic", "conv3d_dynamic",
                         "conv_transpose1d_dynamic", "conv_transpose2d_dynamic",
                         "conv_transpose3d_dynamic"}) {
    m.impl(op, qplugin::non_differentiable());
  }
}

// Keeps this file in static links: qplugin_register_all() (csrc/register.cpp) calls it.
QPLUGIN_REGISTRATION_ANCHOR(cpu_conv_dynamic_kernel)
