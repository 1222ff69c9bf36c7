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

  // The PT2 door (docs/pt2.md section 3): plain uint8/int8/int32 codes, each quantized operand
  // followed by its scale and zero point, output qparams required, `inplace` dropped. Same
  // kernels (ops/quantized_cpu/activation_kernel.cpp); pinned in tests/pt2/schemas/activation.txt.
  m.def("relu6.plain(Tensor qx, float qx_scale, int qx_zero_point) -> Tensor");
  m.def("hardswish.plain(Tensor input, float input_scale, int input_zero_point, "
        "float output_scale, int output_zero_point) -> Tensor");
  m.def("elu.plain(Tensor self, float self_scale, int self_zero_point, float output_scale, "
        "int output_zero_point, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor");
  m.def("prelu.plain(Tensor qx, float qx_scale, int qx_zero_point, Tensor weight, "
        "float weight_scale, int weight_zero_point, float output_scale, int output_zero_point) "
        "-> Tensor");
  m.def("leaky_relu.plain(Tensor qx, float qx_scale, int qx_zero_point, Scalar negative_slope, "
        "float output_scale, int output_zero_point) -> Tensor");
  m.def("sigmoid.plain(Tensor qx, float qx_scale, int qx_zero_point, float output_scale, "
        "int output_zero_point) -> Tensor");
  m.def("celu.plain(Tensor self, float self_scale, int self_zero_point, float output_scale, "
        "int output_zero_point, Scalar alpha=1) -> Tensor");
  m.def("threshold.plain(Tensor qx, float qx_scale, int qx_zero_point, Scalar threshold, "
        "Scalar value) -> Tensor qy");
  m.def("clamp.plain(Tensor qx, float qx_scale, int qx_zero_point, Scalar? min=None, "
        "Scalar? max=None) -> Tensor qy");
  m.def("softmax.plain(Tensor qx, float qx_scale, int qx_zero_point, int dim, float output_scale, "
        "int output_zero_point) -> Tensor");
  m.def("hardsigmoid.plain(Tensor qx, float qx_scale, int qx_zero_point, float output_scale, "
        "int output_zero_point) -> Tensor");
  m.def("tanh.plain(Tensor qx, float qx_scale, int qx_zero_point, float output_scale, "
        "int output_zero_point) -> Tensor");
  m.def("gelu.plain(Tensor qx, float qx_scale, int qx_zero_point, float output_scale, "
        "int output_zero_point, str approximate=\"none\") -> Tensor");
  m.def("silu.plain(Tensor qx, float qx_scale, int qx_zero_point, float output_scale, "
        "int output_zero_point) -> Tensor");
  m.def("mish.plain(Tensor qx, float qx_scale, int qx_zero_point, float output_scale, "
        "int output_zero_point) -> Tensor");
  m.def("softplus.plain(Tensor qx, float qx_scale, int qx_zero_point, float output_scale, "
        "int output_zero_point, Scalar beta=1, Scalar threshold=20) -> Tensor");
}

}  // namespace schemas
}  // namespace qplugin
