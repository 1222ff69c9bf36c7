// Schemas of the layer/group/instance-norm ops (≙ torch.ops.quantized.layer_norm, group_norm,
// instance_norm: same names, argument names, order and types). Kernels:
// ops/quantized_cpu/normalization_kernel.cpp; pinned in tests/test_schemas.py.
#include <torch/library.h>
#include "register.h"

TORCH_LIBRARY_FRAGMENT(qplugin, m) {
  m.def("layer_norm(Tensor input, int[] normalized_shape, Tensor? weight, Tensor? bias, float eps, "
        "float output_scale, int output_zero_point) -> Tensor");
  m.def("group_norm(Tensor input, int num_groups, Tensor? weight, Tensor? bias, float eps, "
        "float output_scale, int output_zero_point) -> Tensor");
  m.def("instance_norm(Tensor input, Tensor? weight, Tensor? bias, float eps, float output_scale, "
        "int output_zero_point) -> Tensor");
}

// Keeps this file in static links: qplugin_register_all() (csrc/register.cpp) calls it.
QPLUGIN_REGISTRATION_ANCHOR(ops_normalization)
