// Schemas of the linear ops (≙ torch.ops.quantized.linear*, same names, argument order and
// defaults). Kernels: ops/quantized_cpu/linear_kernel.cpp; class: packed/linear_packed_params.h
// (registered in library.cpp, whose TORCH_LIBRARY runs first: setup.py links sources sorted, so
// library.o precedes ops/linear.o); fake kernels: qplugin/_meta_registrations.py; pinned in
// tests/test_schemas.py.
#include <torch/library.h>
#include "register.h"

TORCH_LIBRARY_FRAGMENT(qplugin, m) {
  m.def("linear_prepack(Tensor W, Tensor? B=None) -> "
        "__torch__.torch.classes.qplugin.LinearPackedParams W_prepack");
  m.def("linear(Tensor X, __torch__.torch.classes.qplugin.LinearPackedParams W_prepack, "
        "float Y_scale_i, int Y_zero_point_i) -> Tensor Y");
  m.def("linear_relu(Tensor X, __torch__.torch.classes.qplugin.LinearPackedParams W_prepack, "
        "float Y_scale_i, int Y_zero_point_i) -> Tensor Y");
  // Fused activations on the real-valued result (≙ PyTorch's onednn-only ops of the same name):
  // y = quant(act(x @ W^T + b)), act = leaky_relu(negative_slope) / tanh.
  m.def("linear_leaky_relu(Tensor X, __torch__.torch.classes.qplugin.LinearPackedParams W_prepack, "
        "float Y_scale_i, int Y_zero_point_i, float negative_slope) -> Tensor Y");
  m.def("linear_tanh(Tensor X, __torch__.torch.classes.qplugin.LinearPackedParams W_prepack, "
        "float Y_scale_i, int Y_zero_point_i) -> Tensor Y");
  m.def("linear_unpack(__torch__.torch.classes.qplugin.LinearPackedParams W_prepack) -> "
        "(Tensor W_origin, Tensor? B_origin)");
}

// Keeps this file in static links: qplugin_register_all() (csrc/register.cpp) calls it.
QPLUGIN_REGISTRATION_ANCHOR(ops_linear)
