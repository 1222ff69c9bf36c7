// Schemas of the pooling ops. Where PyTorch has the op for quantized tensors the schema mirrors it
// (quantized::max_pool1d/2d; aten::avg_pool2d/3d, aten::adaptive_avg_pool2d/3d, aten::max_pool3d,
// aten::avg_pool1d, aten::adaptive_avg_pool1d dispatch to QuantizedCPU kernels in PyTorch);
// adaptive_max_pool2d is an extension (values only: no indices for quantized tensors).
// Kernels: ops/quantized_cpu/pooling_kernel.cpp; pinned in tests/test_schemas.py.
#include <torch/library.h>
#include "ops/schemas.h"

namespace qplugin {
namespace schemas {

void define_pooling(torch::Library& m) {
  m.def("max_pool1d(Tensor qx, int[] kernel_size, int[] stride, int[] padding, int[] dilation, "
        "bool ceil_mode) -> Tensor");
  m.def("max_pool2d(Tensor qx, int[] kernel_size, int[] stride, int[] padding, int[] dilation, "
        "bool ceil_mode) -> Tensor");
  m.def("max_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, "
        "int[3] dilation=1, bool ceil_mode=False) -> Tensor");
  m.def("avg_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=0, "
        "bool ceil_mode=False, bool count_include_pad=True) -> Tensor");
  m.def("avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
        "bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor");
  m.def("avg_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, "
        "bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor");
  m.def("adaptive_avg_pool1d(Tensor self, int[1] output_size) -> Tensor");
  m.def("adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor");
  m.def("adaptive_avg_pool3d(Tensor self, SymInt[3] output_size) -> Tensor");
  m.def("adaptive_max_pool2d(Tensor self, int[2] output_size) -> Tensor");

  // PT2 door (docs/pt2.md section 3): plain codes + explicit qparams; the output codes keep the
  // input's qparams. Kernels: the same cores, ops/quantized_cpu/pooling_kernel.cpp.
  m.def("max_pool1d.plain(Tensor qx, float qx_scale, int qx_zero_point, int[] kernel_size, "
        "int[] stride, int[] padding, int[] dilation, bool ceil_mode) -> Tensor");
  m.def("max_pool2d.plain(Tensor qx, float qx_scale, int qx_zero_point, int[] kernel_size, "
        "int[] stride, int[] padding, int[] dilation, bool ceil_mode) -> Tensor");
  m.def("max_pool3d.plain(Tensor self, float self_scale, int self_zero_point, "
        "int[3] kernel_size, int[3] stride=[], int[3] padding=0, int[3] dilation=1, "
        "bool ceil_mode=False) -> Tensor");
  m.def("avg_pool1d.plain(Tensor self, float self_scale, int self_zero_point, "
        "int[1] kernel_size, int[1] stride=[], int[1] padding=0, bool ceil_mode=False, "
        "bool count_include_pad=True) -> Tensor");
  m.def("avg_pool2d.plain(Tensor self, float self_scale, int self_zero_point, "
        "int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False, "
        "bool count_include_pad=True, int? divisor_override=None) -> Tensor");
  m.def("avg_pool3d.plain(Tensor self, float self_scale, int self_zero_point, "
        "int[3] kernel_size, int[3] stride=[], int[3] padding=0, bool ceil_mode=False, "
        "bool count_include_pad=True, int? divisor_override=None) -> Tensor");
  m.def("adaptive_avg_pool1d.plain(Tensor self, float self_scale, int self_zero_point, "
        "int[1] output_size) -> Tensor");
  m.def("adaptive_avg_pool2d.plain(Tensor self, float self_scale, int self_zero_point, "
        "SymInt[2] output_size) -> Tensor");
  m.def("adaptive_avg_pool3d.plain(Tensor self, float self_scale, int self_zero_point, "
        "SymInt[3] output_size) -> Tensor");
  m.def("adaptive_max_pool2d.plain(Tensor self, float self_scale, int self_zero_point, "
        "int[2] output_size) -> Tensor");
}

}  // namespace schemas
}  // namespace qplugin
