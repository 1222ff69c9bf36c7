// Schemas of the activation ops (≙ torch.ops.quantized). Kernels:
// ops/quantized_cpu/activation_kernel.cpp; pinned in tests/test_schemas.py.
#include <torch/library.h>
#include "register.h"

TORCH_LIBRARY_FRAGMENT(qplugin, m) {
  // Like quantized::relu6, inplace=True writes into qx and returns it (the schema carries no
  // alias annotation, exactly as PyTorch's).
  m.def("relu6(Tensor qx, bool inplace=False) -> Tensor");
  m.def("hardswish(Tensor input, float output_scale, int output_zero_point) -> Tensor");
  m.def("elu(Tensor self, float output_scale, int output_zero_point, Scalar alpha=1, "
        "Scalar scale=1, Scalar input_scale=1) -> Tensor");
  // y = quant(x >= 0 ? x : x * weight[c]), c the channel (dim 1; dim 0 of a 1-d input).
  m.def("prelu(Tensor qx, Tensor weight, float output_scale, int output_zero_point) -> Tensor");
}

// Keeps this file in static links: qplugin_register_all() (csrc/register.cpp) calls it.
QPLUGIN_REGISTRATION_ANCHOR(ops_activation)
