// QuantizedCPU (and CPU, for a clear error on float input) kernels of the conv ops; the work is in
// packed/conv_packed_params.cpp (validation, packing, apply) and conv_gemm.cpp (compute).
// conv1d / conv_transpose1d run as 2-d with H = 1 on the 2d class, as PyTorch does.
// Schemas: ops/conv.cpp.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "common/checks.h"
#include "packed/conv_packed_params.h"
#include "register.h"

namespace qplugin {
namespace ops {
namespace {

using P2 = c10::intrusive_ptr<Conv2dPackedParams>;
using P3 = c10::intrusive_ptr<Conv3dPackedParams>;
using IntList = std::vector<int64_t>;

void check_1d_args(const char* op, const at::Tensor& w, const IntList& stride,
                   const IntList& padding, const IntList* output_padding, const IntList& dilation) {
  TORCH_CHECK(w.dim() == 3, "qplugin::", op, ": expected a 3-D weight [",
              output_padding ? "in_channels, out_channels/groups" : "out_channels, "
              "in_channels/groups", ", k], got ", w.dim(), "-D (shape ", w.sizes(), ")");
  auto one = [&](const char* what, const IntList& v) {
    TORCH_CHECK(v.size() == 1, "qplugin::", op, ": expected ", what, " with 1 value, got ",
                v.size(), " values");
  };
  one("stride", stride);
  one("padding", padding);
  one("dilation", dilation);
  if (output_padding) one("output_padding", *output_padding);
}

P2 conv1d_prepack(const at::Tensor& w, const c10::optional<at::Tensor>& b, IntList stride,
                  IntList padding, IntList dilation, int64_t groups) {
  TORCH_CHECK(w.defined(), "qplugin::conv1d_prepack: expected a weight tensor, got None");
  check_1d_args("conv1d_prepack", w, stride, padding, nullptr, dilation);
  return Conv2dPackedParams::prepack(w.unsqueeze(2), b, {1, stride[0]}, {0, padding[0]}, {0, 0},
                                     {1, dilation[0]}, groups, /*transpose=*/false,
                                     "conv1d_prepack");
}
P2 conv2d_prepack(const at::Tensor& w, const c10::optional<at::Tensor>& b, IntList stride,
                  IntList padding, IntList dilation, int64_t groups) {
  return Conv2dPackedParams::prepack(w, b, stride, padding, {}, dilation, groups, false,
                                     "conv2d_prepack");
}
P3 conv3d_prepack(const at::Tensor& w, const c10::optional<at::Tensor>& b, IntList stride,
                  IntList padding, IntList dilation, int64_t groups) {
  return Conv3dPackedParams::prepack(w, b, stride, padding, {}, dilation, groups, false,
                                     "conv3d_prepack");
}
P2 conv_transpose1d_prepack(const at::Tensor& w, const c10::optional<at::Tensor>& b,
                            IntList stride, IntList padding, IntList output_padding,
                            IntList dilation, int64_t groups) {
  TORCH_CHECK(w.defined(), "qplugin::conv_transpose1d_prepack: expected a weight tensor, got None");
  check_1d_args("conv_transpose1d_prepack", w, stride, padding, &output_padding, dilation);
  return Conv2dPackedParams::prepack(w.unsqueeze(2), b, {1, stride[0]}, {0, padding[0]},
                                     {0, output_padding[0]}, {1, dilation[0]}, groups,
                                     /*transpose=*/true, "conv_transpose1d_prepack");
}
P2 conv_transpose2d_prepack(const at::Tensor& w, const c10::optional<at::Tensor>& b,
                            IntList stride, IntList padding, IntList output_padding,
                            IntList dilation, int64_t groups) {
  return Conv2dPackedParams::prepack(w, b, stride, padding, output_padding, dilation, groups,
                                     true, "conv_transpose2d_prepack");
}
P3 conv_transpose3d_prepack(const at::Tensor& w, const c10::optional<at::Tensor>& b,
                            IntList stride, IntList padding, IntList output_padding,
                            IntList dilation, int64_t groups) {
  return Conv3dPackedParams::prepack(w, b, stride, padding, output_padding, dilation, groups,
                                     true, "conv_transpose3d_prepack");
}

template <class PP>
void check_packed(const char* op, const PP& w, bool transpose, bool one_d) {
  TORCH_CHECK(w, "qplugin::", op, ": expected packed weights, got None");
  TORCH_CHECK(w->transpose() == transpose, "qplugin::", op, ": expected packed weights of a ",
              transpose ? "transposed conv (conv_transpose*_prepack)" : "conv (conv*_prepack)",
              ", got ", w->transpose() ? "a transposed conv's" : "a conv's");
  (void)one_d;
}

template <bool Relu>
at::Tensor conv1d(const at::Tensor& x, const P2& w, double scale, int64_t zp) {
  const char* op = Relu ? "conv1d_relu" : "conv1d";
  check_packed(op, w, false, true);
  checks::check_quantized_input(op, "input", x, {at::kQUInt8});
  TORCH_CHECK(x.dim() == 3, "qplugin::", op, ": expected a 3-D input (N, C, L), got ", x.dim(),
              "-D (shape ", x.sizes(), ")");
  return w->apply(x.unsqueeze(2), scale, zp, Relu, op).squeeze(2);
}
template <bool Relu>
at::Tensor conv2d(const at::Tensor& x, const P2& w, double scale, int64_t zp) {
  const char* op = Relu ? "conv2d_relu" : "conv2d";
  check_packed(op, w, false, false);
  return w->apply(x, scale, zp, Relu, op);
}
template <bool Relu>
at::Tensor conv3d(const at::Tensor& x, const P3& w, double scale, int64_t zp) {
  const char* op = Relu ? "conv3d_relu" : "conv3d";
  check_packed(op, w, false, false);
  return w->apply(x, scale, zp, Relu, op);
}
at::Tensor conv_transpose1d(const at::Tensor& x, const P2& w, double scale, int64_t zp) {
  const char* op = "conv_transpose1d";
  check_packed(op, w, true, true);
  checks::check_quantized_input(op, "input", x, {at::kQUInt8});
  TORCH_CHECK(x.dim() == 3, "qplugin::", op, ": expected a 3-D input (N, C, L), got ", x.dim(),
              "-D (shape ", x.sizes(), ")");
  return w->apply(x.unsqueeze(2), scale, zp, false, op).squeeze(2);
}
at::Tensor conv_transpose2d(const at::Tensor& x, const P2& w, double scale, int64_t zp) {
  check_packed("conv_transpose2d", w, true, false);
  return w->apply(x, scale, zp, false, "conv_transpose2d");
}
at::Tensor conv_transpose3d(const at::Tensor& x, const P3& w, double scale, int64_t zp) {
  check_packed("conv_transpose3d", w, true, false);
  return w->apply(x, scale, zp, false, "conv_transpose3d");
}

template <class PP>
std::tuple<at::Tensor, c10::optional<at::Tensor>> unpack_impl(const char* op, const PP& w,
                                                              bool squeeze) {
  TORCH_CHECK(w, "qplugin::", op, ": expected packed weights, got None");
  auto r = w->unpack();
  if (squeeze) {
    TORCH_CHECK(std::get<0>(r).dim() == 4 && std::get<0>(r).size(2) == 1, "qplugin::", op,
                ": expected packed weights of a 1-d conv (prepacked by conv1d_prepack or "
                "conv_transpose1d_prepack), got weight shape ", std::get<0>(r).sizes());
    std::get<0>(r) = std::get<0>(r).squeeze(2);
  }
  return r;
}
std::tuple<at::Tensor, c10::optional<at::Tensor>> conv1d_unpack(const P2& w) {
  return unpack_impl("conv1d_unpack", w, true);
}
std::tuple<at::Tensor, c10::optional<at::Tensor>> conv2d_unpack(const P2& w) {
  return unpack_impl("conv2d_unpack", w, false);
}
std::tuple<at::Tensor, c10::optional<at::Tensor>> conv3d_unpack(const P3& w) {
  return unpack_impl("conv3d_unpack", w, false);
}
std::tuple<at::Tensor, c10::optional<at::Tensor>> conv_transpose1d_unpack(const P2& w) {
  return unpack_impl("conv_transpose1d_unpack", w, true);
}
std::tuple<at::Tensor, c10::optional<at::Tensor>> conv_transpose2d_unpack(const P2& w) {
  return unpack_impl("conv_transpose2d_unpack", w, false);
}
std::tuple<at::Tensor, c10::optional<at::Tensor>> conv_transpose3d_unpack(const P3& w) {
  return unpack_impl("conv_transpose3d_unpack", w, false);
}

}  // namespace
}  // namespace ops
}  // namespace qplugin

