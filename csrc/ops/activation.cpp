// Schemas of the activation ops (≙ torch.ops.quantized). Kernels:
// ops/quantized_cpu/activation_kernel.cpp; pinned in tests/test_schemas.py.
#include <torch/library.h>
#include "ops/schemas.h"

namespace qplugin {
namespace schemas {

void define_activation(torch::Library& m) {
  // Like quantized::relu6, inplace=True writes into qx and returns it (the schema carries no
  // alias annotation, exactly as PyTorch's).
  m.def("relu6(Tensor qx, bool inplace=False) -> Tensor");
  m.def("hardswish(Tensor input, float output_scale, int output_zero_point) -> Tensor");
  m.def("elu(Tensor self, float output_scale, int output_zero_point, Scalar alpha=1, "
        "Scalar scale=1, Scalar input_scale=1) -> Tensor");
  // y = quant(x >= 0 ? x : x * weight[c]), c the channel (dim 1; dim 0 of a 1-d input).
  m.def("prelu(Tensor qx, Tensor weight, float output_scale, int output_zero_point) -> Tensor");
}

}  // namespace schemas
}  // namespace qplugin
