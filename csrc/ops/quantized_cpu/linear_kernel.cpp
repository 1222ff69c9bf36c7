// QuantizedCPU (and CPU, for a clear error on float input) kernels of the linear ops; the work is
// in packed/linear_packed_params.cpp (validation, packing, the threaded GEMM call).
// Schemas: ops/linear.cpp. Engine: kernels/gemm/qgemm.h.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "packed/linear_packed_params.h"
#include "register.h"

namespace qplugin {
namespace ops {
namespace {

using Packed = c10::intrusive_ptr<LinearPackedParams>;

Packed linear_prepack_quantized_cpu(const at::Tensor& weight,
                                    const c10::optional<at::Tensor>& bias) {
  return LinearPackedParams::prepack(weight, bias, "linear_prepack");
}

template <bool ReluFused>
at::Tensor linear_quantized_cpu(const at::Tensor& x, const Packed& w, double output_scale,
                                int64_t output_zero_point) {
  TORCH_CHECK(w, "qplugin::", ReluFused ? "linear_relu" : "linear",
              ": expected packed weights (qplugin.LinearPackedParams), got None");
  return w->apply<ReluFused>(x, output_scale, output_zero_point);
}

std::tuple<at::Tensor, c10::optional<at::Tensor>> linear_unpack(const Packed& w) {
  TORCH_CHECK(w, "qplugin::linear_unpack: expected packed weights (qplugin.LinearPackedParams), "
                 "got None");
  return w->unpack();
}

}  // namespace
}  // namespace ops
}  // namespace qplugin

#define QPLUGIN_REGISTER_LINEAR(m)                                                     \
  m.impl("linear_prepack", TORCH_FN(qplugin::ops::linear_prepack_quantized_cpu));     \
  m.impl("linear", TORCH_FN(qplugin::ops::linear_quantized_cpu<false>));              \
  m.impl("linear_relu", TORCH_FN(qplugin::ops::linear_quantized_cpu<true>));

TORCH_LIBRARY_IMPL(qplugin, QuantizedCPU, m) { QPLUGIN_REGISTER_LINEAR(m) }
TORCH_LIBRARY_IMPL(qplugin, CPU, m) { QPLUGIN_REGISTER_LINEAR(m) }
// No tensor argument to dispatch on: one kernel for every key.
TORCH_LIBRARY_IMPL(qplugin, CatchAll, m) {
  m.impl("linear_unpack", TORCH_FN(qplugin::ops::linear_unpack));
}
#undef QPLUGIN_REGISTER_LINEAR

// Keeps this file in static links: qplugin_register_all() (csrc/register.cpp) calls it.
QPLUGIN_REGISTRATION_ANCHOR(quantized_cpu_linear_kernel)
