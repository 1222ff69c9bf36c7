// Schemas of the linear ops (≙ torch.ops.quantized.linear*, same names, argument order and
// defaults). Kernels: ops/quantized_cpu/linear_kernel.cpp; class: packed/linear_packed_params.h
// (library.cpp registers it before it calls define_linear, see ops/schemas.h); pinned in
// tests/test_schemas.py.
#include <torch/library.h>
#include "ops/schemas.h"

namespace qplugin {
namespace schemas {

void define_linear(torch::Library& m) {
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

  // PT2 door (docs/pt2.md section 3): X as uint8 codes followed by its scale and zero point;
  // the result is uint8 codes with (Y_scale_i, Y_zero_point_i). Pinned in
  // tests/pt2/schemas/linear.txt.
#define QP_LIN "__torch__.torch.classes.qplugin.LinearPackedParams W_prepack"
  m.def("linear.plain(Tensor X, float X_scale, int X_zero_point, " QP_LIN ", "
        "float Y_scale_i, int Y_zero_point_i) -> Tensor Y");
  m.def("linear_relu.plain(Tensor X, float X_scale, int X_zero_point, " QP_LIN ", "
        "float Y_scale_i, int Y_zero_point_i) -> Tensor Y");
  m.def("linear_leaky_relu.plain(Tensor X, float X_scale, int X_zero_point, " QP_LIN ", "
        "float Y_scale_i, int Y_zero_point_i, float negative_slope) -> Tensor Y");
  m.def("linear_tanh.plain(Tensor X, float X_scale, int X_zero_point, " QP_LIN ", "
        "float Y_scale_i, int Y_zero_point_i) -> Tensor Y");
#undef QP_LIN
}

}  // namespace schemas
}  // namespace qplugin