#define QPLUGIN_REGISTER_CONV(m)                                                            \
  m.impl("conv1d_prepack", TORCH_FN(qplugin::ops::conv1d_prepack));                        \
  m.impl("conv2d_prepack", TORCH_FN(qplugin::ops::conv2d_prepack));                        \
  m.impl("conv3d_prepack", TORCH_FN(qplugin::ops::conv3d_prepack));                        \
  m.impl("conv_transpose1d_prepack", TORCH_FN(qplugin::ops::conv_transpose1d_prepack));    \
  m.impl("conv_transpose2d_prepack", TORCH_FN(qplugin::ops::conv_transpose2d_prepack));    \
  m.impl("conv_transpose3d_prepack", TORCH_FN(qplugin::ops::conv_transpose3d_prepack));    \
  m.impl("conv1d", TORCH_FN(qplugin::ops::conv1d<false>));                                 \
  m.impl("conv1d_relu", TORCH_FN(qplugin::ops::conv1d<true>));                             \
  m.impl("conv2d.new", TORCH_FN(qplugin::ops::conv2d<false>));                             \
  m.impl("conv2d_relu.new", TORCH_FN(qplugin::ops::conv2d<true>));                         \
  m.impl("conv3d.new", TORCH_FN(qplugin::ops::conv3d<false>));                             \
  m.impl("conv3d_relu.new", TORCH_FN(qplugin::ops::conv3d<true>));                         \
  m.impl("conv_transpose1d", TORCH_FN(qplugin::ops::conv_transpose1d));                    \
  m.impl("conv_transpose2d", TORCH_FN(qplugin::ops::conv_transpose2d));                    \
  m.impl("conv_transpose3d", TORCH_FN(qplugin::ops::conv_transpose3d));

