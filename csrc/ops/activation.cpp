// Schemas of the activation ops. Mirrors of torch.ops.quantized: relu6, hardswish, elu, prelu,
// leaky_relu, sigmoid, celu, threshold, clamp, softmax. Extensions (PyTorch has them only as aten
// ops on quantized tensors, with fixed or input qparams, or not at all): hardsigmoid, tanh, gelu
// (qparams optional: PyTorch's defaults), silu, mish, softplus.
// Kernels: ops/quantized_cpu/activation_kernel.cpp; pinned in tests/test_schemas.py and
// tests/elementwise/test_schemas_elementwise.py.
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
  m.def("leaky_relu(Tensor qx, Scalar negative_slope, bool inplace, float output_scale, "
        "int output_zero_point) -> Tensor");
  m.def("sigmoid(Tensor qx, float output_scale, int output_zero_point) -> Tensor");
  m.def("celu(Tensor self, float output_scale, int output_zero_point, Scalar alpha=1) -> Tensor");
  m.def("threshold(Tensor qx, Scalar threshold, Scalar value) -> Tensor qy");
  m.def("clamp(Tensor qx, Scalar? min=None, Scalar? max=None) -> Tensor qy");
  m.def("softmax(Tensor qx, int dim, float output_scale, int output_zero_point) -> Tensor");
  // Extensions. None qparams: torch.nn.functional.hardsigmoid / torch.tanh on a quantized tensor
  // pick fixed ones (1/256 or 2/256 scale), torch.nn.functional.gelu keeps the input's.
  m.def("hardsigmoid(Tensor qx, float? output_scale=None, int? output_zero_point=None) -> Tensor");
  m.def("tanh(Tensor qx, float? output_scale=None, int? output_zero_point=None) -> Tensor");
  m.def("gelu(Tensor qx, float? output_scale=None, int? output_zero_point=None, "
        "str approximate=\"none\") -> Tensor");
  m.def("silu(Tensor qx, float output_scale, int output_zero_point) -> Tensor");
  m.def("mish(Tensor qx, float output_scale, int output_zero_point) -> Tensor");
  m.def("softplus(Tensor qx, float output_scale, int output_zero_point, Scalar beta=1, "
        "Scalar threshold=20) -> Tensor");
}

}  // namespace schemas
}  // namespace qplugin
