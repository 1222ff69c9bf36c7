// Schemas of the dynamic linear ops (≙ torch.ops.quantized.linear_dynamic*, linear_*_fp16: same
// names, argument order and defaults; float input and output) on qplugin's packed-params classes.
// Kernels: ops/cpu/linear_dynamic_kernel.cpp; classes: packed/linear_packed_params.h and
// packed/linear_fp16_packed_params.h (both registered in library.cpp before this is called);
// fake kernels: qplugin/_meta_dynamic.py.
#include <torch/library.h>

#include "ops/schemas.h"

namespace qplugin {
namespace schemas {

void define_linear_dynamic(torch::Library& m) {
  // y = dequant(quant(X) @ W^T) + b: X quantized per call to quint8 (per-tensor affine from its
  // min/max; reduce_range: 7 bits), exact int32 products, float32 output.
  m.def("linear_dynamic(Tensor X, __torch__.torch.classes.qplugin.LinearPackedParams W_prepack, "
        "bool reduce_range=False) -> Tensor Y");
  m.def("linear_relu_dynamic(Tensor X, __torch__.torch.classes.qplugin.LinearPackedParams "
        "W_prepack, bool reduce_range=False) -> Tensor Y");
  m.def("linear_prepack_fp16(Tensor W, Tensor? B=None) -> "
        "__torch__.torch.classes.qplugin.LinearPackedParamsFp16 W_prepack");
  m.def("linear_unpack_fp16(__torch__.torch.classes.qplugin.LinearPackedParamsFp16 W_prepack) -> "
        "(Tensor W_origin, Tensor? B_origin)");
  m.def("linear_dynamic_fp16(Tensor X, __torch__.torch.classes.qplugin.LinearPackedParamsFp16 "
        "W_prepack) -> Tensor Y");
  m.def("linear_relu_dynamic_fp16(Tensor X, "
        "__torch__.torch.classes.qplugin.LinearPackedParamsFp16 W_prepack) -> Tensor Y");
}

}  // namespace schemas
}  // namespace qplugin
