// Schemas of the layer/group/instance-norm ops (≙ torch.ops.quantized.layer_norm, group_norm,
// instance_norm: same names, argument names, order and types). Kernels:
// ops/quantized_cpu/normalization_kernel.cpp; pinned in tests/test_schemas.py.
#include <torch/library.h>
#include "ops/schemas.h"

namespace qplugin {
namespace schemas {

void define_normalization(torch::Library& m) {
  m.def("layer_norm(Tensor input, int[] normalized_shape, Tensor? weight, Tensor? bias, float eps, "
        "float output_scale, int output_zero_point) -> Tensor");
  m.def("group_norm(Tensor input, int num_groups, Tensor? weight, Tensor? bias, float eps, "
        "float output_scale, int output_zero_point) -> Tensor");
  m.def("instance_norm(Tensor input, Tensor? weight, Tensor? bias, float eps, float output_scale, "
        "int output_zero_point) -> Tensor");

  // PT2 door (docs/pt2.md section 3): plain codes + explicit qparams; the output codes have
  // (output_scale, output_zero_point). Kernels: the same cores, normalization_kernel.cpp.
  m.def("layer_norm.plain(Tensor input, float input_scale, int input_zero_point, "
        "int[] normalized_shape, Tensor? weight, Tensor? bias, float eps, float output_scale, "
        "int output_zero_point) -> Tensor");
  m.def("group_norm.plain(Tensor input, float input_scale, int input_zero_point, "
        "int num_groups, Tensor? weight, Tensor? bias, float eps, float output_scale, "
        "int output_zero_point) -> Tensor");
  m.def("instance_norm.plain(Tensor input, float input_scale, int input_zero_point, "
        "Tensor? weight, Tensor? bias, float eps, float output_scale, "
        "int output_zero_point) -> Tensor");
}

}  // namespace schemas
}  // namespace qplugin
