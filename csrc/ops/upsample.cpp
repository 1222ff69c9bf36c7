// Schemas of the resampling ops, mirroring aten's (which dispatch to QuantizedCPU kernels in
// PyTorch for nearest 2d/3d, nearest-exact 2d/3d and bilinear 2d); upsample_nearest1d,
// _upsample_nearest_exact1d, upsample_linear1d and upsample_trilinear3d are extensions.
// Input quantization parameters propagate to the output.
// Kernels: ops/quantized_cpu/upsample_kernel.cpp; pinned in tests/test_schemas.py.
#include <torch/library.h>
#include "ops/schemas.h"

namespace qplugin {
namespace schemas {

void define_upsample(torch::Library& m) {
  m.def("upsample_nearest1d(Tensor self, SymInt[1] output_size, float? scales=None) -> Tensor");
  m.def("upsample_nearest2d(Tensor self, SymInt[2] output_size, float? scales_h=None, "
        "float? scales_w=None) -> Tensor");
  m.def("upsample_nearest3d(Tensor self, SymInt[3] output_size, float? scales_d=None, "
        "float? scales_h=None, float? scales_w=None) -> Tensor");
  m.def("_upsample_nearest_exact1d(Tensor self, SymInt[1] output_size, float? scales=None) "
        "-> Tensor");
  m.def("_upsample_nearest_exact2d(Tensor self, SymInt[2] output_size, float? scales_h=None, "
        "float? scales_w=None) -> Tensor");
  m.def("_upsample_nearest_exact3d(Tensor self, SymInt[3] output_size, float? scales_d=None, "
        "float? scales_h=None, float? scales_w=None) -> Tensor");
  m.def("upsample_linear1d(Tensor self, SymInt[1] output_size, bool align_corners, "
        "float? scales=None) -> Tensor");
  m.def("upsample_bilinear2d(Tensor self, SymInt[2] output_size, bool align_corners, "
        "float? scales_h=None, float? scales_w=None) -> Tensor");
  m.def("upsample_trilinear3d(Tensor self, SymInt[3] output_size, bool align_corners, "
        "float? scales_d=None, float? scales_h=None, float? scales_w=None) -> Tensor");

  // PT2 door (docs/pt2.md section 3): plain codes + explicit qparams; the output codes keep the
  // input's qparams. Kernels: the same cores, ops/quantized_cpu/upsample_kernel.cpp.
#define QPLUGIN_PLAIN_SELF "Tensor self, float self_scale, int self_zero_point, "
  m.def("upsample_nearest1d.plain(" QPLUGIN_PLAIN_SELF "SymInt[1] output_size, "
        "float? scales=None) -> Tensor");
  m.def("upsample_nearest2d.plain(" QPLUGIN_PLAIN_SELF "SymInt[2] output_size, "
        "float? scales_h=None, float? scales_w=None) -> Tensor");
  m.def("upsample_nearest3d.plain(" QPLUGIN_PLAIN_SELF "SymInt[3] output_size, "
        "float? scales_d=None, float? scales_h=None, float? scales_w=None) -> Tensor");
  m.def("_upsample_nearest_exact1d.plain(" QPLUGIN_PLAIN_SELF "SymInt[1] output_size, "
        "float? scales=None) -> Tensor");
  m.def("_upsample_nearest_exact2d.plain(" QPLUGIN_PLAIN_SELF "SymInt[2] output_size, "
        "float? scales_h=None, float? scales_w=None) -> Tensor");
  m.def("_upsample_nearest_exact3d.plain(" QPLUGIN_PLAIN_SELF "SymInt[3] output_size, "
        "float? scales_d=None, float? scales_h=None, float? scales_w=None) -> Tensor");
  m.def("upsample_linear1d.plain(" QPLUGIN_PLAIN_SELF "SymInt[1] output_size, "
        "bool align_corners, float? scales=None) -> Tensor");
  m.def("upsample_bilinear2d.plain(" QPLUGIN_PLAIN_SELF "SymInt[2] output_size, "
        "bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor");
  m.def("upsample_trilinear3d.plain(" QPLUGIN_PLAIN_SELF "SymInt[3] output_size, "
        "bool align_corners, float? scales_d=None, float? scales_h=None, float? scales_w=None) "
        "-> Tensor");
#undef QPLUGIN_PLAIN_SELF
}

}  // namespace schemas
}  // namespace qplugin
