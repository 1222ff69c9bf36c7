// Schemas of the conv ops (≙ torch.ops.quantized.conv*, same names, overloads, argument order and
// return names). Mirrored overloads: conv2d.new, conv2d_relu.new, conv3d.new, conv3d_relu.new
// (the ones torch.ao modules call), conv1d, conv1d_relu, conv_transpose{1,2,3}d and every
// prepack/unpack, the fused conv2d_add / conv2d_add_relu (y = conv(qx) + qaccum, requantized;
// ReLU after the add), and the deprecated default overloads conv2d/conv2d_relu/conv3d/conv3d_relu
// that take (stride, padding, dilation, groups) next to an already-configured packed object:
// like PyTorch (QConvInt8ForBC) they warn once and ignore those arguments, the packed object's
// config wins. conv1d and conv_transpose1d/2d use Conv2dPackedParams, 3-d ones Conv3dPackedParams.
// Kernels: ops/quantized_cpu/conv_kernel.cpp; classes: packed/conv_packed_params.h (registered by
// library.cpp before it calls define_conv, see ops/schemas.h); pinned in tests/conv/test_conv_modules.py (schema test).
#include <torch/library.h>
#include "ops/conv_schemas.h"
#include "ops/schemas.h"

namespace qplugin {
namespace schemas {

void define_conv(torch::Library& m) {
  m.def("conv1d_prepack(Tensor weight, Tensor? bias, int[] stride, int[] padding, "
        "int[] dilation, int groups) -> " QP_C2);
  m.def("conv2d_prepack(Tensor weight, Tensor? bias, int[] stride, int[] padding, "
        "int[] dilation, int groups) -> " QP_C2);
  m.def("conv3d_prepack(Tensor weight, Tensor? bias, int[] stride, int[] padding, "
        "int[] dilation, int groups) -> " QP_C3);
  m.def("conv_transpose1d_prepack(Tensor weight, Tensor? bias, int[] stride, int[] padding, "
        "int[] output_padding, int[] dilation, int groups) -> " QP_C2);
  m.def("conv_transpose2d_prepack(Tensor weight, Tensor? bias, int[] stride, int[] padding, "
        "int[] output_padding, int[] dilation, int groups) -> " QP_C2);
  m.def("conv_transpose3d_prepack(Tensor weight, Tensor? bias, int[] stride, int[] padding, "
        "int[] output_padding, int[] dilation, int groups) -> " QP_C3);

  m.def("conv1d(Tensor qx, " QP_C2 " packed_weight, float output_scale, int output_zero_point) "
        "-> Tensor");
  m.def("conv1d_relu(Tensor qx, " QP_C2 " packed_weight, float output_scale, "
        "int output_zero_point) -> Tensor");
  m.def("conv2d.new(Tensor qx, " QP_C2 " packed_weight, float output_scale, "
        "int output_zero_point) -> Tensor");
  m.def("conv2d_relu.new(Tensor qx, " QP_C2 " packed_weight, float output_scale, "
        "int output_zero_point) -> Tensor");
  m.def("conv3d.new(Tensor qx, " QP_C3 " packed_weight, float output_scale, "
        "int output_zero_point) -> Tensor");
  m.def("conv3d_relu.new(Tensor qx, " QP_C3 " packed_weight, float output_scale, "
        "int output_zero_point) -> Tensor");
  // Legacy (default) overloads: stride/padding/dilation/groups are ignored (see above).
  m.def("conv2d(Tensor qx, " QP_C2 " weight, int[] stride, int[] padding, int[] dilation, "
        "int groups, float output_scale, int output_zero_point) -> Tensor");
  m.def("conv2d_relu(Tensor qx, " QP_C2 " weight, int[] stride, int[] padding, int[] dilation, "
        "int groups, float output_scale, int output_zero_point) -> Tensor");
  m.def("conv3d(Tensor qx, " QP_C3 " weight, int[] stride, int[] padding, int[] dilation, "
        "int groups, float output_scale, int output_zero_point) -> Tensor");
  m.def("conv3d_relu(Tensor qx, " QP_C3 " weight, int[] stride, int[] padding, int[] dilation, "
        "int groups, float output_scale, int output_zero_point) -> Tensor");
  m.def("conv2d_add(Tensor qx, Tensor qaccum, " QP_C2 " packed_weight, float output_scale, "
        "int output_zero_point) -> Tensor");
  m.def("conv2d_add_relu(Tensor qx, Tensor qaccum, " QP_C2 " packed_weight, "
        "float output_scale, int output_zero_point) -> Tensor");
  m.def("conv_transpose1d(Tensor qx, " QP_C2 " packed_weight, float output_scale, "
        "int output_zero_point) -> Tensor");
  m.def("conv_transpose2d(Tensor qx, " QP_C2 " packed_weight, float output_scale, "
        "int output_zero_point) -> Tensor");
  m.def("conv_transpose3d(Tensor qx, " QP_C3 " packed_weight, float output_scale, "
        "int output_zero_point) -> Tensor");

  // PT2 door (docs/pt2.md section 3): qx as uint8 codes followed by its scale and zero point;
  // the result is uint8 codes (channels last) with (output_scale, output_zero_point). Pinned in
  // tests/pt2/schemas/conv.txt.
#define QP_PLAIN(name, cls)                                                                  \
  m.def(name ".plain(Tensor qx, float qx_scale, int qx_zero_point, " cls " packed_weight, " \
        "float output_scale, int output_zero_point) -> Tensor")
  QP_PLAIN("conv1d", QP_C2);
  QP_PLAIN("conv1d_relu", QP_C2);
  QP_PLAIN("conv2d", QP_C2);
  QP_PLAIN("conv2d_relu", QP_C2);
  QP_PLAIN("conv3d", QP_C3);
  QP_PLAIN("conv3d_relu", QP_C3);
  QP_PLAIN("conv_transpose1d", QP_C2);
  QP_PLAIN("conv_transpose2d", QP_C2);
  QP_PLAIN("conv_transpose3d", QP_C3);
#undef QP_PLAIN
  // conv2d_add[_relu]: qaccum (uint8 codes of the output's shape) with its own qparams follows qx.
#define QP_PLAIN_ADD(name)                                                                  \
  m.def(name ".plain(Tensor qx, float qx_scale, int qx_zero_point, Tensor qaccum, "          \
        "float qaccum_scale, int qaccum_zero_point, " QP_C2 " packed_weight, "               \
        "float output_scale, int output_zero_point) -> Tensor")
  QP_PLAIN_ADD("conv2d_add");
  QP_PLAIN_ADD("conv2d_add_relu");
#undef QP_PLAIN_ADD

  def_conv_kinds(m, "_unpack", "",
                 " packed_weights) -> (Tensor unpacked_weights, Tensor? B_origin)");
}

}  // namespace schemas
}  // namespace qplugin
