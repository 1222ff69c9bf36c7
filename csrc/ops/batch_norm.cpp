// Schemas of the batch-norm ops (≙ torch.ops.quantized / aten::quantized_batch_norm).
// Kernels: ops/quantized_cpu/batch_norm_kernel.cpp; pinned in tests/test_schemas.py.
#include <torch/library.h>
#include "ops/schemas.h"

namespace qplugin {
namespace schemas {

void define_batch_norm(torch::Library& m) {
  m.def("quantized_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor mean, Tensor var, "
        "float eps, float output_scale, int output_zero_point) -> Tensor");
  m.def("batch_norm(Tensor qx, Tensor? weight, Tensor? bias, Tensor mean, Tensor var, float eps, "
        "float output_scale, int output_zero_point) -> Tensor");
  m.def("batch_norm1d(Tensor qx, Tensor? weight, Tensor? bias, Tensor mean, Tensor var, float eps, "
        "float output_scale, int output_zero_point) -> Tensor");
  m.def("batch_norm2d(Tensor qx, Tensor? weight, Tensor? bias, Tensor mean, Tensor var, float eps, "
        "float output_scale, int output_zero_point) -> Tensor");
  m.def("batch_norm3d(Tensor qx, Tensor? weight, Tensor? bias, Tensor mean, Tensor var, float eps, "
        "float output_scale, int output_zero_point) -> Tensor");
  m.def("batch_norm_relu(Tensor qx, Tensor? weight, Tensor? bias, Tensor mean, Tensor var, float eps, "
        "float output_scale, int output_zero_point) -> Tensor");
  m.def("batch_norm1d_relu(Tensor qx, Tensor? weight, Tensor? bias, Tensor mean, Tensor var, float eps, "
        "float output_scale, int output_zero_point) -> Tensor");
  m.def("batch_norm2d_relu(Tensor qx, Tensor? weight, Tensor? bias, Tensor mean, Tensor var, float eps, "
        "float output_scale, int output_zero_point) -> Tensor");
  m.def("batch_norm3d_relu(Tensor qx, Tensor? weight, Tensor? bias, Tensor mean, Tensor var, float eps, "
        "float output_scale, int output_zero_point) -> Tensor");

  // The PT2 door (docs/pt2.md section 3): plain uint8/int8/int32 codes followed by their scale
  // and zero point. Same kernels; pinned in tests/pt2/schemas/batch_norm.txt.
  m.def("quantized_batch_norm.plain(Tensor input, float input_scale, int input_zero_point, "
        "Tensor? weight, Tensor? bias, Tensor mean, Tensor var, float eps, float output_scale, "
        "int output_zero_point) -> Tensor");
  m.def("batch_norm.plain(Tensor qx, float qx_scale, int qx_zero_point, Tensor? weight, "
        "Tensor? bias, Tensor mean, Tensor var, float eps, float output_scale, "
        "int output_zero_point) -> Tensor");
  m.def("batch_norm1d.plain(Tensor qx, float qx_scale, int qx_zero_point, Tensor? weight, "
        "Tensor? bias, Tensor mean, Tensor var, float eps, float output_scale, "
        "int output_zero_point) -> Tensor");
  m.def("batch_norm2d.plain(Tensor qx, float qx_scale, int qx_zero_point, Tensor? weight, "
        "Tensor? bias, Tensor mean, Tensor var, float eps, float output_scale, "
        "int output_zero_point) -> Tensor");
  m.def("batch_norm3d.plain(Tensor qx, float qx_scale, int qx_zero_point, Tensor? weight, "
        "Tensor? bias, Tensor mean, Tensor var, float eps, float output_scale, "
        "int output_zero_point) -> Tensor");
  m.def("batch_norm_relu.plain(Tensor qx, float qx_scale, int qx_zero_point, Tensor? weight, "
        "Tensor? bias, Tensor mean, Tensor var, float eps, float output_scale, "
        "int output_zero_point) -> Tensor");
  m.def("batch_norm1d_relu.plain(Tensor qx, float qx_scale, int qx_zero_point, Tensor? weight, "
        "Tensor? bias, Tensor mean, Tensor var, float eps, float output_scale, "
        "int output_zero_point) -> Tensor");
  m.def("batch_norm2d_relu.plain(Tensor qx, float qx_scale, int qx_zero_point, Tensor? weight, "
        "Tensor? bias, Tensor mean, Tensor var, float eps, float output_scale, "
        "int output_zero_point) -> Tensor");
  m.def("batch_norm3d_relu.plain(Tensor qx, float qx_scale, int qx_zero_point, Tensor? weight, "
        "Tensor? bias, Tensor mean, Tensor var, float eps, float output_scale, "
        "int output_zero_point) -> Tensor");
}

}  // namespace schemas
}  // namespace qplugin