TORCH_LIBRARY_IMPL(qplugin, QuantizedCPU, m) { QPLUGIN_REGISTER_CONV(m) }
TORCH_LIBRARY_IMPL(qplugin, CPU, m) { QPLUGIN_REGISTER_CONV(m) }
// No tensor argument to dispatch on: one kernel for every key.
TORCH_LIBRARY_IMPL(qplugin, CatchAll, m) {
  m.impl("conv1d_unpack", TORCH_FN(qplugin::ops::conv1d_unpack));
  m.impl("conv2d_unpack", TORCH_FN(qplugin::ops::conv2d_unpack));
  m.impl("conv3d_unpack", TORCH_FN(qplugin::ops::conv3d_unpack));
  m.impl("conv_transpose1d_unpack", TORCH_FN(qplugin::ops::conv_transpose1d_unpack));
  m.impl("conv_transpose2d_unpack", TORCH_FN(qplugin::ops::conv_transpose2d_unpack));
  m.impl("conv_transpose3d_unpack", TORCH_FN(qplugin::ops::conv_transpose3d_unpack));
}
#undef QPLUGIN_REGISTER_CONV

// Keeps this file in static links: qplugin_register_all() (csrc/register.cpp) calls it.
QPLUGIN_REGISTRATION_ANCHOR(quantized_cpu_conv_kernel)
